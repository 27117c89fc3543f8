"""Integer neighbourhood search after the polish of a mixed-integer problem.

The polish (:mod:`constropt.local._polish`) holds integer genes fixed, so a search that
ends with one integer wrong stays wrong: a binary switched off, or an integer one
admissible value away (a set such as ``{1, 2, 3, 5, 8, 10, 12}`` declared by a product
equality leaves infeasible gaps that a DE step across is unlikely to land beyond).  This
local search moves the integer genes of the best point and polishes the continuous genes
for each move:

* every value of one gene (all its values when its range holds at most
  :data:`LINE_VALUES` or an equality of its own confines it to a set, else the
  neighbours ``+-1``, ``+-2``);
* one step on two genes at once (swaps of binaries: ``1 - b4 - b5 <= 0`` forbids
  switching one off before the other is on), while there are at most
  :data:`PAIR_GENES` integer genes;
* all assignments when there are at most :data:`ENUMERATE` of them.

When every integer gene has a finite list of values and there are at most
:data:`SCREEN_ENUMERATE` assignments, interval propagation screens them all first
(:func:`_screen`): each assignment's box (integer genes fixed, the others over their
range) is contracted by the constraints and by ``f <= f_best``; those proven to hold no
better feasible point are dropped, and the rest are polished in the order of their
objective's lower bound (best first): single and pair moves from the search's end can
stop at a local optimum two or three genes away.  From a search that ended infeasible
the screen has no objective bound: the assignments go best bound first until one
polishes to a feasible point, whose objective then bounds the rest.

A move is kept when the polished point is feasible (float64 check) and better; the
search repeats from a kept point (first improvement) until a round keeps nothing, or
the evaluation budget or the deadline is spent.  Where the screen does not apply, the
interval branch-and-bound of :mod:`._intbnb` follows (from an infeasible point too).
The bound flips of :mod:`._flips` move continuous genes the same way.

Every move is polished by :func:`try_move`, at margin 0 first (:data:`MARGINS`): the
optima these moves reach often lie where a constraint coincides with a side of the box.
Cases behind these rules: ``benchmarks/results/finishing_cases.md``.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from ..local._newton import restore
from ..local._polish import hair_outside, polish, wide_spread
from ..problem._fbbt import problem_model
from ._budget import Budget, Incumbent
from ._intbnb import branch_and_bound, contract_boxes, start_in
from ._snap import integer_sets
from ._verdict import check_point

__all__ = ["integer_search", "try_move", "ENUMERATE", "LINE_VALUES", "PAIR_GENES",
           "SCREEN_ENUMERATE", "ROUNDS", "MAX_TRIES", "MARGINS"]

#: Enumerate every integer assignment when there are at most this many.
ENUMERATE = 256
#: Enumerate every assignment, screened by interval propagation, when at most this many.
SCREEN_ENUMERATE = 4096
#: A gene whose range holds at most this many values tries all of them.
LINE_VALUES = 16
#: Pair moves while there are at most this many integer genes.
PAIR_GENES = 12
#: Rounds of first-improvement moves at most, and moves tried at most in all.
ROUNDS = 8
MAX_TRIES = 400


def _values(problem, ints: np.ndarray) -> list:
    """The values each integer gene may take: its allowed set when an equality of its
    own confines it (:func:`._snap.integer_sets`), else the integers of its range (None
    when the range holds more than :data:`LINE_VALUES`: moves are then +-1, +-2)."""
    sets = integer_sets(problem)
    out = []
    for i in ints:
        if sets is not None and np.isfinite(sets[i]).any():
            out.append(sets[i][np.isfinite(sets[i])])
            continue
        lo, hi = math.ceil(problem.lower[i] - 1e-9), math.floor(problem.upper[i] + 1e-9)
        out.append(np.arange(lo, hi + 1, dtype=np.float64) if hi - lo < LINE_VALUES else None)
    return out


def _steps(values, lo: float, hi: float, v: float, d: int):
    """The value ``d`` places from ``v`` (in ``values``, or on the integers of
    ``[lo, hi]``), or None."""
    if values is None:
        return v + d if lo <= v + d <= hi else None
    at = int(np.argmin(np.abs(values - v))) + d
    return float(values[at]) if 0 <= at < values.size else None


def _moves(values: list, lo: np.ndarray, hi: np.ndarray, z: np.ndarray):
    """Candidate integer vectors around ``z`` (the integer genes' values)."""
    k = z.size
    if all(v is not None for v in values) and \
            math.prod(v.size for v in values) <= ENUMERATE:
        for combo in itertools.product(*values):
            yield np.array(combo, dtype=np.float64)
        return
    for i in range(k):
        line = values[i] if values[i] is not None else \
            [c for c in (_steps(None, lo[i], hi[i], z[i], d) for d in (-1, 1, -2, 2))
             if c is not None]
        for v in line:
            if v != z[i]:
                c = z.copy()
                c[i] = v
                yield c
    if k <= PAIR_GENES:
        for i, j in itertools.combinations(range(k), 2):
            for di, dj in ((1, -1), (-1, 1), (1, 1), (-1, -1)):
                vi = _steps(values[i], lo[i], hi[i], z[i], di)
                vj = _steps(values[j], lo[j], hi[j], z[j], dj)
                if vi is not None and vj is not None:
                    c = z.copy()
                    c[i], c[j] = vi, vj
                    yield c


def try_move(problem, start, pvec, budget: Budget):
    """One polish of the continuous genes from ``start`` (integer genes fixed) and its
    float64 check, at margin 0 and then, if it ends a hair outside, 1e-9 inside the
    constraints (:data:`MARGINS`); an infeasible end is projected
    (:func:`constropt.local._newton.restore`) and polished once more.  Where all that
    ends infeasible and ``start`` is itself infeasible (a move sent a gene to a side),
    ``start`` is projected and polished again from the projection, as
    :func:`._polishing.polish_from` starts.  Returns ``(x, f, V, timed_out)`` of the
    first feasible end (else the last one)."""
    out = _try_from(problem, start, pvec, budget)
    if out[3] or np.all(out[2] == 0):
        return out
    # the projected start only after a failure: from a plain start that polishes well,
    # the projection can lead to the same point as before at a higher cost
    x0, used = restore(problem, start, pvec, budget.lend())
    budget.spend(used)
    if np.array_equal(x0, start):  # a feasible start, or no projection found
        return out
    return _try_from(problem, x0, pvec, budget)


def _try_from(problem, start, pvec, budget):
    for margin in MARGINS:
        x, f, V, timed_out = _try_margin(problem, start, pvec, budget, margin)
        # the next margin only for an end a hair outside, not for an infeasible move
        if timed_out or not hair_outside(V, x):
            break
    return x, f, V, timed_out


#: Margins of :func:`try_move`, in turn.  Margin 0 first: where a constraint coincides
#: with a side of the box, any margin empties the feasible set there, so SLSQP reports
#: incompatible constraints and the move is lost.
MARGINS = (0.0, 1e-9)


def _try_margin(problem, start, pvec, budget, margin):
    info: dict = {}
    x, used = polish(problem, start, pvec, max_evals=budget.lend(), margin=margin,
                     deadline=budget.deadline, info=info, scaled=wide_spread(problem))
    f, V = check_point(problem, x, pvec)
    budget.spend(used + 1)
    if not np.all(V == 0) and not info.get("timed_out"):
        # SLSQP may stall off a steep equality: project, then polish from there
        x, used = restore(problem, x, pvec, budget.lend())
        f, V = check_point(problem, x, pvec)
        budget.spend(used + 1)
        if np.all(V == 0):
            x2, used = polish(problem, x, pvec, max_evals=budget.lend(), margin=margin,
                              deadline=budget.deadline, info=info,
                              scaled=wide_spread(problem))
            f2, V2 = check_point(problem, x2, pvec)
            budget.spend(used + 1)
            if np.all(V2 == 0) and (f2 > f if problem.maximize else f2 < f):
                x, f, V = x2, f2, V2
    return x, f, V, bool(info.get("timed_out"))


def _screen(problem, ints: np.ndarray, cands: np.ndarray, f_best: float, pvec):
    """Lower bounds of the objective (minimized sense) over the feasible points of each
    candidate's box: integer genes ``ints`` fixed to a row of ``cands`` (K, k), the other
    genes over their whole range, contracted by forward-backward interval propagation on
    the constraints (``|h| <= eq_tol``) and ``f <= f_best``.  Rigorous: +inf where the box
    provably holds no feasible point at least as good as ``f_best``.  Returns ``(lb, lo,
    hi)``: the bounds (K,) and the contracted boxes (n, K), or None when the problem has
    no interval model."""
    try:
        model = problem_model(problem)
        K = cands.shape[0]
        lo = np.repeat(np.asarray(problem.lower, dtype=np.float64).reshape(-1, 1), K, 1)
        hi = np.repeat(np.asarray(problem.upper, dtype=np.float64).reshape(-1, 1), K, 1)
        lo[ints], hi[ints] = cands.T, cands.T
        U = -f_best if problem.maximize else f_best
        lo, hi, lb = contract_boxes(problem, model, lo, hi, U, pvec)
        return lb, lo, hi
    except Exception:  # a construct without an inclusion function: no screening
        return None


def _best_first(problem, inc: Incumbent, budget: Budget, ints, values):
    """Every assignment of the integer genes, screened (:func:`_screen`) and polished in
    the order of the lower bounds; None when the screen is not available.  From an
    infeasible incumbent the screen has no objective bound, and the first feasible end
    becomes the bound for the assignments after it."""
    cands = np.array(list(itertools.product(*values)), dtype=np.float64).reshape(
        -1, ints.size)
    sign = -1.0 if problem.maximize else 1.0
    # the objective to beat, minimized sense: none yet where the incumbent is infeasible
    bound = sign * inc.f if inc.feasible and np.isfinite(inc.f) else math.inf
    screen = _screen(problem, ints, cands, sign * bound, inc.pvec)
    if screen is None:
        return None
    lb, box_lo, box_hi = screen
    # the incumbent's own assignment is polished already, unless it is infeasible
    here = tuple(np.round(inc.x[ints])) if bound < math.inf else None
    for tries, k in enumerate(np.argsort(lb, kind="stable")):
        if not lb[k] < bound or tries >= MAX_TRIES:
            break  # sorted: no later candidate can do better
        if tuple(cands[k]) == here:
            continue
        if not budget.room(20) or budget.expired():
            return inc, True
        # the continuous genes from the incumbent, moved into what propagation left of
        # their range for this assignment (as the branch-and-bound's leaves do): a unit
        # switched on from another's end starts where its flows are possible, not at 0,
        # where its output may have no gradient for the polish to follow
        start = start_in(inc.x, box_lo[:, k], box_hi[:, k])
        start[ints] = cands[k]
        x, f, V, timed_out = try_move(problem, start, inc.pvec, budget)
        if np.all(V == 0) and sign * f < bound:
            inc, bound = inc.at(x, f, V), sign * f
        if timed_out:
            return inc, True
    return inc, False


def integer_search(problem, inc: Incumbent, budget: Budget):
    """Move the integer genes of the incumbent and polish the rest; keep improvements.

    The screen runs from any incumbent (from an infeasible one, in search of a feasible
    assignment first); the moves only from a feasible one; where the screen does not
    apply, :func:`._intbnb.branch_and_bound` follows, from an infeasible incumbent too.

    Parameters
    ----------
    problem : Problem
    inc : Incumbent
        The best point so far.
    budget : Budget
        The instance's evaluations and deadline; the moves add theirs.

    Returns
    -------
    tuple
        ``(incumbent, stop)``: the best point, and whether the budget or the deadline
        stopped the search.
    """
    ints = np.flatnonzero(problem.integer)
    if ints.size == 0:
        return inc, False
    values = _values(problem, ints)
    screened = all(v is not None for v in values) and \
        math.prod(v.size for v in values) <= SCREEN_ENUMERATE
    if screened:  # from an infeasible incumbent too: the first feasible assignment found
        out = _best_first(problem, inc, budget, ints, values)
        if out is not None:
            return out
    if inc.feasible and np.isfinite(inc.f):
        inc, stop = _local(problem, inc, budget, ints, values)
        if stop:
            return inc, True
    if not screened:  # too many assignments to screen: branch-and-bound (._intbnb)
        out = branch_and_bound(problem, inc, budget, try_move)
        if out is not None:
            return out
    return inc, False


def _local(problem, inc: Incumbent, budget: Budget, ints, values):
    """Rounds of first-improvement single and pair moves (:func:`_moves`) from a
    feasible incumbent; same returns as :func:`integer_search`."""
    lo = np.ceil(problem.lower[ints] - 1e-9)
    hi = np.floor(problem.upper[ints] + 1e-9)
    sign = -1.0 if problem.maximize else 1.0
    seen = {tuple(np.round(inc.x[ints]))}
    tries = 0
    for _ in range(ROUNDS):
        z = np.round(inc.x[ints])
        improved = False
        for cand in _moves(values, lo, hi, z):
            key = tuple(cand)
            if key in seen:
                continue
            seen.add(key)
            tries += 1
            if tries > MAX_TRIES:
                return inc, False
            if not budget.room(20) or budget.expired():
                return inc, True
            start = inc.x.copy()
            start[ints] = cand
            x, f, V, timed_out = try_move(problem, start, inc.pvec, budget)
            if np.all(V == 0) and sign * f < sign * inc.f:
                inc, improved = inc.at(x, f, V), True
            if timed_out:
                return inc, True
            if improved:
                break
        if not improved:
            break
    return inc, False
