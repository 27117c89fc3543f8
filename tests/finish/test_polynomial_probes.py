"""A polynomial objective on a bounded box skips the divergence and pole probes
(finish/_status.bounded_in): it is bounded there and has no pole."""

from types import SimpleNamespace

import numpy as np
import pytest
import sympy as sp

import constropt
from constropt.finish._status import bounded_in, probe_cost
from constropt.problem._domain import polynomial

x, y, a = sp.symbols("x y a")


@pytest.mark.parametrize("expr, expected", [
    (x**2 + 3 * x * y - y**5 + 7, True),
    ((x - sp.Rational(1, 2))**2 * a, True),      # a parameter is a coefficient
    (sp.pi * x + sp.E, True),
    (1 / x, False),                                # a pole
    (x**sp.Rational(1, 2), False),
    (sp.exp(x) + x, False),                        # not a polynomial (kept probed)
    (sp.log(x), False),
    (x**-2 + y, False),
    (sp.zoo * x, False),
])
def test_polynomial(expr, expected):
    assert polynomial(expr) is expected


def test_bounded_in_needs_a_bounded_box():
    p = constropt.Problem(x**2 + y, [x >= -1, x <= 1, y >= 0, y <= 2])
    assert bounded_in(p, p)
    open_box = SimpleNamespace(lower=np.array([-1.0, 0.0]), upper=np.array([1.0, np.inf]))
    assert not bounded_in(p, open_box)
    q = constropt.Problem(1 / (x + 3) + y, [x >= -1, x <= 1, y >= 0, y <= 2])
    assert not bounded_in(q, q)


def test_a_polynomial_solve_spends_no_probe_evaluations():
    """The convex QP's answer costs its local solve only: far fewer evaluations than one
    divergence probe (probe_cost), with the optimum and status of the probed run."""
    n = 40
    xs = sp.symbols(f"v0:{n}")
    f = sp.Add(*[(v - sp.Rational(1, 2))**2 for v in xs])
    cons = [sp.Add(*xs) >= n / 2 + 1] + [v >= -5 for v in xs] + [v <= 5 for v in xs]
    res = constropt.solve(f, cons, seed=0)
    assert res.success and res.status is constropt.Status.CONVERGED
    assert res.fun == pytest.approx(1 / n, rel=1e-6)  # the closed form: x_i = 1/2 + 1/n
    prob = constropt.Problem(f, cons)
    assert res.nfev < probe_cost(prob) // 10


def test_a_pole_is_still_probed():
    """1/x on (0, 1]: not a polynomial, the pole probe still reports it."""
    res = constropt.solve(1 / x + x, [x > 0, x <= 1], maximize=True, seed=0)
    assert res.status in (constropt.Status.UNBOUNDED, constropt.Status.NOT_CONFIRMED)
    assert not res.success
