"""``solve``: problem -> evaluator -> search -> polish -> float64 check -> Result."""

from __future__ import annotations

import math
import secrets
import time
from dataclasses import replace

import numpy as np
import sympy as sp

from .._errors import OptionError, SolveFailedError
from ..problem._problem import Problem
from ._options import SolveOptions, refuse_problem_options
from ._result import History, Result, Status
from ._verdict import UNBOUNDED_LEVEL, check_point, diverges, objective_verdict

__all__ = ["solve", "resume", "COMPILE_THRESHOLD", "UNBOUNDED_LEVEL", "check_point"]

#: ``compile="auto"`` compiles the generation step when ``pop_size * n`` reaches this.
COMPILE_THRESHOLD = 200_000



def _seed(seed) -> int:
    if seed is None:
        return secrets.randbits(63)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or \
            not 0 <= seed < 2**63:
        raise OptionError(f"seed must be an integer in [0, 2**63) or None, got {seed!r}")
    return int(seed)


def _compile_choice(compile, work: int) -> bool:
    if compile == "auto":
        return work >= COMPILE_THRESHOLD
    if isinstance(compile, bool):
        return compile
    raise OptionError(f"compile must be 'auto', True or False, got {compile!r}")


def _point_dict(problem: Problem, x: np.ndarray) -> dict:
    out = {}
    for b in problem.layout.blocks:
        vals = x[b.offset:b.offset + b.size]
        integer = problem.integer[b.offset]
        if b.shape == ():
            out[b.symbol] = int(round(vals[0])) if integer else float(vals[0])
        else:
            arr = np.round(vals).astype(np.int64) if integer else vals.copy()
            out[b.symbol] = arr.reshape(b.shape)
    return out


def _key(problem, f: float, V: np.ndarray):
    cv = float(np.sum(V)) if V.size else 0.0
    fmin = -f if problem.maximize else f
    return (cv, math.inf if math.isnan(fmin) else fmin)


def polish_from(problem, start, pvec, best, f_best, V_best, max_evals, nfev):
    """SLSQP from ``start`` (strict margin 0, then 1e-9, then 1e-6 if it ends a hair
    outside); the result replaces ``best`` if feasible and better.

    Returns ``(x, f, V, nfev, stop)``; ``stop`` when the budget is spent.
    """
    from ._polish import polish

    for margin in (0.0, 1e-9, 1e-6):
        budget = None if max_evals is None else max_evals - nfev
        if budget is not None and budget < 10:
            return best, f_best, V_best, nfev, True
        cand, used = polish(problem, start, pvec, max_evals=budget, margin=margin)
        nfev += used
        f_c, V_c = check_point(problem, cand, pvec)
        if np.all(V_c == 0):
            if _key(problem, f_c, V_c) < _key(problem, f_best, V_best):
                best, f_best, V_best = cand, f_c, V_c
            break
    return best, f_best, V_best, nfev, False


def _polish_stage(problem, out, best, f_best, V_best, pvec, max_evals, nfev,
                  starts: int = 3):
    """SLSQP from the best point and from other distinct good points of the last
    population; keep the best feasible result.  Returns ``(x, f, V, nfev)``."""
    pop = out.population.X.double().cpu().numpy()
    cands = [best]
    for j in range(pop.shape[1]):
        if len(cands) >= starts:
            break
        p = pop[:, j]
        scale = np.maximum(problem.upper - problem.lower, 1e-12)
        if all(np.max(np.abs(p - c) / scale) > 1e-3 for c in cands):
            cands.append(p)
    for start in cands:
        best, f_best, V_best, nfev, stop = polish_from(problem, start, pvec, best, f_best,
                                                       V_best, max_evals, nfev)
        if stop:
            break
    return best, f_best, V_best, nfev


