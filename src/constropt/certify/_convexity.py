"""Whether a whole problem is convex on its box: a proof, never a guess.

A problem is convex on its box when its objective (minimized sense) is convex there,
every inequality leaf ``g <= 0`` (or ``< 0``) has ``g`` convex there, every equality
leaf is affine, no gene is an integer and every leaf must hold (none under an ``Or``).
Then every KKT point in the box is a global minimizer over the box, which is what lets
``solve`` answer it by a local solve (:mod:`constropt.solver._convexfirst`).

Each function (the objective, each leaf) is split into the terms of its top-level sum;
the sum is convex when every part is:

- the terms that are polynomials of degree at most 2 in the variables (parameters
  replaced by their values) are collected, expanded and their constant Hessian is
  built in exact rational arithmetic (a float64 coefficient is a dyadic rational);
  it is proven positive semidefinite exactly (:func:`exact_psd`: a symmetric
  elimination in rationals, sparse, that stops at the first negative pivot or a zero
  pivot with a nonzero column).  An equality must have no such Hessian at all;
- every other term, on problems of at most :data:`INTERVAL_MAX` variables, by its
  interval Hessian over the box (exact derivatives of the lowering's graph, outward
  rounded enclosures on NumPy): every symmetric matrix in it is positive semidefinite
  by scaled Gershgorin discs (:func:`gershgorin_psd`), over the variables the term
  depends on.  A term not twice differentiable on the whole box is not proven.

Anything else (a degree-3 polynomial, ``sin``, a nonaffine equality, a bilinear term
whose Hessian is indefinite) is "not proven", with the first reason found.
"""

from __future__ import annotations

import math
import weakref
from fractions import Fraction
from typing import NamedTuple

import numpy as np
import sympy as sp

from ..lowering._graph import Graph
from ..lowering._interval import IntervalProgram
from ..lowering._interval_model import graph_gradient
from ..lowering._rt_interval import down, up
from ..problem._scipy import conjunctive_leaves

__all__ = ["Convexity", "prove_convex", "prove_convex_for_all", "exact_psd", "gershgorin_psd",
           "INTERVAL_MAX"]

#: Interval Hessians of non-polynomial terms on problems of at most this many variables
#: (the Hessian of a term over its k variables has k**2 nodes).
INTERVAL_MAX = 60
#: Work (rational operations) the exact elimination may spend before it gives up.
EXACT_WORK = 2_000_000
#: Quadratic terms a function may expand into before the exact route gives up.
MAX_TERMS = 200_000


class Convexity(NamedTuple):
    """``convex``: proven convex on the box; ``why``: the reason, or what failed."""

    convex: bool
    why: str


def prove_convex(problem, pvec) -> Convexity:
    """Whether ``problem`` (parameter values ``pvec``) is proven convex on its box."""
    if problem.integer.any():
        return Convexity(False, "integer variables")
    if any(b.shape != () for b in problem.layout.blocks):
        return Convexity(False, "vector variables")
    leaves = problem.leaves
    if len(conjunctive_leaves(problem)) != len(leaves):
        return Convexity(False, "a constraint under Or")
    subs = {s: sp.Rational(float(v)) for s, v in
            zip(problem.layout.parameters, np.reshape(pvec, -1))}
    index = {b.symbol: b.offset for b in problem.layout.blocks}
    objective = -problem.objective if problem.maximize else problem.objective
    pieces = [(None, objective, False)] + [
        (k, lf.expr, lf.kind == "eq") for k, lf in enumerate(leaves)]
    rest = []  # (piece, term) still to prove by interval Hessians
    for k, expr, affine in pieces:
        quad, others = _split(_exact(sp.sympify(expr).xreplace(subs)), index)
        H = None if affine and others else _hessian(quad, index)
        if affine and (others or H is None or
                       any(v != 0 for row in H.values() for v in row.values())):
            return Convexity(False, f"{_name(k, leaves)}: an equality that is not affine")
        if H is None:
            return Convexity(False, f"{_name(k, leaves)}: not expanded (too large, or a "
                                    "coefficient that is not a rational number)")
        if not affine and not exact_psd(H):
            return Convexity(False, f"{_name(k, leaves)}: its quadratic part is not convex")
        rest += [(k, t) for t in others]
    if rest and problem.n > INTERVAL_MAX:
        return Convexity(False, f"{_name(rest[0][0], leaves)}: non-polynomial terms in "
                                f"more than {INTERVAL_MAX} variables")
    for k, term in rest:
        if not _interval_convex(problem, term, index, pvec):
            return Convexity(False, f"{_name(k, leaves)}: the term {term} is not proven "
                                    "convex on the box")
    return Convexity(True, "objective and constraints proven convex on the box")


