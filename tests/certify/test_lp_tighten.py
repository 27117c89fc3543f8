"""Bound tightening from LPs (certify/_lp.py, certify/_branch.py): reduced-cost bounds
and bound tightening at nodes never cut off a point of the box with ``f <= U``, checked
against exact LP optima and at thousands of sampled points (objective evaluated with
NumPy and with torch); certify with every tightening on stays below known optima.  Warm
starts change how the simplex starts, never the bound's validity."""

from __future__ import annotations

import math
import warnings
from fractions import Fraction

import numpy as np
import pytest
import sympy as sp

import constropt
from constropt import benchmarks
from constropt.certify import _bnb, _branch, _lp
from constropt.problem._fbbt import problem_model

highspy = pytest.importorskip("highspy")
torch = pytest.importorskip("torch")

x, y, z = sp.symbols("x y z", real=True)


def _random_lp(rng, h):
    nr, nc = 6, 5
    A = np.round(rng.normal(size=(nr, nc)), 3)
    x0 = rng.uniform(-1, 1, nc)
    rlo = A @ x0 - rng.uniform(0, 1, nr)
    rhi = np.where(rng.random(nr) < 0.5, np.inf, A @ x0 + 1)
    clo, chi = -2 * np.ones(nc), 2 * np.ones(nc)
    h.clearModel()
    h.addVars(nc, clo, chi)
    for i in range(nr):
        h.addRow(rlo[i], rhi[i], nc, np.arange(nc, dtype=np.int32), A[i])
    return A, rlo, rhi, clo, chi


def _opt(h, cost):
    h.changeColsCost(len(cost), np.arange(len(cost), dtype=np.int32), cost)
    h.run()
    assert h.modelStatusToString(h.getModelStatus()) == "Optimal"
    return h.getInfo().objective_function_value


def test_reduced_cost_bounds_contain_every_lp_point_below_the_cutoff():
    """Random LPs ``min c^T z``, cutoff ``U`` above the optimum: the reduced-cost bound of
    each column (from HiGHS's duals and from perturbed ones) contains the exact range of
    ``z_j`` over ``{LP-feasible z, c^T z <= U}`` (HiGHS's values, a margin of 1e-9 for
    their own rounding)."""
    rng = np.random.default_rng(1)
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    tightened = 0
    for _ in range(40):
        A, rlo, rhi, clo, chi = _random_lp(rng, h)
        nc = A.shape[1]
        rows, cols = np.nonzero(A)
        c = rng.normal(size=nc)
        opt = _opt(h, c)
        y = np.asarray(h.getSolution().row_dual)
        U = opt + rng.uniform(0.0, 2.0)
        for yy in (y, y + rng.normal(size=len(y)) * 0.2):
            L, dlo, dhi = _lp.safe_bound(rows, cols, A[rows, cols], rlo, rhi, clo, chi, c,
                                         yy, reduced=True)
            assert np.all(dlo <= dhi)
            lo, hi = _lp.reduced_cost_bounds(L, U, clo, chi, dlo, dhi)
            # the exact range of each z_j with the cutoff row c^T z <= U added
            h.addRow(-np.inf, U, nc, np.arange(nc, dtype=np.int32), c)
            for j in range(nc):
                e = np.zeros(nc)
                e[j] = 1.0
                zmin, zmax = _opt(h, e), -_opt(h, -e)
                if not np.isnan(hi[j]):
                    assert hi[j] >= zmax - 1e-9 * max(1.0, abs(zmax))
                    tightened += hi[j] < chi[j]
                if not np.isnan(lo[j]):
                    assert lo[j] <= zmin + 1e-9 * max(1.0, abs(zmin))
                    tightened += lo[j] > clo[j]
            h.deleteRows(1, np.array([h.getNumRow() - 1], dtype=np.int32))
    assert tightened > 20  # the test exercises real tightening


def test_reduced_cost_bounds_edge_cases():
    """No cutoff, a non-finite bound or a bound above the cutoff: nothing tightened; a
    reduced cost of 0 tightens nothing; outward rounding: the bound holds in exact
    arithmetic at the boundary (z_j = lo_j + (U - L) / d_j)."""
    clo, chi = np.array([0.0, 0.0]), np.array([1.0, 1.0])
    d = np.array([3.0, 0.0])
    for L, U in ((0.0, math.inf), (-math.inf, 1.0), (2.0, 1.0)):
        lo, hi = _lp.reduced_cost_bounds(L, U, clo, chi, d, d)
        assert np.all(np.isnan(lo)) and np.all(np.isnan(hi))
    lo, hi = _lp.reduced_cost_bounds(0.0, 0.1, clo, chi, d, d)
    assert np.isnan(hi[1]) and np.all(np.isnan(lo))
    # 0.1 / 3 is not a float: the bound is above the exact quotient
    assert Fraction(float(hi[0])) >= Fraction(0.1) / 3
    lo, hi = _lp.reduced_cost_bounds(0.0, 0.1, clo, chi, -d, -d)
    assert Fraction(float(lo[0])) <= 1 - Fraction(0.1) / 3


