"""Interval backend: every inclusion function encloses the exact value.

The reference is the graph's point semantics evaluated in mpmath at 50 digits (exact
float inputs, real arithmetic, NaN where the point runtime gives NaN); boxes are drawn
by hypothesis, with endpoints at domain edges (0, +-1, +-pi/2, pi) and straddling them.
"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath as mp
import numpy as np
import pytest
import sympy as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from constropt.lowering._graph import Block, Graph, Layout
from constropt.lowering._interval import IntervalProgram

mp.mp.dps = 50
NAN = mp.mpf("nan")
X, Y, Z = sp.symbols("x y z", real=True)
LAYOUT = Layout((Block(X, 0, ()), Block(Y, 1, ()), Block(Z, 2, ())))


def _isnan(v) -> bool:
    return isinstance(v, mp.mpf) and mp.isnan(v)


def _dom(fn, ok):
    def f(a):
        return NAN if _isnan(a) or not ok(a) else fn(a)
    return f


def _sign(a):
    return NAN if _isnan(a) else mp.mpf(mp.sign(a))


_FN = {
    "exp": mp.exp, "sin": mp.sin, "cos": mp.cos, "tan": mp.tan, "atan": mp.atan,
    "sinh": mp.sinh, "cosh": mp.cosh, "tanh": mp.tanh, "asinh": mp.asinh, "abs": abs,
    "floor": _dom(mp.floor, lambda a: True), "ceil": _dom(mp.ceil, lambda a: True),
    "sign": _sign,
    "asin": _dom(mp.asin, lambda a: -1 <= a <= 1), "acos": _dom(mp.acos, lambda a: -1 <= a <= 1),
    "acosh": _dom(mp.acosh, lambda a: a >= 1),
    "atanh": _dom(lambda a: mp.inf if a == 1 else (-mp.inf if a == -1 else mp.atanh(a)),
                  lambda a: -1 <= a <= 1),
    "log": _dom(mp.log, lambda a: a > 0), "sqrt": _dom(mp.sqrt, lambda a: a >= 0),
    "rsqrt": _dom(lambda a: 1 / mp.sqrt(a), lambda a: a > 0),
}


def _pow(a, b):
    if _isnan(a) or _isnan(b):
        return NAN if not (a == 1 and b == b) else mp.mpf(1)
    if a > 0 or (a == 0 and b >= 0) or (a < 0 and b == mp.floor(b)):
        if a == 0:
            return mp.mpf(1) if b == 0 else mp.mpf(0)
        return mp.re(mp.power(a, b))
    return NAN


def _cmp(op, a, b):
    if _isnan(a) or _isnan(b):
        return op == "!="
    return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b, "==": a == b,
            "!=": a != b}[op]


def _fraction(v) -> Fraction:
    v = mp.mpf(v)
    man, exp = v.man_exp  # mpmath's mantissa is unsigned
    return (-1 if v < 0 else 1) * Fraction(man) * Fraction(2) ** exp


def reference(graph: Graph, roots, point):
    """Values of ``roots`` at ``point`` (a sequence of exact floats, one per variable)."""
    v: dict = {}
    order = IntervalProgram(graph, roots).order
    for n in order:
        key = graph.nodes[n]
        op = key[0]
        a = [v[k] for k in graph.operands(key)]
        if op == "const":
            r = mp.mpf(key[1])
        elif op == "nan":
            r = NAN
        elif op in ("true", "false"):
            r = op == "true"
        elif op == "var":
            r = mp.mpf(float(point[key[1]]))
        elif op == "add":
            r = mp.fsum(a)
        elif op == "mul":
            r = mp.fprod(a)
        elif op == "neg":
            r = -a[0]
        elif op == "powi":
            r = a[0] ** key[2]
        elif op == "powf":
            e = key[2]
            ok = a[0] > 0 if e < 0 else a[0] >= 0
            r = mp.power(a[0], mp.mpf(e)) if ok and not _isnan(a[0]) else NAN
        elif op == "recip":
            r = NAN if _isnan(a[0]) or a[0] == 0 else 1 / a[0]
        elif op == "div":
            r = NAN if _isnan(a[1]) or a[1] == 0 or _isnan(a[0]) else a[0] / a[1]
        elif op == "pow":
            r = _pow(a[0], a[1])
        elif op == "fn":
            if key[1] == "isnan":
                r = _isnan(a[0])
            else:
                r = NAN if _isnan(a[0]) else _FN[key[1]](a[0])
        elif op == "atan2":
            y, x = a
            r = NAN if _isnan(x) or _isnan(y) or (x == 0 and y == 0) else mp.atan2(y, x)
        elif op == "mod":
            p, q = a
            if _isnan(p) or _isnan(q) or q == 0:
                r = NAN
            elif mp.isinf(p) or mp.isinf(q):
                r = p - q * mp.floor(p / q)
            else:  # exactly: the quotient may need hundreds of digits
                fp, fq = _fraction(p), _fraction(q)
                m = fp - fq * (fp // fq)
                r = mp.mpf(m.numerator) / m.denominator
        elif op in ("min", "max"):
            r = NAN if any(map(_isnan, a)) else (min(a) if op == "min" else max(a))
        elif op == "heaviside":
            x, h0 = a
            r = NAN if _isnan(x) else (mp.mpf(1) if x > 0 else (mp.mpf(0) if x < 0 else h0))
        elif op == "cmp":
            r = _cmp(key[1], a[0], a[1])
        elif op == "where":
            r = a[1] if a[0] else a[2]
        elif op == "and":
            r = all(a)
        elif op == "or":
            r = any(a)
        elif op == "not":
            r = not a[0]
        elif op == "xor":
            r = bool(a[0]) != bool(a[1])
        else:
            raise AssertionError(op)
        v[n] = r
    return [v[r] for r in roots]


def _np(t):
    return np.asarray(t.cpu()) if isinstance(t, torch.Tensor) else np.asarray(t)


def contains(iv, k: int, ref) -> bool:
    """Does enclosure ``iv`` (batch index ``k``) contain the reference value ``ref``?"""
    lo_a = _np(iv.lo)
    if _isnan(ref):
        return bool(np.broadcast_to(_np(iv.nan), lo_a.shape)[k])
    lo, hi = float(lo_a[k]), float(_np(iv.hi)[k])
    if mp.isinf(ref):
        return (lo <= float(ref) <= hi)
    return mp.mpf(lo) <= ref <= mp.mpf(hi)


def sample_points(lo: torch.Tensor, hi: torch.Tensor, fracs) -> list:
    """Points of each box (columns), at the given fractions per variable, clamped."""
    pts = []
    for f in fracs:
        f = torch.as_tensor(f, dtype=lo.dtype).reshape(-1, 1)
        p = torch.clamp(lo + f * (hi - lo), min=lo, max=hi)
        p = torch.where(torch.isfinite(p), p, torch.where(torch.isfinite(lo), lo, hi))
        pts.append(p)
    return pts


def finite_float(v) -> float:
    return float(v) if math.isfinite(float(v)) else 0.0


def numpy_of(t):
    return np.asarray(t.cpu())


x, y, z = X, Y, Z
EXPRS = [
    x + y, x - 3.5 * y, x * y, x * y * z, x / y, 1 / x, x**2, x**3, x**4, x**5, x**-2,
    x**-3, sp.sqrt(x), x**1.5, x**-0.5, x**-1.5, x**sp.Rational(1, 3), x**y, 2**x,
    sp.exp(x), sp.log(x), sp.sin(x), sp.cos(x), sp.tan(x), sp.atan(x), sp.asin(x),
    sp.acos(x), sp.sinh(x), sp.cosh(x), sp.tanh(x), sp.asinh(x), sp.acosh(x), sp.atanh(x),
    sp.Abs(x), sp.Min(x, y), sp.Max(x, y, z), sp.floor(x), sp.ceiling(x), sp.sign(x),
    sp.frac(x), sp.Mod(x, y), sp.Mod(x, 3), sp.atan2(y, x), sp.Heaviside(x),
    sp.Heaviside(x, 0), sp.cot(x), sp.sec(x), sp.csc(x),
    sp.Piecewise((x**2, x < 0), (sp.sqrt(x), x < 2), (sp.exp(y), True)),
    sp.Piecewise((sp.log(x), x > 1)),
    sp.Piecewise((y, sp.And(x > 0, y < 1)), (z, sp.Or(x < -1, sp.Not(y > 2))), (1, True)),
    sp.Piecewise((1, sp.Xor(x > 0, y > 0)), (-1, True)),
    sp.Piecewise((1, sp.sqrt(x) > 1), (0, True)),
    sp.Piecewise((x, sp.Eq(y, 0)), (y, sp.Ne(x, 1)), (z, True)),
    sp.sin(x) ** 2 + sp.cos(x) ** 2, sp.exp(sp.sin(x * y)) - sp.log(1 + x**2),
    x**2 + 2 * y**2 + 3 * z**2 + 4 * x * y - 5 * y * z, (x - y) ** 2 * sp.cos(z) / (1 + y**2),
    sp.sqrt(x**2 + z**2) - sp.pi * y, sp.sin(x) + x**2 - 2 * sp.cos(y) + y**2 + z**2,
]

SPECIAL = [0.0, -0.0, 1.0, -1.0, 2.0, math.pi / 2, -math.pi / 2, math.pi, 3 * math.pi / 2,
           1e-300, -1e-300, 5e-324, 0.5, 3.0, 100.0, 710.0, -745.0, 1e10]


def endpoint():
    return st.one_of(st.sampled_from(SPECIAL), st.floats(-10, 10), st.floats(-1e6, 1e6),
                     st.floats(-2, 2))


@st.composite
def boxes(draw, n_boxes=4):
    los, his = [], []
    for _ in range(3 * n_boxes):
        a = draw(endpoint())
        kind = draw(st.integers(0, 3))
        if kind == 0:
            b = a  # a point
        elif kind == 1:
            b = a + draw(st.floats(0, 1e-6)) * max(1.0, abs(a))  # thin
        else:
            b = draw(endpoint())
        los.append(min(a, b))
        his.append(max(a, b))
    return (np.array(los).reshape(n_boxes, 3).T.copy(), np.array(his).reshape(n_boxes, 3).T.copy())


_GRAPH = Graph(LAYOUT)
_ROOTS = [_GRAPH.lower(e) for e in EXPRS]
_PROGRAM = IntervalProgram(_GRAPH, _ROOTS)
_FRACS = [[0.0, 0.0, 0.0], [1.0, 1.0, 1.0], [0.0, 1.0, 0.5], [0.37, 0.91, 0.03],
          [0.5, 0.5, 0.5]]


def check_enclosure(lo_np, hi_np, dtype, backend="torch"):
    """Every expression's enclosure over the boxes contains the 50-digit value at sample
    points; ``backend`` "numpy" runs the same inclusion functions on NumPy arrays."""
    lo = torch.tensor(lo_np, dtype=dtype)
    hi = torch.tensor(hi_np, dtype=dtype)
    lo, hi = torch.minimum(lo, hi), torch.maximum(lo, hi)  # float32 rounding may swap
    if backend == "numpy":
        with np.errstate(all="ignore"):
            vals = _PROGRAM.forward(lo.numpy(), hi.numpy(), np.zeros(0))
    else:
        vals = _PROGRAM.forward(lo, hi, torch.zeros(0, dtype=torch.float64))
    for p in sample_points(lo, hi, _FRACS):
        for k in range(lo.shape[1]):
            pt = [float(v) for v in p[:, k]]
            refs = reference(_GRAPH, _ROOTS, pt)
            for e, r, ref in zip(EXPRS, _ROOTS, refs):
                iv = vals[r]
                assert contains(iv, k, ref), (
                    f"{e} over [{lo[:, k].tolist()}, {hi[:, k].tolist()}] at {pt}: "
                    f"{ref} not in [{float(_np(iv.lo)[k])!r}, {float(_np(iv.hi)[k])!r}] "
                    f"({backend})")


@settings(max_examples=20, deadline=None)
@given(boxes())
def test_enclosure_float64(b):
    check_enclosure(*b, torch.float64)


@settings(max_examples=12, deadline=None)
@given(boxes())
def test_enclosure_float32(b):
    check_enclosure(*b, torch.float32)


@settings(max_examples=20, deadline=None)
@given(boxes())
def test_enclosure_numpy_float64(b):
    """The same inclusion functions on NumPy arrays (bound propagation at construction):
    NumPy's own transcendental code must stay inside the widening too."""
    check_enclosure(*b, torch.float64, "numpy")


