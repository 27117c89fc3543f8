"""Inclusion functions for two-argument functions (``atan2``, ``Mod``, ``Min``/``Max``),
selections, comparisons, logic and reductions over vector variables (the one-argument
and arithmetic ones are in :mod:`._rt_interval`, whose conventions hold here)."""

from __future__ import annotations

import math

from ._interval_ops import ops
from ._rt_interval import (
    Bv,
    Iv,
    _eps,
    _tiny,
    down,
    empty_of,
    finish,
    mul2,
    point,
    sub,
    up,
    wdown,
    wup,
)

__all__ = ["atan2", "mod", "minimum", "maximum", "heaviside", "where", "where_bool", "cmp",
           "and_", "or_", "not_", "xor", "isnan", "const_bool", "rsum", "rprod"]

inf = math.inf


def atan2(y: Iv, x: Iv) -> Iv:
    """Corners where the box avoids the origin and the branch cut (x <= 0, y = 0)."""
    xp = ops(y.lo)
    cut = (x.lo <= 0) & (y.lo <= 0) & (y.hi >= 0)
    cs = [xp.atan2(yy, xx) for yy in (y.lo, y.hi) for xx in (x.lo, x.hi)]
    lo = wdown(xp.minimum(xp.minimum(cs[0], cs[1]), xp.minimum(cs[2], cs[3])))
    hi = wup(xp.maximum(xp.maximum(cs[0], cs[1]), xp.maximum(cs[2], cs[3])))
    pi_hi = up(xp.full_like(lo, math.pi))
    lo = xp.where(cut, -pi_hi, lo)
    hi = xp.where(cut, pi_hi, hi)
    origin = (x.lo <= 0) & (x.hi >= 0) & (y.lo <= 0) & (y.hi >= 0)
    return finish(lo, hi, x.nan | y.nan | origin, empty_of(x) | empty_of(y))


def mod(a: Iv, b: Iv) -> Iv:
    """sympy ``Mod``: ``[0, b)`` for ``b > 0``, ``(b, 0]`` for ``b < 0``; exact shift
    when a point divisor leaves the quotient's floor constant."""
    xp = ops(a.lo)
    pointb = b.lo == b.hi
    safe_b = xp.where(pointb & (b.lo != 0), b.lo, 1.0)
    qa, qb = xp.floor(a.lo / safe_b), xp.floor(a.hi / safe_b)
    k = xp.minimum(qa, qb)
    sh = sub(a, mul2(point(k, a.lo), point(safe_b, a.lo)))
    # the shift is exact when a - k*b lies in [0, b) (b > 0) or (b, 0] (b < 0) throughout
    inside = xp.where(safe_b > 0, (sh.lo >= 0) & (sh.hi < safe_b),
                      (sh.hi <= 0) & (sh.lo > safe_b))
    same = pointb & (qa == qb) & xp.isfinite(qa) & (b.lo != 0) & inside
    lo = xp.where(b.lo > 0, 0.0, xp.where(b.hi < 0, down(b.lo), xp.clamp(b.lo, max=0.0)))
    hi = xp.where(b.lo > 0, up(b.hi), xp.where(b.hi < 0, 0.0, xp.clamp(b.hi, min=0.0)))
    lo = xp.where(same, xp.maximum(sh.lo, lo), lo)
    hi = xp.where(same, xp.minimum(sh.hi, hi), hi)
    zero_in = (b.lo <= 0) & (b.hi >= 0)
    return finish(lo, hi, a.nan | b.nan | zero_in, empty_of(a) | empty_of(b))


def minimum(a: Iv, b: Iv) -> Iv:
    xp = ops(a.lo)
    return finish(xp.minimum(a.lo, b.lo), xp.minimum(a.hi, b.hi), a.nan | b.nan,
                  empty_of(a) | empty_of(b))


def maximum(a: Iv, b: Iv) -> Iv:
    xp = ops(a.lo)
    return finish(xp.maximum(a.lo, b.lo), xp.maximum(a.hi, b.hi), a.nan | b.nan,
                  empty_of(a) | empty_of(b))


def heaviside(a: Iv, h0: Iv) -> Iv:
    """``Heaviside(a, h0)``: the union of 0, ``h0`` and 1 over the signs ``a`` may take."""
    xp = ops(a.lo)
    ne = ~empty_of(a)
    may_neg, may_pos = ne & (a.lo < 0), ne & (a.hi > 0)
    may_zero = ne & (a.lo <= 0) & (a.hi >= 0)
    lo = xp.full_like(a.lo, inf)
    hi = xp.full_like(a.lo, -inf)
    lo = xp.where(may_neg, xp.clamp(lo, max=0.0), lo)
    hi = xp.where(may_neg, xp.clamp(hi, min=0.0), hi)
    lo = xp.where(may_pos, xp.clamp(lo, max=1.0), lo)
    hi = xp.where(may_pos, xp.clamp(hi, min=1.0), hi)
    lo = xp.where(may_zero, xp.minimum(lo, h0.lo), lo)
    hi = xp.where(may_zero, xp.maximum(hi, h0.hi), hi)
    return Iv(lo, hi, a.nan | (may_zero & h0.nan))


