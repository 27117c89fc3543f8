"""Local solves across a batch: ``solve_batch(local_first=...)``.

Most parametric instances are smooth: their optimum moves continuously with the
parameters and keeps its active set between breakpoints.  So before any global search:

1. the instances are ordered by parameter proximity (lexicographic on the parameter
   columns, so a one-parameter sweep is sorted); every :data:`STRIDE`-th one, and the
   last, is an *anchor*;
2. each anchor is solved cold by a batched primal-dual interior-point method
   (:func:`interior_point`: Newton on the perturbed KKT conditions with slacks, exact
   gradients from the lowering, the Hessian of the Lagrangian by central differences of
   its exact gradient) from :data:`STARTS` starts (the box centre and seeded random
   points), every start of every anchor in one vectorized run;
3. every other instance is *warm-started* from the solutions of the anchors on either
   side of it, holding their active sets (:func:`._newton.polish_batch`);
4. each local answer is tested (:func:`kkt_test`): feasible in the float64 check, a KKT
   point (stationary, multipliers of the right sign, bound-held genes pushed the right
   way) with a reduced Hessian that is not negative (second order).  An anchor is
   answered when every start passes and all agree on the objective; another instance
   when both of its warm starts pass and agree.

The instances left (answers that disagree, fail, or cannot be verified) go to the global
search; every answer then takes the exact check and the status rules of every mode
(``finish/_finish.py``).
"""

from __future__ import annotations

import numpy as np

from ..local._newton import evals_per_iteration, evaluators, near_active, polish_batch
from ..problem._evaluate import report_numpy

__all__ = ["applicable", "interior_point", "kkt_test", "local_answers", "order_of", "STRIDE",
           "STARTS", "MAX_GENES"]

#: Instances per anchor along the ordered sweep.
STRIDE = 16
#: Batches up to this size are all anchors.
SMALL = 32
#: Cold starts per anchor.
STARTS = 4
#: Iterations of the interior-point method (most starts converge in 13-20; one that has
#: not by then is left to the others: the vectorized loop runs as long as its slowest).
IPM_ITERS = 30
#: ``local_first="auto"`` only below this many genes (the Hessian by differences costs
#: ``2 n`` derivative evaluations per point and iteration).
MAX_GENES = 30
#: Relative agreement of two local answers' objectives.
AGREE = 1e-7


def applicable(problem) -> str | None:
    """Why local solves cannot answer this problem's instances (None: they can)."""
    from ..local._polish import conjunctive_leaves

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
    return None


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


def interior_point(problem, X0: np.ndarray, M: np.ndarray, iters: int = IPM_ITERS):
    """A batched primal-dual interior-point method from ``X0`` (N, k), parameters ``M``
    (n_p, k): ``min f`` subject to the inequality leaves and the box, slacks ``s > 0``,
    multipliers ``z > 0``, the barrier lowered tenfold per iteration, steps kept inside
    by the fraction-to-the-boundary rule.  Returns ``(X (N, k), converged (k,),
    iterations (k,))``; points are clipped to the box."""
    from ..local._polish import conjunctive_leaves

    vals, ders = evaluators(problem)
    N, k = X0.shape
    rows = np.array(conjunctive_leaves(problem), dtype=np.int64)
    lo, hi = problem.lower[:, None], problem.upper[:, None]
    E = np.concatenate([-np.eye(N), np.eye(N)])                                 # (2N, N)
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
        _ipm_loop(vals, ders, M, iters, rows, lo, hi, E, x, s, z, running, conv, its)
    return x, conv, its


