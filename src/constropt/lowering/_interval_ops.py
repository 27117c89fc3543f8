"""The two array backends of the interval runtime: NumPy and torch, one set of names.

The inclusion functions (:mod:`._rt_interval`, :mod:`._rt_interval_logic`) and the
interval program (:mod:`._interval`) are written once against the namespace
:func:`ops` returns for their operands: NumPy (float64 boxes at ``Problem``
construction: bound propagation on one box, without importing torch) or torch (the
vectorized branch-and-bound of ``certify=`` on CPU or CUDA).  The namespace holds the
native functions themselves (``numpy.where`` / ``torch.where``, ``numpy.nextafter`` /
``torch.nextafter``), so dispatch costs one type check per inclusion function and
nothing per element.  The functions of the function table are its rows' array
functions, unguarded (the inclusion functions clamp their arguments into the domain
first); the few spellings that differ between the libraries (``clamp``, ``expand``,
``select``, dtype limits, device placement) are defined here.

NumPy is not asked for the array API's ``nextafter``/``clip`` through
``array_api_compat``: its torch wrapper adds Python-level type promotion to every call,
which the branch-and-bound makes millions of.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np

from . import _rt_numpy
from ._functions import NODE_FUNCTIONS

__all__ = ["ops", "is_torch", "NP"]

inf = math.inf


def is_torch(x) -> bool:
    """Whether ``x`` is a torch tensor (checked without importing torch)."""
    return type(x).__module__.startswith("torch")


def _np_clamp(x, min=None, max=None):  # noqa: A002 - torch's keyword names
    if min is not None:
        x = np.maximum(x, min)
    if max is not None:
        x = np.minimum(x, max)
    return x


def _np_false(like):
    return np.zeros(np.shape(like), dtype=bool)


def _np_asarray(v, like, dtype=None):
    return np.asarray(v, dtype=like.dtype if dtype is None else dtype)


_NP_DT = {"f64": np.float64, "bool": np.bool_}


def _table(raw_of) -> dict:
    """The array function of every row of the function table, by the row's name."""
    return {f.name: raw_of(f) for f in NODE_FUNCTIONS if f.numpy is not None}


NP = SimpleNamespace(**{**_table(lambda f: f.numpy), **dict(
    name="numpy",
    where=np.where, minimum=np.minimum, maximum=np.maximum, isnan=np.isnan,
    isfinite=np.isfinite,
    clamp=_np_clamp,
    down=lambda x: np.nextafter(x, np.asarray(-inf, dtype=np.result_type(x))),
    up=lambda x: np.nextafter(x, np.asarray(inf, dtype=np.result_type(x))),
    full_like=lambda x, v: np.full(np.shape(x), v, dtype=np.result_type(x)),
    false_like=_np_false,
    bool_scalar=lambda v, like: np.asarray(bool(v)),
    finfo=lambda x: np.finfo(np.result_type(x)),
    asarray=_np_asarray,
    f64=lambda v, like: np.asarray(v, dtype=np.float64),
    is_f64=lambda x: np.result_type(x) == np.float64,
    broadcast_shapes=np.broadcast_shapes,
    expand=np.broadcast_to,
    select=lambda t, axis, k: np.take(t, k, axis=axis),
    copy=lambda t: np.array(t, copy=True),
    cat=lambda ts, axis: np.concatenate(ts, axis),
    stack=lambda ts: np.stack(ts),
    zeros_bool=lambda shape, like: np.zeros(shape, dtype=bool),
    index=_rt_numpy.index, lift=_rt_numpy.lift, grid=_rt_numpy.grid,
)})

_TORCH = None


def _torch_ops():
    global _TORCH
    if _TORCH is None:
        import torch

        from . import _rt_torch

        rows = _table(lambda f: f.torch(torch) if callable(f.torch)
                      else getattr(torch, f.torch or f.name))
        _TORCH = SimpleNamespace(**{**rows, **dict(
            name="torch",
            where=torch.where, minimum=torch.minimum, maximum=torch.maximum,
            isnan=torch.isnan, isfinite=torch.isfinite, clamp=torch.clamp,
            down=lambda x: torch.nextafter(x, torch.full_like(x, -inf)),
            up=lambda x: torch.nextafter(x, torch.full_like(x, inf)),
            full_like=torch.full_like,
            false_like=lambda like: torch.zeros(like.shape, dtype=torch.bool,
                                                device=like.device),
            bool_scalar=lambda v, like: torch.full((), bool(v), dtype=torch.bool,
                                                   device=like.device),
            finfo=lambda x: torch.finfo(x.dtype),
            asarray=lambda v, like, dtype=None: torch.as_tensor(
                v, dtype=like.dtype if dtype is None else dtype, device=like.device),
            f64=lambda v, like: torch.as_tensor(v, dtype=torch.float64, device=like.device),
            is_f64=lambda x: x.dtype == torch.float64,
            broadcast_shapes=torch.broadcast_shapes,
            expand=lambda t, shape: t.expand(shape),
            select=lambda t, axis, k: t.select(axis, k),
            copy=lambda t: t.clone(),
            cat=lambda ts, axis: torch.cat(ts, axis),
            stack=lambda ts: torch.stack(ts),
            zeros_bool=lambda shape, like: torch.zeros(shape, dtype=torch.bool,
                                                       device=like.device),
            index=_rt_torch.index, lift=_rt_torch.lift, grid=_rt_torch.grid,
        )})
    return _TORCH


def ops(x):
    """The backend namespace for the array ``x`` (torch tensor: torch, else NumPy)."""
    return _torch_ops() if is_torch(x) else NP
