"""The status of a final point, for every mode: the exact check, then the status rules.

:func:`verdict` certifies the point in exact arithmetic (:func:`._repair.certify_point`:
every ``feasible`` comes from there), then says why the run ended and whether the answer
stands: infeasible (:func:`._verdict.infeasible_status`), an objective that is not a
number (:func:`._verdict.objective_verdict`), unbounded or not confirmed (the probes of
:mod:`._verdict`, :mod:`._rays` and :mod:`._poles`, as the budget allows).
"""

from __future__ import annotations

import numpy as np
import sympy as sp

from ..problem._domain import polynomial
from ._budget import MAX_FINISH_GENES, Budget, Incumbent
from ._poles import pole_status
from ._rays import edge_suspect, ray_probe
from ._repair import certify_point
from ._result import Status
from ._verdict import UNBOUNDED_LEVEL, infeasible_status, objective_verdict
from ._verdict import diverges as diverges_one

__all__ = ["verdict", "probe_cost", "constant_note"]


def probe_cost(problem) -> int:
    """Evaluations :func:`._verdict.diverges` spends per instance at most (bisection and
    approaches along each free coordinate both ways: 45; the edge approaches: 11)."""
    return 2 * int((~problem.integer).sum()) * (45 + 11) + 1


def verdict(problem, inc: Incumbent, reason, budget: Budget, *, unbounded=None, box=None):
    """The exact check and the status of the final point ``inc``.  ``reason``: why the
    search (or polish) ended; ``budget``: the run's, which counts the checks and probes;
    ``unbounded``: ``(verdict, evaluations)`` of :func:`._verdict.diverges` computed
    before, or None to probe here (edges, rays beyond ``box``, default ``problem``, then
    poles: :mod:`._poles`) as the budget allows.  Returns ``(incumbent, status, message,
    checked)``: the point as certified (a repair may move it) and its
    :class:`._repair.Certified` check."""
    checked = certify_point(problem, inc.x, inc.pvec, inc.f, inc.V,  # exact (Arb balls)
                            budget=budget.left())
    inc = inc.at(checked.x, checked.fun, checked.violations)
    budget.spend(checked.evaluations)
    if reason is Status.INTERRUPTED:
        return inc, reason, reason.value + checked.note, checked
    if not checked.feasible:
        return (inc, *infeasible_status(reason, checked.note), checked)
    if objective_verdict(problem, inc.f) is not None:
        return (inc, *objective_verdict(problem, inc.f), checked)
    status, message = _unbounded(problem, inc, reason, budget, unbounded,
                                 problem if box is None else box)
    return inc, status, message, checked


def _unbounded(problem, inc: Incumbent, reason, budget: Budget, unbounded, where):
    """``(status, message)`` of a feasible final point with a finite objective: ``reason``,
    unless a probe says the objective is unbounded or a better point lies beyond the
    search box ``where`` or beside a pole."""
    status, message = reason, reason.value
    fmin = -inc.f if problem.maximize else inc.f
    flag = fmin <= -UNBOUNDED_LEVEL
    owed = False  # a probe the budget did not allow
    if not flag and reason is not Status.TARGET:
        if unbounded is not None:
            flag = unbounded[0]
            budget.spend(unbounded[1])
        elif bounded_in(problem, where):
            pass  # a polynomial on a bounded box: nothing to probe
        elif problem.n <= MAX_FINISH_GENES and budget.room(probe_cost(problem)):
            flag, used = diverges_one(where, inc.x, np.reshape(inc.pvec, -1))
            budget.spend(used)
        else:
            owed = True
    if flag and reason is not Status.TARGET:
        return Status.UNBOUNDED, (f"{Status.UNBOUNDED.value} (best objective {inc.f:.3g}; "
                                  "the objective diverges inside the box or as x "
                                  "approaches its edge)")
    if reason is Status.TARGET or problem.n > MAX_FINISH_GENES:
        return status, message
    ray = ray_probe(problem, where, inc.x, inc.f, inc.pvec, budget.left())
    budget.spend(ray.used)
    if ray.status is Status.UNBOUNDED:
        status = Status.UNBOUNDED
        message = (f"{Status.UNBOUNDED.value}: along a feasible ray from the returned "
                   f"point ({ray.where} beyond the search box) the objective reaches "
                   f"{ray.fun:.6g} (best objective in the box {inc.f:.6g})")
    elif ray.status is Status.NOT_CONFIRMED:
        status = Status.NOT_CONFIRMED
        message = (f"{Status.NOT_CONFIRMED.value}: a feasible point beyond the search box "
                   f"({ray.where}) has objective {ray.fun:.6g}, better than the result's "
                   f"{inc.f:.6g} (pass bounds= to search there, or raise max_evals)")
    elif ray.short:  # a ray beyond a default side left unprobed
        status = Status.NOT_CONFIRMED
        message = (f"{Status.NOT_CONFIRMED.value}: the evaluation budget ran out before the "
                   "probe beyond the default sides of the search box (raise max_evals, or "
                   f"give bounds; search ended: {reason.value})")
    elif owed:
        suspect, used = edge_suspect(problem, where, inc.x, inc.pvec, budget.left())
        budget.spend(used)
        if suspect:
            status = Status.NOT_CONFIRMED
            message = (f"{Status.NOT_CONFIRMED.value}: the evaluation budget ran out before "
                       "the unboundedness probe of the returned point, which lies at an "
                       "open or strict side of the box (raise max_evals; search ended: "
                       f"{reason.value})")
    if bounded_in(problem, where):
        return status, message  # no pole: a polynomial is finite everywhere
    return pole_status(problem, where, inc, reason, budget, status, message)


_POLYNOMIAL: dict = {}  # id(problem) -> (problem, objective is a polynomial)


def bounded_in(problem, box) -> bool:
    """Whether the objective is a polynomial and ``box`` bounded: then it is bounded on
    the box and has no pole, and the probes for divergence toward a side and for poles
    (:func:`._verdict.diverges`, :func:`._poles.pole_status`) cannot find one."""
    if not (np.isfinite(box.lower).all() and np.isfinite(box.upper).all()):
        return False
    hit = _POLYNOMIAL.get(id(problem))
    if hit is None or hit[0] is not problem:
        _POLYNOMIAL.clear()  # one problem at a time: no growth, no stale ids
        hit = _POLYNOMIAL[id(problem)] = (problem, polynomial(problem.objective))
    return hit[1]


_CONSTANT: dict = {}  # id(problem) -> (problem, objective is constant): a batch asks B times


def constant_note(problem, checked) -> str:
    """What a message adds when the objective does not depend on the variables."""
    hit = _CONSTANT.get(id(problem))
    if hit is None or hit[0] is not problem:
        const = not (problem.objective.free_symbols & set(problem.variables)) and \
            not problem.objective.atoms(sp.Indexed, sp.MatrixSymbol)
        _CONSTANT.clear()  # one problem at a time: no growth, no stale ids
        hit = _CONSTANT[id(problem)] = (problem, const)
    if checked.feasible and hit[1]:
        return "; the objective is constant: any feasible point is optimal"
    return ""
