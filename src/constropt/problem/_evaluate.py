"""User-facing evaluation of points (``Problem.evaluate``) in float64 or on a tensor's device.

A torch population of at least :data:`EVALUATE_COMPILE_MIN` points (or any size with
``compile=True``) is evaluated by the generated ``report`` function compiled once
(``torch.compile(dynamic=True)``, shared with every problem of the same generated
source), reading the caller's ``(S, n)`` tensor through a transposed view: no copy, one
fused loop.  Smaller inputs run the same generated code eagerly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._errors import OptionError, ProblemError
from ..backend._compile import compiled

__all__ = ["Evaluation", "evaluate_points", "report_numpy", "EVALUATE_COMPILE_MIN"]

#: ``Problem.evaluate(..., compile="auto")`` compiles for torch inputs of this many points.
EVALUATE_COMPILE_MIN = 100_000


@dataclass(frozen=True)
class Evaluation:
    """Objective and constraint status of a batch of points.

    Attributes
    ----------
    fun : array or Tensor, shape (S,)
        Objective in the user's sense (NaN where it is undefined).
    violation : array or Tensor, shape (S, m)
        Violation of each constraint, ``>= 0``; ``inf`` where a constraint is NaN.
    feasible : array or Tensor of bool, shape (S,)
        Every constraint holds (strict ones strictly, equalities within ``eq_tol``).
    """

    fun: Any
    violation: Any
    feasible: Any


def _as_points(points, n: int):
    if points.ndim == 1:
        points = points.reshape(1, -1)
    if points.ndim != 2 or points.shape[1] != n:
        raise ProblemError(f"points must have shape (S, {n}) (one column per variable), got "
                           f"{tuple(points.shape)}")
    return points


def _real_points(points, n: int):
    """``points`` as given, refused (ProblemError naming ``points``) when they hold
    anything but real numbers: complex values (whose imaginary part a float64 conversion
    would drop), None or NaN-making objects, strings (which NumPy would parse)."""
    want = f"numbers, an array of shape (S, {n}) or ({n},)"
    try:
        raw = points if isinstance(points, np.ndarray) else np.asarray(points)
    except (TypeError, ValueError):
        raw = None  # ragged: the float64 conversion below names it
    if raw is None:
        return points
    kind = raw.dtype.kind
    if kind == "c":
        raise ProblemError(f"points must be {want}; got complex values ({raw.dtype}): "
                           "constropt works over the reals")
    if kind in "USV":
        raise ProblemError(f"points must be {want}; got {raw.dtype} values {_short(points)}")
    if kind == "O":
        for k, v in enumerate(raw.reshape(-1)):
            if v is None or isinstance(v, (complex, np.complexfloating, str, bytes)):
                where = [int(i) for i in np.unravel_index(k, raw.shape)] if raw.ndim else []
                raise ProblemError(f"points must be {want}; points{where} is {v!r:.40}")
    return raw


def _short(obj, limit: int = 60) -> str:
    text = repr(obj)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def report_numpy(problem, X: np.ndarray, pvec: np.ndarray):
    """Generated ``report`` on a variable-major float64 array ``X`` (N, S).

    ``pvec`` is ``(n_params,)`` for one parameter vector, or ``(n_params, S)`` for one per
    point (a batch of instances).
    """
    ns = problem.lowering.functions("numpy")
    P = pvec.reshape(-1, 1) if np.ndim(pvec) == 1 else pvec
    with np.errstate(all="ignore"):
        f, V = ns["report"](X, P, problem.eq_tol)
    return np.asarray(f, dtype=np.float64), np.asarray(V, dtype=np.float64)


_REPORTERS: dict = {}  # generated source -> report over a row-major population


def _rows_report(problem):
    """``(pop (S, n), P, eq_tol) -> (f, V (S, m), feasible)``: the generated ``report``
    over a transposed view of the caller's population, compiled once per source."""
    key = problem.source
    hit = _REPORTERS.get(key)
    if hit is None:
        report = problem.lowering.functions("torch")["report"]

        def report_rows(pop, P, tol):
            f, V = report(pop.T, P, tol)
            return f, V.T, (V == 0).all(dim=0)

        hit = _REPORTERS[key] = compiled(report_rows, (key, "evaluate rows"))
    return hit


def evaluate_points(problem, points, parameters=None, compile="auto") -> Evaluation:
    if not (compile == "auto" or isinstance(compile, (bool, np.bool_))):
        raise OptionError(f"compile must be 'auto', True or False, got {compile!r}")
    pvec = problem.parameter_vector(parameters)
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a dependency
        torch = None
    if torch is not None and isinstance(points, torch.Tensor):
        pts = _as_points(points, problem.n)
        if pts.is_complex():
            raise ProblemError(f"points must be real; got a complex tensor ({pts.dtype}): "
                               "constropt works over the reals")
        dtype = pts.dtype if pts.is_floating_point() else torch.float64
        P = torch.as_tensor(pvec, dtype=dtype, device=pts.device).reshape(-1, 1)
        tol = torch.tensor(problem.eq_tol, dtype=dtype, device=pts.device)
        fast = compile is True or (compile == "auto" and pts.shape[0] >= EVALUATE_COMPILE_MIN)
        if fast and pts.shape[0] >= 2:  # dynamic shapes start at 2 (0/1 specialize)
            with torch.no_grad():
                f, V, feasible = _rows_report(problem)(pts, P, tol)
            return Evaluation(f, V, feasible)
        ns = problem.lowering.functions("torch")
        f, V = ns["report"](pts.T.contiguous(), P, tol)
        V = V.T
        return Evaluation(f, V, (V == 0).all(dim=1))
    points = _real_points(points, problem.n)
    try:
        arr = np.asarray(points, dtype=np.float64)
    except (TypeError, ValueError):
        raise ProblemError(f"points must be numbers, an array of shape (S, {problem.n}) or "
                           f"({problem.n},), got {_short(points)} of type "
                           f"{type(points).__name__}") from None
    pts = _as_points(arr, problem.n)
    f, V = report_numpy(problem, np.ascontiguousarray(pts.T), pvec)
    V = np.ascontiguousarray(V.T)
    return Evaluation(f, V, (V == 0).all(axis=1))
