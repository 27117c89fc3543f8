"""Batched polish for ``solve_batch``: Newton steps on the KKT conditions, every
instance at once.

A loop of SLSQP calls costs what a loop of scipy solves costs, which is what a batch
should beat.  Here every instance's best point takes the same few vectorized steps
(NumPy, float64, the generated ``leaves`` and exact derivatives over all ``B`` points in
one call each):

1. the active set, fixed from the start point: equalities, and the conjunctive
   inequalities within ``1e-4 (1 + |x|)`` of their boundary (value over gradient norm);
2. multipliers by least squares, the Hessian of the Lagrangian by central differences
   of its exact gradient, shifted to be positive definite;
3. one Newton step on the KKT system (active inequalities aimed ``margin`` inside their
   boundary, equalities at 0), clipped to the box; integer genes held fixed, and a
   variable the box stops held on its bound from then on.

An instance is ``converged`` when its last step is below ``1e-11`` (relative).  The
caller accepts a candidate only if the float64 check finds it feasible and better, and
sends the instances this did not settle to SLSQP (``finish/_finish.py``).
"""

from __future__ import annotations

import numpy as np

from ._polish import conjunctive_leaves, polish_band, rounding_scale

__all__ = ["polish_batch", "evals_per_iteration", "restore", "evaluators", "near_active",
           "INSIDE", "HOLD", "HELD_ULPS"]


def evals_per_iteration(problem) -> int:
    """Point evaluations one Newton iteration costs an instance (values, derivatives,
    and two derivative evaluations per free variable for the Hessian)."""
    return 2 + 2 * int((~problem.integer).sum())


def evaluators(problem):
    """``(vals, ders)`` on float64 points (N, k) with parameters (n_p, k), in the
    minimizing sense: ``vals -> (f (k,), C (L, k))``, ``ders -> (g (N, k), J (L, N, k))``
    (broadcast where the generated code returns them unbatched); None when the problem
    has no exact derivatives."""
    try:
        deriv = problem.lowering.derivatives("numpy")
    except Exception:
        return None
    leaves = problem.lowering.functions("numpy")["leaves"]
    sign = -1.0 if problem.maximize else 1.0
    N, L = problem.n, len(problem.leaves)

    def vals(X, P):
        with np.errstate(all="ignore"):
            f, C = leaves(X, P)
        k = X.shape[1]  # a constant objective may come back as one value; no leaves: (0, k)
        if _batched(f, (k,)) and _batched(C, (L, k)):  # the common case: as they are
            return sign * f, C
        f = np.broadcast_to(np.asarray(f, float).reshape(-1), (k,))
        C = np.asarray(C, float).reshape(L, k) if L else np.zeros((0, k))
        return sign * f, C

    def ders(X, P):
        with np.errstate(all="ignore"):
            g, J = deriv(X, P)
        k = X.shape[1]  # derivatives constant in x may come back unbatched
        if _batched(g, (N, k)) and _batched(J, (L, N, k)) and L and J.flags.writeable \
                and J.flags.c_contiguous:  # a fresh array of the call: the caller's own
            return sign * g, J
        g = np.broadcast_to(np.asarray(g, float).reshape(N, -1), (N, k))
        J = np.array(np.broadcast_to(np.asarray(J, float).reshape(L, N, -1), (L, N, k))) if L else \
            np.zeros((0, N, k))
        return sign * g, J

    return vals, ders


def _batched(a, shape) -> bool:
    """Whether ``a`` is a float64 array of ``shape`` (what the generated code returns for
    a batch of points), which the evaluators pass on without a conversion."""
    return type(a) is np.ndarray and a.shape == shape and a.dtype == np.float64


