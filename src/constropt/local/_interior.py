"""A batched primal-dual interior-point method and the local optimality test of its
answers (the local solves of ``solve_batch(local_first=...)``,
:mod:`constropt.solver._localfirst`).

- :func:`applicable`: why local solves cannot answer a problem's instances (integers,
  equalities, ``Or``, too many genes, an unbounded box, no exact derivatives), or None;
- :func:`interior_point`: Newton on the perturbed KKT conditions with slacks, exact
  gradients from the lowering, the Hessian of the Lagrangian by central differences of
  its exact gradient (:func:`_hessian`), every start of every instance in one
  vectorized run;
- :func:`kkt_test`: feasible points that are KKT points (stationary, multipliers of the
  right sign, bound-held genes pushed the right way) with a reduced Hessian that is not
  negative (second order);
- :func:`_settle`: the batched Newton polish that lands the points on their active
  boundaries, with the float64 check of each.
"""

from __future__ import annotations

import numpy as np
import sympy as sp

from ..problem._evaluate import report_numpy
from ..problem._scipy import conjunctive_leaves
from ._newton import evaluators, near_active, polish_batch

__all__ = ["applicable", "interior_point", "kkt_test", "IPM_ITERS", "MAX_GENES"]

#: Iterations of the interior-point method (most starts converge in 7-16; one that has
#: not by then is left to the others: the vectorized loop runs as long as its slowest).
IPM_ITERS = 30
#: ``local_first="auto"`` only below this many genes (the Hessian by differences costs
#: ``2 n`` derivative evaluations per point and iteration).
MAX_GENES = 30
#: The longest primal step of the interior point, per gene, as a fraction of its box width.
STEP_CAP = 0.2


def applicable(problem) -> str | None:
    """Why local solves cannot answer this problem's instances (None: they can)."""
    if problem.integer.any():
        return "integer variables"
    if any(lf.kind == "eq" for lf in problem.leaves):
        return "equality constraints"
    if len(conjunctive_leaves(problem)) != len(problem.leaves):
        return "constraints with Or"
    if problem.n > MAX_GENES:
        return f"more than {MAX_GENES} variables"
    if not np.all(np.isfinite(problem.lower) & np.isfinite(problem.upper)):
        return "an unbounded search box"
    if evaluators(problem) is None:
        return "no exact derivatives"
    if _may_have_a_pole(problem.objective, set(problem.variables)):
        return "an objective with a divisor or logarithm of the variables (a pole)"
    return None


#: Functions of the variables that diverge at finite arguments (``atanh`` at +-1, the
#: closed ends of its domain in lowering/_functions.py).
_SINGULAR = (sp.log, sp.tan, sp.cot, sp.sec, sp.csc, sp.coth, sp.csch, sp.atanh)


def _may_have_a_pole(expr, variables) -> bool:
    """Whether ``expr`` divides by (a negative power) or takes a singular function of an
    expression of the ``variables`` that sympy cannot prove nonzero.  Local solves see
    only the basins of their starts: every start can end at the same box corner, a true
    local minimum, while the objective runs to minus infinity at a pole elsewhere in the
    box (``1 / (x - y + a)``), so such problems are left to the global search."""
    stack = [expr]
    while stack:
        e = stack.pop()
        if not isinstance(e, sp.Basic) or not (e.free_symbols & variables):
            continue
        if isinstance(e, sp.Pow) and e.exp.is_negative is not False and \
                e.base.free_symbols & variables and e.base.is_nonzero is not True:
            return True
        if isinstance(e, _SINGULAR):
            return True
        stack.extend(e.args)
    return False


def _hessian(ders, x, P, lam, rows, h_rel=1e-6):
    """(k, N, N): the Hessian of ``f + lam . C[rows]`` by central differences of its
    exact gradient, symmetrized, non-finite entries as 0."""
    N, k = x.shape
    h = h_rel * (1.0 + np.abs(x))                                               # (N, k)
    pts = np.repeat(x[:, :, None], 2 * N, axis=2)                               # (N, k, 2N)
    cols = np.arange(N)
    pts[cols, :, cols] += h
    pts[cols, :, N + cols] -= h
    gp, Jp = ders(pts.reshape(N, -1), np.repeat(P, 2 * N, axis=1))
    lr = np.repeat(lam, 2 * N, axis=1)                                          # (m, k 2N)
    gl = (gp + np.einsum("lnj,lj->nj", Jp[rows], lr)).reshape(N, k, 2 * N)
    H = np.transpose((gl[:, :, :N] - gl[:, :, N:]) / (2 * h.T[None]), (1, 0, 2))
    H = 0.5 * (H + np.transpose(H, (0, 2, 1)))
    return np.nan_to_num(H, nan=0.0, posinf=0.0, neginf=0.0)


