"""Node domains for the branch-and-bound: ranges of intermediate expressions.

Backward propagation (:meth:`IntervalProgram.contract`) works out, for every node on a
strict path below a constraint, a range that node must lie in at each feasible point of
the box (``0.063 <= y15`` in G16 says so about ``y15`` itself, not only about the
variables it depends on).  The plain forward pass forgets them and recomputes ``y15``
from the box, where a denominator may still straddle 0.  Here the ranges are kept
(*node domains*) and intersected with the forward enclosures of the next passes.

Valid only for bounds over the **feasible points** of a box (contraction, the natural
interval extension of the objective): a node domain says nothing about the infeasible
points a mean-value form's gradient is evaluated over, so gradients never use them.
"""

from __future__ import annotations

import torch

from ..lowering._interval_ops import ops
from ..lowering._rt_interval import Iv

__all__ = ["contract_nodes", "forward_nodes"]


def forward_nodes(program, lo, hi, P, only, domains: dict) -> dict:
    """:meth:`IntervalProgram.forward` with every node enclosure intersected with its
    domain (``{node: (lo, hi)}``, shape ``(B,)`` each).  Where a domain and an enclosure
    are disjoint the result is empty (``lo > hi``): no feasible point."""
    g = program.graph
    xp = ops(lo)
    like = xp.asarray(0.0, lo)
    vals: dict = {}
    for n in program.order_for(only):
        v = program._node(g.nodes[n], vals, lo, hi, P, like, xp)
        d = domains.get(n)
        if d is not None and isinstance(v, Iv) and v.lo.shape == d[0].shape:
            v = Iv(torch.maximum(v.lo, d[0]), torch.minimum(v.hi, d[1]), v.nan)
        vals[n] = v
    return vals


def contract_nodes(program, lo, hi, P, targets, integer=None, rounds: int = 1):
    """Forward-backward propagation keeping node domains between sweeps.

    Parameters
    ----------
    program : IntervalProgram
    lo, hi : Tensor, shape (N, B)
    P : Tensor, shape (n_params,)
    targets : list of (node, t_lo, t_hi)
    integer : Tensor of bool, shape (N,), optional
    rounds : int

    Returns
    -------
    lo, hi : Tensor, shape (N, B)
    empty : Tensor of bool, shape (B,)
        Boxes proven to hold no point where every target holds.
    domains : dict
        ``{node: (lo, hi)}``: ranges of the nodes at the feasible points of each box
        (pass them to :func:`forward_nodes`).
    """
    nodes = [t[0] for t in targets]
    order = program.order_for(nodes)
    empty = torch.zeros(lo.shape[1:], dtype=torch.bool, device=lo.device)
    domains: dict = {}
    for _ in range(rounds):
        vals = forward_nodes(program, lo, hi, P, nodes, domains)
        want: dict = {}
        lo, hi, emp = program._backward(vals, lo, hi, targets, order, want)
        if integer is not None and bool(integer.any()):
            col = integer.reshape(-1, *([1] * (lo.dim() - 1)))
            lo = torch.where(col, torch.ceil(lo), lo)
            hi = torch.where(col, torch.floor(hi), hi)
        empty = empty | emp | (lo > hi).any(0)
        for n, t in want.items():
            if t.lo.shape == empty.shape:
                domains[n] = (t.lo, t.hi)
    return lo, hi, empty, domains

