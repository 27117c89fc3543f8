"""The GA on an equality and an integer problem, values and feasibility asserted."""

from __future__ import annotations

import pytest
import sympy as sp

import constropt


def test_ga_on_an_equality():
    x, y = sp.symbols("x y", real=True)
    # min x^2 + y^2 s.t. x y = 1: f* = 2 at (1, 1) and (-1, -1)
    res = constropt.solve(x**2 + y**2, [sp.Eq(x * y, 1)], bounds={x: (-3, 3), y: (-3, 3)},
                          algorithm="ga", seed=0, eq_tol=1e-9)
    assert res.feasible
    # eq_tol 1e-9: |x y - 1| <= eq_tol would otherwise let f reach 2 (1 - 1e-4)
    assert res.fun == pytest.approx(2.0, abs=1e-6)  # SLSQP stops at its own tolerance
    assert abs(res.x[x] * res.x[y] - 1) <= 1e-9


def test_ga_on_an_integer_problem():
    a, b = sp.symbols("a b", integer=True)
    # max 3a + 4b s.t. 2a + 3b <= 12, a, b in [0, 10]: 18 at (6, 0) (17 at (3, 2))
    res = constropt.solve(3 * a + 4 * b, [2 * a + 3 * b <= 12],
                          bounds={a: (0, 10), b: (0, 10)}, maximize=True,
                          algorithm="ga", seed=0)
    assert res.feasible
    assert (res.x[a], res.x[b]) == (6, 0)
    assert res.fun == 18


def test_scaled_polish_reaches_rc29_from_a_ga_point():
    # CEC 2020 RC29 (f* = 2964895.4173, objective of order 1e6): from a point a GA run
    # ended at (26.9 above f*), unscaled SLSQP stops at its first step; with the
    # problem in scaled form (genes in box units, objective and rows divided by their
    # gradient norms) one SLSQP run ends within 0.01 of f* (relative 3e-9).  The
    # finishing steps' polish tries the scaled form first.
    import numpy as np

    from constropt import benchmarks
    from constropt.finish._verdict import check_point
    from constropt.local._polish import polish

    b = benchmarks.get("RC29")
    problem = b.problem()
    pvec = problem.parameter_vector(None)
    x0 = np.array([50.0, 1.17983674, 24.54284432, 0.39201473])
    f0 = check_point(problem, x0, pvec)[0]
    for scale, within in ((False, 20.0), (True, 0.01)):
        x, _ = polish(problem, x0, pvec, max_evals=5000, scaled=scale)
        f, V = check_point(problem, x, pvec)
        assert np.all(V == 0)
        if scale:
            assert f - b.f_star <= within
        else:  # the unscaled run does not get there
            assert min(f, f0) - b.f_star > within

