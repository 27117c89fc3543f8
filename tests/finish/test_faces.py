"""Optima on a face of the box that a constraint makes lower-dimensional (issue 14:
CEC 2020 RC03 and RC14).

A search never lands exactly on such a face, so the finishing steps must put the point
there and polish on it: at margin 0 (any margin empties the feasible set where a
constraint coincides with a side of the box), with a restoration that holds the active
constraints where they are, and with a flip that takes a partner gene to its bound.
Each test starts from the kind of point the search ends on and asserts the optimum and
feasibility; the last two run the default solver on RC03 and RC14 themselves.
"""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

import constropt
from _moves import move as _move
from constropt import benchmarks
from constropt.finish._flips import bound_flips
from constropt.finish._intsearch import integer_search
from constropt.finish._verdict import check_point
from constropt.local._newton import restore


def _units_problem():
    # n units of cycle time t: n * t >= 4, t <= 4.  One unit needs t = 4, the upper
    # bound itself (RC14's 20 - n2 * tl1 <= 0 with tl1 <= 20, in small); the batch
    # size b >= t and a free s then follow, as RC14's b and v do
    n = sp.Symbol("n", integer=True)
    t, b, s = sp.symbols("t b s", real=True)
    return constropt.Problem(10 * n + b + (s - sp.Rational(1, 2)) ** 2,
                             [4 - n * t <= 0, t - b <= 0],
                             bounds={n: (1, 3), t: (1, 4), b: (1, 10), s: (0, 1)})


def test_integer_move_onto_a_bound_fixed_by_a_constraint():
    problem = _units_problem()
    pvec = problem.parameter_vector(None)
    order = [str(v) for v in problem.variables]  # the Problem's own order
    at = {"n": 2.0, "t": 2.0, "b": 2.0, "s": 0.9}  # two units, t = b = 2: f = 22.16
    x0 = np.array([at[k] for k in order])
    f0, V0 = check_point(problem, x0, pvec)
    assert np.all(V0 == 0) and f0 == pytest.approx(22.16)
    x, f, V, _, stop = _move(integer_search, problem, x0, f0, V0, pvec, None, 0)
    assert not stop and np.all(V == 0)
    # n = 1 with t = 4 exactly, b = 4, s = 1/2: 14 (a 1e-9 margin made the polish of
    # n = 1 fail, leaving s where it was)
    assert x[order.index("n")] == 1  # an integer gene: exact
    # t on its upper side: SLSQP's end clipped to the box, within rounding on any BLAS
    assert x[order.index("t")] == pytest.approx(4.0, abs=1e-9)
    assert f == pytest.approx(14.0, abs=1e-8)  # exact data; SLSQP's tolerance


def _face_problem():
    # v > 0 forces w >= 0.9 (v * (0.9 - w) <= 0); v = 0 frees w, and u = 0 forces v = 0
    # (v <= u).  The optimum (1, 0, 0), f = -1, lies on the face v = 0, where the first
    # constraint vanishes identically (RC03's x2 = x4 = 0 in small)
    u, v, w = sp.symbols("u v w", real=True)
    return constropt.Problem(w - u, [v * (sp.Rational(9, 10) - w) <= 0, v - u <= 0],
                             bounds={u: (0, 1), v: (0, 1), w: (0, 1)})


def test_flip_with_a_partner_reaches_the_face():
    problem = _face_problem()
    pvec = problem.parameter_vector(None)
    x0 = np.array([1.0, 0.5, 0.9])  # a local optimum: f = -0.1, u on its upper side
    f0, V0 = check_point(problem, x0, pvec)
    assert np.all(V0 == 0) and f0 == pytest.approx(-0.1)
    x, f, V, _, stop = _move(bound_flips, problem, x0, f0, V0, pvec, None, 0)
    assert not stop and np.all(V == 0)
    assert abs(x[1]) <= 1e-9  # on the face v = 0 (SLSQP's end; rounding-level off it)
    assert f == pytest.approx(-1.0, abs=1e-8)  # SLSQP's tolerance on a linear objective


def test_restore_cures_a_rounding_violation_at_a_vertex():
    # a + b <= 1 - 1e-13 violated by ~1e-13 at (1/3, 2/3), where b - 2a <= 0 is active:
    # a step on the violated row alone pushes b - 2a out by as much as it cures
    a, b = sp.symbols("a b", real=True)
    problem = constropt.Problem(-a - b, [a + b - (1 - sp.Rational(1, 10**13)) <= 0,
                                         b - 2 * a <= 0],
                                bounds={a: (0, 1), b: (0, 1)})
    pvec = problem.parameter_vector(None)
    x0 = np.array([1 / 3, 2 / 3])
    _, V0 = check_point(problem, x0, pvec)
    assert V0[0] > 0 and V0[1] == 0
    x, used = restore(problem, x0, pvec)
    _, V = check_point(problem, x, pvec)
    assert np.all(V == 0) and used <= 20
    assert np.max(np.abs(x - x0)) < 1e-8  # a projection, not a jump


def test_flip_from_rc03_local_optimum_projects_its_start():
    # where the default search ended at seed 7 (and at 1, 14, 21 within rounding): x2 on
    # its upper side, 4386 above the optimum.  The flip sending x2 and x4 to 0 (where
    # four rows vanish) starts far outside the constraints, and SLSQP stops there on
    # incompatible constraints; from the projected start (restore) the move reaches the
    # optimum on the face
    bench = benchmarks.get("RC03")
    problem = bench.problem()
    pvec = problem.parameter_vector(None)
    x0 = np.array([1365.0091238342086, 99.99999999991634, 2000.0000000002776,
                   90.74074074074058, 91.01511980001298, 3.2785500685984204,
                   141.45996000003908])
    f0, V0 = check_point(problem, x0, pvec)
    assert np.all(V0 == 0) and f0 == pytest.approx(-142.7193290531733, abs=1e-6)
    x, f, V, nfev, stop = _move(bound_flips, problem, x0, f0, V0, pvec, 500_000, 0)
    assert not stop and np.all(V == 0)
    # on the face x2 = x4 = 0 (their lower sides; SLSQP's end, to rounding on any BLAS)
    assert abs(x[1]) <= 1e-9 and abs(x[3]) <= 1e-9
    assert f == pytest.approx(bench.f_star, abs=1e-4)  # the CEC success rule


@pytest.mark.slow
@pytest.mark.parametrize("name", ["RC03", "RC14"])
def test_default_solver_on_face_optima(name):
    bench = benchmarks.get(name)
    res = constropt.solve(bench.problem(), seed=0, max_evals=500_000)
    assert res.feasible
    assert res.fun == pytest.approx(bench.f_star, abs=1e-4)  # the CEC success rule
