"""Device and dtype resolution, and the process-wide cache of compiled functions.

Compiled functions are cached by generated source text, so every problem with the same
structure (the same expressions up to parameter values) shares one compiled kernel
across solves, seeds, population sizes (``dynamic=True``) and parameter values
(parameters are tensor inputs).
"""

from __future__ import annotations

import numpy as np

from .._errors import DeviceError, OptionError

__all__ = ["resolve_device", "resolve_dtype", "compiled", "AUTO_CUDA_WORK"]

_COMPILED: dict = {}

#: ``device="auto"`` uses CUDA only when a generation handles at least this many numbers
#: (individuals x variables x instances): below it, kernel launches and transfers cost
#: more than the arithmetic, and the CPU works in float64.
AUTO_CUDA_WORK = 200_000


def resolve_device(device, work: int | None = None):
    """``"auto"``, ``"cpu"``, ``"cuda"``, ``"cuda:K"`` or a ``torch.device`` -> torch.device.

    ``"auto"`` is CUDA when it is available and ``work`` (individuals x variables x
    instances, None: unknown, counted as large) reaches :data:`AUTO_CUDA_WORK`.
    """
    import torch

    if isinstance(device, torch.device):
        dev = device
    elif isinstance(device, str):
        if device == "auto":
            large = work is None or work >= AUTO_CUDA_WORK
            return torch.device("cuda" if large and torch.cuda.is_available() else "cpu")
        try:
            dev = torch.device(device)
        except RuntimeError:
            raise DeviceError(f"unknown device {device!r}; use 'auto', 'cpu' or 'cuda'") \
                from None
    else:
        raise DeviceError(f"device must be a string or torch.device, got {device!r}")
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise DeviceError(f"device {device!r} requested but CUDA is not available on this "
                              "machine (torch reports no CUDA device); use device='cpu' or "
                              "'auto'")
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise DeviceError(f"device {device!r}: this machine has "
                              f"{torch.cuda.device_count()} CUDA device(s)")
    elif dev.type != "cpu":
        raise DeviceError(f"unsupported device {device!r}; use 'auto', 'cpu' or 'cuda'")
    return dev


def resolve_dtype(dtype, device, work: int):
    """The working float dtype: explicit, or float64 for small work on CPU, else float32."""
    import torch

    if dtype is None:
        return torch.float64 if device.type == "cpu" and work < 2_000_000 else torch.float32
    names = {"float32": torch.float32, "float64": torch.float64, "float16": torch.float16,
             "bfloat16": torch.bfloat16}
    if isinstance(dtype, str):
        if dtype not in names:
            raise OptionError(f"unknown dtype {dtype!r}; use 'float32' or 'float64'")
        dtype = names[dtype]
    if isinstance(dtype, type) and issubclass(dtype, np.floating):
        dtype = {np.float32: torch.float32, np.float64: torch.float64}.get(dtype, dtype)
    if dtype not in (torch.float32, torch.float64):
        raise DeviceError(f"dtype {dtype} is not supported for search; use float32 or float64")
    if dtype == torch.float64 and device.type == "mps":  # pragma: no cover - no MPS here
        raise DeviceError("float64 is not supported on MPS devices")
    return dtype


def compiled(fn, key):
    """``torch.compile(fn, dynamic=True)``, cached by ``key`` for the whole process."""
    import torch

    hit = _COMPILED.get(key)
    if hit is None:
        hit = _COMPILED[key] = torch.compile(fn, dynamic=True)
    return hit
