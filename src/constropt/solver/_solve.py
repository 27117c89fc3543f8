"""``solve``: problem -> evaluator -> search -> polish -> float64 check -> Result."""

from __future__ import annotations

import math
import secrets
import time
from dataclasses import replace

import numpy as np
import sympy as sp

from .._errors import OptionError, SolveFailedError
from ..problem._evaluate import report_numpy
from ..problem._problem import Problem
from ._options import SolveOptions
from ._result import History, Result, Status

__all__ = ["solve", "resume", "COMPILE_THRESHOLD"]

#: ``compile="auto"`` compiles the generation step when ``pop_size * n`` reaches this.
COMPILE_THRESHOLD = 200_000

#: A feasible objective beyond this magnitude (in the direction of optimization) is
#: reported as unbounded (status ``UNBOUNDED``, ``success=False``); so is one that keeps
#: improving by orders of magnitude as the best point approaches a box edge.
UNBOUNDED_LEVEL = 1e30


def _seed(seed) -> int:
    if seed is None:
        return secrets.randbits(63)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise OptionError(f"seed must be a non-negative integer or None, got {seed!r}")
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


def check_point(problem: Problem, x: np.ndarray, pvec: np.ndarray):
    """Float64 objective (user's sense) and per-constraint violations at one point."""
    f, V = report_numpy(problem, x.reshape(-1, 1), pvec)
    return float(f[0]), V[:, 0]


def _diverges(problem, x: np.ndarray, pvec: np.ndarray) -> tuple[bool, int]:
    """Does the objective diverge (in the optimization direction) as feasible points
    approach the end of the feasible segment from ``x`` along some coordinate?

    Per coordinate direction, bisection finds where the feasible segment from ``x`` ends
    (a box edge or a constraint boundary), then geometric approaches to that end are
    evaluated.  Returns ``(verdict, points evaluated)``.
    """
    sign = -1.0 if problem.maximize else 1.0
    free = np.flatnonzero(~problem.integer)
    if free.size == 0:
        return False, 0
    dirs = np.concatenate([free, free])
    tmax = np.concatenate([x[free] - problem.lower[free], problem.upper[free] - x[free]])
    sgn = np.concatenate([-np.ones(free.size), np.ones(free.size)])
    used = 0

    def feasible_at(t):
        nonlocal used
        pts = np.repeat(x[:, None], dirs.size, axis=1)
        pts[dirs, np.arange(dirs.size)] += sgn * t
        f, V = report_numpy(problem, pts, pvec)
        used += dirs.size
        return (V == 0).all(axis=0), sign * f

    lo, hi = np.zeros_like(tmax), tmax.copy()
    ok_hi, _ = feasible_at(hi)
    for _ in range(32):  # bisection for the end of each feasible segment (to 2^-32)
        mid = 0.5 * (lo + hi)
        ok, _ = feasible_at(mid)
        lo, hi = np.where(ok, mid, lo), np.where(ok, hi, mid)
    end = np.where(ok_hi, tmax, lo)
    f0 = sign * check_point(problem, x, pvec)[0]
    rows, feas = [], []
    for frac in 1.0 - 10.0 ** -np.arange(1, 13, 1.0):
        ok, fm = feasible_at(end * frac)
        rows.append(fm)
        feas.append(ok)
    rows, feas = np.array(rows), np.array(feas)
    for j in range(dirs.size):
        r = rows[:, j]
        if end[j] > 0 and feas[:, j].all() and np.all(np.diff(r) < 0) and r[-1] < f0 and \
                (r[-1] == -np.inf or abs(r[-1] - r[0]) > 1e6 * max(1.0, abs(r[0]))):
            return True, used
    return False, used


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


#: Distance (largest coordinate, as a share of the box) between polish starts: a start
#: nearer an earlier one than this lies in its basin and would polish to the same point.
CLUSTER = 0.02


