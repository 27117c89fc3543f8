"""Objective bounds and branching scores of the branch-and-bound, per box.

:func:`bound_boxes` is what one step of :func:`~._bnb.certify` asks of each box:

- a rigorous lower bound of the objective over the feasible points of the box: the
  largest of the natural interval extension of ``f`` through the node domains
  (:mod:`._nodes`), the mean-value form ``f(c) + g([x]) . ([x] - c)`` around the
  box centre with the exact gradient, and both forms of the Lagrangian
  ``f + sum_i lam_i c_i`` less ``sum |lam_eq| * eq_tol``;
- which boxes the mean-value forms of the smooth constraints prove infeasible;
- a branching score per variable: with equalities, the *relative smear* summed over
  the objective and the constraints (IbexOpt's "smear sum relative" idea): for each function,
  ``|d/dx_k| * width_k`` divided by its sum over ``k``, so a variable the objective
  does not depend on (G05's angles) is still split when the constraints that pin the
  objective's variables depend on it, and variables of different units compare.
"""

from __future__ import annotations

import torch

from ..lowering import _rt_interval as ri
from ..lowering._interval_model import box_centre, half, mean_value_form
from ._exclusion import heavy
from ._nodes import forward_nodes

__all__ = ["bound_boxes"]



def bound_boxes(model, lo, hi, P, domains: dict, eq_slack: float, eq_tol: float,
                lagrangian: bool):
    """Lower bounds, infeasibility and branching scores for the boxes ``[lo, hi]``.

    Parameters
    ----------
    model : IntervalModel
    lo, hi : Tensor, shape (N, B)
    P : Tensor, shape (n_params + n_leaves,)
        Parameters, then the multipliers.
    domains : dict
        Node domains from :func:`~._nodes.contract_nodes` on these boxes.
    eq_slack : float
        ``sum |lam_eq| * eq_tol`` (subtracted from the Lagrangian's bounds).
    eq_tol : float
    lagrangian : bool
        Whether the multipliers are non-zero (bound the Lagrangian too).

    Returns
    -------
    lower : Tensor, shape (B,)
    score : Tensor, shape (N, B)
    infeasible : Tensor of bool, shape (B,)
    """
    N, B = lo.shape
    width = torch.where(torch.isfinite(hi - lo), hi - lo, torch.finfo(lo.dtype).max)
    pairs = [(model.f, model.grad)]
    light = _light(model)
    if lagrangian and model.lagrangian is not None and light:
        pairs.append((model.lagrangian, model.lag_grad))
    mv = [(v, gr) for v, gr in pairs if gr is not None and model.smooth(v)]
    leaf_mv = list(zip(model.lag_leaves, model.jac)) if light else []
    c = box_centre(lo, hi)
    need = [v for v, _ in mv] + [n for _, gr in mv for n in gr] + [
        n for i, row in leaf_mv for n in (model.leaf_nodes[i], *row)]
    vals = model.program.forward(torch.cat([lo, c], 1), torch.cat([hi, c], 1), P,
                                 only=need) if need else {}
    nat = forward_nodes(model.program, lo, hi, P, [v for v, _ in pairs], domains)

    def part(iv, second=False):
        return half(iv, B, second)

    no = torch.zeros(B, dtype=torch.bool, device=lo.device)

    def mean_value(v, gr):
        """Mean-value enclosure ``(lo, hi, ok, [|g_k|])`` of node ``v`` on the boxes."""
        return mean_value_form(vals, v, gr, lo, hi, c)

    lower = torch.full((B,), -torch.inf, dtype=lo.dtype, device=lo.device)
    smear = torch.zeros_like(lo)
    own = None
    for k, (v, gr) in enumerate(pairs):
        slack = 0.0 if k == 0 else eq_slack
        iv = nat[v]
        vlo, vhi = iv.lo.expand(B), iv.hi.expand(B)
        b = ri.down(vlo - slack) if k else vlo
        lower = torch.maximum(lower, torch.where(vlo > vhi, torch.inf, b))
        if (v, gr) not in mv:
            continue
        acc, _, ok, mags = mean_value(v, gr)
        acc = ri.down(acc - slack)
        lower = torch.where(ok, torch.maximum(lower, acc), lower)
        if k == 0:  # the objective weighs as much as one constraint (G21: f = x1)
            sc = torch.stack(mags) * width
            own = torch.where(torch.isfinite(sc) & (sc > 0), sc, width)
            smear = smear + _relative(sc)
    infeasible = no
    for i, row in leaf_mv:  # mean-value forms of the smooth constraints
        c_lo, c_hi, ok, mags = mean_value(model.leaf_nodes[i], row)
        if model.leaves[i].kind == "eq":
            bad = (c_lo > eq_tol) | (c_hi < -eq_tol)
        else:
            bad = c_lo > 0
        infeasible = infeasible | (ok & bad)
        smear = smear + _relative(torch.stack(mags) * width)
    if own is not None and not any(model.leaves[i].kind == "eq" for i, _ in leaf_mv):
        # no equality: the objective's own smear (the width where it is 0) splits better
        # (G10's inequalities pin nothing; G05's equalities pin the objective's variables)
        return lower, own, infeasible
    score = torch.where(smear.sum(0, keepdim=True) > 0, smear, width / width.amax(0).clamp(
        min=1e-300))
    return lower, score, infeasible


def _relative(s):
    """Columns of ``s`` (shape (N, B)) divided by their sums (where a column has
    infinite entries: 1 / their count on those, 0 elsewhere)."""
    big = ~torch.isfinite(s)  # an unbounded derivative: split among those variables
    nbig = big.sum(0, keepdim=True)
    s = torch.where(big, 0.0, s)
    tot = s.sum(0, keepdim=True)
    rel = torch.where(tot > 0, s / tot.clamp(min=1e-300), 0.0)
    return torch.where(nbig > 0, big.to(s.dtype) / nbig.clamp(min=1), rel)


def _light(model) -> bool:
    """Whether the constraints' gradients are cheap enough to evaluate on every box."""
    cache = model.__dict__.setdefault("_light", {})
    if "v" not in cache:
        jac = [n for row in model.jac for n in row]
        cache["v"] = not jac or len(model.program.order_for(jac)) <= heavy(model)
    return cache["v"]
