"""Interval branch-and-bound over the integer genes, where the flat screen does not apply.

The integer search (:mod:`._intsearch`) screens every assignment of the integer genes
when there are at most :data:`._intsearch.SCREEN_ENUMERATE` of them.  Past that (two
integers in ``[0, 200]`` give 40,401 assignments) its single and pair moves reach only
a few steps from where the search ended, and an optimum several steps past infeasible
assignments stays out of reach.

:func:`branch_and_bound` searches the integer genes' box instead.  A node is a box:
the integer genes over a range, the other genes over what propagation left of their
range.  Each node is contracted by forward-backward interval propagation
(:meth:`~constropt.lowering._interval.IntervalProgram.contract`, the model of
:func:`constropt.problem._fbbt.problem_model`) on the constraints (``|h| <= eq_tol``)
and on ``f <= f_best``, integer bounds rounded inward; a node that empties, or whose
objective's lower bound is not below the incumbent, holds no better feasible point and
is dropped (rigorous, as in the screen).  The others are split on their widest integer
gene at an integer midpoint.  A node whose integer genes are all fixed is a leaf.  A
leaf is first tightened (:func:`_refine`: its continuous genes bisected
:data:`REFINE` times, every piece contracted, the hull of the surviving pieces and their
least bound kept), since one contraction bounds the objective loosely where it couples
continuous genes.  A leaf that still beats
the incumbent has its continuous genes polished from the best point (clipped into the
leaf's box, 1% of its width inside its sides: :func:`start_in`) as in the integer
search, leaves in the order of their lower bounds, best first; a feasible polished point
better than the incumbent becomes the incumbent and tightens the cut.

When it runs: :func:`._intsearch.integer_search` calls it where the flat screen does
not apply (some integer gene has more than :data:`._intsearch.LINE_VALUES` values and no
allowed set of its own, or there are more than ``SCREEN_ENUMERATE`` assignments); it
returns None (nothing done) where an integer range is infinite or a construct has no
inclusion function.

It runs after the local moves and keeps a point only when it is feasible and better,
so it never makes a result worse; from an infeasible best point (the polish holds the
integer genes fixed, so an infeasible assignment stays infeasible) any feasible leaf
is better.  Bounded by :data:`NODE_LIMIT` contracted boxes (leaf pieces included),
:data:`LEAF_LIMIT` polished leaves, the evaluation budget and the deadline.  Interval
work is not counted as evaluations (as in the screen); polishes are.  Cases behind
these rules: ``benchmarks/results/finishing_cases.md``.
"""

from __future__ import annotations

import heapq
import math

import numpy as np

from ..problem._fbbt import problem_model
from ._budget import Budget, Incumbent

__all__ = ["branch_and_bound", "start_in", "NODE_LIMIT", "LEAF_LIMIT", "BATCH", "REFINE",
           "REFINE_WIDTH", "BOX_INSIDE"]

#: Boxes contracted at most (each split contracts two; leaf pieces count too).
NODE_LIMIT = 4000
#: Leaves polished at most.
LEAF_LIMIT = 64
#: Nodes split per step (their children are contracted in one vectorized call).
BATCH = 64
#: Bisections of a leaf's continuous genes before it is polished.
REFINE = 6
#: Pieces narrower than this share of the box (in every continuous gene) are not
#: bisected further (an equality may fix a continuous gene on a leaf).
REFINE_WIDTH = 1e-3


#: Share of a contracted box's width (each side) a polish start keeps from its sides.
BOX_INSIDE = 0.01


def start_in(best, lo, hi):
    """``best`` (n,) clipped into the box ``[lo, hi]`` shrunk by :data:`BOX_INSIDE` of
    its (finite) width on each side: a start that is not on a side the propagation drew
    (SLSQP started on the outward-rounded end of a thin band an equality fixes spends
    its line searches there)."""
    w = np.where(np.isfinite(hi - lo), hi - lo, 0.0)
    return np.clip(best, lo + BOX_INSIDE * w, hi - BOX_INSIDE * w)


