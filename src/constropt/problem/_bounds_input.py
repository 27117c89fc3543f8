"""``bounds=`` as users write it: a dict, ``(lo, hi)`` pairs in variable order, or a
``scipy.optimize.Bounds``, read into the dict :func:`._bounds.make_bounds` checks."""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import numpy as np
import sympy as sp

from .._errors import ProblemError

__all__ = ["BoundsLike", "bounds_dict"]


class LbUb(Protocol):
    """What a ``scipy.optimize.Bounds`` offers (named without importing scipy)."""

    lb: Any
    ub: Any


#: What ``bounds=`` accepts: ``{symbol: (lo, hi)}``, a sequence of ``(lo, hi)`` pairs in
#: variable order, or a ``scipy.optimize.Bounds`` (see :func:`bounds_dict`).
BoundsLike = Mapping[Any, Sequence[Any]] | Sequence[Sequence[Any]] | LbUb | None

def _is_scipy_bounds(obj) -> bool:
    """Whether ``obj`` is a ``scipy.optimize.Bounds`` (without importing scipy: such an
    object exists only once its module was imported)."""
    mod = sys.modules.get("scipy.optimize")
    return mod is not None and isinstance(obj, mod.Bounds)


def _side(value, what: str):
    """A bound side as given: None, a sympy expression, or a float (NaN refused)."""
    if value is None or isinstance(value, sp.Basic):
        return value
    try:
        fv = float(value)
    except (TypeError, ValueError):
        raise ProblemError(f"{what} is not a number: {value!r}") from None
    if math.isnan(fv):
        raise ProblemError(f"{what} is NaN")
    return fv


def bounds_dict(bounds, variables) -> dict | None:
    """``bounds=`` in any accepted form as the dict ``{symbol: (lo, hi)}``.

    Forms: None; a dict or other mapping (checked later by :func:`make_bounds`); a
    sequence of ``(lo, hi)`` pairs, one per variable in the order of ``variables``
    (``Problem.variables``: ``variables=`` when given, else natural name order; a vector
    variable takes one pair for all its elements), ``None`` or an infinity for an open
    side; a ``scipy.optimize.Bounds`` whose ``lb`` and ``ub`` (scalars or one value per
    variable, ``-inf``/``inf`` open) are read the same way (``keep_feasible`` is
    ignored: the search never leaves the box anyway).
    """
    if bounds is None or isinstance(bounds, dict):
        return bounds
    if isinstance(bounds, Mapping):  # Problem.bounds (read-only) and other mappings
        return dict(bounds)
    names = ", ".join(map(str, variables))
    nv = len(variables)
    if _is_scipy_bounds(bounds):
        lb, ub = (np.asarray(getattr(bounds, k), dtype=np.float64) for k in ("lb", "ub"))
        for k, arr in (("lb", lb), ("ub", ub)):
            if arr.ndim > 1 or arr.size not in (1, nv):  # scipy keeps a scalar as (1,)
                raise ProblemError(
                    f"bounds: scipy.optimize.Bounds {k} has shape {arr.shape}, but the "
                    f"problem has {nv} variable{'s' if nv != 1 else ''} ({names}); give one "
                    f"value per variable, in this order, or a scalar")
        pairs = list(zip(np.broadcast_to(lb, (nv,)).tolist(),
                         np.broadcast_to(ub, (nv,)).tolist()))
        where = "bounds (scipy.optimize.Bounds)"
    elif isinstance(bounds, (str, bytes)) or not hasattr(bounds, "__iter__"):
        raise ProblemError(f"bounds must be a dict {{symbol: (lo, hi)}}, a sequence of "
                           f"(lo, hi) pairs in the order of the variables ({names}) or a "
                           f"scipy.optimize.Bounds, got {bounds!r}")
    else:
        pairs = list(bounds)
        where = "bounds"
        if len(pairs) != nv:
            hint = "; for one variable write [(lo, hi)]" if nv == 1 and len(pairs) == 2 \
                else ""
            raise ProblemError(f"bounds has {len(pairs)} pair{'s' if len(pairs) != 1 else ''}"
                               f" but the problem has {nv} variable{'s' if nv != 1 else ''} "
                               f"({names}): one (lo, hi) per variable, in this order{hint}")
    out = {}
    for i, (v, pair) in enumerate(zip(variables, pairs)):
        if isinstance(pair, (str, bytes, dict, sp.Basic)) or not hasattr(pair, "__len__") \
                or len(pair) != 2:
            raise ProblemError(f"{where}[{i}] (for {v}) must be a pair (lo, hi), got "
                               f"{pair!r}")
        lo = _side(pair[0], f"{where}[{i}] lower bound of {v}")
        hi = _side(pair[1], f"{where}[{i}] upper bound of {v}")
        if isinstance(lo, float) and isinstance(hi, float) and lo > hi:
            raise ProblemError(f"{where}[{i}]: lower bound of {v} ({lo:g}) is above its "
                               f"upper bound ({hi:g})")
        out[v] = (lo, hi)
    return out
