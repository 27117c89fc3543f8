"""Property test: random expression trees agree on torch, NumPy and sympy.

Inputs are dyadic (``k/4``), and every discontinuous or domain-restricted construct
(comparisons, ``floor``, ``Mod``, ``sqrt``, ``log``, ``1/u``, ...) takes an *exact*
argument, a polynomial in the inputs with small integer coefficients that float64
computes without rounding.  Only continuous, total functions are applied to rounded
values, so a float64 result never lands on the other side of a jump from sympy's
30-digit one, and the comparison can be strict about NaN: NaN exactly where sympy's
value is ``nan``, ``zoo``, complex or undefined (see :func:`_reference.sympy_value`).
"""

from __future__ import annotations

import numpy as np
import sympy as sp
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import constropt
from _constructs import XYZ
from _reference import assert_matches, sympy_value

x, y, z = XYZ
BOX = {s: (-4, 4) for s in XYZ}
SETTINGS = settings(max_examples=60, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

LEAVES = st.sampled_from([x, y, z, sp.Integer(2), sp.Integer(-1), sp.Rational(1, 2)])


@st.composite
def exact(draw, depth=2):
    """A polynomial with small coefficients: exact in float64 on dyadic inputs.

    Never a bare number (``Problem`` rejects constant complex subexpressions such as
    ``log(-1)`` outright, before lowering).
    """
    if depth == 0 or draw(st.integers(0, 2)) == 0:
        e = draw(LEAVES)
    else:
        a, b = draw(exact(depth - 1)), draw(exact(depth - 1))
        op = draw(st.sampled_from(["add", "sub", "mul", "neg", "square"]))
        e = {"add": a + b, "sub": a - b, "mul": a * b, "neg": -a, "square": a**2}[op]
    return e + draw(st.sampled_from(XYZ)) if e.is_number else e


def _cond(draw):
    a, b = draw(exact(1)), draw(exact(1))
    rel = draw(st.sampled_from([sp.Lt, sp.Le, sp.Gt, sp.Ge, sp.Eq, sp.Ne]))
    c = rel(a, b)
    if isinstance(c, sp.logic.boolalg.BooleanAtom):
        c = sp.Gt(x, a)
    kind = draw(st.integers(0, 4))
    if kind == 0:
        return sp.And(c, sp.Lt(y, draw(exact(1))))
    if kind == 1:
        return sp.Or(c, sp.Not(sp.Ge(z, draw(exact(0)))))
    return c


@st.composite
def general(draw, depth=3):
    """A tree over every supported construct (discontinuities on exact arguments)."""
    if depth == 0:
        return draw(exact(1))
    e, e2 = draw(exact(1)), draw(exact(1))
    kind = draw(st.sampled_from([
        "exact", "add", "mul", "min", "max", "abs", "sin", "cos", "atan", "tanh", "exp",
        "cosh", "sqrt", "log", "recip", "rsqrt", "pow32", "powsym", "asin", "acos",
        "atan2", "mod", "floor", "ceiling", "sign", "heaviside", "piecewise",
        "piecewise_nodefault", "intpow"]))
    if kind == "exact":
        return draw(exact(2))
    if kind in ("add", "mul", "min", "max"):
        a, b = draw(general(depth - 1)), draw(general(depth - 1))
        return {"add": a + b, "mul": a * b, "min": sp.Min(a, b, e), "max": sp.Max(a, b)}[kind]
    if kind in ("abs", "sin", "cos", "atan", "tanh"):
        f = {"abs": sp.Abs, "sin": sp.sin, "cos": sp.cos, "atan": sp.atan, "tanh": sp.tanh}
        return f[kind](draw(general(depth - 1)))
    if kind in ("exp", "cosh"):  # bounded arguments: no overflow
        return (sp.exp if kind == "exp" else sp.cosh)(sp.sin(draw(general(depth - 1))) * 3)
    if kind == "intpow":
        return draw(general(depth - 1)) ** draw(st.sampled_from([2, 3, -1, -2]))
    if kind == "piecewise" or kind == "piecewise_nodefault":
        a, b, c = (draw(general(depth - 1)) for _ in range(3))
        last = (c, True) if kind == "piecewise" else (c, _cond(draw))
        return sp.Piecewise((a, _cond(draw)), (b, _cond(draw)), last, evaluate=False)
    return {
        "sqrt": sp.sqrt(e), "log": sp.log(e), "recip": 1 / e, "rsqrt": e ** sp.Rational(-1, 2),
        "pow32": e ** sp.Rational(3, 2), "powsym": e ** draw(st.sampled_from([x, y, z])),
        "asin": sp.asin(e / 4), "acos": sp.acos(e2 / 2), "atan2": sp.atan2(e, e2),
        "mod": sp.Mod(e, e2), "floor": sp.floor(e / 2), "ceiling": sp.ceiling(e2 / 4),
        "sign": sp.sign(e), "heaviside": sp.Heaviside(e - e2),
    }[kind]


POINTS = st.lists(st.tuples(*[st.integers(-12, 12)] * 3), min_size=4, max_size=8)


def _evaluate(expr, pts):
    p = constropt.Problem(expr, variables=XYZ, bounds=BOX)
    f_np = p.evaluate(pts).fun
    f_t = p.evaluate(torch.tensor(pts, dtype=torch.float64)).fun.numpy()
    return f_np, f_t


def _dyadic(raw):
    pts = np.array(raw, dtype=np.float64) / 4
    return np.vstack([pts, [[0.0, 0.0, 0.0], [1.0, -1.0, 0.5]]])


@SETTINGS
@given(expr=general(), raw=POINTS)
def test_random_trees_agree_with_sympy(expr, raw):
    pts = _dyadic(raw)
    want = [sympy_value(expr, dict(zip(XYZ, pt, strict=True))) for pt in pts]
    f_np, f_t = _evaluate(expr, pts)
    assert_matches(f_np, want, rtol=1e-7, atol=1e-7, what=f"numpy {expr}")
    assert_matches(f_t, want, rtol=1e-7, atol=1e-7, what=f"torch {expr}")
    assert_matches(f_t, f_np, rtol=1e-10, atol=1e-10, what=f"torch vs numpy {expr}")


@SETTINGS
@given(live=general(depth=2), a=exact(2), raw=POINTS,
       dead=st.sampled_from(["log", "sqrt", "recip", "asin", "nan"]))
def test_nan_dead_branch_never_leaks(live, a, raw, dead):
    """``Piecewise((nan-producing, a > 0), (live, True))`` is ``live`` where ``a <= 0``."""
    bad = {"log": sp.log(a) * y, "sqrt": sp.sqrt(a) + sp.sqrt(-a) * z, "recip": 1 / a + x,
           "asin": sp.asin(a) * sp.acos(a + 2), "nan": sp.Piecewise((x, a > 0))}[dead]
    pts = _dyadic(raw)
    pw = sp.Piecewise((bad, a > 0), (live, True))
    got_np, got_t = _evaluate(pw, pts)
    live_np, live_t = _evaluate(live, pts)
    bad_np, _ = _evaluate(bad, pts)
    a_val = np.array([float(a.subs(dict(zip(XYZ, pt, strict=True)))) for pt in pts])
    dead_lanes = a_val <= 0
    np.testing.assert_array_equal(got_np[dead_lanes], live_np[dead_lanes])
    np.testing.assert_array_equal(got_t[dead_lanes], live_t[dead_lanes])
    np.testing.assert_array_equal(got_np[~dead_lanes], bad_np[~dead_lanes])
