"""Reading sympy objects back from ``sympy.srepr`` text without executing it.

``srepr`` writes an expression as nested constructor calls, e.g.
``Add(Symbol('x', real=True), Integer(1))``.  :func:`read_srepr` parses that text with
Python's ``ast`` module and builds the objects itself, allowing only:

* calls of the sympy classes a problem can hold and constropt can lower (:data:`CLASSES`:
  arithmetic, powers, the elementary functions, Min/Max, Piecewise, relationals and
  logic, symbols and vector variables), with positional arguments that are calls,
  numbers, tuples or lists of those, and the named singletons below;
* a string argument only as the first argument of ``Symbol``, ``Dummy``, ``Str`` and
  ``Float`` (names and decimal digits; nothing else ever parses text);
* keyword arguments only for ``Symbol``/``Dummy`` (assumptions, True/False; a Dummy's
  ``dummy_index``) and ``Float`` (``precision``, an integer);
* the names of sympy's singletons (``pi``, ``E``, ``oo``, ``true``, ...).

sympy evaluates while it constructs, so the size guards of the problem-file parser
(:mod:`constropt.problem._numeric`) run before every power and exponential and on every
number built: no constant beyond ``2**MAX_NUMBER_BITS``, no Float of more than
``MAX_NUMBER_BITS`` bits of precision or a decimal exponent beyond ``MAX_FLOAT_EXPONENT``,
sums and products only over vector variables, with ranges of at most
``MAX_RANGE`` terms.  Other sympy classes (``factorial``, ``binomial``, ``fibonacci``,
``gamma``, ...) are refused: their constructors compute exact values of unbounded cost,
and constropt cannot lower them.  Everything else raises :class:`constropt.ParseError`.
Checkpoints store their problem this way, so loading one never runs code and ends in
bounded time and memory.
"""

from __future__ import annotations

import ast
import math
import re
from functools import cache

import sympy

from .._errors import ParseError
from ..lowering._functions import SYMPY_CLASSES
from . import _numeric

__all__ = ["read_srepr", "MAX_SREPR_CHARS", "CLASSES", "MAX_FLOAT_EXPONENT", "MAX_RANGE"]

#: Longer texts are refused.
MAX_SREPR_CHARS = 5_000_000
#: Largest decimal exponent of a Float text (``Float('1e100000000')`` would take minutes).
MAX_FLOAT_EXPONENT = 2000
#: Most terms of a ``Sum`` or ``Product`` (over a vector variable).
MAX_RANGE = 10**8

#: The sympy classes a checkpoint's expressions may name (what ``srepr`` writes for the
#: expressions constropt lowers): the structure, and the functions of the function table.
CLASSES = frozenset({
    "Symbol", "Dummy", "Str", "Integer", "Rational", "Float", "Tuple",
    "Add", "Mul", "Pow", "Piecewise", "ExprCondPair",
    "Equality", "Unequality", "StrictLessThan", "LessThan", "StrictGreaterThan",
    "GreaterThan", "And", "Or", "Not", "Xor",
    "Indexed", "IndexedBase", "Idx", "MatrixSymbol", "MatrixElement", "Sum", "Product",
}) | frozenset(cls.__name__ for cls in SYMPY_CLASSES)

_TEXT_FIRST = {"Symbol", "Dummy", "Str", "Float"}
_KEYWORDS = {"Symbol": bool, "Dummy": bool, "Float": int}
_INT_KEYWORDS = {("Dummy", "dummy_index")}
_FLOAT_TEXT = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)(?:[eE]([+-]?\d{1,12}))?")
_SPECIAL = {"inf", "-inf", "nan", "+inf"}


@cache
def _classes() -> dict:
    from sympy.core.numbers import Integer, Rational
    from sympy.core.symbol import Str
    from sympy.functions.elementary.piecewise import ExprCondPair
    from sympy.matrices.expressions.matexpr import MatrixElement
    from sympy.tensor.indexed import Idx, Indexed, IndexedBase

    extra = {cls.__name__: cls for cls in (Str, Integer, Rational, Indexed, IndexedBase,
                                           Idx, ExprCondPair, MatrixElement)}
    return {name: extra.get(name) or getattr(sympy, name) for name in CLASSES}


@cache
def _singletons() -> dict:
    out = {}
    for name in ("pi", "E", "oo", "zoo", "nan", "I", "true", "false", "EulerGamma",
                 "GoldenRatio", "Catalan", "S"):
        out[name] = getattr(sympy, name)
    return out


def _fail(node, why: str) -> ParseError:
    return ParseError(f"not a sympy srepr text: {why}", lineno=getattr(node, "lineno", None),
                      col_offset=getattr(node, "col_offset", None))


def _number(node, value):
    if isinstance(value, float) and not math.isfinite(value):
        raise _fail(node, "a number literal out of range (infinity is Float('inf'))")
    if isinstance(value, int) and value.bit_length() > _numeric.MAX_NUMBER_BITS:
        raise _fail(node, f"integer too large (more than {_numeric.MAX_NUMBER_BITS} bits)")
    return value


