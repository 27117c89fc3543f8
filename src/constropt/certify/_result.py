"""Results of a certified solve: the proof-of-infeasibility Result and the fields the
branch-and-bound adds (:mod:`._bnb`)."""

from __future__ import annotations

import math
import sys
import time
import warnings
from dataclasses import replace

import numpy as np

from ..engine._status import Status
from ..finish._budget import Budget, Incumbent
from ..finish._polishing import polish_from
from ..finish._repair import certify_point
from ..finish._result import History, Result, add_up
from ..finish._tight import certify_view, finishing_view, project_tight
from ..finish._verdict import check_point, point_dict
from ..local._polish import BudgetSpent, Counter
from ..problem._evaluate import report_numpy
from ..problem._scipy import ScipyBridge, conjunctive_leaves
from ._bnb import AUTO_MAX_VARS, certify, certify_option

__all__ = ["certify_result", "proof_result"]


#: Points sampled in the box (the centre first) for the least-violating point of a
#: problem proven infeasible, local solves from the best of them, and the evaluations
#: each local solve may spend.
LEAST_SAMPLES, LEAST_STARTS, LEAST_EVALS = 16, 3, 300
#: Evaluations and seconds one local solve for an incumbent inside the
#: branch-and-bound may spend at most (:func:`local_incumbents`; the branch-and-bound
#: gives each fewer seconds, see :data:`._incumbents.INCUMBENT_SHARE`).
INCUMBENT_EVALS, INCUMBENT_SECONDS = 400, 1.0


def _total(problem, X, pvec):
    """Total violation of each column of ``X`` (N, S) (NaN and inf read as inf)."""
    _, V = report_numpy(problem, X, pvec)
    tot = np.sum(V, axis=0)
    return np.where(np.isfinite(tot), tot, np.inf)


def _phase_one(problem, x0, pvec, limit: int):
    """SLSQP on the total violation from ``x0``: minimize ``sum(s)`` over ``(x, s)``
    subject to ``c(x) <= s`` (inequalities), ``|h(x)| - eq_tol <= s`` (equalities),
    ``s >= 0``, ``x`` in the box, integer genes held.  Returns ``(x, evaluations)``."""
    from scipy.optimize import minimize

    free = np.flatnonzero(~problem.integer)
    counter = Counter(limit)
    bridge = ScipyBridge(problem, pvec, free=free, x_fixed=x0, counter=counter)
    conj = np.array(conjunctive_leaves(problem), dtype=int)
    if not (bridge.exact and free.size and conj.size):
        return x0, 0
    eq = np.array([problem.leaves[k].kind == "eq" for k in conj], dtype=bool)
    band = (1.0 - 1e-3) * problem.eq_tol
    nf, L = free.size, conj.size

    def rows(z):  # the leaves' excess over their feasible side, and its Jacobian
        C = bridge.values(z[:nf])[1][conj]
        J = bridge.derivatives(z[:nf])[1][conj]
        C = np.where(eq, np.abs(C) - band, C)
        J = np.where(eq[:, None], np.sign(bridge.values(z[:nf])[1][conj])[:, None] * J, J)
        return C, J

    def cons(z):
        C, _ = rows(z)
        return np.where(np.isfinite(C), z[nf:] - C, -1e300)

    def cons_jac(z):
        _, J = rows(z)
        return np.hstack([-np.nan_to_num(J, nan=0.0, posinf=0.0, neginf=0.0), np.eye(L)])

    C0, _ = rows(np.concatenate([x0[free], np.zeros(L)]))
    if not np.all(np.isfinite(C0)):
        return x0, counter.n
    z0 = np.concatenate([x0[free], np.maximum(C0, 0.0)])
    bounds = [(problem.lower[k], problem.upper[k]) for k in free] + [(0.0, None)] * L
    grad = np.concatenate([np.zeros(nf), np.ones(L)])
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            res = minimize(lambda z: float(np.sum(z[nf:])), z0, jac=lambda z: grad,
                           bounds=bounds, method="SLSQP", options={"maxiter": 100},
                           constraints=[{"type": "ineq", "fun": cons, "jac": cons_jac}])
        z = res.x
    except (BudgetSpent, ValueError, np.linalg.LinAlgError):
        z = counter.last if counter.last is not None else z0[:nf]
    x = x0.copy()
    x[free] = np.clip(np.asarray(z[:nf], dtype=np.float64), problem.lower[free],
                      problem.upper[free])
    return x, counter.n


