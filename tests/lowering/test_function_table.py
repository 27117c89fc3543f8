"""The function table (constropt.lowering._functions): one row per sympy function, read by
every backend.  ``erf`` was added as one row and ``atan2`` is one row of two arguments;
each is checked on every backend against sympy/mpmath: point values on NumPy and torch,
derivatives (forward mode, the graph's reverse mode, autograd), interval enclosures,
Arb balls and the problem-file parser.
"""

from __future__ import annotations

import math
import re
import textwrap
from pathlib import Path

import flint
import mpmath as mp
import numpy as np
import pytest
import sympy as sp
import torch

import constropt
from constropt.files import loads_problem, parse_expression
from constropt.files._names import FUNCTIONS as PARSER_NAMES
from constropt.lowering import _rt_numpy, _rt_torch
from constropt.lowering._codegen import compile_source
from constropt.lowering._derivatives import autograd_derivatives, gradient_runtime
from constropt.lowering._forward import forward_derivatives
from constropt.lowering._functions import FUNCTION, FUNCTIONS, NODE_FUNCTIONS, SYMPY_CLASSES
from constropt.lowering._graph import RULES, SUPPORTED
from constropt.lowering._interval_model import IntervalModel
from constropt.lowering._interval_ops import NP, ops
from constropt.problem._rigorous import program_for, working_precision
from constropt.problem._srepr import CLASSES, read_srepr

ROOT = Path(__file__).resolve().parents[2]
x, y = sp.symbols("x y", real=True)
#: The two rows under test, as expressions of x and y.
CASES = {"erf": sp.erf(x) + sp.erf(y / 3), "atan2": sp.atan2(y, x)}
rng = np.random.default_rng(7)
# points: random, plus the edges (0, the origin of atan2, large arguments, -0.0)
PTS = np.concatenate([rng.uniform(-4, 4, (2, 40)),
                      np.array([[0.0, 0.0, -1.0, 6.0, -6.0, 1e-8, -0.0, 3.0],
                                [0.0, 1.0, 0.0, -6.0, 6.0, -1e-8, 0.0, -0.0]])], axis=1)


def _problem(expr):
    return constropt.Problem(expr, [x + y <= 10], variables=[x, y],
                             bounds={x: (-10, 10), y: (-10, 10)})


def _sympy_value(expr, px, py):
    v = complex(expr.subs({x: sp.Float(px, 30), y: sp.Float(py, 30)}).evalf(30))
    return float(v.real) if v.imag == 0 else math.nan


def _mp(expr):
    """An mpmath function of (x, y) at 50 digits (exact float inputs)."""
    f = sp.lambdify((x, y), expr, modules="mpmath")

    def value(a, b):
        with mp.workdps(50):
            return f(mp.mpf(float(a)), mp.mpf(float(b))) * 1  # (rounded at 50 digits)
    return value


@pytest.mark.parametrize("name", CASES)
def test_values_match_sympy_on_numpy_and_torch(name):
    expr = CASES[name]
    p = _problem(expr)
    want = np.array([_sympy_value(expr, a, b) for a, b in PTS.T])
    if name == "atan2":  # sympy: atan2(0, 0) is nan, atan2(-0.0, -1) has no signed zero
        assert math.isnan(want[40])
    with np.errstate(all="ignore"):
        got_np = p.lowering.functions("numpy")["leaves"](PTS, np.zeros((0, 1)))[0]
    # a few ulps of the terms (|terms| <= 2): scipy's erf is not correctly rounded, and
    # the sum cancels at erf(6) + erf(-2)
    np.testing.assert_allclose(got_np, want, rtol=8 * 2.2e-16, atol=16 * 2.2e-16,
                               equal_nan=True)
    fns = p.lowering.functions("torch")
    for dtype, eps in ((torch.float64, 2.2e-16), (torch.float32, 1.2e-7)):
        X = torch.tensor(PTS, dtype=dtype)
        got = fns["leaves"](X, torch.zeros((0, 1), dtype=dtype))[0]
        assert got.dtype == dtype
        # float32: the inputs themselves are rounded first, hence the reference at them
        ref = np.array([_sympy_value(expr, float(a), float(b)) for a, b in X.double().T])
        np.testing.assert_allclose(got.double().numpy(), ref, rtol=8 * eps, atol=16 * eps,
                                   equal_nan=True)


def test_erf_enclosure_stays_in_its_range():
    m = IntervalModel(sp.erf(x), [], _problem(x).layout)
    lo = np.array([[-np.inf, -40.0, 0.0, 5.0], [0.0] * 4])
    hi = np.array([[np.inf, 40.0, 0.0, 30.0], [0.0] * 4])
    iv = m.program.forward(lo, hi, np.zeros(0))[m.f]
    assert (iv.lo >= -1.0).all() and (iv.hi <= 1.0).all() and not iv.nan.any()
    assert iv.lo[0] == -1.0 and iv.hi[0] == 1.0 and iv.lo[2] <= 0.0 <= iv.hi[2]


