"""``solve`` on a problem proven convex: a local solve first, the search only if it fails.

On a problem proven convex on its box (:func:`constropt.certify._convexity.prove_convex`)
every KKT point is a global minimizer over the box, so a local solve that ends at one
answers the problem: no evolutionary search is needed.  :func:`convex_answer` polishes
one start (the user's ``x0``, else the box centre) with the polish of every mode
(:func:`constropt.finish._polishing.polish_from`: SLSQP with exact derivatives), again
from its end while that gains (:data:`REPOLISH`), and accepts the end when

- it passes the float64 check (feasible, finite objective),
- it is a KKT point (:func:`constropt.local._polish.stationarity` at most
  ``STATIONARY``),
- it does not press on a soft side of the box (one that the search would expand: the
  optimum may lie beyond it).

The accepted end then takes stage 2 of the one finishing path
(:func:`constropt.finish._finish.judge`: the exact check and the status rules); a
point that the exact check does not find feasible also goes back to the search.
Otherwise (not proven convex, or a local end that fails a test) ``solve`` runs its
normal search, with the evaluations the attempt spent counted.
"""

from __future__ import annotations

import time
from typing import NamedTuple

import numpy as np

from .._errors import OptionError
from ..backend._devices import numpy_dtype
from ..certify._convexity import prove_convex
from ..engine import _memory
from ..finish._budget import MAX_FINISH_GENES, Budget, Incumbent
from ..finish._finish import Finished, judge
from ..finish._polishing import polish_from
from ..finish._result import Status, Stopwatch
from ..finish._verdict import check_point
from ..local._polish import STATIONARY, real_gain, stationarity
from ._options import check_population_memory
from ._plan import make_plan
from ._search import default_pop_size
from ._starts import starts_of

__all__ = ["convex_answer", "applies", "Attempt", "NEAR", "local_history",
           "check_search_options"]

#: A soft side within this share of the box width of the local end is pressed.
NEAR = 1e-3
#: SLSQP runs again from its end at most this many times, while each run gains more
#: than rounding: a fresh start resets its quasi-Newton matrix, which its first run can
#: end with far from the Hessian (a dense QP under many active constraints).
REPOLISH = 3


class Attempt(NamedTuple):
    """What the convex path did: ``fin`` the finished answer (None: the search runs),
    ``used`` evaluations and ``seconds`` spent (counted into the search's run where it
    falls back), ``why`` what it found (for the message and the logs)."""

    fin: Finished | None
    used: int
    seconds: float
    why: str


class _Local(NamedTuple):
    """The ``inst`` fields :func:`constropt.finish._finish.make_result` reads: no
    generations, a history of the one local end."""

    nit: int
    hist_nfev: np.ndarray
    hist_f: np.ndarray
    hist_cv: np.ndarray


def applies(choice, problem, opts, resume=None) -> str | None:
    """None when the convex path may run for ``solve``'s ``local_first=choice``, else
    why not: off, a resumed run, options that ask for the search itself (a checkpoint,
    a per-generation callback), no polish, too many genes.  ``local_first=True`` where
    an option rules it out is an :class:`OptionError`."""
    if choice not in ("auto", True, False):
        raise OptionError(f"local_first must be 'auto', True or False, got {choice!r}")
    why = None
    if choice is False:
        return "local_first=False"
    if resume is not None:
        why = "a resumed run"
    elif opts.checkpoint is not None:
        why = "checkpoint"
    elif opts.callback is not None or opts.on_generation is not None:
        why = "a per-generation callback"
    elif not opts.polish:
        why = "polish=False"
    elif problem.n > MAX_FINISH_GENES:
        why = f"more than {MAX_FINISH_GENES} genes"
    if why is not None and choice is True:
        raise OptionError(f"local_first=True does not apply here: {why}")
    return why