def _ipm_loop(vals, ders, M, iters, rows, lo, hi, E, x, s, z, running, conv, its):
    """The iterations of :func:`interior_point`, updating its arrays in place."""
    N = x.shape[0]
    mc = rows.size
    eye = np.eye(N)
    for _ in range(iters):
        b = np.flatnonzero(running)
        if b.size == 0:
            break
        xb, Pb, sb, zb = x[:, b], M[:, b], s[:, b], z[:, b]
        kb = b.size
        _, C = vals(xb, Pb)
        g, J = ders(xb, Pb)
        G = np.concatenate([C[rows], lo - xb, x[:, b] - hi])                    # (m, kb)
        A = np.concatenate([J[rows], np.broadcast_to(E[:, :, None], (2 * N, N, kb))])
        A = np.transpose(A, (2, 0, 1))                                          # (kb, m, N)
        rd = g + np.einsum("kmn,mk->nk", A, zb)
        rp = G + sb
        gap = np.mean(sb * zb, axis=0)
        scale = 1.0 + np.max(np.abs(g), axis=0)
        done = (np.max(np.abs(rd), axis=0) <= 1e-9 * scale) & \
            (np.max(np.abs(rp), axis=0) <= 1e-10 * (1.0 + np.max(np.abs(G), axis=0))) & \
            (gap <= 1e-12 * scale)
        conv[b[done]] = True
        bad = ~np.all(np.isfinite(rd), axis=0) | ~np.all(np.isfinite(rp), axis=0)
        running[b[done | bad]] = False
        mu = 0.1 * gap
        rc = sb * zb - mu
        H = _hessian(ders, xb, Pb, zb[:mc], rows)
        sig = zb / sb
        K = H + np.einsum("kmn,mk,kmp->knp", A, sig, A)
        sane = np.all(np.isfinite(K), axis=(1, 2))
        K[~sane] = eye
        wmin = np.linalg.eigvalsh(K)[:, 0]
        K += (np.maximum(0.0, -wmin) + 1e-12 * np.maximum(1.0, np.abs(K).max(axis=(1, 2))))[
            :, None, None] * eye
        rhs = -(rd + np.einsum("kmn,mk->nk", A, sig * rp - rc / sb))
        dx = np.linalg.solve(K, rhs.T[:, :, None])[..., 0].T                    # (N, kb)
        ds = -rp - np.einsum("kmn,nk->mk", A, dx)
        dz = -(rc + zb * ds) / sb
        tau = np.maximum(0.99, 1.0 - gap)
        ap = np.min(np.where(ds < 0, -tau * sb / ds, np.inf), axis=0)
        ad = np.min(np.where(dz < 0, -tau * zb / dz, np.inf), axis=0)
        ap, ad = np.minimum(1.0, ap), np.minimum(1.0, ad)
        step_ok = np.all(np.isfinite(dx), axis=0) & ~(done | bad) & sane
        ap, ad = np.where(step_ok, ap, 0.0), np.where(step_ok, ad, 0.0)
        x[:, b] = np.clip(xb + ap * dx, lo, hi)
        s[:, b] = np.where(step_ok, np.maximum(sb + ap * ds, 1e-300), sb)
        z[:, b] = np.where(step_ok, np.maximum(zb + ad * dz, 1e-300), zb)
        its[b[step_ok]] += 1
        running[b[~step_ok & ~done]] = False
        if conv.mean() >= 0.5:  # a start far slower than most is left to the others
            running &= its <= 2 * np.median(its[conv]) + 4


def kkt_test(problem, X: np.ndarray, M: np.ndarray, tol: float = 1e-6):
    """The local optimality test of points ``X`` (N, k): stationary with multipliers of
    the right sign on the inequalities within ``1e-6 (1 + |x|)`` of their boundary and
    the genes on a side of the box, and a reduced Hessian of the Lagrangian (on the null
    space of the strongly active gradients) that is not negative.  Returns ``(ok (k,),
    active (L, k))``."""
    from ..local._polish import conjunctive_leaves

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
    for margin in (0.0, 1e-9, 1e-6):
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


def order_of(M: np.ndarray) -> np.ndarray:
    """Instances ordered by parameter proximity: lexicographic on the parameter columns
    (the first parameter first), so a sweep of one parameter is sorted."""
    return np.lexsort(M[::-1]) if M.shape[0] else np.arange(M.shape[1])