def solve(objective, constraints=(), *, variables=None, bounds=None, maximize=False,
          device="auto", dtype=None, seed=None, compile="auto", cross_check=False,
          **options) -> Result:
    """Solve a constrained optimization problem declared with sympy.

    Parameters
    ----------
    objective : sympy.Expr or Problem
        The objective, or a ready :class:`Problem` (then ``constraints``, ``variables``,
        ``bounds`` and ``maximize`` must be left at their defaults).
    constraints : sequence of sympy relationals
        See :class:`Problem`.
    variables, bounds, maximize
        See :class:`Problem`.
    device : str or torch.device
        ``"auto"`` (CUDA when available), ``"cpu"``, ``"cuda"`` or ``"cuda:K"``.
    dtype : torch.dtype or str, optional
        Working float dtype of the search: float64 by default for small work on CPU,
        float32 otherwise.  The final point is always checked in float64.
    seed : int, optional
        Seed of the random generator; the same seed gives the same result on CPU.
    compile : "auto", True or False
        Run the generation step under ``torch.compile``.  ``"auto"`` compiles only when
        ``pop_size * n >= COMPILE_THRESHOLD``, where the compile time pays for itself.
    cross_check : bool
        Also run scipy reference solvers and attach a :class:`CrossCheck`.
    **options
        Keyword options of :class:`SolveOptions` (``pop_size``, ``max_generations``,
        ``max_evals``, ``time_limit``, ``target``, ``polish``, ``eq_tol``,
        ``parameters``, ``throw``, ...).  Unknown names raise :class:`OptionError`.

    Returns
    -------
    Result
    """
    from ..engine._backend import resolve_device

    t_start = time.perf_counter()
    opts = SolveOptions.from_kwargs(options)
    dev = resolve_device(device)
    seed = _seed(seed)
    if isinstance(objective, Problem):
        if tuple(constraints) or variables is not None or bounds is not None or maximize:
            raise OptionError("pass constraints, variables, bounds and maximize to Problem(), "
                              "not to solve(), when the objective is already a Problem")
        refuse_problem_options(options, "solve")
        problem = objective
        t_lower = 0.0
    else:
        t0 = time.perf_counter()
        problem = Problem(objective, constraints, variables=variables, bounds=bounds,
                          maximize=maximize, parameters=opts.parameters, eq_tol=opts.eq_tol,
                          default_bound=opts.default_bound)
        t_lower = time.perf_counter() - t0
    pvec = problem.parameter_vector(opts.parameters if isinstance(objective, Problem) else None)
    settings = {"seed": seed, "device": str(dev), "dtype": dtype, "compile": compile,
                "cross_check": cross_check, "pvec": pvec,
                "options": {k: v for k, v in vars(opts).items()
                            if k not in ("callback", "progress", "checkpoint",
                                         "on_generation")}}
    return _execute(problem, opts, dev, dtype, seed, compile, cross_check, pvec, t_start,
                    t_lower, settings)


def _open(problem, lower_mask, upper_mask) -> bool:
    """Whether a pressed side has no bound at all (an infinite hard limit)."""
    soft = problem._soft
    return bool((lower_mask & ~np.isfinite(soft.hard_lower)).any()
                or (upper_mask & ~np.isfinite(soft.hard_upper)).any())


def _remaining(opts, nfev: int, seconds: float):
    """``opts`` with the budgets left after ``nfev`` evaluations and ``seconds`` of
    search and polish (each expansion of the box runs a new search within them)."""
    if nfev == 0:
        return opts
    left = {}
    if opts.max_evals is not None:
        left["max_evals"] = max(0, opts.max_evals - nfev)
    if opts.time_limit is not None:
        left["time_limit"] = max(1e-9, opts.time_limit - seconds)
    return replace(opts, **left) if left else opts


