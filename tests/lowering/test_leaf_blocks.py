"""Many constraint leaves of one shape lower to one vector block (lowering/_leafblocks.py):
compact source, the unrolled values up to reassociation and in the constraints' order,
on NumPy and torch, float64 and float32, forward mode and autograd."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
import torch

import constropt
from constropt.lowering import _leafblocks, _rt_torch
from constropt.lowering._codegen import compile_source
from constropt.lowering._derivatives import autograd_derivatives, gradient_runtime
from constropt.lowering._forward import forward_derivatives

P0 = np.zeros((0, 1))
TOL = 1e-4
# a matrix product or a reduction sums in another order than the unrolled chain:
# reassociation only, a few ulps of the values' magnitude (O(100) here)
RTOL64, ATOL64 = 1e-12, 1e-10
RTOL32, ATOL32 = 1e-5, 1e-3  # float32: the same, at float32's epsilon (1.2e-7) * O(100)


def _unrolled(monkeypatch, build):
    """The problem built with every leaf unrolled (the reference)."""
    with monkeypatch.context() as m:
        m.setattr(_leafblocks, "MIN_LEAVES", 10**9)
        return build()


def _box(n):
    """The separable QP with its box written as ``2 n`` constraints."""
    x = sp.symbols(f"x0:{n}", real=True)
    f = sum((xi - sp.Rational(1, 2)) ** 2 for xi in x)
    c = [sum(x) >= sp.Rational(n, 2) + 1] + [r for xi in x for r in (xi >= -5, xi <= 5)]
    return constropt.Problem(f, c, variables=x)


def _rows(m, n=10, seed=0):
    """``m`` random linear rows over ``n`` variables (rational coefficients)."""
    rng = np.random.default_rng(seed)
    x = sp.symbols(f"x0:{n}", real=True)
    A = rng.integers(1, 1000, (m, n)) * rng.choice([-1, 1], (m, n))  # no zero: T = n
    b = rng.integers(1, 3000, m)
    c = [sum(sp.Rational(int(a), 1000) * xi for a, xi in zip(row, x)) <= sp.Rational(int(bk), 1000)
         for row, bk in zip(A, b)]
    return constropt.Problem(sum(xi ** 2 for xi in x), c, variables=x,
                             bounds={xi: (-5, 5) for xi in x})


def _mixed(k=70):
    """Differences ``x_i - x_j <= c`` (two terms each), a nonlinear template over pairs,
    strict and equality leaves of one template, an ``Or`` and single rows between them."""
    n = k + 1
    x = sp.symbols(f"x0:{n}", real=True)
    c = []
    for i in range(k):
        c.append(x[i] - x[i + 1] <= sp.Rational(i % 7 + 1, 3))
        c.append(x[i] ** 2 + sp.exp(x[i + 1] / 4) <= 30 + i % 5)
        c.append(sp.log(x[i] ** 2 + 1) < 3)
        c.append(sp.Eq(x[i] * x[(i + 3) % n], sp.Rational(i % 4 + 1, 2)))
        if i % 10 == 0:
            c.append(sp.Or(x[i] >= 1, x[i] <= -1))
            c.append(sum(x) <= 40)
    return constropt.Problem(sum(xi ** 2 for xi in x), c, variables=x,
                             bounds={xi: (-5, 5) for xi in x})


def _points(n, k=9, seed=1):
    X = np.random.default_rng(seed).uniform(-5, 5, (n, k))
    X[:, 0] = 0.25  # one feasible-ish, calm point
    return X


def _outputs(p, X, backend, dtype):
    """Every generated function's outputs at ``X`` as float64 NumPy arrays."""
    fns = p.lowering.functions(backend)
    res = []
    for fn in ("fitness", "report", "leaves", "death"):
        if backend == "numpy":
            args = [X.astype(dtype), np.zeros((0, 1), dtype)]
        else:
            args = [torch.as_tensor(X.astype(dtype)), torch.zeros((0, 1),
                                                                   dtype=getattr(torch, dtype))]
        out = fns[fn](*args) if fn == "leaves" else fns[fn](*args, TOL)
        for o in out if isinstance(out, tuple) else (out,):
            res.append(np.asarray(o.numpy() if backend == "torch" else o, dtype=np.float64))
    return res


def _same_values(p, q, X):
    """``p`` (blocks) against ``q`` (unrolled) on both backends and both dtypes."""
    for backend in ("numpy", "torch"):
        for dtype, rtol, atol in (("float64", RTOL64, ATOL64), ("float32", RTOL32, ATOL32)):
            for u, v in zip(_outputs(p, X, backend, dtype), _outputs(q, X, backend, dtype)):
                assert u.shape == v.shape
                np.testing.assert_allclose(u, v, rtol=rtol, atol=atol)


