"""The references the tests hold constropt's answers against, independent of constropt.

* sympy's own value of an expression, node by node (``node.func(*values)`` on 30-digit
  Floats), with the lowering's semantics for what sympy leaves undefined: a result that
  is ``nan``, ``zoo``, complex or not a number at all (``AccumBounds``), an exception
  (``Mod(p, 0)``, a comparison with a complex number), and every node above such a
  value, is NaN; only the selected branch of a ``Piecewise`` is evaluated
  (:func:`sympy_value`, compared by :func:`assert_matches`);
* exact arithmetic: does a relation hold at a float point, with the point's
  coordinates and the expression's Floats as the exact rationals they are
  (:func:`exact_holds`).

Imported by name from every test folder (``pythonpath = ["tests"]`` in pyproject.toml).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import sympy as sp

NAN = object()  # the reference's "undefined"


# -- sympy's value, node by node --------------------------------------------------------
def _canon(v):
    if v is NAN:
        return NAN
    v = sp.sympify(v)
    if v.has(sp.nan, sp.zoo) or not v.is_number or isinstance(v, sp.AccumBounds):
        return NAN
    if v in (sp.oo, -sp.oo):
        return v
    v = v.evalf(30)
    if v.is_real is not True:
        try:
            c = complex(v)
        except (TypeError, ValueError):
            return NAN
        return sp.Float(c.real, 30) if c.imag == 0 else NAN
    return v


def _cond(c, env, memo):
    if isinstance(c, sp.logic.boolalg.BooleanTrue):
        return True
    if isinstance(c, sp.logic.boolalg.BooleanFalse):
        return False
    if isinstance(c, sp.Rel):
        lhs, rhs = _value(c.lhs, env, memo), _value(c.rhs, env, memo)
        if lhs is NAN or rhs is NAN:
            return NAN
        return bool(c.func(lhs, rhs))
    vals = [_cond(a, env, memo) for a in c.args]
    if any(v is NAN for v in vals):
        return NAN
    if isinstance(c, sp.Not):
        return not vals[0]
    if isinstance(c, sp.And):
        return all(vals)
    if isinstance(c, sp.Or):
        return any(vals)
    if isinstance(c, sp.Xor):
        return sum(vals) % 2 == 1
    raise TypeError(c)


def _value(e, env, memo):
    if e in env:
        return env[e]
    if e in memo:
        return memo[e]
    if e.is_Number or isinstance(e, sp.NumberSymbol):
        out = _canon(e) if e.has(sp.nan, sp.zoo) else e
    elif isinstance(e, sp.Piecewise):
        out = NAN
        for val, cond in e.args:
            c = _cond(cond, env, memo)
            if c is NAN:
                break
            if c:
                out = _value(val, env, memo)
                break
    else:
        args = [_value(a, env, memo) for a in e.args]
        if any(a is NAN for a in args):
            out = NAN
        elif isinstance(e, sp.Mod) and args[1] == 0:
            out = NAN  # sympy: ZeroDivisionError("Modulo by zero")
        else:
            try:
                out = _canon(e.func(*args))
            except (ZeroDivisionError, TypeError, ValueError):
                out = NAN
    memo[e] = out
    return out


def sympy_value(expr, point: dict) -> float:
    """sympy's value of ``expr`` at ``point`` ({symbol: float}), NaN where undefined."""
    env = {s: sp.Float(v, 30) for s, v in point.items()}
    v = _value(sp.sympify(expr), env, {})
    if v is NAN:
        return math.nan
    return float(v)


def assert_matches(got, want, rtol=1e-9, atol=1e-9, what=""):
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    nan_ok = np.isnan(got) == np.isnan(want)
    assert nan_ok.all(), f"{what}: NaN mismatch at {np.flatnonzero(~nan_ok)}: got " \
                         f"{got[~nan_ok]}, want {want[~nan_ok]}"
    fin = ~np.isnan(want)
    np.testing.assert_allclose(got[fin], want[fin], rtol=rtol, atol=atol, err_msg=what)


# -- exact arithmetic ------------------------------------------------------------------
def exact(expr, point):
    """``expr`` with its Floats and the point as exact rationals."""
    expr = sp.sympify(expr)
    expr = expr.xreplace({f: sp.Rational(f) for f in expr.atoms(sp.Float)})
    sub = {s: sp.Integer(v) if isinstance(v, int) else sp.Rational(float(v))
           for s, v in point.items()}
    return expr.xreplace(sub)


def exact_holds(rel, point, eq_tol=1e-4) -> bool:
    """Does ``rel`` hold in exact arithmetic at ``point`` ({symbol: float or int})?"""
    if isinstance(rel, (sp.And, sp.Or, sp.Not)):
        vals = [exact_holds(a, point, eq_tol) for a in rel.args]
        return {sp.And: all, sp.Or: any}.get(type(rel), lambda v: not v[0])(vals)
    d = exact(rel.lhs - rel.rhs, point)
    if d.is_Rational:  # decided exactly, however small
        return bool(abs(d) <= sp.Rational(eq_tol)) if isinstance(rel, sp.Eq) else \
            bool(rel.func(d, 0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            v = sp.N(d, 60, maxn=600)
        except (TypeError, ValueError, ZeroDivisionError):
            return False
    if v.has(sp.nan, sp.zoo) or not v.is_real or not v.is_number:
        return False
    if v.is_infinite:
        return bool(rel.func(v, 0)) if not isinstance(rel, sp.Eq) else False
    tie = abs(v) < sp.Float("1e-50")
    if isinstance(rel, sp.Eq):
        return bool(abs(v) <= sp.Rational(eq_tol))
    if tie:
        return isinstance(rel, (sp.LessThan, sp.GreaterThan))
    return bool(rel.func(v, 0))
