"""Tight equalities (``eq_tol=None``, the default): each equality's tolerance at a point.

With tight equalities the search works in the band ``|h| <= problem.eq_tol``
(:data:`constropt.problem._problem.SEARCH_EQ_TOL`): sampling cannot land on a manifold.
The finishing steps must not profit from that band, so they run on
:func:`finishing_view`: the same problem (the same generated code and caches) whose
``eq_tol``, the band every finishing step reads (the SLSQP polish, the Newton
restoration, the repair moves, the float64 check), is the tight tolerance at the
search's best point.  The exact check (:func:`constropt.finish._verify.evaluate_exact`)
holds each equality ``h == 0`` to its own tolerance at the returned point,

    ``tol(x) = min(TIGHT_EQ_TOL * s(x), band)``,  ``s(x) = 1 + sum_k |t_k(x)|``,

``t_k`` the terms of the sum ``h = lhs - rhs`` (rounding in a sum of large terms is
relative to their size, not to the sum's), ``band`` the search band: a tight point is
never looser than the band, so the relaxations built on the band (bound propagation,
the certificates) still enclose every point the result accepts.  The tolerance is an
Arb ball's lower end rounded down to a float: a rigorous verdict on a tolerance at most
the one defined.
"""

from __future__ import annotations

import math
import weakref

import numpy as np
import sympy as sp

from ..local._newton import restore
from ..problem._constraints import leaves as tree_leaves
from ..problem._evaluate import report_numpy
from ..problem._rigorous import _PROGRAMS, UNDEF, Program, program_for, working_precision
from ._budget import KEEP_BACK
from ._verdict import check_point

__all__ = ["TIGHT_EQ_TOL", "is_tight", "search_band", "finishing_view", "leaf_tolerances",
           "scales", "equality_residuals", "tight_note", "project_tight", "certify_view"]

#: Relative tolerance of a tight equality: ``|h| <= TIGHT_EQ_TOL * (1 + sum_k |t_k|)``.
TIGHT_EQ_TOL = 1e-9

_SCALES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # lowering -> Program


def is_tight(problem) -> bool:
    """Whether ``problem`` holds its equalities tightly (``eq_tol=None``)."""
    return bool(getattr(problem, "_tight", False))


def search_band(problem) -> float:
    """The band of the search (``problem.eq_tol`` of the problem as built; a finishing
    view keeps it aside)."""
    return float(getattr(problem, "_eq_band", problem.eq_tol))


def _eq_leaves(problem) -> list:
    return [k for k, lf in enumerate(problem.leaves) if lf.kind == "eq"]


def _scale_program(problem) -> Program:
    """The Arb program of ``sum_k |t_k|`` of every equality leaf (leaf order), cached."""
    key = problem.lowering
    prog = _SCALES.get(key)
    if prog is None:
        roots = [sp.Add(*[sp.Abs(t) for t in sp.Add.make_args(problem.leaves[k].expr)])
                 for k in _eq_leaves(problem)]
        prog = _SCALES[key] = Program(roots, problem.layout)
    return prog


def _tolerance(ball, band: float) -> float:
    """``min(TIGHT_EQ_TOL * (1 + ball), band)`` as a float at most its exact value."""
    from flint import arb

    if ball is UNDEF or not ball.is_finite():
        return min(TIGHT_EQ_TOL, band)
    lo = float((arb(TIGHT_EQ_TOL) * (1 + ball)).lower())
    return min(math.nextafter(lo, 0.0) if lo > 0 else TIGHT_EQ_TOL, band)


def leaf_tolerances(problem, xs, ps) -> list:
    """Per leaf, the tolerance (an Arb number) of ``|h| <= tol`` at the exact point
    ``xs`` (Arb genes), parameters ``ps``, inside the caller's working precision:
    ``problem.eq_tol`` for every leaf unless the equalities are tight (None for an
    inequality there)."""
    from flint import arb

    L = len(problem.leaves)
    if not is_tight(problem):
        return [arb(float(problem.eq_tol))] * L
    out: list = [None] * L
    band = search_band(problem)
    vals = _scale_program(problem).run(xs, ps)
    for k, v in zip(_eq_leaves(problem), vals, strict=True):
        out[k] = arb(_tolerance(v, band))
    return out


def scales(problem, x, pvec) -> np.ndarray:
    """``s(x) = 1 + sum_k |t_k(x)|`` of every equality leaf at one float64 point (inf
    where undefined)."""
    from flint import arb

    with working_precision(64):
        xs = [arb(float(v)) for v in np.asarray(x, dtype=np.float64).reshape(-1)]
        ps = [arb(float(p)) for p in np.asarray(pvec, dtype=np.float64).reshape(-1)]
        vals = _scale_program(problem).run(xs, ps)
    return np.array([math.inf if v is UNDEF or not v.is_finite() else 1.0 + float(v.mid())
                     for v in vals], dtype=np.float64)


def finishing_view(problem, X=None, M=None):
    """The problem the finishing steps work on: ``problem`` itself unless its equalities
    are tight; then a shallow copy (same code, same caches) whose ``eq_tol`` is the tight
    tolerance at the points ``X`` ((N,) or (N, B), parameters ``M``), the smallest over
    the equalities and the points (``TIGHT_EQ_TOL`` without points).  A view's view is
    itself."""
    if not is_tight(problem) or hasattr(problem, "_eq_band") or not _eq_leaves(problem):
        return problem
    band = float(problem.eq_tol)
    tol = min(TIGHT_EQ_TOL, band)
    if X is not None:
        X = np.asarray(X, dtype=np.float64).reshape(problem.n, -1)
        Mm = np.asarray(M, dtype=np.float64).reshape(-1, X.shape[1]) if M is not None and \
            np.size(M) else np.zeros((0, X.shape[1]))
        s = min(float(np.min(scales(problem, X[:, b], Mm[:, b]))) for b in range(X.shape[1]))
        if math.isfinite(s):
            tol = min(max(TIGHT_EQ_TOL * s, tol), band)
    view = object.__new__(type(problem))
    view.__dict__.update(problem.__dict__)
    view._eq_band, view._eq_tol = band, tol
    _PROGRAMS[view] = program_for(problem)  # the same exact-arithmetic program
    return view


