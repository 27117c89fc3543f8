"""Bound flips: continuous genes on a side of the box sent to the opposite side.

An optimum on the edge of the box is often the mirror of where a search ends: two
residence times of a reactor network that trade places, a bilinear objective whose best
vertex has the opposite sides, a face where a constraint vanishes only with a partner
gene on its bound too (:func:`_partner_moves`).  SLSQP from the best point cannot leave
the side it stands on; :func:`bound_flips` starts it from the flipped points, polished
as the integer moves are (:func:`._intsearch.try_move`).  Cases behind these rules:
``benchmarks/results/finishing_cases.md``.
"""

from __future__ import annotations

import itertools

import numpy as np

from ..local._polish import real_gain
from ..problem._scipy import conjunctive_leaves
from ._budget import Budget, Incumbent
from ._intsearch import MAX_TRIES, ROUNDS, try_move

__all__ = ["bound_flips", "FLIP_GENES", "GAIN", "PARTNER_PAIRS"]

#: Bound flips while at most this many continuous genes sit on a bound.
FLIP_GENES = 10


def _partner_moves(problem, best, pvec, side, on_lo, on_hi, left=None):
    """Each gene on a side flipped together with one other continuous gene sent to
    either of its bounds, where a constraint vanishes on that face: ``(flipped genes,
    ((gene, value),))`` per move.

    A constraint may tie a gene's side to another gene: ``x2 = 0`` feasible only with
    ``x4 = 0`` (``x3 x4 <= c x2 - ...``), the optimum on that face, where several
    constraints vanish identically.  A search never lands on such a face exactly, and
    the flip of ``x2`` alone stays infeasible.
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
#: that polishes back to the same point gains rounding noise; that is kept, but
#: restarting the round from it would spend the rounds on noise.
GAIN = 1e-9

#: Partner moves (a flip with one other gene sent to a bound) while the flipped genes
#: times the other continuous genes are at most this many.
PARTNER_PAIRS = 40


def bound_flips(problem, inc: Incumbent, budget: Budget):
    """Move continuous genes of a feasible incumbent that sit on a side of the box to the
    opposite side (one, then two at a time, and with a partner gene sent to a bound:
    :func:`_partner_moves`) and polish from there; keep improvements.

    Only genes on a bound are moved (at most :data:`FLIP_GENES` of them), so a problem
    whose best point is interior costs nothing here.  Same parameters and returns as
    :func:`._intsearch.integer_search`.
    """
    if not inc.feasible or not np.isfinite(inc.f):
        return inc, False
    lo, hi = problem.lower, problem.upper
    tried: set = set()
    for _ in range(ROUNDS):
        best = inc.x
        tol = 1e-9 * (1.0 + np.abs(best))
        on_lo = (~problem.integer) & (np.abs(best - lo) <= tol) & (hi > lo)
        on_hi = (~problem.integer) & (np.abs(best - hi) <= tol) & (hi > lo)
        side = np.flatnonzero(on_lo | on_hi)
        if side.size == 0 or side.size > FLIP_GENES:
            break
        partners, used = _partner_moves(problem, best, inc.pvec, side, on_lo, on_hi,
                                        budget.lend())
        budget.spend(used)
        moves = [((i,), ()) for i in side] + \
            [(pair, ()) for pair in itertools.combinations(side, 2)] + partners
        improved = False
        for move, sent in moves:
            start = inc.x.copy()  # from the point a smaller gain of this round left
            for i in move:
                start[i] = hi[i] if on_lo[i] else lo[i]
            for i, value in sent:
                start[i] = value
            key = tuple(np.round(start, 12))
            if key in tried:
                continue
            tried.add(key)
            if len(tried) > MAX_TRIES or not budget.room(20) or budget.expired():
                return inc, len(tried) <= MAX_TRIES
            x, f, V, timed_out = try_move(problem, start, inc.pvec, budget)
            if np.all(V == 0) and real_gain(problem, f, inc.f):
                # a new round of moves only from a real gain, not from rounding noise
                improved = real_gain(problem, f, inc.f, GAIN)
                inc = inc.at(x, f, V)
            if timed_out:
                return inc, True
            if improved:
                break
        if not improved:
            break
    return inc, False
