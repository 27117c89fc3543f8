"""scipy interop: ``Problem.to_scipy`` in scipy's own form, ``Result.to_scipy`` fields."""

import dataclasses
import warnings

import numpy as np
import pytest
import sympy as sp
from scipy.optimize import (
    Bounds,
    NonlinearConstraint,
    OptimizeResult,
    approx_fprime,
    differential_evolution,
    minimize,
)

import constropt
from constropt import OptionError, Status

F3_STAR = -1.1277249018
X3_STAR = np.array([0.2582932, 0.0, 0.7417068])
F2_STAR = 263.1739479256

x, y, z = sp.symbols("x y z")

# trust-constr's quasi-Newton update warns whenever a step leaves a gradient unchanged
# (linear constraints always do); that is scipy talking to scipy, not a failure.
quiet_bfgs = pytest.mark.filterwarnings("ignore:delta_grad == 0.0:UserWarning")


@pytest.fixture(scope="module")
def blog3():
    f = sp.sin(x) + x**2 - 2 * sp.cos(y) + y**2 + z**2
    cons = [x >= 0, y >= 0, y <= sp.pi, z <= 5, x + z >= 1, sp.cos(y) + z >= 0.5]
    return constropt.Problem(f, cons, bounds={x: (0, 5), z: (-5, 5)})


@pytest.fixture(scope="module")
def blog2():
    f = x**2 + 2 * y**2 + 3 * z**2 + 4 * x * y - 5 * y * z
    cons = [x >= 1, y > 3, y <= 7, z < 0, x + y + z >= 3, x**2 + z**2 <= 10]
    return constropt.Problem(f, cons, maximize=True, bounds={x: (None, 25), z: (-25, None)})


def test_form_is_scipy_own(blog3):
    s = blog3.to_scipy()
    assert callable(s.fun) and callable(s.jac)
    assert isinstance(s.bounds, Bounds)
    # z >= 0.5 - cos(y) >= -0.5 is inferred by interval propagation (outward-rounded, so
    # within an ulp of -0.5), tighter than the given -5
    np.testing.assert_allclose(s.bounds.lb, [0, 0, -0.5], atol=1e-12)
    np.testing.assert_allclose(s.bounds.ub, [5, np.pi, 5])
    np.testing.assert_allclose(s.x0, [2.5, np.pi / 2, 2.25], atol=1e-12)
    assert s.integrality.dtype == bool and not s.integrality.any()
    assert s.constraints and all(isinstance(c, NonlinearConstraint) for c in s.constraints)
    assert all(callable(c.jac) for c in s.constraints)
    assert s.variables == (x, y, z) and s.maximize is False
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.fun = None


@quiet_bfgs
@pytest.mark.parametrize("method", ["trust-constr", "SLSQP"])
def test_minimize_reaches_blog3_optimum(blog3, method):
    s = blog3.to_scipy()
    res = minimize(s.fun, s.x0, jac=s.jac, bounds=s.bounds, constraints=s.constraints,
                   method=method)
    # trust-constr's default stopping tolerances end about 3e-6 short of the optimum from
    # the box centre; SLSQP (ftol 1e-6 relative) lands within 1e-6
    assert res.fun == pytest.approx(F3_STAR, abs=1e-5 if method == "trust-constr" else 1e-6)
    np.testing.assert_allclose(res.x, X3_STAR, atol=1e-3)
    # scipy's solvers stop at their own tolerance: SLSQP's point may miss `x + z >= 1` at
    # rounding level (2.3e-15 seen), so feasibility of a third-party point is asserted within
    # a few ulps of the constraint values (about 1), not exactly.
    assert float(np.max(blog3.evaluate(res.x).violation)) <= 1e-12


@quiet_bfgs
def test_differential_evolution_takes_the_fields_directly(blog3):
    s = blog3.to_scipy()
    res = differential_evolution(s.fun, s.bounds, constraints=s.constraints, seed=0)
    assert res.fun == pytest.approx(F3_STAR, abs=1e-4)
    # a third-party point: feasible within rounding of the constraint values (see above)
    assert float(np.max(blog3.evaluate(res.x).violation)) <= 1e-12


def test_fun_and_user_fun_in_each_sense(blog2, blog3):
    p = np.array([1.5, 5.0, -1.0])
    f2 = float(blog2.evaluate(p).fun[0])
    s2 = blog2.to_scipy()
    assert s2.maximize is True
    assert s2.fun(p) == pytest.approx(-f2) and s2.user_fun(p) == pytest.approx(f2)
    s3 = blog3.to_scipy()
    assert s3.fun(p) == pytest.approx(float(blog3.evaluate(p).fun[0]))


