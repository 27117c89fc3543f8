"""Dead genes: continuous genes the problem no longer sees at the best point.

A gene that enters only through ``exp(x)`` is invisible once ``x`` is far down a wide
box: at ``x = -74`` every partial derivative involving it is ~1e-32 of the largest, so
neither the search (whose differences in f and in the violations are lost to rounding)
nor SLSQP (gradient ~0) moves it again, and the run ends above the optimum with the gene
where the search happened to drop it (a chemical equilibrium whose species enter as
``exp(x_j)``, on a wide box, ends that way while every live gene is where it belongs).

:func:`revive` runs after the other finishing moves (:mod:`._intsearch`).  The trigger,
at a feasible best point:

1. a continuous gene is **dead** when, in every row (the objective and every constraint
   leaf) whose gradient is not all zero, its partial derivative is nonzero in some row
   and below :data:`DEAD` times the row's largest, and stays below :data:`DEAD_NEAR`
   with the gene moved by :data:`PROBE` of its box width either way: a gene merely at
   a stationary point of a smooth term (``x**2`` at 0) comes alive there, a saturated
   ``exp`` does not.  One
   derivative evaluation at the best point decides for a problem without such genes
   (counted in ``nfev``); the two probes run only where a gene passes the first test;
2. each dead gene is **revived** alone along a grid of :data:`GRID` values over its
   range (one batched derivative call, then a finer grid between the last dead and the
   first live value): the live value nearest where it is, where its partial derivatives
   reach :data:`ALIVE` of a row's largest;
3. two starts: every dead gene at its live value, and every dead gene at the median of
   the live continuous genes (where the genes share a scale); each is
   projected onto the constraints (:func:`constropt.local._newton.restore`) and polished as the
   bound flips' moves are (:func:`._intsearch.try_move`: SLSQP at margin 0, then 1e-9),
   and the result is kept only when it is feasible and better; from a kept point the
   trigger is tested again (at most :data:`ROUNDS` times).

A gene whose partial derivatives are exactly 0 everywhere (absent from the problem, or
an ``exp`` underflowed to 0 below about -745) is never dead: nothing here measures it.
Cases behind the thresholds: ``benchmarks/results/finishing_cases.md``.
"""

from __future__ import annotations

import numpy as np

from ..local._newton import restore
from ._budget import Budget, Incumbent
from ._intsearch import try_move

__all__ = ["dead_genes", "revive", "DEAD", "DEAD_NEAR", "ALIVE", "PROBE", "GRID", "ROUNDS"]

#: A gene is dead where its partial derivatives are below this share of each row's
#: largest (SLSQP stalls well above rounding level; a live optimum's genes stay far
#: above it).
DEAD = 1e-6
#: ... and stays below this share a step (:data:`PROBE`) away either way: ``exp(x)``
#: grows by ``e`` over a step of 1, ``x**2`` at 0 goes from nothing to the step itself.
DEAD_NEAR = 1e-4
#: A gene is alive again where some partial derivative reaches this share of its row's
#: largest.
ALIVE = 1e-3
#: The gene is moved by this share of its box width either way to tell a saturated
#: function from a stationary point.
PROBE = 0.01
#: Grid values along a dead gene's range, and again between its last dead and first live.
GRID = 33
#: Rounds of revival at most (a kept point is tested again).
ROUNDS = 3


def _shares(problem, X: np.ndarray, pvec) -> tuple[np.ndarray, int]:
    """Each gene's largest share of a row's largest partial derivative, at every column
    of ``X`` (n, K): ``(shares (n, K), evaluations)``; NaN where a derivative is not
    finite.  Rows whose derivatives are all 0 at a point do not count there."""
    deriv = problem.lowering.derivatives("numpy")
    n, K = X.shape
    L = len(problem.leaves)
    sign = -1.0 if problem.maximize else 1.0
    P = np.repeat(np.reshape(pvec, (-1, 1)), K, axis=1)
    with np.errstate(all="ignore"):
        g, J = deriv(X, P)
    g = np.broadcast_to(np.asarray(g, float).reshape(n, -1), (n, K))
    J = np.broadcast_to(np.asarray(J, float).reshape(L, n, -1), (L, n, K)) if L else \
        np.zeros((0, n, K))
    R = np.abs(np.concatenate([sign * g[None], J], axis=0))          # (rows, n, K)
    top = R.max(axis=1, keepdims=True)
    with np.errstate(all="ignore"):
        share = np.where(top > 0, R / top, 0.0).max(axis=0)          # (n, K)
    bad = ~np.all(np.isfinite(R), axis=0)
    return np.where(bad, np.nan, share), K


