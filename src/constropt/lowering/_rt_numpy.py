"""Runtime helpers that generated NumPy code calls; the twin of :mod:`._rt_torch`.

Same names, same semantics (see that module).  The NumPy evaluator runs the generated
function under ``numpy.errstate(all="ignore")``: guarded lanes never reach a math
function out of its domain, but overflow to ``inf`` is a legitimate result.
"""

from __future__ import annotations

import math

import numpy as np

nan = math.nan
inf = math.inf
TINY = 1e-30

exp, sin, cos, tan, atan = np.exp, np.sin, np.cos, np.tan, np.arctan
sinh, cosh, tanh, asinh = np.sinh, np.cosh, np.tanh, np.arcsinh
floor, ceil, where, isnan = np.floor, np.ceil, np.where, np.isnan
abs = np.abs  # noqa: A001


def cast(block, dtype):
    return block.astype(dtype, copy=False)


def powi(a, n: int):
    result = None
    base = a
    while n:
        if n & 1:
            result = base if result is None else result * base
        n >>= 1
        if n:
            base = base * base
    return result


def recip(a):
    ok = a != 0
    return where(ok, 1.0 / where(ok, a, 1.0), nan)


def div(a, b):
    ok = b != 0
    return where(ok, a / where(ok, b, 1.0), nan)


def sqrt(a):
    ok = a >= 0
    return where(ok, np.sqrt(where(ok, a, 0.0)), nan)


def rsqrt(a):
    ok = a > 0
    return where(ok, 1.0 / np.sqrt(where(ok, a, 1.0)), nan)


def log(a):
    ok = a > 0
    return where(ok, np.log(where(ok, a, 1.0)), nan)


def powf(a, e: float):
    ok = a > 0 if e < 0 else a >= 0
    return where(ok, np.power(where(ok, a, 1.0), e), nan)


def pow(a, b):  # noqa: A001
    a = np.asarray(a, dtype=np.result_type(a, b, np.float32))
    b = np.asarray(b, dtype=a.dtype)
    return where((a == 0) & (b < 0), nan, np.power(a, b))


def asin(a):
    ok = (a >= -1) & (a <= 1)
    return where(ok, np.arcsin(where(ok, a, 0.0)), nan)


def acos(a):
    ok = (a >= -1) & (a <= 1)
    return where(ok, np.arccos(where(ok, a, 0.0)), nan)


def acosh(a):
    ok = a >= 1
    return where(ok, np.arccosh(where(ok, a, 1.0)), nan)


def atanh(a):
    ok = (a > -1) & (a < 1)
    return where(ok, np.arctanh(where(ok, a, 0.0)), nan)


def atan2(y, x):
    return where((np.asarray(x) == 0) & (np.asarray(y) == 0), nan, np.arctan2(y, x))


def mod(a, b):
    return where(np.asarray(b) == 0, nan, np.mod(a, b))


def sign(a):
    return where(isnan(a), nan, np.sign(a))


def heaviside(a, h0):
    return where(a > 0, 1.0, where(a < 0, 0.0, where(a == 0, h0, nan)))


def minimum(a, b):
    return np.minimum(a, b)


def maximum(a, b):
    return np.maximum(a, b)


def rsum(body):
    return np.sum(body, axis=0)


def bsum(block, dtype):
    return np.sum(block, axis=0, dtype=dtype)


def index(start: int, stop: int, X, dtype):
    return np.arange(start, stop, dtype=dtype).reshape((-1,) + (1,) * (X.ndim - 1))


def viol_le(c):
    return where(c <= 0, 0.0, where(c > 0, c, inf))


def viol_lt(c):
    return where(c < 0, 0.0, where(c >= 0, np.maximum(c, TINY), inf))


def viol_eq(c, tol):
    a = np.abs(c)
    return where(a <= tol, 0.0, where(a > tol, a, inf))


def out(v, X, dtype):
    shape = X.shape[1:]
    return np.broadcast_to(np.asarray(v, dtype=dtype), shape)


def stack(items, X, dtype):
    if not items:
        return np.zeros((0,) + tuple(X.shape[1:]), dtype=dtype)
    return np.stack([out(v, X, dtype) for v in items])


def minimize_key(f):
    return where(isnan(f), inf, f)


def stack_rows(rows, X, dtype, n: int):
    if not rows:
        return np.zeros((0, n) + tuple(X.shape[1:]), dtype=dtype)
    return np.stack(rows)