@settings(max_examples=12, deadline=None)
@given(boxes())
def test_enclosure_numpy_float32(b):
    check_enclosure(*b, torch.float32, "numpy")


def test_same_program_on_numpy_and_torch():
    """One box set through both backends: identical where only correctly rounded
    operations are involved, and within a few ulps where the libraries' transcendental
    or torch's faithful (not correctly rounded) sqrt give different last bits."""
    rng = np.random.default_rng(7)
    lo_np = rng.uniform(-3, 3, (3, 200))
    hi_np = lo_np + rng.choice([0.0, 1e-6, 0.5, 4.0], (3, 200))
    with np.errstate(all="ignore"):
        vn = _PROGRAM.forward(lo_np, hi_np, np.zeros(0))
    vt = _PROGRAM.forward(torch.tensor(lo_np), torch.tensor(hi_np), torch.zeros(0))
    exact_ops = {"add", "mul", "neg", "div", "recip", "powi", "var", "const", "min", "max",
                 "abs", "floor", "ceil", "sign"}
    for e, r in zip(EXPRS, _ROOTS):
        a, b = vn[r], vt[r]
        la, lb = np.broadcast_to(_np(a.lo), (200,)), np.broadcast_to(_np(b.lo), (200,))
        ha, hb = np.broadcast_to(_np(a.hi), (200,)), np.broadcast_to(_np(b.hi), (200,))
        assert np.array_equal(np.broadcast_to(_np(a.nan), (200,)),
                              np.broadcast_to(_np(b.nan), (200,))), e
        ops_used = {_GRAPH.nodes[n][0] if _GRAPH.nodes[n][0] != "fn" else _GRAPH.nodes[n][1]
                    for n in _PROGRAM.order_for([r])}
        if ops_used <= exact_ops:
            assert np.array_equal(la, lb) and np.array_equal(ha, hb), e
        else:  # last-bit differences of the libraries, amplified at most by cancellation
            # in the sums of the test expressions (terms below 1e4): 1e-9 relative to 1
            for u, v in ((la, lb), (ha, hb)):
                fin = np.isfinite(u) & np.isfinite(v)
                assert np.array_equal(np.isfinite(u), np.isfinite(v)), e
                assert np.all(np.abs(u[fin] - v[fin]) <= 1e-9 * (1 + np.abs(u[fin]))), e


