"""Proven bounds: ``solve(..., certify=...)`` and the interval branch-and-bound.

Every test asserts the rigorous side (the bound never passes the known optimum) and,
where the problem is easy, that the target gap is reached.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp

import constropt
from constropt import OptionError, benchmarks
from constropt.certify._bnb import certify

x, y, z = sp.symbols("x y z", real=True)
n, m = sp.symbols("n m", integer=True)


def _pv(p):
    return p.parameter_vector()


def test_blog_example2_certified_to_1e6():
    bp = benchmarks.get("blog_example2")
    res = constropt.solve(bp.problem(), seed=0, certify=1e-6)
    assert res.success and res.feasible
    cert = res.certificate
    assert cert.kind == "bound" and cert.certified and cert.mean_value
    assert res.gap <= 1e-6
    # maximize: the bound is an upper bound of the maximum 263.1739479256 (10 digits)
    assert res.lower_bound >= 263.1739479255
    assert res.lower_bound <= res.fun * (1 + 1e-6) + 1e-12
    assert "larger than" in cert.statement


def test_blog_example3_certified_to_1e6():
    bp = benchmarks.get("blog_example3")
    res = constropt.solve(bp.problem(), seed=0, certify=True)
    assert res.success and res.gap <= 1e-6 and res.certificate.certified
    assert res.lower_bound <= -1.1277249018 + 1e-10  # the minimum, to 10 digits
    assert res.lower_bound >= res.fun - 1e-6 * abs(res.fun)


def test_quadratic_with_linear_constraint():
    p = constropt.Problem(x**2 + y**2, [x + y >= 1], bounds={x: (-3, 3), y: (-3, 3)})
    c = certify(p, _pv(p), 0.5, np.array([0.5, 0.5]), gap=1e-8)
    assert c.certified and c.lower_bound <= 0.5 and c.lower_bound >= 0.5 * (1 - 1e-8)


def test_bound_stays_below_optimum_with_a_poor_incumbent():
    p = constropt.Problem(x**2 + y**2, [x + y >= 1], bounds={x: (-3, 3), y: (-3, 3)})
    c = certify(p, _pv(p), 2.0, np.array([1.0, 1.0]), gap=1e-6, time_limit=2)
    assert c.lower_bound <= 0.5  # the true minimum, below the incumbent 2.0
    assert c.gap >= (2.0 - 0.5) / 2.0 - 1e-12 and not c.certified


def test_bound_without_a_feasible_incumbent():
    p = constropt.Problem(x**2 + y**2, [x + y >= 1], bounds={x: (-3, 3), y: (-3, 3)})
    c = certify(p, _pv(p), math.nan, gap=1e-6, time_limit=1)
    assert c.kind == "bound" and c.lower_bound <= 0.5 and c.gap == math.inf
    assert not c.certified


def test_equality_bound_covers_the_tolerance():
    # min x + y on x**2 + y**2 == 1 within eq_tol: the relaxed minimum is
    # -sqrt(2 (1 + eq_tol)), below the exact -sqrt(2)
    p = constropt.Problem(x + y, [sp.Eq(x**2 + y**2, 1)], bounds={x: (-2, 2), y: (-2, 2)},
                          eq_tol=1e-4)
    s = -math.sqrt(0.5)
    c = certify(p, _pv(p), 2 * s, np.array([s, s]), gap=1e-3, time_limit=20)
    assert c.lower_bound <= -math.sqrt(2 * (1 + 1e-4))
    assert c.lower_bound >= -1.5


def test_memory_bounded_buffer_is_still_rigorous():
    p = constropt.Problem(sp.sin(3 * x) + (y - 0.3) ** 2, [x**2 + y**2 <= 4],
                          bounds={x: (-2, 2), y: (-2, 2)})
    c = certify(p, _pv(p), -1.0, np.array([-math.pi / 6, 0.3]), gap=1e-6, batch=8,
                max_boxes=24, time_limit=5)
    assert c.lower_bound <= -1.0  # sin(3x) >= -1: the minimum is -1 exactly


def test_integer_variables():
    p = constropt.Problem((n - 2.5) ** 2 + m, [m >= 0.5, n**2 <= 30], bounds={n: (-9, 9),
                                                                              m: (-9, 9)})
    c = certify(p, _pv(p), 1.25, np.array([2.0, 1.0]), gap=1e-6)
    assert c.certified and 1.25 * (1 - 1e-6) <= c.lower_bound <= 1.25


def test_infeasibility_proven_by_branch_and_bound():
    # x*y >= 2 is out of reach on the disk x**2 + y**2 <= 3 (max xy = 1.5), but bound
    # propagation alone cannot see it
    p = constropt.Problem(x + y, [x * y >= 2, x**2 + y**2 <= 3])
    assert p.infeasibility_proof is None
    c = certify(p, _pv(p), math.nan, gap=1e-6, time_limit=20)
    assert c.kind == "infeasible" and c.certified and math.isnan(c.lower_bound)


def test_certify_auto_only_on_small_problems():
    res = constropt.solve(x**2 + y**2, [x + y >= 1], bounds={x: (-3, 3), y: (-3, 3)}, seed=0,
                          certify="auto")
    assert res.lower_bound is not None and res.lower_bound <= 0.5 + 1e-12
    assert "certify" in res.timings
    xs = sp.symbols("a0:6", real=True)
    big = constropt.solve(sum(v**2 for v in xs), [sum(xs) >= 1],
                          bounds={v: (-1, 1) for v in xs}, seed=0, certify="auto",
                          max_generations=30)
    assert big.lower_bound is None and big.certificate is None


def test_result_fields_default_to_none():
    res = constropt.solve(x**2, bounds={x: (-1, 1)}, seed=0, max_generations=20)
    assert res.lower_bound is None and res.gap is None and res.certificate is None
    d = res.to_dict()
    assert d["lower_bound"] is None and d["certificate"] is None


@pytest.mark.parametrize("bad", ["yes", 2.0, 0.0, -1e-3, [1e-3]])
def test_certify_option_validated(bad):
    with pytest.raises(OptionError, match="certify must be"):
        constropt.solve(x**2, bounds={x: (-1, 1)}, certify=bad)


def test_certify_time_validated():
    with pytest.raises(OptionError, match="certify_time"):
        constropt.solve(x**2, bounds={x: (-1, 1)}, certify=True, certify_time=0)


def test_float32_boxes_stay_rigorous():
    import torch

    bp = benchmarks.get("blog_example3")
    p = bp.problem()
    c = certify(p, _pv(p), bp.f_star, np.array(bp.x_star), gap=1e-4, dtype=torch.float32,
                time_limit=20)
    assert c.lower_bound <= -1.1277249018 + 1e-10


@pytest.mark.slow
@pytest.mark.parametrize("name", ["G06", "G08", "G11", "G24", "tension_compression_spring"])
def test_collection_bounds_never_pass_the_optimum(name):
    bp = benchmarks.get(name)
    p = bp.problem()
    c = certify(p, _pv(p), bp.f_star, np.array(bp.x_star, dtype=float), gap=1e-6,
                time_limit=30)
    sign = -1.0 if p.maximize else 1.0
    # f_star is published to about 10 digits; x_star may sit a hair outside (eq_tol)
    assert sign * c.lower_bound <= sign * bp.f_star + 1e-8 * max(1.0, abs(bp.f_star))
