"""Integer neighbourhood search after the polish of a mixed-integer problem.

The polish (:mod:`._polish`) holds integer genes fixed, so a search that ends with one
integer wrong stays wrong: a binary switched off, or an integer one admissible value
away (a set such as ``{1, 2, 3, 5, 8, 10, 12}`` declared by a product equality leaves
infeasible gaps that a DE step across is unlikely to land beyond).  This local search
moves the integer genes of the best point and polishes the continuous genes for each
move:

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
objective's lower bound (best first).  A discrete truss whose three areas come from
``{1, 2, 3, 5, 8, 10, 12}`` (MINLPLib st_e40: 343 assignments, 52 feasible) keeps 3 of
them, the optimum first, where single and pair moves from the search's end stop at a
local optimum two or three genes away.  From a search that ended infeasible the screen
has no objective bound: the assignments go best bound first until one polishes to a
feasible point, whose objective then bounds the rest (st_e40 ended at the infeasible
(10, 5, 1) in 2 of 25 runs with the defaults).

A move is kept when the polished point is feasible (float64 check) and better; the
search repeats from a kept point (first improvement) until a round keeps nothing, or
the evaluation budget or the deadline is spent.  Where the screen does not apply, the
interval branch-and-bound of :mod:`._intbnb` follows (from an infeasible point too).

:func:`bound_flips` does the same for continuous genes that end on a side of the box:
each moves to the opposite side, alone, in pairs, and with one other continuous gene
sent to either of its bounds, before a polish.

Every move is polished at margin 0 first (:data:`MARGINS`): the optima these moves
reach often lie where a constraint coincides with a side of the box.
"""

from __future__ import annotations

import itertools
import math
import time

import numpy as np

from ..local._polish import hair_outside, real_gain

__all__ = ["integer_search", "bound_flips", "ENUMERATE", "LINE_VALUES", "PAIR_GENES",
           "SCREEN_ENUMERATE"]

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
    from ._snap import integer_sets

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


def _try(problem, start, pvec, max_evals, nfev, deadline):
    """One polish of the continuous genes from ``start`` (integer genes fixed) and its
    float64 check, at margin 0 and then, if it ends a hair outside, 1e-9 inside the
    constraints (:data:`MARGINS`); an infeasible end is projected
    (:func:`._newton.restore`) and polished once more.  Where all that ends infeasible
    and ``start`` is itself infeasible (a move sent a gene to a side), ``start`` is
    projected and polished again from the projection, as :func:`._finish.polish_from`
    starts.  Returns ``(x, f, V, nfev, timed_out)`` of the first feasible end (else the
    last one)."""
    from ..local._newton import budget_left, restore

    out = _try_from(problem, start, pvec, max_evals, nfev, deadline)
    if out[4] or np.all(out[2] == 0):
        return out
    # CEC 2020 RC03 from x2 = 100 (a local optimum 4386 above): the move sending x2 and
    # x4 to 0, where four rows vanish, left SLSQP with incompatible constraints 1,116
    # outside; from the projected start (7 evaluations) it reaches the optimum.  Only
    # after a failure: from RC04's end at seed 5 the plain start polished to the optimum
    # and the projected one to the same point as before
    nfev = out[3]
    x0, used = restore(problem, start, pvec, budget_left(max_evals, nfev))
    nfev += used
    if np.array_equal(x0, start):  # a feasible start, or no projection found
        return out[:3] + (nfev, out[4])
    return _try_from(problem, x0, pvec, max_evals, nfev, deadline)


def _try_from(problem, start, pvec, max_evals, nfev, deadline):
    for margin in MARGINS:
        x, f, V, nfev, timed_out = _try_margin(problem, start, pvec, max_evals, nfev,
                                               deadline, margin)
        # the next margin only for an end a hair outside, not for an infeasible move
        if timed_out or not hair_outside(V, x):
            break
    return x, f, V, nfev, timed_out


#: Margins of :func:`_try`, in turn.  Margin 0 first: where a constraint coincides with
#: a side of the box, any margin empties the feasible set there (CEC 2020 RC14: with one
#: unit in stage 2, ``20 - n2 * tl1 <= 0`` needs ``tl1 = 20``, its upper bound; RC03:
#: with ``x2 = x4 = 0`` on their bounds, four constraints are identically 0), so SLSQP
#: reports incompatible constraints and the move is lost.
MARGINS = (0.0, 1e-9)