def test_domain_edges():
    """sqrt/log/asin of boxes straddling or beyond their domain: NaN flagged, empty beyond."""
    g = Graph(LAYOUT)
    roots = [g.lower(e) for e in (sp.sqrt(x), sp.log(x), sp.asin(x), 1 / x)]
    prog = IntervalProgram(g, roots)
    lo = torch.tensor([[-1.0, -3.0, 0.0, 2.0]] * 3, dtype=torch.float64)
    hi = torch.tensor([[4.0, -2.0, 0.0, 3.0]] * 3, dtype=torch.float64)
    v = prog.forward(lo, hi, torch.zeros(0, dtype=torch.float64))
    s, lg, a, r = (v[n] for n in roots)
    assert s.nan.tolist() == [True, True, False, False]
    # torch's sqrt is faithful, not always correctly rounded: moved out by two ulps
    assert float(s.lo[0]) == 0.0 and 2.0 <= float(s.hi[0]) <= 2.0 + 2 * np.spacing(2.0)
    assert float(s.lo[1]) > float(s.hi[1])  # sqrt of [-3, -2]: empty, always NaN
    assert lg.nan.tolist() == [True, True, True, False] and float(lg.lo[0]) == -math.inf
    assert float(a.lo[3]) > float(a.hi[3])  # asin of [2, 3]: empty
    assert r.nan.tolist() == [True, False, True, False]
    assert float(r.lo[2]) > float(r.hi[2])  # 1/0: always NaN
    assert float(r.lo[0]) == -math.inf and float(r.hi[0]) == math.inf


