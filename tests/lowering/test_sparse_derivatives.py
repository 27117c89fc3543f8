"""Sparse symbolic derivatives: only the nonzero entries are differentiated and lowered.

Checked: the derivative source of a problem with a bound leaf per variable grows
linearly with the number of variables (lines and derivative calls counted, not time);
the nonzeros equal sympy's derivative of the whole expression, entry by entry (the
dense reference, exactly, on the terms sympy's rules and ours write alike; in value on
the others: the chain rule builds no ``Derivative`` objects); the generated arrays
equal central finite differences; the zero entries cost no source text; the interval
model's Lagrangian gradient and the Hessian program grow with the nonzeros and enclose
the exact gradient.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import sympy as sp

import constropt
from constropt.certify._exclusion import hessian_program
from constropt.lowering import _derivatives, _lower
from constropt.lowering._derivatives import SymbolicDerivative, _chain, _term_derivative
from constropt.lowering._interval_model import IntervalModel


def separable(n: int):
    xs = sp.symbols(f"x0:{n}")
    obj = sp.Add(*[(x - sp.Rational(1, 2)) ** 2 for x in xs])
    cons = [sp.Add(*xs) >= sp.Rational(n, 2) + 1]
    cons += [c for x in xs for c in (x >= -5, x <= 5)]
    return constropt.Problem(obj, cons), xs


def fresh_source(problem) -> str:
    _lower._DERIVATIVE_SOURCES.clear()
    low = _lower.Lowering(problem.objective, problem.lowering.constraints,
                          problem.layout, False)
    return low.derivative_source()


def test_derivative_source_grows_linearly_with_bound_leaves(monkeypatch):
    calls = []
    real_diff = _derivatives.sp.diff

    def counting_diff(*args, **kw):
        calls.append(1)
        return real_diff(*args, **kw)

    monkeypatch.setattr(_derivatives.sp, "diff", counting_diff)
    lines, diffs = {}, {}
    for n in (20, 80):
        p, _ = separable(n)
        calls.clear()
        src = fresh_source(p)
        lines[n], diffs[n] = src.count("\n"), len(calls)
    # 2n + 1 leaves of n variables: a dense Jacobian has (2n + 1) n entries, 16x from
    # n = 20 to 80; the nonzeros (3n of them, the gradient's n) grow 4x.  The margin
    # (5x) leaves room for the fixed lines (signature, docstring) at n = 20.
    assert lines[80] <= 5 * lines[20]
    assert diffs[80] <= 4 * diffs[20]
    assert lines[80] < 2 * 3 * 80 + 50  # about one line per nonconstant nonzero


def test_zero_entries_cost_no_source():
    p, _ = separable(30)
    src = fresh_source(p)
    # every Jacobian entry is a constant (one literal) and the gradient has one
    # nonconstant entry per variable: no generated name for a Jacobian entry
    assert re.findall(r"\bj\d+ = ", src) == []
    assert len(re.findall(r"\bg\d+ = ", src)) == 30
    pts = np.zeros((30, 2))
    g, J = p.lowering.derivatives("numpy")(pts, p.parameter_vector().reshape(-1, 1))
    assert J.shape == (61, 30, 2)
    assert np.count_nonzero(J) == 3 * 30 * 2
    np.testing.assert_array_equal(J[0, :, 0], -np.ones(30))  # 16 - sum(x) <= 0
    np.testing.assert_array_equal(g[:, 0], -np.ones(30))  # 2 (0 - 1/2)


def _dense_reference(expr, syms):
    """Every entry by sympy's diff of the whole expression (the dense route)."""
    d = SymbolicDerivative(syms)
    return [d(expr, s) for s in syms]


EXPRESSIONS = [
    lambda x, y, z: (x - sp.Rational(1, 2)) ** 2 + 3 * y - z / 7 + 2,
    lambda x, y, z: sp.sin(x * y) + sp.exp(z) * x + (y + 3) ** -2 + sp.sqrt(z + 5),
    lambda x, y, z: sp.Float(0.3) * x + (2 * y - 1) ** sp.Rational(3, 2) + x * y * z,
    lambda x, y, z: sp.Abs(x - y) + sp.log(1 + z ** 2) + (x + sp.pi) ** 3,
    lambda x, y, z: sp.floor(x) * y + sp.Max(x, z) + (z - sp.Float(2.5)) ** sp.Float(1.5),
]


