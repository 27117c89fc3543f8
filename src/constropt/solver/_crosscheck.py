"""Cross-check a result against scipy reference solvers, with an honest verdict.

References: multistart SLSQP (exact derivatives from the lowering, started from the
centre and random points of the box, never from constropt's answer) and
``differential_evolution`` with a ``NonlinearConstraint``.  Every reference point is
re-checked with constropt's own float64 evaluation, so "feasible" means the same thing
on both sides.
"""

from __future__ import annotations

import enum
import time
import warnings
from dataclasses import dataclass

import numpy as np

from .._errors import OptionError

__all__ = ["Verdict", "ReferenceRun", "CrossCheck", "cross_check"]


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
    """One reference solver's answer, checked with constropt's float64 evaluation."""

    method: str
    x: np.ndarray
    fun: float
    feasible: bool
    maxcv: float
    nfev: int
    seconds: float


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
        lines.append(f"verdict: {self.verdict.value} (rtol {self.rtol:g})")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()


def _check(problem, x, pvec):
    """Float64 objective (user's sense), feasibility and largest violation at ``x``: the
    check ``solve`` reports with."""
    from ..problem._evaluate import report_numpy

    f, V = report_numpy(problem, np.asarray(x, dtype=np.float64).reshape(-1, 1), pvec)
    V = V[:, 0]
    return float(f[0]), bool(np.all(V == 0)), float(V.max()) if V.size else 0.0


def _multistart(problem, pvec, starts, rng, time_limit):
    from ._polish import polish

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
    from scipy.optimize import differential_evolution

    from ._polish import Counter
    from ._scipy import ScipyBridge

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


def cross_check(result, *, rtol: float = 1e-4, starts: int = 20, de: bool = True,
                de_maxiter: int = 300, seed: int = 0, parameters=None,
                time_limit: float = 30.0) -> CrossCheck:
    """Solve the result's problem again with scipy and compare.

    Parameters
    ----------
    result : Result
        A result of :func:`constropt.solve`.
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

    Returns
    -------
    CrossCheck
    """
    problem = getattr(result, "problem", None)
    if problem is None:
        raise OptionError("cross_check needs a Result returned by constropt.solve")
    if not (isinstance(starts, int) and starts >= 1):
        raise OptionError(f"starts must be a positive integer, got {starts!r}")
    pvec = problem.parameter_vector(parameters)
    rng = np.random.default_rng(seed)
    runs = [_multistart(problem, pvec, starts, rng, time_limit)]
    if de:
        runs.append(_de(problem, pvec, seed, de_maxiter))
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
