"""The batched interior point (Mehrotra's predictor-corrector) of the local solves: the
disc family to its closed form, a problem with several active constraints, one whose
constraints are all inactive, and which problems local solves are refused."""

from __future__ import annotations

import math

import numpy as np
import sympy as sp

import constropt
from constropt.local import _interior

x, y, r, a = sp.symbols("x y r a")

#: Most iterations any start may take.  Measured (medians in brackets): at most 16 (10) on
#: the disc family from the four starts ``solve_batch`` uses, 12 (10) and 9 (7) on the two
#: problems below; the barrier lowered tenfold per iteration took 30 (14), 15 (13) and
#: 15 (14), one disc start not converging by the cap of 30.  20 leaves room for other
#: BLAS builds and platforms.
MAX_ITERS = 20


def _starts(lo, hi, k, seed=0):
    """The box centre and ``k - 1`` uniform points inside, as ``solve_batch`` draws them."""
    rng = np.random.default_rng(seed)
    lo, hi = np.asarray(lo, float), np.asarray(hi, float)
    pts = [0.5 * (lo + hi)] + [lo + (hi - lo) * rng.uniform(0.05, 0.95, lo.size)
                               for _ in range(k - 1)]
    return np.stack(pts, axis=1)


def test_the_disc_family_reaches_its_closed_form():
    p = constropt.Problem(x + 2 * y, [(x - 1)**2 + (y + 1)**2 <= r**2],
                          bounds={x: (-10, 10), y: (-10, 10)}, parameters={r: 1.0})
    radii = np.linspace(0.5, 5.0, 64)
    S = _starts(p.lower, p.upper, 4)
    X0 = np.repeat(S, radii.size, axis=1)
    M = np.tile(radii, 4)[None]
    X, conv, its = _interior.interior_point(p, X0, M)
    assert conv.all()
    assert its.max() <= MAX_ITERS, its.max()
    # the objective is first order in the distance to the circle, second order along it
    np.testing.assert_allclose(X[0] + 2 * X[1], -1.0 - M[0] * math.sqrt(5.0), atol=1e-9)
    # on the circle to 1e-9 (the iterations stop at residuals 1e-10 relative)
    np.testing.assert_allclose(np.hypot(X[0] - 1, X[1] + 1), M[0], atol=1e-9)
    ok, act = _interior.kkt_test(p, X, M)
    assert ok.all() and act.all()


def test_several_active_constraints():
    # max x + y on x <= 1, y <= 2 (as constraints, the box is wider) and a disc of
    # radius sqrt(6) that stays inactive: the corner (1, 2), both linear leaves active
    p = constropt.Problem(-(x + y), [x <= 1, y <= 2, x**2 + y**2 <= 6],
                          bounds={x: (-5, 5), y: (-5, 5)})
    X0 = np.column_stack([_starts(p.lower, p.upper, 6), [[4.0], [-4.0]]])  # one infeasible
    M = np.zeros((0, X0.shape[1]))
    X, conv, its = _interior.interior_point(p, X0, M)
    assert conv.all() and its.max() <= MAX_ITERS, its
    np.testing.assert_allclose(X, np.array([[1.0], [2.0]]) * np.ones((1, X0.shape[1])),
                               atol=1e-9)
    ok, act = _interior.kkt_test(p, X, M)
    assert ok.all()
    assert act[:2].all() and not act[2].any()


def test_only_inactive_constraints():
    # min (x - 1)^2 + (y - 2)^2 with a disc and a half-plane that do not reach (1, 2)
    p = constropt.Problem((x - 1)**2 + (y - 2)**2, [x**2 + y**2 <= 20, x + y <= 10],
                          bounds={x: (-5, 5), y: (-5, 5)})
    X0 = _starts(p.lower, p.upper, 6, seed=1)
    M = np.zeros((0, X0.shape[1]))
    X, conv, its = _interior.interior_point(p, X0, M)
    assert conv.all() and its.max() <= MAX_ITERS, its
    # the multipliers of the inactive leaves fall with the barrier to ~1e-13: the
    # stationary point moves by that over the curvature 2
    np.testing.assert_allclose(X, np.array([[1.0], [2.0]]) * np.ones((1, X0.shape[1])),
                               atol=1e-9)
    ok, act = _interior.kkt_test(p, X, M)
    assert ok.all() and not act.any()


def test_local_solves_are_refused_where_a_pole_may_be():
    disc = constropt.Problem(x + 2 * y, [(x - 1)**2 + (y + 1)**2 <= r**2],
                             bounds={x: (-10, 10), y: (-10, 10)}, parameters={r: 1.0})
    assert _interior.applicable(disc) is None
    # 1 / (x - y + a): every start can end at the corner (1, -1), a local minimum, while
    # the objective falls without bound at x - y = -a inside the box
    for f in (1 / (x - y + a), sp.log(x + 2) + y, sp.tan(x) * y, sp.atanh(x - y) + y):
        p = constropt.Problem(f, bounds={x: (-1, 1), y: (-1, 1)}, parameters={a: 0.5})
        assert "pole" in _interior.applicable(p)
    # a divisor of parameters only, and sqrt (no pole), stay local
    q = constropt.Problem(x / (1 + a**2) + sp.sqrt(y + 2), bounds={x: (-1, 1), y: (-1, 1)},
                          parameters={a: 0.5})
    assert _interior.applicable(q) is None


def test_an_indefinite_lagrangian_keeps_the_tenfold_barrier_decrease():
    # blog example 2 (maximized, indefinite): the predictor-corrector sent every start of
    # this problem outside and none converged; the starts leave it at the first
    # indefinite iterate and converge as the plain barrier decrease did (here 19 at most)
    X_, Y_, Z_, R_ = sp.symbols("X Y Z R")
    f = X_**2 + 2 * Y_**2 + 3 * Z_**2 + 4 * X_ * Y_ - 5 * Y_ * Z_
    cons = [X_ >= 1, Y_ >= 3, Y_ <= 7, Z_ <= 0, X_ + Y_ + Z_ >= 3, X_**2 + Z_**2 <= R_**2]
    p = constropt.Problem(f, cons, maximize=True, bounds={X_: (1, 25), Z_: (-25, 0)},
                          parameters={R_: 3.0})
    radii = np.array([2.0, 3.0, 5.0])
    S = _starts(p.lower, p.upper, 4, seed=2)
    X0 = np.repeat(S, radii.size, axis=1)
    M = np.tile(radii, 4)[None]
    X, conv, its = _interior.interior_point(p, X0, M)
    assert conv.all() and its.max() <= 25, its
    ok, _ = _interior.kkt_test(p, X, M)
    assert ok.all()
    fv = (X[0]**2 + 2 * X[1]**2 + 3 * X[2]**2 + 4 * X[0] * X[1] - 5 * X[1] * X[2])
    # every start of an instance at the same maximum (the KKT test passed: its residual
    # 1e-6 relative bounds the spread)
    fv = fv.reshape(4, radii.size)
    np.testing.assert_allclose(fv, np.broadcast_to(fv.max(axis=0), fv.shape), rtol=1e-7)
    feas = (X[0]**2 + X[2]**2 <= M[0]**2 + 1e-9) & (X[1] <= 7 + 1e-9) & (X[1] >= 3 - 1e-9)
    assert feas.all()