def least_violating(problem, pvec, seed, max_evals=None):
    """The least-violating point of a problem proven infeasible, with no search run:
    the best of :data:`LEAST_SAMPLES` points of the box (the centre first) by total
    violation, then a local minimization of the total violation from the best
    :data:`LEAST_STARTS` of them, within ``max_evals`` evaluations in all (None: no
    limit but their own; the final check of ``x`` is left one).  Returns ``(x,
    evaluations)``."""
    lo, hi = problem.lower, problem.upper
    finite = np.isfinite(lo) & np.isfinite(hi)
    centre = np.where(finite, 0.5 * (lo + hi), np.clip(0.0, lo, hi))
    rng = np.random.default_rng(seed)
    width = np.where(finite, hi - lo, 0.0)
    samples = LEAST_SAMPLES if max_evals is None else max(1, min(LEAST_SAMPLES,
                                                                  max_evals - 1))
    X = np.column_stack([centre] + [np.where(finite, lo + rng.random(lo.size) * width,
                                             centre) for _ in range(samples - 1)])
    X = np.where(problem.integer[:, None], np.clip(np.round(X), lo[:, None], hi[:, None]), X)
    P = np.asarray(pvec, dtype=np.float64).reshape(-1)
    tot = _total(problem, X, P)
    used = X.shape[1]
    best = int(np.argmin(tot))
    x_best, v_best = X[:, best], tot[best]
    for k in np.argsort(tot, kind="stable")[:LEAST_STARTS]:
        limit = LEAST_EVALS if max_evals is None else min(LEAST_EVALS, max_evals - used - 2)
        if limit < 2:
            break
        x, spent = _phase_one(problem, X[:, k].copy(), P, limit)
        v = _total(problem, x.reshape(-1, 1), P)[0]
        used += spent + 1
        if v < v_best:
            x_best, v_best = x, v
    return x_best, used


def proof_result(problem, proof, pvec, seed: int, device: str, t_start: float,
                 t_lower: float, max_evals=None):
    """The Result of a solve whose constraints were proven infeasible before any search:
    status INFEASIBLE, the least-violating point a short local minimization of the total
    violation finds as ``x`` (:func:`least_violating`), ``certificate=proof``."""
    x, used = least_violating(problem, pvec, seed, max_evals)
    t_check = time.perf_counter()
    f, V = check_point(problem, x, pvec)
    total = time.perf_counter() - t_start
    check = time.perf_counter() - t_check
    empty = np.zeros(0)
    return Result(
        x=point_dict(problem, x), x_array=x, variables=problem.variables, fun=f,
        feasible=False, maxcv=float(V.max()) if V.size else 0.0, violations=V,
        success=False, status=Status.INFEASIBLE,
        message=(f"{Status.INFEASIBLE.value} (proven: {proof.statement}; no search run: "
                 "x minimizes the total violation locally, from the best of sampled "
                 "points of the box)"),
        nit=0, nfev=used + 1, seed=seed, device=device,  # + the final check
        # the same parts as every Result (they add up to total); setup holds the proof
        timings={"import": 0.0, "lowering": t_lower,
                 "setup": max(0.0, total - t_lower - check), "compile": 0.0, "search": 0.0,
                 "polish": 0.0, "check": check, "total": total},
        history=History(empty.astype(np.int64), empty, empty), problem=problem,
        certificate=proof)


def local_incumbents(problem, pvec):
    """The branch-and-bound's local solver for incumbents (``improve`` of
    :func:`~._bnb.certify`): SLSQP from a box's LP point over the whole search box of
    ``problem`` (the problem as the Result reports it, not the certificate's relaxed
    view), in the forms and at the margins of the search's own polish
    (:func:`constropt.finish._polishing.polish_from`); its end is accepted only when the
    float64 check finds it feasible and the exact check of a returned point
    (:func:`constropt.finish._repair.certify_point`) certifies it, and its objective is
    below ``U`` (minimization sense).  ``improve(x0, U, seconds)`` returns ``(f, x,
    Certified)`` or None."""
    P = np.asarray(pvec, dtype=np.float64).reshape(-1)
    sign = -1.0 if problem.maximize else 1.0

    def improve(x0, U, seconds=INCUMBENT_SECONDS):
        x0 = np.clip(np.asarray(x0, dtype=np.float64), problem.lower, problem.upper)
        view = finishing_view(problem, x0, P)  # tight equalities: their tight band
        f0, V0 = check_point(view, x0, P)
        seconds = min(seconds, INCUMBENT_SECONDS)
        budget = Budget(INCUMBENT_EVALS, deadline=time.perf_counter() + seconds)
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                inc, _ = polish_from(view, x0, Incumbent(x0, f0, V0, P), budget)
                inc = project_tight(view, inc, budget)
        except (BudgetSpent, ValueError, ArithmeticError, np.linalg.LinAlgError):
            return None
        x = np.asarray(inc.x, dtype=np.float64)
        view = finishing_view(problem, x, P)  # the band of the point, as judge() has it
        f, V = check_point(view, x, P)
        if not (np.all(V == 0) and math.isfinite(f) and sign * f < U):
            return None
        checked = certify_point(view, x, P, f, V, budget=16)
        if not checked.feasible or not sign * checked.fun < U:
            return None
        return sign * checked.fun, checked.x, checked
    return improve


