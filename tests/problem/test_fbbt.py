"""Bounds from the constraints (FBBT): inferred boxes, integers, parameters, proofs."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import sympy as sp

import constropt
from constropt import BoundsWarning, Status
from constropt.certify._result import LEAST_EVALS, LEAST_SAMPLES, LEAST_STARTS
from constropt.problem._fbbt import propagate

x, y, z = sp.symbols("x y z", real=True)
n, m = sp.symbols("n m", integer=True)


def _quiet(*args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("error", BoundsWarning)
        return constropt.Problem(*args, **kw)


def test_example2_gets_a_finite_box_without_warning():
    p = _quiet(x**2 + 2 * y**2 + 3 * z**2 + 4 * x * y - 5 * y * z,
               [x >= 1, y > 3, y <= 7, z < 0, x + y + z >= 3, x**2 + z**2 <= 10],
               maximize=True)
    (xl, xh), (yl, yh), (zl, zh) = (p.bounds[s] for s in (x, y, z))
    assert (xl, yl, yh, zh) == (1.0, 3.0, 7.0, 0.0)
    # sqrt(10) and -sqrt(10 - 1) = -3, rounded outward by a few ulps at most
    assert math.sqrt(10) <= xh <= math.sqrt(10) * (1 + 1e-14)
    assert -3.0 * (1 + 1e-14) <= zl <= -3.0
    assert p.infeasibility_proof is None


def test_nonlinear_bounds_through_functions():
    p = _quiet(x + y, [sp.exp(x) <= 5, sp.sqrt(y) <= 2, x >= -1, y >= 0])
    assert p.bounds[x][1] == pytest.approx(math.log(5), rel=1e-14)
    assert p.bounds[x][1] >= math.log(5)
    assert p.bounds[y] == (0.0, pytest.approx(4.0, rel=1e-14))


def test_tightens_given_bounds_and_keeps_untouched_sides():
    p = constropt.Problem(x + y, [x + y <= 1, x >= 0, y >= 0], bounds={x: (-5, 5), y: (-5, 5)})
    assert p.bounds[x] == (0.0, pytest.approx(1.0, abs=1e-15))
    assert p.bounds[y] == (0.0, pytest.approx(1.0, abs=1e-15))
    with pytest.warns(BoundsWarning, match="x"):  # x**2 >= 1 bounds nothing
        q = constropt.Problem(x, [x**2 >= 1])
    # no bound inferred: both sides stay soft, searched in the default box of the
    # problem's scale (see problem/_bounds.py)
    assert q._soft.lower[0] and q._soft.upper[0]
    assert q.bounds[x][0] < -1 and q.bounds[x][1] > 1


def test_huge_side_implied_by_an_equality_stays_hard():
    # G22's failure class: x7 = 5e7 - 1e5 x9 with x7 given in [0, 4e7].  The constraint
    # implies x <= 4e7 (from y >= 100); searched as a soft side, x started in [1e7, 2e7]
    # and every feasible point there had y >= 300: no expansion, f = 300 (main before
    # the fix), against the optimum y = 100 at x = 4e7.
    p = _quiet(y, [sp.Eq(x + 100000 * y - 50000000, 0)],
               bounds={x: (0, 1e8), y: (100, 400)})
    assert not p._soft.upper[0] and not p._soft.lower[0]
    # the equality's band |h| <= eq_tol (1e-4) widens the box by 1e-4 at most
    assert p.bounds[x] == (pytest.approx(1e7, abs=2e-4), pytest.approx(4e7, abs=2e-4))
    res = constropt.solve(p, seed=0)
    assert res.success
    # the band |h| <= 1e-4 moves y by 1e-9 at most, x by 1e-4 at most
    assert res.fun == pytest.approx(100.0, abs=2e-9)
    assert res.x[x] == pytest.approx(4e7, abs=2e-4)
    # a huge side the constraints do not imply is still soft (issue 12's overflow guard)
    q = _quiet(x, [x >= 1], bounds={x: (-1e300, 1e300)})
    assert q._soft.upper[0]


def test_integers_rounded_inward():
    p = _quiet(n + m, [n**2 + m**2 <= 10.5, n >= -10, m >= -10])
    assert p.bounds[n] == (-3.0, 3.0) and p.bounds[m] == (-3.0, 3.0)
    assert p.integer.all()


def test_parameters_are_unknown_reals_for_the_box():
    a = sp.Symbol("a")
    with pytest.warns(BoundsWarning):  # x**2 <= a bounds x only for a known a
        p = constropt.Problem(x, [x**2 <= a], parameters={a: 4.0})
    # not bounded by a's value at construction: both sides stay soft (default box)
    assert p._soft.lower[0] and p._soft.upper[0]
    assert p.bounds[x][0] < -2 and p.bounds[x][1] > 2
    res = propagate(p.layout, p._constraints, [-math.inf], [math.inf], [False], 1e-4,
                    pvec=np.array([4.0]))
    assert res.lo[0] == pytest.approx(-2.0, rel=1e-14) and res.hi[0] >= 2.0


def test_equality_with_tolerance():
    p = _quiet(x, [sp.Eq(x**2 + y**2, 1), x >= 0, y >= 0], eq_tol=1e-4)
    assert p.bounds[x][1] == pytest.approx(math.sqrt(1 + 1e-4), rel=1e-12)
    assert p.bounds[x][1] >= math.sqrt(1 + 1e-4)


def test_or_constraints_are_not_propagated():
    p = constropt.Problem(x, [sp.Or(x <= -1, x >= 1), x**2 <= 4])
    assert p.bounds[x][0] == pytest.approx(-2.0) and p.bounds[x][1] == pytest.approx(2.0)


def test_piecewise_dead_branch_does_not_constrain():
    # sqrt(x) is NaN for x < 0 but that branch is only taken for x >= 0
    p = constropt.Problem(x, [sp.Piecewise((sp.sqrt(x), x >= 0), (-x, True)) <= 2],
                          bounds={x: (-10, 10)})
    assert p.bounds[x] == (-10.0, 10.0)


@pytest.mark.parametrize("constraints", [
    [x**2 + y**2 <= 1, x + y >= 3],
    [sp.exp(x) <= 0.5, x >= 0],
    [sp.sqrt(x) + y <= -1, y >= 0],
    [sp.Eq(x**2 + 1, y), y <= 0.5],
    [sp.log(x) >= 1, x <= 2],
])
def test_infeasibility_proven_without_search(constraints):
    p = constropt.Problem(x + y, constraints, variables=[x, y], bounds={x: (-5, 5), y: (-5, 5)})
    proof = p.infeasibility_proof
    assert proof is not None and proof.kind == "infeasible"
    res = constropt.solve(p, seed=0)
    assert res.status is Status.INFEASIBLE and not res.success and not res.feasible
    assert res.nit == 0 and res.timings["search"] == 0.0
    # the evaluations of the least-violating point (samples and short local solves)
    assert 1 < res.nfev <= LEAST_SAMPLES + LEAST_STARTS * (LEAST_EVALS + 1) + 1
    assert res.certificate is proof and "proven" in res.message
    assert res.backend is None  # no search ran


def test_infeasibility_for_given_parameter_values_at_solve_time():
    a = sp.Symbol("a")
    p = constropt.Problem(x, [x**2 <= a], bounds={x: (-5, 5)}, parameters={a: 1.0})
    assert p.infeasibility_proof is None  # a may be >= 0
    res = constropt.solve(p, seed=0, parameters={a: -1.0})
    assert res.status is Status.INFEASIBLE and res.nit == 0
    assert res.certificate.kind == "infeasible"
    ok = constropt.solve(p, seed=0, parameters={a: 1.0}, max_generations=20)
    assert ok.feasible and ok.fun == pytest.approx(-1.0, abs=1e-6)


def test_throw_raises_on_proven_infeasibility():
    with pytest.raises(constropt.SolveFailedError, match="proven"):
        constropt.solve(x + y, [x**2 + y**2 <= 1, x + y >= 3], seed=0, throw=True)


def test_sin_cos_inverted_on_monotone_pieces():
    p = constropt.Problem(x + y, [sp.sin(x) >= 0.5, sp.cos(y) <= 0.2, x <= 1.5, x >= -1.5,
                                  y >= 0, y <= 3])
    assert math.asin(0.5) * (1 - 1e-14) <= p.bounds[x][0] <= math.asin(0.5)
    assert math.acos(0.2) * (1 - 1e-14) <= p.bounds[y][0] <= math.acos(0.2)
    # over two monotone pieces nothing is inferred (x in [-1, 4] holds sin(x) >= 0.5
    # on [pi/6, 5 pi/6] only, but the box is not one piece)
    q = constropt.Problem(x, [sp.sin(x) >= 0.5], bounds={x: (-1, 4)})
    assert q.bounds[x] == (-1.0, 4.0)
