"""Gradient-based repair of infeasible individuals (Gauss-Newton on the violated
constraints, with the exact Jacobian from the lowering).

For each chosen individual, the violated leaves give a residual ``r`` (``c`` for an
equality, ``max(c, 0)`` for an inequality) and Jacobian rows ``A``; the minimum-norm
step ``dx = -A^T (A A^T + lambda I)^{-1} r`` moves it towards the feasible set, a few
times.  This is the technique that lets epsilon-DE variants solve the equality-heavy
CEC problems (G03, G05, G13, G17, G21).  Batched over individuals with
``torch.linalg.solve``; integer genes are not moved.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from ._ga import Population
from ._ranking import better

__all__ = ["Repair"]


@dataclass
class Repair:
    """Repairs up to ``count`` infeasible individuals per generation.

    Attributes
    ----------
    leaves, derivatives : callable
        Generated ``leaves(X, P)`` and ``derivatives(X, P)`` (torch backend).
    fit : callable
        ``X -> (fmin, cv)`` for the repaired points.
    eq, active_rows : Tensor of bool, shape (L,)
        Which leaves are equalities; which may be used (conjunctive leaves).
    free : Tensor of bool, shape (N, 1)
        Continuous genes (the ones repair may move).
    """

    leaves: Any
    derivatives: Any
    fit: Any
    P: torch.Tensor
    eq: torch.Tensor
    active_rows: torch.Tensor
    free: torch.Tensor
    lower: torch.Tensor
    upper: torch.Tensor
    gen: torch.Generator
    count: int
    iters: int = 2

    @property
    def evals_per_step(self) -> int:
        return self.count * (2 * self.iters + 1)

    def newton(self, X):
        for _ in range(self.iters):
            _, C = self.leaves(X, self.P)
            _, J = self.derivatives(X, self.P)
            r = torch.where(self.eq[:, None], C, C.clamp(min=0.0))
            r = torch.where(torch.isfinite(r) & self.active_rows[:, None], r,
                            torch.zeros_like(r))
            use = (r != 0)[:, None, :] & self.free[None, :, :]
            A = torch.where(use & torch.isfinite(J), J, torch.zeros_like(J)).permute(2, 0, 1)
            M = A @ A.transpose(1, 2)
            lam = 1e-12 * M.diagonal(dim1=1, dim2=2).sum(-1) + 1e-30
            M = M + lam[:, None, None] * torch.eye(M.shape[-1], dtype=M.dtype,
                                                   device=M.device)
            y = torch.linalg.solve(M, r.T.unsqueeze(-1))
            dx = -(A.transpose(1, 2) @ y).squeeze(-1).T
            X = torch.minimum(torch.maximum(X + dx, self.lower), self.upper)
        return X

    def __call__(self, pop: Population, keys) -> Population:
        """Repair some infeasible members of ``pop``; keep each repair that is better
        under the comparison ``keys(f, cv)``.  Returns the population (unsorted)."""
        bad = torch.nonzero(pop.cv > 0).flatten()  # eager: data-dependent size is fine here
        if bad.numel() == 0:
            return pop
        pick = bad[torch.randperm(bad.numel(), generator=self.gen,
                                  device=bad.device)[: self.count]]
        Xr = self.newton(pop.X[:, pick])
        fr, cvr = self.fit(Xr)
        kf, kc = keys(pop.f[pick], pop.cv[pick])
        rf, rc = keys(fr, cvr)
        take = better(rf, rc, kf, kc)
        X = pop.X.clone()
        f, cv = pop.f.clone(), pop.cv.clone()
        X[:, pick] = torch.where(take, Xr, X[:, pick])
        f[pick] = torch.where(take, fr, f[pick])
        cv[pick] = torch.where(take, cvr, cv[pick])
        return Population(X, f, cv)