def test_erf_is_one_function_in_the_generated_code():
    src = _problem(sp.erf(x)).source
    assert "erf(x0)" in src
    assert float(_rt_numpy.erf(np.float64(0.5))) == pytest.approx(math.erf(0.5), rel=1e-15)
    assert float(_rt_torch.erf(torch.tensor(0.5, dtype=torch.float64))) == \
        pytest.approx(math.erf(0.5), rel=1e-15)
    # a constant argument is folded with the NumPy runtime
    assert "erf" not in _problem(x + sp.erf(sp.Rational(1, 2))).source


@pytest.mark.parametrize("name", CASES)
def test_derivatives_match_sympy(name):
    expr = CASES[name]
    p = _problem(expr)
    grads = [sp.diff(expr, s) for s in (x, y)]
    pts = PTS[:, :40]  # off the origin of atan2 and its branch cut
    pts = pts[:, ~((pts[0] < 0) & (np.abs(pts[1]) < 1e-3))]
    want = np.array([[_sympy_value(g, a, b) for a, b in pts.T] for g in grads])
    with np.errstate(all="ignore"):
        fwd, _ = forward_derivatives(p.lowering.source)(pts, np.zeros((0, 1)))
        sym, _ = p.lowering.derivatives("numpy")(pts, np.zeros((0, 1)))
    np.testing.assert_allclose(fwd, want, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(sym, want, rtol=1e-13, atol=1e-15)
    # autograd through the torch runtime (torch differentiates torch.erf, torch.atan2)
    ns = compile_source(p.lowering.source, {k: getattr(_rt_torch, k) for k in dir(_rt_torch)
                                            if not k.startswith("_")}, "t")
    gns = compile_source(p.lowering.source, gradient_runtime(_rt_torch), "tg")
    auto, _ = autograd_derivatives(ns["leaves"], gns["leaves"], numpy=True)(
        pts, np.zeros((0, 1)))
    np.testing.assert_allclose(auto, want, rtol=1e-13, atol=1e-15)


def test_erf_graph_gradient_encloses_the_derivative():
    """The reverse-mode gradient on the graph (mean-value forms of the branch-and-bound)
    evaluates the row's derivative 2/sqrt(pi) exp(-x^2) in interval arithmetic."""
    m = IntervalModel(sp.erf(x) * y, [], _problem(x).layout, gradient=True)
    assert m.grad is not None and m.program.is_smooth(m.f)
    pts = PTS[:, :40]
    vals = m.program.forward(pts.copy(), pts.copy(), np.zeros(0))
    dfx, dfy = _mp(sp.diff(sp.erf(x) * y, x)), _mp(sp.diff(sp.erf(x) * y, y))
    for k, (a, b) in enumerate(pts.T):
        for node, ref in ((m.grad[0], dfx(a, b)), (m.grad[1], dfy(a, b))):
            iv = vals[node]
            assert mp.mpf(float(iv.lo[k])) <= ref <= mp.mpf(float(iv.hi[k]))


def _boxes(n: int, dtype, lib: str):
    a, b = rng.uniform(-5, 5, (2, 2, n))
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    lo[:, :4] = [[0.0, -1e-300, -6.0, 2.0], [0.0, 0.0, -1.0, 0.0]]  # points and edges
    hi[:, :4] = [[0.0, 1e-300, 6.0, 2.0], [0.0, 0.0, 1.0, 0.0]]
    lo, hi = lo.astype(dtype), hi.astype(dtype)
    if lib == "torch":
        return torch.from_numpy(lo), torch.from_numpy(hi)
    return lo, hi


@pytest.mark.parametrize("lib", ["numpy", "torch"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", CASES)
def test_interval_enclosure_contains_sampled_values(name, dtype, lib):
    expr = CASES[name]
    m = IntervalModel(expr, [], _problem(x).layout)
    lo, hi = _boxes(60, dtype, lib)
    P = np.zeros(0, dtype=dtype) if lib == "numpy" else torch.zeros(0, dtype=lo.dtype)
    with np.errstate(all="ignore"):
        iv = m.program.forward(lo, hi, P)[m.f]
    ref = _mp(expr)
    xp = ops(lo)
    elo, ehi, enan = (np.asarray(xp.expand(t, (60,))) for t in iv)
    elo, ehi, enan = elo.astype(np.float64), ehi.astype(np.float64), enan.astype(bool)
    lo64, hi64 = np.asarray(lo, dtype=np.float64), np.asarray(hi, dtype=np.float64)
    for k in range(60):
        for fr in (0.0, 0.3, 0.5, 1.0):
            a = lo64[0, k] + fr * (hi64[0, k] - lo64[0, k])
            b = hi64[1, k] - fr * (hi64[1, k] - lo64[1, k])
            if a == 0 and b == 0 and name == "atan2":
                assert enan[k]  # the origin: NaN, as sympy's nan
                continue
            v = ref(a, b)  # the ends are floats: exact in mpmath at any precision
            assert mp.mpf(float(elo[k])) <= v <= mp.mpf(float(ehi[k])), (k, a, b)
    origin = (lo64[0] <= 0) & (hi64[0] >= 0) & (lo64[1] <= 0) & (hi64[1] >= 0)
    assert not (enan & ~origin).any()  # NaN only where a box may hold atan2's origin
    assert name == "atan2" or not enan.any()


@pytest.mark.parametrize("name", CASES)
def test_ball_encloses_the_value(name):
    expr = CASES[name]
    p = _problem(expr)
    prog = program_for(p)
    ref = _mp(expr)
    with working_precision(80), mp.workdps(50):
        for a, b in PTS.T:
            val = prog.run([flint.arb(float(a)), flint.arb(float(b))], [])[0]
            if name == "atan2" and a == 0 and b == 0:
                assert repr(val) == "UNDEF"
                continue
            mid = mp.mpf(val.mid().str(40, radius=False))  # the exact midpoint, to 1e-40
            rad = mp.mpf(val.rad().str(5, radius=False))
            assert rad < 1e-15
            assert abs(mid - ref(a, b)) <= rad * (1 + 1e-4) + mp.mpf(10) ** -38


def test_a_problem_file_with_erf_parses_and_solves():
    spec = loads_problem('objective = "(erf(x) - 1/2)**2 + y**2"\n'
                         'constraints = ["erf(y) + x >= 0.25"]\n'
                         '[variables]\nx = [-3, 3]\ny = [-3, 3]\n')
    X, Y = spec.variables
    assert spec.objective == (sp.erf(X) - sp.Rational(1, 2)) ** 2 + Y**2
    res = constropt.solve(spec.to_problem(), seed=0, device="cpu", max_generations=80)
    assert res.success and res.feasible
    # the optimum: erf(x) = 1/2 (x = 0.4769...), y = 0 (the constraint holds: x >= 0.25)
    assert res.x[X] == pytest.approx(float(sp.erfinv(sp.Rational(1, 2))), abs=1e-5)
    assert abs(res.x[Y]) < 1e-5
    assert parse_expression("erf(x)", {"x": X}) == sp.erf(X)


def test_erf_checkpoints_read_back():
    e = sp.erf(x) + sp.atan2(y, x)
    assert read_srepr(sp.srepr(e)) == e


# -- the table is the one list --------------------------------------------------------
def test_every_row_reaches_every_backend():
    for f in NODE_FUNCTIONS:
        for rt in (_rt_numpy, _rt_torch):
            assert callable(getattr(rt, f.runtime_name)), (f.name, rt.__name__)
        if f.numpy is not None:
            assert getattr(NP, f.name) is f.numpy
        assert f.interval is not None, f.name
    for cls in SYMPY_CLASSES:
        assert cls in RULES and cls.__name__ in SUPPORTED
        assert cls.__name__ in CLASSES  # checkpoints may hold it
    parser = {n.name for f in FUNCTIONS for n in f.parse} | {"where"}
    assert set(PARSER_NAMES) == parser
    assert FUNCTION["erf"].sympy == (sp.erf,)


def test_the_documented_lists_name_every_parser_function():
    import constropt.files

    doc = constropt.files.__doc__
    cli = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"`([A-Za-z0-9]+)", cli[cli.index("functions, by bare name"):
                                                   cli.index("where(cond")]))
    for name in PARSER_NAMES:
        assert f"``{name}" in doc, name
        if name not in ("Abs", "Min", "Max", "Heaviside", "ceiling", "where"):
            assert name in listed or name in cli.split("functions, by bare name")[1][:400], name


def test_the_erf_row_quoted_in_the_docs_is_the_source():
    doc = (ROOT / "docs" / "how-it-works.md").read_text(encoding="utf-8")
    quote = doc.split("added as this one row:")[1].split("```python\n")[1].split("```")[0]
    source = (ROOT / "src" / "constropt" / "lowering" / "_functions.py").read_text(
        encoding="utf-8")
    assert quote.strip() and textwrap.indent(quote, "    ") in source