@pytest.mark.parametrize("k", range(len(EXPRESSIONS)))
def test_nonzeros_equal_the_dense_derivative(k):
    syms = sp.symbols("x y z")
    expr = EXPRESSIONS[k](*syms)
    dense = _dense_reference(expr, syms)
    got = dict(SymbolicDerivative(syms).nonzeros(expr))
    for i, want in enumerate(dense):
        if want == 0:
            assert i not in got
        else:
            assert sp.srepr(got[i]) == sp.srepr(want), (i, got[i], want)


POLYNOMIALS = [  # every term one variable's integer power of an affine base
    lambda x, y, z: (x - sp.Rational(1, 2)) ** 2 + (y - sp.Rational(1, 2)) ** 2 + z + 4,
    lambda x, y, z: (3 * x + 2) ** 3 + y ** -2 + z ** 4 + (x - 1) ** 2 + (y + 1) ** 2,
    lambda x, y, z: (sp.Float(1.5) * y - sp.Float(0.7)) ** 2 - 5 * z + (z + 1) ** -1,
    lambda x, y, z: x ** 5 + (-y + 3) ** 2 + (z - sp.Float(0.1)) ** 2 + (x + 7) ** -3,
]


@pytest.mark.parametrize("assumptions", [{}, {"real": True}, {"positive": True},
                                         {"integer": True}])
@pytest.mark.parametrize("k", range(len(POLYNOMIALS)))
def test_polynomial_terms_take_the_direct_path_and_equal_the_dense_derivative(k,
                                                                            assumptions):
    syms = sp.symbols("x y z", **assumptions)
    expr = POLYNOMIALS[k](*syms)
    d = SymbolicDerivative(syms)
    assert d._polynomial(expr) is not None  # no dummies, no replacement back
    got = dict(d.nonzeros(expr))
    for i, want in enumerate(_dense_reference(expr, syms)):
        if want == 0:
            assert i not in got
        else:
            assert sp.srepr(got[i]) == sp.srepr(want), (i, got[i], want)


@pytest.mark.parametrize("expr", [
    lambda x, y, z: 3 * (x - 1) ** 2 + y,  # a coefficient times a power: the general route
    lambda x, y, z: (z - sp.pi) ** 2,  # a symbolic constant
    lambda x, y, z: (x + y) ** 2,  # two variables in one base
    lambda x, y, z: x ** sp.Rational(3, 2) + y,  # a fractional power
    lambda x, y, z: sp.sin(x) + y ** 2,
])
def test_other_terms_leave_the_direct_path(expr):
    syms = sp.symbols("x y z")
    assert SymbolicDerivative(syms)._polynomial(expr(*syms)) is None


def test_term_derivative_is_diff():
    s = sp.Dummy("s", real=True)
    t = sp.Symbol("t")
    bases = [s, s - sp.Rational(1, 2), 2 * s, -s + 1, sp.Float(0.3) * s - sp.Float(1.7),
             s - sp.pi, 3 * s + t]
    exps = [2, 3, -1, sp.Rational(1, 2), sp.Rational(-3, 2), sp.Float(1.5), 7]
    terms = [s, 4 * s, sp.Float(-0.5) * s] + [b ** e for b in bases for e in exps]
    for term in terms:
        assert sp.srepr(_term_derivative(term, s)) == sp.srepr(sp.diff(term, s)), term


