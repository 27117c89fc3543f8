"""Building the engine of a search, once for every mode: algorithm, constraint handler,
population size, backend (NumPy or torch), device, dtype, compile choice, budget,
termination and the driver.  The NumPy backend never imports torch."""

from __future__ import annotations

import logging
import secrets
import sys
import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from .._errors import OptionError
from ..problem._problem import Problem
from ._options import check_population_memory, refuse_problem_options

__all__ = ["build", "ALGORITHMS", "default_pop_size", "default_restarts", "independent_restarts",
           "compile_choice", "COMPILE_THRESHOLD", "COMPILE_RUN_WORK", "BATCH_GENERATIONS",
           "starts_of"]

logger = logging.getLogger("constropt")

ALGORITHMS = ("de", "ga")

#: ``compile="auto"`` compiles the generation step when ``pop_size * n * B`` (B: the
#: instances of a batch) reaches this: the numbers one generation handles decide
#: whether the compile time pays for itself, however they split into instances.
COMPILE_THRESHOLD = 200_000

#: A batch (``B > 1``) with ``compile="auto"`` compiles only when the numbers one
#: generation handles times the generations it expects (:data:`BATCH_GENERATIONS`,
#: at most ``max_generations``) reach this: a compile of the batched step took 30-85 s
#: on the CPU, an eager NumPy generation of 400,000 numbers 65 ms, so a run of 200
#: such generations (13 s) cannot pay for one.  A single solve keeps
#: :data:`COMPILE_THRESHOLD` alone.
COMPILE_RUN_WORK = 2_000_000_000

#: Generations a batch expects (its ``ftol`` stops the disc benchmark's instances after
#: 60-160).
BATCH_GENERATIONS = 200

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


def _dict_point(problem, point: Mapping, k: int) -> np.ndarray:
    """One starting point ``{variable: value}`` (symbols or their names as keys) as genes."""
    by_name = {str(b.symbol): b for b in problem.layout.blocks}
    blocks = {b.symbol: b for b in problem.layout.blocks}
    x = np.empty(problem.n)
    seen = set()
    for key, value in point.items():
        b = blocks.get(key) or (by_name.get(key) if isinstance(key, str) else None)
        if b is None:
            raise OptionError(f"x0[{k}] gives a value for {key!r}, which is not a variable of "
                              f"the problem (variables: {list(problem.variables)})")
        try:
            vals = np.asarray(value, dtype=np.float64).reshape(-1)
        except (TypeError, ValueError):
            raise OptionError(f"x0[{k}] value of {b.symbol} is not a number: {value!r}") \
                from None
        if vals.size != b.size:
            raise OptionError(f"x0[{k}] value of {b.symbol} has {vals.size} entries; the "
                              f"variable has {b.size}")
        x[b.offset:b.offset + b.size] = vals
        seen.add(b.symbol)
    missing = [str(b.symbol) for b in problem.layout.blocks if b.symbol not in seen]
    if missing:
        raise OptionError(f"x0[{k}] has no value for {', '.join(missing)}: a starting point "
                          "gives every variable")
    return x


def starts_of(problem, x0, pop_size: int) -> np.ndarray | None:
    """The starting points ``x0`` as an array (k, n) in the problem's box: a dict, a
    point of ``n`` values (``x_array`` order), a list of either, or an array (k, n);
    integer genes rounded, then every point clipped to the box.  None without ``x0``."""
    if x0 is None:
        return None
    n = problem.n
    if isinstance(x0, Mapping):
        X = _dict_point(problem, x0, 0)[None]
    elif all(isinstance(p, Mapping) for p in x0):
        X = np.stack([_dict_point(problem, p, k) for k, p in enumerate(x0)])
    else:
        try:
            X = np.array(x0, dtype=np.float64)
        except (TypeError, ValueError):
            raise OptionError(f"x0 must be a dict, a sequence of {n} numbers or an array "
                              f"of shape (k, {n}), got {x0!r}") from None
        if X.ndim == 1:
            X = X[None]
        if X.ndim != 2 or X.shape[1] != n:
            raise OptionError(f"x0 has shape {np.shape(x0)}; expected ({n},) or (k, {n}): "
                              f"{n} values per point in the order of x_array "
                              f"({', '.join(map(str, problem.variables))})")
    bad = np.argwhere(~np.isfinite(X))
    if bad.size:
        k, j = bad[0]
        raise OptionError(f"x0[{k}] has a non-finite value ({X[k, j]}) at gene {j}")
    if X.shape[0] > pop_size:
        raise OptionError(f"x0 has {X.shape[0]} starting points, more than the population "
                          f"of {pop_size} (pop_size)")
    integer = problem.integer
    X[:, integer] = np.round(X[:, integer])
    clipped = np.clip(X, problem.lower, problem.upper)
    moved = int(np.any(clipped != X, axis=1).sum())
    if moved:
        logger.info("x0: %d of %d starting points clipped to the search box", moved,
                    X.shape[0])
    return clipped


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