def polish_batch(problem, X0: np.ndarray, M: np.ndarray, left=None, *, margin=0.0,
                 iters: int = 12, active=None):
    """Refine ``X0`` (N, B) with parameters ``M`` (n_p, B).

    ``left`` (B,) is each instance's remaining evaluation budget (None: unlimited).
    ``active`` (L, B) bool: the active set to hold (a warm start carries the one of the
    solution it starts from); None: found at ``X0`` as described above.
    Returns ``(X (N, B), used (B,) int, converged (B,) bool)``.
    """
    N, B = X0.shape
    free = ~problem.integer
    used = np.zeros(B, dtype=np.int64)
    if not free.any():
        return X0.copy(), used, np.zeros(B, dtype=bool)
    funcs = evaluators(problem)
    if funcs is None:  # no exact derivatives: nothing to do here, SLSQP decides
        return X0.copy(), used, np.zeros(B, dtype=bool)
    vals, ders = funcs
    L = len(problem.leaves)
    usable = np.zeros(L, dtype=bool)
    usable[conjunctive_leaves(problem)] = True
    eq = np.array([lf.kind == "eq" for lf in problem.leaves], dtype=bool)
    lo, hi = problem.lower[:, None], problem.upper[:, None]
    fcol = free[:, None]
    cost = evals_per_iteration(problem)
    budget_iters = np.full(B, iters) if left is None else \
        np.minimum(iters, (np.asarray(left) - 2) // cost)  # 2: the active-set evaluation
    go = budget_iters > 0
    if not go.all():  # only the instances with budget for an iteration are evaluated
        x, conv = X0.copy(), np.zeros(B, dtype=bool)
        if go.any():
            x[:, go], used[go], conv[go] = polish_batch(
                problem, X0[:, go], M[:, go], np.asarray(left)[go], margin=margin, iters=iters,
                active=None if active is None else active[:, go])
        return x, used, conv

    x = np.clip(X0.astype(np.float64), lo, hi)
    _, C0 = vals(x, M)
    _, J0 = ders(x, M)
    used += 2
    if active is None:
        active = usable[:, None] & (eq[:, None] | near_active(C0, J0, x, fcol))  # (L, B)
    active = active & usable[:, None] & np.isfinite(C0)
    converged = _iterate(funcs, x, M, active, free, eq, margin, iters, budget_iters, used,
                         cost, lo, hi)
    return x, used, converged


def _iterate(funcs, x, M, active, free, eq, margin, iters, budget_iters, used, cost, lo,
             hi):
    """The Newton iterations of :func:`polish_batch`, updating ``x`` and ``used`` in
    place; returns ``converged`` (B,)."""
    N, B = x.shape
    running = budget_iters > 0
    converged = np.zeros(B, dtype=bool)
    free_b = np.repeat(free[:, None], B, axis=1)   # genes Newton may move, per instance
    for it in range(iters):
        running &= it < budget_iters
        if not running.any():
            break
        b = np.flatnonzero(running)
        xb, fr = x[:, b], free_b[:, b]
        dx = _kkt_step(funcs, xb, M[:, b], active[:, b], fr, free, eq, margin)
        if dx is None:  # a singular instance: stop them all here
            break
        ok = np.all(np.isfinite(dx), axis=0)
        dx = np.where(ok[None], dx, 0.0)
        xn = np.clip(xb + dx, lo, hi)
        # a variable the box stops is held on its bound from now on (an active bound)
        free_b[:, b] &= ~((xn != xb + dx) & ok[None])
        step = xn - xb
        x[:, b] = xn
        used[b] += cost
        small = np.max(np.abs(step) / (1.0 + np.abs(xb)), axis=0) <= 1e-11
        converged[b] = small & ok
        running[b] = ~converged[b] & ok
    return converged


def _kkt_step(funcs, xb, Mb, act, fr, free, eq, margin):
    """One Newton step on the KKT system at the points ``xb`` (N, k): multipliers by
    least squares, the Hessian of the Lagrangian by central differences of its exact
    gradient (shifted to be positive definite), the active rows ``act`` (L, k) aimed at
    0 (equalities) or ``margin`` inside; genes outside ``fr`` (N, k) held.  Returns
    ``dx`` (N, k), or None when the KKT system of some instance is singular."""
    vals, ders = funcs
    N, k = xb.shape
    L = act.shape[0]
    free_idx = np.flatnonzero(free)
    nf = free_idx.size
    eyeN, eyeL = np.eye(N), np.eye(L)
    _, C = vals(xb, Mb)
    g, J = ders(xb, Mb)
    g = np.where(fr, g, 0.0)
    J = np.where(fr[None] & act[:, None], J, 0.0)                           # (L, N, k)
    A = np.transpose(J, (2, 0, 1))                                          # (k, L, N)
    G = A @ np.transpose(A, (0, 2, 1)) + eyeL * np.where(act.T, 1e-14, 1.0)[:, None]
    lam = -np.linalg.solve(G, (A @ g.T[:, :, None]))[..., 0]                # (k, L)
    # Hessian of the Lagrangian: central differences of its exact gradient
    h = 1e-6 * (1.0 + np.abs(xb[free_idx]))                                 # (nf, k)
    pts = np.repeat(xb[:, :, None], 2 * nf, axis=2)                         # (N, k, 2nf)
    cols = np.arange(nf)
    pts[free_idx, :, cols] += h
    pts[free_idx, :, nf + cols] -= h
    gp, Jp = ders(pts.reshape(N, -1), np.repeat(Mb, 2 * nf, axis=1))
    gl = gp + np.einsum("lnj,lj->nj", Jp, np.repeat(lam.T, 2 * nf, axis=1))
    gl = gl.reshape(N, k, 2 * nf)
    H = np.zeros((k, N, N))
    H[:, :, free_idx] = np.transpose((gl[:, :, :nf] - gl[:, :, nf:]) / (2 * h.T[None]),
                                     (1, 0, 2))
    H = 0.5 * (H + np.transpose(H, (0, 2, 1)))
    frT = fr.T
    H = np.where(frT[:, :, None] & frT[:, None, :], H, eyeN[None])
    H = np.nan_to_num(H, nan=0.0, posinf=0.0, neginf=0.0)
    wmin = np.linalg.eigvalsh(H)[:, 0]
    shift = np.maximum(0.0, -wmin) + 1e-10 * np.maximum(1.0, np.abs(H).max(axis=(1, 2)))
    K = np.zeros((k, N + L, N + L))
    K[:, :N, :N] = H + shift[:, None, None] * eyeN
    K[:, :N, N:] = np.transpose(A, (0, 2, 1))
    K[:, N:, :N] = A
    K[:, N:, N:] = eyeL * np.where(act.T, -1e-14, 1.0)[:, None]
    target = np.where(eq[:, None], 0.0, -margin)
    rc = np.where(act, -(C - target), 0.0)
    rhs = np.concatenate([-g.T, rc.T], axis=1)[:, :, None]
    with np.errstate(all="ignore"):
        try:
            sol = np.linalg.solve(K, rhs)[..., 0]
        except np.linalg.LinAlgError:
            return None
    return np.where(fr, sol[:, :N].T, 0.0)


def near_active(C, J, x, fcol, rel: float = 1e-4):
    """(L, B) bool: the inequalities within ``rel (1 + |x|)`` of their boundary (value
    over the norm of the gradient in the free genes ``fcol`` (N, 1))."""
    gn = np.sqrt(np.sum(np.where(fcol[None], J, 0.0) ** 2, axis=1))           # (L, B)
    with np.errstate(all="ignore"):
        dist = np.where(gn > 0, np.abs(C) / gn, np.inf)
    return dist <= rel * (1.0 + np.sqrt(np.sum(x * x, axis=0)))[None]


#: How far inside its boundary :func:`restore` aims a violated inequality.
INSIDE = 1e-10
#: :func:`restore` holds an inequality within this of its boundary where it is.
HOLD = 1e-8
#: ulps of its size a held inequality is aimed inside when a plain step did not help.
HELD_ULPS = 64

def restore(problem, x0: np.ndarray, pvec: np.ndarray, max_evals=None, iters: int = 30,
            inside: float = INSIDE):
    """Feasibility restoration of one point: least-norm Gauss-Newton steps on the
    violated constraints (equalities outside their band ``|h| <= eq_tol``, aimed at its
    edge; conjunctive inequalities above 0, aimed ``inside`` below it; inequalities
    within :data:`HOLD` of their boundary held there), with the exact Jacobian; integer
    genes held fixed, genes on a side of the box the step would cross held there, steps
    clipped to the box and halved until the total violation falls.

    SLSQP started from a point off a curved equality manifold (six trigonometric
    equalities, say) can stall at a violation of 1e-3; a projection onto the manifold
    first gives it a feasible start.  Returns ``(x (N,), used)``: ``x`` the least
    violating point met (``x0`` when nothing helped), ``used`` the evaluations spent
    (none when ``max_evals`` leaves no room for a step: the residual alone would be
    wasted, and at a spent budget it would exceed it).
    """
    free = ~problem.integer
    L = len(problem.leaves)
    if not free.any() or L == 0:
        return x0.copy(), 0
    try:
        deriv = problem.lowering.derivatives("numpy")
    except Exception:  # no exact derivatives: leave it to SLSQP
        return x0.copy(), 0
    eq = np.array([lf.kind == "eq" for lf in problem.leaves], dtype=bool)
    lo, hi = problem.lower, problem.upper
    M = np.reshape(pvec, (-1, 1))
    residual = _residual(problem, M, eq, inside)
    used = 0
    x = np.clip(np.asarray(x0, dtype=np.float64), lo, hi)
    if max_evals is not None and max_evals < 7:  # no room for one step after the residual
        return x, 0
    r, rows, v, C = residual(x)
    used += 1
    aim_held = False
    for _ in range(iters):
        if v == 0.0 or (max_evals is not None and used + 6 > max_evals):
            break
        with np.errstate(all="ignore"):
            _, J = deriv(x[:, None], M)
        used += 1
        J = np.asarray(J, float).reshape(L, -1)[:, :problem.n]
        if not np.all(np.isfinite(J[rows])):
            break
        target = r
        if aim_held:  # the held rows aimed a few ulps of their size inside as well
            gap = HELD_ULPS * np.finfo(np.float64).eps * rounding_scale(J, x, C)
            target = np.where((r == 0) & ~eq & (C > -gap), C + gap, r)
        dx = _step(J[rows], target[rows], free, x, lo, hi)
        t, moved = 1.0, False
        for _ in range(5):  # halve the step until the violation falls
            xn = np.clip(x + t * dx, lo, hi)
            rn, rowsn, vn, Cn = residual(xn)
            used += 1
            if vn < v:
                x, r, rows, v, C, moved = xn, rn, rowsn, vn, Cn, True
                break
            t *= 0.5
        if not moved:
            if aim_held:
                break
            # rounding pushed a held neighbour out as the step cured the violation (each
            # violated row counts its `inside` aim, so the trade never pays)
            aim_held = True
    return x, used


def _residual(problem, M, eq, inside: float):
    """``residual(x) -> (r (L,), rows (L,) bool, total violation, C (L,))`` of
    :func:`restore` at one point: what each constraint leaf's step should remove, and the
    rows of the step."""
    leaves = problem.lowering.functions("numpy")["leaves"]
    L = len(problem.leaves)
    usable = np.zeros(L, dtype=bool)
    usable[conjunctive_leaves(problem)] = True
    band = polish_band(problem)  # the polish's own share of the band

    def residual(x):
        with np.errstate(all="ignore"):
            _, C = leaves(x[:, None], M)
        C = np.asarray(C, float).reshape(L)
        # equalities to the edge of their band |h| <= eq_tol (the nearest feasible h, not
        # h = 0: an optimum may lean on the band), violated inequalities just inside
        r = np.where(eq, np.sign(C) * np.maximum(np.abs(C) - band, 0.0),
                     np.where(C > 0, C + inside, 0.0))
        r = np.where(usable, r, 0.0)
        # rows of the step: the violated ones, and the inequalities within HOLD of their
        # boundary held where they are (residual 0), so that the step that cures one
        # constraint does not push an active neighbour out (at a vertex of several
        # active constraints a tiny violation is never cured without them)
        rows = usable & ((r != 0) | (~eq & (C > -HOLD) & (C <= 0)))
        return r, rows, float(np.sum(np.abs(r))) if np.all(np.isfinite(r)) else np.inf, C

    return residual


def _step(J, target, free, x, lo, hi):
    """The least-norm step ``dx`` (N,) with ``J dx = -target`` over the free genes; a
    gene on a side of the box that the step would push out is held there and the step
    solved again without it (clipping it would spoil the whole step)."""
    movable = free.copy()
    for _ in range(3):
        A = np.where(movable[None], J, 0.0)
        dx = -np.linalg.lstsq(A, target, rcond=None)[0]
        out = movable & (((x <= lo) & (dx < 0)) | ((x >= hi) & (dx > 0)))
        if not out.any():
            break
        movable &= ~out
    return np.where(movable, dx, 0.0)
