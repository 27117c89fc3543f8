"""Convex problems: one Lagrangian bound over the whole search box.

When the Lagrangian ``L = f + sum_i lam_i c_i`` (``lam_i >= 0`` on inequalities, either
sign on equalities) is convex on the whole search box, the tangent plane at any point
``x0`` of the box lies below it, so every feasible point ``x`` has

    f(x) >= L(x) - eq_slack >= L(x0) + min over the box of grad L(x0) . (x - x0) - eq_slack

(``eq_slack = sum |lam_eq| * eq_tol``: equalities hold as ``|h| <= eq_tol``).  Nothing
about ``x0`` or ``lam`` needs to be exact for the bound to hold, only for it to be tight:
so the point and the multipliers are first refined by Newton steps on the KKT conditions
of the active set (exact for a QP in one step), and the bound is then enclosed in
outward-rounded interval arithmetic.  Convexity is proven on the box: the interval
Hessian of ``L`` over the whole box is positive semidefinite (scaled Gershgorin discs,
or, where they fail, an LDL^T factorisation in Arb ball arithmetic of its midpoint
shifted by the Frobenius norm of its radius).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ..lowering import _rt_interval as ri
from ..problem._balls import flint_module, working_precision
from ._exclusion import hessian_program, proven_psd, tangent_bound

__all__ = ["convex_bound"]

#: Newton steps on the KKT conditions before the bound (a QP needs one).
NEWTON_STEPS = 4
#: Ball LDL^T up to this many variables (its cost grows as n**3 Python operations).
BALL_LDL_MAX = 150


def _mid(iv) -> np.ndarray:
    return np.asarray(0.5 * (iv.lo + iv.hi), dtype=np.float64).reshape(-1)


def _values(prog, nodes, x, P):
    """Point values (enclosure midpoints) on NumPy: cheap per node, which the
    refinement's repeated evaluations of the whole Hessian need."""
    X = np.asarray(x, dtype=np.float64).reshape(-1, 1)
    vals = prog.forward(X, X, np.asarray(P, dtype=np.float64), only=list(nodes))
    return {k: _mid(vals[k])[0] for k in nodes}


def _kkt_refine(model, problem, hp, x, lam, pvec):
    """Newton steps on ``grad L = 0`` (free genes), ``c_A = 0`` (equalities and the
    inequalities with positive multipliers), box-active genes held, with the Hessian of
    the start (chord steps: exact for a QP, whose Hessian is constant).  Returns the
    best ``(x, lam)`` by stationarity residual (the start when no step improves it)."""
    prog, v, grad, rows = hp
    lo, hi = np.asarray(problem.lower, float), np.asarray(problem.upper, float)
    leaves = model.leaves
    A = [j for j, i in enumerate(model.lag_leaves)
         if leaves[i].kind == "eq" or lam[i] > 0]
    first = [*grad, *(e for r in model.jac for e in r),
             *(model.leaf_nodes[i] for i in model.lag_leaves)]
    n = len(grad)

    def residual(x, lam, extra=()):
        val = _values(prog, [*first, *extra], x, np.concatenate([pvec, lam]))
        g = np.array([val[k] for k in grad])
        w = np.maximum(hi - lo, 1e-300)
        free = ~(((x - lo <= 1e-9 * w) & (g > 0)) | ((hi - x <= 1e-9 * w) & (g < 0)))
        return val, g, free, float(np.abs(g[free]).max(initial=0.0))

    val, g, free, r0 = residual(x, lam, [e for r in rows for e in r])
    Hfull = np.array([[val[rows[a][b]] for b in range(n)] for a in range(n)])
    best = (x, lam, r0)
    for _ in range(NEWTON_STEPS):
        x, lam = best[0], best[1]
        val, g, free, _r = residual(x, lam)
        F = np.flatnonzero(free)
        H = Hfull[np.ix_(F, F)]
        J = np.array([[val[model.jac[j][b]] for b in F] for j in A]).reshape(len(A), len(F))
        c = np.array([val[model.leaf_nodes[model.lag_leaves[j]]] for j in A]).reshape(len(A))
        K = np.block([[H, J.T], [J, np.zeros((len(A), len(A)))]])
        step = np.linalg.lstsq(K, -np.concatenate([g[F], c]), rcond=None)[0]
        if not np.all(np.isfinite(step)):
            break
        x2 = x.copy()
        x2[F] = np.clip(x[F] + step[:len(F)], lo[F], hi[F])
        lam2 = lam.copy()
        for j, d in zip(A, step[len(F):]):
            i = model.lag_leaves[j]
            lam2[i] = lam[i] + d if leaves[i].kind == "eq" else max(0.0, lam[i] + d)
        r2 = residual(x2, lam2)[3]
        if not r2 < best[2]:
            break
        best = (x2, lam2, r2)
    return best[0], best[1]