@pytest.mark.parametrize("name", ["blog2", "blog3"])
def test_jacobians_match_finite_differences(name, request):
    problem = request.getfixturevalue(name)
    s = problem.to_scipy()
    rng = np.random.default_rng(1)
    for _ in range(5):
        p = rng.uniform(s.bounds.lb, s.bounds.ub)
        np.testing.assert_allclose(s.jac(p), approx_fprime(p, s.fun, 1e-7),
                                   rtol=1e-5, atol=1e-4 * max(1.0, abs(s.fun(p))))
        for c in s.constraints:
            J = np.atleast_2d(c.jac(p))
            fd = np.array([approx_fprime(p, lambda v, i=i: c.fun(v)[i], 1e-7)
                           for i in range(J.shape[0])])
            np.testing.assert_allclose(J, fd, rtol=1e-5, atol=1e-5)


def _satisfied(s, p) -> bool:
    return all(np.all((c.fun(p) >= c.lb) & (c.fun(p) <= c.ub)) for c in s.constraints)


def test_strict_inequalities_keep_a_margin(blog2):
    s = blog2.to_scipy()
    inside = np.array([1.5, 5.0, -1.0])
    assert _satisfied(s, inside)
    on_boundary = np.array([1.5, 5.0, 0.0])  # z == 0 violates z < 0
    assert not bool(blog2.evaluate(on_boundary).feasible[0])
    assert not _satisfied(s, on_boundary)
    assert not _satisfied(s, np.array([1.5, 5.0, -1e-12]))  # inside the 1e-9 margin
    loose = blog2.to_scipy(strict_margin=0.0)
    assert _satisfied(loose, np.array([1.5, 5.0, -1e-12]))


@quiet_bfgs
def test_maximize_problem_solved_by_trust_constr(blog2):
    s = blog2.to_scipy()
    res = minimize(s.fun, s.x0, jac=s.jac, bounds=s.bounds, constraints=s.constraints,
                   method="trust-constr")
    assert s.user_fun(res.x) == pytest.approx(F2_STAR, rel=1e-7)
    assert bool(blog2.evaluate(res.x).feasible[0])


def test_equalities_use_the_tolerance_band():
    a, b = sp.symbols("a b")
    p = constropt.Problem(a + b, [sp.Eq(a * b, 1)], bounds={a: (0.1, 4), b: (0.1, 4)},
                          eq_tol=1e-3)
    (c,) = p.to_scipy().constraints
    assert (c.lb, c.ub) == (-1e-3, 1e-3)
    (exact,) = p.to_scipy(eq_tol=0).constraints
    assert (exact.lb, exact.ub) == (0, 0)
    s = p.to_scipy(eq_tol=0)
    res = minimize(s.fun, s.x0, jac=s.jac, bounds=s.bounds, constraints=s.constraints,
                   method="SLSQP")
    assert res.fun == pytest.approx(2.0, abs=1e-6)
    assert res.x[0] * res.x[1] == pytest.approx(1.0, abs=1e-6)


def test_disjunction_integers_and_parameters():
    a, b, k, r = sp.symbols("a b k r")
    k = sp.Symbol("k", integer=True)
    p = constropt.Problem((a - 1) ** 2 + b**2 + r * k,
                          [sp.Or(a <= -1, a >= 2), a + b <= r, k >= 1, k <= 3],
                          variables=[a, b, k], bounds={a: (-5, 5), b: (-5, 5)},
                          parameters={r: 1.0})
    s = p.to_scipy(parameters={r: 2.0})
    np.testing.assert_array_equal(s.integrality, [False, False, True])
    assert s.x0[2] == 2.0
    assert any(c.jac == "2-point" for c in s.constraints)  # the Or: violation <= 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = differential_evolution(s.fun, s.bounds, constraints=s.constraints,
                                     integrality=s.integrality, seed=0)
    # a = 2 is the nearer branch of the Or; k = 1 is the cheapest integer; b = 0
    np.testing.assert_allclose(res.x, [2.0, 0.0, 1.0], atol=0.05)
    assert res.x[2] == 1.0
    assert res.fun == pytest.approx(1.0 + 2.0, abs=5e-3)  # r = 2 from parameters=
    # scipy's point sits on a = 2 (a side of the Or) and on a + b = r: feasible within rounding
    assert float(np.max(p.evaluate(res.x, parameters={r: 2.0}).violation)) <= 1e-12


def test_undefined_values_read_as_violated():
    a = sp.Symbol("a")
    p = constropt.Problem(sp.log(a), [sp.sqrt(a) <= 2], bounds={a: (-1, 9)})
    s = p.to_scipy()
    assert s.fun(np.array([-0.5])) == 1e300
    (c,) = s.constraints
    v = c.fun(np.array([-0.5]))[0]
    assert not (c.lb <= v <= c.ub)  # outside scipy's lb <= c(x) <= ub, whichever side


