"""Every construct the lowering supports, as one table, and the points it is checked at.

The lowering's tests (``lowering/test_lowering.py``: NumPy and torch against sympy) and
the exact verification's (``finish/test_verify.py``: Arb balls enclose sympy's value)
run over the same table; a construct the lowering learns gets one entry here.
"""

from __future__ import annotations

import itertools

import numpy as np
import sympy as sp

x, y, z = sp.symbols("x y z")
XYZ = (x, y, z)
BOX = {s: (-5, 5) for s in XYZ}

E = sp.Piecewise
CASES = {
    "add_sub": x + y - 2 * z,
    "mul": 3 * x * y * z,
    "div": x / y,
    "div_sum": (x + 1) / (y - z),
    "recip_product": 1 / (x * y),
    "int_pow": x**5 - 2 * x**3,
    "neg_int_pow": x**-2,
    "sympy_integer_exponent": sp.Pow(x, sp.Integer(7)) + y ** sp.Integer(-1),
    "float_integral_exponent": x**2.0,
    "rational_pow": x ** sp.Rational(3, 2),
    "cube_root": x ** sp.Rational(1, 3),
    "neg_half_pow": x ** sp.Rational(-1, 2),
    "neg_rational_pow": x ** sp.Rational(-3, 2),
    "float_pow": x**1.7,
    "symbolic_pow": x**y,
    "const_base_pow": 2**x + sp.E ** (y / 2),
    "sqrt": sp.sqrt(x),
    "exp": sp.exp(x),
    "log": sp.log(x),
    "log_base_2": sp.log(x, 2),
    "log_base_10": sp.log(x + y, 10),
    "log_symbolic_base": sp.log(x, y),
    "sin": sp.sin(x),
    "cos": sp.cos(x),
    "tan": sp.tan(x),
    "asin": sp.asin(x),
    "acos": sp.acos(y),
    "atan": sp.atan(x),
    "atan2": sp.atan2(y, x),
    "atan2_negative_zero": sp.atan2(-y, x),
    "sinh": sp.sinh(x),
    "cosh": sp.cosh(x),
    "tanh": sp.tanh(x),
    "asinh": sp.asinh(x),
    "acosh": sp.acosh(x),
    "atanh": sp.atanh(x),
    "cot_sec_csc": sp.cot(x) + sp.sec(y) + sp.csc(z),
    "abs": sp.Abs(x - y),
    "sign": sp.sign(x),
    "floor": sp.floor(x),
    "ceiling": sp.ceiling(x + y),
    "frac": sp.frac(x),
    "mod_const": sp.Mod(x, 3),
    "mod_negative": sp.Mod(x, -2),
    "mod_float": sp.Mod(x, sp.Float(0.75)),
    "mod_symbolic": sp.Mod(x, y),
    "min2": sp.Min(x, y),
    "min_many": sp.Min(x, y, z, 1),
    "max_const": sp.Max(x, -2),
    "max_many": sp.Max(x, y, z, sp.pi / 2),
    "min_max_nested": sp.Min(sp.Max(x, y), z),
    "piecewise": E((x**2, x < -1), (sp.sqrt(x), x > 0), (y, True)),
    "piecewise_no_match": E((x, x > 0), (y, y > 0)),
    "piecewise_dead_nan": E((sp.log(x), x > 0), (sp.sqrt(-x), True)),
    "piecewise_and_or_not": E((x + y, sp.And(x > 0, y > 0)),
                              (x - y, sp.Or(x < -1, sp.Not(y < 0))), (0, True)),
    "piecewise_eq_ne": E((1, sp.Eq(x, y)), (2, sp.Ne(x, 1)), (3, True)),
    "piecewise_xor": E((x, sp.Xor(x > 0, y > 0)), (-x, True)),
    "piecewise_constants": E((0.1, x > 0), (0.3, True)),
    "piecewise_nan_condition": E((1, sp.sqrt(x) > 1), (2, True)),
    "heaviside": sp.Heaviside(x),
    "heaviside_h0": sp.Heaviside(x - y, 0),
    "heaviside_h1": sp.Heaviside(x, 1),
    "pi_e": sp.pi * x + sp.E,
    "rational": sp.Rational(2, 3) * x - sp.Rational(1, 7),
    "large_integer": x + 10**30,
    "large_integer_mul": 2**70 * x + sp.Integer(10) ** 20,
    "constant": sp.Integer(3),
    "composite": sp.sqrt(sp.Abs(x)) * sp.log(1 + x**2) - sp.exp(-(y**2)) * sp.cos(z),
    "nested": sp.atan2(sp.sin(x), sp.cos(y))
    + sp.Max(sp.floor(x), sp.ceiling(y)) * sp.Heaviside(z),
}

_S = (-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.25)
POINTS = np.array([(a, b, c) for (a, b), c in zip(itertools.product(_S, (-1.0, 0.0, 1.0, 1.5)),
                                                   itertools.cycle((-1.0, 0.0, 0.75)))]
                  + [(1.0, 1.0, 0.0), (0.0, -0.0, 0.0)]
                  + list(np.random.default_rng(7).uniform(-3, 3, size=(8, 3))))
