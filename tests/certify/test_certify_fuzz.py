"""The fuzz of ``benchmarks/certify_fuzz.py``: random problems with exactly known optima.

Its closed forms are checked here (f* attained at the stated point, exactly; no sampled
feasible point below it), and ``solve(certify=True)`` on 24 of them (four of each
family) must return no lower bound above f* (compared exactly).  The full 1,000 run in
the benchmark (benchmarks/results/certify_fuzz.md).
"""

from __future__ import annotations

import math
import os
import sys
from fractions import Fraction

import mpmath
import numpy as np
import pytest
import sympy as sp

BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "benchmarks")
sys.path.insert(0, BENCH)

import certify_fuzz as F  # noqa: E402

#: Four problems of each family (the family is ``k mod 6``).
QUICK = tuple(range(24))


def _feasible_exact(pk, point) -> bool:
    subs = dict(zip(pk.bounds, point))
    for c in pk.constraints:
        if isinstance(c, sp.Equality):
            if (c.lhs - c.rhs).xreplace(subs) != 0:
                return False
        elif not bool(c.xreplace(subs)):
            return False
    return all(lo <= subs[v] <= hi for v, (lo, hi) in pk.bounds.items())


@pytest.mark.parametrize("k", range(60))
def test_the_stated_point_attains_f_star_exactly(k):
    pk = F.known(k)
    point = [sp.Rational(z.numerator, z.denominator) for z in pk.x_star]
    assert _feasible_exact(pk, point)
    val = pk.objective.xreplace(dict(zip(pk.bounds, point)))
    if isinstance(pk.f_star, Fraction):
        assert val == sp.Rational(pk.f_star.numerator, pk.f_star.denominator)
    else:  # exp / log pieces: 40 digits
        mpmath.mp.dps = 40
        assert abs(mpmath.mpf(sp.N(val, 45)) - pk.f_star) < mpmath.mpf(10) ** -35


@pytest.mark.parametrize("k", range(60))
def test_no_sampled_feasible_point_lies_below_f_star(k):
    """Sampling the box (equality families: the equality's own line) finds nothing
    below the closed form (float64 evaluation: 1e-9 relative for its rounding)."""
    pk = F.known(k)
    rng = np.random.default_rng(1000 + k)
    syms = list(pk.bounds)
    lo = np.array([float(pk.bounds[v][0]) for v in syms])
    hi = np.array([float(pk.bounds[v][1]) for v in syms])
    X = lo + (hi - lo) * rng.random((4000, len(syms)))
    if pk.family == "bilinear_eq":  # y_i = s_i - x_i on the line, within the box
        for c in pk.constraints:
            xv, yv = sorted(c.lhs.free_symbols, key=syms.index)
            i, j = syms.index(xv), syms.index(yv)
            X[:, j] = float(c.rhs) - X[:, i]
    f = sp.lambdify(syms, pk.objective, "numpy")
    ok = np.all((X >= lo - 1e-12) & (X <= hi + 1e-12), axis=1)
    for c in pk.constraints:
        if not isinstance(c, sp.Equality):
            g = sp.lambdify(syms, c.lhs - c.rhs, "numpy")(*X.T)
            ok &= (g <= 0) if isinstance(c, sp.LessThan) else (g >= 0)
    vals = np.broadcast_to(f(*X.T), (X.shape[0],))[ok]
    assert np.all(vals >= pk.f_float - 1e-9 * max(1.0, abs(pk.f_float)))


def test_the_comparison_is_exact():
    third = Fraction(1, 3)
    assert F.above(float(third) + 1e-16, third) is (Fraction(float(third) + 1e-16) > third)
    assert not F.above(-math.inf, Fraction(0)) and F.above(math.inf, Fraction(0))
    assert F.above(math.nan, Fraction(0))


@pytest.mark.parametrize("k", QUICK)
def test_certify_never_returns_a_bound_above_the_exact_optimum(k):
    r = F.run(k, 2.0)
    assert r["kind"] == "bound"  # every fuzz problem is feasible
    assert not r["wrong"], r