def contract_boxes(problem, model, lo, hi, U, pvec):
    """Contract the boxes ``[lo, hi]`` (n, K) by the constraints and ``f <= U``
    (minimized sense).  Returns ``(lo, hi, lb)``: the contracted boxes and the lower
    bounds (K,) of the objective over them, +inf where a box holds no such point."""
    K = lo.shape[1]
    targets = model.leaf_targets(problem.eq_tol) + [(model.f, -math.inf, U)]
    P = np.asarray(pvec, dtype=np.float64).reshape(-1)
    with np.errstate(all="ignore"):  # inf - inf and 0 * inf are enclosed by design
        lo, hi, empty = model.program.contract(lo, hi, P, targets,
                                               np.asarray(problem.integer), rounds=2)
        f = model.program.forward(lo, hi, P, only=[model.f])[model.f]
    lb = np.asarray(f.lo, dtype=np.float64).reshape(K)
    empty = np.asarray(empty).reshape(K) | np.isnan(lb)
    return np.asarray(lo), np.asarray(hi), np.where(empty, np.inf, lb)


def _split_ints(problem, model, lo, hi, U, pvec, ints, cont, width):
    """Halve each box (n, K) on its widest integer gene at an integer midpoint and
    contract the halves: ``(lo, hi, lb, owner, contracted)``, ``owner`` (2K,) the box
    each half came from."""
    K = lo.shape[1]
    cols = np.arange(K)
    at = ints[np.argmax(hi[ints] - lo[ints], axis=0)]
    mid = np.floor((lo[at, cols] + hi[at, cols]) / 2.0)
    lo2, hi2 = np.concatenate([lo, lo], 1), np.concatenate([hi, hi], 1)
    hi2[at, cols] = mid
    lo2[at, K + cols] = mid + 1.0
    lo2, hi2, lb2 = contract_boxes(problem, model, lo2, hi2, U, pvec)
    return lo2, hi2, lb2, np.concatenate([cols, cols]), 2 * K


def _refine(problem, model, lo, hi, U, pvec, ints, cont, width):
    """Tighten the bounds of leaves (n, K) (integer genes fixed): bisect their continuous
    genes :data:`REFINE` times (widest relative to the problem's box first), contract
    every piece, and keep the hull of the pieces that survive and the least of their
    lower bounds (+inf where none survives).  Returns ``(lo, hi, lb, owner,
    contracted)`` with ``owner = arange(K)``."""
    K = lo.shape[1]
    owner = np.arange(K)
    lb = np.full(K, -np.inf)
    used = 0
    for _ in range(REFINE if cont.size else 0):
        with np.errstate(invalid="ignore"):
            rel = (hi[cont] - lo[cont]) / width[:, None]
        rel = np.where(np.isfinite(rel), rel, 0.0)
        go = np.flatnonzero(rel.max(axis=0) > REFINE_WIDTH)
        if go.size == 0:
            break
        at = cont[np.argmax(rel[:, go], axis=0)]
        mid = (lo[at, go] + hi[at, go]) / 2.0
        lo2, hi2 = lo[:, go].copy(), hi[:, go].copy()
        lo3, hi3 = lo2.copy(), hi2.copy()
        hi2[at, np.arange(go.size)] = mid
        lo3[at, np.arange(go.size)] = mid
        lo2, hi2, lb2 = contract_boxes(problem, model, np.concatenate([lo2, lo3], 1),
                                  np.concatenate([hi2, hi3], 1), U, pvec)
        used += lb2.size
        stay = np.setdiff1d(np.arange(lo.shape[1]), go)
        lo = np.concatenate([lo[:, stay], lo2], 1)
        hi = np.concatenate([hi[:, stay], hi2], 1)
        lb = np.concatenate([lb[stay], lb2])
        owner = np.concatenate([owner[stay], owner[go], owner[go]])
        keep = lb < U
        lo, hi, lb, owner = lo[:, keep], hi[:, keep], lb[keep], owner[keep]
    out_lo = np.full((lo.shape[0], K), np.inf)
    out_hi = np.full((lo.shape[0], K), -np.inf)
    out_lb = np.full(K, np.inf)
    np.minimum.at(out_lb, owner, lb)
    for k in np.unique(owner):
        mine = owner == k
        out_lo[:, k] = lo[:, mine].min(axis=1)
        out_hi[:, k] = hi[:, mine].max(axis=1)
    return out_lo, out_hi, out_lb, np.arange(K), used