def test_outward_rounding_one_ulp():
    """x + y at a point: the enclosure holds the exact sum and is at most 2 ulps wide."""
    g = Graph(LAYOUT)
    n = g.lower(x + y)
    prog = IntervalProgram(g, [n])
    lo = torch.tensor([[0.1], [0.2], [0.0]], dtype=torch.float64)
    iv = prog.forward(lo, lo, torch.zeros(0, dtype=torch.float64))[n]
    exact = mp.mpf(0.1) + mp.mpf(0.2)
    assert mp.mpf(float(iv.lo[0])) < exact < mp.mpf(float(iv.hi[0]))
    assert float(iv.hi[0]) - float(iv.lo[0]) <= 2 * np.spacing(0.3)


def test_vector_sum_and_product():
    a = sp.IndexedBase("a", shape=(4,))
    i = sp.Idx("i")
    layout = Layout((Block(a, 0, (4,)),))
    exprs = [sp.Sum(a[i] ** 2, (i, 0, 3)), sp.Product(1 + a[i], (i, 0, 3)),
             sp.Sum(sp.sin(a[i]) * i, (i, 0, 3))]
    g = Graph(layout)
    roots = [g.lower(e) for e in exprs]
    prog = IntervalProgram(g, roots)
    rng = np.random.default_rng(0)
    lo_np = rng.uniform(-2, 1, (4, 50))
    hi_np = lo_np + rng.uniform(0, 1, (4, 50))
    lo, hi = torch.tensor(lo_np), torch.tensor(hi_np)
    v = prog.forward(lo, hi, torch.zeros(0, dtype=torch.float64))
    for p in sample_points(lo, hi, [[0.0] * 4, [1.0] * 4, [0.3, 0.9, 0.5, 0.1]]):
        for k in range(50):
            subs = {a[j]: sp.Float(float(p[j, k]), 60) for j in range(4)}
            for e, r in zip(exprs, roots):
                ref = mp.mpf(str(e.doit().xreplace(subs).evalf(50)))
                assert contains(v[r], k, ref), (e, k)


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["torch", "numpy"])
def test_enclosure_many_boxes(backend):
    """A million float32 boxes against float64 evaluation (error ~1e-16, far below the
    float32 enclosures' ulp), and 3000 float64 boxes against mpmath; the inclusion
    functions on torch tensors and on NumPy arrays."""
    from constropt.lowering import _rt_numpy
    from constropt.lowering._codegen import compile_source, emit_function

    # outputs named r<k>: the emitter's own temporaries are t<k> (variables x<k>)
    src = emit_function(_GRAPH, "f", "X, P", [(f"r{k}", r) for k, r in enumerate(_ROOTS)],
                        "[" + ", ".join(f"r{k}" for k in range(len(_ROOTS))) + "]")
    ns = compile_source(src, {k: getattr(_rt_numpy, k) for k in dir(_rt_numpy)
                              if not k.startswith("_")}, "interval-test")
    rng = np.random.default_rng(1)
    for _ in range(10):
        B = 100_000
        c = rng.choice([rng.uniform(-4, 4, (3, B)), rng.uniform(-0.1, 0.1, (3, B)),
                        rng.uniform(-20, 20, (3, B))])
        w = rng.choice([0.0, 1e-6, 0.01, 1.0]) * rng.uniform(0, 1, (3, B))
        lo32 = torch.tensor(c - w, dtype=torch.float32)
        hi32 = torch.tensor(c + w, dtype=torch.float32)
        if backend == "numpy":
            with np.errstate(all="ignore"):
                vals = _PROGRAM.forward(lo32.numpy(), hi32.numpy(), np.zeros(0))
        else:
            vals = _PROGRAM.forward(lo32, hi32, torch.zeros(0, dtype=torch.float64))
        for p in sample_points(lo32, hi32, _FRACS):
            with np.errstate(all="ignore"):
                ref = ns["f"](p.double().numpy(), np.zeros(0))
            for e, r, fv in zip(EXPRS, _ROOTS, ref):
                iv = vals[r]
                fv = np.broadcast_to(np.asarray(fv, dtype=np.float64), (B,))
                lo = np.broadcast_to(_np(iv.lo).astype(np.float64), (B,))
                hi = np.broadcast_to(_np(iv.hi).astype(np.float64), (B,))
                nan = np.broadcast_to(_np(iv.nan), (B,))
                ok = np.where(np.isnan(fv), nan, (lo <= fv) & (fv <= hi))
                # float64 itself is off by a few ulps of float64: allow that much
                near = np.isfinite(fv) & (np.abs(np.clip(fv, lo, hi) - fv)
                                         <= 1e-13 * np.maximum(1.0, np.abs(fv)))
                bad = ~(ok | near)
                assert not bad.any(), (e, np.flatnonzero(bad)[:5])
    for _ in range(60):
        lo_np = rng.uniform(-4, 4, (3, 50))
        hi_np = lo_np + rng.choice([0.0, 1e-9, 0.1, 2.0]) * rng.uniform(0, 1, (3, 50))
        check_enclosure(lo_np, hi_np, torch.float64, backend)


