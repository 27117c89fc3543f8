"""Why a run ended: the status enum shared by the engine and the results."""

from __future__ import annotations

import enum

__all__ = ["Status"]


class Status(enum.Enum):
    """Why a run ended.  Each value is the message users read."""

    CONVERGED = "the best point stopped improving (stagnation criterion met)"
    MAX_GENERATIONS = "reached max_generations"
    MAX_EVALS = "reached the evaluation budget max_evals"
    TIME_LIMIT = "reached time_limit"
    TARGET = "reached the target objective value"
    CALLBACK = "stopped by the callback"
    INFEASIBLE = "no feasible point found; the result is the least-violating point"
    UNBOUNDED = "the objective appears unbounded: it diverges to infinity at a feasible point"
    INTERRUPTED = "interrupted (KeyboardInterrupt); the result is the best point so far"
    UNDEFINED = ("the objective is not a finite number (NaN or overflow) at every feasible "
                 "point found")
    NOT_CONFIRMED = ("the optimum is not confirmed: the objective may still decrease beyond "
                     "the returned point")

    @property
    def failed(self) -> bool:
        """Statuses for which ``success`` is False."""
        return self in (Status.INFEASIBLE, Status.UNBOUNDED, Status.INTERRUPTED,
                        Status.UNDEFINED, Status.NOT_CONFIRMED)
