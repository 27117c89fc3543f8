"""The branch-and-bound's second-order bound, exclusion box, node domains and branching.

Rigorous side first: the bounds never exceed the objective at any feasible point of a
box (checked on sampled points), and certified bounds never pass known optima.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp
import torch

import constropt
from constropt import benchmarks
from constropt.certify._bnb import certify
from constropt.certify._exclusion import exclusion_box, second_order_bound
from constropt.certify._nodes import contract_nodes, forward_nodes
from constropt.lowering._interval_model import IntervalModel
from constropt.problem._fbbt import required_leaves

x, y, z = sp.symbols("x y z", real=True)


def _model(p):
    leaves, _ = required_leaves(p._constraints)
    return IntervalModel(p.objective, leaves, p.layout, gradient=True), leaves


def _random_boxes(rng, lower, upper, B):
    a = rng.uniform(lower, upper, size=(B, len(lower)))
    b = rng.uniform(lower, upper, size=(B, len(lower)))
    return np.minimum(a, b).T.copy(), np.maximum(a, b).T.copy()


@pytest.mark.parametrize("expr", [
    x**4 - 3 * x * y + sp.sin(y) * z,           # indefinite Hessian
    (x - 0.2)**2 + 2 * (y + 0.1)**2 + z**2 + x * z,  # convex
    sp.exp(x * y) - sp.cos(z) * x,
    sp.log(x**2 + y**2 - 0.5) + z,              # undefined on part of some boxes
])
def test_second_order_bound_encloses_sampled_values(expr):
    # no constraints: the Lagrangian is f, and the bound must stay below f at every
    # point of the box (sampled), wherever the expansion point (clamped) lies
    p = constropt.Problem(expr, [], bounds={x: (-1.5, 1.5), y: (-1.5, 1.5), z: (-1, 1)})
    m, _ = _model(p)
    rng = np.random.default_rng(0)
    lo, hi = _random_boxes(rng, p.lower, p.upper, 300)
    P = torch.zeros(len(p.parameter_vector()) + len(m.leaves), dtype=torch.float64)
    xs = torch.tensor([0.3, -0.7, 0.1], dtype=torch.float64)
    b = second_order_bound(m, torch.tensor(lo), torch.tensor(hi), P, xs, 0.0)
    assert b is not None
    f = sp.lambdify((x, y, z), expr, "numpy")
    t = rng.uniform(size=(200, 3, 1))
    pts = lo[None] + t * (hi - lo)[None]  # (200, 3, B)
    with np.errstate(invalid="ignore", divide="ignore"):
        vals = f(pts[:, 0], pts[:, 1], pts[:, 2])
    vals = np.where(np.isnan(vals), np.inf, vals).min(0)  # NaN points are infeasible
    assert np.all(b.numpy() <= vals)
    assert np.isfinite(b.numpy()).any()


def test_node_domains_bound_the_objective_over_feasible_points():
    # sin(x*y) is one node of the objective and of the constraint; propagation cannot
    # shrink the box through sin here (not monotone on [0, 4]) but the constraint
    # bounds the node itself: -sin(x*y) >= -0.5 at every feasible point
    p = constropt.Problem(-sp.sin(x * y) + y, [sp.sin(x * y) <= 0.5],
                          bounds={x: (0, 2), y: (0, 2)})
    m, leaves = _model(p)
    P = torch.zeros(len(m.leaves), dtype=torch.float64)
    lo = torch.tensor([[0.0], [0.0]], dtype=torch.float64)
    hi = torch.tensor([[2.0], [2.0]], dtype=torch.float64)
    lo2, hi2, empty, dom = contract_nodes(m.program, lo, hi, P, m.leaf_targets(p.eq_tol))
    assert not bool(empty.any())
    plain = m.program.forward(lo2, hi2, P, only=[m.f])[m.f]
    nat = forward_nodes(m.program, lo2, hi2, P, [m.f], dom)[m.f]
    assert float(plain.lo) <= -0.99  # -sin over [0, 4] reaches -1
    # the feasible minimum is about -0.24 (x = 2, x*y = pi/6); the bound is -0.5
    assert -0.5 - 1e-12 <= float(nat.lo) <= -0.24


def test_exclusion_box_bound_is_below_the_minimum():
    p = constropt.Problem((x - 1)**2 + (y - 2)**2 + x * y, [x + y >= 4],
                          bounds={x: (-5, 5), y: (-5, 5)})
    # minimum on x + y = 4: f = (x-1)^2 + (2-x)^2 + x(4-x) = x^2 - 2x + 5 -> (1, 3), 4
    m, _ = _model(p)
    from constropt.certify._branch import multipliers
    xs = np.array([1.0, 3.0])
    lam = multipliers(m, p, p.parameter_vector(), xs)
    P = torch.tensor(np.concatenate([p.parameter_vector(), lam]))
    e = exclusion_box(m, p, P, xs, 4.0 - 1e-3, 0.0)
    assert e is not None
    elo, ehi, bound = e
    assert 4.0 - 1e-3 <= bound <= 4.0
    assert bool((elo.numpy() <= xs).all() and (ehi.numpy() >= xs).all())


def test_convex_problem_certified_with_incumbent():
    p = constropt.Problem((x - 1)**2 + (y - 2)**2 + x * y, [x + y >= 4],
                          bounds={x: (-5, 5), y: (-5, 5)})
    c = certify(p, p.parameter_vector(), 4.0, np.array([1.0, 3.0]), gap=1e-8, time_limit=20)
    assert c.certified and 4.0 * (1 - 1e-8) <= c.lower_bound <= 4.0


def test_equality_second_order_does_not_claim_beyond_the_tolerance():
    # min x + y + z on the unit sphere within eq_tol: the relaxed minimum is
    # -sqrt(3 (1 + eq_tol)); with the incumbent at the exact minimum -sqrt(3) the bound
    # must stay below the relaxed one
    p = constropt.Problem(x + y + z, [sp.Eq(x**2 + y**2 + z**2, 1)],
                          bounds={x: (-2, 2), y: (-2, 2), z: (-2, 2)}, eq_tol=1e-4)
    s = -1 / math.sqrt(3)
    c = certify(p, p.parameter_vector(), 3 * s, np.array([s, s, s]), gap=1e-5,
                time_limit=20)
    assert c.lower_bound <= -math.sqrt(3 * (1 + 1e-4))
    assert c.lower_bound >= -math.sqrt(3 * (1 + 1e-4)) - 1e-3


@pytest.mark.slow
@pytest.mark.parametrize("name", ["G05", "G09"])
def test_collection_problems_certified_to_1e4(name):
    bp = benchmarks.get(name)
    p = bp.problem()
    xs = np.array(bp.x_star, dtype=float)
    f = float(sp.lambdify(p.variables, p.objective)(*xs))
    c = certify(p, p.parameter_vector(), f, xs, gap=1e-4, time_limit=60)
    # rigorous: no feasible point below the bound; the known optimum (10 digits) and
    # the relaxation of the equalities by eq_tol are above it
    assert c.lower_bound <= bp.f_star + 1e-9 * abs(bp.f_star)
    assert c.certified and c.gap <= 1e-4


@pytest.mark.parametrize("box, expect", [((0.0, 10.0), (5.0, 10.0)),
                                         ((-3.0, 10.0), (-3.0, 10.0))])
def test_extended_division_contracts_a_denominator(box, expect):
    # 10 / x <= 2: the quotient's target contains 0, so plain division learns nothing;
    # extended division gives x < 0 or x >= 5, and with x >= 0 only [5, 10] is left
    p = constropt.Problem(x + y, [10 / x <= 2], bounds={x: box, y: (0, 1)})
    m, _ = _model(p)
    P = torch.zeros(len(m.leaves), dtype=torch.float64)
    lo = torch.tensor([[box[0]], [0.0]], dtype=torch.float64)
    hi = torch.tensor([[box[1]], [1.0]], dtype=torch.float64)
    lo2, hi2, empty, _ = contract_nodes(m.program, lo, hi, P, m.leaf_targets(p.eq_tol))
    assert not bool(empty.any())
    assert float(lo2[0, 0]) <= expect[0] and float(lo2[0, 0]) >= expect[0] - 1e-12
    assert float(hi2[0, 0]) == expect[1]
