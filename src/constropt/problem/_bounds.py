"""Bounds of a Problem: box bounds extracted from single-variable linear constraints,
merged with the user's ``bounds=``, defaults for open sides, integer rounding."""

from __future__ import annotations

import math
import warnings

import numpy as np
import sympy as sp

from .._errors import ProblemError
from ._constraints import Leaf

__all__ = ["BoundsWarning", "make_bounds", "is_integer"]


class BoundsWarning(UserWarning):
    """A variable had no finite bound on a side and got the default box."""


def is_integer(s) -> bool:
    """Whether a variable is declared ``integer=True``."""
    return bool(getattr(s, "is_integer", False))


def _linear_bound(leaf: Leaf, scalars: set):
    """``(symbol, side, value, strict)`` if ``leaf`` is ``a*v + b (op) 0``, else None."""
    free = leaf.expr.free_symbols
    if len(free) != 1 or not free <= scalars or leaf.expr.atoms(sp.Indexed):
        return None
    (v,) = free
    a = sp.diff(leaf.expr, v)
    if not a.is_number or a == 0:
        return None
    b = sp.expand(leaf.expr - a * v)
    if b.free_symbols:
        return None
    val, fa = float(-b / a), float(a)
    if leaf.kind == "eq":
        return v, "eq", val, False
    return v, ("hi" if fa > 0 else "lo"), val, leaf.kind == "lt"


def make_bounds(variables, layout, constraints, bounds, default_bound, parameters,
                eq_tol: float = 1e-4):
    """The search box: ``(lower, upper, integer, box, proof)``; ``proof`` is an
    :class:`~._fbbt.InfeasibilityProof` when propagation shows the constraints admit no
    point (the box is then left as it was before propagation)."""
    if not (math.isfinite(default_bound) and default_bound > 0):
        raise ProblemError(f"default_bound must be a finite number > 0, got {default_bound}")
    scalars = {b.symbol for b in layout.blocks if b.shape == ()}
    lo = {v: -math.inf for v in variables}
    hi = {v: math.inf for v in variables}
    strict_lo, strict_hi = set(), set()
    for c in constraints:
        tree = c.tree
        kids = [tree] if isinstance(tree, Leaf) else (
            list(tree.children) if type(tree).__name__ == "AllOf" else [])
        for leaf in kids:
            if not isinstance(leaf, Leaf):
                continue
            got = _linear_bound(leaf, scalars)
            if got is None:
                continue
            v, side, val, strict = got
            if side in ("lo", "eq") and val >= lo[v]:
                if val > lo[v]:
                    strict_lo.discard(v)
                lo[v] = val
                if strict:
                    strict_lo.add(v)
            if side in ("hi", "eq") and val <= hi[v]:
                if val < hi[v]:
                    strict_hi.discard(v)
                hi[v] = val
                if strict:
                    strict_hi.add(v)
    for v in variables:
        if lo[v] > hi[v] or (lo[v] == hi[v] and (v in strict_lo or v in strict_hi)):
            raise ProblemError(f"the constraints on {v} contradict each other: they require "
                               f"{v} >= {lo[v]} and {v} <= {hi[v]}")
    if bounds is not None:
        if not isinstance(bounds, dict):
            raise ProblemError(f"bounds must be a dict {{symbol: (lo, hi)}}, got {bounds!r}")
        for s, pair in bounds.items():
            if s not in lo:
                raise ProblemError(f"bounds given for {s}, which is not a variable of the "
                                   f"problem (variables: {list(variables)})")
            try:
                blo, bhi = pair
            except (TypeError, ValueError):
                raise ProblemError(f"bounds for {s} must be a pair (lo, hi), got {pair!r}") \
                    from None
            for name, val in (("lower", blo), ("upper", bhi)):
                if val is not None:
                    try:
                        fv = float(val)
                    except (TypeError, ValueError):
                        raise ProblemError(f"{name} bound of {s} is not a number: {val!r}") \
                            from None
                    if math.isnan(fv):
                        raise ProblemError(f"{name} bound of {s} is NaN")
                    if name == "lower":
                        lo[s] = fv
                    else:
                        hi[s] = fv
            if lo[s] > hi[s]:
                raise ProblemError(f"lower bound of {s} ({lo[s]}) is above its upper bound "
                                   f"({hi[s]})")
    lo, hi, strict_lo, strict_hi, proof = _tighten(variables, layout, constraints, lo, hi,
                                                   strict_lo, strict_hi, eq_tol)
    missing = []
    box = {}
    n = sum(b.size for b in layout.blocks)
    lower, upper = np.empty(n), np.empty(n)
    integer = np.zeros(n, dtype=bool)
    for b in layout.blocks:
        v = b.symbol
        a, z = lo[v], hi[v]
        if not math.isfinite(a) or not math.isfinite(z):
            missing.append(str(v))
        if not math.isfinite(a):
            a = -default_bound if not math.isfinite(z) or z > -default_bound else z - default_bound
        if not math.isfinite(z):
            z = default_bound if a < default_bound else a + default_bound
        if is_integer(v):
            a, z = float(math.ceil(a)), float(math.floor(z))
            if v in strict_lo and a == lo[v]:
                a += 1
            if v in strict_hi and z == hi[v]:
                z -= 1
            if a > z:
                raise ProblemError(f"integer variable {v} has no integer value in its bounds "
                                   f"[{lo[v]}, {hi[v]}]")
        sl = slice(b.offset, b.offset + b.size)
        lower[sl], upper[sl] = a, z
        integer[sl] = is_integer(v)
        box[v] = (a, z)
    if missing and proof is None:
        warnings.warn(f"no finite bound on some side of {', '.join(missing)}: searching the "
                      f"default box (see Problem.bounds); pass bounds= to choose it",
                      BoundsWarning, stacklevel=4)
    return lower, upper, integer, box, proof


def _tighten(variables, layout, constraints, lo, hi, strict_lo, strict_hi, eq_tol):
    """Bounds implied by the constraints (FBBT, see :mod:`._fbbt`) for scalar variables.

    A side moves only when propagation improves it by more than 1e-9 of the width (so
    rounding-level changes never perturb a given box).
    """
    from ._fbbt import propagate

    n = sum(b.size for b in layout.blocks)
    if not constraints or n > 100_000:
        return lo, hi, strict_lo, strict_hi, None
    a, z = np.empty(n), np.empty(n)
    integer = np.zeros(n, dtype=bool)
    for b in layout.blocks:
        sl = slice(b.offset, b.offset + b.size)
        a[sl], z[sl], integer[sl] = lo[b.symbol], hi[b.symbol], is_integer(b.symbol)
    res = propagate(layout, constraints, a, z, integer, eq_tol, None, variables)
    if res.proof is not None:
        return lo, hi, strict_lo, strict_hi, res.proof
    lo, hi = dict(lo), dict(hi)
    strict_lo, strict_hi = set(strict_lo), set(strict_hi)
    for b in layout.blocks:
        if b.shape != ():
            continue
        v, k = b.symbol, b.offset
        new_lo, new_hi = float(res.lo[k]), float(res.hi[k])
        w = min(hi[v] - lo[v], new_hi - new_lo)
        if new_lo > lo[v] and (not math.isfinite(lo[v]) or new_lo - lo[v] > 1e-9 * w):
            lo[v] = new_lo
            strict_lo.discard(v)
        if new_hi < hi[v] and (not math.isfinite(hi[v]) or hi[v] - new_hi > 1e-9 * w):
            hi[v] = new_hi
            strict_hi.discard(v)
    return lo, hi, strict_lo, strict_hi, None
