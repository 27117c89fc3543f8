"""``solve``: problem -> search -> polish -> float64 check -> Result.

``solve`` is a :class:`Search` run to the end (see ``_search.py``); the finishing rules
(budget, polish, unboundedness, status) live in ``_finish.py``.
"""

from __future__ import annotations

import secrets
import time

import numpy as np

from .._errors import OptionError
from ..problem._problem import Problem
from ._finish import UNBOUNDED_LEVEL, check_point, polish_from
from ._finish import point_dict as _point_dict
from ._options import SolveOptions
from ._result import Result
from ._search import COMPILE_THRESHOLD, Search
from ._search import compile_choice as _compile_choice

__all__ = ["solve", "resume", "COMPILE_THRESHOLD", "check_point", "polish_from",
           "UNBOUNDED_LEVEL"]

_ = (_point_dict, _compile_choice)  # kept importable from here


def _seed(seed) -> int:
    if seed is None:
        return secrets.randbits(63)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise OptionError(f"seed must be a non-negative integer or None, got {seed!r}")
    return int(seed)


def _problem_of(objective, constraints, variables, bounds, maximize, opts):
    """``(problem, parameter vector, seconds spent building it)`` from solve's arguments."""
    if isinstance(objective, Problem):
        if tuple(constraints) or variables is not None or bounds is not None or maximize:
            raise OptionError("pass constraints, variables, bounds and maximize to Problem(), "
                              "not to solve(), when the objective is already a Problem")
        return objective, objective.parameter_vector(opts.parameters), 0.0
    t0 = time.perf_counter()
    problem = Problem(objective, constraints, variables=variables, bounds=bounds,
                      maximize=maximize, parameters=opts.parameters, eq_tol=opts.eq_tol,
                      default_bound=opts.default_bound)
    return problem, problem.parameter_vector(None), time.perf_counter() - t0


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
    resolve_device(device, 0)  # a bad device is reported before any work
    seed = _seed(seed)
    problem, pvec, t_lower = _problem_of(objective, constraints, variables, bounds, maximize,
                                         opts)
    search = Search._create(problem, opts, device, dtype, seed, compile, pvec[:, None],
                            t_start=t_start, t_lower=t_lower, cross_check=cross_check)
    return search.result()


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
    pvec = np.asarray(st["pvec"], dtype=np.float64)
    search = Search._create(stored, opts, dev, st["dtype"], st["seed"], st["compile"],
                            pvec.reshape(-1, 1), t_start=t_start,
                            cross_check=st["cross_check"], settings=st, resume=data)
    return search.result()