_FOR_ALL: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # lowering -> {box: proof}


def prove_convex_for_all(problem, M: np.ndarray) -> Convexity:
    """Whether ``problem`` is proven convex on its box for every parameter column of
    ``M`` (n_p, B): the parameters move each function only by an affine function of the
    variables, and the problem is proven convex (:func:`prove_convex`) at ``M[:, 0]``.

    The first part: every term of the top-level sum of the objective and of each leaf
    that holds a parameter has second derivatives in the variables (sympy, exact) free
    of the parameters.  Then ``f(x; p) - f(x; p0)`` has a zero Hessian on the box, so it
    is affine there, and convexity at ``p0`` is convexity at every ``p`` (``(x - r)**2``
    and ``x**2 - r**2`` pass; ``r * x**2``, ``Abs(x - r)`` or ``exp(r * x)`` do not).
    Cached per lowering and box: a parametric sweep asks once."""
    box = (problem.lower.tobytes(), problem.upper.tobytes(), bool(problem.maximize))
    seen = _FOR_ALL.setdefault(problem.lowering, {})
    if box not in seen:
        seen[box] = _for_all(problem, M)
    return seen[box]


def _for_all(problem, M) -> Convexity:
    params = set(problem.layout.parameters)
    variables = {b.symbol for b in problem.layout.blocks}
    pieces = [(None, problem.objective)] + [(k, lf.expr) for k, lf in enumerate(problem.leaves)]
    for k, expr in pieces:
        for t in sp.Add.make_args(sp.sympify(expr)):
            if not (t.free_symbols & params):
                continue
            vs = sorted(t.free_symbols & variables, key=str)
            for i, a in enumerate(vs):
                for b in vs[i:]:
                    d = sp.diff(t, a, b)
                    if d.free_symbols & params or d.has(sp.Derivative):
                        return Convexity(False, f"{_name(k, problem.leaves)}: its curvature "
                                                f"depends on a parameter (in {t})")
    return prove_convex(problem, np.asarray(M, dtype=np.float64).reshape(len(params), -1)[:, 0]
                        if params else np.zeros(0))


def _name(k, leaves) -> str:
    """The objective (``k`` None) or constraint leaf ``k``, for a reason."""
    if k is None:
        return "the objective"
    lf = leaves[k]
    return f"constraint leaf {k} ({lf.expr} {'== 0' if lf.kind == 'eq' else '<= 0'})"


# -- polynomial terms of degree <= 2: exact ------------------------------------------------

def _exact(expr):
    """``expr`` with every float replaced by its exact (dyadic) rational value, so that
    expanding it rounds nothing."""
    floats = expr.atoms(sp.Float)
    return expr.xreplace({f: sp.Rational(f) for f in floats}) if floats else expr


def _degree(e, index) -> float:
    """An upper bound of the polynomial degree of ``e`` in the variables (inf: not a
    polynomial in them)."""
    if e in index:
        return 1
    if not (e.free_symbols & index.keys()):
        return 0
    if isinstance(e, sp.Add):
        return max(_degree(a, index) for a in e.args)
    if isinstance(e, sp.Mul):
        return sum(_degree(a, index) for a in e.args)
    if isinstance(e, sp.Pow) and e.exp.is_Integer and e.exp >= 0:
        return int(e.exp) * _degree(e.base, index)
    return math.inf


def _split(expr, index):
    """``(quadratic terms, other terms)`` of ``expr``'s top-level sum: the terms of degree
    exactly 2 in the variables (affine ones leave the Hessian alone), and those of
    degree above 2 or not polynomials."""
    quad, others = [], []
    for t in sp.Add.make_args(expr):
        d = _degree(t, index)
        if d == 2:
            quad.append(t)
        elif d > 2:
            others.append(t)
    return quad, others


def _hessian(quad, index):
    """The constant Hessian of the sum of the terms ``quad`` (polynomials of degree <= 2)
    as exact rationals, ``{i: {j: value}}`` (symmetric, nonzeros only); None when they
    expand into more than :data:`MAX_TERMS` terms or a coefficient is not a rational
    number."""
    H: dict = {}

    def add(i, j, v):
        row = H.setdefault(i, {})
        row[j] = row.get(j, Fraction(0)) + v

    terms = [e for q in quad for e in sp.Add.make_args(sp.expand(q))]
    if len(terms) > MAX_TERMS:
        return None
    for t in terms:
        coeff, factors = t.as_coeff_mul()
        powers: dict = {}
        rest = sp.Integer(1)
        for fct in factors:
            base, k = fct.as_base_exp()
            if base in index and k.is_Integer:
                powers[index[base]] = powers.get(index[base], 0) + int(k)
            else:
                rest *= fct
        if sum(powers.values()) < 2:
            continue  # affine terms do not change the Hessian
        c = coeff * rest
        if not c.is_Rational:
            return None  # a coefficient such as sqrt(2): not exact here
        c = Fraction(int(c.p), int(c.q))
        ks = sorted(powers)
        if len(ks) == 1:
            add(ks[0], ks[0], 2 * c)
        else:
            add(ks[0], ks[1], c)
            add(ks[1], ks[0], c)
    return H