SMOOTH_EXPRS = [
    x**2 + 2 * y**2 + 3 * z**2 + 4 * x * y - 5 * y * z, sp.sin(x) * sp.exp(y) / (1 + z**2),
    sp.sqrt(x**2 + 1) + sp.log(y**2 + 2) - sp.atan(z), sp.tan(x / 3) + sp.tanh(y) * sp.cosh(z),
    x**-1.5 * y**3 + sp.asinh(z) + sp.Abs(x - y), sp.asin(x / 10) + sp.acos(y / 10)
    + sp.atanh(z / 10) + sp.acosh(x**2 + 2) + sp.sinh(y) + 1 / (x**2 + 1),
]


def test_graph_gradient_encloses_sympy_derivative():
    """Reverse-mode gradients over the graph agree with sympy's derivatives."""
    from constropt.lowering._interval_model import graph_gradient

    g = Graph(LAYOUT)
    roots = [g.lower(e) for e in SMOOTH_EXPRS]
    grads = [graph_gradient(g, r, 3) for r in roots]
    assert all(gr is not None for gr in grads)
    prog = IntervalProgram(g, [n for gr in grads for n in gr])
    rng = np.random.default_rng(3)
    pts = rng.uniform(0.2, 2.0, (3, 6))
    X = torch.tensor(pts)
    vals = prog.forward(X, X, torch.zeros(0, dtype=torch.float64))
    for e, gr in zip(SMOOTH_EXPRS, grads):
        for k, s in enumerate((x, y, z)):
            d = sp.diff(e, s)
            for j in range(6):
                ref = mp.mpf(str(d.xreplace({x: sp.Float(pts[0, j], 60), y: sp.Float(
                    pts[1, j], 60), z: sp.Float(pts[2, j], 60)}).evalf(50)))
                assert contains(vals[gr[k]], j, ref), (e, s, j)


