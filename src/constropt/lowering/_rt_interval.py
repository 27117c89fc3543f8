"""Inclusion functions: interval versions of the point runtime's helpers, in torch.

An enclosure is an :class:`Iv` ``(lo, hi, nan)`` of tensors broadcastable to the batch of
boxes: every value the point semantics (:mod:`._rt_torch`) can give at a point of the
box is either NaN (then ``nan`` is True) or a real number in ``[lo, hi]``.  An empty
value range is ``lo = +inf, hi = -inf``; ``nan`` True with an empty range means "NaN
everywhere" (``sqrt`` of a negative box).  Booleans are :class:`Bv` ``(f, t)``: whether
the condition may be False / may be True somewhere in the box.

Rigour (the bounds are enclosures of the *exact real* values, not of the rounded ones):

- ``+ - * /`` and ``sqrt`` are correctly rounded in IEEE 754, so each computed endpoint
  is moved outward by one ulp (``torch.nextafter``);
- transcendental functions (``exp``, ``log``, trigonometric, inverse trigonometric,
  hyperbolic, ``rsqrt``, real powers) are widened by :data:`TRANS_ULPS` ulps of the
  result (relative ``TRANS_ULPS * eps`` plus the smallest subnormal) and then by one
  ulp more; the documented worst-case errors of the libraries torch calls are at most 4
  ulps (SLEEF u10 and glibc on CPU, the CUDA math library's table on GPUs);
- integer powers ``x**n`` computed by repeated multiplication are widened by ``n`` ulps
  relative, sums over vector variables by ``n * eps`` times the sum of magnitudes.

Every function here is branch-free on tensor values (``torch.where`` only), so one call
evaluates thousands of boxes.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch

__all__ = ["Iv", "Bv", "TRANS_ULPS"]

#: ulps a transcendental result is widened by (before the final outward ulp).
TRANS_ULPS = 4
inf = math.inf


class Iv(NamedTuple):
    """Numeric enclosure: real values in ``[lo, hi]``, ``nan``: the point value may be NaN."""

    lo: torch.Tensor
    hi: torch.Tensor
    nan: torch.Tensor


class Bv(NamedTuple):
    """Boolean enclosure: ``f`` the condition may be False, ``t`` it may be True."""

    f: torch.Tensor
    t: torch.Tensor


# -- rounding ----------------------------------------------------------------------------
def down(x):
    return torch.nextafter(x, torch.full_like(x, -inf))


def up(x):
    return torch.nextafter(x, torch.full_like(x, inf))


def _eps(x) -> float:
    return torch.finfo(x.dtype).eps


def _tiny(x) -> float:
    return torch.finfo(x.dtype).smallest_normal * torch.finfo(x.dtype).eps


def wdown(x, ulps: float = TRANS_ULPS):
    """``x`` moved down by ``ulps`` ulps of itself and one more (transcendental results)."""
    w = x - (torch.abs(x) * (ulps * _eps(x)) + ulps * _tiny(x))
    return down(torch.where(torch.isfinite(x), w, x))


def wup(x, ulps: float = TRANS_ULPS):
    w = x + (torch.abs(x) * (ulps * _eps(x)) + ulps * _tiny(x))
    return up(torch.where(torch.isfinite(x), w, x))


def _false(like):
    return torch.zeros(like.shape, dtype=torch.bool, device=like.device)


def empty_of(a: Iv):
    return ~(a.lo <= a.hi)


def finish(lo, hi, nan, empty=None) -> Iv:
    """Sanitize: NaN endpoints widen to the whole line (and flag NaN); ``empty`` empties."""
    bad = torch.isnan(lo) | torch.isnan(hi)
    lo = torch.where(bad, -inf, lo)
    hi = torch.where(bad, inf, hi)
    nan = nan | bad
    if empty is not None:
        lo = torch.where(empty, inf, lo)
        hi = torch.where(empty, -inf, hi)
    return Iv(lo, hi, nan)


def point(v, like) -> Iv:
    """The number ``v`` (a float or a float64 tensor) as an enclosure in ``like``'s dtype:
    exact in float64, rounded outward when a narrower dtype cannot hold it."""
    t64 = torch.as_tensor(v, dtype=torch.float64, device=like.device)
    t = t64.to(like.dtype)
    isn = torch.isnan(t)
    lo, hi = t, t
    if like.dtype != torch.float64:
        back = t.double()
        lo = torch.where(back > t64, down(t), t)
        hi = torch.where(back < t64, up(t), t)
    return Iv(torch.where(isn, inf, lo), torch.where(isn, -inf, hi), isn)


def hull(a: Iv, b: Iv) -> Iv:
    return Iv(torch.minimum(a.lo, b.lo), torch.maximum(a.hi, b.hi), a.nan | b.nan)


def intersect(a: Iv, lo, hi) -> Iv:
    return Iv(torch.maximum(a.lo, lo), torch.minimum(a.hi, hi), a.nan)


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
    ps = [a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi]
    return [torch.where(torch.isnan(p), 0.0, p) for p in ps]  # 0 * inf: 0 exactly


def mul2(a: Iv, b: Iv) -> Iv:
    ps = _products(a, b)
    lo = down(torch.minimum(torch.minimum(ps[0], ps[1]), torch.minimum(ps[2], ps[3])))
    hi = up(torch.maximum(torch.maximum(ps[0], ps[1]), torch.maximum(ps[2], ps[3])))
    return finish(lo, hi, a.nan | b.nan, empty_of(a) | empty_of(b))


def mul(*xs: Iv) -> Iv:
    acc = xs[0]
    for b in xs[1:]:
        acc = mul2(acc, b)
    return acc


def _quotient(a: Iv, blo, bhi):
    """``a / [blo, bhi]`` for a divisor interval not containing 0 (corners)."""
    qs = [a.lo / blo, a.lo / bhi, a.hi / blo, a.hi / bhi]
    lo = torch.minimum(torch.minimum(qs[0], qs[1]), torch.minimum(qs[2], qs[3]))
    hi = torch.maximum(torch.maximum(qs[0], qs[1]), torch.maximum(qs[2], qs[3]))
    nanq = torch.isnan(lo) | torch.isnan(hi)  # inf / inf: unbounded both ways
    return down(torch.where(nanq, -inf, lo)), up(torch.where(nanq, inf, hi))


def div(a: Iv, b: Iv) -> Iv:
    """``a / b``; NaN where ``b`` may be 0 (the point semantics), unbounded near it."""
    zero_in = (b.lo <= 0) & (b.hi >= 0)
    lo, hi = _quotient(a, torch.where(zero_in, 1.0, b.lo), torch.where(zero_in, 1.0, b.hi))
    # divisor touching 0 from one side, numerator of one sign: a half-line
    pos_b = (b.lo == 0) & (b.hi > 0)
    neg_b = (b.hi == 0) & (b.lo < 0)
    a_pos, a_neg = a.lo >= 0, a.hi <= 0
    half_lo = torch.where(a_pos, down(a.lo / torch.where(pos_b, b.hi, 1.0)), -inf)
    half_hi = torch.where(a_neg, up(a.hi / torch.where(pos_b, b.hi, 1.0)), inf)
    nhalf_lo = torch.where(a_neg, down(a.hi / torch.where(neg_b, b.lo, 1.0)), -inf)
    nhalf_hi = torch.where(a_pos, up(a.lo / torch.where(neg_b, b.lo, 1.0)), inf)
    lo = torch.where(zero_in, torch.where(pos_b, half_lo, torch.where(neg_b, nhalf_lo, -inf)),
                     lo)
    hi = torch.where(zero_in, torch.where(pos_b, half_hi, torch.where(neg_b, nhalf_hi, inf)),
                     hi)
    only_zero = (b.lo == 0) & (b.hi == 0)
    empty = empty_of(a) | empty_of(b) | only_zero
    return finish(lo, hi, a.nan | b.nan | zero_in, empty)


def recip(a: Iv) -> Iv:
    return div(point(1.0, a.lo), a)


def sqrt(a: Iv) -> Iv:
    lo = down(torch.sqrt(torch.clamp(a.lo, min=0.0)))
    hi = up(torch.sqrt(torch.clamp(a.hi, min=0.0)))
    return finish(torch.clamp(lo, min=0.0), hi, a.nan | (a.lo < 0), empty_of(a) | (a.hi < 0))


def _powi_mag(x, n: int):
    r = None
    base = x
    k = n
    while k:
        if k & 1:
            r = base if r is None else r * base
        k >>= 1
        if k:
            base = base * base
    return r


def powi(a: Iv, n: int) -> Iv:
    """``a ** n`` for an integer ``n >= 2`` (even: the minimum is 0 when 0 is inside)."""
    lo_p, hi_p = _powi_mag(a.lo, n), _powi_mag(a.hi, n)
    if n % 2:
        lo, hi = wdown(lo_p, n), wup(hi_p, n)
    else:
        mlo = torch.where(a.lo >= 0, lo_p, torch.where(a.hi <= 0, hi_p, 0.0))
        mhi = torch.maximum(lo_p, hi_p)
        lo = torch.clamp(wdown(mlo, n), min=0.0)
        hi = wup(mhi, n)
    return finish(lo, hi, a.nan, empty_of(a))


def powf(a: Iv, e: float) -> Iv:
    """``a ** e`` for a non-integer constant ``e`` (real branch: ``a >= 0``, ``a > 0`` if
    ``e < 0``)."""
    if e > 0:
        lo = wdown((torch.clamp(a.lo, min=0.0) + 0.0) ** e)
        hi = wup((torch.clamp(a.hi, min=0.0) + 0.0) ** e)
        nan = a.nan | (a.lo < 0)
        empty = empty_of(a) | (a.hi < 0)
    else:
        lo = wdown((torch.clamp(a.hi, min=0.0) + 0.0) ** e)  # decreasing; 0 ** -e = inf
        hi = wup((torch.clamp(a.lo, min=0.0) + 0.0) ** e)
        nan = a.nan | (a.lo <= 0)
        empty = empty_of(a) | (a.hi <= 0)
    return finish(torch.clamp(lo, min=0.0), hi, nan, empty)


def _increasing(fn, a: Iv, dom_lo=-inf, dom_hi=inf, open_lo=False, open_hi=False,
                rng=(-inf, inf)) -> Iv:
    """A continuous increasing function on ``[dom_lo, dom_hi]`` (NaN outside)."""
    lo_in = torch.clamp(a.lo, min=dom_lo, max=dom_hi) + 0.0  # -0.0 -> +0.0
    hi_in = torch.clamp(a.hi, min=dom_lo, max=dom_hi) + 0.0
    out_lo = (a.lo <= dom_lo) if open_lo else (a.lo < dom_lo)
    out_hi = (a.hi >= dom_hi) if open_hi else (a.hi > dom_hi)
    none_lo = (a.hi <= dom_lo) if open_lo else (a.hi < dom_lo)
    none_hi = (a.lo >= dom_hi) if open_hi else (a.lo > dom_hi)
    lo = torch.clamp(wdown(fn(lo_in)), min=rng[0], max=rng[1])
    hi = torch.clamp(wup(fn(hi_in)), min=rng[0], max=rng[1])
    return finish(lo, hi, a.nan | out_lo | out_hi, empty_of(a) | none_lo | none_hi)


def _decreasing(fn, a: Iv, dom_lo=-inf, dom_hi=inf, rng=(-inf, inf)) -> Iv:
    lo_in = torch.clamp(a.lo, min=dom_lo, max=dom_hi) + 0.0  # -0.0 -> +0.0
    hi_in = torch.clamp(a.hi, min=dom_lo, max=dom_hi) + 0.0
    lo = torch.clamp(wdown(fn(hi_in)), min=rng[0], max=rng[1])
    hi = torch.clamp(wup(fn(lo_in)), min=rng[0], max=rng[1])
    nan = a.nan | (a.lo < dom_lo) | (a.hi > dom_hi)
    return finish(lo, hi, nan, empty_of(a) | (a.hi < dom_lo) | (a.lo > dom_hi))


def exp(a):
    return _increasing(torch.exp, a, rng=(0.0, inf))


def log(a):
    # log(0) is NaN in the point semantics (sympy's zoo); log(tiny) -> large negative
    return _increasing(torch.log, a, dom_lo=0.0, open_lo=True)


def rsqrt(a):
    return _decreasing(torch.rsqrt, Iv(a.lo, a.hi, a.nan | (a.lo <= 0)), dom_lo=0.0,
                       rng=(0.0, inf))._replace(nan=a.nan | (a.lo <= 0))


def atan(a):
    return _increasing(torch.atan, a, rng=(-2.0, 2.0))


def sinh(a):
    return _increasing(torch.sinh, a)


def tanh(a):
    return _increasing(torch.tanh, a, rng=(-1.0, 1.0))


def asinh(a):
    return _increasing(torch.asinh, a)


def asin(a):
    return _increasing(torch.asin, a, -1.0, 1.0, rng=(-2.0, 2.0))


def acos(a):
    return _decreasing(torch.acos, a, -1.0, 1.0, rng=(0.0, 4.0))


def acosh(a):
    return _increasing(torch.acosh, a, 1.0, rng=(0.0, inf))


def atanh(a):
    return _increasing(torch.atanh, a, -1.0, 1.0)


def cosh(a):
    mlo = torch.where(a.lo >= 0, a.lo, torch.where(a.hi <= 0, -a.hi, 0.0))
    mhi = torch.maximum(torch.abs(a.lo), torch.abs(a.hi))
    lo = torch.clamp(wdown(torch.cosh(mlo)), min=1.0)
    return finish(lo, wup(torch.cosh(mhi)), a.nan, empty_of(a))


def abs(a):  # noqa: A001 - the generated code's name
    lo = torch.where(a.lo >= 0, a.lo, torch.where(a.hi <= 0, -a.hi, 0.0))
    hi = torch.maximum(torch.abs(a.lo), torch.abs(a.hi))
    return finish(lo, hi, a.nan, empty_of(a))


def floor(a):
    return finish(torch.floor(a.lo), torch.floor(a.hi), a.nan, empty_of(a))


def ceil(a):
    return finish(torch.ceil(a.lo), torch.ceil(a.hi), a.nan, empty_of(a))


def sign(a):
    return finish(torch.sign(a.lo), torch.sign(a.hi), a.nan, empty_of(a))


_BIG = 2.0 ** 40  # beyond this, argument reduction is not trusted: full range


def _hits(a, b, phase: float, period: float):
    """Conservatively: does ``[a, b]`` contain ``phase + k * period`` for an integer k?"""
    ka = (a - phase) / period
    kb = (b - phase) / period
    margin = 1e-9 * (1.0 + torch.abs(ka) + torch.abs(kb))
    return torch.floor(kb + margin) >= torch.ceil(ka - margin)


def _periodic(fn, a: Iv, max_at: float, min_at: float) -> Iv:
    """``sin``/``cos``: endpoint values, +-1 where an extremum may lie in the box."""
    full = ~(torch.isfinite(a.lo) & torch.isfinite(a.hi)) | (a.hi - a.lo >= 6.0) | \
        (torch.abs(a.lo) > _BIG) | (torch.abs(a.hi) > _BIG)
    lo_in = torch.where(full, 0.0, a.lo)
    hi_in = torch.where(full, 0.0, a.hi)
    fa, fb = fn(lo_in), fn(hi_in)
    lo = wdown(torch.minimum(fa, fb))
    hi = wup(torch.maximum(fa, fb))
    two_pi = 2 * math.pi
    hi = torch.where(full | _hits(lo_in, hi_in, max_at, two_pi), 1.0, torch.clamp(hi, max=1.0))
    lo = torch.where(full | _hits(lo_in, hi_in, min_at, two_pi), -1.0,
                     torch.clamp(lo, min=-1.0))
    return finish(lo, hi, a.nan, empty_of(a))


def sin(a):
    return _periodic(torch.sin, a, math.pi / 2, -math.pi / 2)


def cos(a):
    return _periodic(torch.cos, a, 0.0, math.pi)


def tan(a):
    full = ~(torch.isfinite(a.lo) & torch.isfinite(a.hi)) | (a.hi - a.lo >= 3.0) | \
        (torch.abs(a.lo) > _BIG) | (torch.abs(a.hi) > _BIG)
    lo_in = torch.where(full, 0.0, a.lo)
    hi_in = torch.where(full, 0.0, a.hi)
    pole = full | _hits(lo_in, hi_in, math.pi / 2, math.pi)
    lo = torch.where(pole, -inf, wdown(torch.tan(lo_in)))
    hi = torch.where(pole, inf, wup(torch.tan(hi_in)))
    return finish(lo, hi, a.nan, empty_of(a))


def pow(a: Iv, b: Iv) -> Iv:  # noqa: A001
    """``a ** b`` with a symbolic exponent: ``exp(b log a)`` for ``a > 0``, else unbounded."""
    pos = a.lo > 0
    e = exp(mul2(b, log(Iv(torch.where(pos, a.lo, 1.0), torch.where(pos, a.hi, 1.0),
                           a.nan))))
    lo = torch.where(pos, e.lo, -inf)
    hi = torch.where(pos, e.hi, inf)
    return finish(lo, hi, a.nan | b.nan | ~pos | e.nan, empty_of(a) | empty_of(b))


def atan2(y: Iv, x: Iv) -> Iv:
    """Corners where the box avoids the origin and the branch cut (x <= 0, y = 0)."""
    cut = (x.lo <= 0) & (y.lo <= 0) & (y.hi >= 0)
    cs = [torch.atan2(yy, xx) for yy in (y.lo, y.hi) for xx in (x.lo, x.hi)]
    lo = wdown(torch.minimum(torch.minimum(cs[0], cs[1]), torch.minimum(cs[2], cs[3])))
    hi = wup(torch.maximum(torch.maximum(cs[0], cs[1]), torch.maximum(cs[2], cs[3])))
    pi_hi = up(torch.full_like(lo, math.pi))
    lo = torch.where(cut, -pi_hi, lo)
    hi = torch.where(cut, pi_hi, hi)
    origin = (x.lo <= 0) & (x.hi >= 0) & (y.lo <= 0) & (y.hi >= 0)
    return finish(lo, hi, x.nan | y.nan | origin, empty_of(x) | empty_of(y))


def mod(a: Iv, b: Iv) -> Iv:
    """sympy ``Mod``: ``[0, b)`` for ``b > 0``, ``(b, 0]`` for ``b < 0``; exact shift
    when a point divisor leaves the quotient's floor constant."""
    pointb = b.lo == b.hi
    safe_b = torch.where(pointb & (b.lo != 0), b.lo, 1.0)
    qa, qb = torch.floor(a.lo / safe_b), torch.floor(a.hi / safe_b)
    k = torch.minimum(qa, qb)
    sh = sub(a, mul2(point(k, a.lo), point(safe_b, a.lo)))
    # the shift is exact when a - k*b lies in [0, b) (b > 0) or (b, 0] (b < 0) throughout
    inside = torch.where(safe_b > 0, (sh.lo >= 0) & (sh.hi < safe_b),
                         (sh.hi <= 0) & (sh.lo > safe_b))
    same = pointb & (qa == qb) & torch.isfinite(qa) & (b.lo != 0) & inside
    lo = torch.where(b.lo > 0, 0.0, torch.where(b.hi < 0, down(b.lo), torch.clamp(b.lo, max=0.0)))
    hi = torch.where(b.lo > 0, up(b.hi), torch.where(b.hi < 0, 0.0, torch.clamp(b.hi, min=0.0)))
    lo = torch.where(same, torch.maximum(sh.lo, lo), lo)
    hi = torch.where(same, torch.minimum(sh.hi, hi), hi)
    zero_in = (b.lo <= 0) & (b.hi >= 0)
    return finish(lo, hi, a.nan | b.nan | zero_in, empty_of(a) | empty_of(b))


def minimum(a: Iv, b: Iv) -> Iv:
    return finish(torch.minimum(a.lo, b.lo), torch.minimum(a.hi, b.hi), a.nan | b.nan,
                  empty_of(a) | empty_of(b))


def maximum(a: Iv, b: Iv) -> Iv:
    return finish(torch.maximum(a.lo, b.lo), torch.maximum(a.hi, b.hi), a.nan | b.nan,
                  empty_of(a) | empty_of(b))