def branch_and_bound(problem, inc: Incumbent, budget: Budget, polish):
    """Best-first interval branch-and-bound over the integer genes' box, polishing the
    leaves; keeps a feasible point better than the incumbent (any feasible one when the
    incumbent is infeasible).

    Parameters
    ----------
    problem : Problem
        Every integer gene must have a finite range.
    inc : Incumbent
        The best point so far.
    budget : Budget
        The instance's evaluations and deadline; the polishes add theirs.
    polish : callable
        ``polish(problem, start, pvec, budget) -> (x, f, V, timed_out)``: the integer
        search's polish of one assignment (:func:`._intsearch.try_move`), continuous
        genes from ``start`` (n,).

    Returns
    -------
    tuple or None
        ``(incumbent, stop)`` as :func:`._intsearch.integer_search`; None when the
        problem has no interval model (a construct without an inclusion function) or an
        integer range is not finite.
    """
    ints = np.flatnonzero(problem.integer)
    lo0 = np.asarray(problem.lower, dtype=np.float64).copy()
    hi0 = np.asarray(problem.upper, dtype=np.float64).copy()
    lo0[ints] = np.ceil(lo0[ints] - 1e-9)
    hi0[ints] = np.floor(hi0[ints] + 1e-9)
    if ints.size == 0 or not np.all(np.isfinite(lo0[ints]) & np.isfinite(hi0[ints])):
        return None
    sign = -1.0 if problem.maximize else 1.0
    feasible = inc.feasible and bool(np.isfinite(inc.f))
    U = sign * inc.f if feasible else math.inf
    tried = {tuple(np.round(inc.x[ints]))} if feasible else set()
    try:
        model = problem_model(problem)
        lo, hi, lb = contract_boxes(problem, model, lo0[:, None], hi0[:, None], U, inc.pvec)
    except Exception:  # a construct without an inclusion function: no branch-and-bound
        return None
    cont = np.flatnonzero(~np.asarray(problem.integer))
    width = hi0[cont] - lo0[cont]
    width = np.where(np.isfinite(width) & (width > 0), width, np.inf)  # inf: never split
    heap = _Heap()
    heap.push(lo, hi, lb, False, U)
    nodes, leaves = 1, 0
    while heap.below(U):
        if budget.expired():
            return inc, True
        split, fresh = [], []
        for lb_k, _, refined, lo_k, hi_k in heap.pop_batch(U):
            if np.any(lo_k[ints] < hi_k[ints]):
                split.append((lo_k, hi_k, lb_k))
                continue
            key = tuple(lo_k[ints])
            if not lb_k < U or key in tried:
                continue
            if not refined:
                fresh.append((lo_k, hi_k, lb_k))
                continue
            if leaves >= LEAF_LIMIT:
                return inc, False
            if not budget.room(20):
                return inc, True
            tried.add(key)
            leaves += 1
            start = start_in(inc.x, lo_k, hi_k)
            start[ints] = lo_k[ints]
            x, f, V, timed_out = polish(problem, start, inc.pvec, budget)
            if np.all(V == 0) and np.isfinite(f) and sign * f < U:
                inc, U = inc.at(x, f, V), sign * f
            if timed_out:
                return inc, True
        if nodes >= NODE_LIMIT:
            break
        nodes += _grow(problem, model, heap, split, fresh, U, inc.pvec, ints, cont, width)
    return inc, False


class _Heap:
    """The open nodes, least lower bound first (ties: first pushed first)."""

    def __init__(self):
        self.items: list = []
        self.count = 0

    def push(self, lo, hi, lb, refined: bool, U: float) -> None:
        """Push the boxes (columns of ``lo``, ``hi``) whose bound ``lb`` is below ``U``."""
        for k in np.flatnonzero(lb < U):
            heapq.heappush(self.items, (float(lb[k]), self.count, refined, lo[:, k], hi[:, k]))
            self.count += 1

    def below(self, U: float) -> bool:
        """Whether an open node's bound is below ``U``."""
        return bool(self.items) and self.items[0][0] < U

    def pop_batch(self, U: float) -> list:
        """Up to :data:`BATCH` nodes whose bound is below ``U``, best first."""
        batch = []
        while self.below(U) and len(batch) < BATCH:
            batch.append(heapq.heappop(self.items))
        return batch


def _grow(problem, model, heap: _Heap, split, fresh, U, pvec, ints, cont, width) -> int:
    """Split the nodes ``split`` (:func:`_split_ints`) and tighten the leaves ``fresh``
    (:func:`_refine`), push the results that may still beat ``U``; returns the boxes
    contracted."""
    nodes = 0
    for group, step in ((split, _split_ints), (fresh, _refine)):
        if group:
            parent = np.array([g[2] for g in group])
            lo2, hi2, lb2, owner, used = step(
                problem, model, np.stack([g[0] for g in group], 1),
                np.stack([g[1] for g in group], 1), U, pvec, ints, cont, width)
            nodes += used
            heap.push(lo2, hi2, np.maximum(lb2, parent[owner]), step is _refine, U)
    return nodes