def interior_point(problem, X0: np.ndarray, M: np.ndarray, iters: int = IPM_ITERS,
                   first_of: int | None = None):
    """A batched primal-dual interior-point method from ``X0`` (N, k), parameters ``M``
    (n_p, k): ``min f`` subject to the inequality leaves and the box, slacks ``s > 0``,
    multipliers ``z > 0``, Mehrotra's predictor-corrector, steps kept inside by the
    fraction-to-the-boundary rule and no longer than :data:`STEP_CAP`.  ``first_of``
    (A), for a problem proven convex: the columns are ``k / A`` starts of ``A``
    instances (column ``t A + a``: start ``t`` of instance ``a``), an instance's starts
    stop once one has converged (any KKT point answers it), and the Lagrangian's
    Hessian is taken as positive semidefinite (no eigenvalues: Mehrotra's steps
    throughout, the system shifted by ``1e-9`` of its Hessian's largest entry, the error
    of its differences).  Returns ``(X (N, k), converged (k,),
    iterations (k,))``; points are clipped to the box."""
    vals, ders = evaluators(problem)
    N, k = X0.shape
    rows = np.array(conjunctive_leaves(problem), dtype=np.int64)
    lo, hi = problem.lower[:, None], problem.upper[:, None]
    m = rows.size + 2 * N
    x = np.clip(np.asarray(X0, dtype=np.float64), lo, hi)
    f, C = vals(x, M)
    G = np.concatenate([C[rows], lo - x, x - hi])
    s = np.maximum(-G, 1e-2 * (1.0 + np.abs(G)))
    s = np.where(np.isfinite(s), s, 1.0)
    z = np.ones((m, k))
    running = np.all(np.isfinite(G), axis=0)
    conv = np.zeros(k, dtype=bool)
    its = np.zeros(k, dtype=np.int64)
    with np.errstate(all="ignore"):
        _ipm_loop(vals, ders, M, iters, rows, lo, hi, x, s, z, running, conv, its,
                  np.ones(k, dtype=bool), first_of)
    return x, conv, its


