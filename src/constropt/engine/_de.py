"""Differential evolution with success-history parameter adaptation (the SHADE family).

Variation: ``current-to-pbest/1`` (default) or ``rand/1``, binomial crossover, bound
repair towards the parent (midpoint rule), integer rounding.  Selection: one-to-one,
the trial replaces its parent when its comparison keys (from the constraint handler)
are no worse.  ``F`` and ``CR`` are drawn per individual around an ``H``-slot memory
that is updated with the weighted Lehmer mean of the successful values.

As in :mod:`._ga`, every random number is drawn by :func:`draw` from a seeded generator
and :func:`make_step` builds a pure step over tensors: no host synchronisation, no
data-dependent shapes (the memory slot is a tensor), compile-friendly.  Every
operation works along the last (population) axis, so the same step runs one instance
``X (N, S)`` or a batch of instances ``X (N, B, S)`` with parameters ``P (n_p, B, 1)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import torch

from ._ga import Population

__all__ = ["DEConfig", "Memory", "DERandoms", "draw", "make_step", "new_memory", "take",
           "sort_order"]


@dataclass(frozen=True)
class DEConfig:
    """Shape-fixing DE settings.

    Attributes
    ----------
    strategy : str
        ``"current-to-pbest/1"`` or ``"rand/1"``.
    p_best : float
        Fraction of the population the p-best donor is drawn from.
    memory : int
        Slots ``H`` of the success-history memory.
    """

    strategy: str = "current-to-pbest/1"
    p_best: float = 0.11
    memory: int = 6


class Memory(NamedTuple):
    """Success-history memory: ``F`` and ``CR`` means (H,), next slot (0-d int64)."""

    F: torch.Tensor
    CR: torch.Tensor
    slot: torch.Tensor


class DERandoms(NamedTuple):
    """Random numbers for one DE generation."""

    mem: torch.Tensor     # (S,) int64 memory slot per individual
    normal: torch.Tensor  # (S,) standard normal (CR)
    unif: torch.Tensor    # (S,) uniform (F, Cauchy via tan)
    pbest: torch.Tensor   # (S,) uniform -> index among the p-best
    r1: torch.Tensor      # (S,) int64 offsets
    r2: torch.Tensor      # (S,) int64 offsets
    cross: torch.Tensor   # (N, S) uniform
    jrand: torch.Tensor   # (S,) int64 gene always taken from the mutant


def new_memory(cfg: DEConfig, device, dtype, batch: tuple = ()) -> Memory:
    """A fresh memory (every slot 0.5), one per instance of ``batch``."""
    return Memory(torch.full(batch + (cfg.memory,), 0.5, device=device, dtype=dtype),
                  torch.full(batch + (cfg.memory,), 0.5, device=device, dtype=dtype),
                  torch.zeros(batch, dtype=torch.int64, device=device))


def draw(gen: torch.Generator, cfg: DEConfig, n: int, S: int, device, dtype,
         batch: tuple = ()) -> DERandoms:
    """Every random number of one generation; shapes ``batch + (S,)`` (genes first)."""
    shape = batch + (S,)
    u = torch.rand((3,) + shape, generator=gen, device=device, dtype=dtype)
    ints = torch.randint(0, 2**31 - 1, (4,) + shape, generator=gen, device=device)
    return DERandoms(
        mem=ints[0] % cfg.memory,
        normal=torch.randn(shape, generator=gen, device=device, dtype=dtype),
        unif=u[0], pbest=u[1], r1=ints[1] % max(S - 1, 1), r2=ints[2] % max(S - 2, 1),
        cross=torch.rand((n,) + shape, generator=gen, device=device, dtype=dtype),
        jrand=ints[3] % n)


def take(a, idx):
    """``a[..., idx]`` along the last axis, per instance: ``a`` (..., B?, S), ``idx``
    (B?, K); works unbatched (``idx`` (K,)) and batched alike."""
    return a.gather(-1, idx.expand(a.shape[:a.dim() - idx.dim()] + idx.shape))


def sort_order(kf, kc):
    """Per-instance permutation sorting by ``kc``, ties by ``kf`` (stable), last axis."""
    by_f = torch.argsort(kf, dim=-1, stable=True)
    by_c = torch.argsort(kc.gather(-1, by_f), dim=-1, stable=True)
    return by_f.gather(-1, by_c)


def make_step(fitness, handler, cfg: DEConfig):
    """Build ``step(pop, mem, rnd, lower, upper, integer, P, eq_tol, level)``.

    ``pop`` must be sorted best-first under ``handler.keys(..., level)``; the step
    returns the next population (sorted the same way), the updated memory and the
    number of successful trials (a tensor).
    """
    rand1 = cfg.strategy == "rand/1"
    p_milli = int(round(cfg.p_best * 1000))

    def de_step(pop: Population, mem: Memory, rnd: DERandoms, lower, upper, integer, P,
                eq_tol, level):
        # X (N, *batch, S); f, cv (*batch, S); bounds broadcast as (N, *1, 1)
        X, f, cv = pop
        n, S = X.shape[0], X.shape[-1]
        ar = torch.arange(S, device=X.device)
        # parameters from the memory: CR ~ N(M_CR, 0.1), F ~ Cauchy(M_F, 0.1)
        CR = (mem.CR.gather(-1, rnd.mem) + 0.1 * rnd.normal).clamp(0.0, 1.0)
        F = mem.F.gather(-1, rnd.mem) + 0.1 * torch.tan(math.pi * (rnd.unif - 0.5))
        F = torch.where(F <= 0, torch.full_like(F, 0.05), F).clamp(max=1.0)
        # donors: r1 != i, r2 != i (and r2 != r1 in the usual case)
        r1 = (ar + 1 + rnd.r1) % S
        r2 = (ar + 1 + rnd.r2) % S
        r2 = torch.where(r2 == r1, (r2 + 1) % S, r2)
        if rand1:
            v = take(X, (r1 + 1 + rnd.r2) % S) + F * (take(X, r1) - take(X, r2))
        else:
            k = torch.sym_max(2, S * p_milli // 1000)  # symbolic in S: no recompiles
            pb = (rnd.pbest * k).long().clamp(max=k - 1)  # population is sorted
            v = X + F * (take(X, pb) - X) + F * (take(X, r1) - take(X, r2))
        genes = torch.arange(n, device=X.device).reshape((n,) + (1,) * rnd.jrand.dim())
        take_m = (rnd.cross < CR) | (genes == rnd.jrand)
        u = torch.where(take_m, v, X)
        u = torch.where(u < lower, 0.5 * (lower + X), u)
        u = torch.where(u > upper, 0.5 * (upper + X), u)
        u = torch.where(integer, torch.round(u), u)
        u = torch.minimum(torch.maximum(u, lower), upper)
        fu, cvu = fitness(u, P, eq_tol)
        kf, kc = handler.keys(f, cv, level)
        uf, uc = handler.keys(fu, cvu, level)
        win = (uc < kc) | ((uc == kc) & (uf <= kf))
        strict = (uc < kc) | ((uc == kc) & (uf < kf))
        Xn = torch.where(win, u, X)
        fn = torch.where(win, fu, f)
        cvn = torch.where(win, cvu, cv)
        # success-history update: weighted Lehmer mean of the strictly improving trials
        gain = torch.where(kc > 0, kc - uc, kf - uf)
        gain = torch.where(torch.isfinite(gain), gain, torch.ones_like(gain))
        w = torch.where(strict, gain.clamp(min=0.0) + 1e-30, torch.zeros_like(gain))
        count = strict.sum(-1)
        mF = (w * F * F).sum(-1) / (w * F).sum(-1).clamp(min=1e-30)
        mCR = (w * CR).sum(-1) / w.sum(-1).clamp(min=1e-30)
        onehot = torch.arange(cfg.memory, device=X.device) == mem.slot[..., None]
        zero = torch.zeros_like(mem.F)
        newF = torch.where(count > 0, mF, torch.where(onehot, mem.F, zero).sum(-1))
        newCR = torch.where(count > 0, mCR, torch.where(onehot, mem.CR, zero).sum(-1))
        memF = torch.where(onehot, newF[..., None], mem.F)
        memCR = torch.where(onehot, newCR[..., None], mem.CR)
        slot = torch.where(count > 0, (mem.slot + 1) % cfg.memory, mem.slot)
        ok, oc = handler.keys(fn, cvn, level)
        idx = sort_order(ok, oc)
        return (Population(take(Xn, idx), take(fn, idx), take(cvn, idx)),
                Memory(memF, memCR, slot), count)

    return de_step