def anchors_of(B: int) -> np.ndarray:
    """Positions (in the ordered sweep) of the anchors: every instance of a batch of at
    most :data:`SMALL` (the cold solves cost what one costs there: the work is
    vectorized), else every ``min(STRIDE, B // SMALL)``-th and the last."""
    stride = 1 if B <= SMALL else min(STRIDE, B // SMALL)
    return np.unique(np.append(np.arange(0, B, stride), B - 1))


def _agree(fa, fb):
    with np.errstate(invalid="ignore"):
        return np.abs(fa - fb) <= AGREE * (1.0 + np.abs(fa))


def solve_anchors(problem, M: np.ndarray, seed: int):
    """Cold local solves of the instances ``M`` (n_p, A) from :data:`STARTS` starts
    each.  Returns ``(ok (A,), x (N, A), f, V, active (L, A), used (A,))``."""
    N, A = problem.n, M.shape[1]
    lo, hi = problem.lower, problem.upper
    rng = np.random.default_rng(seed)
    starts = [0.5 * (lo + hi)] + [lo + (hi - lo) * rng.uniform(0.05, 0.95, N)
                                  for _ in range(STARTS - 1)]
    X0 = np.repeat(np.stack(starts, axis=1), A, axis=1)                         # (N, T A)
    MM = np.tile(M, (1, STARTS))
    x, _, its = interior_point(problem, X0, MM)
    x, f, V, feas, used = _settle(problem, x, MM, keep_feasible=True)
    ok, act = kkt_test(problem, x, MM)
    cost = evals_per_iteration(problem)
    used = used + its * cost + 2 + cost
    ok &= feas
    sgn = -1.0 if problem.maximize else 1.0
    fm = np.where(ok, sgn * f, np.inf).reshape(STARTS, A)
    j = np.argmin(fm, axis=0)
    best = fm[j, np.arange(A)]
    agree = np.where(np.isfinite(fm), _agree(best[None], fm), True).all(axis=0)
    passed = np.isfinite(fm).sum(axis=0)
    # every start must pass and agree: a start that fails (it ran toward a pole, off
    # to a side, into a region where nothing converges) is a sign of what a local
    # answer cannot rule out, and the instance goes to the global search
    good = np.isfinite(best) & agree & (passed == STARTS)
    pick = j * A + np.arange(A)
    return (good, x[:, pick], f[pick], V[:, pick], act[:, pick],
            used.reshape(STARTS, A).sum(axis=0))


def warm_solve(problem, M, X_left, act_left, X_right, act_right):
    """Newton from the solutions on either side (their active sets held), both tested.
    Returns ``(ok, x, f, V, used)`` for the instances ``M`` (n_p, k)."""
    k = M.shape[1]
    X0 = np.concatenate([X_left, X_right], axis=1)
    act = np.concatenate([act_left, act_right], axis=1)
    MM = np.concatenate([M, M], axis=1)
    x, f, V, feas, used = _settle(problem, X0, MM, active=act)
    ok, _ = kkt_test(problem, x, MM)
    ok &= feas
    used = used + 2 + evals_per_iteration(problem)
    sgn = -1.0 if problem.maximize else 1.0
    fa, fb = sgn * f[:k], sgn * f[k:]
    good = ok[:k] & ok[k:] & _agree(fa, fb)
    pick = np.where(fb < fa, np.arange(k) + k, np.arange(k))
    return good, x[:, pick], f[pick], V[:, pick], used[:k] + used[k:]


def local_answers(problem, M: np.ndarray, seed: int, solve_global):
    """The local stage over the instances ``M`` (n_p, B) as described in the module
    docstring.  ``solve_global(idx)`` solves the instances ``idx`` globally and returns
    ``(x (N, len), ok (len,))`` (its answers serve as warm starts).  Returns ``(answered
    (B,) bool, x, f, V, used, how)``; ``how`` says which local solve answered."""
    N, B = problem.n, M.shape[1]
    order = order_of(M)
    pos = anchors_of(B)
    anc = order[pos]
    ok_a, xa, fa, Va, acta, used_a = solve_anchors(problem, M[:, anc], seed)
    answered = np.zeros(B, dtype=bool)
    x = np.zeros((N, B))
    f = np.full(B, np.nan)
    V = np.zeros((Va.shape[0], B))
    used = np.zeros(B, dtype=np.int64)
    how = np.empty(B, dtype=object)
    answered[anc[ok_a]] = True
    x[:, anc], f[anc], V[:, anc], used[anc] = xa, fa, Va, used_a
    how[anc] = "interior-point solves from several starts that agree"
    src_x, src_act, src_ok = xa.copy(), acta.copy(), ok_a.copy()
    if not ok_a.all():  # anchors the local solves could not answer: the global search
        bad = np.flatnonzero(~ok_a)
        gx, gok = solve_global(anc[bad])
        src_x[:, bad] = gx
        src_ok[bad] = gok
        if gok.any():
            _, act_g = kkt_test(problem, gx, M[:, anc[bad]])
            src_act[:, bad] = act_g
    rest = np.setdiff1d(np.arange(B), pos)
    if rest.size:
        right = np.searchsorted(pos, rest)          # the anchor after each position
        left = right - 1
        inst = order[rest]
        ok_w, xw, fw, Vw, used_w = warm_solve(problem, M[:, inst], src_x[:, left],
                                              src_act[:, left], src_x[:, right],
                                              src_act[:, right])
        ok_w &= src_ok[left] & src_ok[right]
        answered[inst[ok_w]] = True
        x[:, inst], f[inst], V[:, inst], used[inst] = xw, fw, Vw, used_w
        how[inst] = "Newton from the neighbouring solutions along the sweep, which agree"
    return answered, x, f, V, used, how, anc[~ok_a]
