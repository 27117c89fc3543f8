"""Build and run the search: algorithm, constraint handler, compile choice, restarts."""

from __future__ import annotations

import time

from .._errors import OptionError

__all__ = ["run_search", "ALGORITHMS", "default_pop_size"]

ALGORITHMS = ("de", "ga")


def default_restarts(problem, opts) -> int:
    """``restarts="auto"``: none for small continuous problems without equalities (at
    most 4 variables: one run and the polish solve them, measured on the collection), 3
    otherwise."""
    if opts.restarts != "auto":
        return opts.restarts
    small = problem.n <= 4 and not problem.integer.any() and \
        not any(lf.kind == "eq" for lf in problem.leaves)
    return 0 if small else 3


def default_pop_size(algorithm: str, n: int) -> int:
    """Population size used when ``pop_size`` is not given."""
    if algorithm == "de":
        return int(min(300, max(40, 12 * n)))
    return int(min(400, max(60, 20 * n)))


def _make_repair(problem, opts, evaluate, P, bounds, gen, S):
    """Gradient repair when asked for, or by default when there are equalities."""
    import torch

    from ..engine._repair import Repair
    from ._polish import conjunctive_leaves

    want = opts.repair
    if want == "auto":
        want = any(lf.kind == "eq" for lf in problem.leaves)
    if not want or problem.has_vector_variables or not problem.leaves:
        return None
    try:
        deriv = problem.lowering.derivatives("torch")
    except Exception:  # a derivative sympy cannot lower: no repair, the search goes on
        return None
    lower, upper, integer = bounds
    dev = lower.device
    eq = torch.tensor([lf.kind == "eq" for lf in problem.leaves], device=dev)
    rows = torch.zeros(len(problem.leaves), dtype=torch.bool, device=dev)
    rows[conjunctive_leaves(problem)] = True
    return Repair(problem.lowering.functions("torch")["leaves"], deriv, evaluate, P, eq,
                  rows, ~integer, lower, upper, gen, count=max(2, S // 10))


def _to_device(obj, dev):
    """Tensors inside (named)tuples and dataclasses moved to ``dev``."""
    import dataclasses

    import torch

    if isinstance(obj, torch.Tensor):
        return obj.to(dev)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(_to_device(v, dev) for v in obj))
    if isinstance(obj, tuple):
        return tuple(_to_device(v, dev) for v in obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return dataclasses.replace(obj, **{f.name: _to_device(getattr(obj, f.name), dev)
                                           for f in dataclasses.fields(obj)})
    return obj


def _history_used(st):
    """The loop state with its history cut to the generations run (a checkpoint stores
    only those, not ``max_generations`` rows of which most are empty)."""
    import dataclasses

    if not (hasattr(st, "hist") and hasattr(st, "hist_nfev") and hasattr(st, "g")):
        return st
    return dataclasses.replace(st, hist=st.hist[: st.g + 1], hist_nfev=st.hist_nfev[: st.g + 1])


def _history_room(st, max_generations: int):
    """Inverse of :func:`_history_used`: history rows for every generation again."""
    import dataclasses
    import math

    import numpy as np
    import torch

    if not (hasattr(st, "hist") and hasattr(st, "hist_nfev")):
        return st
    rows = max_generations + 1
    if st.hist.shape[0] >= rows:
        return st
    hist = torch.full((rows, st.hist.shape[1]), math.nan, dtype=st.hist.dtype,
                      device=st.hist.device)
    hist[: st.hist.shape[0]] = st.hist
    hist_nfev = np.zeros(rows, dtype=np.int64)
    hist_nfev[: st.hist_nfev.shape[0]] = st.hist_nfev
    return dataclasses.replace(st, hist=hist, hist_nfev=hist_nfev)


def run_search(problem, opts, dev, wdtype, use_compile: bool, seed: int, pvec, S: int,
               resume=None, settings=None, deadline=None):
    """Run the evolutionary search; returns ``(Outcome, compile_seconds)``.

    ``resume`` is a checkpoint's dict (loop and generator state) to continue from;
    ``settings`` what a checkpoint written by this run records about the solve;
    ``deadline`` a ``time.perf_counter()`` value the search stops at (it replaces
    ``opts.time_limit``, which the caller turned into this deadline).
    """
    import torch

    from ..engine import _de, _ga
    from ..engine._algorithms import DE, GA
    from ..engine._backend import compiled
    from ..engine._handling import make_handler
    from ..engine._loop import Termination, run
    from ._progress import make_monitor
    from ._snap import integer_sets, snap_outcome, snapped

    n = problem.n
    algorithm = opts.algorithm
    if algorithm not in ALGORITHMS:
        raise OptionError(f"unknown algorithm {algorithm!r}; choose one of "
                          f"{', '.join(ALGORITHMS)}")
    handling = opts.constraint_handling
    if handling == "auto":
        handling = "epsilon" if any(lf.kind == "eq" for lf in problem.leaves) else "feasibility"
    handler = make_handler(handling)
    fitness_fn = problem.lowering.functions("torch")["fitness"]
    key = problem.source
    sets = integer_sets(problem)
    if sets is not None:  # integers confined to the roots of their own equality
        values = torch.as_tensor(sets, dtype=wdtype, device=dev)
        fitness_fn = snapped(fitness_fn, values)
        key = (key, "snap", sets.tobytes())
    fkey = key
    P = torch.as_tensor(pvec, dtype=wdtype, device=dev).reshape(-1, 1)
    tol = torch.tensor(problem.eq_tol, dtype=wdtype, device=dev)
    lower = torch.as_tensor(problem.lower, dtype=wdtype, device=dev).reshape(-1, 1)
    upper = torch.as_tensor(problem.upper, dtype=wdtype, device=dev).reshape(-1, 1)
    integer = torch.as_tensor(problem.integer, device=dev).reshape(-1, 1)
    gen = torch.Generator(device=dev)
    gen.manual_seed(seed)
    if not use_compile:  # compiled kernels fuse away the temporaries that chunking bounds
        from ..engine._memory import Chunked, available_bytes, bytes_per_individual

        budget = opts.memory_budget or available_bytes(dev) // 2
        fitness_fn = Chunked(fitness_fn, bytes_per_individual(problem, wdtype.itemsize),
                             budget)
    if algorithm == "ga":
        cfg = _ga.GAConfig(pop_size=S, eta_c=opts.eta_c, eta_m=opts.eta_m,
                           p_mut=opts.p_mut if opts.p_mut is not None
                           else min(0.5, max(0.05, 1.0 / n)))
        step_fn = _ga.make_step(fitness_fn, cfg.eta_c, cfg.eta_m, handler)
        key = (key, "ga_step", cfg.eta_c, cfg.eta_m, handler)
    else:
        cfg = _de.DEConfig(strategy=opts.strategy)
        step_fn = _de.make_step(fitness_fn, handler, cfg)
        key = (key, "de_step", handler, cfg)
    fit = fitness_fn
    compile_s = 0.0
    if use_compile:
        step_fn = compiled(step_fn, key)
        fit = compiled(fitness_fn, (fkey, "fitness"))
        t0 = time.perf_counter()  # the first call compiles: timed apart from the search
        fit(torch.zeros((n, 2 * S), dtype=wdtype, device=dev), P, tol)
        compile_s = time.perf_counter() - t0

    def evaluate(X):
        return fit(X, P, tol)

    bounds = (lower, upper, integer)
    if algorithm == "ga":
        alg = GA(evaluate, step_fn, cfg, gen, bounds, (P, tol), handler,
                 _make_repair(problem, opts, evaluate, P, bounds, gen, S))
    else:
        alg = DE(evaluate, step_fn, cfg, handler, gen, bounds, (P, tol), S,
                 _make_repair(problem, opts, evaluate, P, bounds, gen, S))

    def new_population():
        return _ga.initial(gen, S, lower, upper, integer, wdtype)

    target = None
    if opts.target is not None:
        target = -opts.target if problem.maximize else opts.target
    # kept for the polish, and 1 for the float64 check of the final point
    reserve = (min(opts.max_evals // 10, 300) if opts.polish and opts.max_evals else 0) + 1
    term = Termination(
        max_generations=opts.max_generations or (1000 if algorithm == "ga" else 3000),
        max_evals=None if opts.max_evals is None else opts.max_evals - reserve,
        time_limit=opts.time_limit, target=target, stagnation=opts.stagnation,
        ftol=opts.ftol, check_every=opts.check_every,
        # integer plateaus make equal objectives common long before the search is done
        collapse=not problem.integer.any())
    if opts.max_evals is not None and term.max_evals < S:
        raise OptionError(f"max_evals={opts.max_evals} is below one population "
                          f"(pop_size={S}); raise max_evals or lower pop_size")
    monitor = make_monitor(problem.maximize, opts.progress, opts.callback)
    X0 = new_population()
    if use_compile:  # warm the compiled step once, outside the search clock
        t0 = time.perf_counter()
        warm = alg.start(X0.clone())
        alg.advance(warm, 0.0)
        compile_s += time.perf_counter() - t0
        gen.manual_seed(seed)
        X0 = new_population()
    state = None
    if resume is not None:
        state = _history_room(_to_device(resume["loop"], dev), term.max_generations)
        gen.set_state(resume["generator"])
    save = None
    if opts.checkpoint is not None:
        from ._checkpoint import fingerprint, problem_data, write_checkpoint

        fp, pdata = fingerprint(problem), problem_data(problem)

        def save(st):
            write_checkpoint(opts.checkpoint, {
                "fingerprint": fp, "problem": pdata, "settings": settings,
                "loop": _to_device(_history_used(st), "cpu"), "generator": gen.get_state()})
    if deadline is not None:  # the search's clock starts now: what is left of the deadline
        import dataclasses

        before = getattr(state, "elapsed", 0.0) if state is not None else 0.0
        term = dataclasses.replace(term, time_limit=max(deadline - time.perf_counter(), 0.0)
                                   + before)
    try:
        # no autograd bookkeeping in the search (a few microseconds an op, which is most
        # of a small problem's generation)
        with torch.inference_mode():
            out = run(alg, X0, term, monitor=monitor,
                      restarts=default_restarts(problem, opts), new_population=new_population,
                      state=state, checkpoint=save, checkpoint_every=opts.checkpoint_every,
                      on_generation=opts.on_generation)
    finally:
        if monitor is not None:
            monitor.finish()
    if sets is not None:
        out = snap_outcome(out, values)
    return out, compile_s
