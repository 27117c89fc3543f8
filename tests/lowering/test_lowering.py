"""Lowering: every construct, exact and NaN-safe, on torch and NumPy, against sympy.

The reference is sympy's own evaluation, node by node (``node.func(*values)`` on
30-digit Floats), with the lowering's semantics for what sympy leaves undefined: a
result that is ``nan``, ``zoo``, complex or not a number at all (``AccumBounds``), an
exception (``Mod(p, 0)``, a comparison with a complex number), and every node above
such a value, is NaN; only the selected branch of a ``Piecewise`` is evaluated
(``tests/_reference.py``; the table of constructs is ``tests/_constructs.py``).
"""

from __future__ import annotations

import traceback

import numpy as np
import pytest
import sympy as sp
import torch

import constropt
from _constructs import BOX, CASES, POINTS, XYZ
from _reference import assert_matches, sympy_value
from constropt import UnsupportedExpressionError

x, y, z = XYZ


def both_backends(problem, pts, parameters=None):
    """``fun`` from the NumPy and the torch (float64) evaluation of ``pts`` (S, n)."""
    ev_np = problem.evaluate(pts, parameters=parameters)
    ev_t = problem.evaluate(torch.tensor(pts, dtype=torch.float64), parameters=parameters)
    return ev_np, ev_t


@pytest.mark.parametrize("name", list(CASES))
def test_construct_matches_sympy(name):
    expr = CASES[name]
    p = constropt.Problem(expr, variables=XYZ, bounds=BOX)
    want = [sympy_value(expr, dict(zip(XYZ, pt, strict=True))) for pt in POINTS]
    ev_np, ev_t = both_backends(p, POINTS)
    assert_matches(ev_np.fun, want, what=f"{name} numpy")
    assert_matches(ev_t.fun.numpy(), want, what=f"{name} torch")