def _polish_stage(problem, out, best, f_best, V_best, pvec, max_evals, nfev,
                  starts: int = 3):
    """SLSQP from the best point and from the best point of other clusters of the last
    population (best first under feasibility rules, each at least ``CLUSTER`` of the box
    from every start taken); keep the best feasible result.  Returns ``(x, f, V,
    nfev)``."""
    pop = out.population.X.double().cpu().numpy()
    f = np.nan_to_num(out.population.f.double().cpu().numpy(), nan=np.inf)
    cv = np.nan_to_num(out.population.cv.double().cpu().numpy(), nan=np.inf)
    scale = np.maximum(problem.upper - problem.lower, 1e-12)
    cands = [best]
    for j in np.lexsort((f, cv)):
        if len(cands) >= starts:
            break
        p = pop[:, j]
        if all(np.max(np.abs(p - c) / scale) > CLUSTER for c in cands):
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


def _execute(problem, opts, dev, dtype, seed, compile, cross_check, pvec, t_start, t_lower,
             settings, resume=None) -> Result:
    """Search, polish, check and build the Result (shared by solve and resume)."""
    from ..engine._backend import resolve_dtype
    from ._search import default_pop_size, run_search

    n = problem.n
    S = opts.pop_size or default_pop_size(opts.algorithm, n)
    S += S % 2
    wdtype = resolve_dtype(dtype, dev, S * n)
    use_compile = _compile_choice(compile, S * n)
    out, compile_s = run_search(problem, opts, dev, wdtype, use_compile, seed, pvec, S,
                                resume=resume, settings=settings)
    best = out.best_x.double().cpu().numpy()
    f_best, V_best = check_point(problem, best, pvec)
    nfev = out.nfev

    t_pol = time.perf_counter()
    if opts.polish and n <= 2000 and out.reason not in (Status.UNBOUNDED, Status.INTERRUPTED):
        best, f_best, V_best, nfev = _polish_stage(problem, out, best, f_best, V_best, pvec,
                                                   opts.max_evals, nfev)
    polish_s = time.perf_counter() - t_pol

    feasible = bool(np.all(V_best == 0))
    reason = out.reason
    if reason is Status.INTERRUPTED:
        status, message = reason, reason.value
    elif not feasible:
        status = Status.INFEASIBLE
        message = f"{Status.INFEASIBLE.value} (search ended: {reason.value})"
    else:
        status = reason
        message = reason.value
        fmin = -f_best if problem.maximize else f_best
        unbounded = fmin <= -UNBOUNDED_LEVEL
        probe_cost = 2 * int((~problem.integer).sum()) * 45
        if not unbounded and reason is not Status.TARGET and problem.n <= 2000 and (
                opts.max_evals is None or nfev + probe_cost <= opts.max_evals):
            unbounded, used = _diverges(problem, best, pvec)
            nfev += used
        if unbounded and reason is not Status.TARGET:
            status = Status.UNBOUNDED
            message = (f"{Status.UNBOUNDED.value} (best objective {f_best:.3g}; the "
                       "objective diverges inside the box)")
    if feasible and not (problem.objective.free_symbols & set(problem.variables)) and \
            not problem.objective.atoms(sp.Indexed, sp.MatrixSymbol):
        message += "; the objective is constant: any feasible point is optimal"
    sign = -1.0 if problem.maximize else 1.0
    hist = History(out.hist_nfev, sign * out.hist_f, out.hist_cv)
    total = time.perf_counter() - t_start
    result = Result(
        x=_point_dict(problem, best), x_array=best, variables=problem.variables,
        fun=f_best, feasible=feasible, maxcv=float(V_best.max()) if V_best.size else 0.0,
        violations=V_best, success=feasible and not status.failed, status=status,
        message=message, nit=out.nit, nfev=nfev, seed=seed, device=str(dev),
        timings={"lowering": t_lower, "compile": compile_s, "search": out.seconds,
                 "polish": polish_s, "total": total},
        history=hist, problem=problem)
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
