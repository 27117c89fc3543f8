"""Python's cyclic garbage collector paused while a large structure is built.

A problem with a thousand variables, or a batch of ten thousand instances, builds
hundreds of thousands of small objects (sympy nodes, graph nodes, interval records,
checks and Results), none of them garbage yet.  Every full collection walks every live
object, these among them, so collections run more often and longer as the structure
grows: the cost grows faster than the work (measured in ``benchmarks/stages.py``: 10% of
``Problem(...)`` at 1,000 variables, and 15-22% of ``solve_batch`` at 1,000-10,000
instances).  :func:`bulk` pauses the collector for the duration and restores it as it
was, whatever happens; what the pause leaves is collected at the next collection.
Nested pauses are harmless (only the outermost one turns the collector back on).
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def bulk() -> Iterator[None]:
    """Pause the cyclic collector inside the ``with`` block (or the decorated call)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