def _small(problem) -> bool:
    """At most 4 continuous variables and no equalities."""
    return problem.n <= 4 and not problem.integer.any() and \
        not any(lf.kind == "eq" for lf in problem.leaves)


def default_restarts(problem, opts) -> int:
    """``restarts="auto"``: 3, but for small continuous problems without equalities (at
    most 4 variables) none with DE (one run and the polish solve them, measured on the
    collection) and one, independent (:func:`independent_restarts`), with the GA, whose
    population can close on a wrong basin early (CEC 2020 RC25 at seed 19: stagnation
    after 15,000 evaluations at f* + 4085; the restart reaches f*)."""
    if opts.restarts != "auto":
        return opts.restarts
    if not _small(problem):
        return 3
    return 1 if opts.algorithm == "ga" else 0


def independent_restarts(problem, opts) -> bool:
    """Whether restarts leave the best point out of the fresh population: the GA's
    ``"auto"`` restart of a small problem.  The GA's survival keeps its best member, so
    a restart seeded with it closed on the same wrong basin (RC25 at seed 15 ended at
    f* + 2889 with one); unseeded, the restart is a second look, and the polish starts
    from the best point and from the new population's clusters (25/25 seeds).  Such a
    restart stops after ``stagnation // 3`` generations that do not improve the best
    point (``Termination.restart_window``): run to its own stagnation, a second look
    that found nothing better cost a whole second run (1.4-2.2x the GA's time on the
    small problems of ``time_to_solution.py``); RC25 stays at 25/25 with a window of 10
    or 20 generations."""
    return opts.restarts == "auto" and opts.algorithm == "ga" and _small(problem)


def default_pop_size(algorithm: str, n: int) -> int:
    """Population size (per instance) used when ``pop_size`` is not given."""
    if algorithm == "de":
        return int(min(300, max(40, 12 * n)))
    return int(min(400, max(60, 20 * n)))


def compile_choice(compile, work: int, generations: int | None = None) -> bool:
    """Whether to compile: ``compile`` as given, or for ``"auto"`` when ``work`` (numbers
    per generation) reaches :data:`COMPILE_THRESHOLD` and, where the expected run length
    ``generations`` is given (batches), ``work * generations`` reaches
    :data:`COMPILE_RUN_WORK`."""
    if compile == "auto":
        if generations is not None and work * generations < COMPILE_RUN_WORK:
            return False
        return work >= COMPILE_THRESHOLD
    if isinstance(compile, bool):
        return compile
    raise OptionError(f"compile must be 'auto', True or False, got {compile!r}")


def _gpu_possible(device, work: int) -> bool:
    """Whether ``device`` may put ``work`` on a GPU (``"auto"`` with CUDA available and
    work from ``AUTO_CUDA_WORK``; any non-CPU device); torch is asked only where it is
    already imported or the work is that large."""
    from ..backend._devices import AUTO_CUDA_WORK

    if not isinstance(device, str):
        return getattr(device, "type", "cpu") != "cpu"
    if device == "cpu":
        return False
    if device != "auto":
        return True
    if work < AUTO_CUDA_WORK:
        return False
    import torch  # only for large work: whether CUDA may take it

    return bool(torch.cuda.is_available())


def _make_repair(problem, opts, fit, P, tol, bounds, rng, S, backend):
    """Gradient repair when asked for, or by default when there are equalities."""
    from ..backend._arrays import asarray
    from ..engine._repair import Repair
    from ..local._polish import conjunctive_leaves

    want = opts.repair
    if want == "auto":
        want = any(lf.kind == "eq" for lf in problem.leaves)
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


