"""The polish of one instance: SLSQP from its best point and other starts, then the moves.

:func:`polish_from` runs SLSQP (:mod:`constropt.local._polish`) from one start, in the
forms and at the margins that settle it, with the Newton restoration
(:func:`constropt.local._newton.restore`) of infeasible starts and ends;
:func:`polish_stage` runs it from the best point and other good points of the last
population, then the neighbourhood moves that SLSQP cannot make (integer moves, bound
flips, piece moves, the revival of dead genes).  Cases behind these rules:
``benchmarks/results/finishing_cases.md``.
"""

from __future__ import annotations

import numpy as np

from ..local._newton import INSIDE, restore
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
from ._budget import Budget, Incumbent
from ._deadgenes import revive
from ._defined import replaces
from ._flips import bound_flips
from ._intsearch import integer_search
from ._pieces import piece_moves
from ._result import Status
from ._verdict import check_point

__all__ = ["polish_from", "polish_stage", "MIN_POLISH", "MARGINS", "CLUSTER"]

#: Fewest evaluations worth starting an SLSQP polish with.
MIN_POLISH = 10

#: Margins inside the constraints at which SLSQP runs, in turn, while its end lies
#: outside the feasible set by more than a hair.
MARGINS = (0.0, 1e-9, 1e-6)


def polish_from(problem, start, inc: Incumbent, budget: Budget, again: bool = True):
    """SLSQP from ``start``; the result replaces the incumbent ``inc`` if feasible and
    better.  Each float64 check of a candidate counts one evaluation.

    An infeasible ``start`` is first projected onto its violated constraints
    (:func:`constropt.local._newton.restore`).  Two forms of SLSQP: on the problem as
    given, and in scaled form (genes in box units, rows by gradient norm).  The form as
    given goes first and may spend half of what is left, so that the scaled form keeps
    its share; where the box's widths span more than
    :data:`constropt.local._polish.SCALED_FIRST` the scaled form goes first.  Each form
    runs at the margins :data:`MARGINS` in turn while it ends outside (:func:`_form`);
    the scaled form also runs where the form as given returned its start
    (:func:`_gave_up`) or settled at a feasible end that is no KKT point (its
    :func:`constropt.local._polish.stationarity` above ``STATIONARY``: the scaled form
    then starts from that end).

    A better point on a side of the box where a partial derivative is not finite
    (``x2**0.6`` at ``x2 = 0``) is polished once more from there, that gene held
    (:func:`constropt.local._polish.singular_sides`): SLSQP reaches such a side mid-run
    and stops on a singular matrix.

    Returns ``(incumbent, stop)``; ``stop`` when the budget or its deadline is spent.
    Ctrl-C raises :class:`PolishInterrupted` whose ``state`` is the incumbent with the
    polish's last point taken if better.
    """
    best0 = inc.x
    start, used = restore(problem, start, inc.pvec, budget.lend())
    budget.spend(used)
    scaled_first = wide_spread(problem)
    left = budget.left()
    reserve = None if left is None else left // 2
    info: dict = {}
    for scaled in ((True, False) if scaled_first else (False, True)):
        keep = reserve if not scaled_first and not scaled else None
        inc, stop, settled, end, info = _form(problem, start, inc, budget, scaled, keep,
                                              info)
        if stop:
            return inc, True
        if not settled:
            continue  # outside at every margin: the other form
        if scaled_first or scaled:
            break
        if _gave_up(info):
            continue
        # a feasible end short of a KKT point: the scaled form from there
        if not np.all(end[1] == 0) or not budget.room(STATIONARITY_EVALS + MIN_POLISH):
            break
        kkt, used = stationarity(problem, end[0], inc.pvec)
        budget.spend(used)
        if not kkt > STATIONARY:
            break
        start = end[0]
    if again and inc.x is not best0 and not info.get("timed_out") and budget.room(1):
        held, used = singular_sides(problem, inc.x, inc.pvec)  # its one evaluation fits
        budget.spend(used)
        if held.any():
            return polish_from(problem, inc.x, inc, budget, again=False)
    return inc, bool(info.get("timed_out"))


def _form(problem, start, inc, budget, scaled: bool, keep, info: dict):
    """One form of SLSQP from ``start`` at the margins :data:`MARGINS` in turn, until an
    end settles it: SLSQP's own feasible end, or an end a hair outside
    (:func:`constropt.local._polish.hair_outside`) projected back in.  ``keep``: evaluations left to
    the other form (None: none kept).  Returns ``(incumbent, stop, settled, (x, V) of
    the last end, info)``; ``info`` is SLSQP's of the last run (as given when none
    ran)."""
    end = (None, None)
    for margin in MARGINS:
        cap = budget.left()
        if cap is not None:
            cap -= 1  # 1: the check
        if keep is not None:
            cap -= keep
            if cap < MIN_POLISH:  # leave it to the scaled form
                continue
        if (cap is not None and cap < MIN_POLISH) or budget.expired():
            return inc, True, False, end, info
        info = {}
        try:
            cand, used = polish(problem, start, inc.pvec, max_evals=cap, margin=margin,
                                deadline=budget.deadline, info=info, scaled=scaled)
        except PolishInterrupted as exc:
            budget.spend(exc.nfev + 1)
            f_c, V_c = check_point(problem, exc.x, inc.pvec)
            if replaces(problem, f_c, V_c, inc.f, inc.V):
                inc = inc.at(exc.x, f_c, V_c)
            exc.state = inc
            raise
        budget.spend(used + 1)
        f_c, V_c = check_point(problem, cand, inc.pvec)
        ended_inside = bool(np.all(V_c == 0))
        hair = hair_outside(V_c, cand)
        if not ended_inside:  # SLSQP ended off the feasible set: project back (Newton)
            cand, f_c, V_c = _project_end(problem, cand, f_c, V_c, hair, inc.pvec, budget)
        if replaces(problem, f_c, V_c, inc.f, inc.V):
            inc = inc.at(cand, f_c, V_c)
        end = (cand, V_c)
        if info.get("timed_out"):
            return inc, True, False, end, info
        # an end farther out, even projected back to a better point, may be this form
        # failing: the next margin, or the other form
        if ended_inside or (hair and np.all(V_c == 0)):
            if margin > 0 and ended_inside:
                inc = _margin_back(problem, cand, inc, budget, scaled, keep)
            return inc, False, True, end, info
    return inc, False, False, end, info


