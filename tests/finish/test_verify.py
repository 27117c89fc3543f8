"""Rigorous feasibility of the returned point: Arb balls at the exact point.

The reference is exact arithmetic: sympy ``Float`` constants and float64 coordinates
become the exact rationals they are, the relation's sides are evaluated with
``sympy.N`` at 60 digits (sympy refines until the digits are correct), and a value
below 1e-50 in magnitude is an exact tie (the constructions here tie exactly or differ
by far more; a rational difference is decided exactly).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import sympy as sp

import _constructs as lowered
import constropt
from _reference import exact, exact_holds, sympy_value
from constropt.finish._verify import Verification, verify_point
from constropt.problem._rigorous import UNDEF, program_for, working_precision

x, y = sp.symbols("x y", real=True)
n = sp.Symbol("n", integer=True)
NONE = np.zeros(0)


def solve(obj, cons, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return constropt.solve(obj, cons, seed=0, **kw)


# -- the five rounding-level cases: float64 alone calls each one feasible -------------------
def test_cancellation_x_minus_sqrt_is_reported_uncertified():
    """x - sqrt(x**2 + 1) >= -1e-9 is ~ -1/(2x): float64 rounds it to 0 near x = 6.7e7,
    where the exact value is -7.45e-9 (the constraint needs x >= 5e8)."""
    c = x - sp.sqrt(x**2 + 1) >= -1e-9
    res = solve(x, [c], bounds={x: (0, 1e9)})
    if res.feasible:  # certified: then exact arithmetic agrees
        assert exact_holds(c, dict(res.x))
    else:
        assert not exact_holds(c, dict(res.x))
        assert res.verification.verdicts == ("violated",)
        assert not res.success and res.status is constropt.Status.INFEASIBLE
        if res.verification.float64_feasible:
            assert "feasibility could not be certified" in res.message


def test_certify_refuses_a_float64_feasible_point_it_cannot_prove():
    """The final check itself, at the point float64 accepts: no certified move exists
    (the constraint needs x >= 5e8), so the point is reported with its proven violation."""
    from constropt.finish._repair import certify_point

    c = x - sp.sqrt(x**2 + 1) >= -1e-9
    p = constropt.Problem(x, [c], bounds={x: (0, 1e9)})
    pt = np.array([67108864.00000182])
    ev = p.evaluate(pt)
    assert ev.feasible[0]  # float64's verdict
    out = certify_point(p, pt, NONE, float(ev.fun[0]), ev.violation[0])
    assert not out.feasible and out.verification.float64_feasible
    assert out.verification.verdicts == ("violated",)
    assert "feasibility could not be certified" in out.note and "violated" in out.note
    assert out.violations[0] > 6e-9  # the proven violation, not float64's 0
    assert out.evaluations <= 10


def test_log1p_tiny_threshold_is_certified_or_refused():
    c = sp.log(1 + x) <= 1e-20
    res = solve(-x, [c], bounds={x: (0, 1)})
    assert res.feasible == exact_holds(c, dict(res.x))
    assert res.feasible  # a repair reaches a certified point (x = 0 qualifies)


def test_integer_beyond_2_53_is_an_exact_python_int():
    c = n >= 2**53 + 1
    res = solve(n, [c], bounds={n: (0, 2**54)})
    assert res.feasible and res.success
    assert isinstance(res.x[n], int) and res.x[n] == 2**53 + 1
    assert exact_holds(c, dict(res.x))
    assert res.verification.repaired
    # fun is the float64 objective of x_array (2**53 is the nearest float); its proven
    # distance to the exact objective 2**53 + 1 is stated
    assert res.verification.fun_error >= 1.0


def test_sin2_plus_cos2_above_one_is_never_feasible():
    c = sp.sin(x) ** 2 + sp.cos(x) ** 2 > 1
    res = solve(x**2, [c], bounds={x: (-3, 3)})
    assert not res.feasible and not res.success
    assert res.verification.verdicts[0] in ("violated", "undecided")
    assert res.verification.float64_feasible


def test_two_sevenths_threshold_is_met_exactly():
    """float(2/7) is 1.6e-17 below 2/7: the float64 optimum of min x + y violates y >= 2/7."""
    cons = [y >= sp.Rational(2, 7), x >= 0, x <= 1, y <= 1]
    res = solve(x + y, cons)
    assert res.feasible and all(exact_holds(c, dict(res.x)) for c in cons)
    assert res.fun == pytest.approx(2 / 7, abs=1e-12)  # the move is at rounding level


# -- verify_point at chosen points ------------------------------------------------------------
TWO7 = 2 / 7
CASES = [
    (x - sp.sqrt(x**2 + 1) >= -1e-9, 6.7e7, "violated"),
    (x - sp.sqrt(x**2 + 1) >= -1e-9, 6e8, "satisfied"),
    (y >= sp.Rational(2, 7), TWO7, "violated"),
    (y >= sp.Rational(2, 7), math.nextafter(TWO7, 1), "satisfied"),
    (x < 1, 1.0, "violated"),
    (x <= 1, 1.0, "satisfied"),
    (x > 0, 5e-324, "satisfied"),
    (sp.log(1 + x) <= 1e-20, 1.1e-16, "violated"),
    (sp.sin(x) ** 2 + sp.cos(x) ** 2 <= 1, 0.3, "satisfied"),  # exact zero, proven
    (sp.sin(x) ** 2 + sp.cos(x) ** 2 < 1, 0.3, "violated"),
    ((x + 1) ** 2 - x**2 - 2 * x <= 1, 1e30, "satisfied"),
    ((x + 1) ** 2 - x**2 - 2 * x > 1, 1e30, "violated"),
    (sp.log(x) <= 0, 0.0, "violated"),  # undefined: violated
    (sp.sqrt(x - 1) <= 5, 0.5, "violated"),
    (sp.Eq(x**2, 2), math.sqrt(2), "satisfied"),  # |h| ~ 3e-16 <= eq_tol
    (sp.Eq(x, 1), 1 + 2e-4, "violated"),
    (sp.Or(x < 0, x > 1), 0.5, "violated"),
    (sp.Or(x < 0, x > 1), 2.0, "satisfied"),
    (sp.And(x > 0, x < 1), 1.0, "violated"),
    (sp.Piecewise((x, x > 0), (-x, True)) <= 0.1, -0.1, "satisfied"),
    (sp.Piecewise((sp.log(x), x > 0), (x**2, True)) <= 1e-300, 0.0, "satisfied"),
    (sp.atan2(x, -1) > 3.14159, 0.0, "satisfied"),  # atan2(0, -1) = pi
    (sp.Mod(x, sp.Rational(1, 3)) > 0, 1.0, "violated"),  # 1 mod 1/3 = 0 exactly
    (sp.Mod(x, sp.Rational(1, 3)) <= 0, 1.0, "satisfied"),
    (sp.floor(x) >= 3, 3.0, "satisfied"),
    (sp.floor(x) >= 3, math.nextafter(3.0, 0), "violated"),
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_verdicts_at_chosen_points(case):
    c, v, want = CASES[case]
    var = next(iter(c.free_symbols))
    p = constropt.Problem(var, [c], variables=(var,), bounds={var: (-10, 1e30)})
    ver = verify_point(p, np.array([v]), NONE)
    assert isinstance(ver, Verification)
    assert ver.verdicts == (want,), (c, v, ver)
    assert ver.feasible == (want == "satisfied")
    assert (want == "satisfied") == exact_holds(c, {var: v}, p.eq_tol)


def test_parameters_and_float_constants_are_exact():
    r = sp.Symbol("r")
    p = constropt.Problem(y, [y <= sp.Rational(1, 10), y <= r, y >= 0.1],
                          parameters={r: 0.1}, bounds={y: (0, 1)})
    ver = verify_point(p, np.array([0.1]), p.parameter_vector())
    # float(0.1) = 0.1000000000000000055...: above 1/10, equal to the parameter and Float
    assert ver.verdicts == ("violated", "satisfied", "satisfied")


def test_integer_genes_beyond_2_53_are_checked_as_given():
    p = constropt.Problem(n, [n >= 2**60 + 1], bounds={n: (0, 2**62)})
    assert verify_point(p, np.array([2.0**60]), NONE).verdicts == ("violated",)
    ok = verify_point(p, np.array([2.0**60]), NONE, genes=[2**60 + 1])
    assert ok.verdicts == ("satisfied",)


def test_fun_error_bounds_the_distance_to_the_exact_objective():
    f = x - sp.sqrt(x**2 + 1)
    p = constropt.Problem(f, bounds={x: (0, 1e9)})
    pt = np.array([6.7e7])
    fun = float(p.evaluate(pt).fun[0])
    ver = verify_point(p, pt, NONE, fun=fun)
    true = abs(sp.N(exact(f, {x: 6.7e7}) - sp.Rational(fun), 30))
    assert true > 1e-12  # float64's cancellation error
    assert true <= ver.fun_error <= true * (1 + 1e-12)  # proven, and tight


def test_undefined_objective_has_zero_error_when_reported_nan():
    p = constropt.Problem(sp.log(x), bounds={x: (-1, 1)})
    assert verify_point(p, np.array([-0.5]), NONE, fun=math.nan).fun_error == 0.0
    assert verify_point(p, np.array([-0.5]), NONE, fun=1.0).fun_error == math.inf


# -- every construct of the lowering: the ball holds sympy's value ------------------------------
@pytest.mark.parametrize("name", sorted(lowered.CASES))
def test_enclosure_of_every_lowered_construct(name):
    from flint import arb

    expr = lowered.CASES[name]
    p = constropt.Problem(expr, variables=lowered.XYZ, bounds=lowered.BOX)
    prog = program_for(p)
    for pt in lowered.POINTS[::3]:
        want = sympy_value(expr, dict(zip(lowered.XYZ, pt, strict=True)))
        with working_precision(128):
            ball = prog.run([arb(float(a)) for a in pt], [])[0]
        if ball is UNDEF:
            assert math.isnan(want), (name, pt)
            continue
        assert not ball.is_nan(), (name, pt)  # every case is decided at these points
        assert not math.isnan(want), (name, pt, ball)
        if math.isinf(want):
            assert float(ball.mid()) == want and float(ball.rad()) == 0, (name, pt, ball)
            continue
        # sympy's reference is correct to ~30 digits; the ball is far tighter
        lo, hi = float(ball.lower()), float(ball.upper())
        assert lo - 1e-25 * max(1, abs(want)) <= want <= hi + 1e-25 * max(1, abs(want)), \
            (name, pt, ball, want)


def test_sums_products_and_matrix_elements_match_exact_expansion():
    from flint import arb

    v = sp.IndexedBase("v", shape=(12,))
    i, j = sp.symbols("i j", integer=True)
    M = sp.MatrixSymbol("M", 3, 4)
    exprs = [
        sp.Sum((v[i + 1] - v[i]) ** 2, (i, 0, 10)) + v[3] * v[11] + sp.Sum(v[2 * i], (i, 0, 5)),
        sp.Sum(v[9 - i] * i, (i, 0, 9)) + sp.Sum(v[i], (i, 4, 1)) + sp.Sum(v[i], (i, 3, 2)),
        sp.Sum(sp.Sum(v[i] ** 2, (j, 0, 2)), (i, 0, 4)) + sp.Product(1 + v[i], (i, 0, 4)),
        sp.Sum(sp.Piecewise((sp.sqrt(v[i]), v[i] > 0), (v[i] ** 2, True)), (i, 0, 5)),
        sp.Sum(M[i, j] ** 2 * (i + 1), (j, 0, 3), (i, 0, 2)) + sp.Sum(M[i, i], (i, 0, 2)),
    ]
    rng = np.random.default_rng(0)
    for e in exprs:
        p = constropt.Problem(e, bounds={s: (-3, 3) for s in (v, M) if e.has(s)})
        pt = rng.uniform(-3, 3, p.n)
        sub = {}
        for b in p.layout.blocks:
            for k in range(b.size):
                el = b.symbol[k // 4, k % 4] if isinstance(b.symbol, sp.MatrixSymbol) \
                    else b.symbol[k]
                sub[el] = sp.Rational(float(pt[b.offset + k]))
        want = sp.N(e.doit().xreplace(sub), 40)
        with working_precision(128):
            ball = program_for(p).run([arb(float(a)) for a in pt], [])[0]
        assert abs(float(ball.mid()) - float(want)) <= 1e-12 * max(1.0, abs(float(want)))
        assert float(ball.rad()) < 1e-30


# -- integration: batch, results --------------------------------------------------------------
def test_solve_batch_certifies_every_instance():
    r = sp.Symbol("r")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p = constropt.Problem(x + y, [y >= r * sp.Rational(2, 7), x >= 0, x <= 1, y <= 1],
                              parameters={r: 1.0})
        out = constropt.solve_batch(p, {r: np.array([1.0, 0.5, 2.0])}, seed=0)
    for res, rv in zip(out, (1.0, 0.5, 2.0), strict=True):
        assert res.verification is not None
        assert res.feasible
        cons = [c.xreplace({r: rv}) for c in p.constraints]
        assert all(exact_holds(c, dict(res.x)) for c in cons)


def test_result_reports_the_verification():
    res = solve((x - 1) ** 2, [x >= sp.Rational(1, 3)], bounds={x: (0, 2)})
    v = res.verification
    assert v.feasible and v.verdicts == ("satisfied",) and v.float64_feasible
    assert v.fun_error < 1e-15
    d = res.to_dict()["verification"]
    assert d["feasible"] is True and d["verdicts"] == ["satisfied"]


def test_islands_report_the_verification():
    cons = [y >= sp.Rational(2, 7), x >= 0, x <= 1, y <= 1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = constropt.solve_islands(x + y, cons, seed=0, max_generations=60)
    v = res.verification
    assert v is not None and res.feasible == (v.feasible and v.float64_feasible)
    if res.feasible:
        assert all(exact_holds(c, dict(res.x)) for c in cons)


@pytest.mark.parametrize("budget", [250, 400])
def test_repair_evaluations_count_against_max_evals(budget):
    cons = [y >= sp.Rational(2, 7), x >= 0, x <= 1, y <= 1]
    res = solve(x + y, cons, max_evals=budget)
    assert res.nfev <= budget
    if res.feasible:
        assert all(exact_holds(c, dict(res.x)) for c in cons)


@pytest.mark.parametrize("seed", [0, 3])
def test_repair_moves_a_continuous_ulp_before_an_integer_unit(seed):
    """``x + n <= 5`` is active at the optimum (n, x) = (3, 2), f = 0.25; the polish can
    end at x = 2 + 1 ulp.  The repair must settle the tie with ulp-scale moves of x, not
    by moving n to 2 (that gave f = 0.45, reported as CONVERGED)."""
    n = sp.Symbol("n", integer=True)
    res = constropt.solve((x - 2.3)**2 + (n - 2.6)**2, [x + n <= 5],
                          bounds={x: (-10, 10), n: (-10, 10)}, seed=seed, progress=False)
    assert res.success and res.feasible and res.x[n] == 3
    assert res.fun == pytest.approx(0.25, abs=1e-9)   # x within a few ulps of 2
    assert float(sp.Rational(res.x[x]) + 3) <= 5       # exact check of the tie


def test_repair_candidates_never_leave_the_box():
    """A unit move of an integer gene at its lower bound would leave the box (RC13 was
    reported feasible at x4 = 77 with x4 in [78, 102])."""
    from constropt.finish._repair import _candidates

    n = sp.Symbol("n", integer=True)
    p = constropt.Problem(x + n, [x + n >= 78.5], bounds={x: (0, 1), n: (78, 102)})
    order = [str(v) for v in p.variables]
    x0 = np.array([78.0 if v == "n" else 0.5 for v in order])
    genes = [78 if v == "n" else 0.5 for v in order]
    d = np.array([-1.0 if v == "n" else 0.0 for v in order])   # only the integer may move
    moved = list(_candidates(p, x0, genes, d))
    assert all((xm >= p.lower).all() and (xm <= p.upper).all() for xm, _ in moved)
    d_up = -d
    assert any(g[order.index("n")] == 79 for _, g in _candidates(p, x0, genes, d_up))
