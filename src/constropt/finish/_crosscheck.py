"""Cross-check a result against reference solvers, with an honest verdict.

References: ``"scipy"``, multistart SLSQP (exact derivatives from the lowering, started
from the centre and random points of the box, never from constropt's answer) and
``differential_evolution`` with a ``NonlinearConstraint``; ``"scip"``, the SCIP solver
through pyscipopt (optional, :mod:`._scip`).  Every reference point is re-checked with
constropt's own float64 evaluation, so "feasible" means the same thing on both sides;
SCIP's is also checked in exact arithmetic, and its claims of infeasibility are set
against constropt's point.
"""

from __future__ import annotations

import enum
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import sympy as sp

from .._errors import OptionError
from ..local._polish import Counter, polish
from ..problem._evaluate import report_numpy
from ..problem._scipy import ScipyBridge
from ._result import Result
from ._scip import scip_available, scip_reference
from ._tight import finishing_view

__all__ = ["Verdict", "ReferenceRun", "CrossCheck", "cross_check", "references_of",
           "REFERENCES"]

#: The reference solvers a cross-check can run.
REFERENCES = ("scipy", "scip")


class Verdict(enum.Enum):
    """Outcome of a cross-check; each value is the message users read."""

    AGREE = "agree: the best reference optimum matches constropt's within tolerance"
    CONSTROPT_BETTER = "constropt better: the references stopped at worse points"
    DISAGREE = "disagree: a reference found a better feasible point than constropt"
    REFERENCE_FAILED = "reference failed: no reference solver found a feasible point"
    CONSTROPT_INFEASIBLE = ("disagree: constropt's point is infeasible but a reference found "
                            "a feasible one")

    def __str__(self) -> str:
        return self.name.lower().replace("_", " ")


@dataclass(frozen=True)
class ReferenceRun:
    """One reference solver's answer, checked with constropt's float64 evaluation.

    ``nfev`` counts evaluations of constropt's generated functions (SCIP evaluates its
    own model: only constropt's checks and repair of its point count); ``note`` says what
    the solver reported where the numbers do not (SCIP's status, a refuted claim of
    infeasibility, why it did not run), else ``""``.
    """

    method: str
    x: np.ndarray
    fun: float
    feasible: bool
    maxcv: float
    nfev: int
    seconds: float
    note: str = ""


@dataclass(frozen=True)
class CrossCheck:
    """constropt's answer beside scipy's.

    Attributes
    ----------
    verdict : Verdict
    rtol : float
        Agreement tolerance: ``|fun - ref| <= rtol * max(1, |ref|)``.
    fun : float
        constropt's objective (user's sense).
    reference_fun : float or None
        Best feasible reference objective, None if no reference was feasible.
    difference : float or None
        ``fun - reference_fun`` in the user's sense.
    runs : tuple of ReferenceRun
    """

    verdict: Verdict
    rtol: float
    fun: float
    feasible: bool
    reference_fun: float | None
    difference: float | None
    runs: tuple

    @property
    def agrees(self) -> bool:
        """True for AGREE (and CONSTROPT_BETTER, which is not a disagreement)."""
        return self.verdict in (Verdict.AGREE, Verdict.CONSTROPT_BETTER)

    def table(self) -> str:
        """A plain-text table of constropt's answer and each reference run."""
        rows = [("solver", "fun", "feasible", "maxcv", "nfev", "seconds")]
        rows.append(("constropt", f"{self.fun:.10g}", str(self.feasible), "", "", ""))
        for r in self.runs:
            rows.append((r.method, f"{r.fun:.10g}", str(r.feasible), f"{r.maxcv:.2g}",
                         str(r.nfev), f"{r.seconds:.3f}"))
        widths = [max(len(row[k]) for row in rows) for k in range(6)]
        lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows]
        lines.insert(1, "  ".join("-" * w for w in widths))
        lines.extend(f"{r.method}: {r.note}" for r in self.runs if r.note)
        lines.append(f"verdict: {self.verdict.value} (rtol {self.rtol:g})")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()


def _check(problem, x, pvec):
    """Float64 objective (user's sense), feasibility and largest violation at ``x``: the
    check ``solve`` reports with."""
    f, V = report_numpy(problem, np.asarray(x, dtype=np.float64).reshape(-1, 1), pvec)
    V = V[:, 0]
    return float(f[0]), bool(np.all(V == 0)), float(V.max()) if V.size else 0.0


def _multistart(problem, pvec, starts, rng, time_limit):
    t0 = time.perf_counter()
    lo, hi = problem.lower, problem.upper
    best, nfev = None, 0
    points = [(lo + hi) / 2] + [lo + rng.random(lo.size) * (hi - lo) for _ in range(starts - 1)]
    for x0 in points:
        x0 = np.where(problem.integer, np.round(x0), x0)
        x, used = polish(problem, x0, pvec, maxiter=300)
        nfev += used
        f, feas, mcv = _check(problem, x, pvec)
        key = (not feas, mcv, -f if problem.maximize else f)
        if best is None or key < best[0]:
            best = (key, x, f, feas, mcv)
        if time.perf_counter() - t0 > time_limit:
            break
    _, x, f, feas, mcv = best
    return ReferenceRun(f"SLSQP multistart ({len(points)} starts)", x, f, feas, mcv, nfev,
                        time.perf_counter() - t0)


