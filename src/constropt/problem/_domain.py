"""Where the objective is defined, as constraints: bound propagation closes open sides
with them (:func:`._bounds.make_bounds`), so the search looks where the objective is a
number."""

from __future__ import annotations

import sympy as sp

from ._constraints import Constraint, Leaf

__all__ = ["domain_constraints", "polynomial"]


def domain_constraints(objective) -> list:
    """Where the objective is defined, as constraints for bound propagation: ``a >= 0``
    for each ``log(a)`` and each power of ``a`` with a non-integer exponent
    (``sqrt(a)``, ``a**0.6``) the objective evaluates unconditionally (not inside a
    ``Piecewise``, whose branches are evaluated only where they apply).

    Outside these sets the objective is NaN, so no such point can be the answer; a
    divisor's ``a != 0`` is no interval and is left out.
    """
    found, stack = [], [objective]
    while stack:
        e = stack.pop()
        if not isinstance(e, sp.Basic) or isinstance(e, sp.Piecewise) or not e.free_symbols:
            continue
        arg = None
        if isinstance(e, sp.log):
            arg = e.args[0]
        elif isinstance(e, sp.Pow) and e.exp.is_number and e.exp.is_integer is False:
            arg = e.base
        if arg is not None and arg.free_symbols and arg.is_nonnegative is not True:
            found.append(arg)
        stack.extend(e.args)
    out, seen = [], set()
    for a in found:
        if a not in seen:
            seen.add(a)
            out.append(Constraint(sp.Ge(a, 0, evaluate=False), Leaf(-a, "le")))
    return out


def polynomial(expr) -> bool:
    """Whether ``expr`` is a polynomial in its symbols (sums, products and powers with
    non-negative integer exponents of symbols and numbers).  A polynomial is finite and
    continuous everywhere, so on a bounded box it is bounded: it has no pole and cannot
    diverge toward a side.  One pass over the expression tree (sympy's
    ``is_polynomial`` costs far more on sums of thousands of terms)."""
    stack = [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, (sp.Symbol, sp.Number)):
            if e.is_finite is False or e is sp.nan:
                return False
            continue
        if isinstance(e, (sp.Add, sp.Mul)):
            stack.extend(e.args)
        elif isinstance(e, sp.Pow) and isinstance(e.exp, sp.Integer) and e.exp >= 0:
            stack.append(e.base)
        elif isinstance(e, sp.NumberSymbol):
            continue
        else:
            return False
    return True
