"""``solve``: problem -> evaluator -> search -> polish -> float64 check -> Result."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import sympy as sp

from .._errors import SolveFailedError
from ..certify._result import certify_result
from ..finish._crosscheck import references_of
from ..finish._finish import (
    constant_note,
    defined_fallback,
    polish_from,
    polish_stage,
    result_key,
    verdict,
)
from ..finish._interrupt import cross_checked, interrupted, mandatory
from ..finish._result import History, Result, Status, add_up
from ..finish._verdict import UNBOUNDED_LEVEL, check_point, point_dict
from ..problem._bounds_input import BoundsLike
from ..problem._problem import Problem
from ._build import COMPILE_THRESHOLD, POLISH_TIME_SHARE, _problem_of, _seed
from ._options import SolveOptions, stored_options

__all__ = ["solve", "resume", "COMPILE_THRESHOLD", "UNBOUNDED_LEVEL", "check_point",
           "polish_from"]

def _run_round(box, ropts, dev, dtype, seed, compile, pvec, *, resume, settings, deadline,
               search_deadline):
    """One search of the driver over ``box`` (no finishing): ``(instance, seconds,
    compile seconds)``."""
    from ._search import Search

    search = Search._create(box, ropts, dev, dtype, seed, compile, pvec[:, None],
                            t_start=time.perf_counter(), settings=settings, resume=resume,
                            deadline=deadline, search_deadline=search_deadline)
    search.run()
    out = search._driver.outcome()
    return out.instances[0], out.seconds, search._engine


def solve(objective: sp.Expr | Problem, constraints: Iterable[Any] | sp.Basic = (), *,
          variables: Sequence[sp.Basic] | None = None, bounds: BoundsLike = None,
          maximize: bool = False, device: Any = "auto", dtype: Any = None,
          seed: int | None = None, compile: bool | str = "auto", cross_check: bool = False,
          **options: Any) -> Result:
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
        ``"auto"`` (CUDA when available and the work is large, else the CPU), ``"cpu"``,
        ``"cuda"`` or ``"cuda:K"``.
    dtype : torch.dtype or str, optional
        Working float dtype of the search: float64 by default for small work on CPU,
        float32 otherwise.  The final point is always checked in float64.
    seed : int, optional
        Seed of the random generator; the same seed gives the same result on CPU.  Or
        scipy's ``rng=`` (an int or a ``numpy.random.Generator``, see
        :class:`SolveOptions`), not both.
    compile : "auto", True or False
        Run the generation step under ``torch.compile``.  ``"auto"`` compiles only when
        ``pop_size * n >= COMPILE_THRESHOLD``, where the compile time pays for itself
        (torch backend only).
    cross_check : bool, str or sequence of str
        Also run reference solvers and attach a :class:`CrossCheck`: ``True`` or
        ``"scipy"`` (multistart SLSQP and differential evolution), ``"scip"`` (SCIP,
        needs pyscipopt: ``pip install "constropt[scip]"``), or ``("scipy", "scip")``.
    **options
        Keyword options of :class:`SolveOptions` (``pop_size``, ``max_generations``,
        ``max_evals``, ``time_limit``, ``target``, ``polish``, ``eq_tol``,
        ``parameters``, ``throw``, ``backend``, ``rng``, ``x0``, ``callback``, ...).
        Unknown names raise :class:`OptionError`.

    Returns
    -------
    Result
        ``result.backend`` says which array library searched (``"numpy"`` or
        ``"torch"``); importing torch, when the torch backend runs for the first time in
        the process, is timed as ``timings["import"]``.
    """
    t_start = time.perf_counter()
    from ..backend._devices import check_device, choose_backend

    opts = SolveOptions.from_kwargs(options)
    cross_check = references_of(cross_check)  # a bad name or a missing pyscipopt: now
    if opts.backend == "numpy":  # a conflict is named before the device is checked
        choose_backend("numpy", device, compile, 0)
    check_device(device)  # "auto" and "cpu" without importing torch
    dev = device
    seed = _seed(seed, opts.rng)
    problem, pvec, t_lower = _problem_of(objective, constraints, variables, bounds, maximize,
                                         opts, options)
    from ..problem._fbbt import prove_infeasible

    proof = prove_infeasible(problem, pvec)
    if proof is not None:  # bound propagation emptied the box: no search to run
        from ..certify._result import proof_result

        result = proof_result(problem, proof, pvec, seed, str(dev), t_start, t_lower,
                              max_evals=opts.max_evals)
        if opts.throw:
            raise SolveFailedError(f"solve failed: {result.message}", result)
        return result
    settings = {"seed": seed, "device": str(dev), "dtype": dtype, "compile": compile,
                "cross_check": cross_check, "pvec": pvec,
                "options": stored_options(opts)}
    return _execute(problem, opts, dev, dtype, seed, compile, cross_check, pvec, t_start,
                    {"lowering": t_lower}, settings)


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


