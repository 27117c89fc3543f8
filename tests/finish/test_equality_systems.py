"""Equality systems: Hock and Schittkowski's problem 40 (4 variables, 3 nonlinear
equalities, f* = -0.25 at x1 = 2**(-1/3), x2 = x4**2, x3 = x1**2 x4, x4 = 2**(-1/4)).

``f = 0`` (a product with one zero factor) is a stationary set that a search which
projects only its best point, or polishes only from it, can end on.
"""

from __future__ import annotations

import pytest
import sympy as sp

import constropt

x1, x2, x3, x4 = sp.symbols("x1:5", real=True)


def _hs040():
    return constropt.Problem(
        -x1 * x2 * x3 * x4,
        [sp.Eq(x1**3 + x2**2, 1), sp.Eq(x1**2 * x4 - x3, 0), sp.Eq(x4**2 - x2, 0)],
        bounds={v: (-10, 10) for v in (x1, x2, x3, x4)})


@pytest.mark.parametrize("algorithm", ["de", "ga"])
@pytest.mark.parametrize("seed", [0, 1])
def test_hs040_reaches_the_optimum_not_the_stationary_zero(algorithm, seed):
    res = constropt.solve(_hs040(), seed=seed, algorithm=algorithm)
    assert res.feasible
    # not the stationary 0; the equalities hold within eq_tol = 1e-4, which lets f go
    # about 1e-4 below -0.25 (|grad f| ~ 1 times the tolerance on a few equalities)
    assert -0.2505 <= res.fun <= -0.25 + 1e-6
