"""The verdict on a final point: is its objective a finite number, does it diverge?

Shared by :func:`constropt.solve` and :func:`constropt.solve_batch`, so every mode reports
an undefined or unbounded objective the same way.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..problem._evaluate import report_numpy
from ._result import Status

__all__ = ["UNBOUNDED_LEVEL", "check_point", "objective_verdict", "diverges",
           "diverges_many", "point_dict", "infeasible_status", "ProbeVerdict"]

#: A feasible objective beyond this magnitude (in the direction of optimization) is
#: reported as unbounded (status ``UNBOUNDED``, ``success=False``); so is one that keeps
#: improving by orders of magnitude as the best point approaches a box edge.
UNBOUNDED_LEVEL = 1e30


@dataclass(frozen=True)
class ProbeVerdict:
    """What a probe of the returned point found: the ray probe beyond the soft sides of
    the box (:func:`._rays.ray_probe`) or the pole probe beside the point
    (:func:`._poles.pole_probe`).

    ``status`` is ``UNBOUNDED`` (a proof: a feasible point beyond
    :data:`UNBOUNDED_LEVEL`, or an objective falling by a steady step per decade along
    the probe), ``NOT_CONFIRMED`` (a feasible point better than the result, without such
    a proof), or None (nothing better found); ``point`` the sample that says so,
    ``fun`` its objective (user's sense), ``where`` the ray or approach in words,
    ``used`` the evaluations spent and ``short`` whether the budget cut the probe short.
    """

    status: Status | None
    point: np.ndarray | None
    fun: float
    where: str
    used: int
    short: bool


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
    evaluated.  Returns ``(verdict, points evaluated)``.  :func:`diverges_many` is the
    same probe for many points at once.
    """
    v, used = diverges_many(problem, np.reshape(x, (-1, 1)), np.reshape(pvec, (-1, 1)))
    return bool(v[0]), int(used[0])


#: Points one call of the generated ``report`` evaluates at most in :func:`diverges_many`
#: (the probes of many instances are split into groups of instances below this).
_PROBE_POINTS = 1 << 18


def diverges_many(problem, X: np.ndarray, M: np.ndarray):
    """:func:`diverges` for every column of ``X`` (N, B), with parameters ``M``
    (n_params, B): every instance's probe points in one evaluation per probe step
    (groups of instances, at most ``_PROBE_POINTS`` points an evaluation).

    Returns ``(verdict (B,) bool, points evaluated (B,) int64)``, per instance what
    :func:`diverges` returns for that column.
    """
    B = X.shape[1]
    free = np.flatnonzero(~problem.integer)
    verdict, used = np.zeros(B, dtype=bool), np.zeros(B, dtype=np.int64)
    if free.size == 0 or B == 0:
        return verdict, used
    per = 2 * free.size * (_DECADES + 1)
    group = max(1, _PROBE_POINTS // per)
    for a in range(0, B, group):
        verdict[a:a + group], used[a:a + group] = _diverges_group(
            problem, X[:, a:a + group], M[:, a:a + group], free)
    return verdict, used


def _report_at(problem, X, M, dirs, sgn, t):
    """Objective (minimization sense) and feasibility at ``X[:, b]`` moved by
    ``sgn[j] * t[j, b]`` along coordinate ``dirs[j]``: arrays (D, B)."""
    D, B = t.shape
    pts = np.repeat(X, D, axis=1)                       # column b * D + j
    pts[np.tile(dirs, B), np.arange(B * D)] += (sgn[:, None] * t).T.reshape(-1)
    f, V = report_numpy(problem, pts, np.repeat(M, D, axis=1))
    sign = -1.0 if problem.maximize else 1.0
    return (V == 0).all(axis=0).reshape(B, D).T, (sign * f).reshape(B, D).T


def _diverges_group(problem, X, M, free):
    sign = -1.0 if problem.maximize else 1.0
    B = X.shape[1]
    dirs = np.concatenate([free, free])
    D = dirs.size
    lower, upper = problem.lower[free, None], problem.upper[free, None]
    tmax = np.concatenate([X[free] - lower, upper - X[free]])          # (D, B)
    sgn = np.concatenate([-np.ones(free.size), np.ones(free.size)])
    ok_hi, _ = _report_at(problem, X, M, dirs, sgn, tmax)
    lo, hi = np.zeros_like(tmax), tmax.copy()
    for _ in range(32):  # bisection for the end of each feasible segment (to 2^-32)
        mid = 0.5 * (lo + hi)
        ok, _ = _report_at(problem, X, M, dirs, sgn, mid)
        lo, hi = np.where(ok, mid, lo), np.where(ok, hi, mid)
    end = np.where(ok_hi, tmax, lo)
    f0 = sign * report_numpy(problem, X, M)[0]                         # (B,)
    rows, feas = [], []
    for frac in 1.0 - 10.0 ** -np.arange(1, 13, 1.0):
        ok, fm = _report_at(problem, X, M, dirs, sgn, end * frac)
        rows.append(fm)
        feas.append(ok)
    rows, feas = np.array(rows), np.array(feas)                         # (12, D, B)
    with np.errstate(invalid="ignore"):
        steep = (rows[-1] == -np.inf) | (np.abs(rows[-1] - rows[0]) >
                                         1e6 * np.maximum(1.0, np.abs(rows[0])))
        falls = (end > 0) & feas.all(axis=0) & np.all(np.diff(rows, axis=0) < 0, axis=0) & \
            (rows[-1] < f0) & steep
    verdict = falls.any(axis=0)
    used = np.full(B, D * 45 + 1, dtype=np.int64)  # 1 + 32 + 12 probes, and f0
    width = np.concatenate([upper - lower] * 2)                        # (D, 1)
    at_edge = (tmax <= 1e-6 * width) & ~verdict  # on the edge (a strict one: a hair inside)
    if at_edge.any():
        v, more = _diverges_at_edge(problem, X, M, dirs, sgn, width[:, 0], at_edge)
        verdict |= v
        used += more
    return verdict, used


#: Decades of approach to an edge that must keep improving the objective by a steady step.
_DECADES = 10

#: Distances ``10**-k`` (in box widths) at which edge approaches are evaluated.
_EDGE_STEPS = np.arange(1, 331, dtype=np.float64)


def _diverges_at_edge(problem, X, M, dirs, sgn, width, at_edge):
    """A point sitting on a box edge where the objective falls by a steady amount per
    decade of approach (``log(x)`` at ``x -> 0+``: by ``ln 10`` each) diverges there, even
    though float64 stops it at a finite value (-744 at the smallest subnormal).

    For each instance ``b`` and each direction ``j`` with ``at_edge[j, b]``, the last
    ``_DECADES + 1`` of the points at distances ``width * 10**-k`` inside the edge
    (``k = 1 ... 330``, those distinct from the edge in float64: which they are is known
    without evaluating) must be feasible, and the objective must fall every decade by at
    least ``1e-3 * max(1, |f|)``, each step at least half the previous one (a bounded
    function converges: its steps shrink).
    Returns ``(verdict (B,), points evaluated (B,))``.
    """
    sign = -1.0 if problem.maximize else 1.0
    j, b = np.nonzero(at_edge)                                          # the (dir, b) pairs
    k = _EDGE_STEPS
    edge = np.where(sgn[j] < 0, problem.lower[dirs[j]], problem.upper[dirs[j]])  # (Q,)
    coord = edge[:, None] - sgn[j, None] * (width[j, None] * 10.0 ** -k[None, :])  # (Q, K)
    distinct = coord != edge[:, None]
    T = _DECADES + 1
    take = [np.flatnonzero(distinct[q])[-T:] for q in range(j.size)]
    probed = np.array([t.size == T for t in take], dtype=bool)
    B = X.shape[1]
    verdict = np.zeros(B, dtype=bool)
    if not probed.any():
        return verdict, np.zeros(B, dtype=np.int64)
    qs = np.flatnonzero(probed)
    tail_coord = np.stack([coord[q, take[q]] for q in qs])              # (P, T)
    pts = np.repeat(X[:, b[qs]], T, axis=1)                             # column p * T + i
    pts[np.repeat(dirs[j[qs]], T), np.arange(tail_coord.size)] = tail_coord.reshape(-1)
    f, V = report_numpy(problem, pts, np.repeat(M[:, b[qs]], T, axis=1))
    r = (sign * f).reshape(tail_coord.shape)
    ok = (V == 0).all(axis=0).reshape(tail_coord.shape)
    hit = np.zeros(qs.size, dtype=bool)
    for p in range(qs.size):
        tail = r[p]
        if not ok[p].all() or not np.all(np.isfinite(tail)):
            continue
        steps = -np.diff(tail)  # improvement per decade toward the edge
        hit[p] = np.all(steps >= 1e-3 * np.maximum(1.0, np.abs(tail[1:]))) and \
            np.all(steps[1:] >= 0.5 * steps[:-1])
    verdict[b[qs[hit]]] = True
    return verdict, np.bincount(b[qs], minlength=B).astype(np.int64) * T


#: Why a search ended, when the user's budget or callback (not the search running its
#: course) ended it before any feasible point was found.
_CUT_SHORT = {
    Status.TIME_LIMIT: "time_limit ended the run before a feasible point was found",
    Status.MAX_EVALS: "the evaluation budget max_evals ended the run before a feasible "
                      "point was found",
    Status.MAX_GENERATIONS: "max_generations ended the run before a feasible point was "
                            "found",
    Status.CALLBACK: "the callback stopped the run before a feasible point was found",
}


def infeasible_status(reason, note: str = ""):
    """``(status, message)`` of a final point that is not feasible.

    ``INFEASIBLE`` says the search ran its course (it converged) without finding a
    feasible point, or infeasibility was proven; a budget (``time_limit``,
    ``max_evals``, ``max_generations``) or the callback that ended the run first keeps
    its own status (``success`` is False either way): ``time_limit=1e-3`` on a feasible
    problem is not evidence of infeasibility."""
    if reason in _CUT_SHORT:
        return reason, (f"{reason.value}: {_CUT_SHORT[reason]}; the result is the "
                        f"least-violating point (not proven infeasible){note}")
    return Status.INFEASIBLE, f"{Status.INFEASIBLE.value}{note} (search ended: {reason.value})"


def point_dict(problem, x: np.ndarray, genes=None) -> dict:
    """``{symbol: value}``; ``genes`` (the exact point of
    :func:`._repair.certify_point`) gives integer variables as exact Python ints, even
    beyond 2**53."""
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
