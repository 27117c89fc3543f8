"""The steppable search: :class:`Search`, and how its engine is built.

``solve`` is ``Search(...).run().result()``; ``solve_batch`` is the same search over
``B`` parameter instances; the island model adds a migration hook.  Building the engine
(algorithm, constraint handler, device, dtype, compile choice, budget, termination)
happens once, in ``_build.py``; finishing (polish, check, status) in ``_finish.py``.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import NamedTuple

import numpy as np

from ..certify._result import certify_result
from ..finish._interrupt import cross_checked, interrupted
from ..finish._result import Status, add_up
from ._build import (  # re-exported: the search's settings live in _build
    ALGORITHMS,
    COMPILE_THRESHOLD,
    build,
    compile_choice,
    default_pop_size,
)
from ._options import stored_options

__all__ = ["Search", "BestPoint", "build", "ALGORITHMS", "default_pop_size",
           "compile_choice", "COMPILE_THRESHOLD"]


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

    def __init__(self, objective, constraints=(), *, variables=None, bounds=None,
                 maximize=False, device="auto", dtype=None, seed=None, compile="auto",
                 **options):
        from ._build import _problem_of, _seed
        from ._options import SolveOptions

        t_start = time.perf_counter()
        opts = SolveOptions.from_kwargs(options)
        seed = _seed(seed, opts.rng)
        problem, pvec, t_lower = _problem_of(objective, constraints, variables, bounds,
                                             maximize, opts, options, "Search")
        from ..problem._bounds import parameter_box

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
            from ._checkpoint import check_writable

            check_writable(opts.checkpoint)
        search_deadline = kw.pop("search_deadline", None)
        if search_deadline is None and deadline is not None:  # a share kept for the polish
            from ._build import POLISH_TIME_SHARE

            search_deadline = deadline - (POLISH_TIME_SHARE * opts.time_limit
                                          if opts.polish and opts.time_limit else 0.0)
        self._engine = build(problem, opts, device, dtype, seed, compile, M,
                             settings=settings, deadline=search_deadline, **kw)
        self._driver = self._engine.driver
        self._results = None

    # -- stepping -----------------------------------------------------------------------
    def step(self) -> bool:
        """Run one generation; returns whether the search goes on (False once a stop
        rule holds: the status is then in :attr:`status`)."""
        from ..backend._arrays import inference

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
        from ..backend._arrays import inference

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
        from ..engine._driver import CODES

        return CODES[int(self._driver.state.code[0])]

    @property
    def population(self):
        """The current population, best first: a ``Population`` of read-only float64
        arrays ``X`` (S, n), ``f`` (S,) objective in the user's sense, ``cv`` (S,) total
        violation."""
        from ..backend._arrays import to_numpy
        from ..engine._ga import Population

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
        from ..backend._arrays import to_numpy

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
    def result(self):
        """Run to the end if needed, then polish, check in float64 and return the
        :class:`Result` (the same object on later calls)."""
        return self._finish()[0]

    def _finish(self):
        """Every instance's Result (a batch has B); the budget and the polish follow
        the same rules for every mode.  A Ctrl-C during the finishing steps stops the
        polish of the instances not yet finished: they, and the one it landed in, end
        ``INTERRUPTED`` with their best point so far, checked (:mod:`._interrupt`)."""
        from .._errors import SolveFailedError
        from ..finish._finish import diverges, finish, make_result, probe_cost, refine_batch

        if self._results is not None:
            return self._results
        self.run()
        out = self._driver.outcome()
        problem, opts, M, eng = self.problem, self._opts, self._M, self._engine
        insts = list(out)
        B = len(insts)
        t_pol = time.perf_counter()
        verdicts, refined = [None] * B, [None] * B
        stopped = False  # a Ctrl-C landed in the finishing steps
        ok = [inst.reason not in (Status.UNBOUNDED, Status.INTERRUPTED) for inst in insts]
        if B > 1 and opts.polish and problem.n <= 2000 and any(ok):
            # vectorized over the instances: the polish, the unboundedness probe
            sub = [b for b in range(B) if ok[b]]
            try:
                for b, r in zip(sub, refine_batch(problem, [insts[b] for b in sub],
                                                  M[:, sub], eng.budget)):
                    refined[b] = r
            except KeyboardInterrupt:
                refined, stopped = [None] * B, True
            # probed here: the instances the batched polish settled, with budget room
            # (the others are probed one by one after their SLSQP polish, in finish)
            cost = probe_cost(problem)
            todo = [b for b in range(B) if refined[b] is not None and refined[b][2] and (
                eng.budget.total is None or
                insts[b].nfev + refined[b][1] + cost <= eng.budget.total)]
            if todo and not stopped:
                X = np.stack([refined[b][0] for b in todo], axis=1)
                try:
                    v, used = diverges(problem, X, M[:, todo])
                    for b, vb, ub in zip(todo, v, used):
                        verdicts[b] = (bool(vb), int(ub))
                except KeyboardInterrupt:
                    stopped = True
        finished = []
        for b, inst in enumerate(insts):
            if stopped and inst.reason is not Status.INTERRUPTED:
                inst = insts[b] = inst._replace(reason=Status.INTERRUPTED)
            fin = finish(problem, inst, M[:, b], eng.budget, polish=opts.polish,
                         starts=3 if B == 1 else 1, unbounded=verdicts[b],
                         refined=refined[b], deadline=self._deadline)
            stopped = stopped or fin[4] is Status.INTERRUPTED
            finished.append(fin)
        polish_s = time.perf_counter() - t_pol
        timings = add_up({"import": eng.import_s, "lowering": self._t_lower,
                          "compile": eng.compile_s, "search": out.seconds,
                          "polish": polish_s, "check": 0.0}, self._t_start)
        self._timings = timings  # the batch's, undivided
        share = {k: v / B for k, v in timings.items()}  # each instance's share
        results = [make_result(problem, inst, *fin, seed=self._seed, device=eng.device,
                               timings=dict(share), backend=eng.backend)
                   for inst, fin in zip(insts, finished)]
        if B == 1:
            res = results[0]
            if self._cross:
                res = cross_checked(res, self._t_start, self._cross)
            if opts.certify and res.status is not Status.INTERRUPTED:
                try:
                    res = certify_result(res, problem, M[:, 0], opts, eng.device,
                                         self._t_start)
                except KeyboardInterrupt:  # before the branch-and-bound
                    res = interrupted(res, "before the certificate's branch-and-bound began")
            results[0] = res = replace(res, timings=add_up(res.timings, self._t_start))
            self._timings = dict(res.timings)
        self._results = results
        if opts.throw and B == 1 and not results[0].success:
            raise SolveFailedError(f"solve failed: {results[0].message}", results[0])
        return self._results
