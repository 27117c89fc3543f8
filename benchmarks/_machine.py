"""Shared by the benchmark scripts: the results header and a load monitor.

On a small shared machine other processes steal cores, and torch's intra-op threads then
wait on each other, so timings can be off by large factors.  :class:`LoadMonitor`
measures how much CPU other processes used while a benchmark ran (from ``/proc/stat``
and this process's own CPU time), and :func:`wait_quiet` waits for an idle machine.
"""

from __future__ import annotations

import datetime
import os
import platform
import time

__all__ = ["header", "LoadMonitor", "wait_quiet", "Quiet"]


def emit(text: str, path: str | None) -> str:
    """Print a benchmark's report and, when ``path`` is given, write it there too."""
    print(text)
    if path:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "w") as fh:
            fh.write(text + "\n")
    return text


def header(title: str) -> str:
    """Markdown title and one line: date, machine, library versions."""
    import numpy as np
    import torch

    cpu = platform.processor() or platform.machine()
    gpu = (f"GPU: {torch.cuda.get_device_name()}" if torch.cuda.is_available() else "no GPU")
    return (f"# {title}\n\n{datetime.datetime.now():%Y-%m-%d %H:%M}; machine: "
            f"{os.cpu_count()}-core CPU ({cpu}), {gpu}; torch {torch.__version__} "
            f"({torch.get_num_threads()} threads), numpy {np.__version__}, "
            f"Python {platform.python_version()}\n")


def _busy_jiffies():
    try:
        with open("/proc/stat") as fh:
            v = [int(t) for t in fh.readline().split()[1:]]
    except OSError:
        return None
    return sum(v) - v[3] - v[4], sum(v)  # busy (not idle, not iowait), total


def _own_cpu() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


class LoadMonitor:
    """CPU share used by *other* processes between construction and :meth:`share`."""

    def __init__(self):
        self.t0 = time.perf_counter()
        self.j0 = _busy_jiffies()
        self.c0 = _own_cpu()

    def share(self) -> float | None:
        j1 = _busy_jiffies()
        if self.j0 is None or j1 is None:
            return None
        hz = os.sysconf("SC_CLK_TCK")
        busy = (j1[0] - self.j0[0]) / hz
        total = (j1[1] - self.j0[1]) / hz
        if total <= 0:
            return None
        return max(0.0, busy - (_own_cpu() - self.c0)) / total

    def line(self) -> str:
        s = self.share()
        if s is None:
            return "Load from other processes during the run: unknown."
        return (f"Load from other processes during the run: {100 * s:.0f}% of the machine's "
                f"CPU time ({'quiet' if s < 0.05 else 'timings may be inflated'}).")


def wait_quiet(limit: float, idle: float = 0.93, streak: int = 3) -> bool:
    """Wait up to ``limit`` seconds for ``streak`` consecutive seconds above ``idle``
    CPU idleness; True if the machine became quiet."""
    t_end = time.time() + limit
    ok = 0
    while time.time() < t_end:
        a = _busy_jiffies()
        time.sleep(1.0)
        b = _busy_jiffies()
        if a is None or b is None:
            return False
        tot = b[1] - a[1]
        frac_idle = 1 - (b[0] - a[0]) / tot if tot > 0 else 1.0
        ok = ok + 1 if frac_idle >= idle else 0
        if ok >= streak:
            return True
    return False


class Quiet:
    """Per-measurement guard: wait (up to ``limit`` s) for an idle machine, then measure
    the other processes' CPU share while the block runs (``.load``, 0..1 or None).

    >>> with Quiet(30) as q:   # doctest: +SKIP
    ...     t = time_something()
    >>> q.load
    """

    def __init__(self, limit: float = 0.0):
        self.limit = limit
        self.load = None
        self.waited_ok = True

    def __enter__(self):
        if self.limit > 0:
            self.waited_ok = wait_quiet(self.limit, streak=2)
        self._mon = LoadMonitor()
        return self

    def __exit__(self, *exc):
        self.load = self._mon.share()
        return False


def fmt_load(load) -> str:
    return "?" if load is None else f"{100 * load:.0f}%"