def _try_margin(problem, start, pvec, max_evals, nfev, deadline, margin):
    from ..local._newton import budget_left, restore
    from ..local._polish import polish, wide_spread
    from ._verdict import check_point

    def left():
        return budget_left(max_evals, nfev)

    info: dict = {}
    x, used = polish(problem, start, pvec, max_evals=left(), margin=margin,
                     deadline=deadline, info=info, scaled=wide_spread(problem))
    f, V = check_point(problem, x, pvec)
    nfev += used + 1
    if not np.all(V == 0) and not info.get("timed_out"):
        # SLSQP may stall off a steep equality: project, then polish from there
        x, used = restore(problem, x, pvec, left())
        f, V = check_point(problem, x, pvec)
        nfev += used + 1
        if np.all(V == 0):
            x2, used = polish(problem, x, pvec, max_evals=left(), margin=margin,
                              deadline=deadline, info=info, scaled=wide_spread(problem))
            f2, V2 = check_point(problem, x2, pvec)
            nfev += used + 1
            if np.all(V2 == 0) and (f2 > f if problem.maximize else f2 < f):
                x, f, V = x2, f2, V2
    return x, f, V, nfev, bool(info.get("timed_out"))


def _screen(problem, ints: np.ndarray, cands: np.ndarray, f_best: float, pvec):
    """Lower bounds of the objective (minimized sense) over the feasible points of each
    candidate's box: integer genes ``ints`` fixed to a row of ``cands`` (K, k), the other
    genes over their whole range, contracted by forward-backward interval propagation on
    the constraints (``|h| <= eq_tol``) and ``f <= f_best``.  Rigorous: +inf where the box
    provably holds no feasible point at least as good as ``f_best``.  Returns ``(lb, lo,
    hi)``: the bounds (K,) and the contracted boxes (n, K), or None when the problem has
    no interval model."""
    from ..problem._fbbt import problem_model
    from ._intbnb import contract_boxes

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


def _best_first(problem, best, f_best, V_best, pvec, max_evals, nfev, deadline, ints,
                values):
    """Every assignment of the integer genes, screened (:func:`_screen`) and polished in
    the order of the lower bounds; None when the screen is not available.  From an
    infeasible ``best`` the screen has no objective bound, and the first feasible end
    becomes the bound for the assignments after it."""
    from ._intbnb import start_in

    cands = np.array(list(itertools.product(*values)), dtype=np.float64).reshape(
        -1, ints.size)
    sign = -1.0 if problem.maximize else 1.0
    # the objective to beat, minimized sense: none yet where best is infeasible
    bound = sign * f_best if np.all(V_best == 0) and np.isfinite(f_best) else math.inf
    screen = _screen(problem, ints, cands, sign * bound, pvec)
    if screen is None:
        return None
    lb, box_lo, box_hi = screen
    # best's own assignment is polished already, unless best is infeasible
    here = tuple(np.round(best[ints])) if bound < math.inf else None
    for tries, k in enumerate(np.argsort(lb, kind="stable")):
        if not lb[k] < bound or tries >= MAX_TRIES:
            break  # sorted: no later candidate can do better
        if tuple(cands[k]) == here:
            continue
        if (max_evals is not None and max_evals - nfev < 20) or \
                (deadline is not None and time.perf_counter() >= deadline):
            return best, f_best, V_best, nfev, True
        # the continuous genes from best, moved into what propagation left of their
        # range for this assignment (as the branch-and-bound's leaves do): RC11's reactor
        # 1, switched on from reactor 2's end, starts at the flow and volume bounds
        # propagation gives (x1 = 11.19, v1 = 1.62) instead of at 0, where its yield
        # z1 = 0.9 (1 - exp(-v1 / 2)) x1 has no gradient and the polish cannot move
        start = start_in(best, box_lo[:, k], box_hi[:, k])
        start[ints] = cands[k]
        x, f, V, nfev, timed_out = _try(problem, start, pvec, max_evals, nfev, deadline)
        if np.all(V == 0) and sign * f < bound:
            best, f_best, V_best, bound = x, f, V, sign * f
        if timed_out:
            return best, f_best, V_best, nfev, True
    return best, f_best, V_best, nfev, False


