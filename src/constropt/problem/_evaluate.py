"""User-facing evaluation of points (``Problem.evaluate``) in float64 or on a tensor's device."""

from __future__ import annotations

import numpy as np

from .._errors import ProblemError
from ._problem import Evaluation

__all__ = ["evaluate_points", "report_numpy"]


def _as_points(points, n: int, xp):
    if points.ndim == 1:
        points = points.reshape(1, -1)
    if points.ndim != 2 or points.shape[1] != n:
        raise ProblemError(f"points must have shape (S, {n}) (one column per variable), got "
                           f"{tuple(points.shape)}")
    return points


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


def evaluate_points(problem, points, parameters=None) -> Evaluation:
    pvec = problem.parameter_vector(parameters)
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a dependency
        torch = None
    if torch is not None and isinstance(points, torch.Tensor):
        pts = _as_points(points, problem.n, torch)
        dtype = pts.dtype if pts.is_floating_point() else torch.float64
        ns = problem.lowering.functions("torch")
        P = torch.as_tensor(pvec, dtype=dtype, device=pts.device).reshape(-1, 1)
        tol = torch.tensor(problem.eq_tol, dtype=dtype, device=pts.device)
        f, V = ns["report"](pts.T.contiguous(), P, tol)
        V = V.T
        return Evaluation(f, V, (V == 0).all(dim=1))
    try:
        arr = np.asarray(points, dtype=np.float64)
    except (TypeError, ValueError):
        raise ProblemError(f"points must be numbers, an array of shape (S, {problem.n}) or "
                           f"({problem.n},), got {_short(points)} of type "
                           f"{type(points).__name__}") from None
    pts = _as_points(arr, problem.n, np)
    f, V = report_numpy(problem, np.ascontiguousarray(pts.T), pvec)
    V = np.ascontiguousarray(V.T)
    return Evaluation(f, V, (V == 0).all(axis=1))
