"""Live progress and user callbacks during a solve.

Every ``check_every`` generations the engine hands the population to a monitor, which
builds a read-only :class:`Progress` snapshot, updates the live display (only when
stderr is a terminal or the code runs in a Jupyter kernel, unless ``progress=True``),
logs the snapshot on the ``constropt`` logger at DEBUG level and calls the user's
``callback(state)``; a callback returning True, or raising ``StopIteration``, stops the
run.  On a terminal the display is one line rewritten in place (``\r``); in a notebook
one output line updated in place (``IPython.display``, imported only when IPython is
already loaded); on anything else (a file, a pipe, a CI log) each snapshot is a line of
its own, so logs stay readable.
"""

from __future__ import annotations

import importlib
import inspect
import logging
import os
import sys
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ..backend._arrays import to_numpy

__all__ = ["Progress", "make_monitor", "notebook_display"]

logger = logging.getLogger("constropt")


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


def notebook_display():
    """``IPython.display`` when running in a Jupyter (IPython) kernel, else None.

    Looks only at an IPython already imported (``sys.modules``): plain scripts never
    import it.  A kernel is an IPython shell with a ``kernel`` attribute (ipykernel's);
    the terminal IPython has none and gets the terminal display."""
    ipython = sys.modules.get("IPython")
    get = getattr(ipython, "get_ipython", None)
    shell = get() if callable(get) else None
    if shell is None or getattr(shell, "kernel", None) is None:
        return None
    try:
        return importlib.import_module("IPython.display")
    except ImportError:  # pragma: no cover - a broken IPython installation
        return None


def _auto_progress(stream, notebook: bool) -> bool:
    if os.environ.get("PYTEST_CURRENT_TEST") or os.environ.get("CI"):
        return False
    return notebook or bool(getattr(stream, "isatty", lambda: False)())


def _wants_result(callback) -> bool:
    """scipy's rule: a callback whose only parameter is named ``intermediate_result``
    gets an ``OptimizeResult``."""
    try:
        names = set(inspect.signature(callback).parameters)
    except (TypeError, ValueError):  # builtins without a signature
        return False
    return names == {"intermediate_result"}


def _intermediate_result(snap: Progress, maximize: bool, OptimizeResult):
    """The snapshot as scipy passes it: ``fun`` in the minimized sense (as in
    :meth:`Result.to_scipy`), ``user_fun`` in the user's, ``nit`` the generation."""
    fields = {**asdict(snap), "x": snap.x, "nit": snap.generation, "user_fun": snap.fun,
              "fun": -snap.fun if maximize else snap.fun}
    return OptimizeResult(fields)


def make_monitor(maximize: bool, progress, callback, stream=None):
    """Build the engine's ``monitor(generation, nfev, pop, elapsed)``, or None.

    Parameters
    ----------
    maximize : bool
    progress : bool or None
        True: always show; False: never; None: only on a terminal or in a Jupyter
        kernel (never under pytest or CI).
    callback : callable or None
        ``callback(state: Progress) -> bool | None``; a true value or a
        ``StopIteration`` stops the run.  ``callback(intermediate_result)`` (that
        parameter name only, as in scipy) gets a ``scipy.optimize.OptimizeResult``.
    stream : file, optional
        Where the display goes (default: stderr, or the notebook's output in a kernel).
    """
    display = notebook_display() if stream is None else None
    stream = stream if stream is not None else sys.stderr
    show = _auto_progress(stream, display is not None) if progress is None else bool(progress)
    debug = logger.isEnabledFor(logging.DEBUG)
    if not show and callback is None and not debug:
        return None
    sign = -1.0 if maximize else 1.0
    state: dict[str, Any] = {"shown": False, "handle": None}
    in_place = bool(getattr(stream, "isatty", lambda: False)())
    as_result = callback is not None and _wants_result(callback)
    OptimizeResult = None
    if as_result:  # scipy.optimize only for a callback that asks for its result type
        OptimizeResult = importlib.import_module("scipy.optimize").OptimizeResult

    def draw(line: str) -> None:
        if display is not None:
            text = {"text/plain": line}
            if state["handle"] is None:
                state["handle"] = display.display(text, raw=True, display_id=True)
            else:
                state["handle"].update(text, raw=True)
            return
        stream.write("\r" + line if in_place else line + "\n")
        stream.flush()
        state["shown"] = in_place

    def monitor(generation, nfev, pop, elapsed) -> bool:
        cv = to_numpy(pop.cv)
        snap = Progress(
            generation=generation, nfev=nfev, fun=sign * float(pop.f[0]),
            cv=float(cv[0]), feasible_fraction=float((cv == 0).mean()),
            evals_per_second=nfev / elapsed if elapsed > 0 else float("inf"),
            elapsed=elapsed, x=np.array(to_numpy(pop.X[:, 0]), dtype=np.float64))
        snap.x.setflags(write=False)
        logger.debug("%s", snap.line())
        if show:
            draw(snap.line())
        if callback is None:
            return False
        try:
            arg = _intermediate_result(snap, maximize, OptimizeResult) if as_result else snap
            return bool(callback(arg))
        except StopIteration:  # scipy's way for a callback to end the run
            logger.info("callback raised StopIteration at generation %d", generation)
            return True

    def finish():
        if state["shown"]:
            stream.write("\n")
            stream.flush()

    monitor.finish = finish  # type: ignore[attr-defined]
    return monitor
