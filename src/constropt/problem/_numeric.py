"""Size guards that keep sympy from computing enormous exact numbers.

sympy evaluates eagerly: ``Integer(10) ** Integer(10**10)`` computes a number with
ten billion digits in one uninterruptible step, and indirect routes such as
``(2*x)**N`` (distributed over the factor 2), ``(sqrt(2)**x)**(N/x)`` (merged
exponents) or ``exp(N*log(2))`` (rewritten as ``2**N``) end in the same place.
The expression builder calls :func:`guard_power` *before* every power and
exponential it constructs, and :func:`check_number` *after* every node that turned
out to be a constant, so that every constant sub-expression stays below
``2**MAX_NUMBER_BITS`` in magnitude and is cheap to evaluate numerically.

Named expressions (a problem file's ``[expressions]``) are shared sub-trees: a
chain of definitions that each use the previous one twice builds a tree of
exponential size in little memory, and sympy walks trees, not shared graphs. A
:class:`SizeBudget` counts the tree size of every substituted expression and
refuses texts beyond :data:`MAX_TREE_NODES` and files beyond
:data:`MAX_TOTAL_NODES`, so every later traversal stays bounded.
"""

from __future__ import annotations

import math

import sympy

__all__ = ["MAX_NUMBER_BITS", "MAX_TREE_NODES", "MAX_TOTAL_NODES", "SizeBudget",
           "guard_power", "guard_exp", "check_number"]

#: Largest allowed magnitude of a constant, in bits (about 1.0e1233).
MAX_NUMBER_BITS = 4096

_UNDEFINED = (sympy.S.ComplexInfinity, sympy.S.NaN)
_INFINITE = (sympy.S.Infinity, sympy.S.NegativeInfinity)
_LOG2_E = 1.0 / math.log(2.0)


#: Most tree nodes that named expressions may contribute to one expression text.
MAX_TREE_NODES = 200_000
#: Most tree nodes that named expressions may contribute to one problem file.
MAX_TOTAL_NODES = 2_000_000


class NumberTooLarge(ValueError):
    """Internal signal; the builder turns it into a positioned ParseError."""


class SizeBudget:
    """Tree sizes and constness of sympy objects, memoised over their shared graph."""

    def __init__(self, total: int = MAX_TOTAL_NODES) -> None:
        self.total = total
        self.used = 0
        self._memo: dict[int, tuple[sympy.Basic, int, bool]] = {}  # id -> (obj, size, const)

    def _info(self, expr: sympy.Basic) -> tuple[int, bool]:
        memo = self._memo
        stack = [(expr, False)]
        while stack:
            node, ready = stack.pop()
            hit = memo.get(id(node))
            if hit is not None and hit[0] is node:
                continue
            if ready:
                size, const = 1, not node.is_Symbol
                for arg in node.args:
                    _, s, c = memo[id(arg)]
                    size, const = size + s, const and c
                memo[id(node)] = (node, size, const)
            else:
                stack.append((node, True))
                stack.extend((arg, False) for arg in node.args)
        _, size, const = memo[id(expr)]
        return size, const

    def tree_size(self, expr: sympy.Basic) -> int:
        """Number of nodes of ``expr`` as a tree (shared sub-trees counted each time)."""
        return self._info(expr)[0]

    def is_constant(self, expr: sympy.Basic) -> bool:
        """Whether ``expr`` contains no symbol (cheaper than ``expr.free_symbols``)."""
        return self._info(expr)[1]


def _constant(expr: sympy.Basic) -> bool:
    return not expr.free_symbols


def _rational_bits(r: sympy.Rational) -> float:
    """log2 of the larger of numerator and denominator (0 for 0 and 1)."""
    p, q = abs(int(r.p)), int(r.q)
    return max(math.log2(p) if p > 1 else 0.0, math.log2(q) if q > 1 else 0.0)


def _float_log2(value: sympy.Float) -> float:
    """log2 of the magnitude of a sympy Float, without converting to a Python float."""
    sign, man, exp, bc = value._mpf_
    if not man:
        return 0.0
    return float(exp + bc)


def _numeric_log2(value: sympy.Expr) -> float:
    """Absolute log2 magnitude of a constant; the constant is already known to be small."""
    if value.is_Rational:
        return float(_rational_bits(value))
    if value.is_Float:
        return abs(_float_log2(value))
    try:
        approx = sympy.Abs(value).evalf(15)
    except Exception:  # pragma: no cover - defensive: sympy internals
        return 0.0
    if approx.is_Float:
        return abs(_float_log2(approx))
    return 0.0