def _execute(problem, opts, dev, dtype, seed, compile, cross_check, pvec, t_start, spent,
             settings, resume=None) -> Result:
    """Search, polish, check and build the Result (shared by solve and resume).

    ``spent``: seconds already spent by part (``import``, ``lowering``), from
    ``t_start``.  ``time_limit`` is a deadline for the whole call: the search stops at
    it less a share kept for the polish, and the polish stops at it.  Soft sides of the
    box expand while the best point presses on them (each expansion a new search within
    the budgets left).
    """
    from ..problem._bounds import parameter_box
    from ._expand import MAX_EXPANSIONS, describe, expand, open_side, pressed_sides
    from ._search import default_pop_size

    if opts.checkpoint is not None:  # fail now, not after the whole search
        from ._checkpoint import check_writable

        check_writable(opts.checkpoint)
    deadline = None if opts.time_limit is None else t_start + opts.time_limit
    problem = parameter_box(problem, pvec)  # bounds that depend on parameters follow them
    n = problem.n
    S = opts.pop_size or default_pop_size(opts.algorithm, n)
    S += S % 2
    before = float(getattr(resume["loop"], "elapsed", 0.0)) if resume is not None else 0.0
    search_deadline = None
    if deadline is not None:
        search_deadline = deadline - (POLISH_TIME_SHARE * opts.time_limit if opts.polish else 0)
    # soft sides expand while the best point presses on them; a checkpointed (or resumed)
    # run is one search, so that resuming ends exactly where the uninterrupted run does
    expandable = problem._soft.any and resume is None and opts.checkpoint is None
    box, rounds, nfev, nit, compile_s, polish_s, search_s = problem, 0, 0, 0, 0.0, 0.0, 0.0
    best = f_best = V_best = None
    hist, pressed, reason = [], None, None
    import_s = check_s = 0.0
    last_box = problem
    while True:
        ropts = _remaining(opts, nfev, search_s + polish_s)
        try:
            out, seconds, eng = _run_round(box, ropts, dev, dtype, seed, compile, pvec,
                                           resume=resume, settings=settings,
                                           deadline=deadline, search_deadline=search_deadline)
        except KeyboardInterrupt:  # setting up a new search (the search catches its own)
            if not rounds:
                raise  # no point evaluated yet: nothing to return
            box, rounds, reason, pressed = last_box, rounds - 1, Status.INTERRUPTED, None
            break  # the previous round's best point, checked and polished, stands
        compile_s, nit = compile_s + eng.compile_s, nit + out.nit
        import_s += eng.import_s
        search_s += seconds - before  # this call's share (a resumed run counts on)
        hist.append((nfev + out.hist_nfev, out.hist_f, out.hist_cv))
        kept = None if best is None else (best, f_best, V_best)  # the last round's
        best = out.x.copy()
        t_c = time.perf_counter()
        (f_best, V_best), reason = mandatory(out.reason,
                                             lambda r: check_point(problem, best, pvec))
        check_s += time.perf_counter() - t_c
        base, nfev = nfev, nfev + out.nfev + 1  # the float64 check is an evaluation too
        best, f_best, V_best, nfev, first = defined_fallback(
            problem, out, best, f_best, V_best, pvec, nfev, opts.max_evals)
        t_pol = time.perf_counter()
        if opts.polish and n <= 2000 and reason not in (Status.UNBOUNDED, Status.INTERRUPTED):
            budget = None if opts.max_evals is None else opts.max_evals - base
            best, f_best, V_best, used, stopped = polish_stage(
                box, out.population, best, f_best, V_best, pvec, budget, nfev - base,
                deadline=deadline, first=first)
            nfev = base + used
            if stopped is not None:
                reason = stopped
        if kept is not None and result_key(problem, kept[1], kept[2])[:2] < \
                result_key(problem, f_best, V_best)[:2]:
            best, f_best, V_best = kept  # a wider box's search ended where f is undefined
        polish_s += time.perf_counter() - t_pol
        pressed = None
        probe_room = opts.max_evals is None or nfev + 2 * n <= opts.max_evals
        if not (expandable and probe_room and np.all(V_best == 0) and np.isfinite(f_best)) or \
                reason in (Status.INTERRUPTED, Status.CALLBACK, Status.TARGET,
                           Status.UNBOUNDED, Status.TIME_LIMIT):
            break
        try:
            lo_m, hi_m, used = pressed_sides(problem, box, best, f_best, pvec,
                                             None if opts.max_evals is None else
                                             opts.max_evals - nfev)
        except KeyboardInterrupt:
            reason = Status.INTERRUPTED
            break
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
        last_box = box
        box = expand(problem, box, lo_m, hi_m, last=rounds == MAX_EXPANSIONS - 1)
        rounds += 1
    t_check = time.perf_counter()

    (best, f_best, V_best, nfev, status, message, checked), _ = mandatory(
        reason, lambda r: verdict(problem, best, f_best, V_best, pvec, r, nfev,
                                  opts.max_evals, box=box))
    feasible = checked.feasible
    if feasible and reason is not Status.TARGET and pressed is not None and \
            (status is reason or status is Status.UNBOUNDED):
        # the box stopped expanding with the best point on a side
        if not open_side(problem, *pressed):
            if status is reason:  # a better feasible point lies beyond the side
                status = Status.NOT_CONFIRMED
                message = Status.NOT_CONFIRMED.value
            message += (f"; the best point presses on the search box side of "
                        f"{describe(problem, box, *pressed)}, short of the given bound: the "
                        "budget ended the box's expansion")
        else:
            status = Status.UNBOUNDED
            message = (f"{Status.UNBOUNDED.value}: the best point presses on the default box "
                       f"side of {describe(problem, box, *pressed)} after {rounds} "
                       f"expansion{'s' if rounds != 1 else ''}, and the objective still "
                       f"improves beyond it (best objective {f_best:.6g}). The problem is "
                       "unbounded, or its optimum lies far outside the problem's scale: "
                       "pass bounds= to search there")
    message += constant_note(problem, checked)
    sign = -1.0 if problem.maximize else 1.0
    hist = History(*(np.concatenate([h[k] for h in hist]) for k in range(3)))
    hist = History(hist.nfev, sign * hist.fun, hist.cv)
    timings = {"import": import_s, "lowering": spent.get("lowering", 0.0),
               "compile": compile_s, "search": search_s, "polish": polish_s,
               "check": check_s + time.perf_counter() - t_check}
    result = Result(
        x=point_dict(problem, best, checked.genes), x_array=best, variables=problem.variables,
        fun=f_best, feasible=feasible, maxcv=float(V_best.max()) if V_best.size else 0.0,
        violations=V_best, success=feasible and not status.failed, status=status,
        message=message, nit=nit, nfev=nfev, seed=seed, device=str(eng.device),
        timings=add_up(timings, t_start), backend=eng.backend,
        history=hist, problem=box if rounds else problem,
        verification=checked.verification)
    # what is left is optional: after a Ctrl-C it is skipped, and a Ctrl-C during it
    # returns the result as it stands (INTERRUPTED)
    if cross_check:
        result = cross_checked(result, t_start, cross_check)
    if opts.certify and result.status is not Status.INTERRUPTED:
        try:
            result = certify_result(result, problem, pvec, opts, dev, t_start)
        except KeyboardInterrupt:  # before the branch-and-bound (which catches its own)
            result = interrupted(result, "before the certificate's branch-and-bound began")
    result = replace(result, timings=add_up(result.timings, t_start))
    if opts.throw and not result.success:
        raise SolveFailedError(f"solve failed: {result.message}", result)
    return result


