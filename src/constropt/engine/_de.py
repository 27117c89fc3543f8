"""Differential evolution with success-history parameter adaptation (the SHADE family).

Variation: ``current-to-pbest/1`` (default) or ``rand/1``, binomial crossover, bound
repair towards the parent (midpoint rule), integer rounding.  Selection: one-to-one,
the trial replaces its parent when its comparison keys (from the constraint handler)
are no worse.  ``F`` and ``CR`` are drawn per individual around an ``H``-slot memory
that is updated with the weighted Lehmer mean of the successful values.

As in :mod:`._ga`, every random number is drawn by :func:`draw` from a seeded generator
and :func:`make_step` builds a pure step over arrays (NumPy or torch, the namespace of
its inputs): no host synchronisation, no data-dependent shapes (the memory slot is an
array), compile-friendly.  Every
operation works along the last (population) axis, so the same step runs one instance
``X (N, S)`` or a batch of instances ``X (N, B, S)`` with parameters ``P (n_p, B, 1)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from ..backend._arrays import Random, clip_max, namespace, sym_max, take
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

    F: Any
    CR: Any
    slot: Any


class DERandoms(NamedTuple):
    """Random numbers for one DE generation."""

    mem: Any     # (S,) int64 memory slot per individual
    normal: Any  # (S,) standard normal (CR)
    unif: Any    # (S,) uniform (F, Cauchy via tan)
    pbest: Any   # (S,) uniform -> index among the p-best
    r1: Any      # (S,) int64 offsets
    r2: Any      # (S,) int64 offsets
    cross: Any   # (N, S) uniform
    jrand: Any   # (S,) int64 gene always taken from the mutant


def new_memory(cfg: DEConfig, like, batch: tuple = ()) -> Memory:
    """A fresh memory (every slot 0.5), one per instance of ``batch``, on ``like``'s
    backend, device and dtype."""
    xp = namespace(like)
    dev = getattr(like, "device", None)
    return Memory(xp.full(batch + (cfg.memory,), 0.5, device=dev, dtype=like.dtype),
                  xp.full(batch + (cfg.memory,), 0.5, device=dev, dtype=like.dtype),
                  xp.zeros(batch, dtype=xp.int64, device=dev))


def draw(rng: Random, cfg: DEConfig, n: int, S: int, dtype, batch: tuple = ()) -> DERandoms:
    """Every random number of one generation; shapes ``batch + (S,)`` (genes first)."""
    shape = batch + (S,)
    u = rng.uniform((3,) + shape, dtype=dtype)
    ints = rng.integers(2**31 - 1, (4,) + shape)
    return DERandoms(
        mem=ints[0] % cfg.memory, normal=rng.normal(shape, dtype=dtype),
        unif=u[0], pbest=u[1], r1=ints[1] % max(S - 1, 1), r2=ints[2] % max(S - 2, 1),
        cross=rng.uniform((n,) + shape, dtype=dtype), jrand=ints[3] % n)


def sort_order(kf, kc):
    """Per-instance permutation sorting by ``kc``, ties by ``kf`` (stable), last axis."""
    if isinstance(kf, np.ndarray):  # the same permutation in one call (NaN last, as argsort)
        return np.lexsort((kf, kc), axis=-1)
    xp = namespace(kf)
    by_f = xp.argsort(kf, axis=-1, stable=True)
    by_c = xp.argsort(take(kc, by_f), axis=-1, stable=True)
    return take(by_f, by_c)


def make_step(fitness, handler, cfg: DEConfig, integers: bool = True):
    """Build ``step(pop, mem, rnd, lower, upper, integer, P, eq_tol, level)``.

    ``pop`` must be sorted best-first under ``handler.keys(..., level)``; the step
    returns the next population (sorted the same way), the updated memory and the
    number of successful trials (a tensor).  ``integers=False`` promises that the
    ``integer`` mask is all False (no rounding is done: the same numbers, fewer
    operations).
    """
    rand1 = cfg.strategy == "rand/1"
    p_milli = int(round(cfg.p_best * 1000))

    def de_step(pop: Population, mem: Memory, rnd: DERandoms, lower, upper, integer, P,
                eq_tol, level):
        # X (N, *batch, S); f, cv (*batch, S); bounds broadcast as (N, *1, 1)
        X, f, cv = pop
        xp = namespace(X)
        dev = getattr(X, "device", None)
        n, S = X.shape[0], X.shape[-1]
        ar1 = xp.arange(1, S + 1, device=dev)  # i + 1 (integer arithmetic: exact)
        # parameters from the memory: CR ~ N(M_CR, 0.1), F ~ Cauchy(M_F, 0.1)
        CR = xp.clip(take(mem.CR, rnd.mem) + 0.1 * rnd.normal, 0.0, 1.0)
        F = take(mem.F, rnd.mem) + 0.1 * xp.tan(math.pi * (rnd.unif - 0.5))
        F = xp.clip(xp.where(F <= 0, xp.full_like(F, 0.05), F), max=1.0)
        # donors: r1 != i, r2 != i (and r2 != r1 in the usual case)
        r1 = (ar1 + rnd.r1) % S
        r2 = (ar1 + rnd.r2) % S
        r2 = xp.where(r2 == r1, (r2 + 1) % S, r2)
        if rand1:
            v = take(X, (r1 + 1 + rnd.r2) % S) + F * (take(X, r1) - take(X, r2))
        else:
            k = sym_max(2, S * p_milli // 1000)  # symbolic in S: no recompiles
            pb = clip_max(xp.astype(rnd.pbest * k, xp.int64), k - 1)  # population is sorted
            v = X + F * (take(X, pb) - X) + F * (take(X, r1) - take(X, r2))
        genes = xp.reshape(xp.arange(n, device=dev), (n,) + (1,) * rnd.jrand.ndim)
        take_m = (rnd.cross < CR) | (genes == rnd.jrand)
        u = xp.where(take_m, v, X)
        u = xp.where(u < lower, 0.5 * (lower + X), u)
        u = xp.where(u > upper, 0.5 * (upper + X), u)
        if integers:
            u = xp.where(integer, xp.round(u), u)
        u = xp.minimum(xp.maximum(u, lower), upper)
        fu, cvu = fitness(u, P, eq_tol)
        kf, kc = handler.keys(f, cv, level)
        uf, uc = handler.keys(fu, cvu, level)
        lower_c, same_c = uc < kc, uc == kc
        win = lower_c | (same_c & (uf <= kf))
        strict = lower_c | (same_c & (uf < kf))
        Xn = xp.where(win, u, X)
        fn = xp.where(win, fu, f)
        cvn = xp.where(win, cvu, cv)
        # success-history update: weighted Lehmer mean of the strictly improving trials
        gain = xp.where(kc > 0, kc - uc, kf - uf)
        gain = xp.where(xp.isfinite(gain), gain, xp.ones_like(gain))
        w = xp.where(strict, xp.clip(gain, min=0.0) + 1e-30, xp.zeros_like(gain))
        count = xp.sum(strict, axis=-1)
        mF = xp.sum(w * F * F, axis=-1) / xp.clip(xp.sum(w * F, axis=-1), min=1e-30)
        mCR = xp.sum(w * CR, axis=-1) / xp.clip(xp.sum(w, axis=-1), min=1e-30)
        onehot = xp.arange(cfg.memory, device=dev) == mem.slot[..., None]
        here = mem.slot[..., None]  # the slot's current values (a gather: no sync)
        newF = xp.where(count > 0, mF, take(mem.F, here)[..., 0])
        newCR = xp.where(count > 0, mCR, take(mem.CR, here)[..., 0])
        memF = xp.where(onehot, newF[..., None], mem.F)
        memCR = xp.where(onehot, newCR[..., None], mem.CR)
        slot = xp.where(count > 0, (mem.slot + 1) % cfg.memory, mem.slot)
        ok, oc = handler.keys(fn, cvn, level)
        idx = sort_order(ok, oc)
        return (Population(take(Xn, idx), take(fn, idx), take(cvn, idx)),
                Memory(memF, memCR, slot), count)

    return de_step
