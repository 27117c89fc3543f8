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

from . import _ga
from ._ranking import better
from ._status import Status

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
    collapse: bool = True  # stop when the population has collapsed (see _collapsed)


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


def _collapsed(pop, ftol: float) -> bool:
    """The whole population is feasible and its objectives agree to ``ftol`` (relative):
    nothing is left to select from, so waiting for stagnation would only spend time."""
    if ftol <= 0 or bool((pop.cv > 0).any()):
        return False
    lo, hi = float(pop.f.min()), float(pop.f.max())
    return math.isfinite(lo) and hi - lo <= ftol * max(1.0, abs(lo))


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


@dataclass
class LoopState:
    """Everything the loop needs to continue exactly where it stopped (checkpoints).

    ``alg`` is the algorithm's state; ``best`` the best point ever ``(x, f, cv)``
    (tensors); ``best_f``/``best_cv`` their host copies at the last check point;
    ``hist`` (G + 1, 2) and ``hist_nfev`` (G + 1,) the history so far.
    """

    alg: object
    best: tuple
    g: int
    nfev: int
    quiet: int
    restarts: int
    best_f: float
    best_cv: float
    hist: torch.Tensor
    hist_nfev: np.ndarray
    elapsed: float = 0.0


def initial_state(algorithm, X0, term: Termination) -> LoopState:
    """Evaluate ``X0`` and build the loop state at generation 0."""
    alg = algorithm.start(X0)
    pop = algorithm.population(alg)
    i0 = _raw_best(pop)
    best = (pop.X[:, i0], pop.f[i0], pop.cv[i0])
    G = term.max_generations
    hist = torch.full((G + 1, 2), math.nan, dtype=pop.f.dtype, device=pop.f.device)
    hist[0, 0], hist[0, 1] = best[1], best[2]
    hist_nfev = np.zeros(G + 1, dtype=np.int64)
    hist_nfev[0] = X0.shape[1]
    return LoopState(alg, best, 0, X0.shape[1], 0, 0, float(best[1]), float(best[2]), hist,
                     hist_nfev)


def run(algorithm, X0, term: Termination, *, monitor=None, restarts: int = 0,
        new_population=None, state: LoopState | None = None, checkpoint=None,
        checkpoint_every: int = 0, on_generation=None) -> Outcome:
    """Drive ``algorithm`` (see :mod:`._algorithms`) until a termination criterion holds.

    Parameters
    ----------
    algorithm : GA or DE
    X0 : Tensor, shape (N, S)
        Initial population (ignored when ``state`` is given).
    term : Termination
    monitor : callable, optional
        ``monitor(generation, nfev, population, elapsed) -> bool``, called at every check
        point (every ``check_every`` generations); True stops the run.
    restarts : int
        On stagnation, start again from ``new_population()`` (with the best point so far
        injected) up to this many times, while the budget allows.
    new_population : callable, optional
        ``() -> Tensor (N, S)``, a fresh random population for restarts.
    state : LoopState, optional
        Continue from this state (a checkpoint) instead of starting from ``X0``.
    checkpoint : callable, optional
        ``checkpoint(state)`` is called every ``checkpoint_every`` generations.
    on_generation : callable, optional
        ``on_generation(state, algorithm)`` after every generation; it may replace
        ``state.alg`` (migration between islands uses this) and return True to stop.

    A ``KeyboardInterrupt`` during the loop ends it with status ``INTERRUPTED`` and the
    best point of the generations completed (a second one propagates as usual).
    """
    t0 = time.perf_counter()
    st = state if state is not None else initial_state(algorithm, X0, term)
    elapsed0 = st.elapsed
    S = algorithm.evals_per_step
    G = term.max_generations
    reason = Status.MAX_GENERATIONS
    try:
        for g in range(st.g + 1, G + 1):
            if term.max_evals is not None and st.nfev + S > term.max_evals:
                reason = Status.MAX_EVALS
                break
            progress = g / G
            if term.max_evals is not None:
                progress = max(progress, st.nfev / term.max_evals)
            alg = algorithm.advance(st.alg, progress)
            best = _merge(st.best, algorithm.population(alg))
            st.alg, st.best, st.nfev, st.g = alg, best, st.nfev + S, g
            hook_stop = False
            if on_generation is not None:
                hook_stop = bool(on_generation(st, algorithm))
                best = st.best = _merge(st.best, algorithm.population(st.alg))
            st.hist[g, 0], st.hist[g, 1] = best[1], best[2]
            st.hist_nfev[g] = st.nfev
            if hook_stop:
                reason = Status.CALLBACK
                break
            if term.time_limit is not None and \
                    elapsed0 + time.perf_counter() - t0 >= term.time_limit:
                reason = Status.TIME_LIMIT
                break
            if g % term.check_every == 0 or g == G:
                f_now, cv_now = float(best[1]), float(best[2])  # the only sync point
                if _improved(f_now, cv_now, st.best_f, st.best_cv, term.ftol):
                    st.quiet = 0
                else:
                    st.quiet += term.check_every
                st.best_f, st.best_cv = f_now, cv_now
                if term.target is not None and cv_now == 0 and f_now <= term.target:
                    reason = Status.TARGET
                    break
                if cv_now == 0 and f_now == -math.inf:
                    reason = Status.UNBOUNDED
                    break
                if monitor is not None and monitor(g, st.nfev, algorithm.population(alg),
                                                   elapsed0 + time.perf_counter() - t0):
                    reason = Status.CALLBACK
                    break
                if (st.quiet >= term.stagnation or term.collapse and _collapsed(
                        algorithm.population(st.alg), term.ftol)) \
                        and algorithm.settled(st.alg):
                    room = term.max_evals is None or \
                        st.nfev + (term.stagnation + 1) * S <= term.max_evals
                    if st.restarts < restarts and new_population is not None and room:
                        X1 = new_population()
                        st.alg = algorithm.restart(st.alg, X1, best[0])
                        st.nfev += X1.shape[1]
                        st.restarts += 1
                        st.quiet = 0
                    else:
                        reason = Status.CONVERGED
                        break
            if checkpoint is not None and checkpoint_every and g % checkpoint_every == 0:
                st.elapsed = elapsed0 + time.perf_counter() - t0
                checkpoint(st)
    except KeyboardInterrupt:
        reason = Status.INTERRUPTED
    nit = st.g
    h = st.hist[: nit + 1].double().cpu().numpy()
    return Outcome(algorithm.population(st.alg), st.best[0], float(st.best[1]),
                   float(st.best[2]), nit, st.nfev, reason, st.restarts,
                   st.hist_nfev[: nit + 1].copy(), h[:, 0], h[:, 1],
                   elapsed0 + time.perf_counter() - t0)