@pytest.mark.parametrize("name", ["piecewise", "min_many", "composite", "mod_symbolic"])
def test_construct_in_constraints(name):
    """The same constructs lowered as constraint leaves (violation of ``c <= 0.5``)."""
    expr = CASES[name]
    p = constropt.Problem(x * 0 + y * 0 + z * 0, [expr <= 0.5], variables=XYZ, bounds=BOX)
    want = np.array([sympy_value(expr - 0.5, dict(zip(XYZ, pt, strict=True))) for pt in POINTS])
    want_v = np.where(np.isnan(want), np.inf, np.maximum(want, 0.0))
    ev_np, ev_t = both_backends(p, POINTS)
    np.testing.assert_allclose(ev_np.violation[:, 0], want_v, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(ev_t.violation[:, 0].numpy(), want_v, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("expr", [sp.log(x), 1 / x, sp.sqrt(x - 1), sp.atan2(x, y),
                                  x**-1, sp.Mod(y, x), x ** sp.Rational(-1, 2), sp.log(y - 1)])
def test_undefined_values_are_nan(expr):
    """log(0), 1/0, sqrt(-1), atan2(0, 0), 0**-1, Mod(y, 0), ... are NaN at (0, 0)."""
    p = constropt.Problem(expr, variables=(x, y), bounds={x: (-1, 1), y: (-1, 1)})
    ev_np, ev_t = both_backends(p, np.zeros((1, 2)))
    assert np.isnan(ev_np.fun[0]) and torch.isnan(ev_t.fun[0])


def test_dead_branch_never_poisons_live_branch():
    """A NaN-producing dead branch gives exactly the live branch alone."""
    pw = sp.Piecewise((sp.log(x) * sp.sqrt(x), x > 0), (x**2 + sp.acos(y), True))
    live = x**2 + sp.acos(y)
    pts = np.array([[-3.0, 0.25], [-1e-300, 0.5], [0.0, -1.0], [-2.0, 1.0]])
    box = {x: (-5, 5), y: (-1, 1)}
    a = constropt.Problem(pw, variables=(x, y), bounds=box)
    b = constropt.Problem(live, variables=(x, y), bounds=box)
    for ev_a, ev_b in zip(both_backends(a, pts), both_backends(b, pts), strict=True):
        np.testing.assert_array_equal(np.asarray(ev_a.fun), np.asarray(ev_b.fun))
    assert np.isfinite(a.evaluate(pts).fun).all()


def test_piecewise_without_matching_branch_is_nan_not_zero():
    p = constropt.Problem(sp.Piecewise((x, x > 1), (-x, x < -1)), variables=(x,),
                          bounds={x: (-5, 5)})
    ev_np, ev_t = both_backends(p, np.array([[0.0], [2.0], [-2.0]]))
    assert np.isnan(ev_np.fun[0]) and ev_np.fun[1] == 2 and ev_np.fun[2] == 2
    assert torch.isnan(ev_t.fun[0])


# -- constraints -----------------------------------------------------------------------
def test_strict_inequalities_at_their_boundary_are_infeasible():
    p = constropt.Problem(x + y + z, [z < 0, y > 3, x <= 1], bounds=BOX)
    pts = np.array([[1.0, 3.5, 0.0], [1.0, 3.0, -1.0], [1.0, 3.5, -1e-300], [1.0 + 1e-12, 4, -1]])
    for ev in both_backends(p, pts):
        feas = np.asarray(ev.feasible)
        V = np.asarray(ev.violation)
        assert feas.tolist() == [False, False, True, False]
        assert V[0, 0] > 0 and V[1, 1] > 0 and V[3, 2] > 0
        assert (V[2] == 0).all()


def test_boolean_and_equality_constraints():
    cons = [sp.Or(x < -1, x > 1), sp.Not(y > 2), sp.And(z >= 0, z <= 1), sp.Eq(x + y, 2)]
    p = constropt.Problem(x**2, cons, bounds=BOX, eq_tol=1e-6)
    pts = np.array([[0.0, 2.0, 0.5],     # Or fails
                    [1.5, 0.5, 0.5],     # all hold
                    [-1.5, 3.5, 0.5],    # Not fails
                    [3.0, -1.0, 1.5],    # And fails
                    [1.5, 0.5 + 1e-3, 0.5],  # Eq fails
                    [1.5, 0.5 + 1e-7, 1.0]])  # Eq within eq_tol
    for ev in both_backends(p, pts):
        assert np.asarray(ev.feasible).tolist() == [False, True, False, False, False, True]
        V = np.asarray(ev.violation)
        np.testing.assert_allclose(V[0, 0], 1.0)
        np.testing.assert_allclose(V[3, 2], 0.5)
        np.testing.assert_allclose(V[4, 3], 1e-3, rtol=1e-6)


def test_nan_constraint_is_violated():
    p = constropt.Problem(x, [sp.log(x) <= 1, sp.Eq(sp.sqrt(x), 1)], bounds={x: (-2, 2)})
    for ev in both_backends(p, np.array([[-1.0], [1.0]])):
        V = np.asarray(ev.violation)
        assert np.isinf(V[0]).all() and (V[1] == 0).all()


# -- shared subexpressions and readable source --------------------------------------------
def _functions(source: str) -> dict:
    out, name = {}, None
    for line in source.splitlines():
        if line.startswith("def "):
            name = line[4:line.index("(")]
            out[name] = []
        elif name:
            out[name].append(line)
    return {k: "\n".join(v) for k, v in out.items()}


def test_blog_example_2_computes_shared_subexpressions_once():
    f = x**2 + 2 * y**2 + 3 * z**2 + 4 * x * y - 5 * y * z
    cons = [x >= 1, y > 3, y <= 7, z < 0, x + y + z >= 3, x**2 + z**2 <= 10]
    p = constropt.Problem(f, cons, bounds={x: (1, 10), z: (-10, 0)})
    funcs = _functions(p.source)
    assert set(funcs) == {"fitness", "death", "report", "leaves"}
    for name, body in funcs.items():
        for sub in ("x0 * x0", "x2 * x2"):  # x**2 and z**2 (variables are named by row)
            assert body.count(sub) == 1, f"{sub} computed {body.count(sub)} times in {name}"
        assert "x1 * x1" in body
    pts = np.array([[1.5, 3.5, -0.5], [1.0, 3.0, 0.0]])
    want = [float(f.subs(dict(zip(XYZ, pt, strict=True)))) for pt in pts]
    for ev in both_backends(p, pts):
        np.testing.assert_allclose(np.asarray(ev.fun), want)
        assert np.asarray(ev.feasible).tolist() == [True, False]


def test_source_is_backend_independent_python():
    p = constropt.Problem(sp.Piecewise((sp.sqrt(x), x > 0), (y, True)), [x + y <= 3],
                          bounds={x: (-5, 5), y: (-5, 5)})
    assert "torch" not in p.source.replace("constropt.lowering._rt_torch", "")
    assert "np." not in p.source
    compile(p.source, "<check>", "exec")
    assert all(len(line) <= 100 for line in p.source.splitlines())


def test_generated_code_shows_in_tracebacks():
    p = constropt.Problem(x + y + z, bounds=BOX)
    fitness = p.lowering.functions("numpy")["fitness"]
    with pytest.raises(IndexError) as info:
        fitness(np.zeros((2, 4)), np.zeros((0, 1)), 1e-4)  # no row for z
    frames = traceback.extract_tb(info.value.__traceback__)
    gen = [fr for fr in frames if fr.filename.startswith("<constropt-generated")]
    assert gen and gen[-1].line == "x2 = cast(X[2], dtype)  # z"


def test_symbol_names_never_clash_with_generated_names():
    names = sp.symbols("t0 f cv v0 c0 X P dtype where lambda sqrt out t1")
    expr = sum((k + 1) * s**2 for k, s in enumerate(names)) + names[0] * names[-1]
    p = constropt.Problem(expr, [names[1] + names[2] <= 1],
                          bounds={s: (-2, 2) for s in names})
    pts = np.random.default_rng(3).uniform(-2, 2, size=(5, len(names)))
    order = p.variables
    want = [float(expr.subs(dict(zip(order, pt, strict=True)))) for pt in pts]
    for ev in both_backends(p, pts):
        np.testing.assert_allclose(np.asarray(ev.fun), want)


# -- backends, dtypes, parameters -------------------------------------------------------
def test_float32_int8_storage_and_backends_agree():
    expr = sp.sqrt(x**2 + y**2) + sp.Max(x, y) * sp.exp(-z / 4) + sp.Piecewise((1, x > y),
                                                                              (0.5, True))
    p = constropt.Problem(expr, [x + y <= 4], bounds=BOX)
    X = np.random.default_rng(0).integers(-5, 6, size=(3, 200)).astype(np.int8)
    P0, tol = np.zeros((0, 1)), 1e-4
    ref = p.lowering.functions("numpy")["report"](X.astype(np.float64), P0, tol)[0]
    fns = p.lowering.functions("torch")
    # f is at most ~20 in magnitude here and crosses zero (values near -0.02 occur), so float32
    # gets an atol of ~20 float32 ulps of the largest value beside its rtol; float64 agrees
    # to rounding (a different evaluation order may differ by a few ulps near zero).
    for dtype, rtol, atol in ((torch.float64, 1e-12, 1e-13), (torch.float32, 1e-5, 2e-5)):
        P = torch.zeros((0, 1), dtype=dtype)
        f, V = fns["report"](torch.from_numpy(X), P, torch.tensor(tol, dtype=dtype))
        assert f.dtype == dtype and V.dtype == dtype
        np.testing.assert_allclose(f.numpy(), ref, rtol=rtol, atol=atol)
    f_np = p.lowering.functions("numpy")["report"](X, P0, tol)[0]
    np.testing.assert_allclose(f_np, ref, rtol=1e-12)


def test_parameters_are_inputs_not_code():
    a, b = sp.symbols("a b")
    expr = a * x**2 + sp.Piecewise((b, x > 0), (-b, True))
    p2 = constropt.Problem(expr, [x <= a], parameters={a: 2.0, b: 1.0}, bounds={x: (-3, 3)})
    p5 = constropt.Problem(expr, [x <= a], parameters={a: 5.0, b: -1.0}, bounds={x: (-3, 3)})
    assert p2.source == p5.source
    assert "P[0]" in p2.source and "2.0 *" not in p2.source
    pts = np.array([[-1.0], [0.5], [2.5]])
    for ev in both_backends(p2, pts, parameters={a: 3.0}):
        np.testing.assert_allclose(np.asarray(ev.fun), [3 - 1, 0.75 + 1, 18.75 + 1])
        assert np.asarray(ev.feasible).tolist() == [True, True, True]
    ev = p2.evaluate(pts)
    np.testing.assert_allclose(ev.fun, [2 - 1, 0.5 + 1, 12.5 + 1])
    assert ev.feasible.tolist() == [True, True, False]


# -- derivatives --------------------------------------------------------------------------
def _finite_differences(leaves, X, P, h=1e-6):
    n = X.shape[0]
    f0, C0 = leaves(X, P)
    g = np.zeros((n,) + X.shape[1:])
    J = np.zeros((C0.shape[0], n) + X.shape[1:])
    for k in range(n):
        e = np.zeros((n, 1))
        e[k] = h
        fp, Cp = leaves(X + e, P)
        fm, Cm = leaves(X - e, P)
        g[k] = (fp - fm) / (2 * h)
        J[:, k] = (Cp - Cm) / (2 * h)
    return g, J


DERIV_CASES = [
    x**2 * sp.sin(y) + sp.exp(z) / (1 + x**2),
    sp.Abs(x - y) + sp.Max(x, y, z) + sp.Min(x, 1) + sp.sqrt(x**2 + y**2 + 1),
    sp.floor(x) * y + sp.ceiling(y) * z + sp.frac(z) * x + sp.Mod(x, 1.5) * y,
    sp.Heaviside(y) * x + sp.sign(x) * z**2 + sp.atan2(y, x),
    sp.Piecewise((sp.log(x + 5), x > 0), (x**3, y > 0), (sp.cosh(y), True)),
    (x + 6) ** (y / 3) + sp.log(z + 6, 3) + sp.atan(x * y * z),
]


@pytest.mark.parametrize("k", range(len(DERIV_CASES)))
def test_symbolic_derivatives_match_finite_differences(k):
    expr = DERIV_CASES[k]
    p = constropt.Problem(expr, [x * y + z**2 <= 3, sp.Eq(sp.Mod(x, 2) + y, 1)], bounds=BOX)
    assert p.lowering.derivative_method == "symbolic"
    X = np.random.default_rng(k).uniform(-3, 3, size=(3, 16))
    P = np.zeros((0, 1))
    with np.errstate(all="ignore"):
        g, J = p.lowering.derivatives("numpy")(X, P)
        g_fd, J_fd = _finite_differences(p.lowering.functions("numpy")["leaves"], X, P)
    assert g.shape == (3, 16) and J.shape == (2, 3, 16)
    np.testing.assert_allclose(g, g_fd, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(J, J_fd, rtol=1e-5, atol=1e-5)
    gt, Jt = p.lowering.derivatives("torch")(torch.tensor(X), torch.zeros((0, 1),
                                                                          dtype=torch.float64))
    np.testing.assert_allclose(gt.numpy(), g, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(Jt.numpy(), J, rtol=1e-12, atol=1e-12)


# -- unsupported constructs ---------------------------------------------------------------
@pytest.mark.parametrize("expr, name", [
    (sp.Function("g")(x), "g"),
    (sp.Integral(x**2, x), "Integral"),
    (sp.Derivative(sp.Function("h")(x), x), "Derivative"),
    (sp.zeta(x), "zeta"),
    (sp.gamma(x), "gamma"),
    (sp.erfc(x), "erfc"),  # erf is a row of the function table, erfc is not
])
def test_unsupported_constructs_raise_naming_the_node(expr, name):
    with pytest.raises(UnsupportedExpressionError, match=name):
        constropt.Problem(expr + x, variables=(x,), bounds={x: (0, 1)})
    with pytest.raises(UnsupportedExpressionError, match=name):
        constropt.Problem(x, [expr <= 1], variables=(x,), bounds={x: (0, 1)})


def test_unsupported_error_lists_what_is_supported():
    with pytest.raises(UnsupportedExpressionError, match="AppliedUndef.*supported: arithmetic"):
        constropt.Problem(sp.Function("g")(x), variables=(x,), bounds={x: (0, 1)})


@pytest.mark.compile
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # torch internals, on import
def test_torch_compile_matches_eager():
    f = x**2 + 2 * y**2 + 3 * z**2 + 4 * x * y - 5 * y * z + sp.Piecewise((sp.log(x), x > 0),
                                                                          (0.5, True))
    p = constropt.Problem(f, [x + y + z >= 3, x**2 + z**2 <= 10, z < 0], bounds=BOX)
    fitness = p.lowering.functions("torch")["fitness"]
    X = torch.tensor(np.random.default_rng(0).uniform(-5, 5, size=(3, 64)))
    P, tol = torch.zeros((0, 1), dtype=torch.float64), torch.tensor(1e-4, dtype=torch.float64)
    eager = fitness(X, P, tol)
    compiled = torch.compile(fitness, dynamic=True)(X, P, tol)
    for a, b in zip(eager, compiled, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)
