"""The genetic algorithm: its generation (tournament, SBX, mutation, repair, evaluation,
(mu + lambda) survival) and :class:`GA`, the algorithm the driver steps (one instance).

Tournaments and survival compare the constraint handler's keys (see
:mod:`._handling`): feasibility rules by default, or the epsilon, penalty or death keys
at the handler's per-generation ``level``.  The population keeps the raw objective and
violation; only comparisons see the keys.

``draw`` takes every random number a generation needs from a seeded generator;
``step`` is then a pure function of arrays (no host synchronisation, no
data-dependent shapes), which ``torch.compile`` can fuse whole.  Written against the
array namespace of its inputs (:mod:`constropt.backend._arrays`): NumPy arrays or torch tensors.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, NamedTuple

import numpy as np

from ..backend._arrays import Random, asarray, namespace
from ._handling import FeasibilityRules, Handler
from ._ranking import order, select
from ._selection import tournament
from ._variation import polynomial_mutation, repair, sbx

__all__ = ["GAConfig", "Population", "GARandoms", "draw", "make_step", "initial", "seeded",
           "survive", "merge", "inject", "replace_worst", "GAState", "GA"]


@dataclass(frozen=True)
class GAConfig:
    """Shape-fixing GA settings (changing one changes the compiled step).

    Attributes
    ----------
    pop_size : int
        Individuals ``S`` (even).
    eta_c, eta_m : float
        SBX and polynomial-mutation distribution indices.
    p_cross : float
        Probability that a pair crosses over (then each gene crosses with probability 1/2).
    p_mut : float
        Per-gene mutation probability.
    """

    pop_size: int
    eta_c: float = 15.0
    eta_m: float = 20.0
    p_cross: float = 0.9
    p_mut: float = 0.1


class Population(NamedTuple):
    """Variable-major population, the best individual first (column 0).

    ``X`` (N, S); ``f`` (S,) minimization key; ``cv`` (S,) total violation.  Only the
    first individual's place is meaningful: the others come in no particular order.
    """

    X: Any
    f: Any
    cv: Any


class GARandoms(NamedTuple):
    """Random numbers for one generation (see :func:`draw`).

    Few, packed draws: the generator is the slowest part of a large generation, so the
    per-gene decisions and uniforms are bit fields of raw random integers, unpacked
    inside the (compiled) step where they fuse into the operators that use them.
    """

    tour: Any      # (2, S) int32 contestants
    cross: Any     # (N, S/2) int32, 31 random bits: bit 0 gene crosses,
    #                bit 1 swap, bits 7-30 SBX spread u
    pair: Any      # (1, S/2) bool: pair crosses over (p_cross)
    mut: Any       # (N, S) int64, 63 random bits: bits 0-23 mutation u,
    #                bits 39-62 compared with mut_thr
    mut_thr: Any   # () int64: a gene mutates when bits 39-62 < round(p_mut 2^24)


_U24 = 2.0 ** -24
_M24 = 0xFFFFFF
_THR: dict = {}


def _threshold(p: float, like):
    """The cached 0-d int64 array ``round(p * 2^24)`` on ``like``'s backend and device (an
    array, so p_mut never recompiles)."""
    xp = namespace(like)
    key = (float(p), str(xp.__name__), str(getattr(like, "device", "")))
    t = _THR.get(key)
    if t is None:
        t = _THR[key] = xp.full((), round(p * 2**24), dtype=xp.int64,
                                device=getattr(like, "device", None))
    return t


def draw(rng: Random, cfg: GAConfig, n: int) -> GARandoms:
    """Every random number of one generation, from ``rng`` (eager, seeded)."""
    S, H = cfg.pop_size, cfg.pop_size // 2
    tour = rng.integers(S, (2, S), dtype=_int32(rng))
    cross = rng.bits((n, H), wide=False)
    pair = rng.uniform((1, H)) < cfg.p_cross
    mut = rng.bits((n, S), wide=True)
    return GARandoms(tour, cross, pair, mut, _threshold(cfg.p_mut, mut))


def _int32(rng: Random):
    if rng.torch:
        import torch  # lazy: only a torch generator asks, and the NumPy path never imports it

        return torch.int32
    return np.int32


def unpack_cross(rnd: GARandoms, dtype):
    """``(u, do_gene, swap)`` of SBX from the packed bits, shapes (N, S/2)."""
    c = rnd.cross  # 31 random bits
    xp = namespace(c)
    return xp.astype(c >> 7, dtype) * _U24, ((c & 1) != 0) & rnd.pair, (c & 2) != 0


def unpack_mut(rnd: GARandoms, dtype):
    """``(u, do_gene)`` of polynomial mutation from the packed bits, shapes (N, S)."""
    m = rnd.mut  # 63 random bits
    xp = namespace(m)
    return xp.astype(m & _M24, dtype) * _U24, (m >> 39) < rnd.mut_thr


def initial(rng: Random, S: int, lower, upper, integer, dtype):
    """Uniform random population in the box, shape (N, S); integer genes uniform on
    their integers."""
    n = lower.shape[0]
    xp = namespace(lower)
    u = rng.uniform((n, S), dtype=dtype)
    lo_i = xp.where(integer, lower - 0.5, lower)
    hi_i = xp.where(integer, upper + 0.5, upper)
    X = lo_i + u * (hi_i - lo_i)
    return repair(X, lower, upper, integer)


def seeded(X, starts):
    """``X`` (N, B, S) with its first ``k`` members replaced, in every instance, by the
    points ``starts`` (N, k) (user starting points, already in the box)."""
    if starts is None:
        return X
    xp = namespace(X)
    N, B, _ = X.shape
    k = starts.shape[1]
    head = xp.broadcast_to(xp.astype(starts, X.dtype)[:, None, :], (N, B, k))
    return xp.concat([head, X[..., k:]], axis=-1)


def _raw_keys(f, cv):
    return f, cv


def survive(X, f, cv, S: int, keys=_raw_keys) -> Population:
    """Keep the best ``S`` of a population under ``keys(f, cv) -> (kf, kcv)`` (default:
    feasibility rules on the raw pair), the best first (the rest unordered)."""
    idx = select(*keys(f, cv), S)
    return Population(namespace(X).take(X, idx, axis=1), f[idx], cv[idx])


def merge(pop: Population, kids, fk, cvk, keys=_raw_keys) -> Population:
    """(mu + lambda) survival: the best ``S`` of parents and children under ``keys``,
    the best first."""
    S = pop.f.shape[0]
    xp = namespace(pop.X)
    f = xp.concat([pop.f, fk])
    cv = xp.concat([pop.cv, cvk])
    idx = select(*keys(f, cv), S)
    X = xp.take(xp.concat([pop.X, kids], axis=1), idx, axis=1)
    return Population(X, f[idx], cv[idx])


def make_step(fitness, eta_c: float, eta_m: float, handler=None):
    """Build the generation step around a generated ``fitness(X, P, eq_tol)``.

    The returned ``step(pop, rnd, lower, upper, integer, P, eq_tol, level=None)`` takes
    every size from its arrays' shapes, so one compiled step serves every population
    size.  ``handler`` (a :class:`~._handling.Handler`; default feasibility rules) maps
    ``(f, cv)`` to the keys tournaments and survival compare, at ``level`` (a 0-d
    tensor: the epsilon level or penalty weight of this generation).
    """

    def ga_step(pop: Population, rnd: GARandoms, lower, upper, integer, P, eq_tol,
                level=None):
        S = pop.f.shape[0]
        H = S // 2

        def keys(f, cv):
            return (f, cv) if handler is None else handler.keys(f, cv, level)

        xp = namespace(pop.X)
        w = tournament(*keys(pop.f, pop.cv), rnd.tour)
        p1 = xp.take(pop.X, w[:H], axis=1)
        p2 = xp.take(pop.X, w[H:], axis=1)
        u_x, do_x, swap = unpack_cross(rnd, pop.X.dtype)
        c1, c2 = sbx(p1, p2, lower, upper, u_x, do_x, swap, eta_c)
        kids = xp.concat([c1, c2], axis=1)
        u_m, do_m = unpack_mut(rnd, pop.X.dtype)
        kids = polynomial_mutation(kids, lower, upper, u_m, do_m, eta_m)
        kids = repair(kids, lower, upper, integer)
        fk, cvk = fitness(kids, P, eq_tol)
        return merge(pop, kids, fk, cvk, keys)

    return ga_step


def inject(X, keep):
    """Put the points ``keep`` (N, B) first in each instance of ``X`` (N, B, S); ``X``
    as it is when ``keep`` is None."""
    if keep is None:
        return X
    return namespace(X).concat([keep[..., None], X[..., 1:]], axis=-1)


def replace_worst(algorithm, alg_state, Xm, fm, cvm):
    """The state with the worst ``m`` members of its one population (a single instance)
    replaced by the points ``Xm`` (N, m) with ``fm``, ``cvm`` (m,), re-sorted best first
    under the algorithm's comparison keys (the handler's for DE, feasibility rules for
    the GA), which keeps both algorithms' invariants.  The new points are taken onto the
    population's backend, device and dtype.  Used by migration (the islands) and by the
    local solves inside the search (:mod:`._multistart`)."""
    pop = algorithm.population(alg_state)
    X, f, cv = pop.X[:, 0], pop.f[0], pop.cv[0]
    xp = namespace(f)

    def keys(f_, cv_):
        kf, kc = algorithm.keys(f_[None], cv_[None], alg_state)
        return kf.reshape(-1), kc.reshape(-1)

    keep = order(*keys(f, cv))[: X.shape[1] - Xm.shape[1]]
    X2 = xp.concat([xp.take(X, keep, axis=1), asarray(Xm, X, dtype=X.dtype)], axis=1)
    f2 = xp.concat([f[keep], asarray(fm, f, dtype=f.dtype)])
    cv2 = xp.concat([cv[keep], asarray(cvm, cv, dtype=cv.dtype)])
    idx = order(*keys(f2, cv2))
    new = Population(X2[:, idx][:, None], f2[idx][None], cv2[idx][None])
    return algorithm.with_population(alg_state, new)


@dataclass
class GAState:
    """The GA's state (one instance): population (N, S), best first under the handler's
    keys, and the handler's level, as :class:`~._de.DEState` without the parameter
    memory."""

    pop: Population
    level: Any
    level0: Any
    t: int = 0  # generations since the (re)start: the epsilon schedule's clock


@dataclass
class GA:
    """Tournament + SBX + polynomial mutation, (mu + lambda) survival, with a pluggable
    constraint handler (its keys rank tournaments and survival) and optional repair.

    One instance (``B == 1``): its state is a :class:`GAState` over an unbatched
    population (N, S); :meth:`population` presents it with the instance axis.  The
    interface the driver steps is described in :mod:`._algorithms`.
    """

    fit: Any          # fitness(X, P, eq_tol) -> (fmin, cv), eager
    step_fn: Any      # compiled or eager ga_step
    cfg: GAConfig
    rng: Random
    bounds: tuple     # (lower, upper, integer), each (N, 1)
    args: tuple       # (P (n_p, 1), eq_tol)
    handler: Handler = FeasibilityRules()
    repair: Any = None  # a _repair.Repair, applied after each step (eager)
    control_generations: int = 200  # epsilon decays to 0 over this many generations

    @property
    def evals_per_step(self) -> int:
        return self.cfg.pop_size + (self.repair.evals_per_step if self.repair else 0)

    @property
    def sorted_raw(self) -> bool:
        return self.handler.raw_keys

    def _keys(self, level):
        return lambda f, cv: self.handler.keys(f, cv, level)

    def start(self, X0):
        X = X0[:, 0]
        f, cv = self.fit(X, *self.args)
        level0 = self.handler.initial_level(f, cv)
        return GAState(survive(X, f, cv, X.shape[1], self._keys(level0)), level0, level0)

    def advance(self, st: GAState):
        lower, upper, integer = self.bounds
        rnd = draw(self.rng, self.cfg, lower.shape[0])
        pop = self.step_fn(st.pop, rnd, lower, upper, integer, *self.args, st.level)
        if self.repair is not None:
            keys = self._keys(st.level)
            pop = self.repair(pop, keys)
            pop = survive(pop.X, pop.f, pop.cv, pop.f.shape[0], keys)
        t = st.t + 1
        level = self.handler.next_level(st.level, st.level0, t / self.control_generations,
                                        pop.cv[0])
        return GAState(pop, level, st.level0, t)

    def population(self, st: GAState) -> Population:
        return Population(st.pop.X[:, None], st.pop.f[None], st.pop.cv[None])

    def with_population(self, st: GAState, new: Population) -> GAState:
        return replace(st, pop=Population(new.X[:, 0], new.f[0], new.cv[0]))

    def keys(self, f, cv, st: GAState):
        return self.handler.keys(f, cv, st.level)

    def settled(self, since):
        """No stagnation while the handler's level still decays (as for DE)."""
        return self.handler.settled(since, self.control_generations)

    def restart(self, st: GAState, rows, X1, keep):
        return self.start(inject(X1, keep))

    def compact(self, st, rows):  # pragma: no cover - one instance never compacts
        raise NotImplementedError("the GA runs one instance")