def _margin_back(problem, start, inc, budget, scaled: bool, keep):
    """SLSQP once more at margin 0 from ``start``, the feasible end of a run at a margin
    above 0: the margin cost its active constraints' multipliers times the margin in
    objective (1e-6 inside a band of 1e-4 whose multiplier is 4.7: 5e-6 of ex8_5_4's
    -9.2e-4), and a start that is already near the optimum of the slightly smaller set
    settles where the first runs, from farther, had wandered off.  The end is taken
    only where it is feasible, after projecting back an end a hair outside, and better
    (:func:`._defined.replaces`)."""
    cap = budget.left()
    if cap is not None:
        cap -= 1 + (keep or 0)
        if cap < MIN_POLISH:
            return inc
    if budget.expired():
        return inc
    try:
        cand, used = polish(problem, start, inc.pvec, max_evals=cap, margin=0.0,
                            deadline=budget.deadline, info={}, scaled=scaled)
    except PolishInterrupted as exc:
        exc.state = inc
        raise
    budget.spend(used + 1)
    f_c, V_c = check_point(problem, cand, inc.pvec)
    if not np.all(V_c == 0):
        if not hair_outside(V_c, cand):
            return inc
        cand, f_c, V_c = _project_end(problem, cand, f_c, V_c, True, inc.pvec, budget)
    if np.all(V_c == 0) and replaces(problem, f_c, V_c, inc.f, inc.V):
        inc = inc.at(cand, f_c, V_c)
    return inc


def _project_end(problem, cand, f_c, V_c, hair: bool, pvec, budget):
    """An SLSQP end outside the feasible set projected back
    (:func:`constropt.local._newton.restore`, aimed ``INSIDE`` within); an end a hair
    outside is also aimed only as far inside as it is outside, that projection kept
    where it is feasible and a real gain (:func:`constropt.local._polish.real_gain`: a
    gain at rounding level is not taken).  Returns the candidate ``(x, f, V)``."""
    end, hair_v = cand, float(np.max(V_c))
    for inside in (INSIDE, hair_v) if hair else (INSIDE,):
        x_r, used = restore(problem, end, pvec, budget.lend(), inside=inside)
        if used <= 1:
            continue
        budget.spend(used + 1)
        f_r, V_r = check_point(problem, x_r, pvec)
        if cand is end or (np.all(V_r == 0) and not np.all(V_c == 0)) or \
                (np.all(V_r == 0) and real_gain(problem, f_r, f_c)):
            cand, f_c, V_c = x_r, f_r, V_r
    return cand, f_c, V_c


def _gave_up(info: dict) -> bool:
    """Whether SLSQP ended where it started, as the form as given can on a badly scaled
    objective (status 0, the start returned).  A failed line search that moved is not a
    reason for the other form: running it there can move the polish to a point from
    which the face moves no longer reach the optimum."""
    return info.get("status") is not None and not info.get("moved", True)


def polish_stage(problem, pop, inc: Incumbent, budget: Budget, starts: int = 3,
                 first=None):
    """SLSQP (:func:`polish_from`) from the best point and from other distinct good points
    of the last population ``pop`` (N, S); keep the best feasible result.  ``first``: a
    point to polish from before them (:func:`._defined.defined_fallback`'s defined point,
    where the best point's objective is undefined).  Then the neighbourhood searches of
    :mod:`._intsearch` from the result: integer moves, bound flips; then the piece moves
    of :mod:`._pieces`; last, the revival of dead genes (:mod:`._deadgenes`).

    Returns ``(incumbent, stopped)``: ``stopped`` is None, ``Status.TIME_LIMIT`` when the
    deadline cut the polish short, or ``Status.INTERRUPTED`` after Ctrl-C (the best
    point so far is kept; a second Ctrl-C propagates).
    """
    try:
        for start in _starts(problem, inc.x, pop, starts, first):
            inc, stop = polish_from(problem, start, inc, budget)
            if stop:
                return inc, Status.TIME_LIMIT if budget.expired() else None
        # the polish holds integers fixed, cannot leave a side of the box nor cross the
        # jump of a piecewise cost: move them; nor can it move a gene the problem no
        # longer sees (exp(x) at x = -70): revive it
        for search in (integer_search, bound_flips, piece_moves, revive):
            inc, stop = search(problem, inc, budget)
            if stop:
                return inc, Status.TIME_LIMIT if budget.expired() else None
    except KeyboardInterrupt as exc:
        state = getattr(exc, "state", None)
        return (inc if state is None else state), Status.INTERRUPTED
    return inc, None


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
