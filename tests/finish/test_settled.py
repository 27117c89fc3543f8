"""The batched finishing of settled points (finish/_settled.py) gives, instance by
instance, what the per-instance finish gives: the same point, objective, violations,
evaluations, status, message and exact verdicts, on batches that mix feasible,
infeasible, unbounded-looking and boundary points."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import sympy as sp

import constropt
from constropt.engine._driver import Instance
from constropt.finish._budget import Budget
from constropt.finish._finish import finish
from constropt.finish._result import Status
from constropt.finish._settled import certify_many, judge_settled
from constropt.finish._verdict import diverges_many
from constropt.problem._bounds import parameter_box
from constropt.problem._evaluate import report_numpy
from constropt.solver._batch import _param_matrix

x, y, z, r, a = sp.symbols("x y z r a")


def _per_instance(problem, X, F, V, M, used, reason, unbounded):
    sgn = -1.0 if problem.maximize else 1.0
    out = []
    for b in range(X.shape[1]):
        xb, fb = X[:, b].copy(), float(F[b])
        inst = Instance(xb, sgn * fb, 0.0, 0, 0, reason, 0, np.array([int(used[b])]),
                        np.array([sgn * fb]), np.array([0.0]), xb[:, None])
        unb = None if unbounded is None else (bool(unbounded[0][b]), int(unbounded[1][b]))
        out.append(finish(problem, inst, M[:, b], Budget(None), polish=False,
                          unbounded=unb, refined=(xb, int(used[b]), True, fb,
                                                  V[:, b].copy())))
    return out


def _same(got, want):
    """Field by field; the verification's ``seconds`` (a timing) aside.  The same code
    computes both sides from the same float64 numbers: equal, not close."""
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.x, w.x)
        assert (g.f == w.f) or (math.isnan(g.f) and math.isnan(w.f))
        np.testing.assert_array_equal(g.V, w.V)
        assert (g.nfev, g.status, g.message) == (w.nfev, w.status, w.message)
        gv, wv = g.checked.verification, w.checked.verification
        assert (gv.feasible, gv.verdicts, gv.float64_feasible, gv.repaired, gv.precision) \
            == (wv.feasible, wv.verdicts, wv.float64_feasible, wv.repaired, wv.precision)
        assert gv.fun_error == wv.fun_error or (math.isnan(gv.fun_error) and
                                                 math.isnan(wv.fun_error))
        assert (g.checked.genes, g.checked.note, g.checked.evaluations) == \
            (w.checked.genes, w.checked.note, w.checked.evaluations)


def _points(problem, params, X):
    M, _ = _param_matrix(problem, params)
    problem = parameter_box(problem, M)
    F, V = report_numpy(problem, X, M)
    F = np.broadcast_to(F, (X.shape[1],)).astype(np.float64)
    return problem, M, F, np.asarray(V, dtype=np.float64)


def _check(problem, M, X, F, V, used, reason=Status.CONVERGED, probe=True):
    unbounded = diverges_many(problem, X, M) if probe else None
    got = judge_settled(problem, X, F, V, M, used, reason=reason, unbounded=unbounded)
    want = _per_instance(problem, X, F, V, M, used, reason, unbounded)
    _same(got, want)
    return got


def _disc():
    return constropt.Problem(x + 2 * y, [(x - 1)**2 + (y + 1)**2 <= r**2],
                             bounds={x: (-10, 10), y: (-10, 10)}, parameters={r: 1.0})


def test_disc_mix_of_optima_boundary_interior_and_infeasible_points():
    problem = _disc()
    radii = np.array([0.5, 1.0, 2.0, 3.0, 4.0, 5.0, 1.5, 2.5])
    t = np.arctan2(-2.0, -1.0)
    X = np.stack([1 + radii * np.cos(t), -1 + radii * np.sin(t)])  # the optima, on the edge
    X[:, 2] = [1.0, -1.0]                                            # the centre: interior
    X[:, 3] = [9.0, 9.0]                                             # outside the disc
    X[:, 4] = [1.0 + 4.0, -1.0]                                      # exactly on the circle
    X[:, 5] = [1.0 + 5.0 * (1 + 1e-16), -1.0]                        # a rounding-level tie
    problem, M, F, V = _points(problem, {r: radii}, X)
    got = _check(problem, M, X, F, V, np.arange(8) * 7 + 3)
    statuses = {f.status for f in got}
    assert Status.CONVERGED in statuses and Status.INFEASIBLE in statuses


def test_interrupted_and_unprobed_batches():
    problem = _disc()
    radii = np.array([0.5, 2.0, 5.0])
    X = np.array([[1.0, 9.0, 1.0], [-1.0, 9.0, -6.0]])
    problem, M, F, V = _points(problem, {r: radii}, X)
    got = _check(problem, M, X, F, V, np.array([1, 2, 3]), reason=Status.INTERRUPTED,
                 probe=False)
    assert all(f.status is Status.INTERRUPTED for f in got)
    _check(problem, M, X, F, V, np.array([1, 2, 3]), probe=False)


def test_blog_example_2_batch():
    f = x**2 + 2 * y**2 + 3 * z**2 + 4 * x * y - 5 * y * z
    cons = [x >= 1, y > 3, y <= 7, z < 0, x + y + z >= 3, x**2 + z**2 <= r**2]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        problem = constropt.Problem(f, cons, maximize=True, bounds={x: (1, 25), z: (-25, 0)},
                                    parameters={r: 3.0})
        batch = constropt.solve_batch(problem, {r: np.linspace(2.0, 5.0, 12)}, seed=0)
    X = np.stack([res.x_array for res in batch], axis=1)
    X[:, 1] = [1.0, 3.0, -1.0]      # y on its strict bound: infeasible
    X[:, 2] = [1.0, 7.0, 0.0]       # z on its strict bound
    X[:, 3] = [30.0, 5.0, -1.0]     # outside the box
    problem, M, F, V = _points(problem, {r: np.linspace(2.0, 5.0, 12)}, X)
    got = _check(problem, M, X, F, V, np.full(12, 40))
    assert sum(f.status is Status.CONVERGED for f in got) >= 9


def test_pole_and_soft_sides_take_their_probes():
    # a non-polynomial objective (the pole probe runs) on a default (soft) box (the ray
    # probe runs), with a point near the pole, one far from it, and an unbounded-looking one
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the default box
        problem = constropt.Problem(-1 / (x - y + a), [x - y >= 0], variables=[x, y],
                                    parameters={a: 1e-3})
    params = {a: np.array([1e-3, 1e-2, 1e-4, 0.5])}
    X = np.array([[0.0, 0.0, 1.0, 3.0], [0.0, 0.0, 1.0 - 1e-12, 3.0]])
    problem, M, F, V = _points(problem, params, X)
    _check(problem, M, X, F, V, np.array([5, 6, 7, 8]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # y's default box
        q = constropt.Problem(-sp.log(x) - y, [y <= a], bounds={x: (0, 1)},
                              variables=[x, y], parameters={a: 1.0})
    X = np.array([[1e-300, 0.5, 1.0], [1.0, 0.5, 0.0]])
    q, M, F, V = _points(q, {a: np.array([1.0, 2.0, 3.0])}, X)
    _check(q, M, X, F, V, np.array([1, 1, 1]))


def test_bounded_box_pole_probe_and_unbounded_edge():
    # no soft side: the common case of the batch, with the pole probe (a non-polynomial
    # objective) and the edge probe that finds log(x) unbounded at x -> 0+
    box = {x: (-1, 1), y: (-1, 1)}
    problem = constropt.Problem(-1 / (x - y + a), [x - y >= 0], bounds=box,
                                parameters={a: 1e-3})
    X = np.array([[0.0, 0.5, 1.0, -1.0], [0.0, 0.0, 1.0 - 1e-12, 1.0]])
    problem, M, F, V = _points(problem, {a: np.array([1e-3, 1e-2, 1e-4, 0.5])}, X)
    got = _check(problem, M, X, F, V, np.array([5, 6, 7, 8]))
    assert {f.status for f in got} >= {Status.CONVERGED, Status.INFEASIBLE}
    q = constropt.Problem(sp.log(x) - y, [y <= a], bounds={x: (0, 1), y: (-5, 5)},
                          parameters={a: 1.0})
    X = np.array([[1e-300, 0.5, 1.0], [1.0, 0.5, 0.0]])
    q, M, F, V = _points(q, {a: np.array([1.0, 2.0, 3.0])}, X)
    got = _check(q, M, X, F, V, np.array([1, 1, 1]))
    assert got[0].status is Status.UNBOUNDED


def test_points_on_the_circle_that_need_a_repair():
    # points computed on the circle in float64: some float64 finds feasible and exact
    # arithmetic does not (a repair moves them), some are exactly on it, some outside
    rng = np.random.default_rng(1)
    radii = rng.uniform(0.5, 5.0, 60)
    t = rng.uniform(0, 2 * np.pi, 60)
    X = np.stack([1 + radii * np.cos(t), -1 + radii * np.sin(t)])
    problem, M, F, V = _points(_disc(), {r: radii}, X)
    got = _check(problem, M, X, F, V, np.full(60, 9))
    assert any(f.checked.verification.repaired for f in got)
    assert any(f.status is Status.INFEASIBLE for f in got)


def test_certify_many_is_certify_point_per_column():
    problem = _disc()
    radii = np.array([1.0, 2.0, 4.0])
    X = np.array([[1.0, 3.0, 5.0], [-2.0, -1.0, -1.0]])  # on the circle, each exactly
    problem, M, F, V = _points(problem, {r: radii}, X)
    from constropt.finish._repair import certify_point
    for c, b in zip(certify_many(problem, X, M, F, V), range(3)):
        w = certify_point(problem, X[:, b], M[:, b], float(F[b]), V[:, b])
        np.testing.assert_array_equal(c.x, w.x)
        assert c.verification.verdicts == w.verification.verdicts
        assert (c.note, c.evaluations, c.feasible) == (w.note, w.evaluations, w.feasible)


@pytest.mark.parametrize("B", [5, 40])
def test_solve_batch_local_answers_unchanged(B):
    """solve_batch's local answers (judged in a batch) against the per-instance finish of
    the same settled points."""
    problem = _disc()
    batch = constropt.solve_batch(problem, {r: np.linspace(0.5, 5.0, B)}, seed=0)
    assert batch.success.all()
    assert np.max(np.abs(batch.fun - (-1 - np.linspace(0.5, 5.0, B) * math.sqrt(5)))) < 1e-6
