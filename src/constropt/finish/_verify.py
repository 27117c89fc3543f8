"""Rigorous feasibility of the returned point, in exact arithmetic.

The float64 check (:func:`constropt.finish._verdict.check_point`) decides feasibility in
rounded arithmetic, which is overstated at rounding level.  :func:`verify_point`
re-evaluates every constraint (and the objective) at the exact point with Arb balls
(:mod:`constropt.problem._rigorous`); a constraint is *satisfied* only when its ball lies
on the feasible side (strictly for ``<``/``>``; ``|h| <= eq_tol`` for equalities, or
each equality's tight tolerance: :mod:`._tight`),
*violated* when it lies on the other side (or the value is undefined), else *undecided*
(a rounding-level tie).  The final checks of every mode go through
:func:`._repair.certify_point`, which nudges a point float64 finds feasible until this
check can certify it.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..problem._constraints import AllOf, Leaf
from ..problem._rigorous import (
    SATISFIED,
    UNDECIDED,
    UNDEF,
    VIOLATED,
    program_for,
    verdict_of,
    working_precision,
)
from ._tight import TIGHT_EQ_TOL, is_tight, leaf_tolerances

__all__ = ["Verification", "verify_point", "evaluate_exact", "exact_genes", "fun_error",
           "overall", "PRECISIONS"]

#: Working precisions (bits) tried in turn while some constraint is undecided.
PRECISIONS = (128, 512, 2048)
#: Leaves up to this many operations get a symbolic exact-zero test when undecided.
_SIMPLIFY_OPS = 60


@dataclass(frozen=True)
class Verification:
    """The rigorous (exact-arithmetic) check of a result's point.

    Attributes
    ----------
    feasible : bool
        Every constraint certainly holds at the exact point ``x`` (each float64
        coordinate taken as the exact binary number it is; integer variables as the
        Python ints in ``Result.x``).  ``Result.feasible`` is this and
        ``float64_feasible``: a point the float64 check rejects stays rejected even
        when it is exactly feasible (it can happen at rounding level too).
    verdicts : tuple of str, shape (m,)
        Per constraint: ``"satisfied"`` (proven), ``"violated"`` (proven, or the value
        is undefined) or ``"undecided"`` (the enclosure straddles the boundary even at
        the highest precision tried: a tie at rounding level, such as
        ``sin(x)**2 + cos(x)**2 > 1``).
    float64_feasible : bool
        What the float64 check said at the reported point.
    fun_error : float
        Proven upper bound on ``|fun - f(x)|``, the distance between the reported
        float64 objective and the exact objective at ``x`` (``0.0`` when both are
        undefined, ``inf`` when no bound could be proven).
    repaired : bool
        The point was moved (by a few ulps to ~1e-8 relative, or integer units) to
        certify it; ``x`` is the moved point.
    precision : int
        Bits of Arb working precision of the last evaluation.
    seconds : float
        Time spent in the rigorous check and repair.
    residuals : mapping or None
        ``{equality: |h(x)|}`` at ``x`` (float64; :func:`._tight.equality_residuals`),
        what ``Result.equality_residuals`` reports.
    """

    feasible: bool
    verdicts: tuple
    float64_feasible: bool
    fun_error: float
    repaired: bool = False
    precision: int = PRECISIONS[0]
    seconds: float = 0.0
    residuals: Any = field(default=None, repr=False, compare=False)


def exact_genes(problem, x: np.ndarray) -> list:
    """The exact point: float64 coordinates as floats, integer genes as Python ints."""
    integer = problem.integer
    out = []
    for k, v in enumerate(np.asarray(x, dtype=np.float64).tolist()):
        out.append(int(round(v)) if integer[k] and math.isfinite(v) else v)
    return out


def _combine(node, it) -> str:
    if isinstance(node, Leaf):
        return next(it)
    kids = [_combine(k, it) for k in node.children]
    if isinstance(node, AllOf):
        if VIOLATED in kids:
            return VIOLATED
        return SATISFIED if all(k == SATISFIED for k in kids) else UNDECIDED
    if SATISFIED in kids:  # AnyOf
        return SATISFIED
    return VIOLATED if all(k == VIOLATED for k in kids) else UNDECIDED


def fun_error(fun: float, ball) -> float:
    from flint import arb

    if ball is UNDEF:
        return 0.0 if math.isnan(fun) else math.inf
    if math.isnan(fun) or not ball.is_finite() or not math.isfinite(fun):
        return math.inf
    upper = abs(arb(fun) - ball).upper()
    err = float(upper)  # rounded to nearest: step up when that fell below the bound
    return math.nextafter(err, math.inf) if upper > arb(err) else err


def evaluate_exact(problem, genes, pvec):
    """Leaf verdicts, constraint verdicts, objective ball and precision used."""
    from flint import arb

    prog = program_for(problem)
    kinds = [lf.kind for lf in problem.leaves]
    trees = [c.tree for c in problem.lowering.constraints]
    for bits in PRECISIONS:
        with working_precision(bits):
            xs = [arb(g) if isinstance(g, float) else arb(_fmpz(g)) for g in genes]
            ps = [arb(float(p)) for p in np.asarray(pvec, dtype=np.float64).reshape(-1)]
            vals = prog.run(xs, ps)
            tols = leaf_tolerances(problem, xs, ps)
            leaf = [verdict_of(k, v, t) for k, v, t in zip(kinds, vals[1:], tols,
                                                           strict=True)]
        it = iter(leaf)
        cons = [_combine(t, it) for t in trees]
        if UNDECIDED not in cons:
            break
    else:
        leaf = _settle_exact_zeros(problem, genes, pvec, leaf)
        it = iter(leaf)
        cons = [_combine(t, it) for t in trees]
    return leaf, cons, vals[0], vals[1:], bits


def _settle_exact_zeros(problem, genes, pvec, leaf):
    """Undecided leaves settled by sympy in exact arithmetic at the exact point: a
    value that is a rational number (``Mod(1, 1/3)``, polynomials with rational
    coefficients) is compared exactly; otherwise ``simplify`` returning the literal 0
    (an identity such as ``sin(x)**2 + cos(x)**2 - 1``) is a tie: ``<=`` and ``==``
    hold, ``<`` is violated.  Only scalar problems and small expressions; a symbolic
    proof, never a numerical guess."""
    import sympy as sp

    if problem.has_vector_variables or not all(isinstance(g, int) or math.isfinite(g)
                                               for g in genes):
        return leaf
    point = {b.symbol: sp.Rational(g) if isinstance(g, float) else sp.Integer(g)
             for b, g in zip(problem.layout.blocks, genes, strict=True)}
    point.update({p: sp.Rational(float(v)) for p, v in
                  zip(problem.layout.parameters, np.asarray(pvec).reshape(-1), strict=True)})
    out = list(leaf)
    # tight equalities: the smallest tolerance (a tie settled here is at rounding level)
    tol = sp.Rational(min(float(problem.eq_tol), TIGHT_EQ_TOL) if is_tight(problem)
                      else float(problem.eq_tol))
    for k, lf in enumerate(problem.leaves):
        if leaf[k] != UNDECIDED or sp.count_ops(lf.expr) > _SIMPLIFY_OPS:
            continue
        try:
            e = lf.expr.xreplace({f: sp.Rational(f) for f in lf.expr.atoms(sp.Float)})
            e = e.xreplace(point)
            if not e.is_Rational:  # not plain rational arithmetic: an identity?
                e = sp.Integer(0) if sp.simplify(e) == 0 else None
        except Exception:  # sympy could not decide: stay undecided
            e = None
        if e is None:
            continue
        if lf.kind == "eq":
            ok = abs(e) <= tol
        else:
            ok = e < 0 if lf.kind == "lt" else e <= 0
        out[k] = SATISFIED if ok else VIOLATED
    return out


def _fmpz(v: int):
    from flint import fmpz

    return fmpz(v)


def verify_point(problem, x, pvec, *, fun: float | None = None,
                 float64_feasible: bool = True, genes=None) -> Verification:
    """Check every constraint of ``problem`` rigorously at the exact point ``x``.

    Parameters
    ----------
    problem : Problem
    x : ndarray, shape (n,)
        The point (float64); integer genes are rounded to Python ints.
    pvec : ndarray, shape (n_params,)
        Parameter values (each float64 taken exactly).
    fun : float, optional
        The float64 objective to bound the error of (``fun_error``).
    float64_feasible : bool
        Recorded as is in the verification.
    genes : list, optional
        The exact point (floats and Python ints) overriding ``x``.

    Returns
    -------
    Verification
    """
    t0 = time.perf_counter()
    genes = exact_genes(problem, x) if genes is None else genes
    _, cons, obj, _, bits = evaluate_exact(problem, genes, pvec)
    err = math.inf if fun is None else fun_error(fun, obj)
    return Verification(feasible=all(c == SATISFIED for c in cons), verdicts=tuple(cons),
                        float64_feasible=bool(float64_feasible), fun_error=err,
                        precision=bits, seconds=time.perf_counter() - t0)


def overall(cons) -> str:
    """The verdict of all constraints together: satisfied when every one is, violated
    when one is, else undecided."""
    if all(c == SATISFIED for c in cons):
        return SATISFIED
    return VIOLATED if VIOLATED in cons else UNDECIDED
