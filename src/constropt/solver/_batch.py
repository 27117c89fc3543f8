"""``solve_batch``: many instances of one parametric problem in one vectorized run.

The population is shaped ``(N, B, S)`` (genes, instances, individuals) and the
parameters ``(n_params, B, 1)``: the generated code broadcasts over the instance axis,
so one kernel evaluates every instance, and the DE step works along the last axis per
instance.  Each instance has its own success-history memory, epsilon level, best point,
stagnation counter and termination; a finished instance is frozen while the others go
on.  Each instance's best point is then polished (SLSQP with its own parameter values)
and checked in float64, and gets a full :class:`Result`.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace

import numpy as np

from .._errors import OptionError, ProblemError
from ..problem._bounds import parameter_box
from ..problem._problem import Problem
from ._options import SolveOptions, refuse_problem_options
from ._result import History, Result, Status
from ._verdict import objective_verdict

__all__ = ["solve_batch", "BatchResult"]


@dataclass(frozen=True)
class BatchResult:
    """One :class:`Result` per instance, plus the main fields stacked.

    Attributes
    ----------
    results : tuple of Result
    x : ndarray, shape (B, n)
    fun : ndarray, shape (B,)
    feasible, success : ndarray of bool, shape (B,)
    parameters : dict
        ``{symbol: ndarray (B,)}``, the values each instance was solved with.
    timings : dict
        Seconds for the whole batch: ``compile``, ``search``, ``polish``, ``total`` (each
        Result's timings are its share, the batch's divided by ``B``).
    """

    results: tuple
    x: np.ndarray
    fun: np.ndarray
    feasible: np.ndarray
    success: np.ndarray
    parameters: dict
    timings: dict

    def __len__(self) -> int:
        return len(self.results)

    def __getitem__(self, i) -> Result:
        return self.results[i]

    def __iter__(self):
        return iter(self.results)

    def __repr__(self) -> str:
        return (f"BatchResult({len(self)} instances, {int(self.success.sum())} successful, "
                f"fun in [{np.nanmin(self.fun):.6g}, {np.nanmax(self.fun):.6g}], "
                f"total {self.timings['total']:.2f}s)")


def _param_matrix(problem: Problem, parameters) -> tuple[np.ndarray, dict]:
    """``(n_params, B)`` values: arrays for the swept parameters, the problem's own for
    the rest."""
    if not isinstance(parameters, dict) or not parameters:
        raise OptionError("solve_batch needs parameters={symbol: array of B values}")
    params = problem.layout.parameters
    arrays = {}
    for s, v in parameters.items():
        if s not in params:
            raise ProblemError(f"{s} is not a parameter of this problem (parameters: "
                               f"{list(params)})")
        try:
            a = np.asarray(v, dtype=np.float64)
        except (TypeError, ValueError):
            raise ProblemError(f"parameter {s}: values must be numbers (a 1-D array of B "
                               f"values), got {str(v)[:60]}") from None
        if a.ndim > 1:
            raise ProblemError(f"parameter {s}: values must be a 1-D array of B values, got "
                               f"shape {a.shape} (flatten it yourself if that is meant)")
        a = a.reshape(-1)
        if a.size == 0:
            raise ProblemError(f"parameter {s}: the array of values is empty (B = 0)")
        if not np.all(np.isfinite(a)):
            raise ProblemError(f"parameter {s} has non-finite values")
        arrays[s] = a
    sizes = {a.size for a in arrays.values()} - {1}
    if len(sizes) > 1:
        raise OptionError(f"parameter arrays have different lengths: "
                          f"{ {str(k): a.size for k, a in arrays.items()} }")
    B = sizes.pop() if sizes else 1
    base = problem.parameter_vector()
    M = np.repeat(base[:, None], B, axis=1)
    for k, s in enumerate(params):
        if s in arrays:
            M[k] = np.broadcast_to(arrays[s], (B,))
    return M, {s: M[k].copy() for k, s in enumerate(params)}


def solve_batch(problem: Problem, parameters: dict, *, device="auto", dtype=None, seed=None,
                compile="auto", **options) -> BatchResult:
    """Solve one parametric problem for ``B`` parameter values at once.

    Parameters
    ----------
    problem : Problem
        A problem declared with ``parameters={...}``.
    parameters : dict
        ``{symbol: array of B values}``; parameters not listed keep the problem's value.
    device, dtype, seed
        As in :func:`constropt.solve`.
    compile : "auto", True or False
        Compile the batched generation step; ``"auto"`` when ``4 * pop_size * n * B``
        reaches ``COMPILE_THRESHOLD`` (a quarter of a single solve's threshold: a batch
        runs as many generations over ``B`` times the individuals).
    **options
        Options of :func:`constropt.solve` that apply here: ``pop_size`` (per instance),
        ``max_generations``, ``max_evals`` (per instance), ``stagnation``, ``ftol``,
        ``polish``, ``target``, ``check_every``, ``constraint_handling``, ``strategy``.

    Returns
    -------
    BatchResult
        ``results[b]`` is instance ``b``'s :class:`Result`, its own point, feasibility,
        status and counts.
    """
    import torch

    from ..engine import _de
    from ..engine._backend import resolve_device, resolve_dtype
    from ..engine._ga import Population, initial
    from ..engine._handling import make_handler
    from ..problem._evaluate import report_numpy
    from ._solve import _compile_choice, _seed, polish_from
    from ._verdict import point_dict
    from ._verify import certify

    t_start = time.perf_counter()
    if not isinstance(problem, Problem):
        raise OptionError("solve_batch takes a constropt.Problem declared with parameters=")
    unsupported = {"algorithm", "restarts", "repair", "checkpoint", "callback", "progress",
                   "on_generation", "time_limit"} & set(options)
    if unsupported:
        raise OptionError(f"solve_batch does not support {', '.join(sorted(unsupported))}")
    refuse_problem_options(options, "solve_batch")
    opts = SolveOptions.from_kwargs(options)
    dev = resolve_device(device)
    seed = _seed(seed)
    M, pdict = _param_matrix(problem, parameters)
    problem = parameter_box(problem, M)  # the hull of per-instance bounds (also constraints)
    B, n = M.shape[1], problem.n
    S = opts.pop_size or int(min(200, max(30, 10 * n)))
    wdtype = resolve_dtype(dtype, dev, S * n * B)
    handling = opts.constraint_handling
    if handling == "auto":
        handling = "epsilon" if any(lf.kind == "eq" for lf in problem.leaves) else "feasibility"
    if handling == "penalty":
        raise OptionError("solve_batch supports constraint_handling 'feasibility', "
                          "'epsilon' and 'death'")
    handler = make_handler(handling)
    cfg = _de.DEConfig(strategy=opts.strategy)
    fitness = problem.lowering.functions("torch")["fitness"]
    step = _de.make_step(fitness, handler, cfg)
    # a batch runs hundreds of generations over S * B individuals: compiling pays sooner
    use_compile = _compile_choice(compile, 4 * S * n * B)
    if use_compile:
        from ..engine._backend import compiled

        step = compiled(step, (problem.source, "de_step_batch", handler, cfg))
    P = torch.as_tensor(M, dtype=wdtype, device=dev)[:, :, None]        # (n_p, B, 1)
    tol = torch.tensor(problem.eq_tol, dtype=wdtype, device=dev)
    shape = (n, 1, 1)
    lower = torch.as_tensor(problem.lower, dtype=wdtype, device=dev).reshape(shape)
    upper = torch.as_tensor(problem.upper, dtype=wdtype, device=dev).reshape(shape)
    integer = torch.as_tensor(problem.integer, device=dev).reshape(shape)
    gen = torch.Generator(device=dev)
    gen.manual_seed(seed)
    X = initial(gen, B * S, lower[:, 0], upper[:, 0], integer[:, 0], wdtype).reshape(n, B, S)
    f, cv = fitness(X, P, tol)
    level0 = handler.initial_level(f, cv).reshape(B, 1)   # one level per instance
    level = level0
    kf, kc = handler.keys(f, cv, level)
    idx = _de.sort_order(kf, kc)
    pop = Population(_de.take(X, idx), _de.take(f, idx), _de.take(cv, idx))
    mem = _de.new_memory(cfg, dev, wdtype, (B,))

    def raw_best(p):
        cvmin = p.cv.min(-1, keepdim=True).values
        masked = torch.where(p.cv == cvmin, p.f, torch.full_like(p.f, math.inf))
        i = masked.argmin(-1, keepdim=True)
        return _de.take(p.X, i)[..., 0], p.f.gather(-1, i)[:, 0], p.cv.gather(-1, i)[:, 0]

    bx, bf, bcv = raw_best(pop)
    active = torch.ones(B, dtype=torch.bool, device=dev)
    quiet = torch.zeros(B, dtype=torch.int64, device=dev)
    nit = torch.zeros(B, dtype=torch.int64, device=dev)
    G = opts.max_generations or 3000
    if opts.max_evals is not None:
        G = min(G, max(0, (opts.max_evals - S) // S))
    target = None if opts.target is None else (-opts.target if problem.maximize
                                               else opts.target)
    hist_f, hist_cv = [bf.clone()], [bcv.clone()]
    last_f, last_cv = bf.clone(), bcv.clone()
    reason = torch.full((B,), 1, dtype=torch.int64, device=dev)  # 1 max gens, 2 stag, 3 tgt
    t_search = time.perf_counter()
    compile_s = 0.0
    if use_compile:  # the first call compiles: run it on a copy, with its own randoms
        scratch = torch.Generator(device=dev)
        scratch.manual_seed(0)
        step(pop, mem, _de.draw(scratch, cfg, n, S, dev, wdtype, (B,)), lower, upper, integer,
             P, tol, level)
        compile_s = time.perf_counter() - t_search
        t_search = time.perf_counter()
    for g in range(1, G + 1):
        rnd = _de.draw(gen, cfg, n, S, dev, wdtype, (B,))
        new_pop, new_mem, _ = step(pop, mem, rnd, lower, upper, integer, P, tol, level)
        a3, a2 = active.reshape(1, B, 1), active.reshape(B, 1)
        pop = Population(torch.where(a3, new_pop.X, pop.X), torch.where(a2, new_pop.f, pop.f),
                         torch.where(a2, new_pop.cv, pop.cv))
        mem = _de.Memory(torch.where(a2, new_mem.F, mem.F), torch.where(a2, new_mem.CR, mem.CR),
                         torch.where(active, new_mem.slot, mem.slot))
        nit = nit + active
        if handling == "epsilon":
            level = handler.next_level(level, level0, g / 200, None)
        x_new, f_new, cv_new = raw_best(pop)
        gain = (cv_new < bcv) | ((cv_new == bcv) & (f_new < bf))
        bx = torch.where(gain, x_new, bx)
        bf, bcv = torch.where(gain, f_new, bf), torch.where(gain, cv_new, bcv)
        hist_f.append(bf.clone())
        hist_cv.append(bcv.clone())
        if g % opts.check_every == 0:
            better_cv = bcv < last_cv
            better_f = (bcv == 0) & (last_cv == 0) & (
                last_f - bf > opts.ftol * torch.clamp(last_f.abs(), min=1.0))
            improved = better_cv | better_f | ((bcv == 0) & (last_cv > 0))
            quiet = torch.where(improved, torch.zeros_like(quiet), quiet + opts.check_every)
            last_f, last_cv = bf.clone(), bcv.clone()
            stop = quiet >= opts.stagnation
            reason = torch.where(active & stop, torch.full_like(reason, 2), reason)
            if target is not None:
                hit = (bcv == 0) & (bf <= target)
                reason = torch.where(active & hit, torch.full_like(reason, 3), reason)
                stop = stop | hit
            active = active & ~stop
            if not bool(active.any()):
                break
    search_s = time.perf_counter() - t_search

    best = bx.double().cpu().numpy()           # (N, B)
    f64, V = report_numpy(problem, best, M)    # (B,), (m, B): every instance in one call
    nits, reasons = nit.cpu().numpy(), reason.cpu().numpy()
    hf = torch.stack(hist_f).double().cpu().numpy()
    hc = torch.stack(hist_cv).double().cpu().numpy()
    sign = -1.0 if problem.maximize else 1.0
    nfev = S * (1 + nits)
    t_pol = time.perf_counter()
    results = []
    statuses = {1: Status.MAX_GENERATIONS, 2: Status.CONVERGED, 3: Status.TARGET}
    for b in range(B):
        xb, fb, Vb = best[:, b].copy(), float(f64[b]), V[:, b].copy()
        used = 0
        if opts.polish and reasons[b] != 3:
            xb, fb, Vb, used, _ = polish_from(problem, xb, M[:, b], xb, fb, Vb, None, 0)
        left = None if opts.max_evals is None else max(0, opts.max_evals - int(nfev[b]) - used)
        checked = certify(problem, xb, M[:, b], fb, Vb, budget=left)  # exact (Arb balls)
        xb, fb, Vb = checked.x, checked.fun, checked.violations
        used += checked.evaluations
        feasible = checked.feasible
        status = statuses[int(reasons[b])] if feasible else Status.INFEASIBLE
        message = status.value if feasible else (
            f"{Status.INFEASIBLE.value}{checked.note} (search ended: "
            f"{statuses[int(reasons[b])].value})")
        if feasible and objective_verdict(problem, fb) is not None:  # NaN / inf objective
            status, message = objective_verdict(problem, fb)
        k = int(nits[b]) + 1
        results.append(Result(
            x=point_dict(problem, xb, checked.genes), x_array=xb,
            variables=problem.variables, fun=fb,
            feasible=feasible, maxcv=float(Vb.max()) if Vb.size else 0.0, violations=Vb,
            success=feasible and not status.failed, status=status, message=message,
            nit=int(nits[b]),
            nfev=int(nfev[b]) + used, seed=seed, device=str(dev),
            timings={},
            history=History(S * (1 + np.arange(k)), sign * hf[:k, b], hc[:k, b]),
            problem=problem, verification=checked.verification))
    polish_s = time.perf_counter() - t_pol
    total = time.perf_counter() - t_start
    share = {"compile": compile_s / B, "search": search_s / B, "polish": polish_s / B,
             "total": total / B}  # each instance's share of the batch's time
    results = tuple(replace(r, timings=share) for r in results)
    return BatchResult(
        results=results, x=np.stack([r.x_array for r in results]),
        fun=np.array([r.fun for r in results]),
        feasible=np.array([r.feasible for r in results]),
        success=np.array([r.success for r in results]), parameters=pdict,
        timings={"compile": compile_s, "search": search_s, "polish": polish_s, "total": total})