def _ball_psd(vals, rows) -> bool:
    """Every symmetric matrix in the interval Hessian ``vals`` is PSD: the midpoint
    ``M`` less ``s I`` (``s`` an upper bound of the radius matrix's Frobenius norm, which
    bounds its spectral norm) has an LDL^T factorisation with positive pivots in Arb
    ball arithmetic (the balls contain the exact pivots of ``M - s I``)."""
    n = len(rows)
    if n > BALL_LDL_MAX or any(bool(vals[e].nan.any()) for r in rows for e in r):
        return False  # too large, or L not twice differentiable on the whole box
    with working_precision(106):  # twice float64's: the pivots' balls stay narrow
        return _ball_ldl(vals, rows, flint_module().arb)


def _ball_ldl(vals, rows, arb) -> bool:
    n = len(rows)
    lo = [[float(vals[e].lo.reshape(())) for e in r] for r in rows]
    hi = [[float(vals[e].hi.reshape(())) for e in r] for r in rows]
    if not all(math.isfinite(a) for r in lo + hi for a in r):
        return False
    # exact midpoints and radii of the (symmetrised) enclosure, as Arb balls
    M = [[(arb(lo[i][j]) + arb(hi[i][j]) + arb(lo[j][i]) + arb(hi[j][i])) / 4
          for j in range(n)] for i in range(n)]
    R2 = arb(0)
    for i in range(n):
        for j in range(n):
            a, b = min(lo[i][j], lo[j][i]), max(hi[i][j], hi[j][i])
            r = abs(M[i][j] - arb(a)).union(abs(arb(b) - M[i][j])).upper()
            R2 += r * r
    s = R2.sqrt().upper() * (1 + 2.0 ** -40) + arb(2.0) ** -1070
    A = [[M[i][j] - (s if i == j else 0) for j in range(n)] for i in range(n)]
    for k in range(n):
        d = A[k][k]
        if not d > 0:
            return False
        for i in range(k + 1, n):
            m = A[i][k] / d
            for j in range(k + 1, i + 1):
                A[i][j] -= m * A[j][k]
            for j in range(k + 1, i + 1):
                A[j][i] = A[i][j]
    return True


def convex_bound(model, problem, pvec, lam, x, eq_tol):
    """A proven lower bound of the objective (minimization sense) over the feasible
    points of the search box, or None when the Lagrangian is not proven convex there."""
    lo, hi = np.asarray(problem.lower, float), np.asarray(problem.upper, float)
    if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))) or x is None:
        return None
    hp = hessian_program(model)
    if hp is None:
        return None
    prog, v, grad, rows = hp
    pvec = np.asarray(pvec, float)
    x = np.clip(np.asarray(x, float), lo, hi)
    lam = np.asarray(lam, float).copy()
    x, lam = _kkt_refine(model, problem, hp, x, lam, pvec)
    P = torch.as_tensor(np.concatenate([pvec, lam]), dtype=torch.float64)
    L0, H0, c = (torch.as_tensor(a, dtype=torch.float64) for a in (lo, hi, x))
    if not proven_psd(prog, v, grad, rows, L0, H0, c, P):
        vals = prog.forward(L0.reshape(-1, 1), H0.reshape(-1, 1), P,
                            only=[v, *grad] + [e for r in rows for e in r])
        if any(bool(vals[k].nan.any()) for k in (v, *grad)) or not _ball_psd(vals, rows):
            return None
    cc = c.reshape(-1, 1)
    at = prog.forward(cc, cc, P, only=[v, *grad])
    if bool(at[v].nan.any()) or any(bool(at[k].nan.any()) for k in grad):
        return None
    eq = sum(abs(float(lam[i])) for i in model.lag_leaves if model.leaves[i].kind == "eq")
    slack = float(ri.up(torch.tensor(eq * eq_tol, dtype=torch.float64) * (1 + 1e-12)))
    bound = tangent_bound(at, v, grad, L0, H0, c, slack)
    return bound if math.isfinite(bound) else None
