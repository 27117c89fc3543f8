"""The final check of every mode: certify the returned point, or nudge it until it can be.

:func:`certify_point` checks a final point in exact arithmetic
(:func:`._verify.verify_point`'s rules).  When float64 says feasible but the rigorous
check does not, it tries a few tiny moves into the interior (along the failing
constraints' gradients, Gauss-Newton moves onto them, integer genes by whole units as
exact Python ints) and re-checks each one rigorously; if none is certified the point is
reported infeasible with a message that says so.
"""

from __future__ import annotations

import math
import time
from typing import NamedTuple

import numpy as np

from ..local._polish import rounding_scale
from ..problem._constraints import leaves as tree_leaves
from ..problem._evaluate import report_numpy
from ..problem._rigorous import SATISFIED, UNDEF, VIOLATED
from ._tight import equality_residuals
from ._verify import Verification, evaluate_exact, exact_genes, fun_error, overall

__all__ = ["certify_point", "Certified"]

#: Relative sizes of the repair moves (in units of float64 epsilon times the point's scale).
_STEPS = (2.0, 16.0, 128.0, 2.0**10, 2.0**14, 2.0**20, 2.0**26)
_INT_STEPS = (1, 2, 4)
#: Largest relative change of a gene a Gauss-Newton repair move may make.
_MOST = 1e-7


class Certified(NamedTuple):
    """What :func:`certify_point` returns: the (possibly moved) point and its checks."""

    x: np.ndarray          # (n,) float64
    fun: float             # float64 objective at x
    violations: np.ndarray  # (m,) float64 violations (raised where proven violated)
    verification: Verification
    genes: list            # the exact point: floats and Python ints
    note: str              # "" or why feasibility could not be certified
    evaluations: int = 0   # float64 evaluations of repair candidates

    @property
    def feasible(self) -> bool:
        """What ``Result.feasible`` reports: float64 and exact arithmetic both agree."""
        return self.verification.feasible and self.verification.float64_feasible


def _jacobian(problem, x, pvec):
    """Leaf values and Jacobian at ``x``: ``(C (m,), J (m, n))`` (exact derivative code,
    else a central difference)."""
    fn = problem.lowering.functions("numpy")["leaves"]
    with np.errstate(all="ignore"):
        _, C = fn(x.reshape(-1, 1), pvec.reshape(-1, 1))
    C = np.asarray(C, dtype=np.float64).reshape(-1)
    try:
        g, J = problem.lowering.derivatives("numpy")(x.reshape(-1, 1), pvec.reshape(-1, 1))
        J = np.asarray(J, dtype=np.float64)[..., 0]
    except Exception:  # no derivative code: a central difference of the leaves
        J = _fd_jacobian(problem, x, pvec)
    return C, np.nan_to_num(J, nan=0.0, posinf=0.0, neginf=0.0)


def _directions(problem, J, bad_leaves, vals):
    """Sum of unit moves into the feasible side of every failing leaf, shape (n,)."""
    d = np.zeros(problem.n)
    leaves = problem.leaves
    for k in bad_leaves:
        row = J[k]
        norm = np.max(np.abs(row))
        if not norm > 0:
            continue
        sign = 1.0
        if leaves[k].kind == "eq":
            v = vals[k]
            sign = 1.0 if v is UNDEF or v.is_nan() or not (v < 0) else -1.0
        d -= sign * row / norm
    return d