def _place(obj, dev):
    """Tensors inside (named)tuples and dataclasses moved to ``dev`` (NumPy arrays and
    everything else as they are)."""
    import dataclasses

    from ..backend._arrays import is_torch

    if is_torch(obj):
        return obj.to(dev)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(_place(v, dev) for v in obj))
    if isinstance(obj, tuple):
        return tuple(_place(v, dev) for v in obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return dataclasses.replace(obj, **{f.name: _place(getattr(obj, f.name), dev)
                                           for f in dataclasses.fields(obj)})
    return obj


class _Engine:
    """What :func:`build` returns: the driver and how it was set up."""

    def __init__(self, **kw):
        self.__dict__.update(kw)


def build(problem, opts, device, dtype, seed: int, compile, M: np.ndarray, *, resume=None,
          settings=None, on_generation=None, consensus=None, allow=None, deadline=None):
    """Build the engine for ``B = M.shape[1]`` instances (parameter columns of ``M``).

    Resolves algorithm, handler, population size, device (``"auto"``: CUDA only for
    large work), dtype, compile choice and the budget; warms a compiled step up under
    the same autograd mode as the search (so it compiles once); returns an object with
    the driver and the settings.  ``deadline`` (a ``time.perf_counter()`` value) replaces
    ``opts.time_limit`` for the search: it stops there.
    """
    from ..backend._arrays import Random, inference
    from ..backend._compile import compiled
    from ..backend._devices import choose_backend, numpy_dtype
    from ..engine import _de, _ga
    from ..engine._algorithms import DE, GA
    from ..engine._driver import Driver, Termination
    from ..engine._handling import make_handler
    from ..engine._memory import Chunked, OOMFallback, available_bytes, bytes_per_individual
    from ..finish._finish import Budget
    from ..finish._snap import integer_sets, snap_array, snapped
    from ._progress import make_monitor

    n, B = problem.n, M.shape[1]
    algorithm = opts.algorithm
    if algorithm not in ALGORITHMS:
        raise OptionError(f"unknown algorithm {algorithm!r}; choose one of "
                          f"{', '.join(ALGORITHMS)}")
    if algorithm == "ga" and B > 1:
        raise OptionError("solve_batch runs algorithm='de'")
    handling = opts.constraint_handling
    if handling == "auto":
        handling = "epsilon" if any(lf.kind == "eq" for lf in problem.leaves) else "feasibility"
    handler = make_handler(handling)
    S = opts.pop_size or default_pop_size(algorithm, n)
    S += S % 2
    starts = starts_of(problem, opts.x0, S) if resume is None else None  # checked early
    work = S * n * B
    run = None if B == 1 else min(BATCH_GENERATIONS, opts.max_generations or BATCH_GENERATIONS)
    use_compile = compile_choice(compile, work, run)
    # a resumed run continues on its backend (checkpoints from before backends: torch)
    backend = (settings or {}).get("backend", "torch") if resume is not None else None
    # an eager batch stays on NumPy on the CPU (cheaper than eager torch at every size
    # measured) unless a GPU may take it: the single solve's rule is left as it is
    bwork = work if B == 1 or use_compile or _gpu_possible(device, work) else 0
    backend = backend or choose_backend(opts.backend, device, compile, bwork)
    import_s = 0.0
    if backend == "torch":
        t0, fresh = time.perf_counter(), "torch" not in sys.modules
        import torch  # timed: the first torch search of a process pays this

        from ..backend._devices import resolve_device, resolve_dtype

        import_s = time.perf_counter() - t0 if fresh else 0.0
        dev = resolve_device(device, work)
        wdtype = resolve_dtype(dtype, dev, work)

        def arr(a, dtype=None):
            return torch.as_tensor(a, dtype=dtype, device=dev)
    else:
        dev, wdtype, use_compile = "cpu", numpy_dtype(dtype, work), False

        def arr(a, dtype=None):
            return np.asarray(a, dtype=dtype)
    if settings is not None:  # a resumed run continues on this backend and device
        settings["backend"], settings["device"] = backend, str(dev)
    fitness_fn = problem.lowering.functions(backend)["fitness"]
    fkey = problem.source
    sets = integer_sets(problem)
    values = None
    if sets is not None:  # integers confined to the roots of their own equality
        values = arr(sets, wdtype)
        fitness_fn = snapped(fitness_fn, values)
        fkey = (fkey, "snap", sets.tobytes())
    per = bytes_per_individual(problem, wdtype.itemsize)
    free = available_bytes(dev)
    check_population_memory(S, n, B, wdtype.itemsize, free)  # before any allocation
    mem_budget = opts.memory_budget or free // 2
    fit = Chunked(fitness_fn, per, mem_budget)  # eager evaluations (starts, repair)
    tol = arr(problem.eq_tol, wdtype)
    P = arr(M, wdtype)[:, :, None]     # (n_p, B, 1)
    rng = Random(backend, seed, dev)
    shape: tuple[int, ...]
    cfg: Any
    key: tuple
    alg: Any
    if algorithm == "ga":
        shape = (n, 1)
        cfg = _ga.GAConfig(pop_size=S, eta_c=opts.eta_c, eta_m=opts.eta_m,
                           p_mut=opts.p_mut if opts.p_mut is not None
                           else min(0.5, max(0.05, 1.0 / n)))

        def make(fn):
            return _ga.make_step(fn, cfg.eta_c, cfg.eta_m, handler)
        key = (fkey, "ga_step", cfg.eta_c, cfg.eta_m, handler)
        args = (P[:, :, 0], tol)
    else:
        shape = (n, 1, 1)
        cfg = _de.DEConfig(strategy=opts.strategy)

        any_int = bool(np.asarray(problem.integer).any())

        def make(fn):
            return _de.make_step(fn, handler, cfg, integers=any_int)
        key = (fkey, "de_step", handler, cfg, any_int)
        args = (P, tol)
    lower = arr(problem.lower, wdtype).reshape(shape)
    upper = arr(problem.upper, wdtype).reshape(shape)
    integer = arr(problem.integer).reshape(shape)
    bounds = (lower, upper, integer)
    if not use_compile:
        step_fn = make(fit)
    elif per * S * B > mem_budget:  # too large for one fused pass: chunk a compiled fitness
        step_fn = make(Chunked(compiled(fitness_fn, (fkey, "fitness")), per,
                               mem_budget))
    else:
        step_fn = OOMFallback(compiled(make(fitness_fn), key), lambda: make(fit))
    repair = _make_repair(problem, opts, fit, P, tol, bounds, rng, S, backend) \
        if B == 1 else None
    if algorithm == "ga":
        alg = GA(fit, step_fn, cfg, rng, bounds, args, handler, repair)
    else:
        alg = DE(fit, step_fn, cfg, handler, rng, bounds, args, S, repair)
    lo2, hi2, int2 = (b.reshape(n, 1) for b in bounds)

    def new_population(k):
        return _ga.initial(rng, k * S, lo2, hi2, int2, wdtype).reshape(n, k, S)

    budget = Budget.plan(opts.max_evals, opts.polish, alg.evals_per_step,
                         int((~problem.integer).sum()))
    time_limit = opts.time_limit
    if deadline is not None:  # the search's clock counts on from a resumed run's elapsed
        before = float(resume["loop"].elapsed) if resume is not None else 0.0
        time_limit = max(deadline - time.perf_counter(), 0.0) + before
    target = None
    if opts.target is not None:
        target = -opts.target if problem.maximize else opts.target
    term = Termination(
        max_generations=opts.max_generations or (1000 if algorithm == "ga" else 3000),
        max_evals=budget.search, time_limit=time_limit, target=target,
        stagnation=opts.stagnation, ftol=opts.ftol, check_every=opts.check_every,
        # integer plateaus make equal objectives common long before the search is done;
        # with a consensus (islands) each rank's own population cannot decide a stop
        collapse=not problem.integer.any() and consensus is None,
        restarts=default_restarts(problem, opts),
        restart_keep=not independent_restarts(problem, opts),
        restart_window=max(1, opts.stagnation // 3))
    compile_s = 0.0
    if use_compile:  # warm the compiled step once, outside the search clock, under the
        t0 = time.perf_counter()  # search's autograd mode (Dynamo guards on it)
        with inference(backend):
            alg.advance(alg.start(new_population(B)))
        compile_s = time.perf_counter() - t0
        rng.seed(seed)
    monitor = make_monitor(problem.maximize, opts.progress, opts.callback) if B == 1 else None
    save = None
    if opts.checkpoint is not None:
        from ._checkpoint import fingerprint, problem_data, write_checkpoint

        fp, pdata = fingerprint(problem), problem_data(problem)

        def save(st):
            write_checkpoint(opts.checkpoint, {
                "fingerprint": fp, "problem": pdata, "settings": settings,
                "loop": _place(st, "cpu"), "generator": rng.get_state()})
    state, X0 = None, None
    if resume is not None:
        state = _place(resume["loop"], "cpu")
        state.alg, state.best = _place(state.alg, dev), _place(state.best, dev)
        state.defined = _place(state.defined, dev)
        state.hist_f, state.hist_cv = _place(state.hist_f, dev), _place(state.hist_cv, dev)
        rng.set_state(resume["generator"])
    else:
        with inference(backend):
            X0 = _ga.seeded(new_population(B), None if starts is None else
                            arr(np.ascontiguousarray(starts.T), wdtype))
    hooks = [h for h in (opts.on_generation, on_generation) if h is not None]

    def hook(st, algorithm_):
        return any([bool(h(st, algorithm_)) for h in hooks])

    with inference(backend):
        driver = Driver(alg, term, X0, state=state, new_population=new_population,
                        monitor=monitor, on_generation=hook if hooks else None,
                        consensus=consensus, checkpoint=save,
                        checkpoint_every=opts.checkpoint_every,
                        min_rows=2 if use_compile and B > 1 else 1,
                        snap=None if values is None else lambda X: snap_array(X, values))
    logger.info("search: %s, %d variables, population %d x %d instance%s, %s on %s (%s%s)%s",
                algorithm, n, S, B, "s" if B != 1 else "", backend, dev,
                getattr(wdtype, "name", str(wdtype)).replace("torch.", ""),
                ", compiled" if use_compile else "",
                "" if starts is None else f", {starts.shape[0]} starting point(s) from x0")
    return _Engine(driver=driver, device=dev, dtype=wdtype, compile=use_compile,
                   backend=backend, import_s=import_s,
                   compile_s=compile_s, budget=budget, pop_size=S, monitor=monitor,
                   instances=B)
