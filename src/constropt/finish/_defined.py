"""Points outside the objective's domain never win while a defined one is at hand.

The objective is NaN outside its domain (a log or square root of a negative number, a
division by zero).  The search ranks such points last among equally violating ones and
keeps its best *defined* point besides its best point
(:func:`constropt.engine._best.merge_defined`); the finish chooses between the two
(:func:`defined_fallback`, :func:`result_key`) and the polish never trades a defined
point for an undefined one (:func:`replaces`).
"""

from __future__ import annotations

import math

import numpy as np

from ._budget import Budget, Incumbent
from ._verdict import check_point

__all__ = ["undefined", "result_key", "replaces", "defined_fallback"]


def _key(problem, f: float, V: np.ndarray):
    cv = float(np.sum(V)) if V.size else 0.0
    fmin = -f if problem.maximize else f
    return (cv, math.inf if math.isnan(fmin) else fmin)


def replaces(problem, f_c, V_c, f_best, V_best) -> bool:
    """Whether a polished candidate replaces the best point: feasible, better, and not
    outside the objective's domain where the best point is inside it (SLSQP's end from
    a defined infeasible point can be a feasible point where the objective is NaN)."""
    return bool(np.all(V_c == 0)) and \
        not (undefined(problem, f_c) and not undefined(problem, f_best)) and \
        _key(problem, f_c, V_c) < _key(problem, f_best, V_best)


def undefined(problem, f: float) -> bool:
    """Whether the objective value ``f`` (user's sense) says the point is outside the
    objective's domain: NaN, or ``inf`` the wrong way (the runtime's overflow there)."""
    fmin = -f if problem.maximize else f
    return math.isnan(fmin) or fmin == math.inf


def result_key(problem, f: float, V: np.ndarray):
    """The order in which final points compete (smaller is better): feasible first, then
    defined (the objective a number) before undefined, then by total violation and
    objective.  So a defined feasible point beats every other; a feasible point where the
    objective is NaN beats an infeasible one (the result then says ``UNDEFINED``: the
    objective is NaN on the feasible points found); among infeasible points a defined
    one beats an undefined one whatever their violations.  This decides between the
    search's best point and its best defined point (:func:`defined_fallback`); the polish
    is stricter: its end never replaces a defined point by an undefined one
    (:func:`replaces`)."""
    cv, fmin = _key(problem, f, V)
    return (cv > 0, undefined(problem, f), cv, fmin)


def defined_fallback(problem, inst, inc: Incumbent, budget: Budget):
    """The search's best defined point (``inst.defined``, see
    :func:`constropt.engine._best.merge_defined`) in place of the incumbent ``inc`` (the
    search's best point) where the float64 check finds its objective undefined and the
    defined one wins under :func:`result_key`; one float64 check, when the budget has
    room for it.

    Returns ``(incumbent, start)``: ``start`` is the point that lost (None when there
    was no contest), still worth a polish from: from a defined infeasible point SLSQP may
    reach a defined feasible one, and from an undefined one the projection onto the
    constraints that starts the polish (:func:`constropt.local._newton.restore`, blind
    to the objective) may too.
    """
    if getattr(inst, "defined", None) is None or not undefined(problem, inc.f) or \
            not budget.room(1):
        return inc, None
    x = np.array(inst.defined[0], dtype=np.float64)
    f, V = check_point(problem, x, inc.pvec)
    budget.spend(1)
    if result_key(problem, f, V) < result_key(problem, inc.f, inc.V):
        return inc.at(x, f, V), np.asarray(inc.x, dtype=np.float64)
    return inc, x
