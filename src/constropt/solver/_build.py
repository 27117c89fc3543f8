"""Building the engine of a search, once for every mode: algorithm, constraint handler,
population size, backend (NumPy or torch), device, dtype, compile choice, budget,
termination and the driver.  The NumPy backend never imports torch."""

from __future__ import annotations

import dataclasses
import logging
import secrets
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._errors import OptionError
from ..backend._arrays import Random, asarray, inference, is_torch
from ..backend._compile import compiled
from ..backend._devices import numpy_dtype, resolve_device, resolve_dtype
from ..engine import _ga, _memory
from ..engine._algorithms import ALGORITHMS
from ..engine._driver import Driver, Termination
from ..engine._repair import Repair
from ..finish._finish import Budget
from ..finish._snap import integer_sets, snap_array, snapped
from ..local._polish import conjunctive_leaves
from ..problem._problem import Problem
from ._checkpoint import fingerprint, problem_data, write_checkpoint
from ._localsearch import local_stage
from ._options import check_population_memory, refuse_problem_options
from ._plan import (
    BATCH_GENERATIONS,
    COMPILE_RUN_WORK,
    COMPILE_THRESHOLD,
    Plan,
    compile_choice,
    default_pop_size,
    default_restarts,
    has_equalities,
    independent_restarts,
    make_plan,
)
from ._progress import make_monitor
from ._starts import starts_of

__all__ = ["build", "ALGORITHMS", "default_pop_size", "default_restarts", "independent_restarts",
           "compile_choice", "COMPILE_THRESHOLD", "COMPILE_RUN_WORK", "BATCH_GENERATIONS",
           "starts_of"]

logger = logging.getLogger("constropt")

#: Share of ``time_limit`` kept for the polish when the search would use it all.
POLISH_TIME_SHARE = 0.1


def _seed(seed, rng=None) -> int:
    """The run's seed from ``seed=`` or scipy's ``rng=`` (an int is the seed itself; a
    numpy Generator, SeedSequence or BitGenerator gives one draw, advancing it); None for
    both: a random seed."""
    if rng is not None:
        if seed is not None:
            raise OptionError(f"pass seed= or rng=, not both (got seed={seed!r} and "
                              f"rng={rng!r})")
        if isinstance(rng, (np.random.SeedSequence, np.random.BitGenerator)):
            rng = np.random.default_rng(rng)
        if isinstance(rng, np.random.Generator):
            return int(rng.integers(0, 2**63, dtype=np.int64))
        seed = rng
    if seed is None:
        return secrets.randbits(63)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or \
            not 0 <= seed < 2**64:  # what torch.Generator.manual_seed takes (and the CLI)
        raise OptionError(f"seed must be an integer in [0, 2**64) or None, got {seed!r}")
    return int(seed)


def _problem_of(objective, constraints, variables, bounds, maximize, opts, options=None,
                who="solve"):
    """``(problem, parameter vector, seconds spent building it)`` from solve's arguments."""
    if isinstance(objective, Problem):
        if tuple(constraints) or variables is not None or bounds is not None or maximize:
            raise OptionError("pass constraints, variables, bounds and maximize to Problem(), "
                              f"not to {who}(), when the objective is already a Problem")
        refuse_problem_options(options or {}, who)
        return objective, objective.parameter_vector(opts.parameters), 0.0
    t0 = time.perf_counter()
    problem = Problem(objective, constraints, variables=variables, bounds=bounds,
                      maximize=maximize, parameters=opts.parameters, eq_tol=opts.eq_tol,
                      default_bound=opts.default_bound)
    return problem, problem.parameter_vector(None), time.perf_counter() - t0