def _adopt(result, problem, checked, message_note: str):
    """The fields of ``result`` for the better point ``checked`` (a
    :class:`~constropt.finish._repair.Certified`) the branch-and-bound found."""
    x = np.asarray(checked.x, dtype=np.float64)
    V = checked.violations
    fields = dict(x=point_dict(problem, x, checked.genes), x_array=x, fun=checked.fun,
                  feasible=True, maxcv=float(V.max()) if V.size else 0.0, violations=V,
                  verification=checked.verification,
                  equality_residuals=getattr(checked.verification, "residuals", None) or {})
    if not result.feasible:  # the search found no feasible point; the certificate did
        fields.update(status=Status.CONVERGED, success=True,
                      message=f"{Status.CONVERGED.value}; {message_note}")
    else:
        fields.update(message=f"{result.message}; {message_note}")
    return fields


def certify_result(result, problem, pvec, opts, dev, t_start: float):
    """``result`` with ``lower_bound``, ``gap`` and ``certificate`` from :func:`certify`
    (unchanged when ``certify="auto"`` finds the problem too large).

    Its timings gain ``certify`` (the branch-and-bound, set-up included) and, on a
    process's first use of torch, its import in ``import``; they add up to ``total``.  A
    Ctrl-C during the branch-and-bound gives status ``INTERRUPTED`` with the bound proven
    so far (``certificate.complete`` False).  A certificate that proves no point of the
    search box feasible turns a search cut short by a budget into ``INFEASIBLE``.
    """
    target, seconds, auto = certify_option(opts.certify)
    if auto and (problem.n > AUTO_MAX_VARS or problem.has_vector_variables):
        return result
    t0 = time.perf_counter()
    timings = dict(result.timings)
    if "torch" not in sys.modules:  # the branch-and-bound runs on torch
        import torch  # noqa: F401  (timed: the first use of torch in a process pays this)

        timings["import"] = timings.get("import", 0.0) + time.perf_counter() - t0
    t1 = time.perf_counter()
    inc = result.fun if result.feasible else math.nan
    # tight equalities: relaxed to the largest tolerance the box allows, not the band
    cert = certify(certify_view(problem, pvec), pvec, inc, result.x_array, gap=target,
                   time_limit=seconds if seconds is not None else opts.certify_time,
                   device=dev, improve=local_incumbents(problem, pvec))
    timings["certify"] = time.perf_counter() - t1
    timings = add_up(timings, t_start)
    fields = {"certificate": cert, "timings": timings}
    if cert.kind == "infeasible":
        if not result.feasible and result.status is not Status.INFEASIBLE and \
                result.status is not Status.INTERRUPTED:
            fields.update(status=Status.INFEASIBLE, success=False, message=(
                f"{Status.INFEASIBLE.value} (proven by the branch-and-bound: "
                f"{cert.statement}; search ended: {result.status.value})"))
        return replace(result, **fields)
    fields.update(lower_bound=cert.lower_bound, gap=cert.gap)
    if cert.found is not None:  # a better point from the branch-and-bound's local solves
        fields.update(_adopt(result, problem, cert.found,
                             "x improved by a local solve inside the certificate's "
                             "branch-and-bound"))
    if not cert.complete:
        fields.update(status=Status.INTERRUPTED, success=False, message=(
            f"{Status.INTERRUPTED.value}: Ctrl-C stopped the certificate's branch-and-bound "
            f"after {cert.boxes} boxes; lower_bound is the bound proven so far (the run "
            f"had ended: {result.message})"))
    return replace(result, **fields)
