"""The steppable search: :class:`Search`, and how its engine is built.

``solve`` is ``Search(...).run().result()`` (within an expanding box: :mod:`._expand`);
``solve_batch`` is the same search over ``B`` parameter instances; the island model
adds a migration hook.  Building the engine (algorithm, constraint handler, device,
dtype, compile choice, budget, termination) happens once, in ``_build.py``; finishing
(polish, check, status) in :mod:`constropt.finish._finish`, the same for every mode.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any, NamedTuple

import numpy as np
import sympy as sp

from ..backend._arrays import inference, to_numpy
from ..engine._driver import CODES
from ..engine._ga import Population
from ..finish._budget import Budget
from ..finish._finish import finish_batch, make_result
from ..finish._result import Result, Stopwatch, raise_if_failed, run_timings
from ..problem._bounds import parameter_box
from ..problem._bounds_input import BoundsLike
from ..problem._problem import Problem
from ._build import (  # re-exported: the search's settings live in _build
    ALGORITHMS,
    COMPILE_THRESHOLD,
    POLISH_TIME_SHARE,
    _problem_of,
    _seed,
    build,
    compile_choice,
    default_pop_size,
)
from ._checkpoint_folder import check_writable
from ._conclude import concluded
from ._options import SolveOptions, stored_options

__all__ = ["Search", "BestPoint", "Ended", "build", "ALGORITHMS", "default_pop_size",
           "compile_choice", "COMPILE_THRESHOLD", "search_deadline"]


def search_deadline(deadline, opts):
    """When the search of a run with ``deadline`` (a ``time.perf_counter()`` value, or
    None) stops: :data:`._build.POLISH_TIME_SHARE` of ``opts.time_limit`` before it,
    kept for the polish (the whole time where there is no polish)."""
    if deadline is None:
        return None
    return deadline - (POLISH_TIME_SHARE * opts.time_limit
                       if opts.polish and opts.time_limit else 0.0)


class Ended(NamedTuple):
    """A search run to its end: the driver's outcome per instance (``instances``, the
    :class:`~constropt.engine._driver.Instance` of each), the search's ``seconds``, and
    what building it cost and chose (``compile_s``, ``import_s``, ``device``,
    ``backend``, the evaluation ``budget`` it was given)."""

    instances: tuple
    seconds: float
    compile_s: float
    import_s: float
    device: Any
    backend: str
    budget: Budget


class BestPoint(NamedTuple):
    """The best point of a :class:`Search` so far: ``x`` (n,) float64, ``fun`` (user's
    sense), ``cv`` (total violation, 0 when feasible)."""

    x: np.ndarray
    fun: float
    cv: float


class Search:
    """A constrained search you can step generation by generation.

    ``Search(problem, **options)`` sets everything up (lowering, device, compiled
    step) and evaluates the initial population; each :meth:`step` (or ``next()``) runs
    one generation; :meth:`run` steps until a stop rule holds; :meth:`result` finishes
    the run (polish, float64 check, status) into a :class:`Result`.
    :func:`constropt.solve` is ``Search(...).run().result()``.

    Parameters
    ----------
    objective, constraints, variables, bounds, maximize, device, dtype, seed, compile
        As in :func:`constropt.solve`.
    **options
        Options of :class:`SolveOptions`.

    Examples
    --------
    >>> s = constropt.Search(x**2 + y**2, [x + y >= 1], seed=0)   # doctest: +SKIP
    >>> for best in s:                                            # doctest: +SKIP
    ...     if s.generation == 50:
    ...         break
    >>> s.best.fun, s.population.X.shape                          # doctest: +SKIP
    >>> res = s.result()          # runs on to the end, then polishes
    """

    def __init__(self, objective: sp.Expr | Problem, constraints: Iterable[Any] | sp.Basic = (),
                 *, variables: Sequence[sp.Basic] | None = None, bounds: BoundsLike = None,
                 maximize: bool = False, device: Any = "auto", dtype: Any = None,
                 seed: int | None = None, compile: bool | str = "auto",
                 **options: Any) -> None:
        t_start = time.perf_counter()
        opts = SolveOptions.from_kwargs(options)
        seed = _seed(seed, opts.rng)
        problem, pvec, t_lower = _problem_of(objective, constraints, variables, bounds,
                                             maximize, opts, options, "Search")
        problem = parameter_box(problem, pvec)  # bounds that depend on parameters follow them
        self._init(problem, opts, device, dtype, seed, compile, pvec[:, None],
                   t_start=t_start, t_lower=t_lower)

    @classmethod
    def _create(cls, problem, opts, device, dtype, seed, compile, M, *, t_start, t_lower=0.0,
                **kw):
        self = cls.__new__(cls)
        self._init(problem, opts, device, dtype, seed, compile, M, t_start=t_start,
                   t_lower=t_lower, **kw)
        return self

    def _init(self, problem, opts, device, dtype, seed, compile, M, *, t_start, t_lower,
              cross_check=False, deadline=None, **kw):
        self.problem, self._opts, self._seed, self._M = problem, opts, seed, M
        if deadline is None and opts.time_limit is not None:  # a deadline for the whole run
            deadline = t_start + opts.time_limit
        self._deadline = deadline
        self._t_start, self._t_lower, self._cross = t_start, t_lower, cross_check
        settings = kw.pop("settings", None)
        if settings is None:
            settings = {"seed": seed, "device": str(device), "dtype": dtype,
                        "compile": compile, "cross_check": cross_check,
                        "pvec": M[:, 0] if M.shape[1] == 1 else M,
                        "options": stored_options(opts)}
        if opts.checkpoint is not None:  # fail now, not after the whole search
            check_writable(opts.checkpoint)
        stop = kw.pop("search_deadline", None)
        if stop is None:  # a share kept for the polish
            stop = search_deadline(deadline, opts)
        self._engine = build(problem, opts, device, dtype, seed, compile, M,
                             settings=settings, deadline=stop, **kw)
        self._driver = self._engine.driver
        self._results = None

    # -- stepping -----------------------------------------------------------------------
    def step(self) -> bool:
        """Run one generation; returns whether the search goes on (False once a stop
        rule holds: the status is then in :attr:`status`)."""
        with inference(self._engine.backend):
            going = self._driver.step()
        if not going and self._engine.monitor is not None:
            self._engine.monitor.finish()
        return going

    def __iter__(self):
        return self

    def __next__(self):
        """One generation; returns :attr:`best` (StopIteration once stopped)."""
        if self.done:
            raise StopIteration
        self.step()
        return self.best

    def run(self) -> Search:
        """Step until a stop rule holds; returns ``self``.  A Ctrl-C stops the search as
        ``INTERRUPTED`` wherever it lands, inside a generation or between two (a NumPy
        generation takes microseconds, so "between" is common)."""
        try:
            with inference(self._engine.backend):  # entered once, not per generation
                while self._driver.step():
                    pass
            if self._engine.monitor is not None:
                self._engine.monitor.finish()
        except KeyboardInterrupt:
            with inference(self._engine.backend):  # the state's tensors are inference ones
                self._driver.interrupt()
            if self._engine.monitor is not None:
                self._engine.monitor.finish()
        return self

    # -- inspection (host copies, read-only) ----------------------------------------------
    @property
    def done(self) -> bool:
        """Whether the search has stopped."""
        return self._driver.done

    @property
    def generation(self) -> int:
        """Generations run so far."""
        return self._driver.generation

    @property
    def nfev(self) -> int:
        """Point evaluations so far (instance 0)."""
        return int(self._driver.state.nfev[0])

    @property
    def status(self):
        """Why the search stopped (a :class:`Status`), or None while it runs."""
        return CODES[int(self._driver.state.code[0])]

    @property
    def population(self):
        """The current population, best first: a ``Population`` of read-only float64
        arrays ``X`` (S, n), ``f`` (S,) objective in the user's sense, ``cv`` (S,) total
        violation."""
        d = self._driver
        pop = d.algorithm.population(d.state.alg)
        X, f, cv = (np.array(to_numpy(a), dtype=np.float64)
                    for a in (pop.X[:, 0], pop.f[0], pop.cv[0]))
        sign = -1.0 if self.problem.maximize else 1.0
        out = Population(np.ascontiguousarray(X.T), sign * f, cv)
        for a in out:
            a.setflags(write=False)
        return out

    @property
    def best(self):
        """The best point so far: ``(x, fun, cv)`` with ``x`` (n,) read-only float64,
        ``fun`` in the user's sense (working precision; :meth:`result` checks in
        float64)."""
        st = self._driver.state
        if not self.done:
            x, f, cv = st.best.x[:, 0], st.best.f[0], st.best.cv[0]
            x = np.array(to_numpy(x), dtype=np.float64)
            f, cv = float(f), float(cv)
        else:
            x, f, cv = np.array(to_numpy(st.final_x[:, 0]), dtype=np.float64), \
                float(st.final_f[0]), float(st.final_cv[0])
        x.setflags(write=False)
        return BestPoint(x, -f if self.problem.maximize else f, cv)

    # -- finishing ----------------------------------------------------------------------
    def result(self) -> Result:
        """Run to the end if needed, then polish, check in float64 and return the
        :class:`Result` (the same object on later calls)."""
        return self._finish()[0]

    def _ended(self) -> Ended:
        """Run to the end if needed; what the search found and what it cost
        (:class:`Ended`), for the finishing steps (here, and in ``solve``'s rounds)."""
        self.run()
        out, eng = self._driver.outcome(), self._engine
        return Ended(tuple(out), out.seconds, eng.compile_s, eng.import_s, eng.device,
                     eng.backend, eng.budget)

    def _finish(self):
        """Every instance's Result (a batch has B), through the one finishing path of
        every mode (:func:`constropt.finish._finish.finish_batch`); a single instance
        then takes the run's optional steps (:func:`._conclude.concluded`) and, with
        ``throw``, raises when it failed.  ``self._timings``: the batch's timings,
        undivided (each Result holds its share)."""
        if self._results is not None:
            return self._results
        end = self._ended()
        problem, opts, M = self.problem, self._opts, self._M
        watch = Stopwatch()
        finished = finish_batch(problem, end.instances, M,
                                replace(end.budget, deadline=self._deadline),
                                polish=opts.polish, watch=watch)
        B = len(finished)
        timings = run_timings(watch, self._t_start, import_s=end.import_s,
                              lowering=self._t_lower, compile_s=end.compile_s,
                              search=end.seconds)
        self._timings = timings
        share = {k: v / B for k, v in timings.items()}  # each instance's share
        results = [make_result(problem, inst, fin, seed=self._seed, device=end.device,
                               timings=dict(share), backend=end.backend)
                   for inst, fin in zip(end.instances, finished)]
        if B == 1:
            results[0] = concluded(results[0], problem, M[:, 0], opts, end.device,
                                   self._t_start, self._cross)
            self._timings = dict(results[0].timings)
        self._results = results
        if B == 1:
            raise_if_failed(results[0], opts.throw)
        return self._results
