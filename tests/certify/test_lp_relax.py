"""LP relaxations (certify/_relax.py) and their safe bounds (certify/_lp.py): every row
holds at thousands of sampled points of random boxes, rule by rule; the safe dual bound
is never above the LP's or the problem's minimum; certify with LPs stays below known
optima."""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp

import constropt
from _pooling import haverly
from constropt.certify import _bnb, _lp
from constropt.certify._relax import relax
from constropt.lowering import _rt_interval as ri
from constropt.lowering._rt_interval import Iv
from constropt.problem._fbbt import problem_model

highspy = pytest.importorskip("highspy")
torch = pytest.importorskip("torch")

x, y, z = sp.symbols("x y z", real=True)

# one expression per rule, and compositions; each with the box family it is tested on
RULES = {
    "product": (x * y, "any"),
    "product3": (x * y * z, "any"),
    "scaled product": (-3.5 * x * y + z, "any"),
    "quotient": (x / y, "any"),
    "exp": (sp.exp(x), "any"),
    "log": (sp.log(x), "pos"),
    "sqrt": (sp.sqrt(x), "nonneg"),
    "square": (x**2, "any"),
    "cube": (x**3, "any"),
    "fourth": (x**4 - y**4, "any"),
    "reciprocal": (1 / x, "any"),
    "real power >1": (x**2.5, "pos"),
    "real power <1": (x**0.3, "pos"),
    "real power <0": (x**-1.5, "pos"),
    "composition": (sp.exp(x * y) - sp.log(1 + x**2) + sp.sqrt(z**2 + 1) / (y**2 + 1), "any"),
    "bilinear sum": (x * y - y * z + 2 * x * z - x, "any"),
    "fallback": (sp.sin(x) * y + sp.Abs(z), "any"),
}


def _boxes(rng, kind, m, n=3):
    lo = rng.uniform(-3, 3, (n, m))
    w = 10.0 ** rng.uniform(-6, 0.7, (n, m))
    if kind == "pos":
        lo = np.abs(lo) + 1e-3
    elif kind == "nonneg":
        lo = np.where(rng.random((n, m)) < 0.2, 0.0, np.abs(lo))
    return lo, lo + w


def _model(expr):
    p = constropt.Problem(expr, [], variables=[x, y, z],
                          bounds={x: (-10, 10), y: (-10, 10), z: (-10, 10)})
    return problem_model(p)


def _ranges(model, lo, hi):
    prog = model.program
    vals = prog.forward(lo, hi, np.zeros(0), only=[model.f])
    ranges, consts = {}, {}
    for n in prog.order_for([model.f]):
        key = prog.graph.nodes[n]
        if key[0] == "const":
            consts[n] = float(key[1])
            continue
        v = vals[n]
        m = lo.shape[1]
        a, b = np.broadcast_to(v.lo, (m,)), np.broadcast_to(v.hi, (m,))
        use = np.isfinite(a) & np.isfinite(b) & (a <= b) & ~np.broadcast_to(v.nan, (m,))
        ranges[n] = (np.where(use, a, 0.0), np.where(use, b, 0.0), use)
    return ranges, consts, vals


