"""``solve_batch``: many instances of one parametric problem in one vectorized run.

A batch is the one search driver (``engine/_driver.py``) with ``B`` instances: the
population is shaped ``(N, B, S)`` (genes, instances, individuals) and the parameters
``(n_params, B, 1)``, so one kernel evaluates every instance and the DE step works along
the last axis per instance.  Each instance has its own memory, epsilon level, best
point, counters and termination (the same rules as ``solve``); finished instances drop
out of the work.  Each best point is then polished within its budget and checked in
float64 (``finish/_finish.py``, as in ``solve``), and gets a full :class:`Result`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .._errors import OptionError, ProblemError
from ..backend._bulk import bulk
from ..backend._devices import check_device, choose_backend
from ..engine._driver import Instance
from ..engine._handling import handler_names, make_handler
from ..finish._finish import make_result
from ..finish._result import Result, Status, add_up
from ..finish._settled import judge_settled
from ..finish._status import bounded_in
from ..finish._verdict import diverges_many
from ..local._interior import applicable
from ..problem._bounds import parameter_box
from ..problem._evaluate import report_numpy
from ..problem._problem import Problem
from ._build import _seed
from ._localfirst import local_answers
from ._options import SolveOptions, refuse_problem_options
from ._search import Search

__all__ = ["solve_batch", "BatchResult", "BATCH_FTOL"]

#: ``ftol`` of a polished batch when none is given: the search of each instance stops
#: once its population agrees to this (relative), and the batched Newton polish
#: (``local/_newton.py``, float64) takes the point the rest of the way, so the search
#: need not run the generations the single solve's 1e-10 asks for.
BATCH_FTOL = 1e-6


def batch_defaults(problem: Problem, options: dict, dtype):
    """``(options, dtype)`` of a batch with its own defaults where the caller gave none.

    A batch pays for every generation ``B`` times, and each instance is polished in
    float64 afterwards, so when ``polish`` is on (the default):

    - ``pop_size``: ``max(20, 8 n)`` per instance (a single solve: ``max(40, 12 n)``);
    - ``ftol``: :data:`BATCH_FTOL`;
    - ``dtype``: float32 for the search, unless the problem has equality constraints
      (their tolerance, 1e-8 by default, is below float32's resolution) or integer
      variables; the polish, the check and the exact check stay float64.
    """
    if not options.get("polish", True):
        return options, dtype
    out = dict(options)
    if out.get("pop_size") is None:
        out["pop_size"] = int(min(300, max(20, 8 * problem.n)))
    out.setdefault("ftol", BATCH_FTOL)
    plain = not problem.integer.any() and not any(lf.kind == "eq" for lf in problem.leaves)
    if dtype is None and plain:
        dtype = "float32"
    return out, dtype


@dataclass(frozen=True)
class BatchResult:
    """One :class:`Result` per instance, plus the main fields stacked.

    Attributes
    ----------
    results : sequence of Result
        A tuple; under ``torchrun`` a sequence that rebuilds the other ranks' Results on
        first access (it compares equal to, and pickles as, the tuple).
    x : ndarray, shape (B, n)
    fun : ndarray, shape (B,)
    feasible, success : ndarray of bool, shape (B,)
    parameters : dict
        ``{symbol: ndarray (B,)}``, the values each instance was solved with.
    timings : dict
        Seconds for the whole batch, by part as in :attr:`Result.timings` (``import``,
        ``lowering``, ``setup``, ``compile``, ``search``, ``polish``, ``check``), which add
        up to ``total``; each Result's timings are its share, the batch's divided by
        ``B``.
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


def solve_batch(problem: Problem, parameters: Mapping[Any, Any], *, device: Any = "auto",
                dtype: Any = None, seed: int | None = None, compile: bool | str = "auto",
                local_first: bool | str = "auto", **options: Any) -> BatchResult:
    """Solve one parametric problem for ``B`` parameter values at once.

    Parameters
    ----------
    problem : Problem
        A problem declared with ``parameters={...}``.
    parameters : dict
        ``{symbol: array of B values}``; parameters not listed keep the problem's value.
    device, seed
        As in :func:`constropt.solve`.
    dtype : None, "float32" or "float64" (or the torch dtypes)
        The search's working dtype.  None: float32 when the batch is polished and the
        problem has neither equality constraints nor integer variables, else as in
        :func:`constropt.solve`; the polish and the checks are float64 either way.
    compile : "auto", True or False
        Compile the batched generation step; ``"auto"`` only when the expected run
        (``pop_size * n * B`` numbers per generation, times the generations a batch
        expects) is long enough to pay for the compile (``COMPILE_RUN_WORK``); one
        compile serves every ``B`` (dynamic shapes) and later calls of the process.
    local_first : "auto", True or False
        Answer instances by local solves before any global search (see
        :mod:`constropt.solver._localfirst`): cold interior-point solves from several
        starts at anchors along the parameter sweep (instances ordered by parameter
        proximity), Newton warm-started from the neighbouring anchors' solutions for
        the rest.  An instance is answered only when its local answers pass the float64
        check and a local optimality test (KKT point, second order) and agree; the
        others (answers that disagree, fail, or cannot be verified) get the global
        search.  ``"auto"``: on for continuous problems with inequality constraints
        only (no ``Or``), a bounded box, at most 30 variables, ``polish`` on and no
        ``max_evals``, ``target`` or ``x0``; True requires those.
    **options
        Options of :func:`constropt.solve` that apply here: ``pop_size`` (per instance;
        default ``max(20, 8 n)`` when polishing, see :func:`batch_defaults`), ``ftol``
        (default :data:`BATCH_FTOL` when polishing), ``max_generations``, ``max_evals``
        (per instance, polish included: never exceeded), ``time_limit``,
        ``stagnation``, ``polish`` (Newton steps, then SLSQP where they do not settle,
        from each instance's best point), ``target``, ``check_every``,
        ``constraint_handling``, ``strategy``, ``backend`` (``"auto"``: NumPy while
        ``pop_size * n * B`` is small, see :class:`SolveOptions`); ``eq_tol`` and
        ``default_bound`` are not options here (they belong to the Problem).

    Returns
    -------
    BatchResult
        ``results[b]`` is instance ``b``'s :class:`Result`, its own point, feasibility,
        status and counts.
    """
    t_start = time.perf_counter()
    if not isinstance(problem, Problem):
        raise OptionError("solve_batch takes a constropt.Problem declared with parameters=")
    _refuse_options(options)
    options, dtype = batch_defaults(problem, options, dtype)
    opts = SolveOptions.from_kwargs({**options, "restarts": 0})
    if opts.constraint_handling != "auto" and not make_handler(opts.constraint_handling).batches:
        raise OptionError(f"solve_batch supports constraint_handling {_batch_handlers()}")
    if opts.backend == "numpy":  # a conflict is named before the device is checked
        choose_backend("numpy", device, compile, 0)
    check_device(device)  # a bad device is reported before any work
    seed = _seed(seed, opts.rng)
    M, pdict = _param_matrix(problem, parameters)
    problem = parameter_box(problem, M)  # the hull of per-instance bounds (also constraints)
    if _local_first(local_first, problem, opts):
        results, timings = _local_then_global(problem, opts, device, dtype, seed, compile, M,
                                              t_start)
    else:
        search = Search._create(problem, opts, device, dtype, seed, compile, M,
                                t_start=t_start)
        results, timings = tuple(search._finish()), dict(search._timings)
    return BatchResult(
        results=results, x=stacked_x(results),
        fun=np.array([r.fun for r in results]),
        feasible=np.array([r.feasible for r in results]),
        success=np.array([r.success for r in results]), parameters=pdict,
        timings=timings)


def stacked_x(results) -> np.ndarray:
    """(B, n): the Results' points, one concatenation (``np.stack`` reshapes each)."""
    return np.concatenate([r.x_array for r in results]).reshape(len(results), -1)


def _batch_handlers() -> str:
    """The registered handlers ``solve_batch`` offers, as a phrase."""
    names = [repr(h) for h in handler_names() if make_handler(h).batches]
    return ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else names[0]


def _refuse_options(options) -> None:
    """:class:`OptionError` naming the options of ``solve`` that a batch does not take."""
    unsupported = {"algorithm", "restarts", "repair", "checkpoint", "callback", "progress",
                   "on_generation"} & set(options)
    if options.get("certify", False) not in (False, None):  # no per-instance certificates
        unsupported.add("certify")
    if unsupported:
        raise OptionError(f"solve_batch does not support {', '.join(sorted(unsupported))}")
    refuse_problem_options(options, "solve_batch")


def _local_first(choice, problem, opts) -> bool:
    """Whether the local stage runs: ``choice`` as given, ``"auto"`` where it applies."""
    if choice not in ("auto", True, False):
        raise OptionError(f"local_first must be 'auto', True or False, got {choice!r}")
    if choice is False:
        return False
    why = applicable(problem)
    if why is None and not opts.polish:
        why = "polish=False"
    if why is None and opts.max_evals is not None:
        why = "max_evals (the local solves' evaluations are not budgeted)"
    if why is None and opts.target is not None:
        why = "target"
    if why is None and opts.x0 is not None:
        why = "x0"
    if why is not None and choice is True:
        raise OptionError(f"local_first=True does not apply here: {why}")
    return why is None


def _local_then_global(problem, opts, device, dtype, seed, compile, M, t_start):
    """The local stage, then the global search of the instances it did not answer; the
    Results in instance order and the batch's timings (the local solves count as
    ``polish``; the exact check, probes and status rules of their answers as
    ``check``)."""
    B = M.shape[1]
    glob: dict = {}
    parts = {"import": 0.0, "compile": 0.0, "search": 0.0, "polish": 0.0, "check": 0.0}

    def solve_global(idx):
        search = Search._create(problem, opts, device, dtype, seed, compile, M[:, idx],
                                t_start=time.perf_counter())
        res = search._finish()
        for k in parts:
            parts[k] += search._timings.get(k, 0.0)
        for b, r in zip(idx, res):
            glob[int(b)] = r
        return (np.stack([r.x_array for r in res], axis=1),
                np.array([r.success for r in res], dtype=bool))

    t0 = time.perf_counter()
    stopped = False  # a Ctrl-C: every instance not finished yet ends INTERRUPTED
    try:
        answered, x, f, V, used, how, _ = local_answers(problem, M, seed, solve_global)
    except KeyboardInterrupt:  # the box centre stands for the instances not searched
        stopped, answered = True, np.ones(B, dtype=bool)
        x = np.repeat((0.5 * (problem.lower + problem.upper))[:, None], B, axis=1)
        f, V = report_numpy(problem, x, M)
        f, V = np.broadcast_to(f, (B,)).copy(), np.array(V)
        used, how = np.zeros(B, dtype=np.int64), np.full(B, "", dtype=object)
        for b in glob:
            answered[b] = False
    local_s = time.perf_counter() - t0 - (parts["search"] + parts["polish"] + parts["compile"])
    rest = np.array([b for b in range(B) if not answered[b] and b not in glob], dtype=int)
    if rest.size and not stopped:
        solve_global(rest)
    stopped = stopped or any(r.status is Status.INTERRUPTED for r in glob.values())
    t1 = time.perf_counter()
    mine = np.flatnonzero(answered)
    with bulk():
        fins = _local_finish(problem, mine, x, f, V, used, how, M, stopped)
        parts["polish"] += local_s
        parts["check"] += time.perf_counter() - t1
        timings = add_up(parts, t_start)
        share = {k: v / B for k, v in timings.items()}
        out = [None] * B
        for b, (inst, fin) in fins.items():
            out[b] = make_result(problem, inst, fin, seed=seed, device="cpu",
                                 timings=dict(share), backend="numpy")
        for b, r in glob.items():
            if out[b] is None:
                out[b] = replace(r, timings=dict(share))
    return tuple(out), timings


def _local_finish(problem, idx, x, f, V, used, how, M, stopped=False) -> dict:
    """``{instance: (Instance, finish's tuple)}`` of the instances ``idx`` the local
    stage answered: the unboundedness probe (vectorized; not run where the objective is a
    polynomial on a bounded box, as in the verdict of every mode), then the exact check and the
    status rules of every mode, batched (:func:`constropt.finish._settled.judge_settled`:
    what :func:`constropt.finish._finish.finish` gives each one).  After a Ctrl-C
    (``stopped``, or one landing here) the instances not finished yet end
    ``INTERRUPTED``, checked."""
    if idx.size == 0:
        return {}
    verdicts = probe = None
    if not stopped and not bounded_in(problem, problem):  # else nothing can diverge
        try:
            verdicts, probe = diverges_many(problem, x[:, idx], M[:, idx])
        except KeyboardInterrupt:
            stopped = True
    sgn = -1.0 if problem.maximize else 1.0
    fins = judge_settled(problem, x[:, idx], f[idx], V[:, idx], M[:, idx], used[idx],
                         reason=Status.INTERRUPTED if stopped else Status.CONVERGED,
                         unbounded=None if verdicts is None else (verdicts, probe))
    out = {}
    for b, fin in zip(idx.tolist(), fins):
        xb, fb = x[:, b].copy(), float(f[b])
        inst = Instance(xb, sgn * fb, 0.0, 0, 0, Status.INTERRUPTED if fin.status is
                        Status.INTERRUPTED else Status.CONVERGED, 0, np.array([int(used[b])]),
                        np.array([sgn * fb]), np.array([0.0]), xb[:, None])
        if fin.status is Status.CONVERGED:
            fin = fin._replace(message=f"local solve: {how[b]}; a verified KKT point (no "
                               "global search)" + fin.message[len(Status.CONVERGED.value):])
        out[int(b)] = (inst, fin)
    return out
