"""``solve_batch`` across ranks: under ``torchrun`` the instances are split among the
processes and the results gathered in instance order.

Each rank solves a contiguous share of the instances ordered by parameter proximity
(so the local solves' warm starts along the sweep stay within a rank), with the same
options and seed, by the one-process :func:`constropt.solver._batch.solve_batch`; the
Results travel through the islands' process group (:mod:`._group`: gloo on CPU, NCCL on
GPUs) and every rank returns the whole :class:`BatchResult`.
"""

from __future__ import annotations

import copy
import functools
import os
import time
from typing import Any

import numpy as np

from .._errors import OptionError
from ..solver._batch import BatchResult, _param_matrix
from ..solver._batch import solve_batch as _solve_one
from ..solver._localfirst import order_of
from ._group import _init_group, _island_device

__all__ = ["solve_batch", "shards"]


def shards(M: np.ndarray, world: int) -> list:
    """Each rank's instances: contiguous shares of the instances ordered by parameter
    proximity, sizes differing by at most one."""
    return [np.asarray(c, dtype=np.int64) for c in np.array_split(order_of(M), world)]


def _launched() -> bool:
    """Whether this process is one of several ranks (torchrun's environment, or an
    initialized default group of more than one process)."""
    if int(os.environ.get("WORLD_SIZE", "1") or 1) > 1 and "RANK" in os.environ:
        return True
    try:
        import torch.distributed as dist
    except ImportError:  # pragma: no cover - torch is a dependency
        return False
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def _without_problem(res):
    """A shallow copy of a Result without its problem (each rank has its own; the
    receiver attaches it), made without re-running the Result's validation."""
    out = copy.copy(res)
    object.__setattr__(out, "problem", None)
    return out


_GROUPS: dict = {}  # (device, timeout) -> the _Group batches reuse (a new one: a rendezvous)


def _group(dev, timeout: float):
    key = (str(dev), timeout)
    grp = _GROUPS.get(key)
    if grp is None:
        grp = _GROUPS[key] = _init_group(None, dev, timeout)
    return grp


def _drop_group() -> None:
    for grp in _GROUPS.values():
        grp.close()
    _GROUPS.clear()


@functools.wraps(_solve_one)
def solve_batch(problem, parameters, *, shard: Any = "auto", timeout: float = 1800.0,
                **kwargs) -> BatchResult:
    if shard not in ("auto", True, False):
        raise OptionError(f"shard must be 'auto', True or False, got {shard!r}")
    if shard is False or not _launched():
        if shard is True:
            raise OptionError("shard=True needs several ranks (launch with torchrun)")
        return _solve_one(problem, parameters, **kwargs)
    t_start = time.perf_counter()
    M, _ = _param_matrix(problem, parameters)  # bad input is named on every rank
    grp = _group(_island_device(kwargs.get("device", "auto")), float(timeout))
    part = shards(M, grp.world)[grp.rank]
    mine = None
    try:
        if part.size:
            syms = list(problem.layout.parameters)
            mine = _solve_one(problem, {s: M[k, part] for k, s in enumerate(syms)}, **kwargs)
            mine = (part, [_without_problem(r) for r in mine.results], mine.timings)
    except BaseException:
        _drop_group()  # the peers then fail at once instead of waiting for the timeout
        raise
    got = grp.all_gather_object("gathering the batch's results", mine)
    results: list = [None] * M.shape[1]
    parts: dict = {}
    for item in got:
        if item is None:
            continue
        idx, res, tim = item
        for b, r in zip(idx, res):
            if r.problem is None:  # received (this rank's own are copies too)
                object.__setattr__(r, "problem", problem)
            results[int(b)] = r
        for k, v in tim.items():  # the slowest rank's part: the ranks run side by side
            parts[k] = max(parts.get(k, 0.0), v)
    parts["total"] = time.perf_counter() - t_start
    pdict = {s: M[k].copy() for k, s in enumerate(problem.layout.parameters)}
    return BatchResult(
        results=tuple(results), x=np.stack([r.x_array for r in results]),
        fun=np.array([r.fun for r in results]),
        feasible=np.array([r.feasible for r in results]),
        success=np.array([r.success for r in results]), parameters=pdict, timings=parts)


solve_batch.__doc__ = (_solve_one.__doc__ or "") + """
    Under ``torchrun`` (several ranks), every rank makes the same call: the instances
    are split among the ranks (``shard="auto"``; False solves every instance on every
    rank) and every rank returns the whole BatchResult, in instance order.  ``timeout``
    (seconds) bounds the wait for the other ranks.
"""
