"""``solve``: problem -> evaluator -> search -> polish -> float64 check -> Result."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import Any

import sympy as sp

from .._errors import CheckpointError, ProblemError
from ..backend._devices import check_device, choose_backend, resolve_device
from ..certify._result import proof_result
from ..finish._crosscheck import references_of
from ..finish._finish import judge, make_result
from ..finish._result import Result, Stopwatch, raise_if_failed, run_timings
from ..problem._bounds import parameter_box
from ..problem._bounds_input import BoundsLike
from ..problem._fbbt import prove_infeasible
from ..problem._problem import Problem
from ._build import _problem_of, _seed
from ._checkpoint import read_checkpoint
from ._checkpoint_problem import fingerprint, problem_from_data
from ._conclude import concluded
from ._convexfirst import applies, check_search_options, convex_answer, local_history
from ._expand import pressed_note, search_rounds
from ._options import SolveOptions, stored_options
from ._resume_check import check_resume
from ._search import default_pop_size

__all__ = ["solve", "resume"]


def solve(objective: sp.Expr | Problem, constraints: Iterable[Any] | sp.Basic = (), *,
          variables: Sequence[sp.Basic] | None = None, bounds: BoundsLike = None,
          maximize: bool = False, device: Any = "auto", dtype: Any = None,
          seed: int | None = None, compile: bool | str = "auto", cross_check: bool = False,
          local_first: bool | str = "auto", **options: Any) -> Result:
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
    local_first : "auto", True or False
        On a problem proven convex on its box (:mod:`constropt.certify._convexity`),
        answer it by a local solve before any search (:mod:`._convexfirst`): SLSQP with
        exact derivatives from ``x0`` or the box centre; its end is the answer when it
        is a feasible KKT point that the exact check confirms, else the search runs.
        ``"auto"`` and True: where no option asks for the search itself (True raises
        :class:`OptionError` where one does: ``checkpoint``, ``callback``,
        ``on_generation``, ``polish=False``); False: always the search.
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
    opts = SolveOptions.from_kwargs(options)
    cross_check = references_of(cross_check)  # a bad name or a missing pyscipopt: now
    if opts.backend == "numpy":  # a conflict is named before the device is checked
        choose_backend("numpy", device, compile, 0)
    check_device(device)  # "auto" and "cpu" without importing torch
    dev = device
    seed = _seed(seed, opts.rng)
    problem, pvec, t_lower = _problem_of(objective, constraints, variables, bounds, maximize,
                                         opts, options)
    proof = prove_infeasible(problem, pvec)
    if proof is not None:  # bound propagation emptied the box: no search to run
        # the least-violating point is found on the CPU (NumPy), whatever device was asked
        return raise_if_failed(proof_result(problem, proof, pvec, seed, "cpu", t_start,
                                            t_lower, max_evals=opts.max_evals), opts.throw)
    settings = {"seed": seed, "device": str(dev), "dtype": dtype, "compile": compile,
                "cross_check": cross_check, "pvec": pvec,
                "options": stored_options(opts)}
    applies(local_first, problem, opts)  # a bad value or local_first=True out of place
    return _execute(problem, opts, dev, dtype, seed, compile, cross_check, pvec, t_start,
                    {"lowering": t_lower}, settings, local_first=local_first)


def _execute(problem, opts, dev, dtype, seed, compile, cross_check, pvec, t_start, spent,
             settings, resume=None, local_first=False) -> Result:
    """Search, polish, check and build the Result (shared by solve and resume).

    ``spent``: seconds already spent by part (``import``, ``lowering``), from
    ``t_start``.  ``time_limit`` is a deadline for the whole call: the search stops at
    it less a share kept for the polish, and the polish stops at it.  Soft sides of the
    box expand while the best point presses on them (:func:`._expand.search_rounds`);
    the last round's point takes the exact check and the status rules, then the run's
    optional steps (:func:`._conclude.concluded`).  An unwritable ``checkpoint`` fails
    before the search: the first round's :class:`Search` checks it.  On a problem
    proven convex a local solve comes first (:mod:`._convexfirst`); where it fails the
    search runs with the evaluations it spent counted.
    """
    deadline = None if opts.time_limit is None else t_start + opts.time_limit
    problem = parameter_box(problem, pvec)  # bounds that depend on parameters follow them
    watch = Stopwatch()
    tried = 0
    if applies(local_first, problem, opts, resume) is None:
        check_search_options(problem, opts, dev, dtype, compile, pvec, settings)
        att = convex_answer(problem, opts, pvec, deadline, watch)
        if att.fin is not None:
            timings = run_timings(watch, t_start, import_s=0.0,
                                  lowering=spent.get("lowering", 0.0), compile_s=0.0,
                                  search=0.0)
            result = make_result(problem, local_history(problem, att.fin), att.fin,
                                 seed=seed, device="cpu", timings=timings, backend="numpy")
            result = concluded(result, problem, pvec, opts, dev, t_start, cross_check)
            return raise_if_failed(result, opts.throw)
        tried = att.used
        if tried and opts.max_evals is not None:
            opts = replace(opts, max_evals=opts.max_evals - tried)
    run = search_rounds(problem, opts, dev, dtype, seed, compile, pvec, settings=settings,
                        resume=resume, deadline=deadline, watch=watch)
    fin = judge(problem, run.inc, run.reason, run.budget, box=run.box,
                amend=pressed_note(problem, run), watch=watch)
    fin = fin._replace(nfev=fin.nfev + tried)
    timings = run_timings(watch, t_start, import_s=run.import_s,
                          lowering=spent.get("lowering", 0.0), compile_s=run.compile_s,
                          search=run.search_s)
    result = make_result(run.box if run.rounds else problem, run.inst, fin, seed=seed,
                         device=run.end.device, timings=timings, backend=run.end.backend)
    result = concluded(result, problem, pvec, opts, dev, t_start, cross_check)
    return raise_if_failed(result, opts.throw)


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