def where(c: Bv, a: Iv, b: Iv) -> Iv:
    """``Piecewise`` selection: the union of the branches that may be taken."""
    xp = ops(a.lo)
    lo = xp.minimum(xp.where(c.t, a.lo, inf), xp.where(c.f, b.lo, inf))
    hi = xp.maximum(xp.where(c.t, a.hi, -inf), xp.where(c.f, b.hi, -inf))
    return Iv(lo, hi, (c.t & a.nan) | (c.f & b.nan))


def where_bool(c: Bv, a: Bv, b: Bv) -> Bv:
    return Bv((c.t & a.f) | (c.f & b.f), (c.t & a.t) | (c.f & b.t))


# -- comparisons and logic ---------------------------------------------------------------
def cmp(op: str, a: Iv, b: Iv) -> Bv:
    """``a op b`` over the boxes: NaN compares False (True for ``!=``), as in xp."""
    nan = a.nan | b.nan
    ne = ~(empty_of(a) | empty_of(b))
    if op in (">", ">="):
        a, b = b, a
        op = "<" if op == ">" else "<="
    overlap = ne & (a.lo <= b.hi) & (b.lo <= a.hi)
    both_point = ne & (a.lo == a.hi) & (b.lo == b.hi) & (a.lo == b.lo)
    if op == "<":
        return Bv(nan | (ne & (a.hi >= b.lo)), ne & (a.lo < b.hi))
    if op == "<=":
        return Bv(nan | (ne & (a.hi > b.lo)), ne & (a.lo <= b.hi))
    if op == "==":
        return Bv(nan | (ne & ~both_point), overlap)
    return Bv(overlap, nan | (ne & ~both_point))  # "!="


def and_(*xs: Bv) -> Bv:
    f, t = xs[0]
    for b in xs[1:]:
        f, t = f | b.f, t & b.t
    return Bv(f, t)


def or_(*xs: Bv) -> Bv:
    f, t = xs[0]
    for b in xs[1:]:
        f, t = f & b.f, t | b.t
    return Bv(f, t)


def not_(a: Bv) -> Bv:
    return Bv(a.t, a.f)


def xor(a: Bv, b: Bv) -> Bv:
    return Bv((a.t & b.t) | (a.f & b.f), (a.t & b.f) | (a.f & b.t))


def isnan(a: Iv) -> Bv:
    return Bv(~empty_of(a), a.nan)


def const_bool(v: bool, like) -> Bv:
    t = ops(like).bool_scalar(v, like)
    return Bv(~t, t)


# -- vector variables ----------------------------------------------------------------------
def rsum(a: Iv, axis: int, drop: int) -> Iv:
    """Sum over ``axis`` (then drop ``drop`` leading unit axes), widened by the sum's
    rounding bound ``n * eps * sum|terms|``."""
    xp = ops(a.lo)
    shape = xp.broadcast_shapes(a.lo.shape, a.hi.shape, a.nan.shape)
    alo, ahi = xp.expand(a.lo, shape), xp.expand(a.hi, shape)
    n = shape[axis]
    slack = lambda v: (n * _eps(v)) * xp.abs(v).sum(axis) + n * _tiny(v)  # noqa: E731
    lo = down(alo.sum(axis) - slack(alo))
    hi = up(ahi.sum(axis) + slack(ahi))
    nan = xp.expand(a.nan, shape).any(axis)
    empty = (~(alo <= ahi)).any(axis)
    out = finish(lo, hi, nan, empty)
    if drop:
        out = Iv(*(t.reshape(t.shape[drop:]) if t.ndim >= drop else t for t in out))
    return out


def rprod(a: Iv, axis: int, drop: int) -> Iv:
    """Product over ``axis`` by interval multiplication term by term."""
    xp = ops(a.lo)
    shape = xp.broadcast_shapes(a.lo.shape, a.hi.shape, a.nan.shape)
    lo, hi, nan = (xp.expand(t, shape) for t in a)
    acc = Iv(*(xp.select(t, axis, 0) for t in (lo, hi, nan)))
    for k in range(1, shape[axis]):
        acc = mul2(acc, Iv(*(xp.select(t, axis, k) for t in (lo, hi, nan))))
    if drop:
        acc = Iv(*(t.reshape(t.shape[drop:]) for t in acc))
    return acc