def _execute(problem, opts, dev, dtype, seed, compile, cross_check, pvec, t_start, t_lower,
             settings, resume=None) -> Result:
    """Search, polish, check and build the Result (shared by solve and resume)."""
    from ..engine._backend import resolve_dtype
    from ..problem._bounds import parameter_box
    from ._expand import MAX_EXPANSIONS, describe, expand, pressed_sides
    from ._search import default_pop_size, run_search

    problem = parameter_box(problem, pvec)  # bounds that depend on parameters follow them
    n = problem.n
    S = opts.pop_size or default_pop_size(opts.algorithm, n)
    S += S % 2
    wdtype = resolve_dtype(dtype, dev, S * n)
    use_compile = _compile_choice(compile, S * n)
    # soft sides expand while the best point presses on them; a checkpointed (or resumed)
    # run is one search, so that resuming ends exactly where the uninterrupted run does
    expandable = problem._soft.any and resume is None and opts.checkpoint is None
    box, rounds, nfev, nit, compile_s, polish_s, search_s = problem, 0, 0, 0, 0.0, 0.0, 0.0
    hist, pressed = [], None
    while True:
        ropts = _remaining(opts, nfev, search_s + polish_s)
        out, c_s = run_search(box, ropts, dev, wdtype, use_compile, seed, pvec, S,
                              resume=resume, settings=settings)
        compile_s, search_s, nit = compile_s + c_s, search_s + out.seconds, nit + out.nit
        hist.append((nfev + out.hist_nfev, out.hist_f, out.hist_cv))
        best = out.best_x.double().cpu().numpy()
        f_best, V_best = check_point(problem, best, pvec)
        base, nfev = nfev, nfev + out.nfev
        t_pol = time.perf_counter()
        if opts.polish and n <= 2000 and out.reason not in (Status.UNBOUNDED,
                                                            Status.INTERRUPTED):
            budget = None if opts.max_evals is None else opts.max_evals - base
            best, f_best, V_best, used = _polish_stage(box, out, best, f_best, V_best, pvec,
                                                       budget, nfev - base)
            nfev = base + used
        polish_s += time.perf_counter() - t_pol
        pressed = None
        probe_room = opts.max_evals is None or nfev + 2 * n <= opts.max_evals
        if not (expandable and probe_room and np.all(V_best == 0) and np.isfinite(f_best)) or \
                out.reason in (Status.INTERRUPTED, Status.CALLBACK, Status.TARGET,
                               Status.UNBOUNDED):
            break
        lo_m, hi_m, used = pressed_sides(problem, box, best, f_best, pvec)
        nfev += used
        if not (lo_m.any() or hi_m.any()):
            break
        pressed = (lo_m, hi_m)
        evals_left = None if opts.max_evals is None else opts.max_evals - nfev
        time_left = None if opts.time_limit is None else \
            opts.time_limit - search_s - polish_s
        if rounds == MAX_EXPANSIONS or (evals_left is not None and evals_left < 2 * S) or \
                (time_left is not None and time_left <= 0):
            break
        box = expand(problem, box, lo_m, hi_m, last=rounds == MAX_EXPANSIONS - 1)
        rounds += 1

    feasible = bool(np.all(V_best == 0))
    reason = out.reason
    if reason is Status.INTERRUPTED:
        status, message = reason, reason.value
    elif not feasible:
        status = Status.INFEASIBLE
        message = f"{Status.INFEASIBLE.value} (search ended: {reason.value})"
    elif objective_verdict(problem, f_best) is not None:
        status, message = objective_verdict(problem, f_best)
    else:
        status = reason
        message = reason.value
        fmin = -f_best if problem.maximize else f_best
        unbounded = fmin <= -UNBOUNDED_LEVEL
        probe_cost = 2 * int((~problem.integer).sum()) * (45 + 330)
        if not unbounded and reason is not Status.TARGET and problem.n <= 2000 and (
                opts.max_evals is None or nfev + probe_cost <= opts.max_evals):
            unbounded, used = diverges(box, best, pvec)
            nfev += used
        if unbounded and reason is not Status.TARGET:
            status = Status.UNBOUNDED
            message = (f"{Status.UNBOUNDED.value} (best objective {f_best:.3g}; the "
                       "objective diverges inside the box or as x approaches its edge)")
        elif pressed is not None and not _open(problem, *pressed):
            message += (f"; the best point presses on the search box side of "
                        f"{describe(problem, box, *pressed)}, short of the given bound: the "
                        "budget ended the box's expansion")
        elif pressed is not None:
            status = Status.UNBOUNDED
            message = (f"{Status.UNBOUNDED.value}: the best point presses on the default box "
                       f"side of {describe(problem, box, *pressed)} after {rounds} "
                       f"expansion{'s' if rounds != 1 else ''}, and the objective still "
                       f"improves beyond it (best objective {f_best:.6g}). The problem is "
                       "unbounded, or its optimum lies far outside the problem's scale: "
                       "pass bounds= to search there")
    if feasible and not (problem.objective.free_symbols & set(problem.variables)) and \
            not problem.objective.atoms(sp.Indexed, sp.MatrixSymbol):
        message += "; the objective is constant: any feasible point is optimal"
    sign = -1.0 if problem.maximize else 1.0
    hist = History(*(np.concatenate([h[k] for h in hist]) for k in range(3)))
    hist = History(hist.nfev, sign * hist.fun, hist.cv)
    total = time.perf_counter() - t_start
    result = Result(
        x=_point_dict(problem, best), x_array=best, variables=problem.variables,
        fun=f_best, feasible=feasible, maxcv=float(V_best.max()) if V_best.size else 0.0,
        violations=V_best, success=feasible and not status.failed, status=status,
        message=message, nit=nit, nfev=nfev, seed=seed, device=str(dev),
        timings={"lowering": t_lower, "compile": compile_s, "search": search_s,
                 "polish": polish_s, "total": total},
        history=hist, problem=box if rounds else problem)
    if cross_check:
        from ._crosscheck import cross_check as _cc

        t0 = time.perf_counter()
        cc = _cc(result)
        timings = dict(result.timings)
        timings["cross_check"] = time.perf_counter() - t0
        timings["total"] = time.perf_counter() - t_start
        result = replace(result, cross_check=cc, timings=timings)
    if opts.throw and not result.success:
        raise SolveFailedError(f"solve failed: {result.message}", result)
    return result


