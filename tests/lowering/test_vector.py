"""Vector variables: IndexedBase / MatrixSymbol with Sum, lowered to tensor reductions."""

from __future__ import annotations

import re

import numpy as np
import pytest
import sympy as sp
import torch

import constropt
from constropt import ProblemError, UnsupportedExpressionError

i, j, k = sp.symbols("i j k", integer=True)
P0 = np.zeros((0, 1))
TOL = 1e-4


def _elements(problem, pt) -> dict:
    """``{x[i]: value, M[r, c]: value, s: value}`` for one point in layout order."""
    out = {}
    for b in problem.layout.blocks:
        vals = pt[b.offset:b.offset + b.size]
        if b.shape == ():
            out[b.symbol] = vals[0]
        elif isinstance(b.symbol, sp.MatrixSymbol):
            for r in range(b.shape[0]):
                for c in range(b.shape[1]):
                    out[b.symbol[r, c]] = vals[r * b.shape[1] + c]
        else:
            for r in range(b.shape[0]):
                out[b.symbol[r]] = vals[r]
    return out


def sympy_reference(problem, expr, pts, parameters=None):
    """Expand every Sum with sympy and substitute the point element by element."""
    e = expr.subs(parameters or {}).doit()
    return np.array([float(e.xreplace({s: sp.Float(v) for s, v in _elements(problem, pt).items()}))
                     for pt in pts])


