"""Search algorithms behind one small interface the driver steps.

Populations carry an instance axis: ``X`` (N, B, S), ``f`` and ``cv`` (B, S).

- ``start(X0)`` evaluates initial populations and returns the algorithm's state;
- ``advance(state)`` runs one generation of every instance;
- ``population(state)`` is the current :class:`Population` (best first per instance);
- ``with_population(state, pop)`` the state with its population replaced (migration);
- ``keys(f, cv, state)`` the comparison keys the population is sorted by;
- ``settled(since)`` whether stagnation may be declared after ``since`` generations
  since the (re)start (host array per instance);
- ``restart(state, rows, X1, keep)`` the rows ``rows`` started afresh from ``X1``
  (N, k, S) with the best points ``keep`` (N, k) injected;
- ``compact(state, rows) -> (algorithm, state)`` only the rows ``rows`` (finished
  instances drop out of the work).

``evals_per_step`` is what one ``advance`` costs each instance in point evaluations;
``sorted_raw`` whether the population's column 0 is always its best point under
feasibility rules on the raw ``(f, cv)`` (true with the ``"feasibility"`` handler, whose
keys are the raw pair: the driver then reads the best point without searching for it).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..backend._arrays import Random, asarray, namespace, put_rows
from . import _de, _ga
from ._ga import Population
from ._handling import Handler
from ._ranking import order

__all__ = ["GA", "GAState", "DE", "DEState"]


def _inject(X, keep):
    """Put the points ``keep`` (N, B) first in each instance of ``X`` (N, B, S); ``X``
    as it is when ``keep`` is None."""
    if keep is None:
        return X
    return namespace(X).concat([keep[..., None], X[..., 1:]], axis=-1)


@dataclass
class GAState:
    """The GA's state (one instance): population (N, S), best first under the handler's
    keys, and the handler's level, as :class:`DEState` without the parameter memory."""

    pop: Population
    level: Any
    level0: Any
    t: int = 0  # generations since the (re)start: the epsilon schedule's clock


@dataclass
class GA:
    """Tournament + SBX + polynomial mutation, (mu + lambda) survival, with a pluggable
    constraint handler (its keys rank tournaments and survival) and optional repair.

    One instance (``B == 1``): its state is a :class:`GAState` over an unbatched
    population (N, S); :meth:`population` presents it with the instance axis.
    """

    fit: Any          # fitness(X, P, eq_tol) -> (fmin, cv), eager
    step_fn: Any      # compiled or eager ga_step
    cfg: _ga.GAConfig
    rng: Random
    bounds: tuple     # (lower, upper, integer), each (N, 1)
    args: tuple       # (P (n_p, 1), eq_tol)
    handler: Handler = Handler("feasibility")
    repair: Any = None  # a _repair.Repair, applied after each step (eager)
    control_generations: int = 200  # epsilon decays to 0 over this many generations

    @property
    def evals_per_step(self) -> int:
        return self.cfg.pop_size + (self.repair.evals_per_step if self.repair else 0)

    @property
    def sorted_raw(self) -> bool:
        return self.handler.name == "feasibility"

    def _keys(self, level):
        return lambda f, cv: self.handler.keys(f, cv, level)

    def start(self, X0):
        X = X0[:, 0]
        f, cv = self.fit(X, *self.args)
        level0 = self.handler.initial_level(f, cv)
        return GAState(_ga.survive(X, f, cv, X.shape[1], self._keys(level0)), level0,
                       level0)

    def advance(self, st: GAState):
        lower, upper, integer = self.bounds
        rnd = _ga.draw(self.rng, self.cfg, lower.shape[0])
        pop = self.step_fn(st.pop, rnd, lower, upper, integer, *self.args, st.level)
        if self.repair is not None:
            keys = self._keys(st.level)
            pop = self.repair(pop, keys)
            pop = _ga.survive(pop.X, pop.f, pop.cv, pop.f.shape[0], keys)
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
        """No stagnation while the epsilon level is still decaying (as for DE)."""
        since = np.asarray(since)
        if self.handler.name != "epsilon":
            return np.ones(since.shape, dtype=bool)
        return since >= self.control_generations

    def restart(self, st: GAState, rows, X1, keep):
        return self.start(_inject(X1, keep))

    def compact(self, st, rows):  # pragma: no cover - one instance never compacts
        raise NotImplementedError("the GA runs one instance")


@dataclass
class DEState:
    """DE state per instance: population (sorted best-first under the handler's keys),
    success-history memory, the handler's level and initial level (B, 1) and the
    epsilon schedule's clock ``t`` (B, 1), generations since the (re)start."""

    pop: Population
    mem: _de.Memory
    level: Any
    level0: Any
    t: Any


def _rows(st: DEState, fn_x, fn) -> DEState:
    """Apply ``fn_x`` to the population (instance axis 1) and ``fn`` to every other
    per-instance tensor (instance axis 0)."""
    return DEState(Population(fn_x(st.pop.X), fn(st.pop.f), fn(st.pop.cv)),
                   _de.Memory(fn(st.mem.F), fn(st.mem.CR), fn(st.mem.slot)),
                   fn(st.level), fn(st.level0), fn(st.t))


@dataclass
class DE:
    """SHADE-style differential evolution with a pluggable constraint handler, over a
    batch of instances (parameters ``P`` (n_p, B, 1))."""

    fit: Any
    step_fn: Any
    cfg: _de.DEConfig
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
        return self.handler.name == "feasibility"

    def keys(self, f, cv, st: DEState):
        return self.handler.keys(f, cv, st.level)

    def start(self, X0):
        f, cv = self.fit(X0, *self.args)
        level0 = self.handler.initial_level(f, cv)[..., None]
        kf, kc = self.handler.keys(f, cv, level0)
        idx = _de.sort_order(kf, kc)
        pop = Population(_de.take(X0, idx), _de.take(f, idx), _de.take(cv, idx))
        B = X0.shape[1]
        xp = namespace(X0)
        t = xp.zeros((B, 1), dtype=xp.int64, device=getattr(X0, "device", None))
        return DEState(pop, _de.new_memory(self.cfg, X0, (B,)), level0, level0, t)

    def _schedule(self, like):
        """The epsilon factor per clock value 0..Tc (a host table built once: the level
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
        rnd = _de.draw(self.rng, self.cfg, n, S, st.pop.X.dtype, (B,))
        pop, mem, _ = self.step_fn(st.pop, st.mem, rnd, lower, upper, integer, *self.args,
                                   st.level)
        if self.repair is not None:
            pop = self._repair(pop, st.level.reshape(()))
        t = st.t + 1
        if self.handler.name == "epsilon":
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
        """No stagnation while the epsilon level is still decaying: until then the raw
        best point may legitimately stall while the search moves towards the set."""
        since = np.asarray(since)
        if self.handler.name != "epsilon":
            return np.ones(since.shape, dtype=bool)
        return since >= self.control_generations

    def _with_P(self, P):
        out = replace(self, args=(P,) + tuple(self.args[1:]))
        out._table = self._table
        return out

    def restart(self, st: DEState, rows, X1, keep):
        P = self.args[0]
        if rows.shape[0] == P.shape[1]:
            return self.start(_inject(X1, keep))
        sub = self._with_P(namespace(P).take(P, rows, axis=1)).start(_inject(X1, keep))
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
                   _de.Memory(put(st.mem.F, sub.mem.F), put(st.mem.CR, sub.mem.CR),
                              put(st.mem.slot, sub.mem.slot)),
                   put(st.level, sub.level), put(st.level0, sub.level0), put(st.t, sub.t))