def _exponent_weight(exponent: sympy.Expr, is_constant=_constant) -> float:
    """Bound on how much ``exponent`` can multiply a base's size once symbols cancel."""
    if is_constant(exponent):
        if exponent.is_Rational:
            if _rational_bits(exponent) >= 1000:
                return math.inf
            return abs(int(exponent.p)) / int(exponent.q)
        return 0.0  # a float or irrational exponent is evaluated by mpmath, which is fast
    total = 0.0
    for atom in exponent.atoms(sympy.Rational):
        if _rational_bits(atom) >= 1000:
            return math.inf
        total += abs(int(atom.p)) / int(atom.q)
    return max(total, 1.0)


def _exact_content(base: sympy.Expr, is_constant=_constant) -> float:
    """Bits of exact numbers that sympy may raise to a power when ``base`` is powered."""
    if base in (sympy.S.Zero, sympy.S.One, sympy.S.NegativeOne):
        return 0.0
    if base is sympy.S.Exp1:
        return 0.0  # E**a is exp(a); see guard_exp
    if is_constant(base):
        return _numeric_log2(base)
    if base.is_Pow:
        return (_exact_content(base.base, is_constant)
                * _exponent_weight(base.exp, is_constant))
    if base.is_Mul:
        return sum(_exact_content(f, is_constant) for f in base.args)
    if base.is_Add:
        content, _ = base.primitive()
        return _exact_content(content, is_constant)
    return 0.0


def guard_power(base: sympy.Expr, exponent: sympy.Expr, is_constant=_constant) -> None:
    """Raise NumberTooLarge if ``base ** exponent`` could build an enormous number."""
    if base is sympy.S.Exp1:
        guard_exp(exponent, is_constant)
        return
    content = _exact_content(base, is_constant)
    if not content:
        return
    if not is_constant(exponent) or exponent.is_Rational:
        weight = _exponent_weight(exponent, is_constant)
    else:
        weight = _numeric_log2(exponent)
        weight = 2.0 ** weight if weight < 1000 else math.inf
    if weight * content > MAX_NUMBER_BITS:
        raise NumberTooLarge(
            f"power too large: the result would need more than 2**{MAX_NUMBER_BITS}"
        )


def guard_exp(argument: sympy.Expr, is_constant=_constant) -> None:
    """Raise NumberTooLarge if ``exp(argument)`` could build an enormous number."""
    if is_constant(argument):
        size = _numeric_log2(argument)
        magnitude = 2.0 ** size if size < 1000 else math.inf
        if magnitude * _LOG2_E > MAX_NUMBER_BITS:
            raise NumberTooLarge(
                f"exp() argument too large: the result would exceed 2**{MAX_NUMBER_BITS}"
            )
        if argument.has(sympy.log):
            _guard_exp_logs(argument, is_constant)
        return
    if argument.has(sympy.log):
        _guard_exp_logs(argument, is_constant)


def _guard_exp_logs(argument: sympy.Expr, is_constant) -> None:
    # sympy rewrites exp(c*log(b)) as b**c, so bound c against the size of b.
    sizes = [_exact_content(atom.args[0], is_constant) for atom in argument.atoms(sympy.log)]
    size = max([1.0, *sizes])
    if _exponent_weight(argument, is_constant) * size > MAX_NUMBER_BITS:
        raise NumberTooLarge(
            "exp() of a logarithm with a large factor: the result would exceed "
            f"2**{MAX_NUMBER_BITS}"
        )


def check_number(value: sympy.Basic, *, allow_infinite: bool = False) -> None:
    """Validate a freshly built constant; the caller knows it has no free symbols.

    Raises NumberTooLarge (magnitude), or ValueError with a message for undefined,
    infinite or complex values. Booleans pass unchecked.
    """
    if not isinstance(value, sympy.Expr):
        return
    if value.is_Rational:
        if _rational_bits(value) > MAX_NUMBER_BITS:
            raise NumberTooLarge(f"number too large (more than {MAX_NUMBER_BITS} bits)")
        return
    if value in _UNDEFINED:
        raise ValueError("undefined value (division by zero or a function outside its domain)")
    if value in _INFINITE:
        if allow_infinite:
            return
        raise ValueError("infinite value ('inf' is only allowed in bounds)")
    if value.is_Float:
        if _float_log2(value) > MAX_NUMBER_BITS:
            raise NumberTooLarge(f"number too large (more than 2**{MAX_NUMBER_BITS})")
        return
    if value.has(*_UNDEFINED):
        raise ValueError("undefined value (division by zero or a function outside its domain)")
    try:
        approx = value.evalf(15)
        real, imag = approx.as_real_imag()
    except Exception:  # pragma: no cover - sympy could not evaluate; keep it symbolic
        return
    if approx.has(*_UNDEFINED):
        raise ValueError("undefined value (a function outside its domain)")
    if imag.is_Number and imag != 0 and abs(imag) > sympy.Float(1e-12) * (1 + abs(real)):
        raise ValueError(f"the value is not a real number ({approx})")
    if real.is_Float and _float_log2(real) > MAX_NUMBER_BITS:
        raise NumberTooLarge(f"number too large (more than 2**{MAX_NUMBER_BITS})")