def exact_psd(H: dict) -> bool:
    """Whether the symmetric rational matrix ``H`` (``{i: {j: value}}``, nonzeros only) is
    positive semidefinite, exactly: symmetric Gaussian elimination, pivots in index
    order; a negative pivot, or a zero pivot with a nonzero entry left in its column,
    proves it is not; False also when the elimination would spend more than
    :data:`EXACT_WORK` operations (not proven)."""
    A = {i: {j: v for j, v in row.items() if v != 0} for i, row in H.items()}
    work = 0
    for k in sorted(A):
        row = A.pop(k)
        d = row.pop(k, Fraction(0))
        if d < 0 or (d == 0 and row):
            return False
        if d == 0:
            continue
        nbrs = [(i, v) for i, v in row.items() if i in A]
        work += len(nbrs) ** 2
        if work > EXACT_WORK:
            return False
        for i, vi in nbrs:
            ri = A[i]
            m = vi / d
            for j, vj in nbrs:
                nv = ri.get(j, Fraction(0)) - m * vj
                if nv == 0:
                    ri.pop(j, None)
                else:
                    ri[j] = nv
            ri.pop(k, None)
    return True


# -- other terms: interval Hessians over the box --------------------------------------------

def _interval_convex(problem, term, index, pvec) -> bool:
    """Whether ``term`` is proven convex on the box by its interval Hessian over the
    variables it depends on (:func:`gershgorin_psd`)."""
    lo = np.asarray(problem.lower, dtype=np.float64)
    hi = np.asarray(problem.upper, dtype=np.float64)
    if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))):
        return False
    idx = sorted(index[s] for s in term.free_symbols if s in index)
    g = Graph(problem.layout)
    node = g.lower(term)
    nvar = len(problem.layout.blocks)
    grad = graph_gradient(g, node, nvar)
    if grad is None:
        return False
    rows = []
    for i in idx:
        r = graph_gradient(g, grad[i], nvar)
        if r is None:
            return False
        rows.append([r[j] for j in idx])
    roots = [node, *(grad[i] for i in idx), *(e for r in rows for e in r)]
    prog = IntervalProgram(g, roots)
    if not all(prog.is_smooth(n) for n in roots):
        return False
    P = np.asarray(pvec, dtype=np.float64).reshape(-1)
    with np.errstate(all="ignore"):  # log(0) on a side: an enclosure flagged NaN / inf
        vals = prog.forward(lo.reshape(-1, 1), hi.reshape(-1, 1), P, only=roots)
    if any(bool(np.any(vals[k].nan)) for k in (node, *(grad[i] for i in idx))):
        return False  # not twice differentiable on the whole box
    c = 0.5 * (lo + hi)
    rad = np.maximum(c - lo, hi - c)[idx]
    return gershgorin_psd(vals, rows, rad)


def gershgorin_psd(vals, rows, rad) -> bool:
    """Whether every symmetric matrix in the interval Hessian is positive semidefinite:
    Gershgorin discs of ``D H D`` (``D = diag(rad)``, the box's radii around its
    centre), in outward rounding (``D_i^2 H_ii - sum_j |D_i D_j H_ij| >= 0``).  ``vals``:
    enclosures by node (:class:`~constropt.lowering._rt_interval.Iv`, on NumPy or torch),
    ``rows``: the Hessian's nodes, ``rad``: one radius per row.  False where an entry may
    be NaN."""
    n = len(rows)
    rad = np.asarray(rad.cpu() if hasattr(rad, "cpu") else rad, dtype=np.float64).reshape(-1)
    for i in range(n):
        diag = vals[rows[i][i]]
        if bool(diag.nan.any()):
            return False
        d_lo = np.float64(float(diag.lo.reshape(())))
        if not d_lo >= 0:
            return False
        dii = down(down(rad[i] * rad[i]) * d_lo)
        off = np.float64(0.0)
        for j in range(n):
            if j == i:
                continue
            e = vals[rows[i][j]]
            if bool(e.nan.any()):
                return False
            m = np.float64(max(abs(float(e.lo.reshape(()))), abs(float(e.hi.reshape(())))))
            off = up(off + up(up(rad[i] * rad[j]) * m))
        if not (math.isfinite(float(off)) and dii >= off):
            return False
    return True
