"""From the search's best points to Results: budget, polish, float64 check, status.

Every mode (``solve``, ``solve_batch``, the islands, :class:`constropt.Search`) ends
here, so the budget rule (:class:`Budget`), the polish, the unboundedness guard and the
status rules are written once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import sympy as sp

from .._errors import OptionError
from ..problem._evaluate import report_numpy
from ._result import History, Result, Status

__all__ = ["Budget", "check_point", "diverges", "polish_from", "finish", "refine_batch",
           "point_dict", "UNBOUNDED_LEVEL"]

#: A feasible objective beyond this magnitude (in the direction of optimization) is
#: reported as unbounded (status ``UNBOUNDED``, ``success=False``); so is one that keeps
#: improving by orders of magnitude as the best point approaches a box edge.
UNBOUNDED_LEVEL = 1e30


@dataclass(frozen=True)
class Budget:
    """The evaluation budget ``max_evals`` of one instance, polish included.

    The search may spend ``search`` evaluations; the rest (``reserve``: a tenth of the
    budget, at most 300, when polishing) is kept for the polish and the unboundedness
    probe, which take what is left after the search (:meth:`left`).
    """

    total: int | None
    reserve: int = 0

    @classmethod
    def plan(cls, max_evals, polish: bool, evals_per_step: int) -> Budget:
        reserve = min(max_evals // 10, 300) if polish and max_evals else 0
        if max_evals is not None and max_evals - reserve < evals_per_step:
            raise OptionError(f"max_evals={max_evals} is below one population "
                              f"(pop_size={evals_per_step}); raise max_evals or lower "
                              "pop_size")
        return cls(max_evals, reserve)

    @property
    def search(self) -> int | None:
        return None if self.total is None else self.total - self.reserve

    def left(self, used: int) -> int | None:
        return None if self.total is None else self.total - used


def point_dict(problem, x: np.ndarray) -> dict:
    """``{symbol: value}`` of a flat point (integers as int, vector variables as arrays)."""
    out = {}
    for b in problem.layout.blocks:
        vals = x[b.offset:b.offset + b.size]
        integer = problem.integer[b.offset]
        if b.shape == ():
            out[b.symbol] = int(round(vals[0])) if integer else float(vals[0])
        else:
            arr = np.round(vals).astype(np.int64) if integer else vals.copy()
            out[b.symbol] = arr.reshape(b.shape)
    return out


def check_point(problem, x: np.ndarray, pvec: np.ndarray):
    """Float64 objective (user's sense) and per-constraint violations at one point."""
    f, V = report_numpy(problem, x.reshape(-1, 1), pvec)
    return float(f[0]), V[:, 0]


def diverges(problem, X: np.ndarray, M: np.ndarray):
    """Does the objective diverge (in the optimization direction) as feasible points
    approach the end of the feasible segment from each ``X[:, b]`` along a coordinate?

    Per coordinate direction, bisection finds where the feasible segment ends (a box
    edge or a constraint boundary), then geometric approaches to that end are
    evaluated; every instance at once.  ``X`` (N, B), ``M`` (n_params, B).  Returns
    ``(verdict (B,), points evaluated per instance)``.
    """
    sign = -1.0 if problem.maximize else 1.0
    N, B = X.shape
    free = np.flatnonzero(~problem.integer)
    if free.size == 0:
        return np.zeros(B, dtype=bool), 0
    D = 2 * free.size
    dirs = np.concatenate([free, free])
    sgn = np.concatenate([-np.ones(free.size), np.ones(free.size)])[:, None]
    tmax = np.concatenate([X[free] - problem.lower[free, None],
                           problem.upper[free, None] - X[free]])      # (D, B)
    MD = np.repeat(M, D, axis=1)
    ar = np.arange(D)
    used = 0

    def at(t):  # t (D, B) -> feasible (D, B), objective in min sense (D, B)
        nonlocal used
        pts = np.repeat(X[:, :, None], D, axis=2)                     # (N, B, D)
        pts[dirs, :, ar] += sgn * t
        f, V = report_numpy(problem, pts.reshape(N, B * D), MD)
        used += D
        return (V == 0).all(axis=0).reshape(B, D).T, (sign * f).reshape(B, D).T

    lo, hi = np.zeros_like(tmax), tmax.copy()
    ok_hi, _ = at(hi)
    for _ in range(32):  # bisection for the end of each feasible segment (to 2^-32)
        mid = 0.5 * (lo + hi)
        ok, _ = at(mid)
        lo, hi = np.where(ok, mid, lo), np.where(ok, hi, mid)
    end = np.where(ok_hi, tmax, lo)
    f0 = sign * report_numpy(problem, X, M)[0]
    rows, feas = [], []
    for frac in 1.0 - 10.0 ** -np.arange(1, 13, 1.0):
        ok, fm = at(end * frac)
        rows.append(fm)
        feas.append(ok)
    r, feas = np.array(rows), np.array(feas)                          # (12, D, B)
    with np.errstate(invalid="ignore"):
        steady = np.all(np.diff(r, axis=0) < 0, axis=0)
        big = (r[-1] == -np.inf) | (np.abs(r[-1] - r[0]) > 1e6 * np.maximum(1.0, np.abs(r[0])))
    verdict = (end > 0) & feas.all(axis=0) & steady & (r[-1] < f0) & big
    return verdict.any(axis=0), used


def _key(problem, f: float, V: np.ndarray):
    cv = float(np.sum(V)) if V.size else 0.0
    fmin = -f if problem.maximize else f
    return (cv, math.inf if math.isnan(fmin) else fmin)


def polish_from(problem, start, pvec, best, f_best, V_best, max_evals, nfev):
    """SLSQP from ``start`` (strict margin 0, then 1e-9, then 1e-6 if it ends a hair
    outside); the result replaces ``best`` if feasible and better.

    Returns ``(x, f, V, nfev, stop)``; ``stop`` when the budget is spent.
    """
    from ._polish import polish

    for margin in (0.0, 1e-9, 1e-6):
        budget = None if max_evals is None else max_evals - nfev
        if budget is not None and budget < 10:
            return best, f_best, V_best, nfev, True
        cand, used = polish(problem, start, pvec, max_evals=budget, margin=margin)
        nfev += used
        f_c, V_c = check_point(problem, cand, pvec)
        if np.all(V_c == 0):
            if _key(problem, f_c, V_c) < _key(problem, f_best, V_best):
                best, f_best, V_best = cand, f_c, V_c
            break
    return best, f_best, V_best, nfev, False


def _starts(problem, best, pop, starts: int):
    """The best point and other distinct good points of the last population."""
    cands = [best]
    scale = np.maximum(problem.upper - problem.lower, 1e-12)
    for j in range(pop.shape[1]):
        if len(cands) >= starts:
            break
        p = pop[:, j]
        if all(np.max(np.abs(p - c) / scale) > 1e-3 for c in cands):
            cands.append(p)
    return cands


def refine_batch(problem, insts, M: np.ndarray, budget: Budget):
    """The batched polish (:mod:`._newton`) of every instance's best point, margins 0,
    1e-9 and 1e-6 in turn for the instances still unsettled.  Returns one ``(x, used,
    settled)`` per instance: ``x`` the better of the start and a feasible candidate,
    ``settled`` when Newton converged to a feasible point (no SLSQP needed)."""
    from ._newton import polish_batch

    X = np.stack([inst.x for inst in insts], axis=1)
    B = X.shape[1]
    nfev = np.array([inst.nfev for inst in insts], dtype=np.int64)
    f, V = report_numpy(problem, X, M)
    sgn = -1.0 if problem.maximize else 1.0

    def keys(f_, V_):
        fm = sgn * f_
        return V_.sum(axis=0) if V_.size else np.zeros(f_.shape), np.where(np.isnan(fm),
                                                                           np.inf, fm)

    cv_b, fm_b = keys(f, V)
    best = X.copy()
    used = np.zeros(B, dtype=np.int64)
    settled = np.zeros(B, dtype=bool)
    for margin in (0.0, 1e-9, 1e-6):
        idx = np.flatnonzero(~settled)
        if idx.size == 0:
            break
        left = None if budget.total is None else budget.total - nfev[idx] - used[idx]
        xr, u, conv = polish_batch(problem, X[:, idx], M[:, idx], left, margin=margin)
        used[idx] += u
        fr, Vr = report_numpy(problem, xr, M[:, idx])
        feas = (Vr == 0).all(axis=0)
        cv_r, fm_r = keys(fr, Vr)
        win = feas & ((cv_r < cv_b[idx]) | ((cv_r == cv_b[idx]) & (fm_r < fm_b[idx])))
        w = idx[win]
        best[:, w], cv_b[w], fm_b[w] = xr[:, win], cv_r[win], fm_r[win]
        settled[idx] = feas & conv
    return [(best[:, b].copy(), int(used[b]), bool(settled[b])) for b in range(B)]


def finish(problem, inst, pvec, budget: Budget, *, polish: bool, starts: int = 3,
           unbounded=None, refined=None):
    """Float64 check, polish (within the budget) and status of one instance.

    ``inst`` is the driver's :class:`~constropt.engine._driver.Instance`; ``unbounded``
    ``(verdict, evaluations)`` of :func:`diverges` computed beforehand within the budget
    (batches probe many instances at once), or None to probe here when the budget
    allows; ``refined`` the instance's
    entry of :func:`refine_batch` (then SLSQP runs only where it did not settle).
    Returns ``(x, f, V, nfev, status, message)``.
    """
    best = inst.x
    nfev = inst.nfev
    if refined is not None:
        best, used, settled = refined
        nfev += used
        polish = polish and not settled
    f_best, V_best = check_point(problem, best, pvec)
    reason = inst.reason
    if polish and problem.n <= 2000 and reason not in (Status.UNBOUNDED, Status.INTERRUPTED):
        for start in _starts(problem, best, inst.population, starts):
            best, f_best, V_best, nfev, stop = polish_from(
                problem, start, pvec, best, f_best, V_best, budget.total, nfev)
            if stop:
                break
    feasible = bool(np.all(V_best == 0))
    if reason is Status.INTERRUPTED:
        status, message = reason, reason.value
    elif not feasible:
        status = Status.INFEASIBLE
        message = f"{Status.INFEASIBLE.value} (search ended: {reason.value})"
    else:
        status, message = reason, reason.value
        fmin = -f_best if problem.maximize else f_best
        flag = fmin <= -UNBOUNDED_LEVEL
        if not flag and reason is not Status.TARGET:
            if unbounded is not None:
                flag, nfev = unbounded[0], nfev + unbounded[1]
            elif problem.n <= 2000 and (budget.total is None or
                                        nfev + probe_cost(problem) <= budget.total):
                verdict, used = diverges(problem, best[:, None], np.reshape(pvec, (-1, 1)))
                flag, nfev = bool(verdict[0]), nfev + used
        if flag and reason is not Status.TARGET:
            status = Status.UNBOUNDED
            message = (f"{Status.UNBOUNDED.value} (best objective {f_best:.3g}; the "
                       "objective diverges inside the box)")
    if feasible and not (problem.objective.free_symbols & set(problem.variables)) and \
            not problem.objective.atoms(sp.Indexed, sp.MatrixSymbol):
        message += "; the objective is constant: any feasible point is optimal"
    return best, f_best, V_best, nfev, status, message


def probe_cost(problem) -> int:
    """Evaluations :func:`diverges` spends per instance."""
    return 2 * int((~problem.integer).sum()) * 45


def make_result(problem, inst, x, f, V, nfev, status, message, *, seed, device, timings):
    """The :class:`Result` of one finished instance."""
    sign = -1.0 if problem.maximize else 1.0
    feasible = bool(np.all(V == 0))
    return Result(
        x=point_dict(problem, x), x_array=x, variables=problem.variables, fun=f,
        feasible=feasible, maxcv=float(V.max()) if V.size else 0.0, violations=V,
        success=feasible and not status.failed, status=status, message=message,
        nit=inst.nit, nfev=nfev, seed=seed, device=str(device), timings=timings,
        history=History(inst.hist_nfev, sign * inst.hist_f, inst.hist_cv), problem=problem)