def test_a_box_of_2000_constraints_is_a_few_lines(monkeypatch):
    p = _box(1000)
    assert len(p.source.splitlines()) < 60
    assert "rall((cast(X[0:1000], dtype) - 5.0 <= 0.0))" in p.source or \
        "rall((t0 - 5.0 <= 0.0))" in p.source
    q = _unrolled(monkeypatch, lambda: _box(1000))
    assert len(q.source.splitlines()) > 4000  # what it replaces: code per leaf
    _same_values(p, q, _points(1000))


def test_linear_rows_are_one_matrix_product(monkeypatch):
    p = _rows(300)
    assert p.source.count("matvec(K0, cast(X[0:10], dtype))") == 4  # once per function
    assert "K0 = table('f', (300, 10)," in p.source
    assert "assemble(" in p.source and "(0, 0, 1), (0, 300, 1)" in p.source
    _same_values(p, _unrolled(monkeypatch, lambda: _rows(300)), _points(10))


def test_the_matrix_is_exact_to_the_last_bit():
    p = _rows(100)
    K0 = p.lowering.functions("numpy")["K0"]
    # the constants of the unrolled graph: each rational rounded once (Graph._number)
    A = [[complex(lf.expr.coeff(x).evalf(30)).real for x in p.variables]
         for lf in p.lowering.leaves]
    assert K0.dtype == np.float64
    np.testing.assert_array_equal(K0, np.array(A))


def test_mixed_shapes_keep_the_constraints_order(monkeypatch):
    p = _mixed()
    src = p.source
    assert "assemble(" in src and "matvec" not in src
    q = _unrolled(monkeypatch, _mixed)
    assert "assemble(" not in q.source
    assert len(src) < len(q.source) / 3
    _same_values(p, q, _points(p.n))


def test_leaves_agree_with_sympy():
    p = _mixed()
    X = _points(p.n, k=3)
    _, C = p.lowering.functions("numpy")["leaves"](X, P0)
    for j in range(X.shape[1]):
        point = dict(zip(p.variables, X[:, j]))
        ref = [float(lf.expr.evalf(30, subs=point)) for lf in p.lowering.leaves]
        np.testing.assert_allclose(C[:, j], ref, rtol=1e-12, atol=1e-12)


def test_the_public_constraints_output_is_in_order(monkeypatch):
    p, q = _mixed(), _unrolled(monkeypatch, _mixed)
    pop = _points(p.n).T.copy()
    for compile_ in (False,):
        a = p.fitness("constraints", compile=compile_)(pop)
        b = q.fitness("constraints", compile=compile_)(pop)
        assert a.shape == (pop.shape[0], len(p._constraints))
        np.testing.assert_allclose(a, b, rtol=RTOL64, atol=ATOL64)


def test_derivatives_through_blocks(monkeypatch):
    p, q = _mixed(), _unrolled(monkeypatch, _mixed)
    X = _points(p.n, k=4)
    g_ref, j_ref = q.lowering.derivatives("numpy")(X, P0)  # symbolic, unrolled
    g_fw, j_fw = forward_derivatives(p.source)(X, P0)
    np.testing.assert_allclose(g_fw, g_ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(j_fw, j_ref, rtol=1e-12, atol=1e-12)
    grad_ns = compile_source(p.source, gradient_runtime(_rt_torch), "torch-grad")
    fn = autograd_derivatives(p.lowering.functions("torch")["leaves"], grad_ns["leaves"],
                              numpy=True)
    g_ag, j_ag = fn(X, P0)
    np.testing.assert_allclose(g_ag, g_ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(j_ag, j_ref, rtol=1e-12, atol=1e-12)


def test_linear_rows_forward_mode(monkeypatch):
    p, q = _rows(80), _unrolled(monkeypatch, lambda: _rows(80))
    X = _points(10, k=3)
    g_ref, j_ref = q.lowering.derivatives("numpy")(X, P0)
    g_fw, j_fw = forward_derivatives(p.source)(X, P0)
    np.testing.assert_allclose(g_fw, g_ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(j_fw, j_ref, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("m", [10, _leafblocks.MIN_LEAVES - 1])
def test_below_the_threshold_nothing_changes(monkeypatch, m):
    assert _rows(m).source == _unrolled(monkeypatch, lambda: _rows(m)).source


def test_nan_and_inf_reach_the_right_rows(monkeypatch):
    p, q = _box(100), _unrolled(monkeypatch, lambda: _box(100))
    X = _points(100, k=4)
    X[3, 1], X[7, 2], X[0, 3] = np.nan, np.inf, -np.inf
    for u, v in zip(_outputs(p, X, "numpy", "float64"), _outputs(q, X, "numpy", "float64")):
        np.testing.assert_array_equal(np.isnan(u), np.isnan(v))
        np.testing.assert_allclose(u, v, rtol=RTOL64, atol=ATOL64)