def resume(path, *, problem=None, progress=None, callback=None, checkpoint=None) -> Result:
    """Continue a solve from a checkpoint written by ``solve(..., checkpoint=path)``.

    On CPU the resumed run ends in exactly the result of an uninterrupted run with the
    same seed and settings.

    Parameters
    ----------
    path : str or path
        The checkpoint file.
    problem : Problem, optional
        If given, the checkpoint must belong to it (same generated code, box and
        sense), else :class:`CheckpointError`.
    progress, callback : optional
        As in :func:`solve` (not stored in checkpoints).
    checkpoint : str or path, optional
        Where to keep writing checkpoints (default: ``path`` itself).

    Returns
    -------
    Result

    Raises
    ------
    CheckpointError
        The file is missing, corrupt, of another version, or of another problem.
    """
    from .._errors import CheckpointError
    from ..engine._backend import resolve_device
    from ._checkpoint import fingerprint, read_checkpoint

    t_start = time.perf_counter()
    data = read_checkpoint(path)
    stored = data["problem"]
    if fingerprint(stored) != data["fingerprint"]:
        raise CheckpointError(f"checkpoint {path!r} is inconsistent: its problem does not "
                              "match its fingerprint")
    if problem is not None and fingerprint(problem) != data["fingerprint"]:
        raise CheckpointError(f"checkpoint {path!r} belongs to a different problem than the "
                              "one given (generated code, bounds or sense differ)")
    st = data["settings"]
    opts = SolveOptions.from_kwargs({**st["options"], "progress": progress,
                                     "on_generation": None,
                                     "callback": callback,
                                     "checkpoint": checkpoint if checkpoint else path})
    dev = resolve_device(st["device"])
    return _execute(stored, opts, dev, st["dtype"], st["seed"], st["compile"],
                    st["cross_check"], st["pvec"], t_start, 0.0, st, resume=data)
