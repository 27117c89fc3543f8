"""From the search's best points to Results: budget, polish, float64 check, status.

Every mode (``solve``, ``solve_batch``, the islands, :class:`constropt.Search`) ends
here, so the budget rule (:class:`Budget`), the polish, the unboundedness guard and the
status rules are written once.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import sympy as sp

from .._errors import OptionError
from ..problem._evaluate import report_numpy
from ._defined import defined_fallback, result_key, undefined
from ._defined import replaces as _replaces
from ._interrupt import mandatory
from ._poles import pole_status
from ._rays import edge_suspect, ray_probe
from ._result import History, Result, Status
from ._verdict import (
    UNBOUNDED_LEVEL,
    check_point,
    diverges_many,
    infeasible_status,
    objective_verdict,
    point_dict,
)
from ._verdict import diverges as diverges_one

__all__ = ["Budget", "check_point", "diverges", "polish_from", "polish_stage", "finish",
           "verdict", "infeasible_status", "constant_note", "refine_batch", "point_dict",
           "UNBOUNDED_LEVEL", "undefined", "result_key", "defined_fallback"]

#: Polish evaluations kept from the search's budget per continuous gene (at least 300).
RESERVE_PER_GENE = 250

#: Fewest evaluations worth starting an SLSQP polish with.
MIN_POLISH = 10


@dataclass(frozen=True)
class Budget:
    """The evaluation budget ``max_evals`` of one instance, polish included.

    The search may spend ``search`` evaluations; the rest (``reserve``: a tenth of the
    budget, at most :data:`RESERVE_PER_GENE` per continuous gene and at least 300 of
    that, when polishing) is kept for the polish and the unboundedness probe, which take
    what is left after the search (:meth:`left`).  Only a search that runs to its share
    notices: G22 (22 genes) from such ends with 511 evaluations left failed to reach
    the feasible set at 3 of 25 seeds, and reaches the best known value with 2,000.
    """

    total: int | None
    reserve: int = 0

    @classmethod
    def plan(cls, max_evals, polish: bool, evals_per_step: int, genes: int = 0) -> Budget:
        # kept for the polish, and 1 for the float64 check of the final point
        cap = max(300, RESERVE_PER_GENE * genes)
        reserve = (min(max_evals // 10, cap) if polish and max_evals else 0) + \
            (1 if max_evals is not None else 0)
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


def diverges(problem, X: np.ndarray, M: np.ndarray):
    """:func:`._verdict.diverges` for every column of ``X`` (N, B) with parameters ``M``
    (n_params, B), vectorized over the instances (:func:`._verdict.diverges_many`).
    Returns ``(verdict (B,) bool, points evaluated (B,) int)``."""
    return diverges_many(problem, X, M)


def polish_from(problem, start, pvec, best, f_best, V_best, max_evals, nfev, deadline=None,
                again: bool = True):
    """SLSQP from ``start`` (strict margin 0, then 1e-9, then 1e-6 if it ends outside
    by more than a hair; as given, then in scaled form if it still ends outside, SLSQP
    returned its start (:func:`_gave_up`) or its feasible end is no KKT point
    (:func:`._polish.stationarity` above :data:`._polish.STATIONARY`: the scaled form
    then starts from that end), the other way round where the box's widths span more
    than :data:`._polish.SCALED_FIRST`; an infeasible ``start`` first projected onto its
    violated constraints by :func:`._newton.restore`, as is an SLSQP end outside, one a
    hair outside both :data:`._newton.INSIDE` and only as far inside as it is outside,
    the better kept); the result replaces ``best`` if feasible and better.  Each float64
    check of a candidate counts one evaluation.

    A better point that lands on a side of the box where a partial derivative is not
    finite (``x2**0.6`` at ``x2 = 0``) is polished once more from there, that gene held
    (:func:`._polish.singular_sides`): SLSQP reaches such a side mid-run and stops on a
    singular matrix (G21 from GA starts: 6e-4 above the optimum, which the second
    polish reaches).

    Returns ``(x, f, V, nfev, stop)``; ``stop`` when the budget or the time (``deadline``,
    a ``time.perf_counter()`` value) is spent.  Ctrl-C raises :class:`PolishInterrupted`
    whose ``state`` is ``(x, f, V, nfev)`` with the polish's last point taken if better.
    """
    from ..local._newton import INSIDE, budget_left, restore
    from ..local._polish import (
        STATIONARITY_EVALS,
        STATIONARY,
        PolishInterrupted,
        hair_outside,
        polish,
        real_gain,
        singular_sides,
        stationarity,
        wide_spread,
    )

    best0 = best

    # an infeasible start is first projected onto the violated constraints (Newton)
    start, used = restore(problem, start, pvec, budget_left(max_evals, nfev))
    nfev += used
    # Two forms of SLSQP: on the problem as given, and in scaled form (genes in box
    # units, rows by gradient norm).  The second runs where the first ends infeasible at
    # every margin, or where the form as given returned its start (:func:`_gave_up`):
    # RC29's objective of 3e6 with partials up to 1e7 stopped it after one evaluation at
    # GA points f* + 386 and f* + 2.8e4, from which the scaled form reaches f* + 4e-5.
    # Where the box's widths span more than SCALED_FIRST (G22: genes of 1 and 4e7), the
    # scaled form goes first: unscaled SLSQP spent G22's whole polish budget (~300
    # evaluations) in 200 iterations without reaching the feasible set.  Elsewhere the
    # form as given goes first (the scaled form first moved RC03's polish to another
    # point, from which its face moves no longer reach the optimum), and may spend half
    # of what is left of the budget, so that the scaled form keeps its share.
    scaled_first = wide_spread(problem)
    order = (True, False) if scaled_first else (False, True)
    reserve = None if max_evals is None else (max_evals - nfev) // 2
    info: dict = {}
    for scaled in order:
        for margin in (0.0, 1e-9, 1e-6):
            budget = None if max_evals is None else max_evals - nfev - 1  # 1: the check
            if budget is not None and not scaled_first and not scaled:
                budget -= reserve
                if budget < MIN_POLISH:  # leave it to the scaled form
                    continue
            if budget is not None and budget < MIN_POLISH:
                return best, f_best, V_best, nfev, True
            if deadline is not None and time.perf_counter() >= deadline:
                return best, f_best, V_best, nfev, True
            info = {}
            try:
                cand, used = polish(problem, start, pvec, max_evals=budget, margin=margin,
                                    deadline=deadline, info=info, scaled=scaled)
            except PolishInterrupted as exc:
                nfev += exc.nfev + 1
                f_c, V_c = check_point(problem, exc.x, pvec)
                if _replaces(problem, f_c, V_c, f_best, V_best):
                    best, f_best, V_best = exc.x, f_c, V_c
                exc.state = (best, f_best, V_best, nfev)
                raise
            nfev += used + 1
            f_c, V_c = check_point(problem, cand, pvec)
            ended_inside = bool(np.all(V_c == 0))
            hair = hair_outside(V_c, cand)
            if not ended_inside:  # SLSQP ended off the feasible set: project back (Newton)
                # an end a hair outside is also aimed only as far inside as it is
                # outside, kept where that is feasible and a real gain: RC29's end 4e-14
                # outside, aimed INSIDE (1e-10) within, moved x2 by 5e-11 where the
                # objective's partial is ~5e6 and lost 2.4e-4 (f* 3e6); a gain at
                # rounding level is not taken (it changed RC14's path to a worse end)
                end, hair_v = cand, float(np.max(V_c))
                for inside in (INSIDE, hair_v) if hair else (INSIDE,):
                    x_r, used = restore(problem, end, pvec, budget_left(max_evals, nfev),
                                        inside=inside)
                    if used <= 1:
                        continue
                    nfev += used + 1
                    f_r, V_r = check_point(problem, x_r, pvec)
                    if cand is end or (np.all(V_r == 0) and not np.all(V_c == 0)) or \
                            (np.all(V_r == 0) and real_gain(problem, f_r, f_c)):
                        cand, f_c, V_c = x_r, f_r, V_r
            if _replaces(problem, f_c, V_c, f_best, V_best):
                best, f_best, V_best = cand, f_c, V_c
            if info.get("timed_out"):
                return best, f_best, V_best, nfev, True
            # SLSQP's own feasible end settles a form, and so does an end a hair outside
            # (hair_outside) projected back in; an end farther out, even projected back to a
            # better point, may be this form failing (RC29 from a GA point: unscaled,
            # SLSQP ended 0.07 and 0.02 outside at margins 0 and 1e-9, projected to
            # f* + 1.4e4 and f* + 54; scaled, it reaches f* + 4e-5).  RC03's face moves
            # reach its optimum only from the projected hair-outside end.
            if ended_inside or (hair and np.all(V_c == 0)):
                break
        else:
            continue  # outside at every margin: the other form
        if scaled_first or scaled:
            break
        if _gave_up(info):
            continue
        # a feasible end short of a KKT point: the scaled form from there (HS062 from a
        # GA point: SLSQP as given reported success 0.0078 above the optimum, KKT
        # residual 4.8e-4; the scaled form from its end reaches the optimum)
        if not np.all(V_c == 0) or (max_evals is not None and
                                    max_evals - nfev < STATIONARITY_EVALS + MIN_POLISH):
            break
        kkt, used = stationarity(problem, cand, pvec)
        nfev += used
        if not kkt > STATIONARY:
            break
        start = cand
    if again and best is not best0 and not info.get("timed_out") and \
            (max_evals is None or nfev < max_evals):  # its one evaluation within the budget
        held, used = singular_sides(problem, best, pvec)
        nfev += used
        if held.any():
            return polish_from(problem, best, pvec, best, f_best, V_best, max_evals, nfev,
                               deadline, again=False)
    return best, f_best, V_best, nfev, bool(info.get("timed_out"))


def _gave_up(info: dict) -> bool:
    """Whether SLSQP ended where it started, as the form as given can on a badly scaled
    objective (RC29 from a GA point f* + 386: five iterations, status 0, the start
    returned).  A failed line search that moved is not a reason for the other form:
    running it there moved RC03's polish to a point from which its face moves no longer
    reach the optimum."""
    return info.get("status") is not None and not info.get("moved", True)


def polish_stage(problem, pop, best, f_best, V_best, pvec, max_evals, nfev,
                 starts: int = 3, deadline=None, first=None):
    """SLSQP from the best point and from other distinct good points of the last
    population ``pop`` (N, S); keep the best feasible result.  ``first``: a point to
    polish from before them (:func:`defined_fallback`'s defined point, where the best
    point's objective is undefined).  Then the neighbourhood
    searches of :mod:`._intsearch` from the result: integer moves, bound flips; then
    the piece moves of :mod:`._pieces`; last, the revival of dead genes
    (:mod:`._deadgenes`).

    Returns ``(x, f, V, nfev, stopped)``: ``stopped`` is None, ``Status.TIME_LIMIT``
    when the deadline cut the polish short, or ``Status.INTERRUPTED`` after Ctrl-C (the
    best point so far is kept; a second Ctrl-C propagates).
    """
    from ._deadgenes import revive
    from ._intsearch import bound_flips, integer_search
    from ._pieces import piece_moves

    try:
        for start in _starts(problem, best, pop, starts, first):
            best, f_best, V_best, nfev, stop = polish_from(problem, start, pvec, best, f_best,
                                                           V_best, max_evals, nfev, deadline)
            if stop:
                timed_out = deadline is not None and time.perf_counter() >= deadline
                return best, f_best, V_best, nfev, Status.TIME_LIMIT if timed_out else None
        # the polish holds integers fixed, cannot leave a side of the box nor cross the
        # jump of a piecewise cost: move them; nor can it move a gene the problem no
        # longer sees (exp(x) at x = -70): revive it
        for search in (integer_search, bound_flips, piece_moves, revive):
            best, f_best, V_best, nfev, stop = search(
                problem, best, f_best, V_best, pvec, max_evals, nfev, deadline)
            if stop:
                timed_out = deadline is not None and time.perf_counter() >= deadline
                return best, f_best, V_best, nfev, Status.TIME_LIMIT if timed_out else None
    except KeyboardInterrupt as exc:
        state = getattr(exc, "state", None)
        if state is not None:
            best, f_best, V_best, nfev = state
        return best, f_best, V_best, nfev, Status.INTERRUPTED
    return best, f_best, V_best, nfev, None


#: Distance (largest coordinate, as a share of the box) between polish starts: a start
#: nearer an earlier one than this lies in its basin and would polish to the same point.
CLUSTER = 0.02


def _starts(problem, best, pop, starts: int, first=None):
    """The best point and the best point of other clusters of the last population (it is
    ordered best first under feasibility rules): each start at least ``CLUSTER`` of the
    box from every start taken.  ``first`` (if given) goes before them all, as an extra
    start."""
    if first is not None:
        return [first, *_starts(problem, best, pop, starts)]
    cands = [best]
    scale = np.maximum(problem.upper - problem.lower, 1e-12)
    for j in range(pop.shape[1]):
        if len(cands) >= starts:
            break
        p = pop[:, j]
        if all(np.max(np.abs(p - c) / scale) > CLUSTER for c in cands):
            cands.append(p)
    return cands


#: Newton iterations of the batched polish.  On an indefinite objective (the blog's
#: example 2, maximized) the shifted Hessian makes the first steps short: from the
#: points of a batch's search (ftol 1e-6, float32) 12 iterations settled 39 of 200
#: instances and sent the rest to SLSQP one by one; 30 settle all 200.  Instances that
#: converge stop early.
NEWTON_ITERS = 30


def refine_batch(problem, insts, M: np.ndarray, budget: Budget):
    """The batched polish (:mod:`._newton`) of every instance's best point, margins 0,
    1e-9 and 1e-6 in turn for the instances still unsettled.  Returns one ``(x, used,
    settled)`` per instance: ``x`` the better of the start and a feasible candidate,
    ``settled`` when Newton converged to a feasible point (no SLSQP needed)."""
    from ..local._newton import polish_batch

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
    best, f_b, V_b = X.copy(), f.copy(), V.copy()
    used = np.ones(B, dtype=np.int64)  # the float64 check of the start is an evaluation
    settled = np.zeros(B, dtype=bool)
    for margin in (0.0, 1e-9, 1e-6):
        idx = np.flatnonzero(~settled)
        if idx.size == 0:
            break
        # 2 kept: the check of the candidate here and finish's check of the final point
        left = None if budget.total is None else budget.total - nfev[idx] - used[idx] - 2
        xr, u, conv = polish_batch(problem, X[:, idx], M[:, idx], left, margin=margin,
                                   iters=NEWTON_ITERS)
        used[idx] += u + 1
        fr, Vr = report_numpy(problem, xr, M[:, idx])
        feas = (Vr == 0).all(axis=0)
        cv_r, fm_r = keys(fr, Vr)
        # never a candidate outside the objective's domain in place of one inside it
        win = feas & ((fm_r < np.inf) | (fm_b[idx] == np.inf)) & \
            ((cv_r < cv_b[idx]) | ((cv_r == cv_b[idx]) & (fm_r < fm_b[idx])))
        w = idx[win]
        best[:, w], cv_b[w], fm_b[w] = xr[:, win], cv_r[win], fm_r[win]
        f_b[w], V_b[:, w] = fr[win], Vr[:, win]
        settled[idx] = feas & conv
    return [(best[:, b].copy(), int(used[b]), bool(settled[b]), float(f_b[b]),
             V_b[:, b].copy()) for b in range(B)]


def finish(problem, inst, pvec, budget: Budget, *, polish: bool, starts: int = 3,
           unbounded=None, refined=None, deadline=None):
    """Float64 check, polish (within the budget and the ``deadline``), exact check and
    status of one instance.

    ``inst`` is the driver's :class:`~constropt.engine._driver.Instance`; ``unbounded``
    ``(verdict, evaluations)`` of :func:`diverges` computed beforehand within the budget
    (batches probe many instances at once), or None to probe here when the budget
    allows; ``refined`` the instance's entry of :func:`refine_batch` (then SLSQP runs
    only where it did not settle; its float64 check of ``x`` is reused).  Every
    ``feasible`` comes from the exact check
    (:func:`._verify.certify_point`).  Returns ``(x, f, V, nfev, status, message, checked)``.
    """

    best = inst.x
    nfev = inst.nfev
    if refined is not None:
        best, used, settled, f_best, V_best = refined
        nfev += used
    reason = inst.reason
    if refined is None:  # a first Ctrl-C in a final check: INTERRUPTED, checked once more
        (f_best, V_best), reason = mandatory(reason, lambda r: check_point(problem, best, pvec))
    nfev += 1  # the float64 check is an evaluation too (refine_batch kept room for it)
    best, f_best, V_best, nfev, first = defined_fallback(problem, inst, best, f_best, V_best,
                                                         pvec, nfev, budget.total)
    if refined is not None and refined[2] and first is None:
        polish = False  # Newton settled it: no SLSQP (but from a defined point, where it
        # settled outside the objective's domain)
    if polish and problem.n <= 2000 and reason not in (Status.UNBOUNDED, Status.INTERRUPTED):
        best, f_best, V_best, nfev, stopped = polish_stage(
            problem, inst.population, best, f_best, V_best, pvec, budget.total, nfev,
            starts=starts, deadline=deadline, first=first)
        if stopped is not None:
            reason = stopped
    (best, f_best, V_best, nfev, status, message, checked), _ = mandatory(
        reason, lambda r: verdict(problem, best, f_best, V_best, pvec, r, nfev, budget.total,
                                  unbounded=unbounded))
    return best, f_best, V_best, nfev, status, message + constant_note(problem, checked), \
        checked


def verdict(problem, best, f_best, V_best, pvec, reason, nfev: int, limit, *,
            unbounded=None, box=None):
    """The exact check and the status of a final point, for every mode.  ``reason``: why
    the search (or polish) ended; ``limit``: the run's evaluation budget (None: none), of
    which ``nfev`` are spent; ``unbounded``: ``(verdict, evaluations)`` computed before, or
    None to probe here (edges, rays beyond ``box``, default ``problem``, then poles:
    :mod:`._poles`) as the budget allows.  Every ``feasible`` comes from
    :func:`._verify.certify_point`.  Returns ``(x, f, V, nfev, status, message, checked)``."""
    from ._verify import certify_point

    checked = certify_point(problem, best, pvec, f_best, V_best,  # exact arithmetic (Arb balls)
                      budget=None if limit is None else limit - nfev)
    best, f_best, V_best = checked.x, checked.fun, checked.violations
    nfev += checked.evaluations
    if reason is Status.INTERRUPTED:
        status, message = reason, reason.value + checked.note
    elif not checked.feasible:
        status, message = infeasible_status(reason, checked.note)
    elif objective_verdict(problem, f_best) is not None:
        status, message = objective_verdict(problem, f_best)
    else:
        status, message = reason, reason.value
        fmin = -f_best if problem.maximize else f_best
        flag = fmin <= -UNBOUNDED_LEVEL
        owed = False  # a probe the budget did not allow
        where = problem if box is None else box
        if not flag and reason is not Status.TARGET:
            if unbounded is not None:
                flag, nfev = unbounded[0], nfev + unbounded[1]
            elif problem.n <= 2000 and (limit is None or nfev + probe_cost(problem) <= limit):
                flag, used = diverges_one(where, best, np.reshape(pvec, -1))
                nfev += used
            else:
                owed = True
        if flag and reason is not Status.TARGET:
            status = Status.UNBOUNDED
            message = (f"{Status.UNBOUNDED.value} (best objective {f_best:.3g}; the "
                       "objective diverges inside the box or as x approaches its edge)")
        elif reason is not Status.TARGET and problem.n <= 2000:
            ray = ray_probe(problem, where, best, f_best, pvec,
                            None if limit is None else limit - nfev)
            nfev += ray.used
            if ray.status is Status.UNBOUNDED:
                status = Status.UNBOUNDED
                message = (f"{Status.UNBOUNDED.value}: along a feasible ray from the "
                           f"returned point ({ray.where} beyond the search box) the "
                           f"objective reaches {ray.fun:.6g} (best objective in the box "
                           f"{f_best:.6g})")
            elif ray.status is Status.NOT_CONFIRMED:
                status = Status.NOT_CONFIRMED
                message = (f"{Status.NOT_CONFIRMED.value}: a feasible point beyond the "
                           f"search box ({ray.where}) has objective {ray.fun:.6g}, better "
                           f"than the result's {f_best:.6g} (pass bounds= to search there, "
                           "or raise max_evals)")
            elif ray.short:  # a ray beyond a default side left unprobed
                status = Status.NOT_CONFIRMED
                message = (f"{Status.NOT_CONFIRMED.value}: the evaluation budget ran out "
                           "before the probe beyond the default sides of the search box "
                           f"(raise max_evals, or give bounds; search ended: {reason.value})")
            elif owed:
                suspect, used = edge_suspect(problem, where, best, pvec,
                                             None if limit is None else limit - nfev)
                nfev += used
                if suspect:
                    status = Status.NOT_CONFIRMED
                    message = (f"{Status.NOT_CONFIRMED.value}: the evaluation budget ran "
                               "out before the unboundedness probe of the returned point, "
                               "which lies at an open or strict side of the box (raise "
                               f"max_evals; search ended: {reason.value})")
            status, message, nfev = pole_status(problem, where, best, f_best, pvec, reason,
                                                nfev, limit, status, message)
    return best, f_best, V_best, nfev, status, message, checked


_CONSTANT: dict = {}  # id(problem) -> (problem, objective is constant): a batch asks B times


def constant_note(problem, checked) -> str:
    """What a message adds when the objective does not depend on the variables."""
    hit = _CONSTANT.get(id(problem))
    if hit is None or hit[0] is not problem:
        const = not (problem.objective.free_symbols & set(problem.variables)) and \
            not problem.objective.atoms(sp.Indexed, sp.MatrixSymbol)
        _CONSTANT.clear()  # one problem at a time: no growth, no stale ids
        hit = _CONSTANT[id(problem)] = (problem, const)
    if checked.feasible and hit[1]:
        return "; the objective is constant: any feasible point is optimal"
    return ""


def probe_cost(problem) -> int:
    """Evaluations :func:`diverges` spends per instance at most (bisection and
    approaches along each free coordinate both ways: 45; the edge approaches: 11)."""
    return 2 * int((~problem.integer).sum()) * (45 + 11) + 1


def make_result(problem, inst, x, f, V, nfev, status, message, checked, *, seed, device,
                timings, backend="torch"):
    """The :class:`Result` of one finished instance (``checked``: its exact check)."""
    sign = -1.0 if problem.maximize else 1.0
    feasible = checked.feasible
    return Result(
        x=point_dict(problem, x, checked.genes), x_array=x, variables=problem.variables, fun=f,
        feasible=feasible, maxcv=float(V.max()) if V.size else 0.0, violations=V,
        success=feasible and not status.failed, status=status, message=message,
        nit=inst.nit, nfev=nfev, seed=seed, device=str(device), timings=timings,
        backend=backend, history=History(inst.hist_nfev, sign * inst.hist_f, inst.hist_cv),
        problem=problem, verification=checked.verification)
