"""Ctrl-C after the search: every later step of a run returns the best result so far.

The search stops itself on a ``KeyboardInterrupt`` (``engine/_driver.py``) and so does
the polish (:func:`._polishing.polish_stage`).  The steps after them are of two kinds:

- the float64 and exact checks of the final point, which the result cannot do without
  (they say whether its point is feasible): a first Ctrl-C during one makes the run
  ``INTERRUPTED`` and runs that check once more (:func:`mandatory`; it takes
  milliseconds, without the unboundedness probe); a second one propagates as usual;
- the optional steps (expansion of the box, cross-check, certificate): skipped once the
  run is interrupted, and a Ctrl-C during one ends it with the result as it stands
  (:func:`interrupted`).
"""

from __future__ import annotations

import time
from dataclasses import replace

from ..engine._status import Status
from ._crosscheck import cross_check
from ._result import add_up

__all__ = ["mandatory", "interrupted", "cross_checked"]


def mandatory(reason, step):
    """``(step(reason), reason)`` for a final check ``step`` taking why the run ended: a
    first Ctrl-C during it (the run not yet interrupted) runs ``step(INTERRUPTED)`` and
    returns ``INTERRUPTED``; a Ctrl-C when the run is already interrupted propagates."""
    try:
        return step(reason), reason
    except KeyboardInterrupt:
        if reason is Status.INTERRUPTED:
            raise
        return step(Status.INTERRUPTED), Status.INTERRUPTED


def interrupted(result, during: str):
    """``result`` (a finished run) marked ``INTERRUPTED`` after a Ctrl-C ``during`` an
    optional step that follows it: the point and its checks stand; ``success`` is
    False."""
    return replace(result, status=Status.INTERRUPTED, success=False,
                   message=f"{Status.INTERRUPTED.value}: Ctrl-C {during} (the run had "
                           f"ended: {result.message})")


def cross_checked(result, t_start: float, references=True):
    """``result`` with its cross-check against ``references`` (see
    :func:`._crosscheck.references_of`) and ``timings["cross_check"]`` (the parts
    closed by :func:`._result.add_up` from ``t_start``); skipped (0 s) when the run was
    interrupted, and a Ctrl-C during it leaves ``cross_check`` None (``INTERRUPTED``)."""
    t0 = time.perf_counter()
    if result.status is not Status.INTERRUPTED:
        try:
            result = replace(result, cross_check=cross_check(result, references=references))
        except KeyboardInterrupt:
            result = interrupted(result, "during the cross-check")
    timings = dict(result.timings)
    timings["cross_check"] = time.perf_counter() - t0
    return replace(result, timings=add_up(timings, t_start))
