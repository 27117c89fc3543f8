"""Fuzzing solve: random small problems never raise anything but a constropt error,
never report an infeasible point as feasible (checked independently, with sympy's own
float evaluation), and report ``fun`` equal to the objective at ``x``."""

from __future__ import annotations

import math
import warnings

import pytest
import sympy as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import constropt

x, y = sp.symbols("x y", real=True)
VARS = (x, y)

leaf = st.one_of(st.sampled_from(VARS), st.integers(-3, 3).map(sp.Integer),
                 st.sampled_from([sp.Rational(1, 2), sp.pi, sp.Float(0.25)]))


def _combine(children):
    unary = st.tuples(st.sampled_from([sp.sqrt, sp.exp, sp.log, sp.sin, sp.cos, sp.Abs,
                                       sp.floor, sp.tanh]), children).map(lambda t: t[0](t[1]))
    binary = st.tuples(st.sampled_from(["+", "-", "*", "/", "min", "max", "pw"]),
                       children, children).map(_apply)
    return st.one_of(unary, binary)


def _apply(t):
    op, a, b = t
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op == "/":
        return a / b
    try:  # sympy refuses Min/Max of complex constants such as sqrt(-3)
        if op == "min":
            return sp.Min(a, b)
        if op == "max":
            return sp.Max(a, b)
        return sp.Piecewise((a, x > y), (b, True))
    except (TypeError, ValueError):
        return a + b


exprs = st.recursive(leaf, _combine, max_leaves=6)


@st.composite
def problems(draw):
    f = draw(exprs)
    cons = []
    for _ in range(draw(st.integers(0, 3))):
        g = draw(exprs)
        c = draw(st.integers(-4, 4))
        kind = draw(st.sampled_from(["le", "lt", "ge", "eq"]))
        try:  # sympy refuses comparisons of constants that are complex (sqrt(-3) < 1)
            rel = {"le": lambda: g <= c, "lt": lambda: g < c, "ge": lambda: g >= c,
                   "eq": lambda: sp.Eq(g, c)}[kind]()
        except TypeError:
            continue
        if isinstance(rel, sp.logic.boolalg.BooleanAtom):
            continue
        cons.append(rel)
    lo = draw(st.integers(-5, 2))
    width = draw(st.integers(1, 6))
    return f, cons, {v: (lo, lo + width) for v in VARS}


def _value(expr, point):
    fn = sp.lambdify(VARS, expr, modules="math")
    try:
        v = complex(fn(*point))
    except (ValueError, ZeroDivisionError, OverflowError, TypeError):
        return math.nan
    return v.real if v.imag == 0 else math.nan


def _holds(rel, point, eq_tol):
    if isinstance(rel, sp.logic.boolalg.BooleanAtom):
        return bool(rel)
    d = _value(rel.lhs - rel.rhs, point)
    if math.isnan(d):
        return False
    slack = 1e-9 * (1 + abs(_value(rel.lhs, point)) + abs(_value(rel.rhs, point)))
    if isinstance(rel, sp.Eq):
        return abs(d) <= eq_tol + slack
    if isinstance(rel, (sp.LessThan, sp.StrictLessThan)):
        return d <= slack
    return d >= -slack


@settings(max_examples=int(__import__("os").environ.get("FUZZ_EXAMPLES", 40)), deadline=None,
          derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(problems())
def test_solve_never_lies(case):
    f, cons, box = case
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = constropt.solve(f, cons, bounds=box, variables=VARS, seed=0, pop_size=20,
                                  max_evals=3000)
    except constropt.ConstroptError:
        return  # a clear refusal is allowed (e.g. a constraint sympy decided)
    point = [float(res.x[v]) for v in VARS]
    if res.feasible:
        assert all(_holds(c, point, 1e-4) for c in cons), (f, cons, point)
        assert res.success or res.status in (constropt.Status.UNBOUNDED,)
    else:
        assert res.success is False
    fv = _value(f, point)
    if math.isnan(fv) or math.isnan(res.fun):
        assert math.isnan(fv) == math.isnan(res.fun) or not res.feasible
    else:
        assert res.fun == pytest.approx(fv, rel=1e-9, abs=1e-9)