def resume(path: str | os.PathLike, *, problem: Problem | None = None,
           progress: bool | None = None, callback: Callable[..., Any] | None = None,
           checkpoint: str | os.PathLike | None = None) -> Result:
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
    from .._errors import CheckpointError, ProblemError
    from ..backend._devices import resolve_device
    from ._checkpoint import fingerprint, problem_from_data, read_checkpoint
    from ._resume_check import check_resume
    from ._search import default_pop_size

    t_start = time.perf_counter()
    data = read_checkpoint(path)
    t0 = time.perf_counter()
    try:
        stored = problem_from_data(data["problem"])
    except (CheckpointError, ProblemError, TypeError, ValueError) as exc:
        raise CheckpointError(f"checkpoint {path!r} holds a problem that cannot be rebuilt "
                              f"({str(exc)[:300]})") from None
    if fingerprint(stored) != data["fingerprint"]:
        raise CheckpointError(f"checkpoint {path!r} is inconsistent: its problem does not "
                              "match its fingerprint")
    if problem is not None and fingerprint(problem) != data["fingerprint"]:
        raise CheckpointError(f"checkpoint {path!r} belongs to a different problem than the "
                              "one given (generated code, bounds or sense differ)")
    try:
        check_resume(data, stored, default_pop_size)
    except CheckpointError as exc:
        raise CheckpointError(f"checkpoint {path!r}: {exc}") from None
    st = data["settings"]
    opts = SolveOptions.from_kwargs({**st["options"], "progress": progress,
                                     "on_generation": None,
                                     "callback": callback,
                                     "checkpoint": checkpoint if checkpoint else path})
    dev = st["device"]
    if st.get("backend", "torch") == "torch":
        dev = resolve_device(dev)
    t_lower = time.perf_counter() - t0
    return _execute(stored, opts, dev, st["dtype"], st["seed"], st["compile"],
                    st["cross_check"], st["pvec"], t_start, {"lowering": t_lower}, st,
                    resume=data)
