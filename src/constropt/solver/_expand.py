"""Expanding the search box on soft sides (sides with no bound, or a huge given one).

The search starts in a box of the problem's scale (``constropt.problem._bounds``).  When
the best point presses on a soft side and a point beyond that side is feasible and
better, the side moves out tenfold and the search runs again, at most
:data:`MAX_EXPANSIONS` times; a huge given side is then reached in one step.  An open
side that is still pressed after that means the problem is unbounded or its optimum is
far beyond the problem's scale: ``solve`` reports ``UNBOUNDED`` and says so
(:func:`pressed_note`).

:func:`search_rounds` runs these rounds for ``solve`` and ``resume``: each round is a
:class:`~constropt.solver._search.Search` over the current box whose best point takes
stage 1 of the finishing path (:func:`constropt.finish._finish.refine`); stage 2
(:func:`constropt.finish._finish.judge`) runs once, on the last round's point.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..finish._budget import Budget
from ..finish._defined import result_key
from ..finish._finish import refine
from ..finish._result import Status, Stopwatch
from ..problem._bounds import with_box
from ..problem._evaluate import report_numpy
from ._search import Ended, Search, default_pop_size, search_deadline

__all__ = ["MAX_EXPANSIONS", "FACTOR", "pressed_sides", "expand", "describe", "open_side",
           "search_rounds", "Rounds", "pressed_note"]

#: Expansions of the soft sides before an open side still pressed is reported unbounded.
MAX_EXPANSIONS = 4
#: Each expansion multiplies the box width along a pressed side by this.
FACTOR = 10.0
#: The best point presses on a side within this fraction of the box width.
_NEAR = 1e-3
#: The probe beyond a side lies this fraction of the box width outside it.
_BEYOND = 0.1


#: Further probes beyond a pressed side, as shares of :data:`_BEYOND`, tried where the
#: first is infeasible or no better: a constraint such as ``cos(v**2) < 0.29`` holds on
#: an unbounded set in stripes that one probe point may miss.
_RETRIES = np.array([0.618, 0.382, 0.854, 0.236, 0.927, 0.146, 0.472])


def pressed_sides(problem, box, x: np.ndarray, f: float, pvec: np.ndarray, budget=None):
    """Soft sides of ``box`` that the feasible point ``x`` (objective ``f``) presses on
    with the objective improving beyond them.

    One probe point per candidate side, :data:`_BEYOND` of the width outside it; where
    that one is infeasible or no better, the retries :data:`_RETRIES` nearer the side
    (at most ``budget`` evaluations in all; None: no limit).  Returns ``(lower, upper,
    evaluations)``: boolean masks of shape (n,) and the number of probe points evaluated.
    """
    soft = problem._soft
    lo, hi = box.lower, box.upper
    width = np.maximum(hi - lo, 1e-300)
    cand_lo = soft.lower & (lo > soft.hard_lower) & (x - lo <= _NEAR * width)
    cand_hi = soft.upper & (hi < soft.hard_upper) & (hi - x <= _NEAR * width)
    idx = np.concatenate([np.flatnonzero(cand_lo), np.flatnonzero(cand_hi)])
    if idx.size == 0:
        return cand_lo, cand_hi, 0
    step = np.concatenate([-np.ones(cand_lo.sum()), np.ones(cand_hi.sum())])
    edge = np.where(step < 0, lo[idx], hi[idx])
    sign = -1.0 if problem.maximize else 1.0
    left = np.inf if budget is None else budget
    better = np.zeros(idx.size, dtype=bool)
    used = 0
    for share in np.concatenate([[1.0], _RETRIES]):
        todo = np.flatnonzero(~better)
        if todo.size == 0 or todo.size > left:
            break
        pts = np.repeat(x[:, None], todo.size, axis=1)
        pts[idx[todo], np.arange(todo.size)] = np.clip(
            edge[todo] + step[todo] * share * _BEYOND * width[idx[todo]],
            soft.hard_lower[idx[todo]], soft.hard_upper[idx[todo]])
        fp, V = report_numpy(problem, pts, pvec)
        used += todo.size
        left -= todo.size
        better[todo] = (V == 0).all(axis=0) & (sign * fp < sign * f)
    out_lo, out_hi = np.zeros_like(cand_lo), np.zeros_like(cand_hi)
    k = int(cand_lo.sum())
    out_lo[idx[:k]] = better[:k]
    out_hi[idx[k:]] = better[k:]
    return out_lo, out_hi, used


def expand(problem, box, lower_mask: np.ndarray, upper_mask: np.ndarray, last: bool):
    """``box`` with the masked sides moved out: the width along each grows ``FACTOR``
    times, clipped to the side's hard limit; on the ``last`` expansion a finite (huge
    given) limit is reached directly."""
    soft = problem._soft
    lo, hi = box.lower, box.upper
    width = hi - lo
    new_lo = np.where(lower_mask, np.maximum(hi - FACTOR * width, soft.hard_lower), lo)
    new_hi = np.where(upper_mask, np.minimum(lo + FACTOR * width, soft.hard_upper), hi)
    if last:
        new_lo = np.where(lower_mask & np.isfinite(soft.hard_lower), soft.hard_lower, new_lo)
        new_hi = np.where(upper_mask & np.isfinite(soft.hard_upper), soft.hard_upper, new_hi)
    return with_box(box, new_lo, new_hi)


def describe(problem, box, lower_mask, upper_mask) -> str:
    """``"x (lower side at -4500), y (upper side at 300)"`` for a message."""
    parts = []
    for b in problem.layout.blocks:
        sl = slice(b.offset, b.offset + b.size)
        if lower_mask[sl].any():
            parts.append(f"{b.symbol} (lower side at {box.lower[sl].min():.6g})")
        if upper_mask[sl].any():
            parts.append(f"{b.symbol} (upper side at {box.upper[sl].max():.6g})")
    return ", ".join(parts)


def open_side(problem, lower_mask, upper_mask) -> bool:
    """Whether a pressed side has no bound at all (an infinite hard limit)."""
    soft = problem._soft
    return bool((lower_mask & ~np.isfinite(soft.hard_lower)).any()
                or (upper_mask & ~np.isfinite(soft.hard_upper)).any())


# -- the rounds of ``solve``: a search, and a new one while the box expands -------------------

def _remaining(opts, nfev: int, seconds: float):
    """``opts`` with the budgets left after ``nfev`` evaluations and ``seconds`` of
    search and polish (each expansion of the box runs a new search within them)."""
    if nfev == 0:
        return opts
    left = {}
    if opts.max_evals is not None:
        left["max_evals"] = max(0, opts.max_evals - nfev)
    if opts.time_limit is not None:
        left["time_limit"] = max(1e-9, opts.time_limit - seconds)
    return replace(opts, **left) if left else opts


def _run_round(box, ropts, dev, dtype, seed, compile, pvec, *, resume, settings, deadline,
               search_deadline) -> Ended:
    """One search of the driver over ``box``, run to its end (no finishing)."""
    search = Search._create(box, ropts, dev, dtype, seed, compile, pvec[:, None],
                            t_start=time.perf_counter(), settings=settings, resume=resume,
                            deadline=deadline, search_deadline=search_deadline)
    return search._ended()


@dataclass
class Rounds:
    """What the rounds of a solve found and spent: the last search ``box`` and the
    number of expansions that made it (``rounds``), the best point (``inc``), why the
    last round ended (``reason``), the sides the point pressed on when the expansion
    stopped (``pressed``: ``(lower, upper)`` masks, or None), the run's ``budget``, the
    last search's ``end`` (its device and backend) and its ``inst`` with the history and
    generations of every round, the seconds of search, compile and import."""

    box: Any
    budget: Budget
    rounds: int = 0
    inc: Any = None
    reason: Any = None
    pressed: Any = None
    end: Any = None
    inst: Any = None
    hist: list = field(default_factory=list)
    nit: int = 0
    search_s: float = 0.0
    compile_s: float = 0.0
    import_s: float = 0.0


def search_rounds(problem, opts, dev, dtype, seed, compile, pvec, *, settings, resume,
                  deadline, watch: Stopwatch) -> Rounds:
    """Search ``problem`` (parameters ``pvec``) and polish the best point
    (:func:`constropt.finish._finish.refine`), and while it presses on soft sides of the
    box with the objective improving beyond them, expand those sides and search again,
    within the budgets left (at most :data:`MAX_EXPANSIONS` times).  A checkpointed (or
    resumed) run is one search, so that resuming ends exactly where the uninterrupted
    run does.  A Ctrl-C while a new search is set up keeps the previous round's point."""
    n = problem.n
    S = opts.pop_size or default_pop_size(opts.algorithm, n)
    S += S % 2
    before = float(getattr(resume["loop"], "elapsed", 0.0)) if resume is not None else 0.0
    stop = search_deadline(deadline, opts)
    expandable = problem._soft.any and resume is None and opts.checkpoint is None
    run = Rounds(box=problem, budget=Budget(opts.max_evals, deadline=deadline))
    last_box = problem
    while True:
        ropts = _remaining(opts, run.budget.used, run.search_s + watch.parts["polish"])
        try:
            end = _run_round(run.box, ropts, dev, dtype, seed, compile, pvec, resume=resume,
                             settings=settings, deadline=deadline, search_deadline=stop)
        except KeyboardInterrupt:  # setting up a new search (the search catches its own)
            if not run.rounds:
                raise  # no point evaluated yet: nothing to return
            run.box, run.rounds, run.reason, run.pressed = last_box, run.rounds - 1, \
                Status.INTERRUPTED, None
            break  # the previous round's best point, checked and polished, stands
        _refine_round(problem, run, end, pvec, opts, before, watch)
        run.pressed = None
        if not (expandable and run.budget.room(2 * n) and run.inc.feasible and
                np.isfinite(run.inc.f)) or run.reason in (
                    Status.INTERRUPTED, Status.CALLBACK, Status.TARGET, Status.UNBOUNDED,
                    Status.TIME_LIMIT):
            break
        try:
            lo_m, hi_m, used = pressed_sides(problem, run.box, run.inc.x, run.inc.f, pvec,
                                             run.budget.left())
        except KeyboardInterrupt:
            run.reason = Status.INTERRUPTED
            break
        run.budget.spend(used)
        if not (lo_m.any() or hi_m.any()):
            break
        run.pressed = (lo_m, hi_m)
        evals_left = run.budget.left()
        time_left = None if opts.time_limit is None else \
            opts.time_limit - run.search_s - watch.parts["polish"]
        if run.rounds == MAX_EXPANSIONS or (evals_left is not None and evals_left < 2 * S) \
                or (time_left is not None and time_left <= 0):
            break
        last_box = run.box
        run.box = expand(problem, run.box, lo_m, hi_m, last=run.rounds == MAX_EXPANSIONS - 1)
        run.rounds += 1
    return run


