"""An exclusion box around the incumbent, from second-order information.

First-order bounds (natural and mean-value forms) lose about ``|H| * width**2`` on a
box, so near a minimizer the branch-and-bound has to tile a whole neighbourhood with
boxes that small (the *cluster effect*, worst in many variables: G09's seven).  Around
the incumbent ``x*`` a single box ``E`` settles it instead.  With multipliers
``lam`` (``lam_i >= 0`` on inequalities) the Lagrangian ``L = f + sum_i lam_i c_i`` is at
most ``f + sum |lam_eq| * eq_tol`` at every feasible point, and by Taylor's theorem with
the Lagrange remainder, for ``x`` in ``E`` (a box containing ``x*``):

    L(x) = L(x*) + grad L(x*) . (x - x*) + 1/2 (x - x*)^T H(xi) (x - x*),   xi in E.

When every matrix of the interval Hessian ``H(E)`` is positive semidefinite (checked by
Gershgorin discs after scaling by the radii of ``E``, in outward-rounded arithmetic),
the last term is ``>= 0``, so every feasible point of ``E`` has

    f(x) >= L(x*) + min over E of grad L(x*) . (x - x*) - sum |lam_eq| * eq_tol,

all terms enclosed by interval arithmetic (the gradient and ``L(x*)`` as enclosures at
the point, the minimum as an interval product).  :func:`exclusion_box` looks for the
largest such ``E`` (relative radii ``0.3, 0.1, ...`` of the search box) whose bound is
within the prune threshold of the incumbent; the branch-and-bound then bounds every box
inside ``E`` by it.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ..lowering import _rt_interval as ri
from ..lowering._interval import IntervalProgram
from ..lowering._interval_model import graph_gradient
from ..lowering._rt_interval import Iv
from ._convexity import gershgorin_psd

__all__ = ["exclusion_box", "hessian_program", "proven_psd", "tangent_bound"]

_RADII = (0.3, 0.1, 0.03, 0.01, 3e-3, 1e-3, 3e-4, 1e-4, 3e-5, 1e-5)


def hessian_program(model):
    """``(program, value node, gradient nodes, Hessian rows)`` of the Lagrangian (of
    ``f`` without smooth constraints); None when not twice differentiable here."""
    cache = model.__dict__.setdefault("_hessian", {})
    if "h" in cache:
        return cache["h"]
    out = None
    if model.grad is not None and model.smooth(model.f):
        v, grad = model.f, model.grad
        if model.lagrangian is not None and model.smooth(model.lagrangian):
            v, grad = model.lagrangian, model.lag_grad
        g = model.program.graph
        rows = [graph_gradient(g, gk, len(grad)) for gk in grad]
        if all(r is not None for r in rows):
            roots = [v, *grad] + [n for r in rows for n in r]
            prog = IntervalProgram(g, roots)
            # the size first, then each distinct root once (a Hessian's entries are
            # mostly the one node 0: checking every entry would cost n**2 traversals)
            if len(prog.order) <= heavy(model) and all(
                    prog.is_smooth(n) for n in dict.fromkeys(roots)):
                out = (prog, v, tuple(grad), tuple(tuple(r) for r in rows))
    cache["h"] = out
    return out


def heavy(model) -> int:
    """Node count above which a derived program (constraint gradients, Hessian) costs
    more per box than it saves: 4 times the objective-and-constraints program, at least
    1000 (derived programs grow fast: gradients several times their functions, a
    Hessian several times its gradients)."""
    return max(1000, 4 * len(model.program.order_for([model.f, *model.leaf_nodes])))


def exclusion_box(model, problem, P, x, threshold: float, eq_slack: float):
    """The largest box ``E`` around ``x`` (from a few relative radii) on which every
    feasible point has an objective ``>= bound >= threshold`` (minimization sense).

    Parameters
    ----------
    model : IntervalModel
    problem : Problem
    P : Tensor, shape (n_params + n_leaves,)
        Parameters, then the multipliers the Lagrangian uses.
    x : array, shape (n,)
        The incumbent.
    threshold : float
        Bounds below it are useless (the branch-and-bound's prune threshold).
    eq_slack : float
        ``sum |lam_eq| * eq_tol``.

    Returns
    -------
    (lo, hi, bound) or None
        ``lo, hi`` float64 tensors of shape (n,), ``bound`` a float.
    """
    hp = hessian_program(model)
    if hp is None or x is None:
        return None
    prog, v, grad, rows = hp
    dt = torch.float64
    L0 = torch.tensor(np.array(problem.lower, dtype=np.float64))
    H0 = torch.tensor(np.array(problem.upper, dtype=np.float64))
    c = torch.clamp(torch.tensor(np.array(x, dtype=np.float64)), min=L0, max=H0)
    if not (torch.isfinite(L0).all() and torch.isfinite(H0).all()):
        return None
    P = P.to(dt)
    cc = c.reshape(-1, 1)
    at = prog.forward(cc, cc, P, only=[v, *grad])
    if bool(at[v].nan.any()) or any(bool(at[k].nan.any()) for k in grad):
        return None
    w0 = H0 - L0
    for r in _RADII:
        lo = torch.maximum(L0, ri.down(c - r * w0))
        hi = torch.minimum(H0, ri.up(c + r * w0))
        bound = tangent_bound(at, v, grad, lo, hi, c, eq_slack)
        if not math.isfinite(bound) or bound < threshold:
            continue
        if proven_psd(prog, v, grad, rows, lo, hi, c, P):
            return lo, hi, bound
    return None


def tangent_bound(at, v, grad, lo, hi, c, slack: float) -> float:
    """``L(c) + min over [lo, hi] of grad L(c) . (x - c) - slack``, rounded down: the
    Lagrangian's tangent plane at ``c`` (``at``: enclosures at the point ``c`` of the
    value node ``v`` and the gradient nodes ``grad``), a lower bound of ``f`` over the box
    wherever ``L`` is convex on it."""
    no = torch.zeros(1, dtype=torch.bool)
    acc = at[v].lo.reshape(1)
    for k in range(len(grad)):
        d = Iv(ri.down(lo[k:k + 1] - c[k:k + 1]), ri.up(hi[k:k + 1] - c[k:k + 1]), no)
        gk = at[grad[k]]
        t = ri.mul2(Iv(gk.lo.reshape(1), gk.hi.reshape(1), no), d)
        acc = ri.down(acc + t.lo)
    return float(ri.down(acc - slack))


def second_order_bound(model, lo, hi, P, x, eq_slack: float):
    """Second-order Taylor bound of the Lagrangian on each box, around the incumbent
    clamped into the box (``c``), less ``eq_slack``:

        L(c) + min over the box of grad L(c) . d + Q,   d = x - c,

    with ``Q`` the natural interval extension of ``1/2 sum_ij H_ij([x]) d_i d_j``
    (squares as squares), raised to 0 where the interval Hessian is proven positive
    semidefinite on the box (Gershgorin discs scaled by the radii around ``c``).  Valid
    for every feasible point of the box by Taylor's theorem with the Lagrange remainder
    (the Lagrangian is at most ``f + eq_slack`` there).

    Parameters
    ----------
    lo, hi : Tensor, shape (N, B)
    P : Tensor, shape (n_params + n_leaves,)
    x : Tensor, shape (N,)
        The incumbent.

    Returns
    -------
    Tensor, shape (B,), or None (no Hessian)
    """
    hp = hessian_program(model)
    if hp is None:
        return None
    prog, v, grad, rows = hp
    n, B = lo.shape
    c = torch.minimum(torch.maximum(x.reshape(-1, 1).to(lo.dtype), lo), hi)
    hess = [rows[i][j] for i in range(n) for j in range(i, n)]
    vals = prog.forward(torch.cat([lo, c], 1), torch.cat([hi, c], 1), P,
                        only=[v, *grad, *hess])
    no = torch.zeros(B, dtype=torch.bool, device=lo.device)

    def part(node, second):
        iv = vals[node]
        sl = slice(B, 2 * B) if second else slice(0, B)
        return iv.lo.expand(2 * B)[sl], iv.hi.expand(2 * B)[sl], iv.nan.expand(2 * B)[sl]

    v_lo, _, bad = part(v, True)
    # Taylor's theorem needs L twice differentiable on the segment from c to x: L and
    # its gradient defined on the whole box (a NaN flag anywhere gives up)
    bad = bad | part(v, False)[2]
    for k in range(n):
        bad = bad | part(grad[k], False)[2]
    acc = v_lo
    d = []
    for k in range(n):
        dk = Iv(ri.down(lo[k] - c[k]), ri.up(hi[k] - c[k]), no)
        d.append(dk)
        glo, ghi, gnan = part(grad[k], True)
        bad = bad | gnan
        acc = ri.down(acc + ri.mul2(Iv(glo, ghi, no), dk).lo)
    q = torch.zeros_like(acc)
    rad = torch.maximum(c - lo, hi - c)
    psd = torch.ones(B, dtype=torch.bool, device=lo.device)
    mags = {}
    for i in range(n):
        for j in range(i, n):
            hlo, hhi, hnan = part(rows[i][j], False)
            bad = bad | hnan
            h = Iv(hlo, hhi, no)
            if i == j:
                term = ri.mul2(Iv(0.5 * hlo, 0.5 * hhi, no), ri.powi(d[i], 2))
            else:
                term = ri.mul2(h, ri.mul2(d[i], d[j]))
            q = ri.down(q + term.lo)
            mags[i, j] = mags[j, i] = torch.maximum(hlo.abs(), hhi.abs())
            if i == j:
                psd = psd & (hlo >= 0)
    for i in range(n):
        dii = ri.down(ri.down(rad[i] * rad[i]) * part(rows[i][i], False)[0])
        off = torch.zeros_like(dii)
        for j in range(n):
            if j != i:
                off = ri.up(off + ri.up(ri.up(rad[i] * rad[j]) * mags[i, j]))
        psd = psd & (dii >= off)
    q = torch.where(psd, torch.clamp(q, min=0.0), q)
    out = ri.down(ri.down(acc + q) - eq_slack)
    return torch.where(bad | torch.isnan(out), -torch.inf, out)


def proven_psd(prog, v, grad, rows, lo, hi, c, P) -> bool:
    """Whether ``L`` is defined on the whole box and every symmetric matrix in the
    interval Hessian over ``[lo, hi]`` is
    positive semidefinite: Gershgorin discs of ``D H D`` with ``D`` the radii of the box
    around ``c``, in outward rounding (``D_i^2 H_ii - sum_j |D_i D_j H_ij| >= 0``)."""
    vals = prog.forward(lo.reshape(-1, 1), hi.reshape(-1, 1), P,
                        only=[v, *grad] + [e for r in rows for e in r])
    if any(bool(vals[k].nan.any()) for k in (v, *grad)):
        return False  # L not twice differentiable on the whole box
    return gershgorin_psd(vals, rows, torch.maximum(c - lo, hi - c))
