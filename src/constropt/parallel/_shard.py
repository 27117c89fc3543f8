"""``solve_batch`` across ranks: under ``torchrun`` the instances are split among the
processes and the results gathered in instance order.

Each rank solves an interleaved share of the instances ordered by parameter proximity
(every ``world``-th: a coarser sweep of its own, so the local solves' warm starts along
it stay within a rank, and the ranks' shares cost alike), with the same
options and seed, by the one-process :func:`constropt.solver._batch.solve_batch`; then
one all-gather through the islands' process group (:mod:`._group`: gloo on CPU, NCCL on
GPUs) sends each rank's Results as columns (:mod:`._columns`), and every rank returns
the whole :class:`BatchResult`.  Nothing but the parameter matrix is computed for every
instance on every rank.
"""

from __future__ import annotations

import functools
import os
import time
from typing import Any

import numpy as np

from .._errors import OptionError
from ..solver._batch import BatchResult, _param_matrix, stacked_x
from ..solver._batch import solve_batch as _solve_one
from ..solver._localfirst import order_of
from ._columns import pack, unpack
from ._group import _init_group, _island_device

__all__ = ["solve_batch", "shards"]


def shards(M: np.ndarray, world: int) -> list:
    """Each rank's instances: every ``world``-th of the instances ordered by parameter
    proximity (rank ``k`` from the ``k``-th on), sizes differing by at most one.  Each
    share is a sweep of its own, twice as coarse for two ranks, over the whole range of
    the parameters: the ranks get the same mix of easy and costly instances (the exact
    check repairs more points at one end of a sweep than at the other), so neither waits
    for the other in the exchange."""
    order = order_of(M)
    return [np.asarray(order[k::world], dtype=np.int64) for k in range(world)]


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
    own = mine = None
    t_solved = time.perf_counter()
    try:
        if part.size:
            syms = list(problem.layout.parameters)
            own = _solve_one(problem, {s: M[k, part] for k, s in enumerate(syms)}, **kwargs)
            t_solved = time.perf_counter()
            mine = (part, pack(own.results), dict(own.timings))
    except BaseException:
        _drop_group()  # the peers then fail at once instead of waiting for the timeout
        raise
    got = grp.all_gather_object("gathering the batch's results", mine)
    return _assemble(problem, M, got, grp.rank, own, t_start, t_solved)


def _assemble(problem, M, got, rank, own, t_start, t_solved) -> BatchResult:
    """The whole BatchResult from every rank's ``(instances, packed Results, timings)``
    (None for a rank without instances): this rank's own Results, the others' rebuilt;
    every one with the caller's ``problem``.  ``timings``: each part the slowest
    rank's (the ranks run side by side), ``shard`` the slowest rank's own solve,
    ``gather`` this rank's time from the end of its solve (packing, waiting for the
    others, the all-gather, this assembly), ``total`` this rank's wall time."""
    results: list = [None] * M.shape[1]
    parts: dict = {}
    slowest = 0.0
    for r, item in enumerate(got):
        if item is None:
            continue
        idx, cols, tim = item
        res = own.results if r == rank else unpack(cols, problem=problem)
        for b, res_b in zip(idx.tolist(), res):
            if res_b.problem is not problem:  # this rank's own: solved on its share's box
                object.__setattr__(res_b, "problem", problem)
            results[b] = res_b
        for k, v in tim.items():
            parts[k] = max(parts.get(k, 0.0), v)
        slowest = max(slowest, tim["total"])
    end = time.perf_counter()
    parts.update(shard=slowest, gather=end - t_solved, total=end - t_start)
    pdict = {s: M[k].copy() for k, s in enumerate(problem.layout.parameters)}
    return BatchResult(
        results=tuple(results), x=stacked_x(results),
        fun=np.array([r.fun for r in results]),
        feasible=np.array([r.feasible for r in results]),
        success=np.array([r.success for r in results]), parameters=pdict, timings=parts)


solve_batch.__doc__ = (_solve_one.__doc__ or "") + """
    Under ``torchrun`` (several ranks), every rank makes the same call: the instances
    are split among the ranks (``shard="auto"``; False solves every instance on every
    rank); every rank returns the whole BatchResult, in instance order, with two more
    timings: ``shard`` (the slowest rank's own solve of its share) and ``gather`` (this
    rank's packing, its wait for the others, the one all-gather of the results and their
    assembly).
    ``timeout`` (seconds) bounds the wait for the other ranks.
"""
