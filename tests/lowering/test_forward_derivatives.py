"""NumPy forward-mode derivatives (the torch-free route where sympy cannot differentiate)
agree with sympy's symbolic derivatives and with torch autograd."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import sympy as sp

import constropt
from constropt import benchmarks
from constropt.lowering._forward import forward_derivatives

x, y, z = sp.symbols("x y z")
a = sp.IndexedBase("a", shape=(4,))
i = sp.Idx("i", 4)


def _points(p, k, seed=0):
    """``k`` points of the problem's box (infinite sides replaced by +-3), shape (n, k)."""
    rng = np.random.default_rng(seed)
    lo = np.where(np.isfinite(p.lower), p.lower, -3.0)
    hi = np.where(np.isfinite(p.upper), p.upper, 3.0)
    return (lo + rng.uniform(0.05, 0.95, (k, p.n)) * (hi - lo)).T.copy()


def _autograd(p):
    from constropt.lowering import _rt_torch
    from constropt.lowering._codegen import compile_source
    from constropt.lowering._derivatives import autograd_derivatives, gradient_runtime

    lw = p.lowering
    grad_ns = compile_source(lw.source, gradient_runtime(_rt_torch), "torch-grad-test")
    return autograd_derivatives(lw.functions("torch")["leaves"], grad_ns["leaves"], True)


def _close(u, v, what):
    """Same NaN pattern; elsewhere equal to 1e-8 relative to the row's magnitude (the
    routes round in different orders: forward mode multiplies the chain rule out, the
    symbolic route evaluates sympy's simplified derivative)."""
    assert u.shape == v.shape, what
    assert np.array_equal(np.isnan(u), np.isnan(v)), what
    ok = ~np.isnan(u)
    scale = 1.0 + np.max(np.abs(np.where(ok, u, 0.0)), initial=0.0)
    assert np.all(np.abs(u[ok] - v[ok]) <= 1e-8 * scale), (what, np.max(np.abs(u[ok] - v[ok])))


VECTOR = [
    (sp.Sum(a[i] ** 2, (i, 0, 3)) + x**2,
     [sp.Sum(sp.sin(a[i]) * i, (i, 0, 3)) <= 1, a[0] + x >= 0.5,
      sp.Product(1 + a[i] ** 2, (i, 0, 3)) <= 50], {a: (-2, 2), x: (-3, 3)}),
    (sp.Sum(sp.exp(a[i] / 4) * sp.Abs(a[i]), (i, 0, 3)),
     [sp.Sum(a[i], (i, 0, 3)) >= 1, sp.Max(a[0], a[1]) <= 1.5], {a: (-2, 2)}),
]


@pytest.mark.parametrize("case", range(len(VECTOR)))
def test_forward_matches_autograd_on_vector_variables(case):
    f, cons, bounds = VECTOR[case]
    p = constropt.Problem(f, cons, bounds=bounds)
    assert p.lowering.derivative_method == "autograd"  # sympy is not used here
    X, P = _points(p, 9), p.parameter_vector().reshape(-1, 1)
    g1, j1 = p.lowering.derivatives("numpy")(X, P)
    g2, j2 = _autograd(p)(X, P)
    _close(g1, g2, "grad")
    _close(j1, j2, "jac")


def test_forward_on_blog_example_1():
    g = sp.IndexedBase("g", shape=(1000,), integer=True)
    k = sp.Idx("k", 1000)
    p = constropt.Problem(sp.Sum(g[k] * k, (k, 0, 999)), bounds={g: (1, 24)}, maximize=True)
    grad, jac = p.lowering.derivatives("numpy")(_points(p, 2), np.zeros((0, 1)))
    # maximize: the generated objective is the user's sum k * g[k]
    assert grad.shape == (1000, 2) and jac.shape == (0, 1000, 2)
    assert np.allclose(np.abs(grad), np.arange(1000.0)[:, None], atol=0)


@pytest.mark.slow
def test_forward_matches_symbolic_and_autograd_on_the_collection():
    """Every collection problem (scalar variables: the symbolic route exists), forward
    mode forced: the same derivatives as sympy's and as autograd's."""
    warnings.simplefilter("ignore")
    for bp in benchmarks.collection():
        p = bp.problem()
        X, P = _points(p, 5), p.parameter_vector().reshape(-1, 1)
        with np.errstate(all="ignore"):
            g1, j1 = forward_derivatives(p.lowering.source)(X, P)
            g2, j2 = p.lowering.derivatives("numpy")(X, P)  # symbolic here
        g3, j3 = _autograd(p)(X, P)
        for (u, v), what in (((g1, g2), "grad vs sympy"), ((j1, j2), "jac vs sympy"),
                             ((g1, g3), "grad vs autograd"), ((j1, j3), "jac vs autograd")):
            _close(u, v, (bp.name, what))