@pytest.mark.parametrize("name", list(RULES))
def test_every_row_holds_at_sampled_points(name):
    """For 200 random boxes and 25 points in each (5,000 per rule), the exact node values
    (enclosed by the interval program at the point, a few ulps wide) satisfy every row
    and lie in their columns' bounds: each row's enclosure meets its sides."""
    expr, kind = RULES[name]
    model = _model(expr)
    rng = np.random.default_rng(abs(hash(name)) % 2**32)
    m = 200
    lo, hi = _boxes(rng, kind, m)
    ranges, consts, _ = _ranges(model, lo, hi)
    order = model.program.order_for([model.f])
    R = relax(model.program.graph, order, ranges, consts, model.f, [], m)
    assert R is not None
    node_col = {}
    j = 0
    for n in order:  # columns of nodes come first, in order (extra columns after)
        if n in ranges:
            node_col[j] = n
            j += 1
    rows_ok = ~np.isin(np.arange(len(R.row_lo)), R.rows[~np.isin(R.cols, list(node_col))])
    checked = 0
    for _ in range(25):
        t = rng.random(lo.shape)
        t[rng.random(lo.shape) < 0.2] = 0.0  # corners and faces too
        t[rng.random(lo.shape) < 0.2] = 1.0
        X = np.clip(lo + t * (hi - lo), lo, hi)
        vals = model.program.forward(X, X, np.zeros(0), only=[model.f])
        zl = np.zeros((R.ncol, m))
        zh = np.zeros((R.ncol, m))
        defined = np.ones(m, dtype=bool)
        for j, n in node_col.items():
            v = vals[n]
            zl[j], zh[j] = np.broadcast_to(v.lo, (m,)), np.broadcast_to(v.hi, (m,))
            bad = np.broadcast_to(v.nan, (m,)) | ~(zl[j] <= zh[j])
            defined &= ~bad
            use = ranges[n][2]
            # every defined value lies in its column's range
            assert np.all(~use | bad | ((zh[j] >= R.col_lo[j]) & (zl[j] <= R.col_hi[j])))
        for r in np.flatnonzero(rows_ok):
            sel = R.rows == r
            acc = Iv(np.zeros(m), np.zeros(m), np.zeros(m, dtype=bool))
            for c, a in zip(R.cols[sel], R.vals[sel]):
                acc = ri.add(acc, ri.mul2(Iv(a, a, np.zeros(m, bool)),
                                          Iv(zl[c], zh[c], np.zeros(m, bool))))
            ok = (acc.hi >= R.row_lo[r]) & (acc.lo <= R.row_hi[r])
            assert np.all(ok | ~defined), (name, r, np.flatnonzero(~ok & defined)[:3])
            checked += int(defined.sum())
    # rows of longer products tie auxiliary columns (checked by the LP bound test below)
    assert checked > 0 or R.ncol > len(node_col)
    assert len(R.row_lo) > 0


def _lp_of(problem):
    model = problem_model(problem, gradient=False)
    P = torch.zeros(len(problem.parameter_vector()), dtype=torch.float64)
    return model, _lp.LPBounder(model, model.leaf_targets(problem.eq_tol), model.n_params), P


@pytest.mark.parametrize("name", ["product3", "scaled product", "composition",
                                  "bilinear sum", "quotient", "fallback"])
def test_safe_lp_bound_is_below_sampled_values(name):
    """The safe LP bound of each of 100 random boxes is below the objective at 200
    points of the box (the auxiliary columns of longer products included)."""
    expr, kind = RULES[name]
    p = constropt.Problem(expr, [], variables=[x, y, z],
                          bounds={x: (-10, 10), y: (-10, 10), z: (-10, 10)})
    model, B, P = _lp_of(p)
    rng = np.random.default_rng(3)
    lo, hi = _boxes(rng, kind, 100)
    lb = B.box_bounds(torch.as_tensor(lo), torch.as_tensor(hi), P, {})
    f = sp.lambdify((x, y, z), expr, "numpy")
    t = rng.random((200, 3, 100))
    X = lo + t * (hi - lo)
    with np.errstate(all="ignore"):
        vals = f(X[:, 0], X[:, 1], X[:, 2])
    vals = np.where(np.isfinite(vals), vals, np.inf).min(0)
    assert np.all(lb <= vals)
    assert np.isfinite(lb).mean() > 0.5  # the LP bounds most boxes


def test_safe_bound_against_exact_lp():
    """Random LPs: the safe bound from HiGHS's duals, and from perturbed duals, is at
    most the LP's minimum (HiGHS's own value, less a rounding margin of 1e-9)."""
    rng = np.random.default_rng(0)
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    for _ in range(50):
        nr, nc = 6, 5
        A = np.round(rng.normal(size=(nr, nc)), 3)
        x0 = rng.uniform(-1, 1, nc)
        rlo = A @ x0 - rng.uniform(0, 1, nr)
        rhi = np.where(rng.random(nr) < 0.5, np.inf, A @ x0 + 1)
        clo, chi = -2 * np.ones(nc), 2 * np.ones(nc)
        c = rng.normal(size=nc)
        rows, cols = np.nonzero(A)
        h.clearModel()
        h.addVars(nc, clo, chi)
        h.changeColsCost(nc, np.arange(nc, dtype=np.int32), c)
        for i in range(nr):
            h.addRow(rlo[i], rhi[i], nc, np.arange(nc, dtype=np.int32), A[i])
        h.run()
        assert h.modelStatusToString(h.getModelStatus()) == "Optimal"
        opt = h.getInfo().objective_function_value
        y = np.asarray(h.getSolution().row_dual)
        b = _lp.safe_bound(rows, cols, A[rows, cols], rlo, rhi, clo, chi, c, y)
        assert b <= opt + 1e-9 * max(1.0, abs(opt))
        assert b >= opt - 1e-6 * max(1.0, abs(opt))  # tight with the optimal duals
        for _ in range(5):  # any multipliers give a bound
            yp = y + rng.normal(size=nr) * 0.3
            assert _lp.safe_bound(rows, cols, A[rows, cols], rlo, rhi, clo, chi, c,
                                  yp) <= opt + 1e-9 * max(1.0, abs(opt))


