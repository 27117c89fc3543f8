"""The optional steps after a single run's Result, for every mode that returns one.

``solve``, ``resume`` and :meth:`constropt.Search.result` end here: the cross-check
against reference solvers (``cross_check=``), the certificate (``certify=``), and the
timings closed; a Ctrl-C during either step returns the result as it stands,
``INTERRUPTED`` (:mod:`constropt.finish._interrupt`).
"""

from __future__ import annotations

from dataclasses import replace

from ..certify._result import certify_result
from ..finish._interrupt import cross_checked, interrupted
from ..finish._result import Result, Status, add_up

__all__ = ["concluded"]


def concluded(result: Result, problem, pvec, opts, device, t_start: float,
              references=()) -> Result:
    """``result`` with its cross-check against ``references`` (none: skipped) and, with
    ``opts.certify``, its certificate over ``problem`` (parameters ``pvec``, on
    ``device``); skipped once the run is interrupted.  Its timings are closed from
    ``t_start``."""
    if references:
        result = cross_checked(result, t_start, references)
    if opts.certify and result.status is not Status.INTERRUPTED:
        try:
            result = certify_result(result, problem, pvec, opts, device, t_start)
        except KeyboardInterrupt:  # before the branch-and-bound (which catches its own)
            result = interrupted(result, "before the certificate's branch-and-bound began")
    return replace(result, timings=add_up(result.timings, t_start))