def _refine_round(problem, run: Rounds, end: Ended, pvec, opts, before: float,
                  watch: Stopwatch) -> None:
    """Count a finished round's search into ``run`` and polish its best point; the point
    of the round before stands where this wider box's search ended where the objective
    is undefined."""
    inst = end.instances[0]
    run.end = end
    run.compile_s += end.compile_s
    run.import_s += end.import_s
    run.nit += inst.nit
    run.search_s += end.seconds - before  # this call's share (a resumed run counts on)
    run.hist.append((run.budget.used + inst.hist_nfev, inst.hist_f, inst.hist_cv))
    run.inst = inst._replace(
        nit=run.nit, **{k: np.concatenate([h[i] for h in run.hist])
                        for i, k in enumerate(("hist_nfev", "hist_f", "hist_cv"))})
    kept = run.inc  # the last round's
    run.budget.spend(inst.nfev)
    run.inc, run.reason = refine(run.box, inst, pvec, run.budget, polish=opts.polish,
                                 watch=watch)
    if kept is not None and result_key(problem, kept.f, kept.V)[:2] < \
            result_key(problem, run.inc.f, run.inc.V)[:2]:
        run.inc = kept  # a wider box's search ended where f is undefined


def pressed_note(problem, run: Rounds):
    """The status rule of a box whose expansion stopped with the best point on a side
    (``run.pressed``): ``amend(incumbent, status, message, checked) -> (status,
    message)`` for :func:`constropt.finish._finish.judge`.  An open side still pressed
    after the expansions is ``UNBOUNDED``; a side short of its given bound is not
    confirmed."""
    reason, pressed, box = run.reason, run.pressed, run.box

    def amend(inc, status, message, checked):
        if not (checked.feasible and reason is not Status.TARGET and pressed is not None
                and (status is reason or status is Status.UNBOUNDED)):
            return status, message
        where = describe(problem, box, *pressed)
        if not open_side(problem, *pressed):
            if status is reason:  # a better feasible point lies beyond the side
                status, message = Status.NOT_CONFIRMED, Status.NOT_CONFIRMED.value
            return status, message + (
                f"; the best point presses on the search box side of {where}, short of "
                "the given bound: the budget ended the box's expansion")
        return Status.UNBOUNDED, (
            f"{Status.UNBOUNDED.value}: the best point presses on the default box side of "
            f"{where} after {run.rounds} expansion{'s' if run.rounds != 1 else ''}, and the "
            f"objective still improves beyond it (best objective {inc.f:.6g}). The problem "
            "is unbounded, or its optimum lies far outside the problem's scale: pass "
            "bounds= to search there")

    return amend
