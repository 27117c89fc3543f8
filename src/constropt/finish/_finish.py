"""From the search's best points to Results: the one finishing path of every mode.

Every mode (``solve`` and ``resume``, ``solve_batch``, the islands,
:class:`constropt.Search`) finishes each instance in two stages:

1. :func:`refine`: the float64 check of the search's best point, the search's best
   defined point in its place where the objective is undefined there, the polish
   (:func:`._polishing.polish_stage`) behind the one gate :func:`polish_gate`;
2. :func:`judge`: the exact check and the status rules (:func:`._status.verdict`).

:func:`finish` is the two for one instance, :func:`finish_batch` for the ``B`` instances
of a search (a batch first takes the batched Newton polish of every instance at once,
:func:`refine_batch`); ``solve`` runs stage 1 after each search of an expanding box and
stage 2 once, at the end.  The budget (:class:`._budget.Budget`) and the best point
(:class:`._budget.Incumbent`) travel through every step.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ..local._newton import polish_batch
from ..problem._evaluate import report_numpy
from ._budget import MAX_FINISH_GENES, Budget, Incumbent
from ._defined import defined_fallback
from ._interrupt import mandatory
from ._polishing import polish_stage
from ._result import History, Result, Status, Stopwatch
from ._status import constant_note, probe_cost, verdict
from ._tight import finishing_view, is_tight, project_tight, tight_note
from ._verdict import check_point, diverges_many, point_dict

__all__ = ["Finished", "polish_gate", "refine", "judge", "finish", "finish_batch",
           "refine_batch", "make_result", "NEWTON_ITERS"]


class Refined(tuple):
    """One instance of :func:`refine_batch`, the tuple ``(x, used, settled, f, V)``:
    ``x``, evaluations ``used``, ``settled``, the float64 check ``f``, ``V`` of ``x``;
    its attribute ``tight`` says that check held the equalities tightly (a tight
    problem's finishing view), so :func:`refine` need not check again."""

    tight = False


class Finished(NamedTuple):
    """One finished instance: the final point ``x``, its objective ``f`` and violations
    ``V``, the evaluations ``nfev`` spent in all, ``status`` and ``message``, and
    ``checked`` its exact check (:class:`._repair.Certified`)."""

    x: np.ndarray
    f: float
    V: np.ndarray
    nfev: int
    status: Status
    message: str
    checked: Any


def polish_gate(problem, polish: bool, reason) -> bool:
    """Whether an instance whose search ended for ``reason`` is polished: ``polish`` on,
    at most :data:`._budget.MAX_FINISH_GENES` genes, and the search neither unbounded
    nor interrupted."""
    return bool(polish) and problem.n <= MAX_FINISH_GENES and \
        reason not in (Status.UNBOUNDED, Status.INTERRUPTED)


def refine(problem, inst, pvec, budget: Budget, *, polish: bool, starts: int = 3,
           refined=None, watch: Stopwatch | None = None):
    """Stage 1 of one instance: the float64 check of the search's best point (one
    evaluation), its best defined point in its place where the objective is undefined
    there (:func:`._defined.defined_fallback`), then the polish.

    ``inst`` is the driver's :class:`~constropt.engine._driver.Instance` (``problem`` the
    box it searched), ``budget`` the instance's, counting from the search's
    evaluations; ``refined`` its entry of :func:`refine_batch` (then SLSQP runs only
    where Newton did not settle it; its float64 check of ``x`` is reused).  A first
    Ctrl-C in the check makes the run ``INTERRUPTED`` (the check runs once more).
    Returns ``(incumbent, reason)``: ``reason`` why the search ended, or why the polish
    did (``TIME_LIMIT``, ``INTERRUPTED``).
    """
    watch = watch or Stopwatch()
    x, reason = inst.x, inst.reason
    view = finishing_view(problem, x, pvec)  # tight equalities: their tight band
    if refined is not None:
        x, used, settled, f, V = refined
        budget.spend(used)
        if view is not problem and not getattr(refined, "tight", False):
            f, V = check_point(view, x, pvec)  # a band's check: the tight one instead
            budget.spend(1)
    else:
        with watch.part("check"):
            (f, V), reason = mandatory(reason, lambda r: check_point(view, x, pvec))
    budget.spend(1)  # the float64 check is an evaluation too (refine_batch kept room)
    problem = view
    with watch.part("polish"):
        inc, first = defined_fallback(problem, inst, Incumbent(x, f, V, pvec), budget)
        if refined is not None and refined[2] and first is None:
            polish = False  # Newton settled it: no SLSQP (but from a defined point, where
            # it settled outside the objective's domain)
        if polish_gate(problem, polish, reason):
            inc, stopped = polish_stage(problem, inst.population, inc, budget,
                                        starts=starts, first=first)
            if stopped is not None:
                reason = stopped
        if reason is not Status.INTERRUPTED and problem.n <= MAX_FINISH_GENES:
            inc = project_tight(problem, inc, budget)
    return inc, reason


def judge(problem, inc: Incumbent, reason, budget: Budget, *, unbounded=None, box=None,
          amend=None, watch: Stopwatch | None = None) -> Finished:
    """Stage 2 of one instance: the exact check and the status of its final point
    (:func:`._status.verdict`, under :func:`._interrupt.mandatory`: a first Ctrl-C runs it
    once more as ``INTERRUPTED``).  ``unbounded``: the unboundedness probe's
    ``(verdict, evaluations)`` when computed before; ``box``: the search box the probes
    look beyond (default ``problem``); ``amend(incumbent, status, message, checked) ->
    (status, message)``: what the caller adds to the status (``solve``: the box
    expansion's say).  The message ends with :func:`._status.constant_note`."""
    watch = watch or Stopwatch()
    view = finishing_view(problem, inc.x, inc.pvec)  # tight equalities: their tight band
    if view is not problem:
        box = None if box is None else finishing_view(box, inc.x, inc.pvec)
        inc = inc.at(inc.x, *check_point(view, inc.x, inc.pvec))  # in the view's band
        budget.spend(1)
        problem = view
    with watch.part("check"):
        (inc, status, message, checked), _ = mandatory(
            reason, lambda r: verdict(problem, inc, r, budget, unbounded=unbounded, box=box))
    if not checked.feasible:
        message += tight_note(problem, inc.x, inc.pvec)
    if amend is not None:
        status, message = amend(inc, status, message, checked)
    return Finished(inc.x, inc.f, inc.V, budget.used, status,
                    message + constant_note(problem, checked), checked)


def finish(problem, inst, pvec, budget: Budget, *, polish: bool, starts: int = 3,
           unbounded=None, refined=None, watch: Stopwatch | None = None) -> Finished:
    """Both stages of one instance: :func:`refine`, then :func:`judge`.  ``budget``: the
    instance's (its cap and deadline), counted on from the search's ``inst.nfev``
    evaluations."""
    budget = budget.after(inst.nfev)
    inc, reason = refine(problem, inst, pvec, budget, polish=polish, starts=starts,
                         refined=refined, watch=watch)
    return judge(problem, inc, reason, budget, unbounded=unbounded, watch=watch)


def finish_batch(problem, insts, M: np.ndarray, budget: Budget, *, polish: bool,
                 watch: Stopwatch | None = None) -> list:
    """:func:`finish` of every instance of a search, in turn (``M`` their parameters,
    ``budget`` each one's cap and deadline).  A batch (``B > 1``) first polishes every
    best point at once (:func:`refine_batch`) and probes the ones that settled for
    unboundedness in one vectorized call; SLSQP then starts from one point per instance
    (three for a single instance).  A Ctrl-C during the finishing steps stops the polish
    of the instances not yet finished: they, and the one it landed in, end
    ``INTERRUPTED`` with their best point so far, checked (:mod:`._interrupt`)."""
    watch = watch or Stopwatch()
    B = len(insts)
    refined, unbounded, stopped = [None] * B, [None] * B, False
    if B > 1 and any(polish_gate(problem, polish, inst.reason) for inst in insts):
        refined, unbounded, stopped = _batched(problem, insts, M, budget, watch)
    out = []
    for b, inst in enumerate(insts):
        if stopped and inst.reason is not Status.INTERRUPTED:
            inst = inst._replace(reason=Status.INTERRUPTED)
        fin = finish(problem, inst, M[:, b], budget, polish=polish,
                     starts=3 if B == 1 else 1, unbounded=unbounded[b], refined=refined[b],
                     watch=watch)
        stopped = stopped or fin.status is Status.INTERRUPTED
        out.append(fin)
    return out


def _batched(problem, insts, M, budget: Budget, watch: Stopwatch):
    """The batch's vectorized steps: the Newton polish of every polished instance, then
    the unboundedness probe of those it settled with budget room for it (the others are
    probed one by one after their SLSQP polish, in :func:`judge`).  Returns ``(refined,
    unbounded, stopped)`` per instance (None where not done), ``stopped`` after a
    Ctrl-C."""
    B = len(insts)
    refined, unbounded, stopped = [None] * B, [None] * B, False
    sub = [b for b in range(B) if polish_gate(problem, True, insts[b].reason)]
    with watch.part("polish"):
        try:
            starts = [budget.after(insts[b].nfev) for b in sub]
            for b, r in zip(sub, refine_batch(problem, [insts[b].x for b in sub],
                                              M[:, sub], starts)):
                refined[b] = r
        except KeyboardInterrupt:
            return [None] * B, unbounded, True
    cost = probe_cost(problem)
    todo = [b for b in range(B) if refined[b] is not None and refined[b][2] and
            budget.after(insts[b].nfev).room(refined[b][1] + cost)]
    if todo:
        X = np.stack([refined[b][0] for b in todo], axis=1)
        with watch.part("check"):
            try:
                v, used = diverges_many(problem, X, M[:, todo])
                for b, vb, ub in zip(todo, v, used):
                    unbounded[b] = (bool(vb), int(ub))
            except KeyboardInterrupt:
                stopped = True
    return refined, unbounded, stopped


#: Newton iterations of the batched polish.  Instances that converge stop early; a
#: shifted Hessian (an indefinite objective) makes the first steps short, so the count
#: leaves room for them.
NEWTON_ITERS = 30


def refine_batch(problem, xs, M: np.ndarray, budgets):
    """The batched polish (:mod:`constropt.local._newton`) of the best points ``xs``
    (one (N,) array per instance, parameters ``M`` (n_params, B), ``budgets`` each
    one's, counting from its search's evaluations), margins 0, 1e-9 and 1e-6 in turn for
    the instances still unsettled.  Returns one ``(x, used, settled, f, V)`` per
    instance: ``x`` the better of the start and a feasible candidate (``f``, ``V`` its
    float64 check), ``settled`` when Newton converged to a feasible point (no SLSQP
    needed)."""
    X = np.stack(xs, axis=1)
    B = X.shape[1]
    problem = finishing_view(problem, X, M)  # tight equalities: their tight band
    left = None if budgets[0].total is None else \
        np.array([b.left() for b in budgets], dtype=np.int64)
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
        # 2 kept: the check of the candidate here and refine's check of the final point
        cap = None if left is None else left[idx] - used[idx] - 2
        xr, u, conv = polish_batch(problem, X[:, idx], M[:, idx], cap, margin=margin,
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
    out = [Refined((best[:, b].copy(), int(used[b]), bool(settled[b]), float(f_b[b]),
                    V_b[:, b].copy())) for b in range(B)]
    for r in out:
        r.tight = is_tight(problem)
    return out


def make_result(problem, inst, fin: Finished, *, seed, device, timings,
                backend="torch") -> Result:
    """The :class:`Result` of one finished instance: ``inst`` (the driver's
    :class:`~constropt.engine._driver.Instance`) gives its generations and history."""
    sign = -1.0 if problem.maximize else 1.0
    feasible = fin.checked.feasible
    return Result(
        x=point_dict(problem, fin.x, fin.checked.genes), x_array=fin.x,
        variables=problem.variables, fun=fin.f, feasible=feasible,
        maxcv=float(fin.V.max()) if fin.V.size else 0.0, violations=fin.V,
        success=feasible and not fin.status.failed, status=fin.status,
        message=fin.message, nit=inst.nit, nfev=fin.nfev, seed=seed, device=str(device),
        timings=timings, backend=backend,
        history=History(inst.hist_nfev, sign * inst.hist_f, inst.hist_cv),
        problem=problem, verification=fin.checked.verification,
        equality_residuals=getattr(fin.checked.verification, "residuals", None) or {})
