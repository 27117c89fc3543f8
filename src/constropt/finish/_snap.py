"""Integer variables confined to a finite set by an equality of their own.

A discrete design variable is often declared as an integer tied by a product equality,
``(a - 1)(a - 2)(a - 3)(a - 5)(a - 8) == 0``: its feasible values are the integer
roots.  Rounding alone lands on a root only by chance (and on the wrong one, for the
objective), so the search gives such a gene the set itself: every evaluated point has
the gene snapped to the nearest allowed value (:func:`constropt.engine._variation.snap`),
and the reported point is snapped the same way.
"""

from __future__ import annotations

import numpy as np
import sympy as sp

from ..backend._arrays import asarray, to_numpy
from ..engine._variation import snap
from ..local._polish import conjunctive_leaves

__all__ = ["integer_sets", "snapped", "snap_array", "MAX_RANGE"]

#: Largest integer range (upper - lower + 1) scanned for the roots of an equality.
MAX_RANGE = 100_000


def integer_sets(problem):
    """Allowed values of integer variables confined by a univariate equality.

    Returns
    -------
    ndarray of float64, shape (N, K), or None
        Row ``i`` holds the integers ``v`` in variable ``i``'s bounds with
        ``|h(v)| <= eq_tol`` for every conjunctive equality ``h == 0`` in that variable
        alone, padded with ``inf``; a row of ``inf`` leaves the variable as it is.
        ``None`` when no variable is confined (or a set would be empty: the search
        then reports the infeasibility as usual).
    """
    scalar = {b.symbol: b.offset for b in problem.layout.blocks if b.shape == ()}
    leaves = problem.leaves
    sets: dict[int, np.ndarray] = {}
    for k in conjunctive_leaves(problem):
        lf = leaves[k]
        if lf.kind != "eq":
            continue
        syms = lf.expr.free_symbols
        if len(syms) != 1:
            continue
        (s,) = syms
        i = scalar.get(s)
        if i is None or not problem.integer[i]:
            continue
        lo, hi = problem.lower[i], problem.upper[i]
        if not (np.isfinite(lo) and np.isfinite(hi)) or hi - lo + 1 > MAX_RANGE:
            continue
        grid = sets.get(i, np.arange(np.ceil(lo), np.floor(hi) + 1))
        with np.errstate(all="ignore"):
            h = np.asarray(sp.lambdify(s, lf.expr, "numpy")(grid), dtype=float)
        grid = grid[np.broadcast_to(np.abs(h) <= problem.eq_tol, grid.shape)]
        if grid.size == 0:
            return None
        sets[i] = grid
    if not sets:
        return None
    K = max(v.size for v in sets.values())
    out = np.full((problem.n, K), np.inf)
    for i, v in sets.items():
        out[i, :v.size] = v
    return out


def snapped(fitness, values):
    """``fitness`` evaluated at the snapped population (same signature; the population
    may carry an instance axis, (N, B, S))."""
    def fitness_snapped(X, P, eq_tol):
        return fitness(snap(X.reshape(X.shape[0], -1), values).reshape(X.shape), P, eq_tol)

    return fitness_snapped


def snap_array(X, values):
    """Host genes ``X`` (N, ...) (a best point or a final population) snapped as the
    search evaluated them."""
    X = np.asarray(X)
    t = asarray(X.reshape(X.shape[0], -1), values, dtype=values.dtype)
    return to_numpy(snap(t, values)).astype(X.dtype).reshape(X.shape)