def _newton_moves(problem, x, C, J, bad_leaves):
    """Least-norm moves that put every failing or active leaf a growing multiple of its
    rounding scale inside its boundary at once (a Gauss-Newton step on the active set):
    inequalities that fail or are active at ``x`` aimed that far below 0, equalities
    aimed that far inside their band ``|h| <= eq_tol`` (those already deeper inside held
    where they are).  Least norm in relative units (each gene over ``max(|x|, 1)``); a
    move that changes a gene by more than :data:`_MOST` of that is skipped (an
    ill-conditioned active set).

    At a vertex where the failing constraints' inward normals nearly oppose each other,
    the sum of unit moves barely moves either; equalities leaning on their band meet the
    same way (the unit move along one pushes its neighbour out at every step size, the
    joint move shifts another gene instead).  Cases behind these rules:
    ``benchmarks/results/finishing_cases.md``."""
    free = ~problem.integer
    if not free.any():
        return
    eq = np.array([lf.kind == "eq" for lf in problem.leaves], dtype=bool)
    Jf = J[:, free]
    size = rounding_scale(Jf, x[free], C)
    # the failing leaves and every other inequality active at x (a vertex: pushing one
    # leaf inside must not push its neighbour out); every equality, each aimed at the
    # nearer of its value and the inner edge of its band
    near = ~eq & np.isfinite(C) & (C > -1e-8 * size)
    near |= eq & np.isfinite(C)
    near[list(bad_leaves)] = True
    rows = np.flatnonzero(near)
    A, scale, Cr, er = Jf[rows], size[rows], C[rows], eq[rows]
    if not np.all(np.isfinite(Cr)):
        return
    tol = float(problem.eq_tol)
    unit = np.maximum(np.abs(x[free]), 1.0)  # least norm in relative units
    for t in _STEPS:
        gap = t * np.finfo(np.float64).eps * scale
        edge = np.maximum(tol - gap, 0.0)
        target = np.where(er, np.clip(Cr, -edge, edge) - Cr, -(Cr + gap))
        try:
            dz = unit * np.linalg.lstsq(A * unit, target, rcond=None)[0]
        except np.linalg.LinAlgError:
            return
        if not np.all(np.abs(dz) <= _MOST * unit):
            continue  # no small move does it: an ill-conditioned active set
        d = np.zeros(problem.n)
        d[free] = dz
        yield d


def _fd_jacobian(problem, x, pvec):
    fn = problem.lowering.functions("numpy")["leaves"]
    P = pvec.reshape(-1, 1)
    h = 1e-7 * np.maximum(1.0, np.abs(x))
    X = np.repeat(x[:, None], 2 * problem.n, axis=1)
    idx = np.arange(problem.n)
    X[idx, 2 * idx] += h
    X[idx, 2 * idx + 1] -= h
    with np.errstate(all="ignore"):
        _, C = fn(X, P)
    C = np.asarray(C, dtype=np.float64).reshape(len(problem.leaves), -1)
    return (C[:, 0::2] - C[:, 1::2]) / (2 * h)


def _candidates(problem, x, genes, d, newton=()):
    """Moved points ``(x, genes)``, smallest changes first: Gauss-Newton moves onto the
    feasible side of the failing leaves, then ulp-scale moves of the continuous genes
    along ``d``, and only then unit moves of the integer genes (a whole unit changes the
    objective: moving ``n`` from 3 to 2 to settle ``x + n <= 5`` at ``x = 2 + 1 ulp``
    cost 0.2 where one ulp of ``x`` cost nothing)."""
    integer = problem.integer
    lo, hi = problem.lower, problem.upper
    for step in newton:
        x2 = np.clip(x + step, lo, hi)
        if np.array_equal(x2, x):
            continue
        g2 = list(genes)
        for k in np.flatnonzero(~integer):
            g2[k] = float(x2[k])
        yield x2, g2
    free = ~integer & (d != 0)
    if free.any():
        scale = np.finfo(np.float64).eps * max(1.0, float(np.max(np.abs(x[free]))))
        for t in _STEPS:
            x2 = x.copy()
            x2[free] = np.clip(x[free] + t * scale * d[free], lo[free], hi[free])
            if np.array_equal(x2, x):
                continue
            g2 = list(genes)
            for k in np.flatnonzero(free):
                g2[k] = float(x2[k])
            yield x2, g2
    ints = np.flatnonzero(integer & (d != 0))
    for m in _INT_STEPS if ints.size else ():
        g2 = list(genes)
        for k in ints:
            g2[k] = genes[k] + (m if d[k] > 0 else -m)
        x2 = x.copy()
        x2[ints] = [float(g2[k]) for k in ints]
        if np.any(x2[ints] < lo[ints]) or np.any(x2[ints] > hi[ints]):
            continue  # never out of the box
        yield x2, g2


