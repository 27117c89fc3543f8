"""Gradient-based repair of infeasible individuals (Gauss-Newton on the violated
constraints, with the exact Jacobian from the lowering).

For each chosen individual, the violated leaves give a residual ``r`` (``c`` for an
equality, ``max(c, 0)`` for an inequality) and Jacobian rows ``A``; the minimum-norm
step ``dx = -A^T (A A^T + lambda I)^{-1} r`` moves it towards the feasible set, a few
times.  This is the technique that lets epsilon-DE variants solve the equality-heavy
CEC problems (G03, G05, G13, G17, G21).  Batched over individuals with the namespace's
``linalg.solve`` (NumPy or torch); integer genes are not moved.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..backend._arrays import Random, namespace
from ._ga import Population
from ._ranking import better

__all__ = ["Repair"]


@dataclass
class Repair:
    """Repairs up to ``count`` infeasible individuals per generation.

    Attributes
    ----------
    leaves, derivatives : callable
        Generated ``leaves(X, P)`` and ``derivatives(X, P)`` of the search's backend.
    fit : callable
        ``X -> (fmin, cv)`` for the repaired points.
    eq, active_rows : array of bool, shape (L,)
        Which leaves are equalities; which may be used (conjunctive leaves).
    free : array of bool, shape (N, 1)
        Continuous genes (the ones repair may move).
    """

    leaves: Any
    derivatives: Any
    fit: Any
    P: Any
    eq: Any
    active_rows: Any
    free: Any
    lower: Any
    upper: Any
    rng: Random
    count: int
    iters: int = 2

    @property
    def evals_per_step(self) -> int:
        return self.count * (2 * self.iters + 1)

    def newton(self, X):
        xp = namespace(X)
        for _ in range(self.iters):
            _, C = self.leaves(X, self.P)
            _, J = self.derivatives(X, self.P)
            C, J = xp.asarray(C, dtype=X.dtype), xp.asarray(J, dtype=X.dtype)
            r = xp.where(self.eq[:, None], C, xp.clip(C, min=0.0))
            r = xp.where(xp.isfinite(r) & self.active_rows[:, None], r, xp.zeros_like(r))
            use = (r != 0)[:, None, :] & self.free[None, :, :]
            A = xp.permute_dims(xp.where(use & xp.isfinite(J), J, xp.zeros_like(J)), (2, 0, 1))
            At = xp.permute_dims(A, (0, 2, 1))
            M = A @ At
            lam = 1e-12 * xp.sum(xp.linalg.diagonal(M), axis=-1) + 1e-30
            M = M + lam[:, None, None] * xp.eye(M.shape[-1], dtype=M.dtype,
                                                device=getattr(M, "device", None))
            y = xp.linalg.solve(M, xp.permute_dims(r, (1, 0))[..., None])
            dx = xp.permute_dims((At @ y)[..., 0], (1, 0))
            X = xp.minimum(xp.maximum(X - dx, self.lower), self.upper)
        return X

    def __call__(self, pop: Population, keys) -> Population:
        """Repair some infeasible members of ``pop``; keep each repair that is better
        under the comparison ``keys(f, cv)``.  Returns the population (unsorted)."""
        xp = namespace(pop.X)
        bad = xp.nonzero(pop.cv > 0)[0]  # eager: data-dependent size is fine here
        if bad.shape[0] == 0:
            return pop
        pick = bad[self.rng.permutation(bad.shape[0])[: self.count]]
        Xr = self.newton(pop.X[:, pick])
        fr, cvr = self.fit(Xr)
        kf, kc = keys(pop.f[pick], pop.cv[pick])
        rf, rc = keys(fr, cvr)
        take = better(rf, rc, kf, kc)
        X = xp.asarray(pop.X, copy=True)
        f, cv = xp.asarray(pop.f, copy=True), xp.asarray(pop.cv, copy=True)
        X[:, pick] = xp.where(take, Xr, X[:, pick])
        f[pick] = xp.where(take, fr, f[pick])
        cv[pick] = xp.where(take, cvr, cv[pick])
        return Population(X, f, cv)
