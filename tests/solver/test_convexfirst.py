"""``solve`` on a problem proven convex: answered by a local solve (solver/_convexfirst.py),
the search where the local solve fails or the option is off."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import sympy as sp

import constropt
from constropt import OptionError, Status
from constropt.solver import _convexfirst

N = 12
X = sp.symbols(f"x0:{N}")
F = sum((xi - sp.Rational(1, 2))**2 for xi in X)
C = [sum(X) >= sp.Rational(N, 2) + 1]
B = {xi: (-5, 5) for xi in X}
FSTAR = 1.0 / N  # x_i = 1/2 + 1/N


def test_convex_qp_is_answered_by_a_local_solve():
    res = constropt.solve(F, C, bounds=B, seed=0)
    assert res.success and res.feasible and res.status is Status.CONVERGED
    assert res.verification is not None
    assert res.fun == pytest.approx(FSTAR, abs=1e-9)  # SLSQP's end: not exact in floats
    assert np.allclose(res.x_array, 0.5 + 1.0 / N, atol=1e-6)
    assert res.message.startswith("convex: answered by a local solve")
    assert res.nit == 0 and res.timings["search"] == 0.0
    old = constropt.solve(F, C, bounds=B, seed=0, local_first=False)
    assert old.fun == pytest.approx(FSTAR, abs=1e-9)
    assert old.nit > 0 and "convex" not in old.message
    assert res.nfev * 10 < old.nfev  # far below the search's


def test_the_users_start_is_used_and_maximize_follows_the_sense():
    x, y = sp.symbols("x y")
    res = constropt.solve(-(x - 1)**2 - (y - 2)**2, [x + y <= 1], maximize=True,
                          bounds={x: (-4, 4), y: (-4, 4)}, x0={x: 3, y: -3}, seed=1)
    assert "from x0" in res.message
    assert res.fun == pytest.approx(-2.0, abs=1e-9)  # the projection of (1, 2): (0, 1)
    assert res.x[x] == pytest.approx(0.0, abs=1e-6) and res.x[y] == pytest.approx(1.0, abs=1e-6)


def test_a_nonconvex_problem_takes_the_search():
    x, y = sp.symbols("x y")
    res = constropt.solve(x * y, [x + y >= 1], bounds={x: (-2, 2), y: (-2, 2)}, seed=0)
    assert res.nit > 0 and "convex" not in res.message
    assert res.fun == pytest.approx(-2.0, abs=1e-6)  # x = -1, y = 2 (or swapped)


def test_a_failed_local_solve_falls_back_to_the_search(monkeypatch):
    def not_kkt(problem, x, pvec):
        return 1.0, 2  # as if SLSQP had stopped short of a KKT point

    monkeypatch.setattr(_convexfirst, "stationarity", not_kkt)
    res = constropt.solve(F, C, bounds=B, seed=0, max_evals=40_000)
    assert res.nit > 0 and "convex" not in res.message
    assert res.fun == pytest.approx(FSTAR, abs=1e-9)
    assert res.nfev <= 40_000  # the attempt's evaluations counted within the budget


def test_a_local_end_on_a_soft_side_falls_back():
    x = sp.Symbol("x")
    # no bounds: the default box has soft sides; the optimum x = 1e6 lies beyond them
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the BoundsWarning of the default box
        res = constropt.solve((x - 1e6)**2, [x >= -1], seed=0)
    assert "convex" not in res.message
    assert res.x[x] == pytest.approx(1e6, rel=1e-6)


def test_local_first_values():
    with pytest.raises(OptionError, match="local_first must be"):
        constropt.solve(F, C, bounds=B, local_first="yes")
    with pytest.raises(OptionError, match="does not apply here: polish=False"):
        constropt.solve(F, C, bounds=B, local_first=True, polish=False)
    res = constropt.solve(F, C, bounds=B, seed=0, local_first=True)
    assert res.message.startswith("convex: answered")
    calls = []
    res = constropt.solve(F, C, bounds=B, seed=0, max_generations=3,
                          callback=lambda *a, **k: calls.append(1))
    assert calls and res.nit > 0  # a per-generation callback asks for the search


def test_ctrl_c_in_the_local_solve_returns_the_point_so_far(monkeypatch):
    from constropt.finish import _polishing

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(_polishing, "polish", interrupted)
    res = constropt.solve(F, C, bounds=B, seed=0)
    assert res.status is Status.INTERRUPTED and not res.success
    assert res.x_array.shape == (N,) and res.nit == 0  # the start, checked
