"""The plots behind the thin ``plot`` methods of the core, registered by the edge.

:meth:`constropt.Problem.plot` and :meth:`constropt.Result.plot` are methods of core
objects; their drawing code is a leaf at the edge (:mod:`constropt.interface._plot`,
which needs matplotlib).  The edge registers its functions here when it is imported
(the package's ``__init__`` imports it), and the methods call what is registered, so
every import runs one way: the core and the edge import this module, and nothing
below the edge imports the edge.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["register_plot", "plotter"]

_PLOTS: dict[str, Callable] = {}


def register_plot(kind: str) -> Callable[[Callable], Callable]:
    """A decorator registering its function as the plot of ``kind`` (``"problem"``,
    ``"result"``)."""

    def register(fn: Callable) -> Callable:
        _PLOTS[kind] = fn
        return fn

    return register


def plotter(kind: str) -> Callable:
    """The plot registered for ``kind``."""
    try:
        return _PLOTS[kind]
    except KeyError:
        raise ImportError(f"no {kind} plot is registered: import constropt, whose "
                          "__init__ loads constropt.interface._plot") from None
