"""Search algorithms behind one small interface the loop drives.

``start(X0)`` evaluates an initial population; ``advance(state, progress)`` runs one
generation (``progress`` is the share of the budget used, a host number);
``population(state)`` is the current :class:`Population`; ``restart(state, X0, keep)``
starts afresh from ``X0`` with the best point so far injected.  ``evals_per_step`` is
what one ``advance`` costs in point evaluations.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from . import _de, _ga
from ._ga import Population
from ._handling import Handler
from ._ranking import order

__all__ = ["GA", "GAState", "DE"]


def _inject(X, keep):
    """Put the point ``keep`` (N,) in column 0 of ``X`` (N, S)."""
    return torch.cat([keep[:, None], X[:, 1:]], dim=1)


@dataclass
class GAState:
    """The GA's state: population (best first under the handler's keys) and the
    handler's level, as :class:`DEState` without the parameter memory."""

    pop: Population
    level: torch.Tensor
    level0: torch.Tensor
    t: int = 0  # generations since the (re)start: the epsilon schedule's clock


@dataclass
class GA:
    """Tournament + SBX + polynomial mutation, (mu + lambda) survival, with a pluggable
    constraint handler (its keys rank tournaments and survival) and optional repair."""

    fit: Any          # X -> (fmin, cv)
    step_fn: Any      # compiled or eager ga_step
    cfg: _ga.GAConfig
    gen: torch.Generator
    bounds: tuple     # (lower, upper, integer), each (N, 1)
    args: tuple       # (P, eq_tol)
    handler: Handler = Handler("feasibility")
    repair: Any = None  # a _repair.Repair, applied after each step (eager)
    control_generations: int = 200  # epsilon decays to 0 over this many generations

    @property
    def evals_per_step(self) -> int:
        return self.cfg.pop_size + (self.repair.evals_per_step if self.repair else 0)

    def _keys(self, level):
        return lambda f, cv: self.handler.keys(f, cv, level)

    def start(self, X0):
        f, cv = self.fit(X0)
        level0 = self.handler.initial_level(f, cv)
        return GAState(_ga.survive(X0, f, cv, X0.shape[1], self._keys(level0)), level0,
                       level0)

    def advance(self, st: GAState, progress: float):
        lower, upper, integer = self.bounds
        rnd = _ga.draw(self.gen, self.cfg, lower.shape[0], lower.device, st.pop.X.dtype)
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
        return st.pop

    def settled(self, st: GAState) -> bool:
        """No stagnation while the epsilon level is still decaying (as for DE)."""
        return self.handler.name != "epsilon" or st.t >= self.control_generations

    def restart(self, st: GAState, X0, keep):
        return self.start(_inject(X0, keep))


@dataclass
class DEState:
    pop: Population
    mem: _de.Memory
    level: torch.Tensor
    level0: torch.Tensor
    t: int = 0  # generations since the (re)start: the epsilon schedule's clock


@dataclass
class DE:
    """SHADE-style differential evolution with a pluggable constraint handler."""

    fit: Any
    step_fn: Any
    cfg: _de.DEConfig
    handler: Handler
    gen: torch.Generator
    bounds: tuple
    args: tuple
    pop_size: int
    repair: Any = None  # a _repair.Repair, applied after each step (eager)
    control_generations: int = 200  # epsilon decays to 0 over this many generations

    @property
    def evals_per_step(self) -> int:
        return self.pop_size + (self.repair.evals_per_step if self.repair else 0)

    def start(self, X0):
        f, cv = self.fit(X0)
        level0 = self.handler.initial_level(f, cv)
        kf, kc = self.handler.keys(f, cv, level0)
        idx = order(kf, kc)
        pop = Population(X0[:, idx], f[idx], cv[idx])
        return DEState(pop, _de.new_memory(self.cfg, X0.device, X0.dtype), level0, level0)

    def advance(self, st: DEState, progress: float):
        lower, upper, integer = self.bounds
        n, S = st.pop.X.shape
        rnd = _de.draw(self.gen, self.cfg, n, S, lower.device, st.pop.X.dtype)
        pop, mem, _ = self.step_fn(st.pop, st.mem, rnd, lower, upper, integer, *self.args,
                                   st.level)
        if self.repair is not None:
            pop = self.repair(pop, lambda f, cv: self.handler.keys(f, cv, st.level))
            kf, kc = self.handler.keys(pop.f, pop.cv, st.level)
            idx = order(kf, kc)
            pop = Population(pop.X[:, idx], pop.f[idx], pop.cv[idx])
        t = st.t + 1
        level = self.handler.next_level(st.level, st.level0, t / self.control_generations,
                                        pop.cv[0])
        return DEState(pop, mem, level, st.level0, t)

    def population(self, st: DEState) -> Population:
        return st.pop

    def settled(self, st: DEState) -> bool:
        """No stagnation while the epsilon level is still decaying: until then the raw
        best point may legitimately stall while the search moves towards the set."""
        return self.handler.name != "epsilon" or st.t >= self.control_generations

    def restart(self, st: DEState, X0, keep):
        return self.start(_inject(X0, keep))
