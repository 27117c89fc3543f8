"""Long sums of like terms over scalar variables lower to one vector operation and one
reduction (lowering/_liketerms.py): compact source, the unrolled values up to
reassociation, on NumPy, torch, forward mode and autograd."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
import torch

import constropt
from constropt.benchmarks import get
from constropt.lowering import _liketerms
from constropt.lowering._forward import forward_derivatives
from constropt.lowering._graph import Graph

P0 = np.zeros((0, 1))
TOL = 1e-4
# a reduction sums in another order than the unrolled chain: reassociation only, a few
# ulps of the sum's magnitude (values are O(n * 25) here)
RTOL = 1e-12


def _qp(n, coeffs=None, names="x"):
    x = sp.symbols(f"{names}0:{n}", real=True)
    f = sum((xi - sp.Rational(1, 2)) ** 2 for xi in x)
    c = [sum(x) >= sp.Rational(n, 2) + 1]
    if coeffs is not None:
        c.append(sum(a * xi for a, xi in zip(coeffs, x)) <= 3 * n)
    return constropt.Problem(f, c, variables=x, bounds={xi: (-5, 5) for xi in x})


def _unrolled(monkeypatch, build):
    """The problem built with every sum unrolled (the reference)."""
    with monkeypatch.context() as m:
        m.setattr(_liketerms, "MIN_TERMS", 10**9)
        return build()


def _points(n, k=7, seed=0):
    return np.random.default_rng(seed).uniform(-5, 5, (n, k))


def _same_values(p, q, X):
    for fn in ("fitness", "report", "leaves", "death"):
        args = (X, P0) if fn == "leaves" else (X, P0, TOL)
        a = p.lowering.functions("numpy")[fn](*args)
        b = q.lowering.functions("numpy")[fn](*args)
        a = a if isinstance(a, tuple) else (a,)
        b = b if isinstance(b, tuple) else (b,)
        for u, v in zip(a, b):
            np.testing.assert_allclose(u, v, rtol=RTOL, atol=1e-9)  # atol: values near 0
        t = p.lowering.functions("torch")[fn](*(torch.as_tensor(z) for z in args[:2]),
                                               *args[2:])
        t = t if isinstance(t, tuple) else (t,)
        for u, v in zip(t, b):
            np.testing.assert_allclose(u.numpy(), v, rtol=RTOL, atol=1e-9)


def test_a_separable_qp_of_1000_variables_is_a_few_lines(monkeypatch):
    p = _qp(1000)
    assert len(p.source.splitlines()) < 60
    assert "rsum(powi(cast(X[0:1000], dtype) - 0.5, 2))" in p.source
    assert "bsum(X[0:1000], dtype)" in p.source
    q = _unrolled(monkeypatch, lambda: _qp(1000))
    assert len(q.source.splitlines()) > 3000  # what it replaces: code per variable
    _same_values(p, q, _points(1000))


def test_different_coefficients_become_one_constant_vector(monkeypatch):
    coeffs = [k % 3 + 1 for k in range(200)]
    p = _qp(200, coeffs)
    assert p.source.count("vconst((1.0, 2.0, 3.0, 1.0,") == 4  # once per function
    _same_values(p, _unrolled(monkeypatch, lambda: _qp(200, coeffs)), _points(200))


def test_rows_that_are_not_a_progression_are_gathered(monkeypatch):
    def build():
        x = sp.symbols("x0:80", real=True)
        y = sp.symbols("y0:80", real=True)
        order = [v for pair in zip(x, y) for v in pair]  # x, y interleaved: x at 0, 2, 4...
        keep = x[:40] + x[41:]  # row 82 missing: not an arithmetic progression
        f = sum(sp.exp(xi / 10) for xi in keep) + sum(yi ** 2 for yi in y)
        return constropt.Problem(f, [sum(2 * yi for yi in y) <= 5], variables=order,
                                 bounds={v: (-3, 3) for v in order})
    p = build()
    assert "X[[0, 2, 4," in p.source and "X[1:160:2]" in p.source
    _same_values(p, _unrolled(monkeypatch, build), _points(160))


def test_parameters_and_odd_terms_stay_in_place(monkeypatch):
    def build():
        x = sp.symbols("x0:70", real=True)
        a = sp.Symbol("a")
        f = sum(a * xi ** 2 + sp.sin(xi) for xi in x) + x[0] * x[1] + sp.cos(x[2]) ** 3
        return constropt.Problem(f, variables=x, parameters={a: 2.0},
                                 bounds={xi: (-2, 2) for xi in x})
    p, q = build(), _unrolled(monkeypatch, build)
    X = _points(70)
    P = np.array([[2.0]])
    a = p.lowering.functions("numpy")["report"](X, P, TOL)[0]
    b = q.lowering.functions("numpy")["report"](X, P, TOL)[0]
    np.testing.assert_allclose(a, b, rtol=RTOL)
    assert "rsum(p0 * (t0 * t0))" in p.source and "rsum(sin(t0))" in p.source
    assert "x0 * x1" in p.source


def test_below_the_threshold_the_code_is_unrolled_as_before(monkeypatch):
    n = _liketerms.MIN_TERMS - 1
    assert _qp(n).source == _unrolled(monkeypatch, lambda: _qp(n)).source


def test_no_collection_problem_reaches_the_threshold():
    """The collection's longest group of like terms (G02: 20 terms of cos(x)**4) is far
    below MIN_TERMS, so its generated code, and its solves, are those of the unrolled
    lowering."""
    p = get("G02").problem()
    assert "rsum(" not in p.source and "vconst(" not in p.source


def test_forward_mode_and_autograd_read_the_vectorized_code():
    coeffs = [k % 4 - 1.5 for k in range(100)]
    p = _qp(100, coeffs)
    X = _points(100, 3)
    sym = p.lowering.derivatives("numpy")(X, P0)  # sympy's, from the unrolled graph
    fwd = forward_derivatives(p.source)(X, P0)
    for u, v in zip(fwd, sym):
        np.testing.assert_allclose(u, v, rtol=1e-12, atol=1e-12)
    from constropt.lowering import _rt_torch
    from constropt.lowering._codegen import compile_source
    from constropt.lowering._derivatives import autograd_derivatives, gradient_runtime

    grad_ns = compile_source(p.source, gradient_runtime(_rt_torch), "torch-grad-test")
    auto = autograd_derivatives(p.lowering.functions("torch")["leaves"], grad_ns["leaves"],
                                True)(X, P0)
    for u, v in zip(auto, sym):
        np.testing.assert_allclose(u, v, rtol=1e-12, atol=1e-12)


def test_graphs_without_like_terms_stay_unrolled():
    """The interval and derivative code build graphs with ``like_terms`` unset."""
    x = sp.symbols("x0:100", real=True)
    p = _qp(100)
    g = Graph(p.layout)
    g.lower(sum(xi ** 2 for xi in x))
    assert not any(node[0] in ("sum", "bsum", "cvec", "slice") for node in g.nodes)
    assert sum(node[0] == "powi" for node in g.nodes) == 100


@pytest.mark.parametrize("dtype", [np.int8, np.float32])
def test_a_sum_of_genes_reads_storage(dtype):
    """The blog's example 1 with 1,000 plain symbols: one ``bsum`` straight from the
    stored genes, as ``Sum(x[i])`` over an IndexedBase."""
    x = sp.symbols("g0:1000", integer=True)
    p = constropt.Problem(sum(x), variables=x, bounds={xi: (1, 24) for xi in x},
                          maximize=True)
    assert "bsum(X[0:1000], dtype)" in p.source
    X = np.random.default_rng(1).integers(1, 25, (1000, 50)).astype(dtype)
    f, _ = p.lowering.functions("numpy")["fitness"](X, np.zeros((0, 1), np.float32), TOL)
    np.testing.assert_array_equal(f, -X.astype(np.int64).sum(0))  # integers: exact


def test_the_public_fitness_reads_the_vectorized_code(monkeypatch):
    """``Problem.fitness`` hoists the literals of NumPy code (the constant vector's too)
    and runs torch eager: the same values as the unrolled code."""
    coeffs = [k % 3 + 1 for k in range(120)]
    p, q = _qp(120, coeffs), _unrolled(monkeypatch, lambda: _qp(120, coeffs))
    pop = _points(120, 40).T.copy()  # rows: (S, n)
    for kind in ("death", "penalty"):
        want = q.fitness(kind, compile=False)(pop)
        np.testing.assert_allclose(p.fitness(kind, compile=False)(pop), want, rtol=RTOL)
        np.testing.assert_allclose(p.fitness(kind)(pop), want, rtol=RTOL)
        got = p.fitness(kind, compile=False)(torch.as_tensor(pop))
        np.testing.assert_allclose(got.numpy(), want, rtol=RTOL)
