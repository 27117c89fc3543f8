"""Finishing moves called the way the tests of ``finish/`` and ``local/`` call them: from
an incumbent ``(x, f, V)`` with an evaluation budget, returning plain values to assert on."""

from __future__ import annotations

from constropt.finish._budget import Budget, Incumbent
from constropt.finish._polishing import polish_from


def move(step, problem, x, f, V, pvec, max_evals, nfev=0):
    """``step`` (a finishing move) from the incumbent ``(x, f, V)`` with the budget
    ``max_evals`` of which ``nfev`` are spent: ``(x, f, V, evaluations spent in all,
    stop)``."""
    budget = Budget(max_evals, used=nfev)
    inc, stop = step(problem, Incumbent(x, f, V, pvec), budget)
    return inc.x, inc.f, inc.V, budget.used, stop


def polish(problem, start, pvec, x, f, V, max_evals, nfev=0):
    """:func:`polish_from` from ``start`` with the incumbent ``(x, f, V)`` and the budget
    ``max_evals`` of which ``nfev`` are spent: ``(x, f, V, evaluations spent in all,
    stop)``."""
    budget = Budget(max_evals, used=nfev)
    inc, stop = polish_from(problem, start, Incumbent(x, f, V, pvec), budget)
    return inc.x, inc.f, inc.V, budget.used, stop
