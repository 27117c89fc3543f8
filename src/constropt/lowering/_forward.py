"""Forward-mode derivatives in NumPy: the generated ``leaves`` code run on dual numbers.

Where sympy cannot differentiate a problem (vector variables, a ``Min``/``Max`` of many
arguments, expressions too deep for its ``diff``), the NumPy backend's
``derivatives(X, P)`` runs the same generated ``leaves`` function with the runtime
namespace of this module: every value carries its tangent with respect to all ``N``
rows of ``X`` at once (an array of shape ``(N, *value_shape)``, right-aligned like the
value), so one pass gives the whole gradient and Jacobian without torch.

The semantics are those of the autograd route it replaces: ``where`` selects the tangent
of the branch taken (a dead branch never reaches a live lane), piecewise-constant
functions (``floor``, ``ceiling``, ``sign``, ``Heaviside``, the quotient of ``Mod``)
have derivative 0, and a gradient is NaN wherever its value is NaN.  The derivatives of
the table's functions are their rows' ``derivative``, evaluated here on arrays.  Memory is
``N`` times that of one evaluation: meant for the polish and repair, which
differentiate a handful of points.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np

from . import _rt_numpy as rt
from ._codegen import compile_source
from ._functions import NODE_FUNCTIONS

__all__ = ["forward_derivatives"]


class Dual:
    """A value ``v`` with its tangent ``d`` (shape ``(N, ...)``, right-aligned with ``v``)."""

    __array_ufunc__ = None  # ndarray <op> Dual defers to Dual's reflected operators

    def __init__(self, v, d):
        self.v = v
        self.d = d

    # -- arithmetic ----------------------------------------------------------------
    def __add__(self, o):
        return Dual(self.v + _v(o), _dsum(self, o))

    __radd__ = __add__

    def __sub__(self, o):
        return Dual(self.v - _v(o), _dsum(self, _neg(o)))

    def __rsub__(self, o):
        return Dual(_v(o) - self.v, _dsum(_neg(self), o))

    def __neg__(self):
        return Dual(-self.v, -self.d)

    def __mul__(self, o):
        ov = _v(o)
        n = max(_nd(self), np.ndim(ov))
        d = _align(self.d, n) * ov
        if isinstance(o, Dual):
            d = d + _align(o.d, n) * self.v
        return Dual(self.v * ov, d)

    __rmul__ = __mul__

    def __truediv__(self, o):
        return div(self, o)

    def __rtruediv__(self, o):
        return div(o, self)

    # -- comparisons act on values -------------------------------------------------
    def __lt__(self, o):
        return self.v < _v(o)

    def __le__(self, o):
        return self.v <= _v(o)

    def __gt__(self, o):
        return self.v > _v(o)

    def __ge__(self, o):
        return self.v >= _v(o)

    def __eq__(self, o):  # noqa: D105 - values, elementwise
        return self.v == _v(o)

    def __ne__(self, o):
        return self.v != _v(o)

    __hash__ = None

    def __getitem__(self, k):  # X[k], X[a:b], X[idx]: rows of the input
        return Dual(self.v[k], self.d[:, k])


def _v(a):
    return a.v if isinstance(a, Dual) else a


def _neg(a):
    return -a


def _nd(a) -> int:
    return np.ndim(_v(a))


def _align(d, ndim: int):
    """Tangent ``d`` with its value axes padded on the left to ``ndim`` axes."""
    extra = ndim + 1 - d.ndim
    return d.reshape((d.shape[0],) + (1,) * extra + d.shape[1:]) if extra > 0 else d


def _align_add(a, b):
    n = max(a.ndim, b.ndim) - 1
    return _align(a, n) + _align(b, n)


def _dsum(a, b):
    ds = [x.d for x in (a, b) if isinstance(x, Dual)]
    return ds[0] if len(ds) == 1 else _align_add(*ds)


def _chain(a, v, slope):
    """``f(a)`` with value ``v`` and derivative ``slope`` (arrays like ``a.v``)."""
    if not isinstance(a, Dual):
        return v
    return Dual(v, _align(a.d, max(_nd(a), np.ndim(slope))) * slope)


def _lin(v, *terms):
    """Value ``v`` with tangent ``sum(coef * x.d)`` over the Dual ``x`` of ``terms``."""
    d = None
    for coef, x in terms:
        if isinstance(x, Dual):
            t = _align(x.d, max(_nd(x), np.ndim(coef))) * coef
            d = t if d is None else _align_add(d, t)
    return v if d is None else Dual(v, d)


# -- the runtime namespace -------------------------------------------------------------
#: The algebra a row's ``derivative`` is written in, on NumPy arrays: the runtime's
#: functions (``powi`` is repeated multiplication), NumPy's ``where`` and ``zeros_like``.
_K = SimpleNamespace(**{**{k: getattr(rt, k) for k in dir(rt) if not k.startswith("_")},
                        "where": np.where, "zeros_like": np.zeros_like})


def _unary(f):
    fn = getattr(rt, f.runtime_name)
    if f.derivative is None:  # a test (isnan): no tangent
        return lambda a: fn(_v(a))

    def unary(a):
        v = fn(_v(a))
        return _chain(a, v, f.derivative(a.v, v, _K)) if isinstance(a, Dual) else v
    return unary


def _several(f):
    fn = getattr(rt, f.runtime_name)
    if f.choose is not None:  # Min/Max: the tangent of the argument chosen
        def chosen(a, b):
            av, bv = _v(a), _v(b)
            return where(f.choose(av, bv), a, b) if isinstance(a, Dual) or \
                isinstance(b, Dual) else fn(av, bv)
        return chosen

    def several(*args):
        vals = [_v(a) for a in args]
        v = fn(*vals)
        parts = f.derivative(*vals, v, _K)
        return _lin(v, *((p, a) for p, a in zip(parts, args) if p is not None))
    return several


def _recip(a):
    v = rt.recip(_v(a))
    return _chain(a, v, -v * v) if isinstance(a, Dual) else v


def powi(a, n: int):
    v = rt.powi(_v(a), n)
    if not isinstance(a, Dual):
        return v
    return _chain(a, v, n * (rt.powi(a.v, n - 1) if n > 1 else 1.0))


def powf(a, e: float):
    v = rt.powf(_v(a), e)
    return _chain(a, v, e * rt.powf(a.v, e - 1.0)) if isinstance(a, Dual) else v


def pow(a, b):  # noqa: A001 - the generated code's name
    av, bv = _v(a), _v(b)
    v = rt.pow(av, bv)
    if not isinstance(b, Dual):
        return _lin(v, (bv * rt.pow(av, bv - 1.0), a))
    return _lin(v, (bv * rt.pow(av, bv - 1.0), a), (v * rt.log(av), b))


def div(a, b):
    av, bv = _v(a), _v(b)
    v = rt.div(av, bv)
    return _lin(v, (rt.recip(bv), a), (-v * rt.recip(bv), b))


def where(c, a, b, dtype=None):
    v = rt.where(c, _v(a), _v(b), dtype)
    if not (isinstance(a, Dual) or isinstance(b, Dual)):
        return v
    n = max(_nd(a), _nd(b), np.ndim(c))
    da = _align(a.d, n) if isinstance(a, Dual) else 0.0
    db = _align(b.d, n) if isinstance(b, Dual) else 0.0
    return Dual(v, np.where(c, da, db))


def cast(block, dtype):
    return Dual(rt.cast(block.v, dtype), block.d) if isinstance(block, Dual) \
        else rt.cast(block, dtype)


def _reduce_tangent(a, axis, drop, fn):
    d = fn(_align(a.d, _nd(a)), axis + 1)
    return d.reshape((d.shape[0],) + d.shape[1 + drop:]) if drop else d


def rsum(body, axis: int = 0, drop: int = 0):
    v = rt.rsum(_v(body), axis, drop)
    if not isinstance(body, Dual):
        return v
    return Dual(v, _reduce_tangent(body, axis, drop, lambda d, ax: d.sum(ax)))


def rprod(body, axis: int = 0, drop: int = 0):
    bv = _v(body)
    v = rt.rprod(bv, axis, drop)
    if not isinstance(body, Dual):
        return v
    # the product of the other factors: exclusive prefix times exclusive suffix products
    bv = np.broadcast_to(bv, np.broadcast_shapes(np.shape(bv), _align(body.d, np.ndim(
        bv)).shape[1:]))
    ones = np.ones_like(np.take(bv, [0], axis=axis))
    pre = np.concatenate([ones, np.cumprod(bv, axis=axis)], axis=axis)
    pre = np.take(pre, range(bv.shape[axis]), axis=axis)
    rev = np.flip(bv, axis=axis)
    suf = np.flip(np.take(np.concatenate([ones, np.cumprod(rev, axis=axis)], axis=axis),
                          range(bv.shape[axis]), axis=axis), axis=axis)
    d = (_align(body.d, bv.ndim) * (pre * suf)).sum(axis + 1)
    return Dual(v, d.reshape((d.shape[0],) + d.shape[1 + drop:]) if drop else d)


def bsum(block, dtype):
    v = rt.bsum(_v(block), dtype)
    return Dual(v, _align(block.d, _nd(block)).sum(1)) if isinstance(block, Dual) else v


def index(start, stop, d, D, X, dtype):
    return rt.index(start, stop, d, D, _v(X), dtype)


def lift(block, d: int, D: int, dtype):
    v = rt.lift(_v(block), d, D, dtype)
    if not isinstance(block, Dual):
        return v
    t = _align(block.d, _nd(block))
    return Dual(v, t.reshape((t.shape[0],) + (1,) * d + (t.shape[1],) + (1,) * (D - 1 - d)
                             + t.shape[2:]))


def grid(X, base: int, axes, D: int, dtype):
    idx = np.full((1,) * D, base, dtype=np.int64)
    for c, n, d in axes:
        idx = idx + c * np.arange(n, dtype=np.int64).reshape(rt._lead(n, d, D, 0))
    return Dual(X.v[idx].astype(dtype, copy=False), X.d[:, idx])


def vconst(values, X, dtype):
    return rt.vconst(values, _v(X), dtype)


def vtab(values, X, dtype):
    return rt.vtab(values, _v(X), dtype)


def matvec(matrix, v):
    val = rt.matvec(matrix, _v(v))
    if not isinstance(v, Dual):
        return val
    d = _align(v.d, _nd(v))  # (N, c, *batch) -> (N, k, *batch)
    return Dual(val, np.moveaxis(np.tensordot(matrix.astype(d.dtype), d, (1, 1)), 0, 1))


def rall(body):
    return rt.rall(_v(body))


def assemble(items, blocks, rows, m: int, X, dtype):
    batch = X.v.shape[1:]
    N = X.d.shape[0]
    v = np.empty((m,) + batch, dtype=dtype)
    d = np.zeros((N, m) + batch, dtype=dtype)
    parts = [stack(items, X, dtype)] + list(blocks)
    for part, spec in zip(parts, rows):
        idx = rt._rows(spec)
        v[idx] = _v(part)
        if isinstance(part, Dual):
            d[:, idx] = _align(part.d, np.ndim(part.v))
    return Dual(v, d)


def out(v, X, dtype):
    val = rt.out(_v(v), _v(X), dtype)
    N = X.d.shape[0]
    if not isinstance(v, Dual):
        return Dual(val, np.zeros((N,) + val.shape, dtype=dtype))
    return Dual(val, np.broadcast_to(_align(v.d, val.ndim), (N,) + val.shape))


def stack(items, X, dtype):
    outs = [out(v, X, dtype) for v in items]
    if not outs:
        return Dual(rt.stack([], _v(X), dtype), np.zeros((X.d.shape[0], 0) + X.v.shape[1:]))
    return Dual(np.stack([o.v for o in outs]), np.stack([o.d for o in outs], 1))


def _namespace() -> dict:
    ns = {k: getattr(rt, k) for k in dir(rt) if not k.startswith("_")}
    for f in NODE_FUNCTIONS:
        ns[f.runtime_name] = _unary(f) if f.arity == 1 else _several(f)
    ns["recip"] = _recip
    for fn in (powi, powf, pow, div, where, cast, rsum, rprod, bsum, index, lift, grid,
               vconst, out, stack, vtab, matvec, rall, assemble):
        ns[fn.__name__] = fn
    return ns


def forward_derivatives(source: str):
    """``derivatives(X, P) -> (grad, jac)`` (NumPy, float64) by forward mode through the
    ``leaves`` function of the generated ``source`` (see the module docstring)."""
    leaves = compile_source(source, _namespace(), "numpy-forward")["leaves"]

    def derivatives(X, P):
        X = np.asarray(X, dtype=np.float64)
        P = np.asarray(P, dtype=np.float64)
        N = X.shape[0]
        eye = np.eye(N).reshape((N, N) + (1,) * (X.ndim - 1))
        with np.errstate(all="ignore"):
            f, C = leaves(Dual(X, eye), P)
            grad = np.where(np.isnan(f.v), math.nan, f.d)
            jac = np.where(np.isnan(C.v)[:, None], math.nan, np.moveaxis(C.d, 0, 1))
        return np.ascontiguousarray(grad), np.ascontiguousarray(jac)

    return derivatives
