"""Differential evolution with success-history parameter adaptation (the SHADE family):
its generation and :class:`DE`, the algorithm the driver steps (``B >= 1`` instances).

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
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

import numpy as np

from ..backend._arrays import Random, asarray, clip_max, namespace, put_rows, sym_max, take
from ._ga import Population, inject
from ._handling import Handler
from ._ranking import order

__all__ = ["DEConfig", "Memory", "DERandoms", "draw", "make_step", "new_memory", "take",
           "sort_order", "DEState", "DE"]


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


@dataclass
class DEState:
    """DE state per instance: population (sorted best-first under the handler's keys),
    success-history memory, the handler's level and initial level (B, 1) and the
    epsilon schedule's clock ``t`` (B, 1), generations since the (re)start."""

    pop: Population
    mem: Memory
    level: Any
    level0: Any
    t: Any


def _rows(st: DEState, fn_x, fn) -> DEState:
    """Apply ``fn_x`` to the population (instance axis 1) and ``fn`` to every other
    per-instance tensor (instance axis 0)."""
    return DEState(Population(fn_x(st.pop.X), fn(st.pop.f), fn(st.pop.cv)),
                   Memory(fn(st.mem.F), fn(st.mem.CR), fn(st.mem.slot)),
                   fn(st.level), fn(st.level0), fn(st.t))


@dataclass
class DE:
    """SHADE-style differential evolution with a pluggable constraint handler, over a
    batch of instances (parameters ``P`` (n_p, B, 1)).  The interface the driver steps
    is described in :mod:`._algorithms`."""

    fit: Any
    step_fn: Any
    cfg: DEConfig
    handler: Handler
    rng: Random
    bounds: tuple     # (lower, upper, integer), each (N, 1, 1)
    args: tuple       # (P (n_p, B, 1), eq_tol)
    pop_size: int
    repair: Any = None  # a _repair.Repair, applied after each step (eager, B == 1)
    control_generations: int = 200  # epsilon decays to 0 over this many generations

    def __post_init__(self):
        self._table = None

    @property
    def evals_per_step(self) -> int:
        return self.pop_size + (self.repair.evals_per_step if self.repair else 0)

    @property
    def sorted_raw(self) -> bool:
        return self.handler.raw_keys

    def keys(self, f, cv, st: DEState):
        return self.handler.keys(f, cv, st.level)

    def start(self, X0):
        f, cv = self.fit(X0, *self.args)
        level0 = self.handler.initial_level(f, cv)[..., None]
        kf, kc = self.handler.keys(f, cv, level0)
        idx = sort_order(kf, kc)
        pop = Population(take(X0, idx), take(f, idx), take(cv, idx))
        B = X0.shape[1]
        xp = namespace(X0)
        t = xp.zeros((B, 1), dtype=xp.int64, device=getattr(X0, "device", None))
        return DEState(pop, new_memory(self.cfg, X0, (B,)), level0, level0, t)

    def _schedule(self, like):
        """The decay factor per clock value 0..Tc (a host table built once: the level
        is ``level0 * table[t]``, the same numbers as the handler's formula, no sync)."""
        if self._table is None or self._table.dtype != like.dtype or \
                type(self._table) is not type(like):
            one = np.ones((), dtype=np.float64)
            Tc = self.control_generations
            vals = [float(self.handler.next_level(one, one, t / Tc, None))
                    for t in range(Tc + 1)]
            self._table = asarray(vals, like, dtype=like.dtype)
        return self._table

    def advance(self, st: DEState):
        lower, upper, integer = self.bounds
        n, B, S = st.pop.X.shape
        rnd = draw(self.rng, self.cfg, n, S, st.pop.X.dtype, (B,))
        pop, mem, _ = self.step_fn(st.pop, st.mem, rnd, lower, upper, integer, *self.args,
                                   st.level)
        if self.repair is not None:
            pop = self._repair(pop, st.level.reshape(()))
        t = st.t + 1
        if self.handler.decays:  # a factor of the clock alone: read from the table
            table = self._schedule(st.level0)
            level = st.level0 * table[t.clip(max=table.shape[0] - 1)]
        else:
            level = self.handler.next_level(st.level, st.level0, 0.0, pop.cv[..., :1])
        return DEState(pop, mem, level, st.level0, t)

    def _repair(self, pop, level):
        """Gradient repair of one instance, then the population sorted again."""
        one = Population(pop.X[:, 0], pop.f[0], pop.cv[0])
        one = self.repair(one, lambda f, cv: self.handler.keys(f, cv, level))
        idx = order(*self.handler.keys(one.f, one.cv, level))
        return Population(one.X[:, idx][:, None], one.f[idx][None], one.cv[idx][None])

    def population(self, st: DEState) -> Population:
        return st.pop

    def with_population(self, st: DEState, pop: Population) -> DEState:
        return replace(st, pop=pop)

    def settled(self, since):
        """No stagnation while the handler's level still decays (see
        :meth:`~._handling.Handler.settled`)."""
        return self.handler.settled(since, self.control_generations)

    def _with_P(self, P):
        out = replace(self, args=(P,) + tuple(self.args[1:]))
        out._table = self._table
        return out

    def restart(self, st: DEState, rows, X1, keep):
        P = self.args[0]
        if rows.shape[0] == P.shape[1]:
            return self.start(inject(X1, keep))
        sub = self._with_P(namespace(P).take(P, rows, axis=1)).start(inject(X1, keep))
        return _put_rows(st, sub, rows)

    def compact(self, st: DEState, rows):
        xp = namespace(rows)
        alg = self._with_P(xp.take(self.args[0], rows, axis=1))
        return alg, _rows(st, lambda X: xp.take(X, rows, axis=1),
                          lambda a: xp.take(a, rows, axis=0))


def _put_rows(st: DEState, sub: DEState, rows) -> DEState:
    """``st`` with its instances ``rows`` replaced by those of ``sub``."""
    def put(a, b):
        return put_rows(a, 0, rows, b)

    return DEState(Population(put_rows(st.pop.X, 1, rows, sub.pop.X), put(st.pop.f, sub.pop.f),
                              put(st.pop.cv, sub.pop.cv)),
                   Memory(put(st.mem.F, sub.mem.F), put(st.mem.CR, sub.mem.CR),
                          put(st.mem.slot, sub.mem.slot)),
                   put(st.level, sub.level), put(st.level0, sub.level0), put(st.t, sub.t))
