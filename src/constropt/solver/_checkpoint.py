"""Checkpoints: the whole engine state written atomically, and ``resume``.

A checkpoint holds the problem, the solve's settings (seed, device, dtype, options),
the loop state (population, best point, counters, history, the algorithm's own state)
and the random generator's state, so a resumed run on CPU ends in exactly the result of
an uninterrupted run with the same seed.  Files are written to a temporary name in the
same folder and renamed over the target, so a crash mid-write never leaves a truncated
checkpoint.  Checkpoints are pickles: load only files you wrote yourself.
"""

from __future__ import annotations

import hashlib
import os
import tempfile

import numpy as np

from .._errors import CheckpointError

__all__ = ["fingerprint", "write_checkpoint", "read_checkpoint", "FORMAT", "VERSION"]

FORMAT = "constropt-checkpoint"
VERSION = 1


def fingerprint(problem) -> str:
    """A hash of everything that defines the problem's search (code, box, sense)."""
    h = hashlib.sha256()
    for part in (problem.source, repr(tuple(str(v) for v in problem.variables)),
                 repr(problem.maximize), repr(problem.eq_tol)):
        h.update(part.encode())
    for arr in (problem.lower, problem.upper, problem.integer.astype(np.uint8)):
        h.update(np.ascontiguousarray(arr).tobytes())
    return h.hexdigest()


def check_writable(path) -> None:
    """:class:`CheckpointError` now if a checkpoint could not be written to ``path`` later
    (its folder is missing or read-only, or ``path`` is a folder)."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise CheckpointError(f"checkpoint path {path!r} is a folder, not a file")
    if not os.path.isdir(folder):
        raise CheckpointError(f"cannot write checkpoint {path!r}: folder {folder!r} does "
                              "not exist")
    if not os.access(folder, os.W_OK):
        raise CheckpointError(f"cannot write checkpoint {path!r}: folder {folder!r} is not "
                              "writable")


def write_checkpoint(path, payload: dict) -> None:
    """Write ``payload`` to ``path`` atomically (temporary file, then rename)."""
    import torch

    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".constropt-", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            torch.save({"format": FORMAT, "version": VERSION, **payload}, fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def read_checkpoint(path) -> dict:
    """Load a checkpoint; :class:`CheckpointError` if it is missing, corrupt or foreign."""
    import torch

    path = os.fspath(path)
    if not os.path.exists(path):
        raise CheckpointError(f"checkpoint {path!r} does not exist")
    try:
        data = torch.load(path, map_location="cpu", weights_only=False)
    except Exception as exc:  # any unpickling failure means the file is unusable
        raise CheckpointError(f"checkpoint {path!r} is corrupt or not a constropt "
                              f"checkpoint ({type(exc).__name__}: {exc})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise CheckpointError(f"{path!r} is not a constropt checkpoint")
    if data.get("version") != VERSION:
        raise CheckpointError(f"checkpoint {path!r} has version {data.get('version')}; this "
                              f"constropt reads version {VERSION}")
    missing = {"fingerprint", "problem", "settings", "loop", "generator"} - set(data)
    if missing:
        raise CheckpointError(f"checkpoint {path!r} is incomplete (missing "
                              f"{', '.join(sorted(missing))})")
    return data