def certify_point(problem, x, pvec, fun: float, V: np.ndarray, budget: int | None = None
            ) -> Certified:
    """The final check: rigorous verdicts at ``x``, with a repair when float64 says
    feasible but exact arithmetic cannot certify it.

    Parameters
    ----------
    problem : Problem
    x : ndarray, shape (n,)
    pvec : ndarray, shape (n_params,)
    fun : float
        Float64 objective at ``x``.
    V : ndarray, shape (m,)
        Float64 violations at ``x``.
    budget : int, optional
        Most float64 evaluations the repair may spend (each candidate costs one);
        ``Certified.evaluations`` says how many it did.

    Returns
    -------
    Certified
    """
    t0 = time.perf_counter()
    x = np.asarray(x, dtype=np.float64)
    pvec = np.asarray(pvec, dtype=np.float64).reshape(-1)
    f64 = bool(np.all(V == 0))
    genes = exact_genes(problem, x)
    leaf, cons, obj, vals, bits = evaluate_exact(problem, genes, pvec)
    repaired = False
    used = 0
    if f64 and SATISFIED != overall(cons):
        bad = [k for k, v in enumerate(leaf) if v != SATISFIED]
        C, J = _jacobian(problem, x, pvec)
        d = _directions(problem, J, bad, vals)
        for x2, g2 in _candidates(problem, x, genes, d, _newton_moves(problem, x, C, J, bad)):
            if budget is not None and used >= budget:
                break
            used += 1
            f2, V2 = report_numpy(problem, x2.reshape(-1, 1), pvec)
            if not np.all(V2[:, 0] == 0) or (math.isnan(f2[0]) and not math.isnan(fun)):
                continue  # never a repair outside the objective's domain
            leaf2, cons2, obj2, vals2, bits2 = evaluate_exact(problem, g2, pvec)
            if overall(cons2) == SATISFIED:
                x, genes, fun, V = x2, g2, float(f2[0]), V2[:, 0]
                leaf, cons, obj, vals, bits, repaired = leaf2, cons2, obj2, vals2, bits2, True
                break
    V = np.array(V, dtype=np.float64)
    note = ""
    if f64 and overall(cons) != SATISFIED:
        which = [k for k, c in enumerate(cons) if c != SATISFIED]
        rels = problem.constraints
        parts = [f"constraint {k} ({rels[k]}) {cons[k]}" for k in which[:3]]
        more = f" and {len(which) - 3} more" if len(which) > 3 else ""
        note = ("; feasibility could not be certified: float64 finds the point feasible, "
                f"but exact arithmetic finds {', '.join(parts)}{more}")
        _raise_proven(problem, V, cons, vals)
    ver = Verification(feasible=overall(cons) == SATISFIED, verdicts=tuple(cons),
                       float64_feasible=f64, fun_error=fun_error(fun, obj),
                       repaired=repaired, precision=bits,
                       seconds=time.perf_counter() - t0,
                       residuals=equality_residuals(problem, x, pvec))
    return Certified(x, float(fun), V, ver, genes, note, used)


def _raise_proven(problem, V, cons, vals) -> None:
    """A constraint proven violated that float64 found satisfied gets its proven
    violation (a single leaf) or the smallest positive float (a compound one)."""
    tol = problem.eq_tol
    start = 0
    for k, c in enumerate(problem.lowering.constraints):
        n = len(tree_leaves(c.tree))
        if cons[k] == VIOLATED and V[k] == 0:
            amount = np.finfo(np.float64).tiny
            v = vals[start]
            if n == 1 and v is UNDEF:
                amount = math.inf
            elif n == 1 and not v.is_nan():
                lo = float(v.lower()) if c.tree.kind != "eq" else float(abs(v).lower()) - tol
                amount = max(amount, lo)
            V[k] = amount
        start += n
