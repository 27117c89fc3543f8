"""Unbounded problems are never reported as optima; undefined points never as results.

An unbounded objective ends ``UNBOUNDED`` when a probe proves it (a feasible point beyond
``UNBOUNDED_LEVEL``, a steady fall toward a pole or along an open ray) and
``NOT_CONFIRMED`` when a better feasible point is known without such a proof; neither is
a success.  A problem whose objective is undefined on part of an unbounded space searches
where it is defined (its domain's bounds reach bound propagation).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import sympy as sp

import constropt
from constropt import Status
from constropt.cli import EXIT_FAILED, _exit_code
from constropt.problem._bounds import domain_constraints

x, y, v0, a = sp.symbols("x y v0 a")


def _solve(*args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", constropt.BoundsWarning)
        return constropt.solve(*args, **kw)


def test_log_pole_is_unbounded_even_when_the_budget_is_nearly_spent():
    # issue 26: with max_evals=20000 the search ends 306 evaluations short of the budget
    # at x = 5.4e-148 (fun -339); the probe (751 evaluations then) did not fit and the
    # result claimed success with status MAX_EVALS
    res = _solve(sp.log(x), [x > 0, x <= 1], seed=0, max_evals=20000)
    assert res.feasible and not res.success and res.status is Status.UNBOUNDED
    assert res.nfev <= 20000
    assert _exit_code(res) == EXIT_FAILED


def test_periodic_constraint_on_an_unbounded_set_is_unbounded():
    # issue 26: cos(v0**2) < 0.29 holds for arbitrarily large v0; the one probe point
    # beyond the default box side was infeasible, so the box never expanded and the run
    # ended CONVERGED with success at the side of the default box
    res = _solve(-3 * v0, [v0 >= -1, sp.cos(v0**2) < 0.29], seed=0)
    assert res.feasible and not res.success and res.status is Status.UNBOUNDED


def test_batch_reports_the_same_unboundedness():
    # solve_batch searches the default box without expanding it: the ray probe beyond its
    # soft sides says what solve says
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", constropt.BoundsWarning)
        problem = constropt.Problem(-a * v0, [v0 >= -1, sp.cos(v0**2) < 0.29],
                                    parameters={a: 3})
        batch = constropt.solve_batch(problem, {a: [3.0, 2.0, 0.5]}, seed=0)
    assert [r.status for r in batch] == [Status.UNBOUNDED] * 3
    assert not batch.success.any() and batch.feasible.all()


def test_unbounded_along_a_diagonal_strip():
    # no coordinate ray stays feasible (|x - y| <= 1): the pressed sides' sum does
    res = _solve(-x - y, [x - y <= 1, y - x <= 1], seed=0)
    assert res.feasible and not res.success and res.status is Status.UNBOUNDED
    assert "x increasing and y increasing at once" in res.message


def test_interior_optimum_of_an_unbounded_objective_is_not_a_success():
    # x**2 - 1e-6 x**4 has a local minimum at 0 and falls without bound beyond |x| = 707
    res = _solve(x**2 - sp.Rational(1, 10**6) * x**4, seed=0)
    assert res.feasible and not res.success and res.status is Status.UNBOUNDED


def test_optimum_beyond_the_expanded_box_is_not_confirmed():
    # (x - 1e7)**2: four expansions of the default box reach x ~ 4e5; a feasible point
    # beyond is far better, but the objective rises again farther out: not unbounded,
    # and not a confirmed optimum either
    res = _solve((x - 10**7) ** 2, seed=0)
    assert res.feasible and not res.success and res.status is Status.NOT_CONFIRMED
    assert "better than the result's" in res.message
    assert _exit_code(res) == EXIT_FAILED
    assert res.to_scipy().status == 10 and not res.to_scipy().success


def test_budget_ended_expansion_toward_a_huge_given_bound_is_not_confirmed():
    # the given bound 1e9 is far beyond the problem's scale: the budget ends the box's
    # expansion at x = 100 while x = 1e9 is feasible and better (it was a success)
    res = _solve(-x, bounds={x: (0, 1e9)}, seed=0, max_evals=1500)
    assert res.feasible and not res.success and res.status is Status.NOT_CONFIRMED
    assert res.nfev <= 1500
    full = _solve(-x, bounds={x: (0, 1e9)}, seed=0)
    assert full.success and full.x[x] == pytest.approx(1e9, rel=1e-12)


@pytest.mark.parametrize("objective, optimum", [
    ((x - 3) ** 2 + (y + 2) ** 2, 0.0),
    (x**2 + y**2 - 2 * x + sp.exp(-y), 0.0),   # open sides, interior optimum
    (sp.sqrt(x**2 + 1) + (y - 1) ** 2, 1.0),
])
def test_bounded_problems_on_open_sides_stay_successes(objective, optimum):
    res = _solve(objective, seed=0)
    if objective.has(sp.exp):  # minimum of x**2 - 2x + y**2 + exp(-y): x = 1, 2y = exp(-y)
        ys = 0.35173371124919584  # root of 2y = exp(-y) (Lambert W(1/2))
        optimum = -1 + ys**2 + math.exp(-ys)
    assert res.success and res.status is Status.CONVERGED
    assert res.fun == pytest.approx(optimum, abs=1e-8)  # SLSQP's ftol at unit scale


def test_new_status_fails_and_reads_as_a_sentence():
    assert Status.NOT_CONFIRMED.failed
    assert Status.NOT_CONFIRMED.value.startswith("the optimum is not confirmed")


# -- item 9: an objective undefined on part of an unbounded space ---------------------------
x2, x3, x4, x5, x6 = sp.symbols("x2:7")
# The shape of a published phase-equilibrium problem (GLOBALLib ex8_5_x: mixing entropy
# x*log(x), a cubic equation of state, log(x4 - x6) and log(1 + x6/x4)/x6 terms), with our
# own coefficients; every variable unbounded.
_EQUILIBRIUM = (
    x2 * sp.log(x2) + x3 * sp.log(x3) - sp.log(x4 - x6) + x4
    - x5 * sp.log(1 + x6 / x4) / x6 + sp.Rational(2, 5) * x2 + 3 * x3 - 1,
    [sp.Eq(x4**3 - x4**2 + (x5 - x6**2 - x6) * x4 - x5 * x6, 0),
     sp.Eq(x5, sp.Rational(35, 100) * x2**2 + sp.Rational(17, 10) * x2 * x3
           + sp.Rational(21, 10) * x3**2),
     sp.Eq(x6, sp.Rational(13, 100) * x2 + sp.Rational(27, 100) * x3),
     sp.Eq(x2 + x3, 1)],
)


def test_domain_of_the_objective_gives_propagated_bounds():
    f, cons = _EQUILIBRIUM
    args = {str(c.lhs)
            for c in (d.relation for d in domain_constraints(f))}
    assert {"x2", "x3", "x4 - x6", "1 + x6/x4"} <= args
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", constropt.BoundsWarning)
        problem = constropt.Problem(f, cons)
    lo, hi = problem.bounds[x2]
    # x2 >= 0 from log(x2); x2 <= 1 from x2 + x3 == 1 with x3 >= 0 (within the band of
    # eq_tol 1e-4 propagation takes equalities to)
    assert lo == 0 and hi == pytest.approx(1 + 1e-4, abs=1e-9)
    lo, hi = problem.bounds[x6]  # 0.13 x2 + 0.27 x3 over that box, within the band (the
    # intervals of x2 and x3 taken independently)
    assert -2e-4 <= lo <= 0 and 0.4 <= hi <= 0.41  # 0.13 + 0.27, plus the bands
    before = _open_problem(f, cons)
    # the objective's domain is what closed the side
    assert before._soft.lower[0] and before.bounds[x2][0] < 0


# GLOBALLib ex8_5_4 (a phase-equilibrium problem, the one issue 26 ran): as published
_EX8_5_4 = (
    x2 * sp.log(x2) + x3 * sp.log(x3) - sp.log(x4 - x6) + x4
    - x5 * sp.log(1 + x6 / x4) / x6 + sp.Float("0.362259780811985") * x2
    + sp.Float("3.27527428318836") * x3 - 1,
    [sp.Eq(x4**3 - x4**2 + (-x6**2 - x6 + x5) * x4 - x5 * x6, 0),
     sp.Eq(-(sp.Float("0.352565") * x2**2 + 2 * sp.Float("0.844083") * x2 * x3
             + sp.Float("2.14335") * x3**2) + x5, 0),
     sp.Eq(-sp.Float("0.12932") * x2 - sp.Float("0.271567") * x3 + x6, 0),
     sp.Eq(x2 + x3, 1)],
)


def test_objective_with_logs_of_unbounded_variables_returns_a_defined_point():
    # issue 26: ex8_5_4 returned a point with x3 = -0.81, where x3*log(x3) is NaN
    # (status UNDEFINED); its variables are all unbounded
    f, cons = _EX8_5_4
    # the equalities' band, as the reference below uses (the tight default's optimum:
    # tests/finish/test_domain.py)
    res = _solve(f, cons, seed=0, eq_tol=1e-4)
    assert res.success and res.feasible and np.isfinite(res.fun)
    p = res.x
    assert p[x2] > 0 and p[x3] > 0 and p[x4] > p[x6]
    assert res.fun == pytest.approx(float(f.subs(p)), rel=1e-9, abs=1e-12)
    # no point of the equalities' band (|h| <= eq_tol = 1e-4) that SLSQP reaches from 30
    # starts is better (published optimum, equalities exact: -4.5142e-4)
    assert res.fun <= _reference(f, cons) + 1e-6  # SLSQP's own tolerance on the reference


def _open_problem(f, cons):
    """The problem as it was built before its domain reached propagation."""
    from constropt.problem import _bounds

    keep = _bounds._domain_sides
    _bounds._domain_sides = lambda *args: (args[4], args[5], args[9])
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", constropt.BoundsWarning)
            return constropt.Problem(f, cons)
    finally:
        _bounds._domain_sides = keep


def _reference(f, cons):
    from scipy.optimize import minimize

    syms = [x2, x3, x4, x5, x6]
    fn = sp.lambdify([syms], f, "numpy")
    gs = [sp.lambdify([syms], c.lhs - c.rhs, "numpy") for c in cons]
    band = [{"type": "ineq", "fun": (lambda z, g=g: 1e-4 - g(z))} for g in gs] + \
        [{"type": "ineq", "fun": (lambda z, g=g: 1e-4 + g(z))} for g in gs]
    domain = [{"type": "ineq", "fun": lambda z: z[0] - 1e-12},
              {"type": "ineq", "fun": lambda z: z[1] - 1e-12},
              {"type": "ineq", "fun": lambda z: z[2] - z[4] - 1e-12}]
    best = math.inf
    rng = np.random.default_rng(0)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(30):
            s = rng.uniform(0.01, 0.99)
            z0 = np.array([s, 1 - s, rng.uniform(0.3, 3), 1.0, 0.2])
            r = minimize(fn, z0, method="SLSQP", constraints=band + domain,
                         options={"maxiter": 500, "ftol": 1e-12})
            if r.success and all(c["fun"](r.x) >= -1e-9 for c in band + domain) and \
                    np.isfinite(r.fun):
                best = min(best, float(r.fun))
    assert math.isfinite(best)
    return best
