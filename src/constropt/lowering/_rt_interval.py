"""Inclusion functions of arithmetic, on NumPy or torch: the conventions of the intervals.

An enclosure is an :class:`Iv` ``(lo, hi, nan)`` of tensors broadcastable to the batch of
boxes: every value the point semantics (:mod:`._rt_torch`) can give at a point of the
box is either NaN (then ``nan`` is True) or a real number in ``[lo, hi]``.  An empty
value range is ``lo = +inf, hi = -inf``; ``nan`` True with an empty range means "NaN
everywhere" (``sqrt`` of a negative box).  Booleans are :class:`Bv` ``(f, t)``: whether
the condition may be False / may be True somewhere in the box.

Rigour (the bounds are enclosures of the *exact real* values, not of the rounded ones):

- ``+ - * /`` are correctly rounded in IEEE 754 on both libraries, so each computed
  endpoint is moved outward by one ulp (``numpy.nextafter`` / ``torch.nextafter``);
  ``sqrt`` likewise on NumPy; torch's CPU float64 ``sqrt`` is only faithfully rounded,
  so on torch it is moved out by two ulps;
- transcendental functions (the function table's, real powers) are widened by
  :data:`TRANS_ULPS` ulps of the result (relative ``TRANS_ULPS * eps`` plus the
  smallest subnormal) and then by one ulp more: the worst-case errors the libraries
  called document are at most 4 ulps (``docs/certificates.md`` names them);
- integer powers ``x**n`` computed by repeated multiplication are widened by ``n`` ulps
  relative, sums over vector variables by ``n * eps`` times the sum of magnitudes.

The rules of the function table's functions (monotone, periodic, ...) are in
:mod:`._interval_rules`.  The same functions run on NumPy arrays and torch tensors
(:mod:`._interval_ops`): NumPy float64 for the one box of bound propagation at
``Problem`` construction, torch for the thousands of boxes of the branch-and-bound.
Every function here is branch-free on array values (``where`` only), so one call
evaluates thousands of boxes.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ._guards import powi as _point_powi  # the ends' square-and-multiply
from ._interval_ops import ops

__all__ = ["Iv", "Bv", "TRANS_ULPS"]

#: ulps a transcendental result is widened by (before the final outward ulp).
TRANS_ULPS = 4
inf = math.inf


class Iv(NamedTuple):
    """Numeric enclosure: real values in ``[lo, hi]``, ``nan``: the point value may be NaN."""

    lo: object
    hi: object
    nan: object


class Bv(NamedTuple):
    """Boolean enclosure: ``f`` the condition may be False, ``t`` it may be True."""

    f: object
    t: object


# -- rounding ----------------------------------------------------------------------------
def down(x):
    return ops(x).down(x)


def up(x):
    return ops(x).up(x)


def _eps(x) -> float:
    return ops(x).finfo(x).eps


def _tiny(x) -> float:
    fi = ops(x).finfo(x)
    return fi.smallest_normal * fi.eps


def wdown(x, ulps: float = TRANS_ULPS):
    """``x`` moved down by ``ulps`` ulps of itself and one more (transcendental results)."""
    xp = ops(x)
    w = x - (xp.abs(x) * (ulps * _eps(x)) + ulps * _tiny(x))
    return down(xp.where(xp.isfinite(x), w, x))


def wup(x, ulps: float = TRANS_ULPS):
    xp = ops(x)
    w = x + (xp.abs(x) * (ulps * _eps(x)) + ulps * _tiny(x))
    return up(xp.where(xp.isfinite(x), w, x))


def _false(like):
    return ops(like).false_like(like)


def empty_of(a: Iv):
    return ~(a.lo <= a.hi)


def finish(lo, hi, nan, empty=None) -> Iv:
    """Sanitize: NaN endpoints widen to the whole line (and flag NaN); ``empty`` empties."""
    xp = ops(lo)
    bad = xp.isnan(lo) | xp.isnan(hi)
    lo = xp.where(bad, -inf, lo)
    hi = xp.where(bad, inf, hi)
    nan = nan | bad
    if empty is not None:
        lo = xp.where(empty, inf, lo)
        hi = xp.where(empty, -inf, hi)
    return Iv(lo, hi, nan)


def point(v, like) -> Iv:
    """The number ``v`` (a float or a float64 array) as an enclosure in ``like``'s dtype:
    exact in float64, rounded outward when a narrower dtype cannot hold it."""
    xp = ops(like)
    t64 = xp.f64(v, like)
    t = xp.asarray(t64, like)
    isn = xp.isnan(t)
    lo, hi = t, t
    if not xp.is_f64(like):
        back = xp.f64(t, like)
        lo = xp.where(back > t64, down(t), t)
        hi = xp.where(back < t64, up(t), t)
    return Iv(xp.where(isn, inf, lo), xp.where(isn, -inf, hi), isn)


def hull(a: Iv, b: Iv) -> Iv:
    xp = ops(a.lo)
    return Iv(xp.minimum(a.lo, b.lo), xp.maximum(a.hi, b.hi), a.nan | b.nan)


def intersect(a: Iv, lo, hi) -> Iv:
    xp = ops(a.lo)
    return Iv(xp.maximum(a.lo, lo), xp.minimum(a.hi, hi), a.nan)


# -- arithmetic --------------------------------------------------------------------------
def add(*xs: Iv) -> Iv:
    lo, hi, nan = xs[0]
    empty = empty_of(xs[0])
    for b in xs[1:]:
        lo, hi, nan = down(lo + b.lo), up(hi + b.hi), nan | b.nan
        empty = empty | empty_of(b)
    return finish(lo, hi, nan, empty)


def neg(a: Iv) -> Iv:
    return Iv(-a.hi, -a.lo, a.nan)


def sub(a: Iv, b: Iv) -> Iv:
    return add(a, neg(b))


def _products(a: Iv, b: Iv):
    xp = ops(a.lo)
    ps = [a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi]
    return [xp.where(xp.isnan(p), 0.0, p) for p in ps]  # 0 * inf: 0 exactly


def mul2(a: Iv, b: Iv) -> Iv:
    xp = ops(a.lo)
    ps = _products(a, b)
    lo = down(xp.minimum(xp.minimum(ps[0], ps[1]), xp.minimum(ps[2], ps[3])))
    hi = up(xp.maximum(xp.maximum(ps[0], ps[1]), xp.maximum(ps[2], ps[3])))
    return finish(lo, hi, a.nan | b.nan, empty_of(a) | empty_of(b))


def mul(*xs: Iv) -> Iv:
    acc = xs[0]
    for b in xs[1:]:
        acc = mul2(acc, b)
    return acc


def _quotient(a: Iv, blo, bhi):
    """``a / [blo, bhi]`` for a divisor interval not containing 0 (corners)."""
    xp = ops(a.lo)
    qs = [a.lo / blo, a.lo / bhi, a.hi / blo, a.hi / bhi]
    lo = xp.minimum(xp.minimum(qs[0], qs[1]), xp.minimum(qs[2], qs[3]))
    hi = xp.maximum(xp.maximum(qs[0], qs[1]), xp.maximum(qs[2], qs[3]))
    nanq = xp.isnan(lo) | xp.isnan(hi)  # inf / inf: unbounded both ways
    return down(xp.where(nanq, -inf, lo)), up(xp.where(nanq, inf, hi))


def div(a: Iv, b: Iv) -> Iv:
    """``a / b``; NaN where ``b`` may be 0 (the point semantics), unbounded near it."""
    xp = ops(a.lo)
    zero_in = (b.lo <= 0) & (b.hi >= 0)
    lo, hi = _quotient(a, xp.where(zero_in, 1.0, b.lo), xp.where(zero_in, 1.0, b.hi))
    # divisor touching 0 from one side, numerator of one sign: a half-line
    pos_b = (b.lo == 0) & (b.hi > 0)
    neg_b = (b.hi == 0) & (b.lo < 0)
    a_pos, a_neg = a.lo >= 0, a.hi <= 0
    half_lo = xp.where(a_pos, down(a.lo / xp.where(pos_b, b.hi, 1.0)), -inf)
    half_hi = xp.where(a_neg, up(a.hi / xp.where(pos_b, b.hi, 1.0)), inf)
    nhalf_lo = xp.where(a_neg, down(a.hi / xp.where(neg_b, b.lo, 1.0)), -inf)
    nhalf_hi = xp.where(a_pos, up(a.lo / xp.where(neg_b, b.lo, 1.0)), inf)
    lo = xp.where(zero_in, xp.where(pos_b, half_lo, xp.where(neg_b, nhalf_lo, -inf)),
                     lo)
    hi = xp.where(zero_in, xp.where(pos_b, half_hi, xp.where(neg_b, nhalf_hi, inf)),
                     hi)
    only_zero = (b.lo == 0) & (b.hi == 0)
    empty = empty_of(a) | empty_of(b) | only_zero
    return finish(lo, hi, a.nan | b.nan | zero_in, empty)


def recip(a: Iv) -> Iv:
    return div(point(1.0, a.lo), a)


def sqrt(a: Iv) -> Iv:
    xp = ops(a.lo)
    lo = down(xp.sqrt(xp.clamp(a.lo, min=0.0)))
    hi = up(xp.sqrt(xp.clamp(a.hi, min=0.0)))
    if xp.name == "torch":  # faithful, not always correctly rounded: one ulp more
        lo, hi = down(lo), up(hi)
    return finish(xp.clamp(lo, min=0.0), hi, a.nan | (a.lo < 0), empty_of(a) | (a.hi < 0))


def powi(a: Iv, n: int) -> Iv:
    """``a ** n`` for an integer ``n >= 2`` (even: the minimum is 0 when 0 is inside)."""
    xp = ops(a.lo)
    lo_p, hi_p = _point_powi(a.lo, n), _point_powi(a.hi, n)
    if n % 2:
        lo, hi = wdown(lo_p, n), wup(hi_p, n)
    else:
        mlo = xp.where(a.lo >= 0, lo_p, xp.where(a.hi <= 0, hi_p, 0.0))
        mhi = xp.maximum(lo_p, hi_p)
        lo = xp.clamp(wdown(mlo, n), min=0.0)
        hi = wup(mhi, n)
    return finish(lo, hi, a.nan, empty_of(a))


def powf(a: Iv, e: float) -> Iv:
    """``a ** e`` for a non-integer constant ``e`` (real branch: ``a >= 0``, ``a > 0`` if
    ``e < 0``)."""
    xp = ops(a.lo)
    lo_in = xp.clamp(a.lo, min=0.0) + 0.0
    hi_in = xp.clamp(a.hi, min=0.0) + 0.0
    if e > 0:
        lo = wdown(lo_in ** e, _pow_ulps(lo_in, e))
        hi = wup(hi_in ** e, _pow_ulps(hi_in, e))
        nan = a.nan | (a.lo < 0)
        empty = empty_of(a) | (a.hi < 0)
    else:
        lo = wdown(hi_in ** e, _pow_ulps(hi_in, e))  # decreasing; 0 ** -e = inf
        hi = wup(lo_in ** e, _pow_ulps(lo_in, e))
        nan = a.nan | (a.lo <= 0)
        empty = empty_of(a) | (a.hi <= 0)
    return finish(xp.clamp(lo, min=0.0), hi, nan, empty)


def _pow_ulps(base, e: float):
    """Ulps to widen ``base ** e`` by: :data:`TRANS_ULPS`, plus the effect of the
    exponent's own rounding.  ``x ** e`` computed with ``e + d`` is off by the factor
    ``x ** d``, a relative ``|d ln x|``: ``d`` is half an ulp of the float64 ``e`` unless
    ``e`` is a short binary fraction (``1/3`` is not, ``0.5`` is), plus the rounding of
    ``e`` to the array's precision (float32 arithmetic); at float32's smallest subnormal
    (``|ln x| = 103``) ``x ** (1/3)`` computed with the float32 exponent was 4.5e-7
    relative (8 ulps) below the true value, past the 4-ulp widening."""
    xp = ops(base)
    eps = _eps(base)
    d = 0.0 if (e * 2.0**20).is_integer() else math.ulp(e) / 2
    if eps > 2.0 * np.finfo(np.float64).eps:  # narrower than float64: e rounded again
        d += math.fabs(e) * eps / 2
    if d == 0.0:
        return TRANS_ULPS
    pos = base > 0
    lg = xp.abs(xp.log(xp.where(pos, base, 1.0)))  # 0 ** e is exact
    return TRANS_ULPS + xp.where(pos, lg * (1.01 * d / eps) + 1.0, 0.0)
