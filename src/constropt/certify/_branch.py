"""The interval branch-and-bound behind :func:`._bnb.certify`, on torch tensors.

:func:`branch_and_bound` runs the steps of :mod:`._bnb`'s docstring over a buffer of
boxes: :func:`_setup` gathers once what every step reads (the interval model, the
Lagrange multipliers at the incumbent, the constraint targets, the exclusion box),
:class:`_Pruner` contracts, bounds and prunes new boxes, :func:`_take` chooses the boxes
to split and :func:`_bisect` splits them.  This module imports torch at its top; the
certificate's entry point imports it only when a branch-and-bound runs.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass

import numpy as np
import torch

from ..backend._devices import resolve_device
from ..problem._fbbt import problem_model
from ._bounds import _relative, bound_boxes
from ._exclusion import second_order_bound
from ._incumbents import allowance, at_incumbent, improve_step, multipliers
from ._lp import LPBounder, available
from ._nodes import contract_nodes

__all__ = ["branch_and_bound", "relative_gap", "closed", "multipliers"]

_LOG = logging.getLogger("constropt")
#: LP bounds per step at first, at most, and the share of the other parts' time the LPs
#: may take (the number per step adapts to it).
LP_START, LP_MAX, LP_SHARE = 4, 256, 1.0
#: ... the share where some node has no rows (the interval fallback: ``sin``, ``Abs``,
#: ...), so the LP sees only part of the problem; no LP branching there either.
LP_SHARE_PARTIAL = 0.25
#: Whether a box with an LP bound adds to its branching scores (normalized to sum 1) each
#: variable's share of the McCormick gaps at the LP's solution.
LP_BRANCH = True
#: Rounds of optimization-based bound tightening at the root, and the share of the time
#: limit after which no new round starts.
OBBT_ROUNDS, OBBT_SHARE = 8, 0.1
#: Bound tightening by LPs (two per variable) at nodes: the open box with the smallest
#: bound each step, while these LPs have taken less than this share of the time so far
#: (0: none).
NODE_OBBT_SHARE = 0.1


def relative_gap(U: float, L: float) -> float:
    """``(U - L) / max(|U|, 1e-9)``, at least 0; ``inf`` without an incumbent."""
    if not math.isfinite(U):
        return math.inf
    return max(0.0, (U - L) / max(abs(U), 1e-9))


def closed(U: float, L: float, gap: float) -> bool:
    """Whether the bound ``L`` meets the target: the relative gap at most ``gap``, or
    ``U - L <= gap`` (an absolute gap, as SCIP's ``limits/absgap``: near an optimum of 0
    the relative gap of two tiny numbers never closes)."""
    return math.isfinite(U) and (relative_gap(U, L) <= gap or U - L <= gap)


def _eps(gap: float, U: float) -> float:
    """Boxes whose bound is within this of ``U`` are dropped (their bound kept): half
    the target, relative to ``max(|U|, 1)`` (see :func:`closed`)."""
    return 0.5 * gap * max(abs(U), 1.0) if math.isfinite(U) else 0.0


@dataclass
class _Setup:
    """What every step of the branch-and-bound reads."""

    dev: torch.device
    dtype: torch.dtype
    batch: int
    model: object
    P: torch.Tensor          # parameters, then the multipliers
    use_lag: bool            # whether the multipliers bound the Lagrangian
    integer: torch.Tensor
    targets: list            # (node, lo, hi): the constraints and the cut f <= U
    eq_slack: float
    eq_tol: float
    eps_abs: float           # boxes whose bound is within this of U are dropped
    xt: torch.Tensor | None  # the incumbent, for the second-order bound
    excl: tuple | None       # (lo, hi, bound) of the exclusion box
    lo: torch.Tensor         # the search box, shape (N, 1)
    hi: torch.Tensor
    w0: torch.Tensor         # its widths
    gap: float = 0.0         # the target gap
    has_cut: bool = False    # whether the last target is the cut f <= U


def _setup(problem, pvec, U, x, gap, device, dtype, batch, second_order, progress) -> _Setup:
    if not isinstance(device, torch.device):  # "auto" from solve: the search's device
        device = resolve_device(device)
    dev = torch.device(device)
    dtype = dtype or torch.float64
    if batch is None:
        batch = 16384 if dev.type == "cuda" else 1024
    model = problem_model(problem, gradient=True)
    progress["mean_value"] = bool(model.grad is not None and model.smooth(model.f))
    targets = model.leaf_targets(problem.eq_tol)
    if math.isfinite(U):
        targets = targets + [(model.f, -math.inf, U)]
    lo = torch.as_tensor(problem.lower, dtype=dtype, device=dev).reshape(-1, 1)
    hi = torch.as_tensor(problem.upper, dtype=dtype, device=dev).reshape(-1, 1)
    eps_abs = _eps(gap, U)
    lam, eq_slack, P, xt, excl = at_incumbent(model, problem, pvec, U, x, eps_abs,
                                               second_order, dev, progress)
    return _Setup(dev, dtype, batch, model, P, bool(np.any(lam != 0)),
                  torch.as_tensor(problem.integer, device=dev), targets, eq_slack,
                  problem.eq_tol, eps_abs, xt, excl, lo, hi, (hi - lo)[:, 0].clamp(min=1e-300),
                  gap, math.isfinite(U))


def _root_obbt(s: _Setup, bounder, seconds: float = math.inf,
               rounds: int = OBBT_ROUNDS) -> bool:
    """Optimization-based bound tightening of the search box (in place on ``s.lo``,
    ``s.hi``), each round after forward-backward propagation, while a round shrinks
    some side by more than 1e-3 of its width (and for at most about ``seconds``); False
    when the LP proves that no point of the box is feasible with an objective at most
    the incumbent."""
    t0 = time.perf_counter()
    for _ in range(rounds):
        if time.perf_counter() - t0 > seconds:
            break
        lo, hi, empty, domains = contract_nodes(s.model.program, s.lo.double(),
                                                s.hi.double(), s.P, s.targets, s.integer)
        if bool(empty.any()):
            return True  # left to the branch-and-bound's own proof
        got = bounder.tighten(*bounder.ranges(lo, hi, s.P, domains), lo.shape[0],
                              cuts=bounder.cuts(lo, hi, s.P))
        if got is None:
            return False
        tl = torch.as_tensor(got[0], dtype=torch.float64).reshape(-1, 1)
        th = torch.as_tensor(got[1], dtype=torch.float64).reshape(-1, 1)
        nlo = torch.where(torch.isnan(tl), lo, torch.maximum(lo, tl))
        nhi = torch.where(torch.isnan(th), hi, torch.minimum(hi, th))
        if bool((nlo > nhi).any()):
            return False
        w = (s.hi.double() - s.lo.double()).clamp(min=1e-300)
        moved = float((((nlo - s.lo.double()) + (s.hi.double() - nhi)) / w).max())
        # a float32 run keeps float32 sides: round outward
        s.lo = _outward(nlo, s.dtype, down=True).to(s.dev)
        s.hi = _outward(nhi, s.dtype, down=False).to(s.dev)
        if moved < 1e-3:
            break
    return True


def _outward(v, dtype, down: bool):
    t = v.to(dtype)
    if dtype == torch.float64:
        return t
    back = t.double()
    bad = back > v if down else back < v
    step = torch.full_like(t, -math.inf if down else math.inf)
    return torch.where(bad, torch.nextafter(t, step), t)


class _Pruner:
    """Contract, bound, prune (steps 3 and 4 of :mod:`._bnb`); ``floor`` is the smallest
    bound of the boxes that left without a proof of infeasibility."""

    def __init__(self, s: _Setup, U: float, spent: dict, lp=None):
        self.s, self.U, self.spent = s, U, spent
        self.floor = torch.tensor(math.inf, dtype=torch.float64, device=s.dev)
        self.lp = lp  # an LPBounder, or None: interval bounds only
        self.m_lp = LP_START
        self.obbt_s = 0.0  # seconds of bound tightening at nodes (part of "lp")
        self.point = None  # (lo, hi, {variable: LP value}) of the last best box's LP

    def lower(self, U: float, x, problem, pvec, second_order: bool, progress) -> None:
        """A better incumbent ``U`` (minimization sense) at ``x``: the cut ``f <= U``,
        the prune threshold and what the bounds read from the incumbent
        (:func:`_at_incumbent`) follow it; every bound proven so far still holds."""
        s = self.s
        self.U = U
        s.eps_abs = _eps(s.gap, U)
        lam, s.eq_slack, s.P, s.xt, s.excl = at_incumbent(
            s.model, problem, pvec, U, x, s.eps_abs, second_order, s.dev, progress)
        s.use_lag = bool(np.any(lam != 0))
        cut = (s.model.f, -math.inf, U)
        s.targets = (s.targets[:-1] if s.has_cut else list(s.targets)) + [cut]
        s.has_cut = True
        if self.lp is not None:
            self.lp.set_targets(s.targets)

    def __call__(self, lo, hi, parent=None):
        """The surviving boxes of ``[lo, hi]`` and their bounds (at least ``parent``,
        bounds known to hold on them, where given) and scores."""
        s, U = self.s, self.U
        t_c = time.perf_counter()
        lo, hi, empty, domains = contract_nodes(s.model.program, lo, hi, s.P, s.targets,
                                                s.integer)
        t_b = time.perf_counter()
        self.spent["contract"] += t_b - t_c
        lower, score, bad = bound_boxes(s.model, lo, hi, s.P, domains, s.eq_slack, s.eq_tol,
                                        s.use_lag)
        lower = lower.double()
        if parent is not None:
            lower = torch.maximum(lower, parent)
        if s.xt is not None:
            so = second_order_bound(s.model, lo, hi, s.P, s.xt, s.eq_slack)
            if so is not None:
                lower = torch.maximum(lower, so.double())
        if s.excl is not None:  # boxes inside the exclusion box around the incumbent
            e_lo, e_hi, e_bound = s.excl
            inside = ((lo.double() >= e_lo) & (hi.double() <= e_hi)).all(0)
            lower = torch.where(inside, torch.clamp(lower, min=e_bound), lower)
        empty = empty | bad
        if self.lp is not None:
            self.spent["bound"] += time.perf_counter() - t_b
            lo, hi, lower, score, empty = self._lp_bounds(lo, hi, lower, score, empty,
                                                          domains)
            t_b = time.perf_counter()
        dead = empty | (lower > U - s.eps_abs) | torch.isnan(lower)
        near = ~empty & (lower > U - s.eps_abs) & (lower <= U)
        self.floor = torch.minimum(self.floor, torch.where(near, lower, math.inf).min())
        # boxes too small to split (every side at rounding level) leave with their bound
        tiny = ((hi - lo) <= 4 * torch.finfo(s.dtype).eps * torch.maximum(
            lo.abs(), hi.abs()).clamp(min=1e-300)).all(0)
        gone = ~dead & tiny
        self.floor = torch.minimum(self.floor, torch.where(gone, lower, math.inf).min())
        keep = ~(dead | gone)
        out = lo[:, keep], hi[:, keep], lower[keep], score[:, keep]
        self.spent["bound"] += time.perf_counter() - t_b
        return out

    def _lp_bounds(self, lo, hi, lower, score, empty, domains):
        """``(lo, hi, lower, score, empty)``: ``lower`` raised by the safe LP bounds of
        the ``m_lp`` open boxes with the smallest bounds (the ones that hold the proven
        bound down), their sides tightened by the LPs' reduced costs and, for the box
        with the smallest bound, by LPs over each variable (``NODE_OBBT_SHARE``), and
        their scores replaced by the McCormick gaps at the LP's solution
        (``LP_BRANCH``); ``m_lp`` adapts (see the end)."""
        open_ = ~empty & (lower <= self.U - self.s.eps_abs) & ~torch.isnan(lower)
        k = min(self.m_lp, int(open_.sum()))
        if k == 0:
            return lo, hi, lower, score, empty
        t0 = time.perf_counter()
        idx = torch.topk(-torch.where(open_, lower, math.inf), k).indices
        sub = {n: (d[0][idx], d[1][idx]) for n, d in domains.items()
               if d[0].dim() == 1 and d[0].shape[0] == lower.shape[0]}
        slo, shi = lo[:, idx].double(), hi[:, idx].double()
        ranges, consts = self.lp.ranges(slo, shi, self.s.P, sub)
        cuts = self.lp.cuts(slo, shi, self.s.P)
        lb = self.lp.bounds(ranges, consts, k, cuts=cuts)
        if self.lp.first:  # a start for the local solves: the best box's LP point
            self.point = (slo[:, 0].cpu().numpy(), shi[:, 0].cpu().numpy(), self.lp.first)
        tl = torch.as_tensor(self.lp.tight[0], dtype=torch.float64, device=lo.device)
        th = torch.as_tensor(self.lp.tight[1], dtype=torch.float64, device=lo.device)
        if NODE_OBBT_SHARE > 0 and math.isfinite(lb[0]) and lb[0] <= self.U \
                and self.obbt_s < NODE_OBBT_SHARE * sum(self.spent.values()):
            t_o = time.perf_counter()
            got = self.lp.tighten({n: (a[:1], b[:1], u[:1]) for n, (a, b, u)
                                   in ranges.items()}, consts, lo.shape[0],
                                  cuts=[(c, S[:, :1], r[:1]) for c, S, r in cuts])
            if got is None:  # no feasible point with f <= U in the box
                lb[0] = math.inf
            else:
                ol = torch.as_tensor(got[0], dtype=torch.float64, device=lo.device)
                oh = torch.as_tensor(got[1], dtype=torch.float64, device=lo.device)
                tl[:, 0] = torch.where(torch.isnan(ol), tl[:, 0],
                                       torch.fmax(tl[:, 0], ol))
                th[:, 0] = torch.where(torch.isnan(oh), th[:, 0],
                                       torch.fmin(th[:, 0], oh))
            self.obbt_s += time.perf_counter() - t_o
        nlo = torch.where(torch.isnan(tl), slo, torch.maximum(slo, tl))
        nhi = torch.where(torch.isnan(th), shi, torch.minimum(shi, th))
        lo, hi, empty = lo.clone(), hi.clone(), empty.clone()
        # a float32 run keeps float32 sides: round outward
        lo[:, idx] = _outward(nlo, lo.dtype, down=True)
        hi[:, idx] = _outward(nhi, hi.dtype, down=False)
        # sides that cross: no point of the box is feasible with f <= U
        empty[idx] = empty[idx] | (nlo > nhi).any(0)
        lb = torch.as_tensor(lb, dtype=torch.float64, device=lower.device)
        lower = lower.clone()
        # an LP helps a box when it closes at least 1e-3 of the box's gap to U
        helped = lb > lower[idx] + 1e-3 * (self.U - lower[idx]).clamp(min=0.0)
        _LOG.debug("certify: %d LPs raise %d bounds", k, int(helped.sum()))
        lower[idx] = torch.maximum(lower[idx], lb)
        if LP_BRANCH and self.lp.covered:  # split where the relaxation is loosest too
            gaps = torch.as_tensor(self.lp.gaps, dtype=score.dtype, device=score.device)
            has = (gaps.sum(0) > 0) & helped  # where the LP bound is the better one
            score = score.clone()
            old = _relative(score[:, idx])
            score[:, idx] = torch.where(has, old + _relative(gaps), score[:, idx])
        t_lp = time.perf_counter() - t0
        self.spent["lp"] = self.spent.get("lp", 0.0) + t_lp
        rest = sum(v for key, v in self.spent.items() if key != "lp")
        # more LPs while they take less time than ``share`` of the rest and help a
        # quarter of the boxes they are asked for; fewer (down to one per step) otherwise
        useful = int(helped.sum()) >= max(1, k // 4)
        share = LP_SHARE if self.lp.covered else LP_SHARE_PARTIAL
        self.m_lp = min(LP_MAX, 2 * self.m_lp) \
            if self.spent["lp"] < share * rest and useful else max(1, self.m_lp // 2)
        return lo, hi, lower, score, empty

    def fold(self, lo, hi, lb, score, max_boxes: int):
        """The last resort of a full buffer: its worst boxes leave, their bound folded
        into ``floor``."""
        over = lb.numel() - max_boxes
        worst = torch.topk(lb, over).indices
        m = torch.ones(lb.numel(), dtype=torch.bool, device=self.s.dev)
        m[worst] = False
        self.floor = torch.minimum(self.floor, lb[worst].min())
        return lo[:, m], hi[:, m], lb[m], score[:, m]


def branch_and_bound(problem, pvec, U, x, gap, time_limit, device, dtype, batch, max_boxes,
                     target_time, t0, spent, progress, second_order: bool = True,
                     lp: bool = False, improve=None) -> bool:
    """The branch-and-bound of :func:`._bnb.certify` (``U``: the incumbent in
    minimization sense).  ``spent`` gathers the seconds per part and ``progress`` the
    last proven bound ``L`` (minimization sense), the boxes so far and whether the
    mean-value form is used, which a Ctrl-C leaves behind.  With ``lp`` (and HiGHS
    installed) the boxes with the smallest bounds also get the safe bound of their LP
    relaxation (:mod:`._lp`); ``progress["lps"]`` counts them.

    ``improve``, where given, is a local solver for incumbents: ``improve(x0, U,
    seconds)`` returns ``(f, x, payload)`` for a feasible point ``x`` (checked as a
    reported point is) with objective ``f < U`` (minimization sense), or None; it runs at
    most once per step, from the LP point of the best box (else its midpoint), for the
    seconds that keep such solves within :data:`._incumbents.INCUMBENT_SHARE` of the
    time so far (``spent["incumbent"]``).  A point better than ``U`` by more than the
    prune threshold lowers ``U``, the cut ``f <= U``, the prune threshold and what the
    bounds read from the incumbent from the next boxes on
    (:func:`._incumbents.improve_step`); ``progress`` keeps ``U`` and ``found`` (the last
    ``payload``).  Returns whether the search box is proven to hold no feasible point."""
    s = _setup(problem, pvec, U, x, gap, device, dtype, batch, second_order, progress)
    bounder = None
    # a Lagrangian proven convex bounds the whole box at once: no LP would add to it
    if lp and s.model.f is not None and not problem.has_vector_variables \
            and not progress["convex"] and available():
        bounder = LPBounder(s.model, s.targets, s.model.n_params)
        progress["lp"] = bounder
    spent["setup"] = time.perf_counter() - t0
    prune = _Pruner(s, U, spent, bounder)
    lo, hi, lb, score = prune(s.lo, s.hi)
    progress["U"] = U
    if improve is not None and lb.numel() and not closed(U, float(lb.min()), gap) \
            and allowance(spent, t0) > 0:
        # a local solve from the root's LP point first: a better incumbent makes the
        # cut f <= U of the bound tightening below stronger
        U, (lo, hi, lb, score) = improve_step(improve, U, lo, hi, lb, score, prune, s, spent,
                                         progress, problem, pvec, second_order, t0)
    if bounder is not None and lb.numel() and not closed(U, float(lb.min()), gap):
        # the root's bounds did not close the gap: tighten the search box by LPs, and
        # start again from the tightened box
        t_lp = time.perf_counter()
        ok = _root_obbt(s, bounder, OBBT_SHARE * time_limit)
        spent["lp"] = spent.get("lp", 0.0) + time.perf_counter() - t_lp
        if not ok:  # no feasible point better than U in the box
            progress["L"], progress["boxes"] = U, 1
            return not math.isfinite(U)
        lo, hi, lb, score = prune(s.lo, s.hi)
    boxes = 1
    times = target_time if target_time is not None else {}
    while True:
        n = lb.numel()
        if improve is not None and n and allowance(spent, t0) > 0 \
                and not closed(U, float(lb.min()), gap):
            U, (lo, hi, lb, score) = improve_step(improve, U, lo, hi, lb, score, prune, s,
                                             spent, progress, problem, pvec, second_order, t0)
            n = lb.numel()
        L = min(U, float(torch.minimum(prune.floor, lb.min() if n else prune.floor)))
        progress["L"], progress["boxes"] = L, boxes  # proven: every box is accounted for
        g = relative_gap(U, L)
        elapsed = time.perf_counter() - t0
        for t in (1e-4, 1e-6):
            if g <= t and t not in times:
                times[t] = elapsed
        _LOG.debug("certify: step n=%d L=%r gap=%.3g t=%.2f", n, L, g, elapsed)
        if n == 0 or closed(U, L, gap) or elapsed > time_limit:
            break
        k = min(s.batch, n)
        (slo, shi, ss, slb), (lo, hi, lb, score) = _take(lo, hi, lb, score, k,
                                                         n + 2 * k > max_boxes, s)
        # bisect along the largest score, several times when the buffer is small (fewer
        # steps: each costs the same fixed overhead of a few thousand tensor operations)
        reps = max(1, min(3, int(math.log2(max(s.batch // k, 1)))))
        for _ in range(reps):
            slo, shi, ss = _bisect(slo, shi, ss, s.integer)
            slb = torch.cat([slb, slb])
        # with LPs, children keep their parent's bound (an LP bound is not recomputed
        # on every child; a parent's bound holds on its parts)
        clo, chi, clb, cs = prune(slo, shi, slb if bounder is not None else None)
        boxes += slo.shape[1]
        lo, hi = torch.cat([lo, clo], 1), torch.cat([hi, chi], 1)
        lb, score = torch.cat([lb, clb]), torch.cat([score, cs], 1)
        if lb.numel() > max_boxes:
            lo, hi, lb, score = prune.fold(lo, hi, lb, score, max_boxes)
    if _LOG.isEnabledFor(logging.DEBUG) and lb.numel():
        for j in torch.argsort(lb)[:5].tolist():
            _LOG.debug("certify: worst box %r %s %s", float(lb[j]), lo[:, j].tolist(),
                       hi[:, j].tolist())
    return not math.isfinite(U) and lb.numel() == 0 and not math.isfinite(float(prune.floor))


def _take(lo, hi, lb, score, k: int, depth_first: bool, s: _Setup):
    """``((lo, hi, score, lb) of the k boxes to split, (lo, hi, lb, score) of the rest)``:
    the smallest lower bounds (best first) or, ``depth_first``, the smallest boxes
    (which drains a nearly full buffer)."""
    if depth_first:
        size = ((hi - lo) / s.w0.reshape(-1, 1)).amax(0)
        idx = torch.topk(-size, k).indices
    else:
        idx = torch.topk(-lb, k).indices
    take = torch.zeros(lb.numel(), dtype=torch.bool, device=s.dev)
    take[idx] = True
    return ((lo[:, take], hi[:, take], score[:, take], lb[take]),
            (lo[:, ~take], hi[:, ~take], lb[~take], score[:, ~take]))


def _bisect(lo, hi, score, integer):
    """Split every box in two along its largest ``score`` (integers between two
    integers); the children's score on that side is halved."""
    k = lo.shape[1]
    dim = torch.argmax(score, 0)
    cols = torch.arange(k, device=lo.device)
    a, b = lo[dim, cols], hi[dim, cols]
    mid = a + 0.5 * (b - a)
    mid = torch.where(torch.isfinite(mid), mid, torch.where(torch.isfinite(a), a + 1.0, b - 1.0))
    is_int = integer[dim]
    left_hi = torch.where(is_int, torch.floor(mid), mid)
    right_lo = torch.where(is_int, torch.floor(mid) + 1, mid)
    lhi, rlo = hi.clone(), lo.clone()
    lhi[dim, cols] = left_hi
    rlo[dim, cols] = right_lo
    s2 = score.clone()
    s2[dim, cols] = score[dim, cols] / 2
    return torch.cat([lo, rlo], 1), torch.cat([lhi, hi], 1), torch.cat([s2, s2], 1)
