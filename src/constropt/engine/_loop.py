"""The generation loop: initial population, steps, termination, history.

The device is synchronised only every ``check_every`` generations (to read the best
point for the stagnation and target tests); the time limit is checked every generation
from the host clock, which needs no synchronisation.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import torch

from .._result import Status
from . import _ga
from ._ranking import better

__all__ = ["Termination", "Outcome", "run"]


@dataclass(frozen=True)
class Termination:
    """When the search stops (every criterion optional except ``max_generations``)."""

    max_generations: int
    max_evals: int | None = None
    time_limit: float | None = None
    target: float | None = None  # minimization key
    stagnation: int = 60
    ftol: float = 1e-10
    check_every: int = 10


@dataclass
class Outcome:
    """What the search found (before polish).

    ``best_x`` (N,), ``best_f``, ``best_cv``: the best point ever seen under feasibility
    rules (whatever handler steered the search); ``population`` the last one.
    """

    population: _ga.Population
    best_x: torch.Tensor
    best_f: float
    best_cv: float
    nit: int
    nfev: int
    reason: Status
    restarts: int
    hist_nfev: np.ndarray
    hist_f: np.ndarray
    hist_cv: np.ndarray
    seconds: float


def _improved(f_new, cv_new, f_old, cv_old, ftol) -> bool:
    if cv_new < cv_old:
        return cv_old - cv_new > ftol * max(1.0, cv_old) or cv_new == 0.0
    if cv_new > cv_old or cv_new > 0:
        return False
    return f_old - f_new > ftol * max(1.0, abs(f_old)) if math.isfinite(f_old) else \
        f_new < f_old


def _raw_best(pop):
    """Index of the best point under feasibility rules (no sync)."""
    cvmin = pop.cv.min()
    masked = torch.where(pop.cv == cvmin, pop.f, torch.full_like(pop.f, math.inf))
    return torch.argmin(masked)


def _merge(best, pop):
    """Keep the better of the stored best ``(x, f, cv)`` and the population's best."""
    i = _raw_best(pop)
    x, f, cv = pop.X[:, i], pop.f[i], pop.cv[i]
    bx, bf, bcv = best
    take = better(f, cv, bf, bcv)
    return torch.where(take, x, bx), torch.where(take, f, bf), torch.where(take, cv, bcv)


def run(algorithm, X0, term: Termination, *, monitor=None, restarts: int = 0,
        new_population=None) -> Outcome:
    """Drive ``algorithm`` (see :mod:`._algorithms`) until a termination criterion holds.

    Parameters
    ----------
    algorithm : GA or DE
    X0 : Tensor, shape (N, S)
        Initial population.
    term : Termination
    monitor : callable, optional
        ``monitor(generation, nfev, population, elapsed) -> bool``, called at every check
        point (every ``check_every`` generations); True stops the run.
    restarts : int
        On stagnation, start again from ``new_population()`` (with the best point so far
        injected) up to this many times, while the budget allows.
    new_population : callable, optional
        ``() -> Tensor (N, S)``, a fresh random population for restarts.

    A ``KeyboardInterrupt`` during the loop ends it with status ``INTERRUPTED`` and the
    best point of the generations completed (a second one propagates as usual).
    """
    t0 = time.perf_counter()
    state = algorithm.start(X0)
    S = algorithm.evals_per_step
    pop = algorithm.population(state)
    i0 = _raw_best(pop)
    best = (pop.X[:, i0], pop.f[i0], pop.cv[i0])
    nfev = X0.shape[1]
    G = term.max_generations
    hist = torch.full((G + 1, 2), math.nan, dtype=pop.f.dtype, device=pop.f.device)
    hist[0, 0], hist[0, 1] = best[1], best[2]
    hist_nfev = np.zeros(G + 1, dtype=np.int64)
    hist_nfev[0] = nfev
    best_f, best_cv = float(best[1]), float(best[2])
    quiet, used_restarts = 0, 0
    reason = Status.MAX_GENERATIONS
    nit = 0
    try:
        for g in range(1, G + 1):
            if term.max_evals is not None and nfev + S > term.max_evals:
                reason = Status.MAX_EVALS
                break
            progress = g / G
            if term.max_evals is not None:
                progress = max(progress, nfev / term.max_evals)
            new_state = algorithm.advance(state, progress)
            new_best = _merge(best, algorithm.population(new_state))
            state, best, nfev, nit = new_state, new_best, nfev + S, g
            hist[g, 0], hist[g, 1] = best[1], best[2]
            hist_nfev[g] = nfev
            if term.time_limit is not None and time.perf_counter() - t0 >= term.time_limit:
                reason = Status.TIME_LIMIT
                break
            if g % term.check_every == 0 or g == G:
                f_now, cv_now = float(best[1]), float(best[2])  # the only sync point
                if _improved(f_now, cv_now, best_f, best_cv, term.ftol):
                    quiet = 0
                else:
                    quiet += term.check_every
                best_f, best_cv = f_now, cv_now
                if term.target is not None and cv_now == 0 and f_now <= term.target:
                    reason = Status.TARGET
                    break
                if cv_now == 0 and f_now == -math.inf:
                    reason = Status.UNBOUNDED
                    break
                if monitor is not None and monitor(g, nfev, algorithm.population(state),
                                                   time.perf_counter() - t0):
                    reason = Status.CALLBACK
                    break
                if quiet >= term.stagnation:
                    room = term.max_evals is None or \
                        nfev + (term.stagnation + 1) * S <= term.max_evals
                    if used_restarts < restarts and new_population is not None and room:
                        X1 = new_population()
                        state = algorithm.restart(state, X1, best[0])
                        nfev += X1.shape[1]
                        used_restarts += 1
                        quiet = 0
                        continue
                    reason = Status.CONVERGED
                    break
    except KeyboardInterrupt:
        reason = Status.INTERRUPTED
    h = hist[: nit + 1].double().cpu().numpy()
    return Outcome(algorithm.population(state), best[0], float(best[1]), float(best[2]), nit,
                   nfev, reason, used_restarts, hist_nfev[: nit + 1], h[:, 0], h[:, 1],
                   time.perf_counter() - t0)