def test_bad_options_name_the_argument(blog3):
    with pytest.raises(OptionError, match="strict_margin"):
        blog3.to_scipy(strict_margin=-1.0)
    with pytest.raises(OptionError, match="eq_tol"):
        blog3.to_scipy(eq_tol=float("nan"))
    with pytest.raises(constropt.ProblemError, match="not a parameter"):
        blog3.to_scipy(parameters={sp.Symbol("q"): 1.0})


@pytest.fixture(scope="module")
def solved2(blog2):
    return constropt.solve(blog2, seed=0, device="cpu")


def test_result_to_scipy_fields(solved2):
    res = solved2
    o = res.to_scipy()
    assert isinstance(o, OptimizeResult)
    np.testing.assert_array_equal(o.x, res.x_array)
    assert o.fun == -res.fun and o.user_fun == res.fun  # maximize: scipy minimized -f
    assert o.user_fun == pytest.approx(F2_STAR, rel=1e-6)
    assert o.success is True and o.feasible is True and o.maxcv == 0.0
    assert isinstance(o.status, int) and o.status == (0 if res.status is Status.CONVERGED
                                                      else o.status)
    assert o.constropt_status is res.status
    assert o.message == res.message
    assert (o.nit, o.nfev) == (res.nit, res.nfev)
    np.testing.assert_array_equal(o.violations, res.violations)
    o.x[0] = 99.0  # a copy: the result stays intact
    assert res.x_array[0] != 99.0


def test_result_status_codes(solved2):
    from constropt.problem._scipy import SCIPY_STATUS

    assert set(SCIPY_STATUS) == {s.name for s in Status}
    assert len(set(SCIPY_STATUS.values())) == len(SCIPY_STATUS)
    assert SCIPY_STATUS["CONVERGED"] == 0
    bad = dataclasses.replace(solved2, status=Status.INFEASIBLE, success=False)
    assert bad.to_scipy().status == SCIPY_STATUS["INFEASIBLE"]
    assert bad.to_scipy().success is False


def test_result_without_problem_is_refused(solved2):
    orphan = dataclasses.replace(solved2, problem=None)
    with pytest.raises(OptionError, match="constropt.solve"):
        orphan.to_scipy()


def test_vector_variables_get_exact_jacobians():
    X = sp.IndexedBase("X", shape=(4,))
    i = sp.Idx("i", 4)
    p = constropt.Problem(sp.Sum((X[i] - 1) ** 2, (i, 0, 3)), [sp.Sum(X[i], (i, 0, 3)) <= 2],
                          bounds={X: (-5, 5)})
    s = p.to_scipy()
    pt = np.array([0.3, -1.0, 2.0, 0.5])
    np.testing.assert_allclose(s.jac(pt), approx_fprime(pt, s.fun, 1e-7), atol=1e-5)
    (c,) = s.constraints
    np.testing.assert_allclose(c.jac(pt), [[-1.0, -1.0, -1.0, -1.0]])
    res = minimize(s.fun, s.x0, jac=s.jac, bounds=s.bounds, constraints=s.constraints,
                   method="SLSQP")
    np.testing.assert_allclose(res.x, [0.5] * 4, atol=1e-6)


def test_one_strict_margin_for_polish_to_scipy_and_cross_check():
    """The polish, to_scipy() and the cross-check's DE build their constraints in one
    bridge: a strict ``x > 1`` becomes ``x >= 1 + STRICT_MARGIN`` for all three."""
    from constropt.local._polish import polish
    from constropt.problem._scipy import STRICT_MARGIN, ScipyBridge

    p = constropt.Problem(x, [x > 1], bounds={x: (0, 3)})
    pvec = p.parameter_vector()
    # polish from a feasible start ends on the margin, not on the boundary
    xp, _ = polish(p, np.array([2.0]), pvec, margin=0.0)
    # SLSQP ends on an active constraint to about 1e-15; the margin is 1e-9
    assert xp[0] - 1.0 == pytest.approx(STRICT_MARGIN, abs=1e-11)
    assert bool(p.evaluate(xp).feasible[0])
    s = p.to_scipy()
    (c,) = s.constraints
    assert c.lb == pytest.approx(STRICT_MARGIN) and np.isinf(c.ub)  # -(1 - x) >= margin
    res = minimize(s.fun, s.x0, jac=s.jac, bounds=s.bounds, constraints=s.constraints,
                   method="SLSQP", options={"ftol": 1e-14})
    assert res.x[0] - 1.0 == pytest.approx(STRICT_MARGIN, abs=1e-11)
    (idx, lb, ub), = ScipyBridge(p, pvec).groups()  # what the cross-check's DE is given
    assert np.isinf(lb) and ub == -STRICT_MARGIN
    # the polish's own tightening only ever adds to the margin
    (_, _, ub_tight), = ScipyBridge(p, pvec, tighten=1e-6).groups()
    assert ub_tight == -1e-6
