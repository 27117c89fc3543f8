"""The option ``local_search`` and the local solver the search's multistart stage calls
(:mod:`constropt.engine._multistart`).

``local_search="auto"`` (the default) runs the stage in a single
search (``solve``, ``Search``) of a continuous, smooth problem (:func:`smooth`: no
``Abs``, ``Min``, ``Max``, ``Piecewise``, rounding or ``Or``) with exact derivatives,
without a checkpoint (the record of minima is not part of the checkpointed state, so
a checkpointed run searches as before and resumes exactly), without islands
(ranks would each keep their own record) and with tight equalities or an ``eq_tol``
band of at most :data:`BAND`;
True asks for it (an :class:`OptionError` where it cannot run), False never.

The local solver is the finish's SLSQP polish with exact derivatives
(:func:`constropt.finish._polishing.polish_from`: the Newton restoration of an
infeasible start, the scaled form where the form as given stalls), one start after the
other: it takes
equalities, ``Or`` (its conjunctive leaves) and any number of genes; the
batched interior point (:func:`constropt.local._interior.interior_point`) takes no
equalities and at most 30 genes, and its Hessian by differences costs ``2 n``
derivative evaluations per start and iteration (not measured against SLSQP here).
"""

from __future__ import annotations

import numpy as np
import sympy as sp

from .._errors import OptionError
from ..engine._multistart import LocalSearch, LocalSettings
from ..finish._budget import Budget, Incumbent
from ..finish._polishing import polish_from
from ..finish._verdict import check_point
from ..local._newton import evaluators
from ..local._polish import STATIONARITY_EVALS, STATIONARY, stationarity

__all__ = ["LOCAL_SEARCH_CHOICES", "check_local_search", "local_stage", "local_solver",
           "smooth"]

LOCAL_SEARCH_CHOICES = ("auto", True, False)

#: Fewest evaluations worth a local solve.
MIN_SOLVE = 20


def check_local_search(value) -> None:
    """OptionError for a value of ``local_search`` other than "auto", True or False."""
    if not any(value is c or (isinstance(c, str) and value == c)
               for c in LOCAL_SEARCH_CHOICES):
        raise OptionError(f"local_search must be 'auto', True or False, got {value!r}")


def _why_not(problem, opts, B: int, islands: bool) -> str | None:
    """Why the stage cannot run in this search (None: it can)."""
    if B != 1:
        return "a batch of instances (solve_batch runs its own local solves)"
    if islands:
        return "an island run"
    if opts.checkpoint is not None:
        return "a checkpointed run (the record of minima is not checkpointed)"
    if not np.all(np.isfinite(problem.lower) & np.isfinite(problem.upper)):
        return "an unbounded search box"
    if problem.has_vector_variables or evaluators(problem) is None:
        return "no exact derivatives"
    return None


#: Functions with kinks, jumps or branches, and a disjunction of constraints: where the
#: problem has one, ``"auto"`` leaves the stage off.
KINKS = (sp.Piecewise, sp.Abs, sp.Min, sp.Max, sp.sign, sp.floor, sp.ceiling,
         sp.Heaviside, sp.Or)


#: ``"auto"`` leaves the stage off where equalities hold in an ``eq_tol`` band wider than
#: this: there the search's objective profits from the band by more than the stage tells
#: two minima apart (:attr:`LocalSettings.ftol`, relative), its epsilon schedule reaches
#: band points no start lay in, and a minimum reached from a few starts would end the run
#: first (GLOBALLib ex8_5_4 at eq_tol=1e-4, seeds 0 and 3: four solves to -7.6e-4
#: confirmed at 8k evaluations; the search alone reaches the band's -9.2e-4).  Tight
#: equalities (the default) and narrower bands keep it.
BAND = 1e-6


def smooth(problem) -> bool:
    """Whether the objective and every constraint of ``problem`` are free of
    :data:`KINKS`.  SLSQP and the KKT test assume smooth functions: at a kink a solve
    stalls or ends where no minimum is (CEC G17's piecewise cost: the stage confirmed
    a minimum 74 above the search's best point and ended the run in a worse basin
    than the search without it, 2 of 4 seeds), and on CEC G02's ``Abs`` every solve
    ended in another point (80 from 80)."""
    exprs = [problem.objective, *problem.constraints]
    return not any(isinstance(e, sp.Basic) and e.has(*KINKS) for e in exprs)


def local_stage(problem, opts, M: np.ndarray, *, islands: bool = False,
                deadline: float | None = None, seed: int = 0) -> LocalSearch | None:
    """The multistart stage of a search of ``problem`` (parameters ``M`` (n_p, B)), or
    None where ``local_search`` leaves it off.  ``deadline``: the search's, a
    ``time.perf_counter()`` value (None: no clock); ``seed`` draws the sweep's starts."""
    choice = opts.local_search
    if choice is False:
        return None
    why = _why_not(problem, opts, M.shape[1], islands)
    if why is None and choice == "auto" and problem.integer.any():
        why = "integer variables"  # "auto": the integer moves of the finish serve them
    if why is None and choice == "auto" and not smooth(problem):
        why = "a nonsmooth problem"
    if why is None and choice == "auto" and not problem.tight_equalities and \
            problem.eq_tol > BAND and any(lf.kind == "eq" for lf in problem.leaves):
        why = f"equalities held in an eq_tol band wider than {BAND:g}"
    if why is not None:
        if choice is True:
            raise OptionError(f"local_search=True cannot run here: {why}")
        return None
    return LocalSearch(local_solver(problem, M[:, 0], deadline), problem.lower.copy(),
                       problem.upper.copy(), LocalSettings(window=opts.stagnation), seed)


def local_solver(problem, pvec: np.ndarray, deadline: float | None = None):
    """``solve(X, limit) -> (X_end, used, kkt)``: the finish's SLSQP polish
    (:func:`constropt.finish._polishing.polish_from`: an infeasible start restored first,
    the scaled form where the form as given stalls) from each column of ``X`` (N, k),
    within ``limit`` evaluations in all (None: no limit) and the ``deadline``.  An end
    is the better of the start and the polished point under the float64 check; ``kkt``
    (k,) whether it is a feasible KKT point (:func:`constropt.local._polish.stationarity`
    within ``STATIONARY``): only those are local minima."""
    def solve(X: np.ndarray, limit: int | None):
        ends = X.copy()
        kkt = np.zeros(X.shape[1], dtype=bool)
        used = 0
        for j in range(X.shape[1]):
            left = None if limit is None else limit - used
            if left is not None and left < MIN_SOLVE:
                break
            f, V = check_point(problem, X[:, j], pvec)
            # the start's check and the end's KKT test within the limit too
            budget = Budget(None if left is None else left - 1 - STATIONARITY_EVALS,
                            deadline=deadline)
            inc, _ = polish_from(problem, X[:, j].copy(), Incumbent(X[:, j], f, V, pvec),
                                 budget)
            used += budget.used + 1
            ends[:, j] = inc.x
            if inc.feasible:
                res, u = stationarity(problem, inc.x, pvec)
                used += u
                kkt[j] = res <= STATIONARY
            if budget.expired():
                break
        return ends, used, kkt
    return solve
