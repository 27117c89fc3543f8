"""Poles inside the box: a result never claims success toward a pole it has not excluded.

``1/(x - y)`` has its pole on the line ``x = y`` through the box, not at a box edge, so
the edge approaches do not see it; a float32 search (torch) ended within an ulp of it,
CONVERGED with ``success=True`` at ``f = -9e15``.  The pole probe of the verdict
(:mod:`constropt.finish._poles`) approaches the returned point decade by decade; large
but finite optima next to a pole keep their success.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import sympy as sp

import constropt
from constropt import Status
from constropt.finish._budget import Budget, Incumbent
from constropt.finish._poles import POLE_SUSPECT, pole_cost, pole_probe, pole_status

x, y, a = sp.symbols("x y a")
BOX = {x: (-1, 1), y: (-1, 1)}
FAILED = (Status.UNBOUNDED, Status.NOT_CONFIRMED)
BACKENDS = ["numpy", "torch"]


def _solve(*args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return constropt.solve(*args, **kw)


#: Problems with an infimum of -inf at a pole inside the box (or at a constraint boundary
#: through it): ``(objective, constraints, bounds)``.
POLES = {
    "1/(x-y)": (1 / (x - y), [], BOX),
    "-1/(x-y)**2": (-1 / (x - y) ** 2, [], BOX),
    "1/(x+y-1), constrained": (1 / (x + y - 1), [x + y <= sp.Rational(3, 2), x - y <= 1],
                               {x: (-2, 2), y: (-2, 2)}),
    "log(x-y), x-y>=0": (sp.log(x - y), [x - y >= 0], BOX),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", list(POLES))
def test_a_pole_inside_the_box_is_never_a_success(name, backend):
    f, cons, bounds = POLES[name]
    res = _solve(f, cons, bounds=bounds, variables=[x, y], seed=0, backend=backend)
    assert res.feasible and not res.success, (res.status, res.fun, res.x)
    assert res.status in FAILED, res.message


@pytest.mark.parametrize("backend", BACKENDS)
def test_pole_within_the_budget(backend):
    # the probe's evaluations count in nfev and stay within max_evals
    res = _solve(1 / (x - y), bounds=BOX, seed=1, backend=backend, max_evals=3000)
    assert res.nfev <= 3000
    assert not res.success and res.status in FAILED, res.message


def test_maximized_pole_is_never_a_success():
    res = _solve(1 / (x - y), bounds=BOX, seed=0, backend="torch", maximize=True)
    assert res.feasible and not res.success and res.status in FAILED


def test_the_point_of_the_report_is_a_proven_pole():
    # the torch run's final point: x - y is -2.2e-16 (one ulp), f = -9.0e15
    problem = constropt.Problem(1 / (x - y), bounds=BOX, variables=[x, y])
    pt = np.array([-0.9999996135827685, -0.9999996135827683])
    f = float(1 / (pt[0] - pt[1]))
    got = pole_probe(problem, problem, pt, f, np.zeros(0))
    assert got.status is Status.UNBOUNDED, got
    assert got.fun < -1e14 and got.used <= pole_cost(problem) + 2 * 13 * 2
    assert "approaches" in got.where


def test_a_pole_beside_the_point_is_found_by_bisection():
    # 1e-9 from the pole: the approach toward the point converges (to -1e9) on one side,
    # crosses the pole on the other; bisection moves next to it and a second round proves
    problem = constropt.Problem(1 / (x - y), bounds=BOX, variables=[x, y])
    pt = np.array([0.25, 0.25 + 1e-9])
    got = pole_probe(problem, problem, pt, float(1 / (pt[0] - pt[1])), np.zeros(0))
    assert got.status is Status.UNBOUNDED, got
    assert got.fun < -1e14


def test_probe_leaves_a_finite_optimum_next_to_a_pole_alone():
    # -1/(x - y + 1e-6) on x - y >= 0: minimum -1e6 at x = y; the pole lies 1e-6 outside
    problem = constropt.Problem(-1 / (x - y + sp.Rational(1, 10**6)), [x - y >= 0],
                                bounds=BOX, variables=[x, y])
    pt = np.array([0.3, 0.3])
    got = pole_probe(problem, problem, pt, -1e6, np.zeros(0))
    assert got.status is None and not got.short


def test_probe_stays_within_its_budget():
    problem = constropt.Problem(1 / (x - y), bounds=BOX, variables=[x, y])
    pt = np.array([-0.9999996135827685, -0.9999996135827683])
    f = float(1 / (pt[0] - pt[1]))
    for budget in (0, 3, 7, 12, 30):
        got = pole_probe(problem, problem, pt, f, np.zeros(0), budget=budget)
        assert got.used <= budget
    # the budget leaves the screening undone at an objective beyond POLE_SUSPECT: failed
    assert f <= -POLE_SUSPECT
    budget = Budget(103, used=100)
    status, message = pole_status(problem, problem, Incumbent(pt, f, np.zeros(0), np.zeros(0)),
                                  Status.CONVERGED, budget, Status.CONVERGED, "converged")
    assert status is Status.NOT_CONFIRMED and budget.used <= 103
    assert "budget ran out before the pole probe" in message
    # an ordinary objective the budget left unprobed keeps its status
    budget = Budget(103, used=100)
    status, _ = pole_status(problem, problem,
                            Incumbent(np.array([0.5, -0.5]), 1.0, np.zeros(0), np.zeros(0)),
                            Status.CONVERGED, budget, Status.CONVERGED, "converged")
    assert status is Status.CONVERGED and budget.used <= 103


#: Bounded problems with large finite optima next to a pole: ``(objective, constraints,
#: bounds, f*)``.
FINITE = {
    # pole 1e-3 beyond the constraint boundary x = y: minimum -1000 on the whole line
    "-1/(x-y+1e-3), x-y>=0": (-1 / (x - y + sp.Rational(1, 1000)), [x - y >= 0], BOX,
                              -1000.0),
    # the pole x = y cut off by x - y <= -1e-4: minimum -1e4 on the boundary
    "1/(x-y), x-y<=-1e-4": (1 / (x - y), [x - y <= -sp.Rational(1, 10**4)], BOX, -1e4),
    # a spike of depth 1e6 and width 1e-3, no pole
    "spike": (-1 / ((x - sp.Rational(3, 10)) ** 2 + (y + sp.Rational(1, 5)) ** 2 +
                    sp.Rational(1, 10**6)), [], BOX, -1e6),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", list(FINITE))
def test_large_finite_optimum_next_to_a_pole_stays_a_success(name, backend):
    f, cons, bounds, f_star = FINITE[name]
    res = _solve(f, cons, bounds=bounds, variables=[x, y], seed=0, backend=backend)
    assert res.success, res.message
    # SLSQP ends within ~1e-9 of the optimum relative to |f*| here; 1e-6 leaves room
    assert math.isclose(res.fun, f_star, rel_tol=1e-6), res.fun


@pytest.mark.parametrize("backend", BACKENDS)
def test_batch_and_search_report_the_pole(backend):
    problem = constropt.Problem(1 / (x - y + a), bounds=BOX, variables=[x, y],
                                parameters={a: 0})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        batch = constropt.solve_batch(problem, {a: np.array([0.0, 0.5, -0.25, 0.1])},
                                      seed=0, backend=backend)
    assert not batch.success.any()
    assert all(r.status in FAILED for r in batch), [r.message for r in batch]
    res = constropt.Search(1 / (x - y), bounds=BOX, variables=[x, y], seed=3,
                           backend=backend).result()
    assert not res.success and res.status in FAILED


def test_batch_of_finite_optima_next_to_a_pole_succeeds():
    problem = constropt.Problem(-1 / (x - y + a), [x - y >= 0], bounds=BOX,
                                variables=[x, y], parameters={a: 1e-3})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        batch = constropt.solve_batch(problem, {a: np.array([1e-3, 1e-2, 1e-4])}, seed=0)
    assert batch.success.all(), [r.message for r in batch]
    for r, av in zip(batch, (1e-3, 1e-2, 1e-4)):
        assert math.isclose(r.fun, -1 / av, rel_tol=1e-6)