def _make_repair(problem, opts, fit, P, tol, bounds, rng, S, backend):
    """Gradient repair when asked for, or by default when there are equalities."""
    want = opts.repair
    if want == "auto":
        want = has_equalities(problem)
    if not want or problem.has_vector_variables or not problem.leaves:
        return None
    try:
        deriv = problem.lowering.derivatives(backend)
    except Exception:  # a derivative sympy cannot lower: no repair, the search goes on
        return None
    lower, upper, integer = (b.reshape(-1, 1) for b in bounds)
    eq = asarray(np.array([lf.kind == "eq" for lf in problem.leaves]), lower)
    rows = np.zeros(len(problem.leaves), dtype=bool)
    rows[conjunctive_leaves(problem)] = True
    P1 = P[:, 0]
    return Repair(problem.lowering.functions(backend)["leaves"], deriv,
                  lambda X: fit(X, P1, tol), P1, eq, asarray(rows, lower), ~integer, lower,
                  upper, rng, count=max(2, S // 10))


def _to_device(obj, dev):
    """Tensors inside (named)tuples and dataclasses moved to ``dev`` (NumPy arrays and
    everything else as they are)."""
    if is_torch(obj):
        return obj.to(dev)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(_to_device(v, dev) for v in obj))
    if isinstance(obj, tuple):
        return tuple(_to_device(v, dev) for v in obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return dataclasses.replace(obj, **{f.name: _to_device(getattr(obj, f.name), dev)
                                           for f in dataclasses.fields(obj)})
    return obj


@dataclass
class Engine:
    """What :func:`build` returns: the driver and how it was set up."""

    driver: Driver
    device: Any
    dtype: Any
    compile: bool
    backend: str
    import_s: float
    compile_s: float
    budget: Budget
    pop_size: int
    monitor: Any
    instances: int


@dataclass(frozen=True)
class _Arrays:
    """Where the search's arrays live: ``arr(a, dtype=None)`` makes one there; ``dtype``
    is the working dtype; ``import_s`` the seconds a first import of torch took."""

    device: Any
    dtype: Any
    compile: bool
    import_s: float
    arr: Callable


def _arrays_for(plan: Plan, device, dtype) -> _Arrays:
    """Device, working dtype and array maker of ``plan.backend`` (NumPy never compiles)."""
    if plan.backend != "torch":
        def arr_np(a, dtype=None):
            return np.asarray(a, dtype=dtype)
        return _Arrays("cpu", numpy_dtype(dtype, plan.work), False, 0.0, arr_np)
    # lazy (the NumPy backend never imports torch) and timed: the first torch search of
    # a process pays this
    t0, fresh = time.perf_counter(), "torch" not in sys.modules
    import torch
    import_s = time.perf_counter() - t0 if fresh else 0.0
    dev = resolve_device(device, plan.work)
    wdtype = resolve_dtype(dtype, dev, plan.work)

    def arr(a, dtype=None):
        return torch.as_tensor(a, dtype=dtype, device=dev)
    return _Arrays(dev, wdtype, plan.compile, import_s, arr)


def _fitness(problem, backend, at: _Arrays):
    """``(fitness, compile key, allowed integer values or None)``: the generated fitness,
    with integers confined to the roots of their own equality where there are such."""
    fitness_fn = problem.lowering.functions(backend)["fitness"]
    fkey = problem.source
    sets = integer_sets(problem)
    values = None
    if sets is not None:  # integers confined to the roots of their own equality
        values = at.arr(sets, at.dtype)
        fitness_fn = snapped(fitness_fn, values)
        fkey = (fkey, "snap", sets.tobytes())
    return fitness_fn, fkey, values


def _step(plan: Plan, at: _Arrays, cfg, integers: bool, fitness_fn, fkey, fit, per: int,
          budget: int):
    """The generation step: eager over the chunked fitness, compiled whole, or (too large
    for one fused pass) eager over a chunked compiled fitness."""
    alg, handler = plan.algorithm, plan.handler

    def make(fn):
        return alg.make_step(fn, cfg, handler, integers)
    if not at.compile:
        return make(fit)
    if per * plan.S * plan.B > budget:  # too large for one fused pass: chunk a compiled fitness
        return make(_memory.Chunked(compiled(fitness_fn, (fkey, "fitness")), per, budget))
    key = (fkey,) + alg.step_key(cfg, handler, integers)
    return _memory.OOMFallback(compiled(make(fitness_fn), key), lambda: make(fit))


def _algorithm(problem, opts, plan: Plan, at: _Arrays, M, seed: int, fitness_fn, fkey):
    """``(stepped algorithm, its generator, its bounds)`` on the arrays of ``at``."""
    n, S, B, arr, wdtype = problem.n, plan.S, plan.B, at.arr, at.dtype
    per = _memory.bytes_per_individual(problem, wdtype.itemsize)
    free = _memory.available_bytes(at.device)
    check_population_memory(S, n, B, wdtype.itemsize, free)  # before any allocation
    mem_budget = opts.memory_budget or free // 2
    fit = _memory.Chunked(fitness_fn, per, mem_budget)  # eager evaluations (starts, repair)
    tol = arr(problem.eq_tol, wdtype)
    P = arr(M, wdtype)[:, :, None]     # (n_p, B, 1)
    rng = Random(plan.backend, seed, at.device)
    spec = plan.algorithm
    cfg = spec.config(opts, n, S)
    integers = bool(np.asarray(problem.integer).any())
    shape = spec.shape(n)
    bounds = (arr(problem.lower, wdtype).reshape(shape),
              arr(problem.upper, wdtype).reshape(shape), arr(problem.integer).reshape(shape))
    step_fn = _step(plan, at, cfg, integers, fitness_fn, fkey, fit, per, mem_budget)
    repair = _make_repair(problem, opts, fit, P, tol, bounds, rng, S, plan.backend) \
        if B == 1 else None
    alg = spec.create(fit=fit, step_fn=step_fn, cfg=cfg, handler=plan.handler, rng=rng,
                      bounds=bounds, args=spec.args(P, tol), pop_size=S, repair=repair)
    return alg, rng, bounds


def _termination(problem, opts, plan: Plan, budget: Budget, resume, consensus,
                 deadline) -> Termination:
    """The stop rules: the options, the algorithm's generation cap and restarts, the
    search's share of the budget and the clock (``deadline`` replaces ``time_limit``)."""
    time_limit = opts.time_limit
    if deadline is not None:  # the search's clock counts on from a resumed run's elapsed
        before = float(resume["loop"].elapsed) if resume is not None else 0.0
        time_limit = max(deadline - time.perf_counter(), 0.0) + before
    target = None
    if opts.target is not None:
        target = -opts.target if problem.maximize else opts.target
    return Termination(
        max_generations=opts.max_generations or plan.algorithm.max_generations,
        max_evals=budget.search, time_limit=time_limit, target=target,
        stagnation=opts.stagnation, ftol=opts.ftol, check_every=opts.check_every,
        # integer plateaus make equal objectives common long before the search is done;
        # with a consensus (islands) each rank's own population cannot decide a stop
        collapse=not problem.integer.any() and consensus is None,
        restarts=default_restarts(problem, opts),
        restart_keep=not independent_restarts(problem, opts),
        restart_window=max(1, opts.stagnation // 3))


def _saver(problem, opts, settings, rng):
    """``save(state)`` writing a checkpoint, or None without ``checkpoint``."""
    if opts.checkpoint is None:
        return None
    fp, pdata = fingerprint(problem), problem_data(problem)

    def save(st):
        write_checkpoint(opts.checkpoint, {
            "fingerprint": fp, "problem": pdata, "settings": settings,
            "loop": _to_device(st, "cpu"), "generator": rng.get_state()})
    return save


def _resumed(resume, dev, rng):
    """The driver state of a checkpoint, on ``dev``, with the generator where it was."""
    state = _to_device(resume["loop"], "cpu")
    state.alg, state.best = _to_device(state.alg, dev), _to_device(state.best, dev)
    state.defined = _to_device(state.defined, dev)
    state.hist_f, state.hist_cv = _to_device(state.hist_f, dev), _to_device(state.hist_cv, dev)
    rng.set_state(resume["generator"])
    return state


def _hooks(opts, on_generation):
    """One ``on_generation`` hook from the option's and the caller's (None for none);
    every hook runs each generation, and any True stops."""
    hooks = [h for h in (opts.on_generation, on_generation) if h is not None]
    if not hooks:
        return None

    def hook(st, algorithm_):
        return any([bool(h(st, algorithm_)) for h in hooks])
    return hook


def build(problem, opts, device, dtype, seed: int, compile, M: np.ndarray, *, resume=None,
          settings=None, on_generation=None, consensus=None, allow=None,
          deadline=None) -> Engine:
    """Build the engine for ``B = M.shape[1]`` instances (parameter columns of ``M``).

    Resolves algorithm, handler, population size, device (``"auto"``: CUDA only for
    large work), dtype, compile choice and the budget; warms a compiled step up under
    the same autograd mode as the search (so it compiles once); returns an
    :class:`Engine`.  ``deadline`` (a ``time.perf_counter()`` value) replaces
    ``opts.time_limit`` for the search: it stops there.
    """
    plan = make_plan(problem, opts, device, compile, M, resume, settings)
    at = _arrays_for(plan, device, dtype)
    backend, dev, wdtype, B, S, n = plan.backend, at.device, at.dtype, plan.B, plan.S, \
        problem.n
    if settings is not None:  # a resumed run continues on this backend and device
        settings["backend"], settings["device"] = backend, str(dev)
    fitness_fn, fkey, values = _fitness(problem, backend, at)
    alg, rng, bounds = _algorithm(problem, opts, plan, at, M, seed, fitness_fn, fkey)
    lo2, hi2, int2 = (b.reshape(n, 1) for b in bounds)

    def new_population(k):
        return _ga.initial(rng, k * S, lo2, hi2, int2, wdtype).reshape(n, k, S)

    budget = Budget.plan(opts.max_evals, opts.polish, alg.evals_per_step,
                         int((~problem.integer).sum()))
    compile_s = 0.0
    if at.compile:  # warm the compiled step once, outside the search clock, under the
        t0 = time.perf_counter()  # search's autograd mode (Dynamo guards on it)
        with inference(backend):
            alg.advance(alg.start(new_population(B)))
        compile_s = time.perf_counter() - t0
        rng.seed(seed)
    # after the compile: a deadline's clock has counted it, the search gets what is left
    term = _termination(problem, opts, plan, budget, resume, consensus, deadline)
    monitor = make_monitor(problem.maximize, opts.progress, opts.callback) if B == 1 else None
    save = _saver(problem, opts, settings, rng)
    state, X0, starts = None, None, plan.starts
    if resume is not None:
        state = _resumed(resume, dev, rng)
    else:
        with inference(backend):
            X0 = _ga.seeded(new_population(B), None if starts is None else
                            at.arr(np.ascontiguousarray(starts.T), wdtype))
    with inference(backend):
        driver = Driver(alg, term, X0, state=state, new_population=new_population,
                        monitor=monitor, on_generation=_hooks(opts, on_generation),
                        consensus=consensus, checkpoint=save,
                        checkpoint_every=opts.checkpoint_every,
                        min_rows=2 if at.compile and B > 1 else 1,
                        snap=None if values is None else lambda X: snap_array(X, values),
                        local=local_stage(problem, opts, M, islands=consensus is not None,
                                          deadline=deadline, seed=seed))
    logger.info("search: %s, %d variables, population %d x %d instance%s, %s on %s (%s%s)%s",
                plan.algorithm.name, n, S, B, "s" if B != 1 else "", backend, dev,
                getattr(wdtype, "name", str(wdtype)).replace("torch.", ""),
                ", compiled" if at.compile else "",
                "" if starts is None else f", {starts.shape[0]} starting point(s) from x0")
    return Engine(driver=driver, device=dev, dtype=wdtype, compile=at.compile,
                  backend=backend, import_s=at.import_s, compile_s=compile_s,
                  budget=budget, pop_size=S, monitor=monitor, instances=B)
