"""The folder a checkpoint is written to: whether it can be written there, and the
temporary files of writers killed mid-write.

A checkpoint is written to a uniquely named temporary file in its folder
(:func:`temp_prefix`, the writer's process id in its name) and renamed over the target
(:func:`._checkpoint.write_checkpoint`); a temporary file whose process no longer runs
is removed by the next write or read of that checkpoint (:func:`clean_stale_temps`).
"""

from __future__ import annotations

import os

from .._errors import CheckpointError

__all__ = ["check_writable", "clean_stale_temps", "temp_prefix"]


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


def temp_prefix(path: str) -> str:
    """The name every temporary file of checkpoint ``path`` starts with."""
    return f".constropt-{os.path.basename(path)}."


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


def clean_stale_temps(path) -> int:
    """Remove temporary files of ``path`` left by processes that no longer run (killed
    mid-write).  Returns how many were removed."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    prefix = temp_prefix(path)
    removed = 0
    try:
        names = os.listdir(folder)
    except OSError:
        return 0
    for name in names:
        if not (name.startswith(prefix) and name.endswith(".tmp")):
            continue
        pid = name[len(prefix):].split(".", 1)[0]
        if pid.isdigit() and (int(pid) == os.getpid() or not _alive(int(pid))):
            try:
                os.unlink(os.path.join(folder, name))
                removed += 1
            except OSError:
                pass
    return removed