def integer_search(problem, best, f_best, V_best, pvec, max_evals, nfev, deadline=None):
    """Move the integer genes of ``best`` (n,) and polish the rest; keep improvements.

    The screen runs from any ``best`` (from an infeasible one, in search of a feasible
    assignment first); the moves only from a feasible one; where the screen does not
    apply, :func:`._intbnb.branch_and_bound` follows, from an infeasible ``best`` too.

    Parameters
    ----------
    problem : Problem
    best : ndarray, shape (n,)
        The best point so far, ``f_best`` its objective (user's sense) and ``V_best``
        its violations, shape (m,).
    pvec : ndarray, shape (n_params,)
    max_evals : int or None
        The run's budget, of which ``nfev`` are spent.
    deadline : float, optional
        A ``time.perf_counter()`` value.

    Returns
    -------
    tuple
        ``(x, f, V, nfev, stop)``: the best point, its objective and violations, the
        evaluations spent in all, and whether the budget or the deadline stopped it.
    """
    ints = np.flatnonzero(problem.integer)
    if ints.size == 0:
        return best, f_best, V_best, nfev, False
    values = _values(problem, ints)
    screened = all(v is not None for v in values) and \
        math.prod(v.size for v in values) <= SCREEN_ENUMERATE
    if screened:  # from an infeasible best too: the first feasible assignment found
        out = _best_first(problem, best, f_best, V_best, pvec, max_evals, nfev, deadline,
                          ints, values)
        if out is not None:
            return out
    if np.all(V_best == 0) and np.isfinite(f_best):
        best, f_best, V_best, nfev, stop = _local(problem, best, f_best, V_best, pvec,
                                                  max_evals, nfev, deadline, ints, values)
        if stop:
            return best, f_best, V_best, nfev, True
    if not screened:  # too many assignments to screen: branch-and-bound (._intbnb)
        from ._intbnb import branch_and_bound
        out = branch_and_bound(problem, best, f_best, V_best, pvec, max_evals, nfev,
                               deadline, _try)
        if out is not None:
            return out
    return best, f_best, V_best, nfev, False


def _local(problem, best, f_best, V_best, pvec, max_evals, nfev, deadline, ints, values):
    """Rounds of first-improvement single and pair moves (:func:`_moves`) from a
    feasible ``best``; same returns as :func:`integer_search`."""
    lo = np.ceil(problem.lower[ints] - 1e-9)
    hi = np.floor(problem.upper[ints] + 1e-9)
    sign = -1.0 if problem.maximize else 1.0
    seen = {tuple(np.round(best[ints]))}
    tries = 0
    for _ in range(ROUNDS):
        z = np.round(best[ints])
        improved = False
        for cand in _moves(values, lo, hi, z):
            key = tuple(cand)
            if key in seen:
                continue
            seen.add(key)
            tries += 1
            if tries > MAX_TRIES:
                return best, f_best, V_best, nfev, False
            if (max_evals is not None and max_evals - nfev < 20) or \
                    (deadline is not None and time.perf_counter() >= deadline):
                return best, f_best, V_best, nfev, True
            start = best.copy()
            start[ints] = cand
            x, f, V, nfev, timed_out = _try(problem, start, pvec, max_evals, nfev, deadline)
            if np.all(V == 0) and sign * f < sign * f_best:
                best, f_best, V_best, improved = x, f, V, True
            if timed_out:
                return best, f_best, V_best, nfev, True
            if improved:
                break
        if not improved:
            break
    return best, f_best, V_best, nfev, False


#: Bound flips while at most this many continuous genes sit on a bound.
FLIP_GENES = 10


def _partner_moves(problem, best, pvec, side, on_lo, on_hi, left=None):
    """Each gene on a side flipped together with one other continuous gene sent to
    either of its bounds, where a constraint vanishes on that face: ``(flipped genes,
    ((gene, value),))`` per move.

    A constraint may tie a gene's side to another gene: in CEC 2020 RC03 (alkylation)
    ``x2 = 0`` is feasible only with ``x4 = 0`` (``1.22 x3 x4 <= 100000 x2 - ...``), and
    the optimum lies on that face, where four constraints vanish identically.  A search
    never lands on such a face exactly, and the flip of ``x2`` alone stays infeasible.
    A move is kept only where some constraint leaf that depends on a third gene at
    ``best`` is 0 with no slope in any third gene at the start (:func:`_vanishes`), so
    a problem without such a face pays one batched evaluation here.  Returns ``(moves,
    evaluations spent)``; none when they would exceed ``left``.
    """
    lo, hi = problem.lower, problem.upper
    others = np.flatnonzero((~problem.integer) & ~(on_lo | on_hi) & (hi > lo))
    if side.size * others.size > PARTNER_PAIRS or others.size == 0:
        return [], 0
    moves = [((i,), ((j, v),)) for i in side for j in others for v in (lo[j], hi[j])]
    cost = 2 * (len(moves) + 1)  # values and derivatives at best and every start
    if left is not None and cost > left:
        return [], 0
    starts = np.repeat(best[:, None], len(moves), axis=1)
    for k, ((i,), ((j, v),)) in enumerate(moves):
        starts[i, k] = hi[i] if on_lo[i] else lo[i]
        starts[j, k] = v
    keep = _vanishes(problem, best, starts, pvec, moves)
    return [m for m, ok in zip(moves, keep) if ok], cost


