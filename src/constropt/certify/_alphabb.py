"""Linear cuts from alpha-BB underestimators of whole functions (issue 27, item 1).

The rows of :mod:`._relax` relax a function node by node; where a node has no rule
(``sin``, ``Abs``, ...), or where a composition loses much, the function's own curvature
still bounds it.  For a twice-differentiable function ``g`` (the objective, or a
constraint leaf) on a box ``[l, u]`` with widths ``w > 0`` and an interval Hessian
``H`` over the box (the gradient of the gradient in the same graph, evaluated in
outward-rounded interval arithmetic), take

    alpha_k >= max(0, (sum_{j != k} max|H_kj| w_j / w_k - min H_kk) / 2),

so that every matrix of ``H + 2 diag(alpha)`` is diagonally dominant after scaling by
``diag(w)`` (scaled Gershgorin) and ``phi(x) = g(x) - sum_k alpha_k (x_k - l_k)(u_k - x_k)``
is convex on the box.  Since ``phi <= g`` there, its tangent plane at any point ``p`` of
the box is below ``g``:

    g(x) >= g(p) - sum_k alpha_k (p_k - l_k)(u_k - p_k) + sum_k t_k (x_k - p_k),
    t_k = d_k g(p) - alpha_k (u_k + l_k - 2 p_k).

A convex function (every ``alpha_k = 0`` proven) gets its plain tangent planes: the
outer approximation of a convex constraint.  The cut's slope ``s`` is a float near
``t`` (its enclosure's midpoint); the right-hand side absorbs ``|t_k - s_k| max|x_k -
p_k|`` and every rounding, in outward-rounded interval arithmetic, so the cut holds in
exact arithmetic at every point of the box where ``g`` is defined (and ``g`` is then
twice differentiable on the whole box: an enclosure that may be NaN drops the cut).
:class:`AlphaCuts` makes the cuts at the box's centre and its two extreme corners, for
every box of a batch at once; :func:`~._relax.relax` adds them as rows
``z_g - s^T x >= rhs`` on the column of ``g``'s node.
"""

from __future__ import annotations

import numpy as np
import torch

from ..lowering import _rt_interval as ri
from ..lowering._interval import IntervalProgram
from ..lowering._interval_model import graph_gradient
from ..lowering._rt_interval import Iv

__all__ = ["AlphaCuts"]


def _np(v, m):
    t = v.detach().cpu().double().numpy() if hasattr(v, "detach") else np.asarray(v)
    return np.broadcast_to(t, (m,)).astype(np.float64)


def _nan(v, m):
    t = v.detach().cpu().numpy() if hasattr(v, "detach") else np.asarray(v)
    return np.broadcast_to(t, (m,)).astype(bool)