def _eq_keys(problem) -> dict:
    """``{leaf index: key}`` of the equality leaves: the user's constraint where it is
    that one equality, else ``Eq(h, 0)`` of the leaf."""
    keys, start = {}, 0
    rels = problem.constraints
    for j, c in enumerate(problem.lowering.constraints):
        n = len(tree_leaves(c.tree))
        for k in range(start, start + n):
            if problem.leaves[k].kind == "eq":
                keys[k] = rels[j] if n == 1 else sp.Eq(problem.leaves[k].expr, 0)
        start += n
    return keys


def equality_residuals(problem, x, pvec) -> dict:
    """``{equality: |h(x)|}`` of every equality leaf at the float64 point ``x`` (its
    generated float64 value; NaN where undefined), keyed by the user's constraint (an
    equality under ``And``/``Or``: ``Eq(h, 0)``)."""
    keys = _eq_keys(problem)
    if not keys:
        return {}
    fn = problem.lowering.functions("numpy")["leaves"]
    with np.errstate(all="ignore"):
        _, C = fn(np.asarray(x, dtype=np.float64).reshape(-1, 1),
                  np.asarray(pvec, dtype=np.float64).reshape(-1, 1))
    C = np.asarray(C, dtype=np.float64).reshape(-1)
    return {key: float(abs(C[k])) for k, key in keys.items()}


def _band_view(problem):
    """``problem`` judged with the search band (the float64 check of the band)."""
    view = object.__new__(type(problem))
    view.__dict__.update(problem.__dict__)
    view._eq_tol = search_band(problem)
    return view


def tight_note(problem, x, pvec) -> str:
    """What the message of an infeasible final point adds where its equalities hold
    within the search band but not tightly ("" elsewhere)."""
    if not is_tight(problem):
        return ""
    res = equality_residuals(problem, x, pvec)
    if not res:
        return ""
    band = search_band(problem)
    _, V = report_numpy(_band_view(problem), np.reshape(x, (-1, 1)), np.asarray(pvec))
    if not np.all(V == 0):  # not even within the band: infeasible, nothing to add
        return ""
    worst = max(res, key=lambda k: res[k] if res[k] == res[k] else math.inf)
    return (f"; the equalities hold only within the search band |h| <= {band:g}, not "
            f"tightly (|h| = {res[worst]:.3g} at {worst}, tolerance {TIGHT_EQ_TOL:g} times "
            f"its scale): pass eq_tol={band:g} to accept such a point")


def project_tight(view, inc, budget):
    """The last finishing step of tight equalities: Gauss-Newton steps from the
    incumbent ``inc`` onto ``h = 0`` for every equality, and onto the feasible side of
    any violated inequality (:func:`constropt.local._newton.restore` on the finishing
    ``view``).  SLSQP ends with ``|h|`` near its own tolerance, and a point the search
    left in the band is not feasible in the view at all.  The projected point replaces
    the incumbent where it is feasible and, from a feasible incumbent, holds the
    equalities closer to exact.  Not run once the budget or its deadline is spent.
    Returns the incumbent."""
    if not is_tight(view) or not _eq_leaves(view) or not budget.room(KEEP_BACK + 2) or \
            budget.expired():
        return inc
    x, used = restore(view, inc.x, inc.pvec, budget.lend())
    budget.spend(used)
    if used <= 1:
        return inc
    f, V = check_point(view, x, inc.pvec)
    budget.spend(1)
    if not np.all(V == 0) or (np.isnan(f) and not np.isnan(inc.f)):
        return inc  # never a point outside the objective's domain for one inside it
    if inc.feasible:
        before = max(equality_residuals(view, inc.x, inc.pvec).values())
        if not max(equality_residuals(view, x, inc.pvec).values()) < before:
            return inc
    return inc.at(x, f, V)


def certify_view(problem, pvec):
    """The problem a certificate relaxes: ``problem`` itself unless its equalities are
    tight; then a copy whose ``eq_tol`` is ``min(band, TIGHT_EQ_TOL * (1 + S))``, ``S`` a
    rigorous upper bound of every equality's ``sum_k |t_k|`` over the search box (Arb
    balls over the box, rounded up): at least the tolerance of every point the result
    accepts in the box, so the relaxed feasible set encloses the tight one and the
    certificate's bound holds for it."""
    from flint import arb

    if not is_tight(problem) or not _eq_leaves(problem):
        return problem
    band = search_band(problem)
    lo, hi = problem.lower, problem.upper
    tol = band
    if np.all(np.isfinite(lo)) and np.all(np.isfinite(hi)):
        with working_precision(64):
            xs = [arb(float(a)).union(arb(float(b))) for a, b in zip(lo, hi, strict=True)]
            ps = [arb(float(p)) for p in np.asarray(pvec, dtype=np.float64).reshape(-1)]
            vals = _scale_program(problem).run(xs, ps)
            if all(v is not UNDEF and v.is_finite() for v in vals):
                top = max(float((arb(TIGHT_EQ_TOL) * (1 + v)).upper()) for v in vals)
                tol = min(band, math.nextafter(top, math.inf))
    view = object.__new__(type(problem))
    view.__dict__.update(problem.__dict__)
    view._eq_band, view._eq_tol = band, tol
    _PROGRAMS[view] = program_for(problem)
    return view
