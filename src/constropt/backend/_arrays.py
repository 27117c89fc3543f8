"""The array namespace the engine is written against, and the few pieces that differ.

The operators and the driver take their namespace from the arrays they are given
(:func:`namespace`, array-api-compat's ``array_namespace``): NumPy arrays in, NumPy
arrays out; torch tensors in (CPU or CUDA, eager or compiled), torch tensors out.  One
code path, two backends.  What the array API does not cover lives here and nowhere else:

- random numbers (:class:`Random`: a ``torch.Generator`` or a NumPy ``Generator``
  behind the same few draws);
- gathering along the last axis with broadcast indices (:func:`take`), scattering rows
  (:func:`put_rows`), the lower median (:func:`median_low`);
- host transfers (:func:`to_numpy`), the autograd mode (:func:`inference`), and whether
  ``torch.compile`` is tracing (:func:`compiling`).

This module imports torch only when it is handed a torch tensor or asked for the torch
backend: a small problem searched on NumPy never loads it.
"""

from __future__ import annotations

import sys

import array_api_compat.numpy as _compat_np
import numpy as np

__all__ = ["namespace", "is_torch", "take", "clip_max", "put_rows", "median_low", "to_numpy",
           "inference", "compiling", "sym_max", "Random", "asarray", "ARRAY_KINDS"]

#: Names of the engine's backends.
ARRAY_KINDS = ("numpy", "torch")


def _clip(x, /, min=None, max=None):
    if min is not None:
        x = np.maximum(x, min)
    return x if max is None else np.minimum(x, max)


class _NumPy:
    """array-api-compat's NumPy namespace with its hottest functions bound straight to
    NumPy: a small population's generation is a few hundred calls of microseconds
    each, so a wrapper's argument checks would cost more than the arithmetic."""

    clip = staticmethod(_clip)
    concat = staticmethod(lambda arrays, /, axis=0: np.concatenate(arrays, axis=axis))
    take = staticmethod(lambda x, indices, /, axis=None: np.take(x, indices, axis=axis))
    astype = staticmethod(lambda x, dtype, /, copy=True: x.astype(dtype, copy=copy))
    # reductions as ufunc reduces / array methods: the same kernels as np.sum, np.min...
    # without their dispatch wrappers (the results are bit-identical)
    sum = staticmethod(lambda x, /, axis=None, keepdims=False: np.add.reduce(
        x, axis=axis, keepdims=keepdims))
    min = staticmethod(lambda x, /, axis=None, keepdims=False: np.asarray(x).min(
        axis=axis, keepdims=keepdims))
    max = staticmethod(lambda x, /, axis=None, keepdims=False: np.asarray(x).max(
        axis=axis, keepdims=keepdims))
    argmin = staticmethod(lambda x, /, axis=None, keepdims=False: np.asarray(x).argmin(
        axis=axis, keepdims=keepdims))
    all = staticmethod(lambda x, /, axis=None, keepdims=False: np.asarray(x).all(
        axis=axis, keepdims=keepdims))
    argsort = staticmethod(lambda x, /, axis=-1, stable=True: np.argsort(
        x, axis=axis, kind="stable" if stable else None))
    where, minimum, maximum = (staticmethod(f) for f in (np.where, np.minimum, np.maximum))
    zeros_like = staticmethod(lambda x, /, dtype=None, device=None: np.zeros_like(x, dtype))
    ones_like = staticmethod(lambda x, /, dtype=None, device=None: np.ones_like(x, dtype))
    full_like = staticmethod(lambda x, /, fill_value, dtype=None, device=None: np.full_like(
        x, fill_value, dtype))
    arange = staticmethod(lambda start, /, stop=None, step=1, dtype=None, device=None:
                          np.arange(start, stop, step, dtype=dtype))

    def __init__(self):
        self.__name__ = _compat_np.__name__

    def __getattr__(self, name):  # everything else: array-api-compat's, cached
        value = getattr(_compat_np, name)
        setattr(self, name, value)
        return value


_NP = _NumPy()


_TORCH: list = []  # array-api-compat's torch namespace, once imported


def namespace(*arrays):
    """The array-API namespace of ``arrays``: array-api-compat's wrapper of torch, or of
    NumPy with its hottest functions bound straight to NumPy.  Decided by the first
    array's type alone (no cached lookup: ``torch.compile`` traces this call)."""
    x = arrays[0]
    if isinstance(x, (np.ndarray, np.generic)):
        return _NP
    if not _TORCH:
        if not is_torch(x):
            raise TypeError(f"the engine takes NumPy arrays or torch tensors, got "
                            f"{type(x).__name__}")
        import array_api_compat.torch as xp_torch

        _TORCH.append(xp_torch)
    return _TORCH[0]


def is_torch(x) -> bool:
    """Whether ``x`` is a torch tensor (without importing torch).  Not array-api-compat's
    ``is_torch_array``: compiled steps call this, and Dynamo warns on its
    ``lru_cache``."""
    if isinstance(x, (np.ndarray, np.generic)):
        return False
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(x, torch.Tensor)


def take(a, idx):
    """``a[..., idx]`` along the last axis, per instance: ``a`` (..., B?, S), ``idx``
    (B?, K); works unbatched (``idx`` (K,)) and batched alike."""
    if isinstance(a, np.ndarray):
        if idx.ndim == 1:  # ndarray.take: a few times cheaper than fancy indexing
            return a.take(idx, axis=-1)
        if idx.shape[0] == 1:  # one instance: a plain gather along the last axis
            return a.take(idx[0], axis=-1)
        return a[..., np.arange(idx.shape[0])[:, None], idx]  # cheaper than take_along_axis
    return a.gather(-1, idx.expand(tuple(a.shape[:a.ndim - idx.ndim]) + tuple(idx.shape)))


