"""The termination rule every search mode uses: stop codes, :class:`Termination` and
:func:`check`, on host arrays of one entry per instance (no array backend involved)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ._status import Status

__all__ = ["Termination", "check", "improved", "CODES"]

#: Stop codes (index) of the per-instance ``code`` counter; 0 = still running.
CODES = (None, Status.MAX_GENERATIONS, Status.MAX_EVALS, Status.TIME_LIMIT, Status.TARGET,
         Status.CALLBACK, Status.CONVERGED, Status.UNBOUNDED, Status.INTERRUPTED)
_C = {s: k for k, s in enumerate(CODES) if s is not None}


@dataclass(frozen=True)
class Termination:
    """When an instance stops (every criterion optional except ``max_generations``).

    ``max_evals`` is the search's share of the evaluation budget (per instance); the
    polish's share is kept apart by the caller.  ``target`` is in minimization sense.
    ``collapse``: stop when the population is feasible and its objectives agree to
    ``ftol``.  ``restarts``: on stagnation start again this many times while the budget
    allows; ``restart_keep``: the best point goes into the fresh population (else the
    restart is independent of the run before it; the driver's best point is kept either
    way), and an independent restart stops after ``restart_window`` generations that do
    not improve the best point (None: ``stagnation``).
    """

    max_generations: int
    max_evals: int | None = None
    time_limit: float | None = None
    target: float | None = None
    stagnation: int = 60
    ftol: float = 1e-10
    check_every: int = 10
    collapse: bool = True
    restarts: int = 0
    restart_keep: bool = True
    restart_window: int | None = None


def improved(f, cv, f_old, cv_old, ftol):
    """Did the best point improve (elementwise, host arrays)?  Lower violation counts
    when it drops by more than ``ftol`` (relative) or reaches 0; at equal zero
    violation, a relative objective drop above ``ftol``."""
    f, cv, f_old, cv_old = (np.asarray(a, dtype=np.float64) for a in (f, cv, f_old, cv_old))
    with np.errstate(invalid="ignore", over="ignore"):
        by_cv = (cv_old - cv > ftol * np.maximum(1.0, cv_old)) | (cv == 0.0)
        finite = np.isfinite(f_old)
        by_f = np.where(finite, f_old - f > ftol * np.maximum(1.0, np.abs(f_old)), f < f_old)
    return np.where(cv < cv_old, by_cv, ~((cv > cv_old) | (cv > 0)) & by_f)


def check(term: Termination, f, cv, f_old, cv_old, quiet, collapsed, settled,
          time_up=False, stop=False, confirmed=False):
    """The termination rule, for every instance at once (host arrays of shape (B,)).

    Returns ``(quiet, code)``: the stagnation counters after this check point and a stop
    code per instance (0 = go on; see :data:`CODES`).  Order of precedence: target,
    unbounded, time limit, stop request (callback), a best local minimum ``confirmed``
    by the multistart stage (:mod:`._multistart`: it needs no settled schedule, its
    point is feasible under the raw rules), stagnation or collapse (only once the
    algorithm has ``settled``: the epsilon schedule has run out); the last three end
    ``CONVERGED``.
    """
    quiet = np.where(improved(f, cv, f_old, cv_old, term.ftol), 0, quiet + term.check_every)
    code = np.zeros(np.shape(f), dtype=np.int64)

    def put(mask, status):
        code[(code == 0) & mask] = _C[status]

    feasible = np.asarray(cv) == 0
    if term.target is not None:
        put(feasible & (np.asarray(f) <= term.target), Status.TARGET)
    put(feasible & (np.asarray(f) == -math.inf), Status.UNBOUNDED)
    put(np.broadcast_to(bool(time_up), code.shape), Status.TIME_LIMIT)
    put(np.broadcast_to(np.asarray(stop, dtype=bool), code.shape), Status.CALLBACK)
    put(np.broadcast_to(np.asarray(confirmed, dtype=bool), code.shape), Status.CONVERGED)
    stalled = (quiet >= term.stagnation) | (term.collapse & np.asarray(collapsed, dtype=bool))
    put(stalled & np.asarray(settled, dtype=bool), Status.CONVERGED)
    return quiet, code
