"""``solve_batch``: many instances of one parametric problem in one vectorized run.

A batch is the one search driver (``engine/_driver.py``) with ``B`` instances: the
population is shaped ``(N, B, S)`` (genes, instances, individuals) and the parameters
``(n_params, B, 1)``, so one kernel evaluates every instance and the DE step works along
the last axis per instance.  Each instance has its own memory, epsilon level, best
point, counters and termination (the same rules as ``solve``); finished instances drop
out of the work.  Each best point is then polished within its budget and checked in
float64 (``_finish.py``, as in ``solve``), and gets a full :class:`Result`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._errors import OptionError, ProblemError
from ..problem._bounds import parameter_box
from ..problem._problem import Problem
from ._build import _seed
from ._options import SolveOptions, refuse_problem_options
from ._result import Result
from ._search import Search

__all__ = ["solve_batch", "BatchResult", "BATCH_FTOL"]

#: ``ftol`` of a polished batch when none is given: the search of each instance stops
#: once its population agrees to this (relative), and the batched Newton polish
#: (``_newton.py``, float64) takes the point the rest of the way.  With the single
#: solve's 1e-10, the disc benchmark ran 100-160 generations instead of 60-120.
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
    results : tuple of Result
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
                **options: Any) -> BatchResult:
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
        Compile the batched generation step; ``"auto"`` when ``pop_size * n * B``
        reaches ``COMPILE_THRESHOLD``, the rule of a single solve (a 1,000-instance
        batch of a 2-variable problem runs eagerly: its generations cost milliseconds,
        a compile seconds).
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
    unsupported = {"algorithm", "restarts", "repair", "checkpoint", "callback", "progress",
                   "on_generation"} & set(options)
    if options.get("certify", False) not in (False, None):  # no per-instance certificates
        unsupported.add("certify")
    if unsupported:
        raise OptionError(f"solve_batch does not support {', '.join(sorted(unsupported))}")
    refuse_problem_options(options, "solve_batch")
    options, dtype = batch_defaults(problem, options, dtype)
    opts = SolveOptions.from_kwargs({**options, "restarts": 0})
    if opts.constraint_handling == "penalty":
        raise OptionError("solve_batch supports constraint_handling 'feasibility', "
                          "'epsilon' and 'death'")
    from ..engine._backend import check_device, choose_backend

    if opts.backend == "numpy":  # a conflict is named before the device is checked
        choose_backend("numpy", device, compile, 0)
    check_device(device)  # a bad device is reported before any work
    seed = _seed(seed, opts.rng)
    M, pdict = _param_matrix(problem, parameters)
    problem = parameter_box(problem, M)  # the hull of per-instance bounds (also constraints)
    search = Search._create(problem, opts, device, dtype, seed, compile, M, t_start=t_start)
    results = tuple(search._finish())
    return BatchResult(
        results=results, x=np.stack([r.x_array for r in results]),
        fun=np.array([r.fun for r in results]),
        feasible=np.array([r.feasible for r in results]),
        success=np.array([r.success for r in results]), parameters=pdict,
        timings=dict(search._timings))
