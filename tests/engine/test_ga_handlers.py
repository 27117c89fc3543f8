"""The GA is a full engine: every constraint handler, repair and equalities.

``algorithm="ga"`` used to refuse every handler but feasibility rules, so with
``constraint_handling="auto"`` (epsilon when there is an equality) it refused every
problem with an equality.  Values: published optima of the collection, with
feasibility.
"""

from __future__ import annotations

import pytest
import sympy as sp
import torch

import constropt
from constropt import benchmarks
from constropt.engine import _ga
from constropt.engine._handling import HANDLERS, make_handler


@pytest.mark.parametrize("handling", HANDLERS)
def test_ga_takes_every_handler(handling):
    x, y = sp.symbols("x y", real=True)
    # min (x-2)^2 + (y-1)^2 s.t. x + y <= 2, x - y >= 0: optimum 0.5 at (1.5, 0.5)
    res = constropt.solve((x - 2) ** 2 + (y - 1) ** 2, [x + y <= 2, x - y >= 0],
                          bounds={x: (-5, 5), y: (-5, 5)}, algorithm="ga", seed=0,
                          constraint_handling=handling)
    assert res.feasible
    assert res.fun == pytest.approx(0.5, abs=1e-7)  # SLSQP-polished: rounding level


def test_ga_solves_an_equality_problem_with_auto_handling():
    b = benchmarks.get("G11")  # x2 = x1**2 within 1e-4; f* = 0.7499
    res = constropt.solve(b.problem(), algorithm="ga", seed=1)
    assert res.success and res.feasible
    assert res.fun - b.f_star <= 1e-4  # the CEC 2006 rule


def test_ga_survival_ranks_by_the_handler_keys():
    # one feasible point with f = 5, one infeasible (cv = 0.1) with f = 1: feasibility
    # rules keep the feasible one first; epsilon at level 0.2 counts cv = 0.1 as 0.
    X = torch.tensor([[0.0, 1.0]], dtype=torch.float64)
    f = torch.tensor([5.0, 1.0], dtype=torch.float64)
    cv = torch.tensor([0.0, 0.1], dtype=torch.float64)
    eps = make_handler("epsilon")
    level = torch.tensor(0.2, dtype=torch.float64)
    assert _ga.survive(X, f, cv, 1).f.tolist() == [5.0]
    kept = _ga.survive(X, f, cv, 1, lambda a, b: eps.keys(a, b, level))
    assert kept.f.tolist() == [1.0] and kept.cv.tolist() == [0.1]


def test_ga_with_integers_and_an_equality():
    n, m = sp.symbols("n m", integer=True)
    z = sp.Symbol("z", real=True)
    # n + m = 7, z continuous; min (n - 2.2)^2 + (m - 4.6)^2 + (z - n)^2 -> n=2, m=5, z=2
    res = constropt.solve((n - sp.Rational(11, 5)) ** 2 + (m - sp.Rational(23, 5)) ** 2
                          + (z - n) ** 2, [sp.Eq(n + m, 7)],
                          bounds={n: (0, 10), m: (0, 10), z: (-10, 10)}, algorithm="ga",
                          seed=2)
    assert res.feasible
    assert (res.x[n], res.x[m]) == (2, 5)
    assert res.fun == pytest.approx(0.04 + 0.16, abs=1e-6)  # z polished to n exactly
