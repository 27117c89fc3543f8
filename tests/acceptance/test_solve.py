"""End-to-end: the foundation's acceptance tests (blog examples 2 and 3, seeds 0-4)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import sympy as sp

import constropt
from constropt import BoundsWarning, Status

x, y, z = sp.symbols("x y z")
F2 = x**2 + 2 * y**2 + 3 * z**2 + 4 * x * y - 5 * y * z
C2 = [x >= 1, y > 3, y <= 7, z < 0, x + y + z >= 3, x**2 + z**2 <= 10]
F3 = sp.sin(x) + x**2 - 2 * sp.cos(y) + y**2 + z**2
C3 = [x >= 0, y >= 0, y <= sp.pi, z <= 5, x + z >= 1, sp.cos(y) + z >= 0.5]
STAR2, STAR3 = 263.1739479, -1.1277249


def _sympy_check(f, constraints, res):
    """What a user does: substitute res.x with sympy and test every constraint."""
    assert all(bool(c.subs(res.x)) for c in constraints)
    assert float(f.subs(res.x)) == pytest.approx(res.fun, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("seed", range(5))
def test_blog_example2_maximum(seed):
    with warnings.catch_warnings():  # bound propagation bounds x and z: no BoundsWarning
        warnings.simplefilter("error", BoundsWarning)
        res = constropt.solve(F2, C2, maximize=True, device="cpu", seed=seed, cross_check=True)
    assert res.success and res.feasible and res.status is Status.CONVERGED
    assert abs(res.fun - STAR2) <= 1e-4 * abs(STAR2)
    assert res.maxcv == 0.0 and res.violations.shape == (6,)
    assert set(res.x) == {x, y, z} and all(isinstance(v, float) for v in res.x.values())
    _sympy_check(F2, C2, res)
    assert res.cross_check.agrees, res.cross_check.table()
    assert res.cross_check.reference_fun == pytest.approx(STAR2, rel=1e-6)


@pytest.mark.parametrize("seed", range(5))
def test_blog_example3_minimum(seed):
    with pytest.warns(BoundsWarning):
        res = constropt.solve(F3, C3, device="cpu", seed=seed, cross_check=True)
    assert res.success and res.feasible
    assert abs(res.fun - STAR3) <= 1e-4 * max(1.0, abs(STAR3))
    np.testing.assert_allclose(res.x_array, [0.2582932, 0.0, 0.7417068], atol=1e-4)
    _sympy_check(F3, C3, res)
    assert res.cross_check.agrees, res.cross_check.table()


def test_same_seed_same_result():
    p = constropt.Problem(F3, C3, bounds={x: (0, 5), z: (-5, 5)})
    a = constropt.solve(p, seed=7, polish=False)
    b = constropt.solve(p, seed=7, polish=False)
    np.testing.assert_array_equal(a.x_array, b.x_array)
    np.testing.assert_array_equal(a.history.fun, b.history.fun)
    assert a.nfev == b.nfev and a.seed == 7


def test_result_fields_and_repr():
    p = constropt.Problem(F3, C3, bounds={x: (0, 5), z: (-5, 5)})
    res = constropt.solve(p, seed=1)
    assert res.variables == (x, y, z)
    assert res.x_array.shape == (3,) and not res.x_array.flags.writeable
    assert res.nit == len(res.history) - 1 and res.history.nfev[-1] <= res.nfev
    assert set(res.timings) >= {"lowering", "compile", "search", "polish", "total"}
    assert res.device == "cpu" and res.cross_check is None
    assert np.all(np.diff(res.history.fun[res.history.cv == 0]) <= 1e-12)  # elitist
    text = repr(res)
    assert "success=True" in text and "fun:" in text and "x = " in text
    with pytest.raises(AttributeError):
        res.fun = 0.0  # immutable
    d = res.to_dict()
    assert d["x"]["x"] == res.x[x] and d["status"] == "converged"


def test_no_feasible_point_is_reported_honestly():
    res = constropt.solve(x**2 + y**2, [x + y >= 3, x + y <= 1],
                          bounds={x: (-5, 5), y: (-5, 5)}, seed=0)
    assert res.feasible is False and res.success is False
    assert res.status is Status.INFEASIBLE
    assert "no feasible point" in res.message
    assert res.maxcv > 0 and res.violations.shape == (2,)
    # bound propagation proves it before any search: the proof is in the result
    assert res.certificate is not None and res.certificate.kind == "infeasible"
    assert res.nit == 0 and "proven" in res.message
    with pytest.raises(constropt.SolveFailedError, match="no feasible point"):
        constropt.solve(x**2 + y**2, [x + y >= 3, x + y <= 1],
                        bounds={x: (-5, 5), y: (-5, 5)}, seed=0, throw=True)


def test_strict_inequality_at_its_boundary_is_not_feasible():
    # the minimum of x over x > 0 is not attained: the answer must stay strictly inside
    res = constropt.solve(x, [x > 0], bounds={x: (-1, 1)}, seed=0)
    assert res.feasible and res.x[x] > 0
    assert res.fun == pytest.approx(0.0, abs=1e-6)


def test_integer_variables_stay_integer():
    n, m = sp.symbols("n m", integer=True)
    res = constropt.solve((n - 2.4)**2 + (m + 1.6)**2 + x**2, [n + m <= 5],
                          bounds={n: (-10, 10), m: (-10, 10), x: (-1, 1)}, seed=0)
    assert res.success
    assert res.x[n] == 2 and res.x[m] == -2 and isinstance(res.x[n], int)
    assert res.x[x] == pytest.approx(0.0, abs=1e-6)


def test_equality_constraint_within_tolerance():
    res = constropt.solve(x**2 + y**2, [sp.Eq(x + y, 1)], bounds={x: (-3, 3), y: (-3, 3)},
                          seed=0, eq_tol=1e-4)
    assert res.success
    # feasible means |x + y - 1| <= eq_tol: the optimum uses the tolerance
    assert res.fun == pytest.approx((1 - 1e-4) ** 2 / 2, abs=1e-7)
    assert abs(res.x[x] + res.x[y] - 1) <= 1e-4
    # the default holds the equality tightly: no objective profits from a band
    default = constropt.solve(x**2 + y**2, [sp.Eq(x + y, 1)],
                              bounds={x: (-3, 3), y: (-3, 3)}, seed=0)
    assert default.success
    assert abs(sp.Rational(default.x[x]) + sp.Rational(default.x[y]) - 1) <= 3e-9
    assert default.fun == pytest.approx(0.5, abs=1e-8)  # 0.5 - 1e-9 at the band's edge
    tight = constropt.solve(x**2 + y**2, [sp.Eq(x + y, 1)], bounds={x: (-3, 3), y: (-3, 3)},
                            seed=0, eq_tol=1e-9)
    assert tight.fun == pytest.approx(0.5, abs=1e-8)


def test_parameters_change_without_new_code():
    r = sp.Symbol("r", positive=True)
    p = constropt.Problem(x + y, [x**2 + y**2 <= r**2], bounds={x: (-5, 5), y: (-5, 5)},
                          parameters={r: 1.0})
    a = constropt.solve(p, seed=0)
    b = constropt.solve(p, seed=0, parameters={r: 2.0})
    assert a.fun == pytest.approx(-math.sqrt(2), abs=1e-6)
    assert b.fun == pytest.approx(-2 * math.sqrt(2), abs=1e-6)


def test_max_evals_is_honoured():
    res = constropt.solve(F3, C3, bounds={x: (0, 5), z: (-5, 5)}, seed=0, max_evals=1500)
    assert res.nfev <= 1500
    assert res.status in (Status.MAX_EVALS, Status.CONVERGED)


def test_target_stops_early():
    res = constropt.solve(F3, C3, bounds={x: (0, 5), z: (-5, 5)}, seed=0, target=-1.0,
                          check_every=1)
    assert res.status is Status.TARGET and res.fun <= -1.0


@pytest.mark.parametrize("name", ["G06", "ex1221", "HS044"])
def test_solve_and_search_result_finish_through_the_same_path(name):
    # one finishing path for every mode: the same search, polished, checked and judged
    # the same way, gives the same point, evaluations, status and message
    from constropt import benchmarks

    problem = benchmarks.get(name).problem()
    a = constropt.solve(problem, seed=1, max_evals=20_000, progress=False)
    b = constropt.Search(problem, seed=1, max_evals=20_000, progress=False).result()
    assert np.array_equal(a.x_array, b.x_array) and a.fun == b.fun
    assert (a.nfev, a.status, a.message) == (b.nfev, b.status, b.message)
    assert a.nfev <= 20_000