CHAINED = [  # sums, products, powers and one-argument functions: the chain rule's terms
    lambda s, y: (sp.Float(0.9) - s - (sp.Float(0.49) - s) * sp.exp(-y * (s - 8))) ** 2,
    lambda s, y: sp.sin(s * y) * sp.cos(s) ** 3 + sp.log(1 + s ** 2 + y ** 2) * s,
    lambda s, y: sp.tanh(s - y) * sp.atan(s * y) + sp.sqrt(s ** 2 + 1) / (y ** 2 + 2),
    lambda s, y: sp.exp(sp.exp(s) * y) * (s * y + 3) ** sp.Rational(-3, 2),
    lambda s, y: (s * y) ** sp.Float(2.5) + sp.asinh(s) * sp.sinh(y) + sp.tan(s / 4),
    lambda s, y: sp.exp(-s) * (sp.exp(-s) + s) * sp.exp(-s) ** 2,  # shared subexpressions
    lambda s, y: s ** y + sp.Abs(s - y) * s + sp.Max(s, y) * sp.exp(s),  # sp.diff's parts
]


@pytest.mark.parametrize("k", range(len(CHAINED)))
def test_chain_rule_equals_diff_in_value(k):
    s = sp.Dummy("s", real=True)
    y = sp.Dummy("y", real=True)
    e = CHAINED[k](s, y)
    got = sp.lambdify((s, y), _chain(e, s, {}), "numpy")
    want = sp.lambdify((s, y), sp.diff(e, s), "numpy")
    rng = np.random.default_rng(k)
    S, Y = rng.uniform(0.2, 1.5, 50), rng.uniform(0.2, 1.5, 50)
    # both are float64 evaluations of equal expressions written differently: rounding
    # of order 1e-16 per operation, a few dozen operations; atol where values cross 0
    np.testing.assert_allclose(got(S, Y), want(S, Y), rtol=1e-11, atol=1e-12)


def test_chain_rule_builds_no_derivative_of_its_terms(monkeypatch):
    s, y = sp.Dummy("s", real=True), sp.Dummy("y", real=True)
    e = sp.Add(*[(sp.Float(b) - s - (0.49 - s) * sp.exp(-y * (a - 8))) ** 2
                 for a, b in [(8, 0.49), (10, 0.48), (12, 0.46), (14, 0.44)]])
    want = sp.diff(e, y)

    def no_diff(*args, **kwargs):
        raise AssertionError("sp.diff called")

    monkeypatch.setattr(sp, "diff", no_diff)
    memo: dict = {}
    # the fallback is whatever by_diff is (its default, sp.diff, bound when the module
    # was loaded): pass the failing one, and keep sp.diff itself patched too
    got = sp.Add(*[_term_derivative(t, y, memo, no_diff) for t in e.args])
    pt = {s: 0.6, y: 0.3}
    assert float(got.subs(pt)) == pytest.approx(float(want.subs(pt)), rel=1e-12)
    assert sp.exp(-y * 2) in memo  # every subexpression differentiated once, kept


def test_chain_rule_power_of_a_vanishing_base():
    # d/ds (s y)**(5/2) = 5/2 y (s y)**(3/2): 0 at s = 0, where t * exp * dbase / base
    # left uncombined would be 0/0
    s, y = sp.Dummy("s", real=True), sp.Dummy("y", real=True)
    d = _chain((s * y) ** sp.Rational(5, 2), s, {})
    assert d.subs({s: 0, y: 2}) == 0
    assert sp.simplify(d - sp.Rational(5, 2) * y * (s * y) ** sp.Rational(3, 2)) == 0


def _finite_differences(problem, x, h=1e-6):
    lv = problem.lowering.functions("numpy")["leaves"]
    P = problem.parameter_vector().reshape(-1, 1)
    n = len(x)
    X = np.repeat(x.reshape(-1, 1), 2 * n, axis=1)
    for k in range(n):
        X[k, 2 * k] += h
        X[k, 2 * k + 1] -= h
    f, C = lv(X, P)
    return (f[0::2] - f[1::2]) / (2 * h), (C[:, 0::2] - C[:, 1::2]) / (2 * h)