def _ipm_loop(vals, ders, M, iters, rows, lo, hi, x, s, z, running, conv, its, convex,
              first_of=None):
    """The iterations of :func:`interior_point`, updating its arrays in place.

    Mehrotra's predictor-corrector: the affine step (no barrier) predicts how far the
    complementarity can fall, the centring ``sigma = (mu_aff / mu)^3`` follows from it, and
    the corrector adds the second-order term ``ds_aff dz_aff``; both solve the same
    reduced system, shifted once to be positive definite.  Only while the start's
    Lagrangian has been convex (``convex``, updated in place): on an indefinite one the
    predictor sent blog example 2's starts far outside, so there the barrier is lowered
    tenfold per iteration, as before.  (Two LU solves: the explicit
    inverse from its eigendecomposition, reused for both, lost the dual residual to
    ~1e-5 as the ratios ``z / s`` of the active rows grew to 1e12.)  The box rows of the constraints
    (``-x <= -lo``, ``x <= hi``) enter the products as the signed identity they are, the
    gradient and the Hessian's differences come from one derivative call, and converged
    or stopped starts drop out of the arrays: a small batch's time is the number of array
    operations, whatever the batch size."""
    N, k = x.shape
    mc = rows.size
    diag = np.arange(N)
    width = np.maximum(hi - lo, 1e-300)
    inv_m = 1.0 / (mc + 2 * N)
    steps = _steps(N)
    for _ in range(iters):
        b = np.flatnonzero(running)
        if b.size == 0:
            break
        whole = b.size == k  # every start runs: views, no copies
        xb, Pb, sb, zb = (x, M, s, z) if whole else (x[:, b], M[:, b], s[:, b], z[:, b])
        _, C = vals(xb, Pb)
        g, J, H = _derivatives(ders, xb, Pb, zb[:mc], rows, steps=steps)
        Jc = J[rows].transpose(2, 0, 1)                                         # (kb, mc, N)
        G = np.concatenate([C[rows], lo - xb, xb - hi])                         # (m, kb)
        rd = g + _times_t(Jc, zb, mc, N)
        rp = G + sb
        sz = sb * zb
        gap = sz.sum(axis=0) * inv_m
        scale = 1.0 + np.abs(g).max(axis=0)
        rd_max, rp_max = np.abs(rd).max(axis=0), np.abs(rp).max(axis=0)  # NaN stays NaN
        done = (rd_max <= 1e-9 * scale) & (gap <= 1e-12 * scale) & \
            (rp_max <= 1e-10 * (1.0 + np.abs(G).max(axis=0)))
        sig = zb / sb
        K = H + (Jc.transpose(0, 2, 1) * sig[:mc].T[:, None, :]) @ Jc
        K[:, diag, diag] += (sig[mc:mc + N] + sig[mc + N:]).T
        sane = np.isfinite(K).all(axis=(1, 2)) & np.isfinite(rd_max + rp_max) & ~done
        if not sane.all():
            K[~sane] = 0.0
        # Mehrotra's steps while the Lagrangian has been convex at every iterate of the
        # start (its curvature is what the affine prediction extrapolates); the others,
        # from then on, lower the barrier tenfold per iteration, with no step cap
        pc = convex if whole else convex[b]
        if first_of is not None:  # proven convex: H is PSD up to its differences' error
            hmin = -1e-9 * (1.0 + np.abs(H).max(axis=(1, 2)))
        elif pc.any():
            hmin = np.linalg.eigvalsh(H)[:, 0]
            pc &= hmin >= -1e-9 * (1.0 + np.abs(H).max(axis=(1, 2)))
            if whole:
                convex[:] = pc
            else:
                convex[b] = pc
        # K is H plus positive semidefinite terms: its least eigenvalue is no lower
        wmin = hmin if pc.all() else np.linalg.eigvalsh(K)[:, 0]
        K[:, diag, diag] += (np.maximum(0.0, -wmin) +
                             1e-12 * np.maximum(1.0, np.abs(K).max(axis=(1, 2))))[:, None]
        u = sig * rp
        rc = sz - 0.1 * gap
        if pc.any():
            # predictor: the Newton step of the unperturbed conditions (s z -> 0)
            dx = -_solve(K, g + _times_t(Jc, u, mc, N))
            ds = -rp - _times(Jc, dx, mc)
            dz = -zb - sig * ds
            mu_aff = ((sb + _to_boundary(sb, ds, 1.0) * ds) *
                      (zb + _to_boundary(zb, dz, 1.0) * dz)).sum(axis=0) * inv_m
            sigma = np.fmin(1.0, (mu_aff / gap)**3)  # fmin: NaN (gap 0) -> 1
            # the barrier falls no faster than the residuals of the nonlinear conditions:
            # a complementarity at 0 with the gradient not yet balanced has no way back
            mu_t = np.maximum(sigma * gap,
                              0.1 * np.minimum(gap, np.maximum(rd_max / scale, rp_max)))
            # corrector: centring to mu_t and the second-order term of the predictor
            rc = np.where(pc, sz + ds * dz - mu_t, rc)
        dx = -_solve(K, rd + _times_t(Jc, u - rc / sb, mc, N))
        ds = -rp - _times(Jc, dx, mc)
        dz = -(rc + zb * ds) / sb
        tau = np.maximum(np.where(pc, 0.995, 0.99), 1.0 - gap)
        step_ok = np.isfinite(dx).all(axis=0) & sane
        # a gene moves at most STEP_CAP of its box width per predictor-corrector step:
        # with a linear objective and small multipliers the Lagrangian's curvature is
        # nearly zero, the step long, and the linearized constraints mean little that far
        reach = np.where(pc, STEP_CAP / (np.abs(dx) / width).max(axis=0), np.inf)
        ap = np.where(step_ok, np.minimum(_to_boundary(sb, ds, tau), reach), 0.0)
        ad = np.where(step_ok, _to_boundary(zb, dz, tau), 0.0)
        xn = np.minimum(np.maximum(xb + ap * dx, lo), hi)
        sn = np.where(step_ok, np.maximum(sb + ap * ds, 1e-300), sb)
        zn = np.where(step_ok, np.maximum(zb + ad * dz, 1e-300), zb)
        if whole:
            x[:], s[:], z[:] = xn, sn, zn
        else:
            x[:, b], s[:, b], z[:, b] = xn, sn, zn
        conv[b[done]] = True
        its[b[step_ok]] += 1
        running[b[~step_ok]] = False
        nc = np.count_nonzero(conv)
        if first_of is None:
            half = 2 * nc >= k
        else:  # an instance one start has answered stops its others
            won = conv.reshape(-1, first_of).any(axis=0)
            running.reshape(-1, first_of)[:, won] = False  # a view: every start of each
            half = 2 * np.count_nonzero(won) >= first_of
        if half:  # a start far slower than most is left to the others
            srt = np.sort(its[conv])  # the median (np.median costs ~20 operations)
            running &= its <= srt[(nc - 1) // 2] + srt[nc // 2] + 4


def _solve(K, r):
    """``K^-1 r`` (N, kb) for the stacked systems ``K`` (kb, N, N) and ``r`` (N, kb)."""
    return np.linalg.solve(K, r.T[:, :, None])[..., 0].T


def _to_boundary(v, dv, tau):
    """The largest step ``<= 1`` keeping ``v + a dv >= (1 - tau) v`` (fraction to the
    boundary), per column."""
    return np.minimum(1.0, -tau * np.where(dv < 0, v / dv, -np.inf).max(axis=0))


def _times(Jc, dx, mc):
    """``A dx`` (m, kb) for the stacked rows ``A = [J[rows]; -I; I]``."""
    return np.concatenate([np.einsum("kmn,nk->mk", Jc, dx), -dx, dx])


def _times_t(Jc, v, mc, N):
    """``A^T v`` (N, kb) for the stacked rows ``A = [J[rows]; -I; I]`` and ``v`` (m, kb)."""
    return np.einsum("kmn,mk->nk", Jc, v[:mc]) - v[mc:mc + N] + v[mc + N:]


def _steps(N):
    """(N, 2N+1): the point and its ``2 N`` neighbours as unit steps (columns)."""
    eye = np.eye(N)
    return np.concatenate([np.zeros((N, 1)), eye, -eye], axis=1)


def _derivatives(ders, x, P, lam, rows, h_rel=1e-6, steps=None):
    """``(g (N, k), J (L, N, k), H (k, N, N))`` at ``x``: the exact gradients, and the
    Hessian of ``f + lam . C[rows]`` by central differences of its exact gradient (as
    :func:`_hessian`), from one derivative call on the points and their ``2 N``
    neighbours."""
    N, k = x.shape
    h = h_rel * (1.0 + np.abs(x))                                               # (N, k)
    steps = _steps(N) if steps is None else steps                               # (N, 2N+1)
    pts = x[:, :, None] + h[:, :, None] * steps[:, None, :]                     # (N, k, 2N+1)
    gp, Jp = ders(pts.reshape(N, -1), np.repeat(P, 2 * N + 1, axis=1))
    gp = gp.reshape(N, k, 2 * N + 1)
    Jp = Jp.reshape(Jp.shape[0], N, k, 2 * N + 1)
    gl = gp[:, :, 1:] + np.einsum("lnkj,lk->nkj", Jp[rows][..., 1:], lam)
    H = np.transpose((gl[:, :, :N] - gl[:, :, N:]) / (2 * h.T[None]), (1, 0, 2))
    H = 0.5 * (H + np.transpose(H, (0, 2, 1)))
    return gp[:, :, 0], Jp[..., 0], np.where(np.isfinite(H), H, 0.0)


def kkt_test(problem, X: np.ndarray, M: np.ndarray, tol: float = 1e-6,
             second_order: bool = True):
    """The local optimality test of points ``X`` (N, k): stationary with multipliers of
    the right sign on the inequalities within ``1e-6 (1 + |x|)`` of their boundary and
    the genes on a side of the box, and (``second_order``) a reduced Hessian of the
    Lagrangian (on the null space of the strongly active gradients) that is not
    negative; on a problem proven convex that holds at every point (a convex objective
    plus convex constraints times multipliers >= 0), and the caller may skip it.
    Returns ``(ok (k,), active (L, k))``."""
    vals, ders = evaluators(problem)
    N, k = X.shape
    L = len(problem.leaves)
    rows = np.zeros(L, dtype=bool)
    rows[conjunctive_leaves(problem)] = True
    lo, hi = problem.lower[:, None], problem.upper[:, None]
    _, C = vals(X, M)
    g, J = ders(X, M)
    width = np.maximum(hi - lo, 1e-300)
    at_lo = X <= lo + 1e-12 * width
    at_hi = X >= hi - 1e-12 * width
    free = ~(at_lo | at_hi)                                                     # (N, k)
    act = rows[:, None] & near_active(C, J, X, np.ones((N, 1), dtype=bool), 1e-6) & \
        np.isfinite(C)
    A = np.transpose(np.where(act[:, None] & free[None], J, 0.0), (2, 0, 1))    # (k, L, N)
    gf = np.where(free, g, 0.0)
    with np.errstate(all="ignore"):
        Gm = A @ np.transpose(A, (0, 2, 1)) + np.eye(L) * np.where(act.T, 1e-14, 1.0)[:, None]
        lam = -np.linalg.solve(Gm, (A @ gf.T[:, :, None]))[..., 0].T           # (L, k)
    lam = np.where(act, lam, 0.0)
    gl = g + np.einsum("lnk,lk->nk", np.where(np.isfinite(J), J, 0.0), lam)    # (N, k)
    scale = 1.0 + np.max(np.abs(g), axis=0)
    ok = np.all(np.isfinite(gl), axis=0) & np.all(np.isfinite(lam), axis=0)
    ok &= np.max(np.where(free, np.abs(gl), 0.0), axis=0) <= tol * scale
    ok &= np.min(np.where(act, lam, 0.0), axis=0, initial=0.0) >= -tol * scale  # L may be 0
    # a gene on a side of the box: moving it inwards must not lower the Lagrangian
    ok &= np.all(~at_lo | (gl >= -tol * scale), axis=0)
    ok &= np.all(~at_hi | (gl <= tol * scale), axis=0)
    if not second_order:
        return ok, act
    # second order on the null space of the strongly active gradients and held genes
    strong = act & (lam > tol * scale)
    H = _hessian(ders, X, M, lam, np.arange(L))
    As = np.transpose(np.where(strong[:, None] & free[None], J, 0.0), (2, 0, 1))
    held = np.transpose(~free)[:, :, None] * np.eye(N)[None]                    # (k, N, N)
    Q = np.concatenate([As, held], axis=1)                                      # (k, L+N, N)
    proj = np.eye(N)[None] - np.linalg.pinv(Q) @ Q                              # (k, N, N)
    big = 1.0 + np.abs(H).max(axis=(1, 2))
    R = proj @ H @ proj + big[:, None, None] * (np.eye(N)[None] - proj)
    with np.errstate(all="ignore"):
        wmin = np.linalg.eigvalsh(0.5 * (R + np.transpose(R, (0, 2, 1))))[:, 0]
    ok &= wmin >= -1e-6 * big
    return ok, act


def _settle(problem, X, M, active=None, keep_feasible=False):
    """Newton on the KKT conditions (margins 0, 1e-9, 1e-6, as the batched polish) to
    land the points on their active boundaries (``keep_feasible``: only the points the
    float64 check finds infeasible); returns ``(X, f, V, feasible, used)`` with the
    float64 check of each point."""
    N, k = X.shape
    best = X.copy()
    f, V = (np.array(a, dtype=np.float64) for a in report_numpy(problem, best, M))
    f = np.broadcast_to(f, (k,)).copy()
    feas = (V == 0).all(axis=0)
    used = np.ones(k, dtype=np.int64)
    todo = ~feas if keep_feasible else np.ones(k, dtype=bool)
    for margin in (1e-12, 1e-9, 1e-6):
        idx = np.flatnonzero(todo)
        if idx.size == 0:
            break
        xr, u, conv = polish_batch(problem, X[:, idx], M[:, idx], margin=margin, iters=12,
                                   active=None if active is None else active[:, idx])
        fr, Vr = report_numpy(problem, xr, M[:, idx])
        used[idx] += u + 1
        ok = (Vr == 0).all(axis=0) & np.all(np.isfinite(xr), axis=0)
        take = idx[ok]
        best[:, take], f[take], V[:, take], feas[take] = xr[:, ok], fr[ok], Vr[:, ok], True
        todo[take] = False
    return best, f, V, feas, used
