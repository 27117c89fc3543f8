"""Runtime helpers that generated torch code calls.

The generated source stays short and readable (``sqrt(t0)`` rather than three nested
``torch.where`` calls) while the semantics live here, in one tested place.  Every helper
is branch-free on tensor values, so ``torch.compile`` inlines and fuses it.

Semantics shared with :mod:`._rt_numpy`: results that sympy calls ``nan``, ``zoo`` or
complex are NaN; inputs of functions with a restricted domain are guarded with the
"double where" pattern, so a lane outside the domain computes a harmless value and is
then replaced by NaN (no infinities or NaNs reach the math function, and gradients of
dead branches stay finite).
"""

from __future__ import annotations

import math

import torch

nan = math.nan
inf = math.inf
TINY = 1e-30

exp, sin, cos, tan, atan = torch.exp, torch.sin, torch.cos, torch.tan, torch.atan
sinh, cosh, tanh, asinh = torch.sinh, torch.cosh, torch.tanh, torch.asinh
floor, ceil, where, isnan = torch.floor, torch.ceil, torch.where, torch.isnan
abs = torch.abs  # noqa: A001 - the generated code's name for |x|


def _t(v, like):
    """Python number -> tensor shaped like ``like`` (both operands tensors)."""
    if isinstance(v, torch.Tensor):
        return v
    return torch.full_like(like, v)


def cast(block, dtype):
    return block.to(dtype)


def powi(a, n: int):
    """``a ** n`` for an integer ``n >= 2`` as a chain of multiplications."""
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
    return where(ok, torch.sqrt(where(ok, a, 0.0)), nan)


def rsqrt(a):
    ok = a > 0
    return where(ok, torch.rsqrt(where(ok, a, 1.0)), nan)


def log(a):
    ok = a > 0
    return where(ok, torch.log(where(ok, a, 1.0)), nan)


def powf(a, e: float):
    """``a ** e`` for a constant non-integer exponent (real branch only)."""
    ok = a > 0 if e < 0 else a >= 0
    return where(ok, where(ok, a, 1.0) ** e, nan)


def pow(a, b):  # noqa: A001
    """``a ** b`` with a symbolic exponent: NaN where sympy would be zoo or complex."""
    if not isinstance(a, torch.Tensor):
        a = _t(a, b)
    if not isinstance(b, torch.Tensor):
        b = _t(b, a)
    return where((a == 0) & (b < 0), nan, torch.pow(a, b))


def asin(a):
    ok = (a >= -1) & (a <= 1)
    return where(ok, torch.asin(where(ok, a, 0.0)), nan)


def acos(a):
    ok = (a >= -1) & (a <= 1)
    return where(ok, torch.acos(where(ok, a, 0.0)), nan)


def acosh(a):
    ok = a >= 1
    return where(ok, torch.acosh(where(ok, a, 1.0)), nan)


def atanh(a):
    ok = (a > -1) & (a < 1)
    return where(ok, torch.atanh(where(ok, a, 0.0)), nan)


def atan2(y, x):
    if not isinstance(y, torch.Tensor):
        y = _t(y, x)
    if not isinstance(x, torch.Tensor):
        x = _t(x, y)
    return where((x == 0) & (y == 0), nan, torch.atan2(y, x))


def mod(a, b):
    """sympy ``Mod``: the sign of the divisor, NaN for a zero divisor."""
    if not isinstance(a, torch.Tensor):
        a = _t(a, b)
    return where(b == 0, nan, torch.remainder(a, b))


def sign(a):
    return where(isnan(a), nan, torch.sign(a))


def heaviside(a, h0):
    return where(a > 0, 1.0, where(a < 0, 0.0, where(a == 0, h0, nan)))


def minimum(a, b):
    if not isinstance(b, torch.Tensor):
        return torch.clamp(a, max=b)
    if not isinstance(a, torch.Tensor):
        return torch.clamp(b, max=a)
    return torch.minimum(a, b)


def maximum(a, b):
    if not isinstance(b, torch.Tensor):
        return torch.clamp(a, min=b)
    if not isinstance(a, torch.Tensor):
        return torch.clamp(b, min=a)
    return torch.maximum(a, b)


def rsum(body):
    """Reduce a vector-variable expression over its element axis (axis 0)."""
    return body.sum(0)


def bsum(block, dtype):
    """Sum a block of genes straight from storage, accumulating in ``dtype``."""
    return block.sum(0, dtype=dtype)


def index(start: int, stop: int, X, dtype):
    """The summation index ``start..stop-1`` as a column broadcasting over the batch."""
    return torch.arange(start, stop, dtype=dtype, device=X.device).reshape(
        (-1,) + (1,) * (X.dim() - 1))


def viol_le(c):
    return where(c <= 0, 0.0, where(c > 0, c, inf))


def viol_lt(c):
    return where(c < 0, 0.0, where(c >= 0, torch.clamp(c, min=TINY), inf))


def viol_eq(c, tol):
    a = torch.abs(c)
    return where(a <= tol, 0.0, where(a > tol, a, inf))


def out(v, X, dtype):
    """An output with the batch shape ``X.shape[1:]`` and the working dtype."""
    shape = X.shape[1:]
    if not isinstance(v, torch.Tensor):
        return torch.full(shape, v, dtype=dtype, device=X.device)
    return v.to(dtype).expand(shape)


def stack(items, X, dtype):
    if not items:
        return torch.zeros((0,) + tuple(X.shape[1:]), dtype=dtype, device=X.device)
    return torch.stack([out(v, X, dtype) for v in items])


def minimize_key(f):
    """Objective in minimization sense with NaN replaced by +inf (NaN never wins)."""
    if not isinstance(f, torch.Tensor):
        return inf if math.isnan(f) else f
    return where(isnan(f), inf, f)


def stack_rows(rows, X, dtype, n: int):
    """Stack per-leaf Jacobian rows ``(n, *batch)`` into ``(L, n, *batch)``."""
    if not rows:
        return torch.zeros((0, n) + tuple(X.shape[1:]), dtype=dtype, device=X.device)
    return torch.stack(rows)
