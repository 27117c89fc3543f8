"""The verdict on a final point: is its objective a finite number, does it diverge?

Shared by :func:`constropt.solve` and :func:`constropt.solve_batch`, so every mode reports
an undefined or unbounded objective the same way.
"""

from __future__ import annotations

import math

import numpy as np

from ..problem._evaluate import report_numpy
from ._result import Status

__all__ = ["UNBOUNDED_LEVEL", "check_point", "objective_verdict", "diverges", "point_dict"]

#: A feasible objective beyond this magnitude (in the direction of optimization) is
#: reported as unbounded (status ``UNBOUNDED``, ``success=False``); so is one that keeps
#: improving by orders of magnitude as the best point approaches a box edge.
UNBOUNDED_LEVEL = 1e30


def check_point(problem, x: np.ndarray, pvec: np.ndarray):
    """Float64 objective (user's sense) and per-constraint violations at one point."""
    f, V = report_numpy(problem, x.reshape(-1, 1), pvec)
    return float(f[0]), V[:, 0]


def objective_verdict(problem, f: float):
    """``(Status, message)`` when the objective at a feasible final point is not a finite
    number, else None: ``-inf`` in the direction of optimization is ``UNBOUNDED``; NaN or
    an overflow the wrong way is ``UNDEFINED``.  Never a success either way."""
    fmin = -f if problem.maximize else f
    if fmin == -math.inf:
        return Status.UNBOUNDED, f"{Status.UNBOUNDED.value} (the objective is {f} at x)"
    if math.isfinite(f):
        return None
    cause = ("is NaN: it is undefined on the feasible set (a log, sqrt, power or division "
             "outside its domain?)" if math.isnan(f) else
             f"overflows to {f}: the box or the objective's scale is beyond float64 "
             "(rescale the variables or give tighter bounds)")
    return Status.UNDEFINED, f"{Status.UNDEFINED.value}; at the returned feasible point it {cause}"


def diverges(problem, x: np.ndarray, pvec: np.ndarray) -> tuple[bool, int]:
    """Does the objective diverge (in the optimization direction) as feasible points
    approach the end of the feasible segment from ``x`` along some coordinate?

    Per coordinate direction, bisection finds where the feasible segment from ``x`` ends
    (a box edge or a constraint boundary), then geometric approaches to that end are
    evaluated.  Returns ``(verdict, points evaluated)``.
    """
    sign = -1.0 if problem.maximize else 1.0
    free = np.flatnonzero(~problem.integer)
    if free.size == 0:
        return False, 0
    dirs = np.concatenate([free, free])
    tmax = np.concatenate([x[free] - problem.lower[free], problem.upper[free] - x[free]])
    sgn = np.concatenate([-np.ones(free.size), np.ones(free.size)])
    used = 0

    def feasible_at(t):
        nonlocal used
        pts = np.repeat(x[:, None], dirs.size, axis=1)
        pts[dirs, np.arange(dirs.size)] += sgn * t
        f, V = report_numpy(problem, pts, pvec)
        used += dirs.size
        return (V == 0).all(axis=0), sign * f

    lo, hi = np.zeros_like(tmax), tmax.copy()
    ok_hi, _ = feasible_at(hi)
    for _ in range(32):  # bisection for the end of each feasible segment (to 2^-32)
        mid = 0.5 * (lo + hi)
        ok, _ = feasible_at(mid)
        lo, hi = np.where(ok, mid, lo), np.where(ok, hi, mid)
    end = np.where(ok_hi, tmax, lo)
    f0 = sign * check_point(problem, x, pvec)[0]
    used += 1
    rows, feas = [], []
    for frac in 1.0 - 10.0 ** -np.arange(1, 13, 1.0):
        ok, fm = feasible_at(end * frac)
        rows.append(fm)
        feas.append(ok)
    rows, feas = np.array(rows), np.array(feas)
    for j in range(dirs.size):
        r = rows[:, j]
        if end[j] > 0 and feas[:, j].all() and np.all(np.diff(r) < 0) and r[-1] < f0 and \
                (r[-1] == -np.inf or abs(r[-1] - r[0]) > 1e6 * max(1.0, abs(r[0]))):
            return True, used
    width = np.concatenate([problem.upper[free] - problem.lower[free]] * 2)
    at_edge = tmax <= 1e-6 * width  # on the edge (a strict one: a hair inside it)
    verdict, more = _diverges_at_edge(problem, x, pvec, dirs[at_edge], sgn[at_edge],
                                      width[at_edge])
    return verdict, used + more