def _de(problem, pvec, seed, maxiter):
    from scipy.optimize import differential_evolution  # scipy.optimize: only when used

    t0 = time.perf_counter()
    counter = Counter()
    bridge = ScipyBridge(problem, pvec, counter=counter)  # the strict-margin rule of all
    fun, constraints = bridge.fun, bridge.nonlinear_constraints()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            res = differential_evolution(
                fun, list(zip(problem.lower, problem.upper)), constraints=constraints,
                seed=seed, maxiter=maxiter, tol=1e-10, polish=True,
                integrality=problem.integer if problem.integer.any() else None)
    x = np.where(problem.integer, np.round(res.x), res.x)
    f, feas, mcv = _check(problem, x, pvec)
    return ReferenceRun("differential_evolution", x, f, feas, mcv, counter.n,
                        time.perf_counter() - t0)


def references_of(value) -> tuple:
    """The reference solvers that ``cross_check=value`` asks for, checked: ``True`` is
    ``("scipy",)``; ``False`` or None none; a name or a sequence of names from
    :data:`REFERENCES`.  ``"scip"`` needs pyscipopt: a missing one is named here, before
    any search runs."""
    if value is None or value is False:
        return ()
    if value is True:
        return ("scipy",)
    items = (value,) if isinstance(value, str) else value
    try:
        items = tuple(items)
    except TypeError:
        raise OptionError(f"cross_check must be True, False, 'scipy', 'scip' or a sequence "
                          f"of those, got {value!r}") from None
    bad = [v for v in items if not (isinstance(v, str) and v in REFERENCES)]
    if bad or not items:
        raise OptionError(f"cross_check must be True, False, 'scipy', 'scip' or a sequence "
                          f"of those, got {value!r}")
    if "scip" in items:
        if not scip_available():
            raise OptionError("cross_check='scip' needs pyscipopt, which is not installed: "
                              'pip install pyscipopt (or pip install "constropt[scip]")')
    return tuple(dict.fromkeys(items))


def cross_check(result: Result, *, references: str | Sequence[str] = ("scipy",),
                rtol: float = 1e-4, starts: int = 20, de: bool = True, de_maxiter: int = 300,
                seed: int = 0, parameters: Mapping[sp.Symbol, float] | None = None,
                time_limit: float = 30.0, scip_time_limit: float = 5.0) -> CrossCheck:
    """Solve the result's problem again with reference solvers and compare.

    Parameters
    ----------
    result : Result
        A result of :func:`constropt.solve`.
    references : str or sequence of str
        ``"scipy"`` (multistart SLSQP and, with ``de``, differential evolution),
        ``"scip"`` (SCIP through pyscipopt: ``pip install "constropt[scip]"``), or both;
        ``True`` means ``("scipy",)``.  SCIP's point is checked by constropt in float64
        and in exact arithmetic, its objective recomputed; a SCIP claim of infeasibility
        where constropt's point is proven feasible counts as a failed reference.
    rtol : float
        Agreement tolerance ``|fun - ref| <= rtol * max(1, |ref|)``.
    starts : int
        SLSQP starts (the first at the centre of the box, the rest uniform in it); none
        starts from constropt's answer, so the references are independent of it.
    de : bool
        Also run ``scipy.optimize.differential_evolution``.
    de_maxiter : int
        Generations for differential evolution.
    seed : int
        Seed of the reference solvers.
    parameters : dict, optional
        Parameter values (default: the problem's own).
    time_limit : float
        Seconds after which the multistart stops starting new runs.
    scip_time_limit : float
        SCIP's time limit in seconds (its ``limits/time``); a run stopped by it reports
        the best point it had.

    Returns
    -------
    CrossCheck
    """
    problem = getattr(result, "problem", None)
    if problem is None:
        raise OptionError("cross_check needs a Result returned by constropt.solve")
    if not (isinstance(starts, int) and starts >= 1):
        raise OptionError(f"starts must be a positive integer, got {starts!r}")
    refs = references_of(references)
    if not refs:
        raise OptionError("cross_check needs at least one reference solver "
                          f"({', '.join(REFERENCES)}), got {references!r}")
    for name, val in (("time_limit", time_limit), ("scip_time_limit", scip_time_limit)):
        if isinstance(val, bool) or not isinstance(val, (int, float)) or not val > 0 \
                or not np.isfinite(val):
            raise OptionError(f"{name} must be a finite number of seconds > 0, got {val!r}")
    pvec = problem.parameter_vector(parameters)
    # tight equalities: the references solve (and are checked on) the same tight
    # problem as the result, never the search's band (a band's optimum would "beat" it)
    problem = finishing_view(problem, result.x_array, pvec)
    rng = np.random.default_rng(seed)
    runs = []
    if "scipy" in refs:
        runs.append(_multistart(problem, pvec, starts, rng, time_limit))
        if de:
            runs.append(_de(problem, pvec, seed, de_maxiter))
    if "scip" in refs:
        runs.append(ReferenceRun(**scip_reference(problem, result, pvec, scip_time_limit)))
    feasible = [r for r in runs if r.feasible]
    sign = -1.0 if problem.maximize else 1.0
    if not feasible:
        ref = None
        verdict = Verdict.REFERENCE_FAILED
    else:
        ref = min(feasible, key=lambda r: sign * r.fun).fun
        if not result.feasible:
            verdict = Verdict.CONSTROPT_INFEASIBLE
        elif abs(result.fun - ref) <= rtol * max(1.0, abs(ref)):
            verdict = Verdict.AGREE
        elif sign * result.fun < sign * ref:
            verdict = Verdict.CONSTROPT_BETTER
        else:
            verdict = Verdict.DISAGREE
    diff = None if ref is None else result.fun - ref
    return CrossCheck(verdict, rtol, result.fun, result.feasible, ref, diff, tuple(runs))
