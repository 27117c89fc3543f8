"""Honest answers: no silent wrong result and no foreign exception for the inputs of the
honesty issue.  Each test names the promise it backs in docs/guarantees.md."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

import constropt

x, y = sp.symbols("x y")


# -- generated code never depends on user-chosen names -------------------------------------
def test_names_that_fold_to_one_identifier_stay_two_variables():
    wide = sp.Symbol("\uff58")  # fullwidth x: NFKC folds it to "x" in Python source
    p = constropt.Problem((x - 1) ** 2 + (wide + 1) ** 2, bounds={x: (-3, 3), wide: (-3, 3)})
    assert p.variables == (x, wide) or p.variables == (wide, x)
    pts = np.array([[1.0, -1.0], [-1.0, 1.0]]) if p.variables[0] == x else np.array(
        [[-1.0, 1.0], [1.0, -1.0]])
    np.testing.assert_allclose(p.evaluate(pts).fun, [0.0, 8.0])  # exact small integers


@pytest.mark.parametrize("name", ["x\u00b2", "a b", "lambda", "X", "P", "dtype", "where",
                                  "t0", "f", "cv", "x1", "a\nb", "1st", "x" * 300])
def test_any_symbol_name_lowers_and_evaluates(name):
    s = sp.Symbol(name)
    x0 = sp.Symbol("x0")  # the generated name of row 0: must not capture it
    p = constropt.Problem((s - 2) ** 2 + 10 * x0, [s + x0 <= 3], variables=[x0, s],
                          bounds={s: (-3, 3), x0: (0, 1)})
    ev = p.evaluate(np.array([[0.5, 2.0], [0.0, 3.0], [1.0, 2.5]]))
    np.testing.assert_allclose(ev.fun, [5.0, 1.0, 10.25])  # exact in binary floating point
    assert ev.feasible.tolist() == [True, True, False]
    compile(p.source, "<check>", "exec")  # the source is valid Python, whatever the name
    assert "\n" not in name or "a\\nb" in p.source  # echoed only escaped, in a comment


# -- crashes become constropt errors naming the culprit ------------------------------------
@pytest.mark.parametrize("constraint, verdict", [
    (x + 1 > x, "always holds"),
    (x > x, "never holds"),
    (sp.Eq(x, x, evaluate=False), "always holds"),
    (sp.Or(x + 2 <= x, y <= 0), "never holds"),  # a constant leaf inside a disjunction
])
def test_constraint_without_variables_is_refused(constraint, verdict):
    with pytest.raises(constropt.ProblemError, match=f"constraint 0: .*{verdict}"):
        constropt.Problem(x**2 + y**2, [constraint], bounds={x: (-1, 1), y: (-1, 1)})


def test_sympy_decided_constraint_is_refused_the_same_way():
    xr = sp.Symbol("xr", real=True)
    with pytest.raises(constropt.ProblemError, match="constraint 0: the constraint evaluated"):
        constropt.Problem(xr**2, [xr + 1 > xr], bounds={xr: (-1, 1)})


def test_unused_variable_added_after_a_first_solve():
    z = sp.Symbol("z")
    f, cons = (x - 1) ** 2 + x * z, [x + z <= 3]
    first = constropt.solve(f, cons, bounds={x: (-3, 3), z: (0, 1)}, seed=0)
    # y is row 2 and appears nowhere: same generated values code, one more gradient row
    again = constropt.solve(f, cons, variables=[x, z, y],
                            bounds={x: (-3, 3), z: (0, 1), y: (-1, 1)}, seed=0)
    for res in (first, again):
        assert res.success and res.fun == pytest.approx(0.0, abs=1e-9)
        assert res.x[x] == pytest.approx(1.0, abs=1e-4) and res.x[z] == pytest.approx(0.0,
                                                                                      abs=1e-6)
    assert -1 <= again.x[y] <= 1


def test_no_variables():
    with pytest.raises(constropt.ProblemError, match="no decision variables"):
        constropt.solve(sp.Integer(3))


@pytest.mark.parametrize("seed", [2**64, 2**70, -1, 1.5, "0"])
def test_seed_out_of_range(seed):
    with pytest.raises(constropt.OptionError, match="seed must be an integer"):
        constropt.solve(x**2, bounds={x: (-1, 1)}, seed=seed)


def test_largest_seed_runs():
    res = constropt.solve((x - 0.5) ** 2, bounds={x: (-1, 1)}, seed=2**64 - 1)
    assert res.success and res.seed == 2**64 - 1 and res.fun == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("variables", [5, 2.5])
def test_variables_not_a_sequence(variables):
    with pytest.raises(constropt.ProblemError, match="variables must be a sequence"):
        constropt.Problem(x**2, variables=variables)


@pytest.mark.parametrize("points", ["abc", [["a", 1.0]], {"x": 1}])
def test_evaluate_non_numeric_points(points):
    p = constropt.Problem(x**2 + y, bounds={x: (-1, 1), y: (-1, 1)})
    with pytest.raises(constropt.ProblemError, match="points must be numbers"):
        p.evaluate(points)


R = sp.Symbol("r")


@pytest.mark.parametrize("values, fragment", [
    (np.array([]), "empty"),
    (["a", "b"], "must be numbers"),
    (np.zeros((2, 2)), "1-D array"),
])
def test_solve_batch_bad_parameter_arrays(values, fragment):
    p = constropt.Problem((x - R) ** 2, bounds={x: (-1, 1)}, parameters={R: 0.0})
    with pytest.raises(constropt.ProblemError, match=f"parameter r: .*{fragment}"):
        constropt.solve_batch(p, {R: values})


# -- an objective that is not a number is never a success ----------------------------------
@pytest.mark.parametrize("objective, constraints", [
    (sp.log(x), [x <= -0.5]),
    (sp.sqrt(-x**2 - 1), []),
])
def test_objective_nan_on_the_whole_feasible_set(objective, constraints):
    res = constropt.solve(objective, constraints, bounds={x: (-3, 3)}, seed=0)
    assert res.feasible and np.isnan(res.fun)
    assert not res.success and res.status is constropt.Status.UNDEFINED
    assert "is NaN: it is undefined on the feasible set" in res.message
    assert res.to_scipy().status == 9


def test_batch_reports_an_undefined_objective_too():
    p = constropt.Problem(sp.log(x - R), bounds={x: (-3, 3)}, parameters={R: 0.0})
    # r = 5: x - r < 0 on the whole box (NaN); r = -5: log(x + 5) has its minimum at x = -3
    br = constropt.solve_batch(p, {R: np.array([5.0, -5.0])}, seed=0)
    bad, good = br.results
    assert bad.status is constropt.Status.UNDEFINED and not bad.success
    assert good.success and good.fun == pytest.approx(np.log(2.0), abs=1e-8)


# -- no option is silently ignored ----------------------------------------------------------
@pytest.mark.parametrize("options", [{"eq_tol": 1e-12}, {"default_bound": 5.0},
                                     {"eq_tol": 1e-12, "default_bound": 5.0}])
def test_problem_options_beside_a_ready_problem_are_refused(options):
    p = constropt.Problem(x**2 + y**2, [sp.Eq(x + y, 1)], bounds={x: (-2, 2), y: (-2, 2)})
    names = " and ".join(options)
    with pytest.raises(constropt.OptionError, match=f"keeps the {names} it was built with"):
        constropt.solve(p, seed=0, **options)
    q = constropt.Problem(x**2 + R, bounds={x: (-2, 2)}, parameters={R: 0.0})
    with pytest.raises(constropt.OptionError, match="solve_batch: "):
        constropt.solve_batch(q, {R: np.array([1.0, 2.0])}, **options)


# -- huge boxes, unboundedness and the default box ------------------------------------------
@pytest.mark.parametrize("edge", [1e300, 1e200, 1e160, 1e150])
def test_huge_box_finds_the_minimum(edge):
    # a population spread over the box overflows (x - 1)**4 everywhere: today's main
    # reported success with fun=inf
    f = (x - 1) ** 4 + y**2 + sp.Rational(1, 2)
    res = constropt.solve(f, bounds={x: (-edge, edge), y: (-edge, edge)}, seed=0)
    assert res.success and np.isfinite(res.fun)
    assert res.fun == pytest.approx(0.5, abs=1e-9)  # SLSQP's ftol on a unit-scale problem
    assert res.x[x] == pytest.approx(1.0, abs=1e-2)  # a quartic is flat: x to fun's 4th root
    assert res.x[y] == pytest.approx(0.0, abs=1e-4)


def test_huge_box_optimum_on_its_far_edge_is_reached():
    # the optimum is the huge given side itself: the box expands up to it
    res = constropt.solve(-sp.log(x), bounds={x: (1, 1e200)}, seed=0)
    assert res.success and res.x[x] == pytest.approx(1e200, rel=1e-9)
    assert res.fun == pytest.approx(-200 * np.log(10), rel=1e-12)


def test_log_unbounded_at_a_strict_edge():
    res = constropt.solve(sp.log(x), [x > 0, x <= 1], seed=0)
    assert res.feasible and not res.success and res.status is constropt.Status.UNBOUNDED


@pytest.mark.parametrize("objective", [x * sp.log(x), sp.sqrt(x)])
def test_bounded_objectives_at_or_near_a_strict_edge_are_not_unbounded(objective):
    res = constropt.solve(objective, [x > 0, x <= 1], seed=0)
    want = -1 / np.e if objective.has(sp.log) else 0.0
    assert res.success and res.fun == pytest.approx(want, abs=1e-6)  # sqrt: 1e-6 at 1e-12


def test_pressing_on_a_default_side_is_reported_unbounded():
    with pytest.warns(constropt.BoundsWarning):
        res = constropt.solve(x, [x <= 5], seed=0)
    assert res.feasible and not res.success and res.status is constropt.Status.UNBOUNDED
    assert "presses on the default box side of x (lower side" in res.message
    assert "after 4 expansions" in res.message


def test_one_sided_bound_with_the_optimum_near_the_origin():
    # HS2 (Hock & Schittkowski): Rosenbrock with y >= 1.5 only; x has no bound at all.
    # Optimum (1.2243707487, 1.5), f = 0.0504261879 (published).
    f = 100 * (y - x**2) ** 2 + (1 - x) ** 2
    with pytest.warns(constropt.BoundsWarning):
        res = constropt.solve(f, [y >= 1.5], seed=0)
    assert res.success and res.fun == pytest.approx(0.0504261879, abs=1e-8)
    assert res.x[x] == pytest.approx(1.2243707487, abs=1e-5)


def test_narrow_well_near_the_origin_with_a_one_sided_bound():
    # y >= -2 only, x open: in +-1000 the well (radius ~3) holds no individual of the
    # population and the objective is 1 everywhere (main returned fun=1.0 at x=940)
    f = 1 - sp.exp(-(x - 1) ** 2 - (y - sp.Rational(1, 2)) ** 2)
    with pytest.warns(constropt.BoundsWarning):
        res = constropt.solve(f, [y >= -2], seed=0)
    assert res.success and res.fun == pytest.approx(0.0, abs=1e-10)
    assert res.x[x] == pytest.approx(1.0, abs=1e-4) and res.x[y] == pytest.approx(0.5, abs=1e-4)


def test_default_box_expands_to_a_far_optimum():
    # the problem's scale is 1 (box [-10, 10]); the optimum at x = 300 is found by expansion
    f = (x / 100 - 3) ** 2
    with pytest.warns(constropt.BoundsWarning):
        res = constropt.solve(f, seed=0)
    assert res.success and res.x[x] == pytest.approx(300.0, abs=1e-3)
    lo, hi = res.problem.bounds[x]
    assert lo < 300 < hi


# -- bounds that depend on parameters follow them ---------------------------------------------
PARAM_FILE = """
objective = "-x - y"
[variables]
x = { lower = "-r", upper = "r" }
y = [0, "2*r"]
[parameters]
r = 2
"""


def test_file_bounds_follow_the_parameters_in_solve_and_solve_batch():
    from constropt.files import loads_problem

    spec = loads_problem(PARAM_FILE)
    r = next(iter(spec.parameters))
    assert spec.bounds[spec.variables[0]] == (-r, r)  # kept as expressions, not 2.0
    p = spec.to_problem()
    for value in (2.0, 3.0, 0.5):  # optimum x = r, y = 2r: f = -3r
        res = constropt.solve(p, parameters={r: value}, seed=0)
        assert res.success and res.fun == pytest.approx(-3 * value, abs=1e-9)
    br = constropt.solve_batch(p, {r: np.array([1.0, 2.0, 3.0])}, seed=0)
    np.testing.assert_allclose([q.fun for q in br.results], [-3.0, -6.0, -9.0], atol=1e-6)
    assert all(q.success for q in br.results)


def test_problem_bounds_in_parameters():
    p = constropt.Problem(-x, bounds={x: (-R, R)}, parameters={R: 1.0})
    assert p.constraints == (x >= -R, x <= R)  # also constraints: per instance in a batch
    assert constropt.solve(p, parameters={R: 4.0}, seed=0).fun == pytest.approx(-4.0)
    # r = -1: x >= 1 and x <= -1 (the bounds of these parameter values are empty)
    res = constropt.solve(p, parameters={R: -1.0}, seed=0)
    assert res.status is constropt.Status.INFEASIBLE and not res.success
    with pytest.raises(constropt.ProblemError, match="depends on y, which is not a parameter"):
        constropt.Problem(x**2, bounds={x: (-y, 1)}, variables=[x])