#: Decades of approach to an edge that must keep improving the objective by a steady step.
_DECADES = 10


def _diverges_at_edge(problem, x, pvec, dirs, sgn, width) -> tuple[bool, int]:
    """A point sitting on a box edge where the objective falls by a steady amount per
    decade of approach (``log(x)`` at ``x -> 0+``: by ``ln 10`` each) diverges there, even
    though float64 stops it at a finite value (-744 at the smallest subnormal).

    Along each direction, points at distances ``width * 10**-k`` inside the edge
    (``k = 1 ... 330``, those distinct from the edge in float64) must all be feasible, and
    over the last ``_DECADES`` of them the objective must fall every decade by at least
    ``1e-3 * max(1, |f|)``, each step at least half the previous one (a bounded function
    converges: its steps shrink).  Returns ``(verdict, points evaluated)``.
    """
    if dirs.size == 0:
        return False, 0
    sign = -1.0 if problem.maximize else 1.0
    k = np.arange(1, 331, dtype=np.float64)
    edge = np.where(sgn < 0, problem.lower[dirs], problem.upper[dirs])     # (D,)
    d = width[:, None] * 10.0 ** -k[None, :]                              # (D, K)
    coord = edge[:, None] - sgn[:, None] * d
    distinct = coord != edge[:, None]
    pts = np.repeat(x[:, None], coord.size, axis=1)
    rows = np.repeat(dirs, k.size)
    pts[rows, np.arange(coord.size)] = coord.reshape(-1)
    f, V = report_numpy(problem, pts, pvec)
    r = (sign * f).reshape(coord.shape)
    ok = (V == 0).all(axis=0).reshape(coord.shape)
    for j in range(dirs.size):
        valid = np.flatnonzero(distinct[j])
        if valid.size < _DECADES + 1 or not ok[j, valid].all():
            continue
        tail = r[j, valid[-(_DECADES + 1):]]
        if not np.all(np.isfinite(tail)):
            continue
        steps = -np.diff(tail)  # improvement per decade toward the edge
        if np.all(steps >= 1e-3 * np.maximum(1.0, np.abs(tail[1:]))) and \
                np.all(steps[1:] >= 0.5 * steps[:-1]):
            return True, int(coord.size)
    return False, int(coord.size)


def point_dict(problem, x: np.ndarray, genes=None) -> dict:
    """``{symbol: value}``; ``genes`` (the exact point of :func:`._verify.certify`) gives integer
    variables as exact Python ints, even beyond 2**53."""
    out = {}
    for b in problem.layout.blocks:
        vals = x[b.offset:b.offset + b.size]
        integer = problem.integer[b.offset]
        exact = None if genes is None else genes[b.offset:b.offset + b.size]
        if b.shape == ():
            if integer:
                out[b.symbol] = exact[0] if exact is not None else int(round(vals[0]))
            else:
                out[b.symbol] = float(vals[0])
        elif integer and exact is not None and max(map(abs, exact)) >= 2**62:
            out[b.symbol] = np.array(exact, dtype=object).reshape(b.shape)
        else:
            arr = np.round(vals).astype(np.int64) if integer else vals.copy()
            if integer and exact is not None:
                arr = np.array(exact, dtype=np.int64)
            out[b.symbol] = arr.reshape(b.shape)
    return out
