"""Constraint handling by feasibility rules (Deb 2000), branch-free.

A point ``a`` beats ``b`` when it violates less in total (``cv``), and on equal
violation (both feasible: ``cv == 0``) when its objective ``f`` (minimization key, NaN
already mapped to +inf by the generated code) is lower.  A NaN ``cv`` is treated as
``inf``, so NaN never wins.
"""

from __future__ import annotations

import torch

__all__ = ["clean", "better", "order"]


def clean(f, cv):
    """Map NaN to +inf in both keys (defensive: generated code already does this)."""
    inf = torch.tensor(float("inf"), dtype=f.dtype, device=f.device)
    return torch.where(torch.isnan(f), inf, f), torch.where(torch.isnan(cv), inf, cv)


def better(f_a, cv_a, f_b, cv_b):
    """``a`` strictly better than ``b`` under feasibility rules (elementwise bool)."""
    return (cv_a < cv_b) | ((cv_a == cv_b) & (f_a < f_b))


def order(f, cv):
    """Permutation sorting points best-first: by ``cv``, ties by ``f`` (stable)."""
    by_f = torch.argsort(f, stable=True)
    by_cv = torch.argsort(cv[by_f], stable=True)
    return by_f[by_cv]