def test_safe_bound_infinite_side_is_minus_inf():
    """A multiplier paired with an infinite side is dropped; an unbounded column with a
    non-zero reduced cost gives -inf, never a finite guess."""
    rows, cols, vals = np.array([0]), np.array([0]), np.array([1.0])
    b = _lp.safe_bound(rows, cols, vals, np.array([1.0]), np.array([np.inf]),
                       np.array([-np.inf]), np.array([5.0]), np.array([2.0]), np.array([-1.0]))
    assert b == -math.inf


# -- certify with LP bounds on problems with exactly known optima ---------------------
def _haverly():
    return haverly()


def _bilinear():
    """min x*y - x - y = (x - 1)(y - 1) - 1 on [0, 2]^2 with x + y <= 3: exact minimum
    -2 at (0, 2) and (2, 0)."""
    return constropt.Problem(x * y - x - y, [x + y <= 3],
                             bounds={x: (0, 2), y: (0, 2)}), -2.0


@pytest.mark.parametrize("make", [_haverly, _bilinear])
def test_certify_with_lps_is_below_the_exact_optimum(make, monkeypatch):
    p, opt = make()
    res = constropt.solve(p, seed=0)
    monkeypatch.setattr(_bnb, "LP", True)
    c = _bnb.certify(p, p.parameter_vector(), res.fun, res.x_array, time_limit=10.0)
    sign = -1.0 if p.maximize else 1.0
    assert sign * c.lower_bound <= sign * opt + 1e-9 * max(1.0, abs(opt))
    assert c.lps > 0
    assert "LP relaxations" in c.statement
    assert set(c.timings) == {"setup", "contract", "bound", "lp", "incumbent", "branch"}
    assert sum(c.timings.values()) == pytest.approx(c.seconds, rel=1e-6, abs=1e-6)


def test_certify_without_lps_says_so(monkeypatch):
    p, _ = _bilinear()
    res = constropt.solve(p, seed=0)
    monkeypatch.setattr(_bnb, "LP", False)
    c = _bnb.certify(p, p.parameter_vector(), res.fun, res.x_array, time_limit=5.0)
    assert c.lps == 0 and "LP" not in c.statement
    assert c.timings["lp"] == 0.0


@pytest.mark.parametrize("floor, want", [(1.3, math.inf), (1.2, 1.2)])
def test_infeasible_lp_removes_a_box_only_by_its_dual_ray(floor, want):
    """x y >= floor, x + y <= 2 on [0.5, 1.5]^2 (not contracted first): McCormick gives
    2 w <= 2 (x + y) - 1.5, so w <= 1.25 and floor 1.3 is infeasible (a dual ray proves
    it: +inf); with 1.2 the bound is finite and at most the true minimum 1.2."""
    p = constropt.Problem(x * y, [x * y >= floor, x + y <= 2], variables=[x, y],
                          bounds={x: (0.5, 1.5), y: (0.5, 1.5)})
    model, B, P = _lp_of(p)
    lo = torch.tensor([[0.5], [0.5]], dtype=torch.float64)
    hi = torch.tensor([[1.5], [1.5]], dtype=torch.float64)
    lb = B.box_bounds(lo, hi, P, {})
    if want == math.inf:
        assert lb[0] == math.inf
    else:
        assert 1.0 < lb[0] <= want
