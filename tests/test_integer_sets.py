"""Integers confined to a finite set by a product equality (a discrete truss's areas).

``(a - 1)(a - 2)(a - 3)(a - 5)(a - 8)(a - 10)(a - 12) == 0`` with ``a`` integer: the
search snaps such a gene to the nearest allowed value before every evaluation, so every
point it evaluates satisfies the equality exactly.  The reference optimum is found by
enumerating the 7**3 combinations (the continuous variable has a closed form).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import sympy as sp

import constropt
from constropt.solver._snap import integer_sets

ALLOWED = (1, 2, 3, 5, 8, 10, 12)
a = sp.symbols("a1:4", integer=True)
t = sp.Symbol("t", real=True)
TARGET = (4, 6.4, 11)


def _problem():
    def member(v):
        return sp.Eq(sp.Mul(*[v - k for k in ALLOWED]), 0)

    obj = sum((ai - sp.nsimplify(c)) ** 2 for ai, c in zip(a, TARGET)) + (t - a[0]) ** 2
    cons = [member(ai) for ai in a] + [a[0] + a[1] + a[2] >= 21, t >= 4.5]
    bounds = {ai: (0, 15) for ai in a} | {t: (-20, 20)}
    return constropt.Problem(obj, cons, bounds=bounds)


def _reference():
    best = math.inf
    for c in itertools.product(ALLOWED, repeat=3):
        if sum(c) < 21:
            continue
        tt = max(4.5, c[0])
        best = min(best, sum((ci - ti) ** 2 for ci, ti in zip(c, TARGET)) + (tt - c[0]) ** 2)
    return best


def test_the_allowed_values_are_the_roots_in_the_box():
    sets = integer_sets(_problem())
    assert sets.shape == (4, 7)
    for i in range(3):
        assert sets[i].tolist() == [float(v) for v in ALLOWED]
    assert np.isinf(sets[3]).all()  # t is continuous


@pytest.mark.parametrize("algorithm", ["de", "ga"])
def test_product_equality_integers_reach_the_enumerated_optimum(algorithm):
    res = constropt.solve(_problem(), seed=3, algorithm=algorithm)
    assert res.feasible
    assert all(res.x[ai] in ALLOWED for ai in a)
    assert res.fun == pytest.approx(_reference(), abs=1e-7)  # polished t: rounding level
