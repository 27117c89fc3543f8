"""The convexity proof of a whole problem (certify/_convexity.py): true on convex QPs,
LPs and a convex nonlinear problem, false on nonconvex ones, exact on degree-2 parts."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import sympy as sp

from constropt import Problem
from constropt.certify._convexity import exact_psd, prove_convex, prove_convex_for_all

x, y, z = sp.symbols("x y z")
BOX = {x: (-3, 3), y: (-3, 3), z: (-3, 3)}


def _convex(obj, cons, **kw):
    syms = sorted((obj.free_symbols | set().union(*(c.free_symbols for c in cons)))
                  - set(kw.get("parameters", {})), key=str)
    p = Problem(obj, cons, bounds={s: BOX[s] for s in syms}, **kw)
    pvec = np.array([float(v) for v in p.parameters.values()])
    return prove_convex(p, pvec)


@pytest.mark.parametrize("obj, cons", [
    ((x - 1)**2 + 2 * (y + 0.5)**2 + x * y, [x + y >= 1]),              # dense PSD QP
    (x + 2 * y - z, [x + y + z <= 2, x - y >= -1, sp.Eq(x + 2 * z, 1)]),  # an LP
    (sp.exp(x) + sp.exp(y) + (x - y)**2, [x**2 + y**2 <= 4]),             # exp terms
    (x**2 + y**2, [sp.exp(x) + y <= 3, (x - y)**2 - 1 <= 0]),             # convex leaves
    ((0.1 * x - 0.3 * y)**2 + x, [x + y >= 1]),                           # singular PSD
])
def test_convex_problems_are_proven(obj, cons):
    res = _convex(obj, cons)
    assert res.convex, res.why


@pytest.mark.parametrize("obj, cons, where", [
    (x * y, [x + y >= 1], "the objective"),                               # bilinear
    (sp.sin(x) + y**2, [x + y >= 1], "sin(x)"),                           # sin
    (-(x**2) - y**2, [x + y >= 1], "the objective"),                      # concave
    (x**2 + y**2, [sp.Eq(x**2 + y**2, 1)], "not affine"),                 # nonaffine eq
    (x**2 + y**2, [x**2 + y**2 >= 1], "constraint leaf 0"),               # concave leaf
    (-sp.exp(x) + y**2, [x + y >= 1], "-exp(x)"),
    (sp.exp(x * y), [x + y >= 1], "exp(x*y)"),
    ((x - 3 * y)**2 - 1e-9 * x * y, [x >= -1], "the objective"),  # barely not
])
def test_nonconvex_problems_are_not(obj, cons, where):
    res = _convex(obj, cons)
    assert not res.convex
    assert where in res.why


def test_integer_and_disjunctive_problems_are_not_proven():
    k = sp.Symbol("k", integer=True)
    p = Problem(k**2 + y**2, [k + y >= 1], bounds={k: (-3, 3), y: (-3, 3)})
    assert prove_convex(p, np.zeros(0)) == (False, "integer variables")
    q = Problem(x**2 + y**2, [sp.Or(x >= 1, y >= 1)], bounds={x: (-3, 3), y: (-3, 3)})
    assert prove_convex(q, np.zeros(0)) == (False, "a constraint under Or")


def test_maximizing_a_concave_objective_is_convex():
    p = Problem(-(x - 1)**2 - y**2, [x + y <= 1], bounds={x: (-3, 3), y: (-3, 3)},
                maximize=True)
    assert prove_convex(p, np.zeros(0)).convex


def test_parameters_take_their_values():
    a = sp.Symbol("a")
    assert _convex(a * x**2 + y**2, [x + y >= 1], parameters={a: 2.0}).convex
    assert not _convex(a * x**2 + y**2, [x + y >= 1], parameters={a: -2.0}).convex


r = sp.Symbol("r")


MOVES = "its curvature depends on a parameter"


@pytest.mark.parametrize("obj, cons, why", [
    (x + 2 * y, [(x - 1)**2 + (y + 1)**2 <= r**2], None),      # a parameter in a constant
    ((x - r)**2 + y**2, [x + y >= 1], None),                    # ... and a linear term
    (x**2 + sp.sin(r) * y, [x**2 + y**2 <= r**2], None),        # any function of it
    (r * x**2 + y**2, [x + y >= 1], MOVES),                     # convex only where r >= 0
    (x + y, [sp.Abs(x - r) + y**2 <= 1], MOVES),                # a kink that moves
    (sp.exp(r * x) + y, [x + y >= 1], MOVES),
    (x * y + r, [x + y >= 1], "quadratic part is not convex"),  # not convex at any r
])
def test_convex_for_every_parameter_value(obj, cons, why):
    # proven at the first column only where the parameters cannot change a curvature:
    # r * x**2 is convex at r = 2 (the first column) but not at r = -1
    p = Problem(obj, cons, bounds={x: (-3, 3), y: (-3, 3)}, parameters={r: 1.0})
    got = prove_convex_for_all(p, np.array([[2.0, -1.0, 0.5]]))
    assert got.convex is (why is None), got.why
    assert why is None or why in got.why
    assert prove_convex_for_all(p, np.array([[2.0]])) is got  # cached per lowering and box


def test_exact_psd_is_exact():
    F = Fraction
    assert exact_psd({0: {0: F(1), 1: F(1)}, 1: {0: F(1), 1: F(1)}})       # singular PSD
    assert not exact_psd({0: {0: F(1), 1: F(1)}, 1: {0: F(1), 1: F(1, 1) - F(1, 10**30)}})
    assert not exact_psd({0: {1: F(1)}, 1: {0: F(1)}})                      # zero pivot
    assert exact_psd({})
    assert not exact_psd({0: {0: F(-1, 10**40)}})
