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
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._errors import OptionError
from ..backend._bulk import bulk
from ..solver._batch import BatchResult, _param_matrix
from ..solver._batch import solve_batch as _solve_one
from ..solver._localfirst import order_of
from ._columns import field_array, pack, unpack
from ._group import _init_group, _island_device

__all__ = ["solve_batch", "shards", "ShardedResults"]


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
            with bulk():
                mine = (part, pack(own.results), dict(own.timings))
    except BaseException:
        _drop_group()  # the peers then fail at once instead of waiting for the timeout
        raise
    got = grp.all_gather_object("gathering the batch's results", mine)
    return _assemble(problem, M, got, grp.rank, own, t_start, t_solved)


class ShardedResults(Sequence):
    """The Results of a sharded batch in instance order: this rank's own, and each other
    rank's rebuilt from its columns (:func:`._columns.unpack`, the caller's problem
    attached) the first time one of them is read, all of that rank's at once.  A caller
    who reads only the BatchResult's arrays (``x``, ``fun``, ``feasible``, ``success``,
    which come straight from the columns) never pays for building them.  It compares
    equal to the tuple of its Results, and pickles as that tuple."""

    __slots__ = ("_items", "_owner", "_parts", "_problem")

    def __init__(self, B: int, problem) -> None:
        self._items: list = [None] * B
        self._owner = np.full(B, -1, dtype=np.int64)  # the part still to rebuild, or -1
        self._parts: list = []
        self._problem = problem

    def _place(self, idx, results) -> None:
        for b, res in zip(idx.tolist(), results):
            self._items[b] = res

    def _defer(self, idx, packed) -> None:
        self._owner[idx] = len(self._parts)
        self._parts.append((idx, packed))

    def _fill(self, part: int) -> None:
        idx, packed = self._parts[part]
        with bulk():
            self._place(idx, unpack(packed, problem=self._problem))
        self._owner[idx] = -1
        self._parts[part] = None

    def _all(self) -> list:
        for part, item in enumerate(self._parts):
            if item is not None:
                self._fill(part)
        return self._items

    def __len__(self) -> int:
        return len(self._items)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return tuple(self._all()[i])
        item = self._items[i]  # an int: IndexError and negative indices as a list's
        if item is None:
            self._fill(int(self._owner[i]))
            item = self._items[i]
        return item

    def __iter__(self):
        return iter(self._all())

    def __eq__(self, other) -> bool:
        if isinstance(other, (tuple, ShardedResults)):
            return tuple(self) == tuple(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # like the BatchResult that holds it

    def __repr__(self) -> str:
        return repr(tuple(self))

    def __reduce__(self):
        return (tuple, (tuple(self),))


def _assemble(problem, M, got, rank, own, t_start, t_solved) -> BatchResult:
    """The whole BatchResult from every rank's ``(instances, packed Results, timings)``
    (None for a rank without instances): this rank's own Results, the others' as
    columns (:class:`ShardedResults`), every one with the caller's ``problem``; the
    arrays from this rank's BatchResult and the others' columns.  ``timings``: each
    part the slowest rank's (the ranks run side by side), ``shard`` the slowest rank's
    own solve, ``gather`` this rank's time from the end of its solve (packing, waiting
    for the others, the all-gather, this assembly), ``total`` this rank's wall time."""
    B = M.shape[1]
    results = ShardedResults(B, problem)
    x = np.full((B, problem.n), np.nan)
    fun = np.full(B, np.nan)
    feasible, success = np.zeros(B, dtype=bool), np.zeros(B, dtype=bool)
    parts: dict = {}
    slowest = 0.0
    for r, item in enumerate(got):
        if item is None:
            continue
        idx, cols, tim = item
        if r == rank:
            for res_b in own.results:  # solved on its share's box
                if res_b.problem is not problem:
                    object.__setattr__(res_b, "problem", problem)
            results._place(idx, own.results)
            x[idx], fun[idx], feasible[idx], success[idx] = (own.x, own.fun, own.feasible,
                                                             own.success)
        else:
            results._defer(idx, cols)
            x[idx] = field_array(cols, "x_array").reshape(len(idx), -1)
            fun[idx] = field_array(cols, "fun")
            feasible[idx], success[idx] = (field_array(cols, "feasible"),
                                           field_array(cols, "success"))
        for k, v in tim.items():
            parts[k] = max(parts.get(k, 0.0), v)
        slowest = max(slowest, tim["total"])
    end = time.perf_counter()
    parts.update(shard=slowest, gather=end - t_solved, total=end - t_start)
    pdict = {s: M[k].copy() for k, s in enumerate(problem.layout.parameters)}
    return BatchResult(results=results, x=x, fun=fun, feasible=feasible, success=success,
                       parameters=pdict, timings=parts)


solve_batch.__doc__ = (_solve_one.__doc__ or "") + """
    Under ``torchrun`` (several ranks), every rank makes the same call: the instances
    are split among the ranks (``shard="auto"``; False solves every instance on every
    rank); every rank returns the whole BatchResult, in instance order, with two more
    timings: ``shard`` (the slowest rank's own solve of its share) and ``gather`` (this
    rank's packing, its wait for the others, the one all-gather of the results and their
    assembly).
    ``timeout`` (seconds) bounds the wait for the other ranks.
"""