EXPRS = {
    "bilinear sum": (x * y - y * z + 2 * x * z - x, [x + y + z <= 2]),
    "composition": (sp.exp(x * y) - sp.log(1 + x**2) + sp.sqrt(z**2 + 1) / (y**2 + 1),
                    [x * y + z >= -1]),
    "cubic": (x**3 - 3 * x * y + y**2 * z, [x**2 + y**2 <= 4]),
    "fallback": (sp.sin(x) * y + sp.Abs(z) + x * z, []),
}


@pytest.mark.parametrize("name", list(EXPRS))
def test_tightened_boxes_keep_every_sampled_point_below_the_cutoff(name):
    """60 random boxes, the cutoff ``f <= U`` at the 30% quantile of ``f`` over 100 points
    of each box: every point of the box (of 100 more) that satisfies the constraints
    with ``f <= U`` lies in the box's reduced-cost bounds and in its node-OBBT bounds
    (``LPBounder.tighten``), ``f`` evaluated with NumPy and with torch.  6,000 points per
    expression and per backend."""
    expr, cons = EXPRS[name]
    p = constropt.Problem(expr, cons, variables=[x, y, z],
                          bounds={x: (-3, 3), y: (-3, 3), z: (-3, 3)})
    model = problem_model(p, gradient=False)
    P = torch.zeros(len(p.parameter_vector()), dtype=torch.float64)
    fn = sp.lambdify((x, y, z), expr, "numpy")
    ft = sp.lambdify((x, y, z), expr, modules="torch")
    gs = [sp.lambdify((x, y, z), c.lhs - c.rhs, "numpy") for c in cons]
    rng = np.random.default_rng(7)
    m = 60
    lo = rng.uniform(-3, 2, (3, m))
    hi = np.minimum(lo + 10.0 ** rng.uniform(-2, 0.5, (3, m)), 3.0)

    def sample(k):
        return lo[None] + rng.random((k, 3, m)) * (hi - lo)[None]

    with np.errstate(all="ignore"):
        X = sample(100)
        fq = np.quantile(fn(*X.transpose(1, 0, 2)), 0.3, axis=0)
    checked, tightened = 0, 0
    for k in range(m):
        targets = model.leaf_targets(p.eq_tol) + [(model.f, -math.inf, float(fq[k]))]
        B = _lp.LPBounder(model, targets, model.n_params)
        tlo, thi = torch.as_tensor(lo[:, k:k + 1]), torch.as_tensor(hi[:, k:k + 1])
        ranges, consts = B.ranges(tlo, thi, P, {})
        lb = B.bounds(ranges, consts, 1)
        rl, rh = B.tight[0][:, 0], B.tight[1][:, 0]
        got = B.tighten(ranges, consts, 3)
        S = sample(100)[:, :, k]
        with np.errstate(all="ignore"):
            fv = fn(S[:, 0], S[:, 1], S[:, 2])
            tv = ft(*torch.as_tensor(S.T)).numpy()
            feas = np.ones(len(S), dtype=bool)
            for g, c in zip(gs, cons):
                gv = g(S[:, 0], S[:, 1], S[:, 2])
                feas &= gv <= 0 if isinstance(c, sp.core.relational.LessThan) else gv >= 0
        for vals in (fv, tv):
            keep = feas & (vals <= fq[k])
            if not keep.any():
                continue
            assert lb[0] <= vals[keep].min()
            assert got is not None  # a box with such a point is never proven empty
            for j in range(3):
                pts = S[keep, j]
                for bound_lo, bound_hi in ((rl[j], rh[j]), (got[0][j], got[1][j])):
                    assert np.isnan(bound_lo) or np.all(pts >= bound_lo)
                    assert np.isnan(bound_hi) or np.all(pts <= bound_hi)
            checked += int(keep.sum())
        tightened += int(np.sum(~np.isnan(rl) & (rl > lo[:, k])) +
                         np.sum(~np.isnan(rh) & (rh < hi[:, k])))
    assert checked > 1000
    if name != "fallback":
        assert tightened > 0  # the reduced costs do tighten some boxes


def _certify(p, res, t):
    return _bnb.certify(p, p.parameter_vector(), res.fun, res.x_array, time_limit=t)


@pytest.mark.parametrize("rc, warm, obbt", [(True, True, 1.0), (True, False, 0.0),
                                            (False, True, 0.0)])
@pytest.mark.parametrize("name", ["G10", "G13", "RC05", "st_e38"])
def test_certify_with_tightening_stays_below_the_known_optimum(name, rc, warm, obbt,
                                                               monkeypatch):
    """With reduced costs, warm starts and node OBBT (its share raised to 1.0 so that it
    runs at every step) in several combinations, the proven bound is never above the
    published optimum (relative margin 1e-9 for the published digits)."""
    monkeypatch.setattr(_lp, "REDUCED_COSTS", rc)
    monkeypatch.setattr(_lp, "WARM", warm)
    monkeypatch.setattr(_branch, "NODE_OBBT_SHARE", obbt)
    b = benchmarks.get(name)
    p = b.problem()
    with warnings.catch_warnings():  # the search's own notes are not what is tested
        warnings.simplefilter("ignore")
        res = constropt.solve(p, seed=0)
    c = _certify(p, res, 3.0)
    sign = -1.0 if p.maximize else 1.0
    fstar = sign * b.f_star
    assert c.kind == "bound"
    assert sign * c.lower_bound <= fstar + 1e-9 * max(1.0, abs(fstar))
    assert c.lps > 0

