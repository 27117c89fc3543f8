"""Safe parsing of math text into sympy expressions, via Python's ``ast`` module.

The text is parsed with ``ast.parse(text, mode="eval")`` and never executed:
every node is checked against an allow-list before any sympy object is built
(see :mod:`._builder`). ``eval``, ``exec``, ``compile`` and ``sympify`` /
``parse_expr`` are never applied to the text.
"""

from __future__ import annotations

import ast
import math
import sys
import warnings
from collections.abc import Iterable, Mapping

import sympy

from constropt._errors import ParseError

from ._builder import MAX_DEPTH, Builder, make_error
from ._numeric import SizeBudget

__all__ = ["parse_expression", "parse_constraint", "parse_constant", "build_expression",
           "build_constraint", "build_constant", "MAX_TEXT_LENGTH"]

MAX_TEXT_LENGTH = 100_000


def _balanced(text: str) -> bool:
    if "'" in text or '"' in text:
        return False
    depth = 0
    for line in text.split("\n"):
        for ch in line.split("#", 1)[0]:
            depth += (ch in "([{") - (ch in ")]}")
            if depth < 0:
                return False
    return depth == 0


def _ast_parse(source: str) -> ast.Expression:
    """``ast.parse`` in eval mode, silencing the parser's warnings (such as invalid
    escapes in a string literal, which is rejected anyway). Long flat sums like
    ``x1 + x2 + ... + x5000`` give deep left-nested trees that exceed CPython's
    recursion limit during AST construction, so retry once with a limit sized to
    the (bounded) text length."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return ast.parse(source, mode="eval")
        except RecursionError:
            pass
        old = sys.getrecursionlimit()
        sys.setrecursionlimit(max(old, len(source) // 4 + 1000))
        try:
            return ast.parse(source, mode="eval")
        finally:
            sys.setrecursionlimit(old)


def _syntax_error(exc: SyntaxError, text: str, line_offset: int) -> ParseError:
    msg = exc.msg or "invalid syntax"
    if "too many nested" in msg:
        return make_error(f"expression is nested too deeply ({msg})", text)
    lineno = max((exc.lineno or 1) - line_offset, 1)
    col = max((exc.offset or 1) - 1, 0)
    return make_error(f"invalid syntax: {msg}", text, lineno, col)


def _parse_tree(text: str) -> tuple[ast.Expression, str, int]:
    if not isinstance(text, str):
        raise make_error("expected the expression as a string, got "
                         f"{type(text).__name__}", str(text))
    if len(text) > MAX_TEXT_LENGTH:
        raise make_error(f"expression too long ({len(text)} characters; "
                         f"the limit is {MAX_TEXT_LENGTH})",
                     text[:200])
    if "\x00" in text:
        raise make_error("expression contains a NUL character", text)
    source = text.replace("\r\n", "\n").replace("\r", "\n")
    if not source.strip():
        raise make_error("empty expression", text)
    too_deep = f"expression is nested too deeply (more than {MAX_DEPTH} levels)"
    try:
        return _ast_parse(source), source, 0
    except SyntaxError as exc:
        first = _syntax_error(exc, text, 0)
    except (MemoryError, RecursionError):
        raise make_error(too_deep, text[:200]) from None
    if _balanced(source):  # lets an expression span lines and start indented
        wrapped = "(\n" + source + "\n)"
        try:
            return _ast_parse(wrapped), wrapped, 1
        except SyntaxError as exc:
            if 2 <= (exc.lineno or 0) <= source.count("\n") + 2:
                raise _syntax_error(exc, text, 1) from None
        except (MemoryError, RecursionError):
            raise make_error(too_deep, text[:200]) from None
    raise first


def _names(symbols) -> dict[str, sympy.Basic]:
    if isinstance(symbols, Mapping):
        out = {}
        for key, value in symbols.items():
            if not isinstance(key, str):
                raise TypeError(f"symbol names must be strings, got {key!r}")
            if isinstance(value, bool) or not isinstance(value, (sympy.Basic, int, float)):
                raise TypeError(f"symbols[{key!r}] must be a sympy object, "
                                f"got {type(value).__name__}")
            out[key] = value if isinstance(value, sympy.Basic) else (
                sympy.Integer(value) if isinstance(value, int) else sympy.Float(value))
        return out
    if isinstance(symbols, Iterable) and not isinstance(symbols, (str, bytes)):
        out = {}
        for s in symbols:
            if not isinstance(s, sympy.Symbol):
                raise TypeError(f"expected sympy Symbols, got {s!r}")
            out[s.name] = s
        return out
    raise TypeError("symbols must be a mapping of names to sympy symbols or an iterable of Symbols")


def _build_tree(text, symbols, allow_inf=False, budget=None):
    tree, source, offset = _parse_tree(text)
    builder = Builder(text, source, offset, _names(symbols), allow_inf,
                      SizeBudget() if budget is None else budget)
    builder.validate(tree.body)
    return builder, tree.body


def _final_check(builder: Builder, node: ast.AST, value: sympy.Basic) -> sympy.Basic:
    bad = [sympy.S.ComplexInfinity, sympy.S.NaN]
    if not builder.allow_inf:
        bad += [sympy.S.Infinity, sympy.S.NegativeInfinity]
    if value.has(*bad):
        builder.fail("the expression contains an undefined or infinite value "
                     "(such as 1/0 or log(0))", node)
    return value


def parse_expression(text: str, symbols, *, allow_relational: bool = False) -> sympy.Basic:
    """Build a sympy expression from math text without executing it.

    Parameters
    ----------
    text : str
        Expression in Python/math syntax, e.g. ``"x**2 + 2*y**2"``. It may span
        several lines when its parentheses balance.
    symbols : mapping of str to sympy object, or iterable of sympy.Symbol
        Names the text may use, usually declared variables and parameters. A name
        may also map to a number or a whole sympy expression, which is then
        substituted. These names take precedence over the constants ``pi``,
        ``E`` and ``e``.
    allow_relational : bool, optional
        When true the text may also be a comparison or a combination of
        comparisons with ``and``/``or``/``not``, and a sympy Boolean is returned.

    Returns
    -------
    sympy.Expr or sympy.logic.boolalg.Boolean
        Ordinary sympy objects: ``parse_expression("x**2 + 2*y**2", s)`` equals
        ``x**2 + 2*y**2`` built by hand. Integer literals become exact sympy
        Integers (so ``1/3`` is ``Rational(1, 3)``), float literals sympy Floats.

    Raises
    ------
    constropt.ParseError
        For any construct outside the allow-list (attribute access, subscripts,
        strings, lambdas, comprehensions, keyword arguments, unknown names or
        functions, ...), syntax errors, text over 100,000 characters, nesting
        deeper than 100 levels, constants beyond ``2**4096`` and undefined values
        such as ``1/0``. The message names the construct and gives its line and
        column within ``text``.
    """
    return build_expression(text, symbols, allow_relational=allow_relational)


def parse_constraint(text: str, symbols) -> tuple[sympy.Basic, ...]:
    """Parse a constraint into a tuple of sympy relationals.

    A chained comparison (``"3 < y <= 7"``) or a top-level ``and`` is split into
    its parts, in source order: ``(3 < y, y <= 7)``. A constraint that uses
    ``or`` or ``not`` stays a single sympy Boolean in the tuple.

    Parameters
    ----------
    text : str
        The constraint, e.g. ``"x + y + z >= 3"``. Allowed comparisons are ``<``,
        ``<=``, ``>``, ``>=`` and ``==`` (which gives ``sympy.Eq``).
    symbols : mapping of str to sympy object, or iterable of sympy.Symbol
        As for :func:`parse_expression`.

    Returns
    -------
    tuple of sympy.logic.boolalg.Boolean
        One or more relationals (or Or/Not combinations).

    Raises
    ------
    constropt.ParseError
        As for :func:`parse_expression`; also when the text is not a comparison,
        when a part does not depend on any symbol, or when sympy decides a part
        is always true or always false (e.g. ``x**2 >= 0`` for a real ``x``).
    """
    return build_constraint(text, symbols)


def parse_constant(text: str, names: Mapping[str, sympy.Basic] | None = None, *,
                   allow_inf: bool = False) -> float:
    """Evaluate a constant expression such as ``"pi/2"`` or ``"-inf"`` to a float.

    Parameters
    ----------
    text : str
        The expression; it may use the constants ``pi``, ``E``, ``e`` and, when
        ``allow_inf``, ``inf``.
    names : mapping of str to sympy number, optional
        Further names with known values, e.g. parameters.
    allow_inf : bool, optional
        Allow ``inf``; infinite results are returned as ``math.inf`` or
        ``-math.inf``.

    Returns
    -------
    float

    Raises
    ------
    constropt.ParseError
        As for :func:`parse_expression`; also when the value depends on a symbol
        or does not fit a double.
    """
    return build_constant(text, names, allow_inf=allow_inf)


# -- the same, with a size budget shared across the texts of one problem file ------

def build_expression(text, symbols, *, allow_relational=False, budget=None):
    """:func:`parse_expression` charging named-expression sizes to ``budget``."""
    builder, root = _build_tree(text, symbols, budget=budget)
    value = builder.build(root, "any" if allow_relational else "expr")
    return _final_check(builder, root, value)


def build_constraint(text, symbols, *, budget=None):
    """:func:`parse_constraint` charging named-expression sizes to ``budget``."""
    builder, root = _build_tree(text, symbols, budget=budget)
    parts = []
    for node, value in builder.constraint_parts(root):
        _final_check(builder, node, value)
        if value is sympy.true or value is sympy.false:
            builder.fail(f"this comparison is always {'true' if value else 'false'}", node)
        if builder.budget.is_constant(value):
            builder.fail("this comparison does not depend on any variable", node)
        parts.append(value)
    return tuple(parts)


def build_constant(text, names=None, *, allow_inf=False, budget=None):
    """:func:`parse_constant` charging named-expression sizes to ``budget``."""
    builder, root = _build_tree(text, names or {}, allow_inf=allow_inf, budget=budget)
    value = _final_check(builder, root, builder.build(root, "expr"))
    if value.free_symbols:
        names_used = ", ".join(sorted(s.name for s in value.free_symbols))
        builder.fail(f"expected a constant, but the value depends on {names_used}", root)
    if value is sympy.oo or value is sympy.S.NegativeInfinity:
        return math.inf if value is sympy.oo else -math.inf
    try:
        result = float(value.evalf(17))
    except (TypeError, ValueError):
        builder.fail(f"could not evaluate {value} to a number", root)
    if not math.isfinite(result):
        builder.fail("the value is outside the range of double precision numbers", root)
    return result