def _check_float(node, args, kwargs) -> None:
    """Float takes decimal digits, a number and ``precision=``, all of bounded size."""
    if not args or not isinstance(args[0], (str, int, float)) or set(kwargs) - {"precision"}:
        raise _fail(node, "Float takes a number and precision=")
    text = args[0]
    if isinstance(text, str) and text not in _SPECIAL:
        match = _FLOAT_TEXT.fullmatch(text)
        if match is None:
            raise _fail(node, "Float text must be decimal digits")
        if match.group(2) is not None and abs(int(match.group(2))) > MAX_FLOAT_EXPONENT:
            raise _fail(node, f"Float exponent beyond 10**{MAX_FLOAT_EXPONENT}")
    precision = kwargs.get("precision", 53)
    if not 1 <= precision <= _numeric.MAX_NUMBER_BITS:
        raise _fail(node, f"Float precision must be 1 to {_numeric.MAX_NUMBER_BITS} bits")


def _guard(node, name: str, args: list) -> None:
    """Refuse a construction whose evaluation could build an enormous number or loop."""
    exprs = [sympy.sympify(a) for a in args if isinstance(a, (int, float, sympy.Expr))]
    try:
        if name == "Pow" and len(exprs) == len(args) == 2:
            _numeric.guard_power(*exprs)
        elif name == "exp" and len(exprs) == len(args) == 1:
            _numeric.guard_exp(exprs[0])
    except _numeric.NumberTooLarge as exc:
        raise _fail(node, str(exc)) from None
    if name in ("Sum", "Product"):
        body = args[0] if args else None
        vector = (sympy.Indexed, _classes()["MatrixElement"])
        if not isinstance(body, sympy.Basic) or not body.has(*vector):
            raise _fail(node, f"{name} is allowed only over a vector variable")
        for lim in args[1:]:
            ends = tuple(lim)[1:] if isinstance(lim, (tuple, sympy.Tuple)) else ()
            if len(ends) != 2 or not all(getattr(e, "is_Integer", False) for e in ends) \
                    or abs(int(ends[1]) - int(ends[0])) > MAX_RANGE:
                raise _fail(node, f"{name} limits must be integers at most {MAX_RANGE} apart")


def _check_result(node, value) -> None:
    """A number built from guarded parts is still bounded (a product of many integers)."""
    if isinstance(value, sympy.Rational):
        bits = max(int(value.p).bit_length(), int(value.q).bit_length())
        if bits > _numeric.MAX_NUMBER_BITS:
            raise _fail(node, f"number too large (more than {_numeric.MAX_NUMBER_BITS} bits)")
    elif isinstance(value, sympy.Float) and value._mpf_[1]:
        if value._mpf_[2] + value._mpf_[3] > _numeric.MAX_NUMBER_BITS:
            raise _fail(node, f"number beyond 2**{_numeric.MAX_NUMBER_BITS}")
    elif isinstance(value, sympy.MatrixSymbol) and \
            not all(getattr(d, "is_Integer", False) for d in value.shape):
        raise _fail(node, "a MatrixSymbol's shape must be integers")


def _build(node, depth: int):
    if depth > 400:
        raise _fail(node, "nested too deeply")
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and \
            not isinstance(node.value, bool):
        return _number(node, node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and \
            isinstance(node.operand, ast.Constant) and \
            isinstance(node.operand.value, (int, float)) and \
            not isinstance(node.operand.value, bool):
        return -_number(node, node.operand.value)
    if isinstance(node, (ast.Tuple, ast.List)):
        return tuple(_build(e, depth + 1) for e in node.elts)
    if isinstance(node, ast.Name):
        if node.id in _singletons():
            return _singletons()[node.id]
        raise _fail(node, f"unknown name {node.id[:40]!r}")
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise _fail(node, f"{type(node).__name__} is not allowed")
    name = node.func.id
    cls = _classes().get(name)
    if cls is None:
        raise _fail(node, f"{name[:40]!r} is not a sympy class a problem can hold")
    args = []
    for i, a in enumerate(node.args):
        if isinstance(a, ast.Constant) and isinstance(a.value, str):
            if i != 0 or name not in _TEXT_FIRST or len(a.value) > 1000:
                raise _fail(a, f"a string argument of {name} is not allowed")
            args.append(a.value)
        else:
            args.append(_build(a, depth + 1))
    kwargs = {}
    for kw in node.keywords:
        want = int if (name, kw.arg) in _INT_KEYWORDS else _KEYWORDS.get(name)
        if want is None or kw.arg is None or not isinstance(kw.value, ast.Constant) or \
                type(kw.value.value) is not want:
            raise _fail(kw.value, f"keyword argument {str(kw.arg)[:40]!r} of {name} is not "
                                  "allowed")
        kwargs[kw.arg] = kw.value.value
    if name == "Float":  # decimal digits only: never an expression string
        _check_float(node, args, kwargs)
    _guard(node, name, args)
    try:
        value = cls(*args, **kwargs)
    except Exception as exc:  # a constructor refusing its arguments
        raise _fail(node, f"{name}(...) failed: {type(exc).__name__}") from None
    _check_result(node, value)
    return value


def read_srepr(text: str):
    """Build the sympy object that ``sympy.srepr`` wrote as ``text``.

    Parameters
    ----------
    text : str
        The output of ``sympy.srepr(obj)``.

    Returns
    -------
    sympy.Basic

    Raises
    ------
    constropt.ParseError
        For anything that is not a constructor call allowed above.
    """
    if not isinstance(text, str) or len(text) > MAX_SREPR_CHARS:
        raise ParseError("not a sympy srepr text: expected a string of at most "
                         f"{MAX_SREPR_CHARS} characters")
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, RecursionError, MemoryError, ValueError):
        raise ParseError("not a sympy srepr text: invalid syntax") from None
    try:
        return _build(tree.body, 0)
    except RecursionError:
        raise ParseError("not a sympy srepr text: nested too deeply") from None
