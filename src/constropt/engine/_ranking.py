"""Constraint handling by feasibility rules (Deb 2000), branch-free.

A point ``a`` beats ``b`` when it violates less in total (``cv``), and on equal
violation (both feasible: ``cv == 0``) when its objective ``f`` (minimization key, NaN
already mapped to +inf by the generated code) is lower.  A NaN ``cv`` is treated as
``inf``, so NaN never wins.

Survival needs the ``k`` best of ``2k`` points, not a sorted population: :func:`select`
finds them with one partial selection (``topk``) on an integer key that orders points
exactly as the feasibility rules do, instead of two full stable sorts (torch only:
NumPy sorts, which is cheap at the sizes the NumPy backend serves).
"""

from __future__ import annotations

import numpy as np

from ..backend._arrays import compiling, is_torch, namespace

__all__ = ["clean", "better", "order", "rank_key", "select", "defined_only"]

_I64_MIN = -(2**63)
_I64_MAX = 2**63 - 1


def clean(f, cv):
    """Map NaN to +inf in both keys (defensive: generated code already does this).

    ``v != v`` rather than ``isnan``: inductor's CPU code vectorizes the comparison but
    spills ``isnan`` to a scalar loop.
    """
    inf = float("inf")
    xp = namespace(f)
    return xp.where(f != f, inf, f), xp.where(cv != cv, inf, cv)


def better(f_a, cv_a, f_b, cv_b):
    """``a`` strictly better than ``b`` under feasibility rules (elementwise bool)."""
    return (cv_a < cv_b) | ((cv_a == cv_b) & (f_a < f_b))


def order(f, cv):
    """Permutation sorting points best-first: by ``cv``, ties by ``f`` (stable)."""
    if isinstance(f, np.ndarray):  # the same permutation in one call (NaN last, as argsort)
        return np.lexsort((f, cv))
    xp = namespace(f)
    by_f = xp.argsort(f, stable=True)
    by_cv = xp.argsort(cv[by_f], stable=True)
    return by_f[by_cv]


def _ordered_bits(v):
    """Float -> signed integer of the same width whose order is the floats' order.

    Non-negative floats keep their bit pattern; a negative one maps to minus its
    magnitude bits, so larger magnitudes map to smaller integers and ``-0.0`` maps to
    0 like ``+0.0``.  NaN must have been cleaned away.  Torch tensors only (see
    :func:`select`).
    """
    import torch  # lazy: torch tensors only, and the NumPy path never imports torch

    if v.dtype == torch.float32:
        b, mag = v.view(torch.int32), 0x7FFFFFFF
    elif v.dtype == torch.float64:
        b, mag = v.view(torch.int64), _I64_MAX
    else:
        raise TypeError(f"unsupported dtype {v.dtype}")
    return torch.where(b < 0, -(b & mag), b)


def rank_key(f, cv, kth_cv=None):
    """int64 key: ``key[a] < key[b]`` exactly when ``a`` is better than ``b``.

    For float32, ``(cv, f)`` pack losslessly into 64 bits (``cv`` in the high word).
    For float64 they cannot, so the key is relative to ``kth_cv``, a violation level
    (the k-th smallest, see :func:`select`): points below it get the smallest key,
    points above it the largest, points at it are ranked by ``f``.  That key orders
    every pair that decides which ``k`` points are the best.  Torch tensors only.
    """
    import torch  # lazy: torch tensors only, and the NumPy path never imports torch

    f, cv = clean(f, cv)
    if f.dtype == torch.float32 and cv.dtype == torch.float32:
        hi = _ordered_bits(cv).to(torch.int64) * 2**32
        return hi + (_ordered_bits(f).to(torch.int64) + 2**31)
    if kth_cv is None:  # exact only among points of equal cv
        kth_cv = torch.zeros((), dtype=cv.dtype, device=cv.device)
    of = _ordered_bits(f.to(torch.float64))
    return torch.where(cv < kth_cv, _I64_MIN, torch.where(cv > kth_cv, _I64_MAX, of))


#: Below this many points, eager survival sorts (fewer, cheaper kernel launches).
SORT_MAX = 16384


def select(f, cv, k: int):
    """Indices of the ``k`` best points under feasibility rules, the best one first.

    Exact and deterministic.  Under ``torch.compile`` (and for large inputs in eager
    mode) it is one partial selection, ``topk``, on :func:`rank_key`, so the other
    ``k - 1`` come in no particular order; small eager inputs are fully sorted by
    :func:`order` instead, which costs fewer operator calls.  Fixed shapes, no host
    synchronisation.  NumPy arrays are always sorted.
    """
    if not is_torch(f) or (not compiling() and f.shape[0] <= SORT_MAX):  # no size guard
        return order(f, cv)[:k]
    import torch  # lazy: torch tensors only from here (NumPy arrays returned above)

    if f.dtype == torch.float32 and cv.dtype == torch.float32:
        vals, idx = torch.topk(rank_key(f, cv), k, largest=False, sorted=False)
        j = torch.argmin(vals)
    else:  # float64: one key picks the k best, another (relative to min cv) the best
        cvc = clean(f, cv)[1]
        key = rank_key(f, cv, torch.kthvalue(cvc, k).values)
        _, idx = torch.topk(key, k, largest=False, sorted=False)
        j = torch.argmin(rank_key(f[idx], cv[idx], cvc.min()))
    pos = torch.arange(k, device=idx.device)
    perm = torch.where(pos == 0, j, torch.where(pos == j, 0, pos))
    return idx[perm]


def defined_only(f, cv):
    """``(f, cv)`` with every point whose objective key is not below ``+inf`` (NaN, or an
    overflow the wrong way: outside the objective's domain) given ``cv = inf``: ranked by
    :func:`better` among the points where the objective is a number, all others last."""
    f, cv = clean(f, cv)
    xp = namespace(f)
    return f, xp.where(f < float("inf"), cv, float("inf"))