def test_graph_gradient_refuses_jumps():
    from constropt.lowering._interval_model import graph_gradient

    g = Graph(LAYOUT)
    for e in (sp.floor(x) + y, sp.Piecewise((x, y > 0), (y, True)), sp.Max(x, y)):
        assert graph_gradient(g, g.lower(e), 3) is None


@pytest.mark.parametrize("backend", ["torch", "numpy"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_poles_and_extrema_at_a_box_end_in_every_dtype(backend, dtype):
    """Boxes ending within a few ulps of a pole of tan (3 pi/2) or an extremum of sin
    (pi/2, 5 pi/2): the test of "does the box hold one" runs in the boxes' dtype, and in
    float32 a pole one ulp inside the end was missed (tan enclosed by [8.7e-08, -8.4e7])."""
    from constropt.lowering import _rt_interval as R
    from constropt.lowering._interval_rules import fn as enclose

    def ends(c):
        v = [dtype(c)]
        for _ in range(6):
            v = [np.nextafter(v[0], dtype(-10)), *v, np.nextafter(v[-1], dtype(10))]
        return np.array(v, dtype=dtype)

    tan, sin = (lambda a: enclose("tan", a)), (lambda a: enclose("sin", a))
    cases = [(tan, math.pi, 3 * math.pi / 2, "pole"), (sin, 0.0, math.pi / 2, 1.0),
             (sin, 2.0, 5 * math.pi / 2, 1.0), (sin, math.pi, 3 * math.pi / 2, -1.0)]
    for fn, start, crit, what in cases:
        hi = ends(crit)
        lo = np.full_like(hi, start)
        arr = (lambda a: torch.from_numpy(a)) if backend == "torch" else (lambda a: a)
        out = fn(R.Iv(arr(lo), arr(hi), arr(np.zeros(hi.shape, dtype=bool))))
        olo, ohi = (np.asarray(v, dtype=np.float64) for v in (out.lo, out.hi))
        assert (olo <= ohi).all()
        holds = hi.astype(np.float64) >= crit   # the exact critical point is in the box
        if what == "pole":
            assert (np.isneginf(olo[holds]) & np.isposinf(ohi[holds])).all()
        elif what > 0:
            assert (ohi[holds] >= 1.0).all()
        else:
            assert (olo[holds] <= -1.0).all()


@pytest.mark.parametrize("lib", ["numpy", "torch"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_real_power_encloses_at_tiny_bases(lib, dtype):
    # x ** (1/3) at the smallest subnormal: the exponent's rounding (to float64, and to
    # float32 in float32 arithmetic) is off by |d ln x|, 8 float32 ulps there; hypothesis
    # found the float32 enclosure of the cube root 4.5e-7 relative too low
    from constropt.lowering._rt_interval import Iv, powf

    tiny = float(np.finfo(dtype).smallest_subnormal)
    xs = np.array([tiny, 1e-30, 0.7, 3.0, 1e10], dtype=dtype)
    for e in (1 / 3, -2 / 3, 0.6, 2.5):
        a = xs if lib == "numpy" else torch.tensor(xs)
        r = powf(Iv(a, a, a != a), e)
        lo = np.asarray(r.lo, dtype=np.float64)
        hi = np.asarray(r.hi, dtype=np.float64)
        exp = Fraction(e).limit_denominator(10)  # the exponent meant: 1/3, not its float
        with mp.workdps(50):
            for k, x in enumerate(xs.astype(np.float64)):
                ref = mp.mpf(float(x)) ** (mp.mpf(exp.numerator) / exp.denominator)
                assert lo[k] <= ref <= hi[k], (dtype, lib, e, float(x), lo[k], hi[k])


@pytest.mark.parametrize("lib", ["numpy", "torch"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_overflow_keeps_a_finite_lower_end(lib, dtype):
    # a real value too large for the dtype is still a real number: its enclosure is
    # [largest finite, inf] (the outward rounding of an overflowed end steps back from
    # inf), never [inf, inf], which would exclude every finite value; the mirror image
    # for the upper end
    from constropt.lowering._interval_rules import fn as enclose
    from constropt.lowering._rt_interval import Iv, mul2, neg, powf

    big = float(np.finfo(dtype).max)
    x = np.array([1e30 if dtype == "float32" else 1e300], dtype=dtype)
    a = x if lib == "numpy" else torch.tensor(x)
    iv = Iv(a, a, a != a)
    huge = np.array([200.0 if dtype == "float32" else 1000.0], dtype=dtype)
    h = huge if lib == "numpy" else torch.tensor(huge)
    with np.errstate(all="ignore"):  # as the programs run the NumPy runtime
        for r in (powf(iv, 2.5), mul2(iv, iv), enclose("exp", Iv(h, h, h != h))):
            assert float(r.lo[0]) == big and float(r.hi[0]) == math.inf
            assert not bool(r.nan[0])
        r = mul2(iv, neg(iv))
        assert float(r.lo[0]) == -math.inf and float(r.hi[0]) == -big
        # an empty range stays empty
        e = Iv(a * 0 + math.inf, a * 0 - math.inf, a != a)
        r = mul2(e, iv)
        assert float(r.lo[0]) == math.inf and float(r.hi[0]) == -math.inf
