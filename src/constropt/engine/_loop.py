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
    """What the search found (before polish)."""

    population: _ga.Population
    nit: int
    nfev: int
    reason: Status
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


def run(evaluate, step, lower, upper, integer, cfg: _ga.GAConfig, term: Termination,
        gen: torch.Generator, dtype, monitor=None) -> Outcome:
    """Run the GA until a termination criterion holds.

    Parameters
    ----------
    evaluate : callable
        ``X (N, K) -> (fmin (K,), cv (K,))``, for the initial population.
    step : callable
        ``step(pop, rnd) -> pop``: one generation (eager or compiled).
    lower, upper : Tensor, shape (N, 1)
    integer : Tensor of bool, shape (N, 1)
    cfg : GAConfig
    term : Termination
    gen : torch.Generator
        Seeded generator on the population's device.
    monitor : callable, optional
        ``monitor(generation, nfev, population, elapsed) -> bool``, called at every check
        point (every ``check_every`` generations); True stops the run.

    A ``KeyboardInterrupt`` during the loop ends it with status ``INTERRUPTED`` and the
    population of the last completed generation (a second one propagates as usual).
    """
    t0 = time.perf_counter()
    S, n = cfg.pop_size, lower.shape[0]
    X = _ga.initial(gen, S, lower, upper, integer, dtype)
    f, cv = evaluate(X)
    pop = _ga.survive(X, f, cv, S)
    nfev = S
    G = term.max_generations
    hist = torch.full((G + 1, 2), math.nan, dtype=dtype, device=lower.device)
    hist[0, 0], hist[0, 1] = pop.f[0], pop.cv[0]
    best_f, best_cv = float(pop.f[0]), float(pop.cv[0])
    quiet = 0
    reason = Status.MAX_GENERATIONS
    nit = 0
    try:
        for g in range(1, G + 1):
            if term.max_evals is not None and nfev + S > term.max_evals:
                reason = Status.MAX_EVALS
                break
            rnd = _ga.draw(gen, cfg, n, lower.device, dtype)
            new = step(pop, rnd)
            pop, nfev, nit = new, nfev + S, g
            hist[g, 0], hist[g, 1] = pop.f[0], pop.cv[0]
            if term.time_limit is not None and time.perf_counter() - t0 >= term.time_limit:
                reason = Status.TIME_LIMIT
                break
            if g % term.check_every == 0 or g == G:
                f_now, cv_now = float(pop.f[0]), float(pop.cv[0])  # the only sync point
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
                if monitor is not None and monitor(g, nfev, pop, time.perf_counter() - t0):
                    reason = Status.CALLBACK
                    break
                if quiet >= term.stagnation:
                    reason = Status.CONVERGED
                    break
    except KeyboardInterrupt:
        reason = Status.INTERRUPTED
    h = hist[: nit + 1].double().cpu().numpy()
    hist_nfev = S + S * np.arange(nit + 1)
    return Outcome(pop, nit, nfev, reason, hist_nfev, h[:, 0], h[:, 1],
                   time.perf_counter() - t0)