def test_sparse_derivatives_match_finite_differences():
    x, y, z = sp.symbols("x y z")
    problems = [
        constropt.Problem((x - 1) ** 2 + sp.sin(y) * z, [x + y <= 3, z ** 2 - x >= -4,
                                                         y >= -2, z <= 4],
                          bounds={x: (-3, 3), y: (-3, 3), z: (-3, 3)}),
        constropt.Problem(sp.exp(x / 3) + y ** 4 - z, [sp.Eq(x * y, 1), z - y <= 2,
                                                       x >= 0.1],
                          bounds={x: (0.1, 3), y: (-3, 3), z: (-3, 3)}),
        separable(6)[0],
        constropt.Problem(  # a least-squares fit of exponentials (HS057's form)
            sp.Add(*[(b - x - (sp.Float(0.49) - x) * sp.exp(-y * (a - 8))) ** 2
                     for a, b in [(8, 0.49), (9, 0.48), (10, 0.47), (12, 0.46)]]),
            [sp.Float(0.49) * y - x * y >= 0.09, z * x <= 2],
            bounds={x: (-3, 3), y: (-3, 3), z: (-3, 3)}),
    ]
    rng = np.random.default_rng(3)
    for p in problems:
        n = len(p.variables)
        pts = rng.uniform(-1.5, 1.5, (4, n)) + (0.5 if n == 3 else 0.0)
        deriv = p.lowering.derivatives("numpy")
        P = p.parameter_vector().reshape(-1, 1)
        g, J = deriv(pts.T.copy(), P)
        L = len(p.leaves)
        assert g.shape == (n, 4) and J.shape == (L, n, 4)
        for i, pt in enumerate(pts):
            fg, fJ = _finite_differences(p, pt)
            # central differences with h = 1e-6 on values of order 1-100: error about
            # h**2 * f''' + eps * f / h, below 1e-6 here
            np.testing.assert_allclose(g[:, i], fg, rtol=1e-6, atol=1e-6)
            np.testing.assert_allclose(J[:, :, i], fJ, rtol=1e-6, atol=1e-6)


def test_torch_scatter_matches_numpy():
    torch = pytest.importorskip("torch")
    p, _ = separable(5)
    pts = np.random.default_rng(0).uniform(-1, 1, (5, 3))
    P = p.parameter_vector().reshape(-1, 1)
    g, J = p.lowering.derivatives("numpy")(pts, P)
    gt, Jt = p.lowering.derivatives("torch")(torch.tensor(pts), torch.tensor(P))
    np.testing.assert_array_equal(gt.numpy(), g)
    np.testing.assert_array_equal(Jt.numpy(), J)


def _model(n: int):
    p, _ = separable(n)
    return p, IntervalModel(p.objective, p.leaves, p.layout, gradient=True)


def test_lagrangian_gradient_and_hessian_grow_with_the_nonzeros():
    sizes = {}
    for n in (20, 80):
        p, m = _model(n)
        before = len(m.program.graph.nodes)
        assert hessian_program(m) is not None
        sizes[n] = (before, len(m.program.graph.nodes))
    # dense: (2n + 1) n products in the Lagrangian's gradient and n**2 Hessian entries,
    # 16x from n = 20 to 80; the nonzeros grow 4x (5x: room for the fixed nodes)
    assert sizes[80][0] <= 5 * sizes[20][0]
    assert sizes[80][1] <= 5 * sizes[20][1]


def test_lagrangian_gradient_values():
    p, m = _model(4)
    rng = np.random.default_rng(5)
    x = rng.uniform(-2, 2, 4)
    lam = rng.uniform(0, 3, len(p.leaves))
    lo = x.reshape(-1, 1)
    vals = m.program.forward(lo, lo.copy(), np.concatenate([p.parameter_vector(), lam]),
                             only=list(m.lag_grad))
    xs = p.variables
    lag = p.objective + sum(float(li) * lf.expr for li, lf in zip(lam, p.leaves))
    for k, node in enumerate(m.lag_grad):
        want = float(sp.diff(lag, xs[k]).subs(dict(zip(xs, x))))
        got = vals[node]
        # a point box: the enclosure is a few ulps wide around the exact value
        assert float(got.lo[0]) <= want + 1e-12 and want - 1e-12 <= float(got.hi[0])
        assert float(got.hi[0]) - float(got.lo[0]) < 1e-12
