"""Batched parametric solves: one vectorized run, one Result per instance."""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp

import constropt
from constropt import BatchResult, OptionError, ProblemError, Status

x, y, r, c = sp.symbols("x y r c")


@pytest.fixture(scope="module")
def disc():
    return constropt.Problem(x + y, [x**2 + y**2 <= r**2], bounds={x: (-6, 6), y: (-6, 6)},
                             parameters={r: 1.0})


def test_closed_form_optima_per_instance(disc):
    radii = np.array([0.5, 1.0, 2.0, 3.0, 5.0])
    br = constropt.solve_batch(disc, {r: radii}, seed=0)
    assert isinstance(br, BatchResult) and len(br) == 5
    np.testing.assert_allclose(br.fun, -math.sqrt(2) * radii, rtol=1e-7)
    np.testing.assert_allclose(br.x[:, 0], -radii / math.sqrt(2), rtol=1e-5)
    assert br.success.all() and br.feasible.all()
    for res, rad in zip(br, radii):
        assert res.status is Status.CONVERGED and res.nfev > 0  # nit 0: local solves
        assert res.x[x] ** 2 + res.x[y] ** 2 <= rad**2 + 1e-12
    np.testing.assert_array_equal(br.parameters[r], radii)


def test_batch_matches_sequential_solves(disc):
    radii = np.array([0.7, 1.9])
    br = constropt.solve_batch(disc, {r: radii}, seed=3)
    for k, rad in enumerate(radii):
        one = constropt.solve(disc, seed=3, parameters={r: rad})
        # abs 1e-8: when the batched Newton polish's step onto the circle lands a rounding
        # hair outside, its candidate aimed 1e-9 inside is taken (fun 1e-9 higher)
        assert br.fun[k] == pytest.approx(one.fun, abs=1e-8)


def test_infeasible_instances_are_reported_per_instance():
    p = constropt.Problem(x**2 + y**2, [x + y >= c, x + y <= 1], bounds={x: (-3, 3), y: (-3, 3)},
                          parameters={c: 0.0})
    br = constropt.solve_batch(p, {c: [0.0, 2.0]}, seed=0)
    assert br.feasible.tolist() == [True, False]
    assert br[0].fun == pytest.approx(0.0, abs=1e-9)
    assert br[1].status is Status.INFEASIBLE and not br[1].success


def test_equality_constrained_batch_uses_epsilon():
    p = constropt.Problem(x**2 + y**2, [sp.Eq(x + y, c)], bounds={x: (-3, 3), y: (-3, 3)},
                          parameters={c: 1.0}, eq_tol=1e-8)
    vals = np.array([1.0, 2.0, -1.0])
    br = constropt.solve_batch(p, {c: vals}, seed=1)
    np.testing.assert_allclose(br.fun, vals**2 / 2, rtol=1e-6)


def test_bad_batch_input(disc):
    with pytest.raises(OptionError, match="parameters"):
        constropt.solve_batch(disc, {}, seed=0)
    with pytest.raises(ProblemError, match="not a parameter"):
        constropt.solve_batch(disc, {x: [1.0, 2.0]}, seed=0)
    with pytest.raises(OptionError, match="different lengths"):
        p = constropt.Problem(x + y, [x**2 + y**2 <= r**2, x <= c],
                              bounds={x: (-6, 6), y: (-6, 6)}, parameters={r: 1.0, c: 1.0})
        constropt.solve_batch(p, {r: [1.0, 2.0], c: [1.0, 2.0, 3.0]})
    with pytest.raises(OptionError, match="does not support restarts"):
        constropt.solve_batch(disc, {r: [1.0]}, restarts=2)


def test_unboundedness_probe_is_vectorized_over_instances(monkeypatch):
    # diverges_many must give, column by column, what the one-point probe gives, however
    # the instances are grouped (each group is one evaluation per probe step)
    from constropt.finish import _verdict

    p = constropt.Problem(c * sp.log(x), [x > 0, x <= 1], bounds={x: (0, 1)},
                          parameters={c: 1.0})
    q = constropt.Problem(-1 / (c - x), [x < c], bounds={x: (-5, 5)}, parameters={c: 1.0})
    # c*log(x) diverges at the edge x -> 0+ for c > 0 (seen from a point on the edge);
    # -1/(c - x) at the constraint x -> c (seen from afar: the bisection ends within
    # 2**-32 of the box width, too coarse near it to see the pole grow by 1e6)
    cases = [(p, [1e-300, 1.0, 0.5, 1e-300], [1.0, -1.0, 1.0, -1.0], [True, False, False, False]),
             (q, [0.999, -2.0, 2.999], [1.0, 1.0, 3.0], [False, True, False])]
    for prob, xs, cs, want in cases:
        X, M = np.array([xs]), np.array([cs])
        one = [_verdict.diverges(prob, X[:, b], M[:, b]) for b in range(X.shape[1])]
        assert [v for v, _ in one] == want
        for group_points in (1, 1 << 18):  # one instance per group, then all in one group
            monkeypatch.setattr(_verdict, "_PROBE_POINTS", group_points)
            v, used = _verdict.diverges_many(prob, X, M)
            assert v.tolist() == want
            assert used.tolist() == [u for _, u in one]


def test_benchmark_sweeps_with_the_batch_defaults_are_exact_and_verified():
    # the two sweeps of benchmarks/batch.py, fewer instances: a polished batch searches
    # in float32 with ftol 1e-6 and pop_size max(20, 8n); the float64 Newton polish
    # must still bring every instance to its optimum, certified feasible
    from constropt.solver._batch import BATCH_FTOL, batch_defaults

    disc = constropt.Problem(x + 2 * y, [(x - 1)**2 + (y + 1)**2 <= r**2],
                             bounds={x: (-10, 10), y: (-10, 10)}, parameters={r: 1.0})
    assert batch_defaults(disc, {}, None) == ({"pop_size": 20, "ftol": BATCH_FTOL}, "float32")
    assert batch_defaults(disc, {"polish": False}, None) == ({"polish": False}, None)
    radii = np.linspace(0.5, 5.0, 40)
    br = constropt.solve_batch(disc, {r: radii}, seed=0)
    # 1e-7: the polish ends on the circle or 1e-9 inside it (its strict margin)
    np.testing.assert_allclose(br.fun, -1.0 - radii * math.sqrt(5.0), rtol=0, atol=1e-7)
    assert br.success.all() and all(res.verification.feasible for res in br)

    z = sp.Symbol("z")
    f = x**2 + 2 * y**2 + 3 * z**2 + 4 * x * y - 5 * y * z
    blog2 = constropt.Problem(f, [x >= 1, y > 3, y <= 7, z < 0, x + y + z >= 3,
                                  x**2 + z**2 <= r**2], maximize=True,
                              bounds={x: (1, 25), z: (-25, 0)}, parameters={r: 3.0})
    radii = np.array([2.0, 3.5, 5.0])
    br = constropt.solve_batch(blog2, {r: radii}, seed=0)
    assert br.success.all() and all(res.verification.feasible for res in br)
    for res, rad in zip(br, radii):  # the optimum has y = 7 and x on the circle
        xs, zs = res.x[x], res.x[z]
        assert res.x[y] == pytest.approx(7.0, abs=1e-7)
        assert xs**2 + zs**2 == pytest.approx(rad**2, abs=1e-6)
        best = constropt.solve(blog2, seed=1, parameters={r: rad})
        assert res.fun == pytest.approx(best.fun, abs=1e-6)  # solve: 3 polish starts
