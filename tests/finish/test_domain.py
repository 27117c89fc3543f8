"""A point outside the objective's domain never becomes the result while a defined one is
at hand (issue 26, item 9).

The search keeps its best defined point beside its best point; the finish falls back to it
where the float64 check finds the best point's objective undefined (feasible first, then
defined), polishes from both, and a polish never trades a defined point for an undefined
one.  A feasible point where the objective is NaN still beats an infeasible one: then the
status is UNDEFINED (the objective is NaN on the feasible points found).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import sympy as sp

import constropt
from constropt import Status
from constropt.engine._best import Best, merge_defined
from constropt.engine._driver import Instance
from constropt.engine._ga import Population
from constropt.finish._budget import Budget
from constropt.finish._defined import replaces, result_key
from constropt.finish._finish import finish

x, y, c = sp.symbols("x y c")
# min (x - y) - log(x - y): undefined where x <= y (half the box); minimum 1 at x - y = 1
_F = (x - y) - sp.log(x - y)
_BOX = {x: (-5, 5), y: (-5, 5)}


def _instance(problem, best, defined, pop=None):
    best = np.asarray(best, dtype=np.float64)
    pop = np.array([best, best]).T if pop is None else np.asarray(pop, dtype=np.float64)
    d = None
    if defined is not None:
        d = (np.asarray(defined, dtype=np.float64), 0.0, 0.0)  # f, cv: working precision
    return Instance(best, math.inf, 0.0, 10, 1000, Status.CONVERGED, 0, np.zeros(1),
                    np.zeros(1), np.zeros(1), pop, d)


def _finish(problem, inst, polish):
    with np.errstate(all="ignore"):
        x_, f, V, nfev, status, message, checked = finish(
            problem, inst, np.zeros(0), Budget(None), polish=polish)
    return x_, f, V, status, checked


def test_defined_feasible_point_replaces_an_undefined_best():
    problem = constropt.Problem(_F, [x + y <= 10], bounds=_BOX)
    inst = _instance(problem, [0.0, 1.0], [2.0, 1.5])  # x - y = -1 (NaN); 0.5 (defined)
    xr, f, V, status, checked = _finish(problem, inst, polish=False)
    assert np.array_equal(xr, [2.0, 1.5]) and f == pytest.approx(0.5 - math.log(0.5))
    assert checked.feasible and status is Status.CONVERGED
    xr, f, V, status, checked = _finish(problem, inst, polish=True)
    assert checked.feasible and f == pytest.approx(1.0, abs=1e-8)  # SLSQP's ftol at unit scale
    assert xr[0] - xr[1] == pytest.approx(1.0, abs=1e-4)


def test_defined_infeasible_point_beats_an_undefined_infeasible_one():
    # best: x - y = -3 (NaN), violation 3; defined: x - y = 4, violation 4 (larger)
    problem = constropt.Problem(_F, [x + y <= 0], bounds=_BOX)
    inst = _instance(problem, [0.0, 3.0], [4.0, 0.0])
    xr, f, V, status, checked = _finish(problem, inst, polish=False)
    assert np.array_equal(xr, [4.0, 0.0]) and math.isfinite(f)
    assert status is Status.INFEASIBLE
    xr, f, V, status, checked = _finish(problem, inst, polish=True)  # the polish gets there
    assert checked.feasible and status is not Status.UNDEFINED
    assert f == pytest.approx(1.0, abs=1e-8) and xr[0] + xr[1] <= 0


def test_undefined_feasible_best_is_polished_from_the_defined_infeasible_point():
    problem = constropt.Problem(_F, [x + y <= 0], bounds=_BOX)
    inst = _instance(problem, [-1.0, 0.0], [3.0, 0.0])  # NaN feasible; defined, violates 3
    xr, f, V, status, checked = _finish(problem, inst, polish=False)
    # feasible first: without a polish the result says the objective is NaN there
    assert np.array_equal(xr, [-1.0, 0.0]) and status is Status.UNDEFINED
    xr, f, V, status, checked = _finish(problem, inst, polish=True)
    assert checked.feasible and f == pytest.approx(1.0, abs=1e-8)


def test_the_polish_never_trades_a_defined_point_for_an_undefined_one():
    problem = constropt.Problem(_F, bounds=_BOX)
    feas = np.zeros(0)
    assert not replaces(problem, math.nan, feas, 5.0, np.array([1.0]))  # NaN feasible end
    assert replaces(problem, 7.0, feas, math.nan, feas)
    assert not replaces(problem, math.nan, feas, math.nan, feas)
    # the order of final points: defined feasible < NaN feasible < defined infeasible
    # < NaN infeasible, whatever the violations
    keys = [result_key(problem, 3.0, feas), result_key(problem, math.nan, feas),
            result_key(problem, 1.0, np.array([5.0])),
            result_key(problem, math.nan, np.array([0.1]))]
    assert keys == sorted(keys)


def test_engine_keeps_the_best_defined_point():
    inf = math.inf
    best = Best(np.zeros((2, 1)), np.full(1, inf), np.full(1, inf))
    X = np.array([[[0.0, 1.0, 2.0, 3.0]], [[0.0, -1.0, -2.0, -3.0]]])   # (N, R, S)
    f = np.array([[inf, 3.0, np.nan, 2.0]])  # NaN (as the generated key maps it: inf)
    cv = np.array([[0.0, 1.0, 0.0, 0.5]])
    got = merge_defined(best, Population(X, f, cv))
    assert got.x[:, 0].tolist() == [3.0, -3.0] and got.f[0] == 2.0 and got.cv[0] == 0.5
    # a later population with a worse defined point leaves it
    worse = merge_defined(got, Population(X[..., 1:2], f[:, 1:2], cv[:, 1:2]))
    assert worse.f[0] == 2.0


# -- end to end: problems whose search ends at an undefined point ---------------------------
x2, x3, x4, x5, x6 = sp.symbols("x2:7")


def _equilibrium(coef):
    """GLOBALLib ex8_5_4's shape (as in tests/finish/test_unbounded.py) with the box the domain
    gives left open, so the search meets the undefined half-spaces (x3 < 0, x4 < x6)."""
    from constropt.problem import _bounds

    f = (x2 * sp.log(x2) + x3 * sp.log(x3) - sp.log(x4 - x6) + x4
         - x5 * sp.log(1 + x6 / x4) / x6 + coef * x2
         + sp.Float("3.27527428318836") * x3 - 1)
    cons = [sp.Eq(x4**3 - x4**2 + (-x6**2 - x6 + x5) * x4 - x5 * x6, 0),
            sp.Eq(-(sp.Float("0.352565") * x2**2 + 2 * sp.Float("0.844083") * x2 * x3
                    + sp.Float("2.14335") * x3**2) + x5, 0),
            sp.Eq(-sp.Float("0.12932") * x2 - sp.Float("0.271567") * x3 + x6, 0),
            sp.Eq(x2 + x3, 1)]
    keep = _bounds._domain_sides
    _bounds._domain_sides = lambda *args: (args[4], args[5], args[9])
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", constropt.BoundsWarning)
            return constropt.Problem(f, cons, parameters={c: 0.36} if coef is c else None)
    finally:
        _bounds._domain_sides = keep


@pytest.mark.parametrize("backend, algorithm, seed", [
    ("numpy", "de", 0),   # before: UNDEFINED at x3 = -0.81
    ("torch", "de", 3),   # before: UNDEFINED
])
def test_solve_returns_a_defined_point(backend, algorithm, seed):
    problem = _equilibrium(sp.Float("0.362259780811985"))
    res = constropt.solve(problem, seed=seed, backend=backend, algorithm=algorithm)
    assert res.success and np.isfinite(res.fun)
    assert res.x[x3] > 0 and res.x[x4] > res.x[x6]
    # the optimum with the equalities exact (tight, the default): a scan of the one free
    # variable x2 through the equalities' solution (x3 = 1 - x2, x6 and x5 from x2 and
    # x3, x4 the cubic's root above x6) gives -4.2514710e-4 at x2 = 0.77515
    assert res.fun == pytest.approx(-4.2514710e-4, rel=1e-6)


@pytest.mark.parametrize("backend, seed", [("numpy", 1), ("torch", 2)])
def test_ga_never_returns_an_undefined_point_beside_defined_ones(backend, seed):
    # before: UNDEFINED (the polish carried the GA's defined, infeasible best to a
    # feasible point where the objective is NaN); the GA's search fails here, and the
    # result says so at a defined point
    problem = _equilibrium(sp.Float("0.362259780811985"))
    res = constropt.solve(problem, seed=seed, backend=backend, algorithm="ga")
    assert np.isfinite(res.fun) and res.status is not Status.UNDEFINED


def test_batch_instances_end_at_defined_points():
    # before: instances 2 and 4 (c = 0.36, 0.42) ended UNDEFINED at seed 0
    problem = _equilibrium(c)
    values = np.array([0.30, 0.33, 0.36, 0.39, 0.42, 0.45])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", constropt.BoundsWarning)
        br = constropt.solve_batch(problem, {c: values}, seed=0)
    assert all(r.success and np.isfinite(r.fun) for r in br.results)
    # the objective's c * x2 term: larger c, larger optimum
    assert np.all(np.diff([r.fun for r in br.results]) > 0)


# -- divisions: a zero divisor is undefined (NaN), never an infinity that wins -------------
@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("objective", [1 / x, -1 / x**2])
def test_pole_inside_the_box_is_never_a_success(objective, backend):
    problem = constropt.Problem(objective, bounds={x: (-1, 1)})
    assert np.isnan(problem.evaluate(np.zeros((1, 1))).fun[0])  # not -inf
    res = constropt.solve(problem, seed=0, backend=backend)
    assert not res.success and res.status in (Status.UNBOUNDED, Status.NOT_CONFIRMED)
