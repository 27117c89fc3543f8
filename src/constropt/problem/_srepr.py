"""Reading sympy objects back from ``sympy.srepr`` text without executing it.

``srepr`` writes an expression as nested constructor calls, e.g.
``Add(Symbol('x', real=True), Integer(1))``.  :func:`read_srepr` parses that text with
Python's ``ast`` module and builds the objects itself, allowing only:

* calls of names that are sympy classes (subclasses of ``sympy.Basic``) found in the
  top-level ``sympy`` namespace, with positional arguments that are calls, numbers,
  tuples or lists of those, and the named singletons below;
* a string argument only as the first argument of ``Symbol``, ``Dummy``, ``Str`` and
  ``Float`` (names and decimal digits; nothing else ever parses text);
* keyword arguments only for ``Symbol``/``Dummy`` (assumptions, True/False) and
  ``Float`` (``precision``, an integer);
* the names of sympy's singletons (``pi``, ``E``, ``oo``, ``true``, ...).

Everything else raises :class:`constropt.ParseError`.  Checkpoints store their problem
this way, so loading one never runs code.
"""

from __future__ import annotations

import ast
from functools import cache

import sympy

from .._errors import ParseError

__all__ = ["read_srepr", "MAX_SREPR_CHARS"]

#: Longer texts are refused.
MAX_SREPR_CHARS = 5_000_000

_TEXT_FIRST = {"Symbol", "Dummy", "Str", "Float"}
_KEYWORDS = {"Symbol": bool, "Dummy": bool, "Float": int}


@cache
def _classes() -> dict:
    out = {}
    for name in dir(sympy):
        obj = getattr(sympy, name)
        if isinstance(obj, type) and issubclass(obj, sympy.Basic):
            out[name] = obj
    # names srepr uses that sympy's namespace does not export
    from sympy.core.numbers import Integer, Rational
    from sympy.core.symbol import Str
    from sympy.functions.elementary.piecewise import ExprCondPair
    from sympy.matrices.expressions.matexpr import MatrixElement
    from sympy.tensor.indexed import Idx, Indexed, IndexedBase
    for cls in (Str, Integer, Rational, Indexed, IndexedBase, Idx, ExprCondPair,
                MatrixElement):
        out[cls.__name__] = cls
    return out


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


def _build(node, depth: int):
    if depth > 400:
        raise _fail(node, "nested too deeply")
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and \
            not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and \
            isinstance(node.operand, ast.Constant) and \
            isinstance(node.operand.value, (int, float)):
        return -node.operand.value
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
        raise _fail(node, f"{name[:40]!r} is not a sympy class")
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
        want = _KEYWORDS.get(name)
        if want is None or kw.arg is None or not isinstance(kw.value, ast.Constant) or \
                type(kw.value.value) is not want:
            raise _fail(kw.value, f"keyword argument {str(kw.arg)[:40]!r} of {name} is not "
                                  "allowed")
        kwargs[kw.arg] = kw.value.value
    if name == "Float":  # decimal digits only: never an expression string
        if not args or not isinstance(args[0], (str, int, float)) or set(kwargs) - {"precision"}:
            raise _fail(node, "Float takes a number and precision=")
        if isinstance(args[0], str) and not set(args[0]) <= set("0123456789.eE+-"):
            if args[0] not in ("inf", "-inf", "nan", "+inf"):
                raise _fail(node, "Float text must be decimal digits")
    try:
        return cls(*args, **kwargs)
    except Exception as exc:  # a constructor refusing its arguments
        raise _fail(node, f"{name}(...) failed: {type(exc).__name__}") from None


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