def check(problem, expr, pts, parameters=None):
    want = sympy_reference(problem, expr, pts, parameters)
    ev = problem.evaluate(pts, parameters=parameters)
    evt = problem.evaluate(torch.tensor(pts), parameters=parameters)
    np.testing.assert_allclose(ev.fun, want, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(evt.fun.numpy(), want, rtol=1e-10, atol=1e-10)
    return ev


# -- the fitness benchmark: 1,000 int8 genes ----------------------------------------------
def genes_problem(n=1000):
    x = sp.IndexedBase("x", shape=(n,), integer=True)
    return x, constropt.Problem(sp.Sum(x[i], (i, 0, n - 1)), bounds={x: (1, 24)},
                                maximize=True)


def test_sum_of_1000_int8_genes_is_one_reduction():
    x, p = genes_problem()
    assert p.variables == (x,) and p.n == 1000 and p.bounds[x] == (1.0, 24.0)
    assert p.integer.all() and (p.lower == 1).all() and (p.upper == 24).all()
    assert "bsum(X[0:1000], dtype)" in p.source
    fitness = p.lowering.functions("torch")["fitness"]
    body = p.source.split("def fitness")[1].split("def death")[0]
    assert body.count("bsum(") == 1 and "X[0]" not in body and "cast(" not in body
    pop = np.random.default_rng(0).integers(1, 25, size=(1000, 10_000), dtype=np.int8)
    want = np.sum(pop, axis=0, dtype=np.int64)
    for dtype in (torch.float32, torch.float64):
        f, cv = fitness(torch.from_numpy(pop), torch.zeros((0, 1), dtype=dtype),
                        torch.tensor(TOL, dtype=dtype))
        assert f.dtype == dtype and f.shape == (10_000,)
        np.testing.assert_array_equal(-f.numpy(), want)
        assert (cv == 0).all()
    f_np, _ = p.lowering.functions("numpy")["fitness"](pop, P0, TOL)
    np.testing.assert_array_equal(-f_np, want)


def test_bsum_rowwise_path_is_exact():
    """Large int8/uint8 blocks take the grouped int16 path on CPU; it must stay exact."""
    from constropt.lowering import _rt_torch

    rng = np.random.default_rng(1)
    for dt, lo, hi in ((np.int8, -128, 128), (np.uint8, 0, 256)):
        pop = torch.from_numpy(rng.integers(lo, hi, size=(300, 4000), dtype=dt))
        old = _rt_torch.BSUM_ROWWISE_MIN, _rt_torch._BSUM_CHUNK
        _rt_torch.BSUM_ROWWISE_MIN, _rt_torch._BSUM_CHUNK = 1, 1500  # 3 column chunks
        try:
            got = _rt_torch.bsum(pop, torch.float64)
        finally:
            _rt_torch.BSUM_ROWWISE_MIN, _rt_torch._BSUM_CHUNK = old
        assert got.dtype == torch.float64
        np.testing.assert_array_equal(got.numpy(), pop.numpy().sum(0, dtype=np.int64))


# -- Sum forms ----------------------------------------------------------------------------
def test_shifted_index_and_constant_index():
    x = sp.IndexedBase("x", shape=(12,))
    expr = sp.Sum((x[i + 1] - x[i]) ** 2, (i, 0, 10)) + x[3] * x[11] + sp.Sum(x[2 * i], (i, 0, 5))
    p = constropt.Problem(expr, bounds={x: (-2, 2)})
    assert "x3 = cast(X[3], dtype)  # x[3]" in p.source and "X[0:11:2]" in p.source
    pts = np.random.default_rng(2).uniform(-2, 2, size=(6, 12))
    check(p, expr, pts)


def test_reversed_and_affine_indices():
    x = sp.IndexedBase("x", shape=(10,))
    expr = sp.Sum(x[9 - i] * i, (i, 0, 9)) + sp.Sum(x[i] * x[9 - i], (i, 0, 4))
    p = constropt.Problem(expr, bounds={x: (-1, 1)})
    check(p, expr, np.random.default_rng(3).uniform(-1, 1, size=(5, 10)))


def test_matrix_symbol_element_sums():
    M = sp.MatrixSymbol("M", 3, 4)
    v = sp.IndexedBase("v", shape=(3,))
    expr = (sp.Sum(M[i, j] ** 2 * (i + 1), (j, 0, 3), (i, 0, 2))   # double sum
            + sp.Sum(M[i, i], (i, 0, 2))                           # diagonal
            + sp.Sum(sp.Sum(v[i] * M[i, j], (i, 0, 2)), (j, 0, 3))  # v^T M 1
            + sp.Sum(M[1, j] * M[2, j], (j, 0, 3)) + M[0, 3])
    p = constropt.Problem(expr, [sp.Sum(M[i, 0], (i, 0, 2)) <= 1], bounds={M: (-2, 2),
                                                                           v: (-1, 1)})
    assert p.variables == (M, v) and p.n == 15
    assert p.layout.blocks[0].shape == (3, 4) and p.layout.blocks[1].offset == 12
    pts = np.random.default_rng(4).uniform(-1, 1, size=(6, 15))
    ev = check(p, expr, pts)
    want_c = pts[:, [0, 4, 8]].sum(1) - 1
    np.testing.assert_allclose(ev.violation[:, 0], np.maximum(want_c, 0))


def test_weighted_sum_with_parameter_and_mixed_scalars():
    x = sp.IndexedBase("x", shape=(20,))
    w, s, t = sp.symbols("w s t")
    expr = w * sp.Sum((x[i] - i) ** 2 * sp.exp(-i / w), (i, 0, 19)) + s**2 - t * x[0]
    cons = [sp.Sum(x[i], (i, 0, 19)) + s <= 50, t >= -1]
    p = constropt.Problem(expr, cons, parameters={w: 2.0},
                          bounds={x: (-5, 25), s: (-3, 3), t: (-1, 4)})
    assert p.variables == (s, t, x) and p.n == 22
    assert p.bounds[x] == (-5.0, 25.0) and p.bounds[t] == (-1.0, 4.0)
    pts = np.random.default_rng(5).uniform(-1, 4, size=(7, 22))
    check(p, expr, pts, parameters={w: 2.0})
    check(p, expr, pts, parameters={w: 3.5})
    q = constropt.Problem(expr, cons, parameters={w: 7.0},
                          bounds={x: (-5, 25), s: (-3, 3), t: (-1, 4)})
    assert q.source == p.source


def test_nested_sum_over_outer_index_only_karr_convention_and_product():
    x = sp.IndexedBase("x", shape=(5,))
    expr = (sp.Sum(sp.Sum(x[i] ** 2, (j, 0, 2)), (i, 0, 4))   # inner sum does not vary
            + sp.Sum(x[i], (i, 3, 2))                          # empty
            + sp.Sum(x[i], (i, 4, 1))                          # reversed: -(x[2] + x[3])
            + sp.Product(1 + x[i], (i, 0, 4))                  # rprod
            + sp.Sum(sp.Product(x[i], (j, 0, 1)), (i, 0, 1)))  # x[0]**2 + x[1]**2
    p = constropt.Problem(expr, bounds={x: (-1, 1)})
    assert "rprod(" in p.source
    pts = np.random.default_rng(6).uniform(-1, 1, size=(4, 5))
    want = (3 * (pts**2).sum(1) - pts[:, 2] - pts[:, 3] + np.prod(1 + pts, axis=1)
            + pts[:, 0] ** 2 + pts[:, 1] ** 2)
    np.testing.assert_allclose(p.evaluate(pts).fun, want, rtol=1e-12)
    np.testing.assert_allclose(p.evaluate(torch.tensor(pts)).fun.numpy(), want, rtol=1e-12)


def test_piecewise_and_nan_semantics_inside_sums():
    x = sp.IndexedBase("x", shape=(6,))
    expr = sp.Sum(sp.Piecewise((sp.sqrt(x[i]), x[i] > 0), (x[i] ** 2, True)), (i, 0, 5))
    p = constropt.Problem(expr + sp.Sum(sp.log(x[i] + 2), (i, 0, 5)), bounds={x: (-3, 3)})
    pts = np.array([[1, -1, 0, 4, -1.5, 0.25], [1, 1, 1, 1, 1, -2.5]], dtype=float)
    ev = p.evaluate(pts)
    assert np.isfinite(ev.fun[0]) and np.isnan(ev.fun[1])
    want0 = 1 + 1 + 0 + 2 + 2.25 + 0.5 + np.log(pts[0] + 2).sum()
    np.testing.assert_allclose(ev.fun[0], want0)
    assert torch.isnan(p.evaluate(torch.tensor(pts)).fun[1])


def test_cse_across_objective_and_constraints():
    x = sp.IndexedBase("x", shape=(50,))
    sq = sp.Sum(x[i] ** 2, (i, 0, 49))
    p = constropt.Problem(sq + sp.sqrt(sq), [sq <= 10, sq >= 1], bounds={x: (-1, 1)})
    for name in ("fitness", "report", "leaves"):
        body = p.source.split(f"def {name}")[1].split("\ndef ")[0]
        assert len(re.findall(r"rsum\(", body)) == 1, body


# -- errors ---------------------------------------------------------------------------------
def test_vector_errors():
    x = sp.IndexedBase("x", shape=(5,))
    n = sp.Symbol("n", integer=True)
    with pytest.raises(ProblemError, match="outside the shape"):
        constropt.Problem(sp.Sum(x[i + 1], (i, 0, 4)), bounds={x: (0, 1)})
    with pytest.raises(UnsupportedExpressionError, match="limits must be integers"):
        constropt.Problem(sp.Sum(x[i], (i, 0, n)), parameters={n: 3}, bounds={x: (0, 1)})
    with pytest.raises(UnsupportedExpressionError, match="affine"):
        constropt.Problem(sp.Sum(x[i * i], (i, 0, 2)), bounds={x: (0, 1)})
    with pytest.raises(UnsupportedExpressionError, match="zeta"):
        constropt.Problem(sp.Sum(sp.zeta(x[i] + 2), (i, 0, 4)), bounds={x: (0, 1)})


# -- derivatives (autograd) and solve --------------------------------------------------------
def test_vector_derivatives_by_autograd_match_finite_differences():
    x = sp.IndexedBase("x", shape=(6,))
    s = sp.Symbol("s")
    expr = (sp.Sum((x[i] - i) ** 2 * sp.exp(x[i + 1] / 3), (i, 0, 4)) + s * x[0]
            + sp.Sum(sp.Piecewise((sp.log(x[i]) * s, x[i] > 0), (x[i] ** 2, True)), (i, 0, 5)))
    p = constropt.Problem(expr, [sp.Sum(x[i] * x[i + 1], (i, 0, 4)) + s**2 <= 1],
                          bounds={x: (-1, 1), s: (-1, 1)})
    assert p.lowering.derivative_method == "autograd"
    X = np.random.default_rng(7).uniform(-1, 1, size=(7, 9))
    g, J = p.lowering.derivatives("numpy")(X, P0)
    assert g.shape == (7, 9) and J.shape == (1, 7, 9) and np.isfinite(g).all()
    leaves = p.lowering.functions("numpy")["leaves"]
    h = 1e-6
    for r in range(7):
        e = np.zeros((7, 1))
        e[r] = h
        (fp, Cp), (fm, Cm) = leaves(X + e, P0), leaves(X - e, P0)
        np.testing.assert_allclose(g[r], (fp - fm) / (2 * h), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(J[:, r], (Cp - Cm) / (2 * h), rtol=1e-5, atol=1e-6)
    gt, _ = p.lowering.derivatives("torch")(torch.tensor(X), torch.zeros((0, 1),
                                                                        dtype=torch.float64))
    np.testing.assert_allclose(gt.numpy(), g, rtol=1e-12)


def test_solve_maximizes_50_integer_genes():
    x = sp.IndexedBase("x", shape=(50,), integer=True)
    res = constropt.solve(sp.Sum(x[i], (i, 0, 49)), bounds={x: (1, 24)}, maximize=True,
                          seed=0, device="cpu", max_generations=400)
    assert res.success and res.fun == 1200
    assert isinstance(res.x[x], np.ndarray) and res.x[x].shape == (50,)
    assert (res.x[x] == 24).all()


def test_solve_least_squares_over_20_genes():
    x = sp.IndexedBase("x", shape=(20,))
    res = constropt.solve(sp.Sum((x[i] - i) ** 2, (i, 0, 19)), bounds={x: (-5, 25)}, seed=0,
                          device="cpu", max_generations=300)
    assert res.success and res.fun < 1e-6
    np.testing.assert_allclose(res.x[x], np.arange(20), atol=1e-4)