def check_search_options(problem, opts, device, dtype, compile, pvec, settings) -> None:
    """Refuse what the search would refuse before it allocates (the algorithm, the
    handler, ``x0``, the backend, the dtype, a population beyond memory), so that an
    option that is wrong stays an error where the local solve answers: the plan of
    :func:`._plan.make_plan`, the dtype's name, and the population's memory where the
    search would run on NumPy (a torch device's memory needs torch)."""
    plan = make_plan(problem, opts, device, compile, np.reshape(pvec, (-1, 1)), None,
                     settings)
    wdtype = numpy_dtype(dtype, plan.work)  # the torch backend refuses the same names
    if plan.backend != "torch":
        check_population_memory(plan.S, problem.n, 1, wdtype.itemsize,
                                _memory.available_bytes("cpu"))


def _start(problem, opts) -> tuple[np.ndarray, str]:
    """The local solve's start and its name: the first point of ``x0``, else the
    box centre."""
    X = starts_of(problem, opts.x0, opts.pop_size or default_pop_size(opts.algorithm,
                                                                       problem.n))
    if X is not None:
        return X[0].astype(np.float64), "x0"
    return 0.5 * (problem.lower + problem.upper), "the box centre"


def _presses(problem, x) -> bool:
    """Whether ``x`` lies within :data:`NEAR` of the width of a soft side of the box."""
    soft = problem._soft
    if not soft.any:
        return False
    lo, hi = problem.lower, problem.upper
    width = np.maximum(hi - lo, 1e-300)
    return bool(((soft.lower & (x - lo <= NEAR * width)) |
                 (soft.upper & (hi - x <= NEAR * width))).any())


def convex_answer(problem, opts, pvec, deadline, watch: Stopwatch) -> Attempt:
    """The convex path of ``solve`` (module docstring): an :class:`Attempt` whose
    ``fin`` is the finished answer, or None where the search must run."""
    t0 = time.perf_counter()
    # a tenth of max_evals, so that the search keeps its share where the attempt fails
    budget = Budget(None if opts.max_evals is None else opts.max_evals // 10,
                    deadline=deadline)

    def back(why):
        return Attempt(None, budget.used, time.perf_counter() - t0, why)

    with watch.part("check"):
        proof = prove_convex(problem, pvec)
    if not proof.convex:
        return back(f"not proven convex: {proof.why}")
    x, where = _start(problem, opts)
    with watch.part("polish"):
        f, V = check_point(problem, x, pvec)
        budget.spend(1)
        inc = Incumbent(x, f, V, pvec)
        try:
            inc, stop = polish_from(problem, x, inc, budget)
            for _ in range(REPOLISH):  # SLSQP again from its end while that gains
                if stop or not inc.feasible:
                    break
                f_prev = inc.f
                inc, stop = polish_from(problem, inc.x, inc, budget)
                if not real_gain(problem, inc.f, f_prev):
                    break
            if stop or not (inc.feasible and np.isfinite(inc.f)):
                return back("the local solve ended infeasible or out of budget")
            kkt, used = stationarity(problem, inc.x, pvec)
            budget.spend(used)
        except KeyboardInterrupt as exc:  # the best point so far, checked: INTERRUPTED
            inc = getattr(exc, "state", None) or inc
            fin = judge(problem, inc, Status.INTERRUPTED, budget, watch=watch)
            return Attempt(fin, budget.used, time.perf_counter() - t0, "interrupted")
    if not kkt <= STATIONARY:
        return back(f"the local end is no KKT point (residual {kkt:.3g})")
    if _presses(problem, inc.x):
        return back("the local end presses on a soft side of the box")
    how = (f"convex: answered by a local solve (SLSQP with exact derivatives from {where}; "
           f"{proof.why}, so its KKT point is a global minimizer there)")

    def amend(inc_, status, message, checked):
        if status is Status.CONVERGED:
            return status, how
        return status, message

    fin = judge(problem, inc, Status.CONVERGED, budget, amend=amend, watch=watch)
    if not fin.checked.feasible:
        return back("the exact check did not confirm the local end")
    return Attempt(fin, budget.used, time.perf_counter() - t0, how)


def local_history(problem, fin: Finished) -> _Local:
    """The ``inst`` of a convex answer for :func:`constropt.finish._finish.make_result`."""
    sign = -1.0 if problem.maximize else 1.0
    cv = float(fin.V.sum()) if fin.V.size else 0.0
    return _Local(0, np.array([fin.nfev]), np.array([sign * fin.f]), np.array([cv]))
