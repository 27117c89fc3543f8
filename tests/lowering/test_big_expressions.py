"""Big expressions lower and run: code generation and graph building are iterative.

A left-deep chain of a few hundred nodes used to exhaust Python's recursion limit in the
code generator (CEC 2006 G12 written as a ``Min`` over its 729 balls raised
RecursionError); a chain of thousands of ``+`` in one generated line does the same in
Python's own compiler.  Values are checked against NumPy on random points.
"""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

import constropt

x, y, z = sp.symbols("x y z", real=True)
RNG = np.random.default_rng(7)


def _values(problem, pts):
    return problem.evaluate(np.asarray(pts, dtype=float))


@pytest.mark.parametrize("n", [729, pytest.param(5000, marks=pytest.mark.slow)])
def test_min_and_max_of_many_arguments_lower_and_run(n):
    k = np.arange(n)
    a, b = np.cos(k), np.sin(k)
    args = [sp.Float(float(ai)) * x + sp.Float(float(bi)) * y for ai, bi in zip(a, b)]
    lo, hi = sp.Min(*args, evaluate=False), sp.Max(*args, evaluate=False)
    p = constropt.Problem(lo + 2 * hi, [sp.LessThan(hi, 3, evaluate=False)],
                          bounds={x: (-2, 2), y: (-2, 2)})
    pts = RNG.uniform(-2, 2, size=(64, 2))
    vals = pts[:, :1] * a + pts[:, 1:] * b  # (64, 5000)
    ev = _values(p, pts)
    # same float64 operations in another order: rounding differences only
    np.testing.assert_allclose(ev.fun, vals.min(1) + 2 * vals.max(1), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ev.violation[:, 0], np.maximum(vals.max(1) - 3, 0), atol=1e-12)
    # the code generator keeps every reduction shallow: a balanced tree, no long line
    src = p.lowering.source
    assert max(map(len, src.splitlines())) < 200


@pytest.mark.parametrize("n", [1500, pytest.param(10000, marks=pytest.mark.slow)])
def test_sum_of_many_terms_lowers_and_runs(n):
    k = np.arange(1, n + 1)
    def term(j):  # sin(j*x)/j + cos(j*y)/j**2, built unevaluated (sympy is slow here)
        def mul(*a):
            return sp.Mul(*a, evaluate=False)
        return sp.Add(mul(sp.Rational(1, j), sp.sin(mul(j, x), evaluate=False)),
                      mul(sp.Rational(1, j * j), sp.cos(mul(j, y), evaluate=False)),
                      evaluate=False)

    terms = [term(int(j)) for j in k]
    obj = sp.Add(*terms, evaluate=False)
    p = constropt.Problem(obj, bounds={x: (-1, 1), y: (-1, 1)})
    pts = RNG.uniform(-1, 1, size=(8, 2))
    ref = (np.sin(pts[:, :1] * k) / k + np.cos(pts[:, 1:] * k) / k**2).sum(1)
    # n float64 terms of size <= 1, summed in another order
    np.testing.assert_allclose(_values(p, pts).fun, ref, rtol=1e-10, atol=1e-10)


def test_nesting_300_deep_lowers_runs_and_differentiates():
    e = x
    for _ in range(150):  # two levels a step (sin, +): an expression 300 deep
        e = sp.sin(e) + y / 100
    p = constropt.Problem(e + (x - y) ** 2, [sp.LessThan(e, 1, evaluate=False)],
                          bounds={x: (-1, 1), y: (-1, 1)})
    pts = RNG.uniform(-1, 1, size=(16, 2))
    ref = pts[:, 0].copy()
    for _ in range(150):
        ref = np.sin(ref) + pts[:, 1] / 100
    np.testing.assert_allclose(_values(p, pts).fun, ref + (pts[:, 0] - pts[:, 1]) ** 2,
                               rtol=1e-12, atol=1e-12)
    grad, _ = p.lowering.derivatives("numpy")(pts.T.copy(), np.zeros(0))
    h = 1e-6  # central differences: truncation ~h**2, rounding ~1e-16/h
    for j in range(2):
        d = np.zeros(2)
        d[j] = h
        fd = (_values(p, pts + d).fun - _values(p, pts - d).fun) / (2 * h)
        np.testing.assert_allclose(grad[j], fd, rtol=1e-6, atol=1e-7)


@pytest.mark.slow
def test_g12_as_min_of_729_balls_solves():
    """CEC 2006 G12: the union of 729 balls as one Min; optimum -1 at (5, 5, 5)."""
    balls = [(x - p) ** 2 + (y - q) ** 2 + (z - r) ** 2 - sp.Rational(1, 16)
             for p in range(1, 10) for q in range(1, 10) for r in range(1, 10)]
    ball = sp.Min(*balls, evaluate=False)
    obj = -(100 - (x - 5) ** 2 - (y - 5) ** 2 - (z - 5) ** 2) / 100
    p = constropt.Problem(obj, [sp.LessThan(ball, 0, evaluate=False)],
                          bounds={s: (0, 10) for s in (x, y, z)})
    res = constropt.solve(p, seed=1)
    assert res.success and res.feasible
    assert res.fun == pytest.approx(-1.0, abs=1e-6)  # polished optimum: float64 rounding
