"""Memory budget: evaluate populations in chunks when one piece would not fit.

The generated function creates about one temporary per line of its body, each the size
of a population row, so the bytes one individual needs are estimated from the source.
A population whose evaluation would exceed the budget (default: half the memory
available on the device) is evaluated chunk by chunk along the population axis.  An
out-of-memory error during evaluation halves the chunk, warns, and carries on.
"""

from __future__ import annotations

import sys
import warnings

from ..backend._arrays import namespace

__all__ = ["available_bytes", "bytes_per_individual", "Chunked", "MemoryWarning", "OOMFallback"]


class MemoryWarning(UserWarning):
    """Evaluation ran out of memory and switched to smaller chunks."""


def available_bytes(device) -> int:
    """Free memory on ``device`` (CUDA: ``mem_get_info``; CPU: MemAvailable)."""
    if getattr(device, "type", str(device)) == "cuda":
        import torch  # lazy: only a CUDA device asks (the NumPy path never imports torch)

        free, _ = torch.cuda.mem_get_info(device)
        return int(free)
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:  # pragma: no cover - not Linux
        pass
    return 4 * 2**30  # pragma: no cover - a conservative guess elsewhere


def bytes_per_individual(problem, itemsize: int) -> int:
    """Estimated peak bytes of one individual's evaluation (inputs + temporaries)."""
    body = problem.source.split("def death(")[0]
    temps = sum(1 for line in body.splitlines() if " = " in line)
    return (problem.n + temps + 4) * itemsize


def _is_oom(exc: BaseException) -> bool:
    torch = sys.modules.get("torch")  # a NumPy search never loads it
    oom = getattr(torch, "OutOfMemoryError", None)
    if oom is not None and isinstance(exc, oom):
        return True
    text = str(exc).lower()
    return isinstance(exc, (RuntimeError, MemoryError)) and (
        "out of memory" in text or "can't allocate memory" in text or
        isinstance(exc, MemoryError))


class Chunked:
    """``fn(X, *args) -> tuple of (..., S) arrays``, evaluated in chunks along dim -1
    (NumPy arrays or torch tensors).

    Parameters
    ----------
    fn : callable
    per_individual : int
        Estimated bytes one individual needs.
    budget : int
        Bytes one evaluation may use.
    """

    def __init__(self, fn, per_individual: int, budget: int):
        self.fn = fn
        self.chunk = max(1, int(budget // max(per_individual, 1)))

    def __call__(self, X, *args):
        S = X.shape[-1]
        while True:
            if S <= self.chunk:
                try:
                    return self.fn(X, *args)
                except Exception as exc:  # noqa: BLE001 - only OOM is handled
                    if not _is_oom(exc) or S == 1:
                        raise
                    self._shrink(S)
                    continue
            try:
                parts = [self.fn(X[..., i:i + self.chunk], *args)
                         for i in range(0, S, self.chunk)]
            except Exception as exc:  # noqa: BLE001
                if not _is_oom(exc) or self.chunk == 1:
                    raise
                self._shrink(self.chunk)
                continue
            xp = namespace(X)
            return tuple(xp.concat([p[k] for p in parts], axis=-1)
                         for k in range(len(parts[0])))

    def _shrink(self, size: int) -> None:
        self.chunk = max(1, size // 2)
        torch = sys.modules.get("torch")
        if torch is not None and torch.cuda.is_available():
            torch.cuda.empty_cache()
        warnings.warn(f"evaluation ran out of memory; continuing in chunks of {self.chunk} "
                      "individuals", MemoryWarning, stacklevel=3)


class OOMFallback:
    """A compiled generation step that falls back to an eager one on out-of-memory.

    Compiled kernels fuse away the temporaries that :class:`Chunked` bounds, so the
    compiled step evaluates the whole population at once.  If that runs out of memory,
    the call is repeated with ``build_eager()`` (a step evaluating in chunks), which
    serves every later call; the step is pure, so the repeat is exact.
    """

    def __init__(self, compiled, build_eager):
        self.compiled, self.build_eager, self.eager = compiled, build_eager, None

    def __call__(self, *args):
        if self.eager is None:
            try:
                return self.compiled(*args)
            except Exception as exc:  # noqa: BLE001 - only OOM is handled
                if not _is_oom(exc):
                    raise
                import torch  # lazy: only a compiled (torch) step gets here

                if torch.cuda.is_available():
                    torch.cuda.empty_cache()
                warnings.warn("the compiled generation step ran out of memory; continuing "
                              "with the eager step, evaluating in chunks", MemoryWarning,
                              stacklevel=2)
                self.eager = self.build_eager()
        return self.eager(*args)
