"""Backend, device and dtype resolution.

The engine runs on NumPy or torch (see :mod:`._arrays`); :func:`choose_backend` picks one
(``backend="auto"``: NumPy for small work on the CPU without compilation, where torch's
import and per-operation overhead cost more than the arithmetic).  Nothing here imports
torch unless the torch backend or a CUDA device is asked for.  The compile cache is
:mod:`._compile`.
"""

from __future__ import annotations

import numpy as np

from .._errors import DeviceError, OptionError

__all__ = ["resolve_device", "resolve_dtype", "AUTO_CUDA_WORK", "choose_backend",
           "check_device", "numpy_dtype", "NUMPY_MAX_WORK", "BACKENDS"]

#: ``backend`` option values.
BACKENDS = ("auto", "numpy", "torch")

#: ``device="auto"`` uses CUDA only when a generation handles at least this many numbers
#: (individuals x variables x instances): below it, kernel launches and transfers cost
#: more than the arithmetic, and the CPU works in float64.
AUTO_CUDA_WORK = 200_000

#: ``backend="auto"`` searches on NumPy (CPU, no compilation) while a generation handles
#: fewer numbers than this (individuals x variables x instances); from there on
#: ``compile="auto"`` compiles, which needs torch.  Below it an eager NumPy generation
#: costs less than an eager torch one on the CPU, so NumPy serves all eager CPU work
#: (``benchmarks/backend_threshold.py``; measurements in
#: ``benchmarks/results/backend_threshold.md``).
NUMPY_MAX_WORK = 200_000


def _cpu(device) -> bool:
    """Whether ``device`` names the CPU (``"auto"`` counts: small work stays there)."""
    if isinstance(device, str):
        return device in ("auto", "cpu")
    return getattr(device, "type", None) == "cpu"


def check_device(device) -> None:
    """Validate ``device`` early; ``"auto"`` and ``"cpu"`` without importing torch."""
    if not (isinstance(device, str) and device in ("auto", "cpu")):
        resolve_device(device)


def choose_backend(backend, device, compile, work: int) -> str:
    """``"numpy"`` or ``"torch"`` from the ``backend`` option.

    ``"auto"``: NumPy when the device is the CPU (``"auto"`` or ``"cpu"``), compilation
    is not forced (``compile`` not True) and ``work`` (individuals x variables x
    instances) is below :data:`NUMPY_MAX_WORK` (then ``compile="auto"`` would not compile
    either); torch otherwise.  ``"numpy"`` with a CUDA device or ``compile=True`` raises
    :class:`OptionError` naming the conflict.
    """
    if not isinstance(backend, str) or backend not in BACKENDS:
        raise OptionError(f"backend must be one of {', '.join(map(repr, BACKENDS))}, got "
                          f"{backend!r}")
    if backend == "numpy":
        if compile is True:
            raise OptionError("backend='numpy' cannot compile: compile=True needs "
                              "backend='torch' (or leave compile='auto')")
        if not _cpu(device):
            raise OptionError(f"backend='numpy' runs on the CPU: device={str(device)!r} "
                              "needs backend='torch'")
        return "numpy"
    if backend == "torch":
        return "torch"
    small = work < NUMPY_MAX_WORK
    return "numpy" if small and compile is not True and _cpu(device) else "torch"


def numpy_dtype(dtype, work: int):
    """The NumPy working dtype: explicit (a name, a NumPy or torch float type), or
    float64 for small work, as :func:`resolve_dtype` on the CPU."""
    if dtype is None:
        return np.dtype(np.float64 if work < 2_000_000 else np.float32)
    name = str(dtype).removeprefix("torch.")
    if isinstance(dtype, type) and issubclass(dtype, np.generic):
        name = np.dtype(dtype).name
    if name in ("float16", "bfloat16"):  # the same refusal as the torch backend's
        raise DeviceError(f"dtype {name} is not supported for search; use float32 or "
                          "float64")
    if name not in ("float32", "float64"):
        raise OptionError(f"unknown dtype {dtype!r}; use 'float32' or 'float64'")
    return np.dtype(name)


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
