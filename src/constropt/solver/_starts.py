"""Starting points (``x0``): a dict, a point or a list of either, or an array, checked
against the problem and put in its box before the search puts them into its initial
population."""

from __future__ import annotations

import logging
from collections.abc import Mapping

import numpy as np

from .._errors import OptionError

__all__ = ["starts_of"]

logger = logging.getLogger("constropt")


def _dict_point(problem, point: Mapping, k: int) -> np.ndarray:
    """One starting point ``{variable: value}`` (symbols or their names as keys) as genes."""
    by_name = {str(b.symbol): b for b in problem.layout.blocks}
    blocks = {b.symbol: b for b in problem.layout.blocks}
    x = np.empty(problem.n)
    seen = set()
    for key, value in point.items():
        b = blocks.get(key) or (by_name.get(key) if isinstance(key, str) else None)
        if b is None:
            raise OptionError(f"x0[{k}] gives a value for {key!r}, which is not a variable of "
                              f"the problem (variables: {list(problem.variables)})")
        try:
            vals = np.asarray(value, dtype=np.float64).reshape(-1)
        except (TypeError, ValueError):
            raise OptionError(f"x0[{k}] value of {b.symbol} is not a number: {value!r}") \
                from None
        if vals.size != b.size:
            raise OptionError(f"x0[{k}] value of {b.symbol} has {vals.size} entries; the "
                              f"variable has {b.size}")
        x[b.offset:b.offset + b.size] = vals
        seen.add(b.symbol)
    missing = [str(b.symbol) for b in problem.layout.blocks if b.symbol not in seen]
    if missing:
        raise OptionError(f"x0[{k}] has no value for {', '.join(missing)}: a starting point "
                          "gives every variable")
    return x


def starts_of(problem, x0, pop_size: int) -> np.ndarray | None:
    """The starting points ``x0`` as an array (k, n) in the problem's box: a dict, a
    point of ``n`` values (``x_array`` order), a list of either, or an array (k, n);
    integer genes rounded, then every point clipped to the box.  None without ``x0``."""
    if x0 is None:
        return None
    n = problem.n
    if isinstance(x0, Mapping):
        X = _dict_point(problem, x0, 0)[None]
    elif all(isinstance(p, Mapping) for p in x0):
        X = np.stack([_dict_point(problem, p, k) for k, p in enumerate(x0)])
    else:
        try:
            X = np.array(x0, dtype=np.float64)
        except (TypeError, ValueError):
            raise OptionError(f"x0 must be a dict, a sequence of {n} numbers or an array "
                              f"of shape (k, {n}), got {x0!r}") from None
        if X.ndim == 1:
            X = X[None]
        if X.ndim != 2 or X.shape[1] != n:
            raise OptionError(f"x0 has shape {np.shape(x0)}; expected ({n},) or (k, {n}): "
                              f"{n} values per point in the order of x_array "
                              f"({', '.join(map(str, problem.variables))})")
    bad = np.argwhere(~np.isfinite(X))
    if bad.size:
        k, j = bad[0]
        raise OptionError(f"x0[{k}] has a non-finite value ({X[k, j]}) at gene {j}")
    if X.shape[0] > pop_size:
        raise OptionError(f"x0 has {X.shape[0]} starting points, more than the population "
                          f"of {pop_size} (pop_size)")
    integer = problem.integer
    X[:, integer] = np.round(X[:, integer])
    clipped = np.clip(X, problem.lower, problem.upper)
    moved = int(np.any(clipped != X, axis=1).sum())
    if moved:
        logger.info("x0: %d of %d starting points clipped to the search box", moved,
                    X.shape[0])
    return clipped