def clip_max(a, hi):
    """``min(a, hi)`` elementwise for a Python number ``hi`` (``torch.clamp``; for NumPy
    ``np.minimum``, without ``ndarray.clip``'s argument checks)."""
    if isinstance(a, np.ndarray):
        return np.minimum(a, hi)
    return a.clamp(max=hi)


def put_rows(a, axis: int, rows, b):
    """``a`` (not modified) with the entries ``rows`` along ``axis`` replaced by ``b``."""
    if is_torch(a):
        return a.index_copy(axis, rows, b)
    out = a.copy()
    out[(slice(None),) * axis + (rows,)] = b
    return out


def median_low(x):
    """The lower median along the last axis (torch's ``median``: no averaging)."""
    if is_torch(x):
        return x.median(dim=-1).values
    return np.sort(x, axis=-1)[..., (x.shape[-1] - 1) // 2]


def to_numpy(x) -> np.ndarray:
    """A host NumPy array of ``x`` (a copy for device tensors; NumPy arrays as they are)."""
    if is_torch(x):
        return x.detach().cpu().numpy()
    return np.asarray(x)


def asarray(x, like, dtype=None):
    """``x`` as an array of ``like``'s backend and device (``dtype`` or ``x``'s own)."""
    if is_torch(like):
        import torch

        return torch.as_tensor(x, dtype=dtype, device=like.device)
    return np.asarray(x, dtype=dtype)


def inference(backend: str):
    """The mode a search runs in: ``torch.inference_mode()`` for torch; for NumPy,
    floating-point warnings off (overflow, NaN and infinities are values the engine
    ranks, as torch computes them silently)."""
    if backend == "torch":
        import torch

        return torch.inference_mode()
    return np.errstate(all="ignore")


def compiling() -> bool:
    """Whether ``torch.compile`` is tracing the caller (False when torch is not loaded)."""
    torch = sys.modules.get("torch")
    return torch is not None and torch.compiler.is_compiling()


def sym_max(a, b):
    """``max`` that stays symbolic in a compiled step's dynamic sizes."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.compiler.is_compiling():
        return torch.sym_max(a, b)
    return max(a, b)


class Random:
    """Seeded random numbers for either backend.

    Parameters
    ----------
    backend : str
        ``"numpy"`` (``numpy.random.Generator`` on PCG64) or ``"torch"``
        (``torch.Generator`` on ``device``).
    seed : int
        In ``[0, 2**64)``.
    device : torch.device, optional
        Where torch draws are made.

    The draws keep each backend's own stream: the same seed gives the same numbers on the
    same backend, not across backends.  ``dtype=None`` is the backend's default float
    (float32 for torch, float64 for NumPy).
    """

    def __init__(self, backend: str, seed: int, device=None):
        self.backend, self.device = backend, device
        if backend == "torch":
            import torch

            self.gen = torch.Generator(device=device)
            self.gen.manual_seed(seed)
        else:
            self.gen = np.random.Generator(np.random.PCG64(seed))

    @property
    def torch(self) -> bool:
        return self.backend == "torch"

    def seed(self, seed: int) -> None:
        """Restart the stream from ``seed``."""
        if self.torch:
            self.gen.manual_seed(seed)
        else:
            self.gen = np.random.Generator(np.random.PCG64(seed))

    def get_state(self):
        """The generator's state (a uint8 tensor for torch, a dict for NumPy)."""
        return self.gen.get_state() if self.torch else self.gen.bit_generator.state

    def set_state(self, state) -> None:
        if self.torch:
            self.gen.set_state(state)
        else:
            self.gen.bit_generator.state = state

    def uniform(self, shape, dtype=None):
        """Uniform numbers in [0, 1)."""
        if self.torch:
            import torch

            return torch.rand(shape, generator=self.gen, device=self.device, dtype=dtype)
        return self.gen.random(shape, dtype=dtype or np.float64)

    def normal(self, shape, dtype=None):
        """Standard normal numbers."""
        if self.torch:
            import torch

            return torch.randn(shape, generator=self.gen, device=self.device, dtype=dtype)
        return self.gen.standard_normal(shape, dtype=dtype or np.float64)

    def integers(self, high: int, shape, dtype=None):
        """Integers in ``[0, high)`` (int64 unless ``dtype``)."""
        if self.torch:
            import torch

            kw = {} if dtype is None else {"dtype": dtype}
            return torch.randint(0, high, shape, generator=self.gen, device=self.device, **kw)
        return self.gen.integers(0, high, shape, dtype=dtype or np.int64)

    def bits(self, shape, wide: bool):
        """Random non-negative integers: 31 random bits in int32, or (``wide``) 63 bits
        in int64."""
        if self.torch:
            import torch

            dt = torch.int64 if wide else torch.int32
            return torch.empty(shape, dtype=dt, device=self.device).random_(generator=self.gen)
        if wide:
            return self.gen.integers(0, 2**63 - 1, shape, dtype=np.int64, endpoint=True)
        return self.gen.integers(0, 2**31 - 1, shape, dtype=np.int32, endpoint=True)

    def permutation(self, n: int):
        """A random permutation of ``range(n)`` (int64)."""
        if self.torch:
            import torch

            return torch.randperm(n, generator=self.gen, device=self.device)
        return self.gen.permutation(n)
