"""Live progress and user callbacks during a solve.

Every ``check_every`` generations the engine hands the population to a monitor, which
builds a read-only :class:`Progress` snapshot, updates the live display (only when
stderr is a terminal unless ``progress=True``) and calls the user's ``callback(state)``;
a callback returning True stops the run.  On a terminal the display is one line
rewritten in place (``\r``); on anything else (a file, a pipe, a CI log) each snapshot
is a line of its own, so logs stay readable.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

import numpy as np

__all__ = ["Progress", "make_monitor"]


@dataclass(frozen=True)
class Progress:
    """A snapshot of a running solve, passed to ``callback`` and shown live.

    Attributes
    ----------
    generation : int
    nfev : int
        Points evaluated so far.
    fun : float
        Objective of the best point (user's sense).
    cv : float
        Total constraint violation of the best point (0: feasible).
    feasible_fraction : float
        Share of the population that is feasible.
    evals_per_second : float
    elapsed : float
        Seconds since the search started.
    x : ndarray, shape (n,)
        The best point (a read-only copy).
    """

    generation: int
    nfev: int
    fun: float
    cv: float
    feasible_fraction: float
    evals_per_second: float
    elapsed: float
    x: np.ndarray

    def line(self) -> str:
        """The one-line display text."""
        return (f"gen {self.generation:>6}  best {self.fun:>14.8g}  cv {self.cv:>9.3g}  "
                f"feasible {100 * self.feasible_fraction:5.1f}%  "
                f"{self.evals_per_second:>10.3g} evals/s  {self.elapsed:7.2f}s")


def _auto_progress(stream) -> bool:
    if os.environ.get("PYTEST_CURRENT_TEST") or os.environ.get("CI"):
        return False
    return bool(getattr(stream, "isatty", lambda: False)())


def make_monitor(maximize: bool, progress, callback, stream=None):
    """Build the engine's ``monitor(generation, nfev, pop, elapsed)``, or None.

    Parameters
    ----------
    maximize : bool
    progress : bool or None
        True: always show; False: never; None: only on a terminal (never under pytest
        or CI).
    callback : callable or None
        ``callback(state: Progress) -> bool | None``; a true value stops the run.
    """
    stream = stream if stream is not None else sys.stderr
    show = _auto_progress(stream) if progress is None else bool(progress)
    if not show and callback is None:
        return None
    sign = -1.0 if maximize else 1.0
    state = {"shown": False}
    in_place = bool(getattr(stream, "isatty", lambda: False)())

    def monitor(generation, nfev, pop, elapsed) -> bool:
        from ..engine._xp import to_numpy

        cv = to_numpy(pop.cv)
        snap = Progress(
            generation=generation, nfev=nfev, fun=sign * float(pop.f[0]),
            cv=float(cv[0]), feasible_fraction=float((cv == 0).mean()),
            evals_per_second=nfev / elapsed if elapsed > 0 else float("inf"),
            elapsed=elapsed, x=np.array(to_numpy(pop.X[:, 0]), dtype=np.float64))
        snap.x.setflags(write=False)
        if show:
            stream.write("\r" + snap.line() if in_place else snap.line() + "\n")
            stream.flush()
            state["shown"] = in_place
        stop = bool(callback(snap)) if callback is not None else False
        return stop

    def finish():
        if state["shown"]:
            stream.write("\n")
            stream.flush()

    monitor.finish = finish
    return monitor