class AlphaCuts:
    """Cuts of the objective and the nonlinear constraint leaves of ``model`` that are
    twice differentiable in the graph (and pass ``only(node)``, when given; ``funcs``:
    their nodes; empty when none, or when their Hessians would cost more nodes than
    ``max_nodes``)."""

    def __init__(self, model, n_vars: int, max_nodes: int, only=None):
        g = model.program.graph
        self.n = n_vars
        self.funcs = []  # (node, gradient nodes, Hessian rows)
        roots = []
        cands = [model.f, *model.leaf_nodes]
        for node in dict.fromkeys(c for c in cands if c is not None):
            if not model.program.is_smooth(node) or (only is not None and not only(node)):
                continue
            grad = graph_gradient(g, node, n_vars)
            if grad is None:
                continue
            rows = [graph_gradient(g, gk, n_vars) for gk in grad]
            if any(r is None for r in rows):
                continue
            if all(g.nodes[e][0] == "const" and float(g.nodes[e][1]) == 0.0
                   for r in rows for e in r):
                continue  # linear: its rows in the relaxation are exact already
            self.funcs.append((node, tuple(grad), tuple(tuple(r) for r in rows)))
            roots += [node, *grad, *(e for r in rows for e in r)]
        self.prog = None
        if self.funcs:
            prog = IntervalProgram(g, list(dict.fromkeys(roots)))
            if len(prog.order) <= max_nodes and all(
                    prog.is_smooth(n) for n in dict.fromkeys(roots)):
                self.prog = prog
            else:
                self.funcs = []

    def __call__(self, lo, hi, P) -> list:
        """Cuts of the boxes ``[lo, hi]`` (tensors of shape ``(n, m)``):
        ``[(node, slopes (n, m), rhs (m,)), ...]``, ``rhs = -inf`` where a box has no
        cut (a width 0, or an enclosure that may be NaN or is not finite)."""
        if self.prog is None:
            return []
        lo, hi = lo.double(), hi.double()
        n, m = lo.shape
        mid = torch.clamp(lo + 0.5 * (hi - lo), min=lo, max=hi)
        pts = (mid, lo, hi)
        X = torch.cat(pts, 1)
        only = list(dict.fromkeys(
            x for node, grad, _ in self.funcs for x in (node, *grad)))
        at = self.prog.forward(X, X, P, only=only)
        hess = list(dict.fromkeys(e for _, _, rows in self.funcs for r in rows for e in r))
        box = self.prog.forward(lo, hi, P, only=only + hess)
        L, Hh = lo.cpu().numpy(), hi.cpu().numpy()
        W = Hh - L
        wide = np.all(W > 0, axis=0)
        no = np.zeros(m, dtype=bool)
        two = np.full(m, 2.0)
        out = []
        with np.errstate(all="ignore"):
            for node, grad, rows in self.funcs:
                bad = ~wide | _nan(box[node].nan, m)
                for gk in grad:  # differentiable on the whole box
                    bad |= _nan(box[gk].nan, m)
                alpha = np.zeros((n, m))
                for k in range(n):
                    hkk = box[rows[k][k]]
                    bad |= _nan(hkk.nan, m)
                    s = np.zeros(m)
                    for j in range(n):
                        if j == k:
                            continue
                        e = box[rows[k][j]]
                        bad |= _nan(e.nan, m)
                        mag = np.maximum(np.abs(_np(e.lo, m)), np.abs(_np(e.hi, m)))
                        s = ri.up(s + ri.up(ri.up(mag * W[j]) / np.where(wide, W[k], 1.0)))
                    a = ri.up(0.5 * ri.up(s - _np(hkk.lo, m)))
                    alpha[k] = np.where(np.isfinite(a), np.maximum(a, 0.0), np.inf)
                bad |= ~np.all(np.isfinite(alpha), axis=0)
                alpha = np.where(bad, 0.0, alpha)
                for i, p in enumerate(pts):
                    P_ = p.cpu().numpy()
                    sl = slice(i * m, (i + 1) * m)

                    def part(v, sl=sl):
                        t = v.lo.detach().cpu().double().numpy() \
                            if hasattr(v.lo, "detach") else np.asarray(v.lo)
                        th = v.hi.detach().cpu().double().numpy() \
                            if hasattr(v.hi, "detach") else np.asarray(v.hi)
                        tn = v.nan.detach().cpu().numpy() \
                            if hasattr(v.nan, "detach") else np.asarray(v.nan)
                        return (np.broadcast_to(t, (3 * m,))[sl],
                                np.broadcast_to(th, (3 * m,))[sl],
                                np.broadcast_to(tn, (3 * m,))[sl])
                    glo, ghi, gnan = part(at[node])
                    cbad = bad | gnan
                    # g(p) - sum_k alpha_k (p_k - l_k)(u_k - p_k) - sum_k s_k p_k
                    #   - sum_k |t_k - s_k| max|x_k - p_k|, all rounded down
                    acc = Iv(glo, ghi, no)
                    S = np.zeros((n, m))
                    for k in range(n):
                        dlo, dhi, dnan = part(at[grad[k]])
                        cbad = cbad | dnan
                        pk = Iv(P_[k], P_[k], no)
                        lk, uk = Iv(L[k], L[k], no), Iv(Hh[k], Hh[k], no)
                        ak = Iv(alpha[k], alpha[k], no)
                        # t_k = d_k g(p) - alpha_k (u_k + l_k - 2 p_k)
                        t = ri.sub(Iv(dlo, dhi, no),
                                   ri.mul2(ak, ri.sub(ri.add(uk, lk),
                                                      ri.mul2(Iv(two, two, no), pk))))
                        sk = 0.5 * t.lo + 0.5 * t.hi
                        sk = np.where(np.isfinite(sk), sk, 0.0)
                        delta = np.maximum(ri.up(sk - t.lo), ri.up(t.hi - sk))
                        reach = np.maximum(ri.up(P_[k] - L[k]), ri.up(Hh[k] - P_[k]))
                        bump = ri.mul2(ak, ri.mul2(ri.sub(pk, lk), ri.sub(uk, pk)))
                        err = ri.up(delta * reach)
                        acc = ri.sub(ri.sub(acc, bump), ri.mul2(Iv(sk, sk, no), pk))
                        acc = Iv(ri.down(acc.lo - err), acc.hi, no)
                        cbad = cbad | ~np.isfinite(delta)
                        S[k] = sk
                    rhs = np.where(cbad | ~np.isfinite(acc.lo), -np.inf, acc.lo)
                    if np.any(np.isfinite(rhs)):
                        out.append((node, S, rhs))
        return out