def _vanishes(problem, best, starts, pvec, moves) -> np.ndarray:
    """For each start (column of ``starts`` (n, K)), whether a conjunctive constraint
    leaf that has a slope in a gene other than the two moved at ``best`` is 0 there
    with no slope in any such gene."""
    from ..problem._scipy import conjunctive_leaves

    L = len(problem.leaves)
    K = starts.shape[1]
    if L == 0:
        return np.zeros(K, dtype=bool)
    try:
        deriv = problem.lowering.derivatives("numpy")
    except Exception:  # no exact derivatives: no partner moves
        return np.zeros(K, dtype=bool)
    leaves = problem.lowering.functions("numpy")["leaves"]
    n = problem.n
    X = np.concatenate([best[:, None], starts], axis=1)
    P = np.repeat(np.reshape(pvec, (-1, 1)), K + 1, axis=1)
    with np.errstate(all="ignore"):
        _, C = leaves(X, P)
        _, J = deriv(X, P)
    C = np.broadcast_to(np.asarray(C, float).reshape(L, -1), (L, K + 1))
    J = np.broadcast_to(np.asarray(J, float).reshape(L, n, -1), (L, n, K + 1))
    rows = np.zeros(L, dtype=bool)
    rows[conjunctive_leaves(problem)] = True
    out = np.zeros(K, dtype=bool)
    for k, ((i,), ((j, _),)) in enumerate(moves):
        third = np.ones(n, dtype=bool)
        third[[i, j]] = False
        before = np.any(J[:, third, 0] != 0, axis=1)
        flat = np.all(J[:, third, k + 1] == 0, axis=1) & (C[:, k + 1] == 0)
        out[k] = bool(np.any(rows & before & flat))
    return out


#: A flip starts a new round of moves when it gains more than this (relative): a start
#: that polishes back to the same point gains rounding noise (3e-8 on RC03's -142.7);
#: that is kept, but restarting the round from it spent the rounds on noise.
GAIN = 1e-9

#: Partner moves (a flip with one other gene sent to a bound) while the flipped genes
#: times the other continuous genes are at most this many.
PARTNER_PAIRS = 40


def bound_flips(problem, best, f_best, V_best, pvec, max_evals, nfev, deadline=None):
    """Move continuous genes of ``best`` that sit on a side of the box to the opposite
    side (one, then two at a time) and polish from there; keep improvements.

    An optimum on the edge of the box is often the mirror of where a search ends: a
    reactor network whose two residence times trade places (CEC 2020 RC04: the search
    ends at ``(x5, x6) = (16, 1e-5)``, the optimum is ``(1e-5, 16)``), a bilinear
    objective whose best vertex has the opposite sides (HS044), a face where a
    constraint vanishes only with a partner gene on its bound too (RC03, see
    :func:`_partner_moves`).  SLSQP from the best point cannot leave the side it
    stands on; these starts leave it.  Only genes on a
    bound are moved (at most :data:`FLIP_GENES` of them), so a problem whose best point
    is interior costs nothing here.  Same parameters and returns as
    :func:`integer_search`.
    """
    from ..local._newton import budget_left

    if not np.all(V_best == 0) or not np.isfinite(f_best):
        return best, f_best, V_best, nfev, False
    lo, hi = problem.lower, problem.upper
    tried: set = set()
    for _ in range(ROUNDS):
        tol = 1e-9 * (1.0 + np.abs(best))
        on_lo = (~problem.integer) & (np.abs(best - lo) <= tol) & (hi > lo)
        on_hi = (~problem.integer) & (np.abs(best - hi) <= tol) & (hi > lo)
        side = np.flatnonzero(on_lo | on_hi)
        if side.size == 0 or side.size > FLIP_GENES:
            break
        partners, used = _partner_moves(problem, best, pvec, side, on_lo, on_hi,
                                        budget_left(max_evals, nfev))
        nfev += used
        moves = [((i,), ()) for i in side] + \
            [(pair, ()) for pair in itertools.combinations(side, 2)] + partners
        improved = False
        for move, sent in moves:
            start = best.copy()
            for i in move:
                start[i] = hi[i] if on_lo[i] else lo[i]
            for i, value in sent:
                start[i] = value
            key = tuple(np.round(start, 12))
            if key in tried:
                continue
            tried.add(key)
            if len(tried) > MAX_TRIES or (max_evals is not None and max_evals - nfev < 20) or \
                    (deadline is not None and time.perf_counter() >= deadline):
                return best, f_best, V_best, nfev, len(tried) <= MAX_TRIES
            x, f, V, nfev, timed_out = _try(problem, start, pvec, max_evals, nfev, deadline)
            if np.all(V == 0) and real_gain(problem, f, f_best):
                # a new round of moves only from a real gain, not from rounding noise
                improved = real_gain(problem, f, f_best, GAIN)
                best, f_best, V_best = x, f, V
            if timed_out:
                return best, f_best, V_best, nfev, True
            if improved:
                break
        if not improved:
            break
    return best, f_best, V_best, nfev, False