def dead_genes(problem, x: np.ndarray, pvec) -> tuple[np.ndarray, int]:
    """The dead continuous genes of ``x`` (n,): see the module docstring.

    Returns ``(indices, evaluations spent)``; no genes when the problem has no exact
    derivatives or some derivative at ``x`` is not finite.
    """
    try:
        share, used = _shares(problem, x[:, None], pvec)
    except Exception:  # no exact derivatives: nothing to measure
        return np.zeros(0, dtype=np.int64), 0
    lo, hi = problem.lower, problem.upper
    cont = (~problem.integer) & (hi > lo)
    s = share[:, 0]
    cand = np.flatnonzero(cont & np.isfinite(s) & (s > 0) & (s < DEAD))
    if cand.size == 0 or not np.all(np.isfinite(s)):
        return np.zeros(0, dtype=np.int64), used
    width = np.where(np.isfinite(hi - lo), hi - lo, 2.0 * np.maximum(1.0, np.abs(x)))
    pts, owner = [], []
    for j in cand:
        for d in (-1.0, 1.0):
            v = float(np.clip(x[j] + d * PROBE * width[j], lo[j], hi[j]))
            if v != x[j]:
                p = x.copy()
                p[j] = v
                pts.append(p)
                owner.append(j)
    if not pts:
        return np.zeros(0, dtype=np.int64), used
    share2, more = _shares(problem, np.stack(pts, axis=1), pvec)
    used += more
    owner = np.array(owner)
    dead = [j for j in cand
            if np.all(np.nan_to_num(share2[j, owner == j], nan=1.0) < DEAD_NEAR)]
    return np.array(dead, dtype=np.int64), used


def _live_values(problem, x: np.ndarray, pvec, dead: np.ndarray):
    """For each dead gene, the value nearest ``x[j]`` along its range (others held at
    ``x``) where some partial derivative of it reaches :data:`ALIVE` of its row's largest
    (NaN where none does).  Returns ``(values (k,), evaluations)``."""
    lo, hi = problem.lower[dead], problem.upper[dead]
    lo_f = np.where(np.isfinite(lo), lo, x[dead] - 1e3 * np.maximum(1.0, np.abs(x[dead])))
    hi_f = np.where(np.isfinite(hi), hi, x[dead] + 1e3 * np.maximum(1.0, np.abs(x[dead])))
    used = 0
    out = np.full(dead.size, np.nan)
    a, b = lo_f, hi_f
    for level in range(2):
        grid = a[:, None] + (b - a)[:, None] * np.linspace(0.0, 1.0, GRID)[None]  # (k, G)
        X = np.repeat(x[:, None], dead.size * GRID, axis=1)
        for i, j in enumerate(dead):
            X[j, i * GRID:(i + 1) * GRID] = grid[i]
        share, more = _shares(problem, X, pvec)
        used += more
        a, b = a.copy(), b.copy()
        for i, j in enumerate(dead):
            s = share[j, i * GRID:(i + 1) * GRID]
            live = np.flatnonzero(np.isfinite(s) & (s >= ALIVE))
            if live.size == 0:  # nothing to refine (a refined gene keeps its value)
                a[i] = b[i] = x[j] if level == 0 else a[i]
                continue
            k = live[np.argmin(np.abs(grid[i, live] - x[j]))]
            out[i] = grid[i, k]
            # refine between it and its dead neighbour on the side of x[j]
            nb = k - 1 if grid[i, k] > x[j] else k + 1
            if 0 <= nb < GRID and not (np.isfinite(s[nb]) and s[nb] >= ALIVE):
                a[i], b[i] = sorted((grid[i, nb], grid[i, k]))
            else:
                a[i] = b[i] = grid[i, k]
        if level == 0 and np.all(a == b):
            break
    return out, used


def revive(problem, inc: Incumbent, budget: Budget):
    """Send the dead genes of a feasible incumbent to live values, project, polish; keep
    a feasible better point (module docstring).  Same parameters and returns as
    :func:`._intsearch.integer_search`: ``(incumbent, stop)``."""
    if not inc.feasible or not np.isfinite(inc.f):
        return inc, False
    sign = -1.0 if problem.maximize else 1.0
    for _ in range(ROUNDS):
        if not budget.room(20):
            return inc, True
        dead, used = dead_genes(problem, inc.x, inc.pvec)
        budget.spend(used)
        if dead.size == 0:
            break
        if not budget.room(2 * GRID * dead.size + 20):
            return inc, True
        values, used = _live_values(problem, inc.x, inc.pvec, dead)
        budget.spend(used)
        keep = np.isfinite(values)
        if not keep.any():
            break
        before = inc.f
        for start in _starts(problem, inc.x, dead, values, keep):
            if not budget.room(40) or budget.expired():
                return inc, True
            # the revived genes add to the constraints: project first, then polish
            start, used = restore(problem, start, inc.pvec, budget.lend())
            budget.spend(used)
            x, f, V, timed_out = try_move(problem, start, inc.pvec, budget)
            if np.all(V == 0) and sign * f < sign * inc.f:
                inc = inc.at(x, f, V)
            if timed_out:
                return inc, True
        if not sign * inc.f < sign * before:
            break
    return inc, False


def _starts(problem, best, dead, values, keep) -> list:
    """The two starts of a revival: every dead gene at its live value (those that have
    one), and every dead gene at the median of the live continuous genes (where the
    genes share a scale)."""
    live = np.flatnonzero((~problem.integer) & (problem.upper > problem.lower))
    live = np.setdiff1d(live, dead)
    s = best.copy()
    s[dead[keep]] = values[keep]
    starts = [s]
    if live.size:
        s = best.copy()
        s[dead] = np.clip(np.median(best[live]), problem.lower[dead], problem.upper[dead])
        starts.append(s)
    return starts
