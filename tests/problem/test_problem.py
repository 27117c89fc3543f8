"""Problem: declaration, bound extraction, evaluation against sympy, bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp
import torch

import constropt
from constropt import BoundsWarning, DeviceError, OptionError, ProblemError

x, y, z = sp.symbols("x y z")
F2 = x**2 + 2 * y**2 + 3 * z**2 + 4 * x * y - 5 * y * z
C2 = [x >= 1, y > 3, y <= 7, z < 0, x + y + z >= 3, x**2 + z**2 <= 10]


@pytest.fixture(scope="module")
def blog2():
    # x**2 + z**2 <= 10 bounds x and z (bound propagation): no BoundsWarning
    return constropt.Problem(F2, C2, maximize=True)


def _sympy_eval(f, constraints, point):
    sub = dict(zip((x, y, z), point))
    fv = float(f.subs(sub))
    feas = [bool(c.subs(sub)) for c in constraints]
    return fv, feas


def test_variables_and_extracted_bounds(blog2):
    assert blog2.variables == (x, y, z)
    assert blog2.bounds[y] == (3.0, 7.0)
    # inferred from x**2 + z**2 <= 10 with x >= 1, rounded outward (a few ulps)
    assert blog2.bounds[x][0] == 1.0
    assert blog2.bounds[x][1] == pytest.approx(10**0.5, rel=1e-14)
    assert blog2.bounds[x][1] >= 10**0.5
    assert blog2.bounds[z] == (pytest.approx(-3.0, rel=1e-14), 0.0)
    assert blog2.bounds[z][0] <= -3.0
    assert blog2.maximize and blog2.n == 3
    assert len(blog2.constraints) == 6


def test_variable_order_is_natural():
    a = sp.symbols("x1:12")
    p = constropt.Problem(sum(a), bounds={s: (0, 1) for s in a})
    assert [str(s) for s in p.variables] == [f"x{i}" for i in range(1, 12)]
    q = constropt.Problem(x + y, variables=[y, x], bounds={x: (0, 1), y: (0, 1)})
    assert q.variables == (y, x)


def test_evaluate_matches_sympy_at_random_and_boundary_points(blog2):
    rng = np.random.default_rng(0)
    pts = rng.uniform(-4, 8, size=(200, 3))
    pts[:50, 2] = rng.uniform(-3, 0, 50)  # many near-feasible
    pts[:50, 0] = rng.uniform(1, 2, 50)
    pts[:50, 1] = rng.uniform(3, 7, 50)
    boundary = np.array([[1.0, 7.0, -1.0],    # feasible, on non-strict bounds
                         [2.0, 3.0, -1.0],    # y == 3 violates y > 3
                         [2.0, 5.0, 0.0],     # z == 0 violates z < 0
                         [1.0, 7.0, -3.0],    # x^2 + z^2 == 10: feasible
                         [0.9999999, 5, -1]])
    pts = np.vstack([pts, boundary])
    ev = blog2.evaluate(pts)
    assert ev.fun.shape == (205,) and ev.violation.shape == (205, 6)
    assert ev.feasible.dtype == bool and np.all(ev.violation >= 0)
    for k, p in enumerate(pts):
        fv, feas = _sympy_eval(F2, C2, p)
        assert ev.fun[k] == pytest.approx(fv, rel=1e-12, abs=1e-12)
        assert list(ev.violation[k] == 0) == feas, (p, ev.violation[k])
        assert bool(ev.feasible[k]) == all(feas)
    assert ev.feasible[-5:].tolist() == [True, False, False, True, False]
    assert ev.feasible.sum() > 5


def test_evaluate_torch_input_matches_numpy(blog2):
    pts = np.random.default_rng(1).uniform(-4, 8, size=(64, 3))
    ref = blog2.evaluate(pts)
    for dtype in (torch.float64, torch.float32):
        ev = blog2.evaluate(torch.as_tensor(pts, dtype=dtype))
        assert isinstance(ev.fun, torch.Tensor) and ev.fun.dtype == dtype
        tol = 1e-12 if dtype == torch.float64 else 1e-4
        np.testing.assert_allclose(ev.fun.numpy(), ref.fun, rtol=tol)
    ev64 = blog2.evaluate(torch.as_tensor(pts))
    np.testing.assert_array_equal(ev64.feasible.numpy(), ref.feasible)


def test_nan_constraint_is_infeasible_and_nan_objective_never_wins():
    p = constropt.Problem(sp.sqrt(x), [sp.log(y) <= 1], bounds={x: (-1, 1), y: (-1, 3)})
    ev = p.evaluate(np.array([[-0.5, 1.0], [0.25, -1.0], [0.25, 1.0]]))
    assert math.isnan(ev.fun[0])
    assert ev.feasible.tolist() == [True, False, True]
    assert ev.violation[1, 0] == math.inf
    res = constropt.solve(p, seed=0)
    assert res.success and res.x[x] >= 0 and 0 <= res.fun < 0.05  # NaN side never wins


def test_source_is_readable_and_parameters_are_inputs():
    a = sp.Symbol("a")
    p1 = constropt.Problem(a * x**2, [x >= a], bounds={x: (-2, 2)}, parameters={a: 1.0})
    p2 = constropt.Problem(a * x**2, [x >= a], bounds={x: (-2, 2)}, parameters={a: 5.0})
    assert p1.source == p2.source
    assert "def fitness(X, P, eq_tol):" in p1.source and "p0 = P[0]  # a" in p1.source
    ev = p1.evaluate(np.array([[1.5]]), parameters={a: 2.0})
    assert ev.fun[0] == pytest.approx(4.5) and ev.feasible[0] == False  # noqa: E712


def test_equality_tolerance():
    p = constropt.Problem(x, [sp.Eq(x**2, 2)], bounds={x: (0, 2)}, eq_tol=1e-3)
    ev = p.evaluate(np.array([[math.sqrt(2) + 1e-4], [math.sqrt(2) + 1e-2]]))
    assert ev.feasible.tolist() == [True, False]


def test_or_and_not_constraints():
    p = constropt.Problem(x, [sp.Or(x <= -1, x >= 1), sp.Not(x > 3)], bounds={x: (-5, 5)})
    ev = p.evaluate(np.array([[-2.0], [0.0], [2.0], [4.0]]))
    assert ev.feasible.tolist() == [True, False, True, False]
    assert ev.violation[1, 0] == pytest.approx(1.0)


# -- bad input: each raises a constropt error naming the culprit ---------------------------
@pytest.mark.parametrize("objective, match", [
    ("x**2", "sympy expression"),
    ([x, y], "sympy expression"),
    (x >= 1, "relational"),
    (None, "sympy expression"),
])
def test_objective_must_be_a_sympy_expression(objective, match):
    with pytest.raises(ProblemError, match=match):
        constropt.Problem(objective, bounds={x: (0, 1)})


@pytest.mark.parametrize("constraint, match", [
    (x + y, r"constraint 0 is the expression x \+ y"),
    (True, "Python bool"),
    (sp.Ne(x, 1), "!="),
    ("x >= 1", "not a sympy relational"),
    (sp.Gt(3, 2), "evaluated to True"),
])
def test_constraint_must_be_a_relational(constraint, match):
    with pytest.raises(ProblemError, match=match):
        constropt.Problem(x**2, [constraint], bounds={x: (0, 1), y: (0, 1)})


def test_bounds_for_unknown_variable():
    with pytest.raises(ProblemError, match="bounds given for y"):
        constropt.Problem(x**2, bounds={x: (0, 1), y: (0, 1)})


def test_lower_bound_above_upper():
    with pytest.raises(ProblemError, match=r"lower bound of x \(2.0\) is above"):
        constropt.Problem(x**2, bounds={x: (2, 1)})


def test_contradictory_constraint_bounds():
    # constraints that leave x no value: an infeasible problem (proven), not bad input;
    # tests/certify/test_infeasible_points.py solves it and runs it from the command line
    p = constropt.Problem(x**2, [x >= 2, x <= 1])
    assert p.infeasibility_proof is not None
    assert "constraints on x contradict" in p.infeasibility_proof.statement
    assert p.bounds[x] == (1.0, 2.0)  # the hull of the contradicting sides


def test_integer_variable_without_integer_in_bounds():
    n = sp.Symbol("n", integer=True)
    with pytest.raises(ProblemError, match="no integer value"):
        constropt.Problem(n**2, bounds={n: (0.2, 0.8)})


def test_complex_objective():
    with pytest.raises(ProblemError, match="complex"):
        constropt.Problem(x + sp.I, bounds={x: (0, 1)})


def test_stray_symbol_with_explicit_variables():
    with pytest.raises(ProblemError, match="symbol y appears"):
        constropt.Problem(x + y, variables=[x], bounds={x: (0, 1)})


def test_missing_bound_warns_with_the_name():
    with pytest.warns(BoundsWarning, match="no finite bound on some side of y"):
        p = constropt.Problem(x + y, [y >= 0], bounds={x: (0, 1)})
    assert p.bounds[y] == (0.0, 10.0)  # the problem's numbers are at most 1: scale 1
    with pytest.warns(BoundsWarning):
        q = constropt.Problem(x + y, [y >= 0], bounds={x: (0, 1)}, default_bound=1000)
    assert q.bounds[y] == (0.0, 1000.0)


def test_unknown_device():
    with pytest.raises(DeviceError, match="unknown device 'gpu0'"):
        constropt.solve(x**2, bounds={x: (0, 1)}, device="gpu0")


@pytest.mark.skipif(torch.cuda.is_available(), reason="machine has CUDA")
def test_cuda_without_cuda():
    with pytest.raises(DeviceError, match="CUDA is not available"):
        constropt.solve(x**2, bounds={x: (0, 1)}, device="cuda")


def test_unknown_option():
    with pytest.raises(OptionError, match="unknown option 'popsize'.*did you mean 'pop_size'"):
        constropt.solve(x**2, bounds={x: (0, 1)}, popsize=10)


@pytest.mark.parametrize("opts, match", [
    ({"pop_size": 0}, "pop_size must be a positive integer"),
    ({"max_evals": -5}, "max_evals"),
    ({"time_limit": 0}, "time_limit"),
    ({"seed": -1}, "seed"),
    ({"compile": "sometimes"}, "compile must be"),
    ({"dtype": "float16"}, "not supported"),
])
def test_bad_options(opts, match):
    with pytest.raises(constropt.ConstroptError, match=match):
        constropt.solve(x**2, bounds={x: (0, 1)}, **opts)


def test_problem_object_with_extra_declarations():
    p = constropt.Problem(x**2, bounds={x: (0, 1)})
    with pytest.raises(OptionError, match="pass constraints"):
        constropt.solve(p, [x >= 0])
