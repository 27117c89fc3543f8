"""The interval rules the function table's rows are written with.

A row of :mod:`._functions` gives its inclusion function as ``interval(r, f, *args)``
and its preimage rule as ``inverse(r, t, *cur)``, with this module as ``r``: the kinds
of function below (increasing, decreasing, even, periodic, with poles, steps), the
inclusion functions of :mod:`._rt_interval` and :mod:`._rt_interval_logic` they name,
and the preimage helpers of bound propagation.  :func:`fn` is a row's inclusion
function by name.  The conventions (enclosures, outward rounding) are those of
:mod:`._rt_interval`.
"""

from __future__ import annotations

import math
import sys

from ._functions import ENTIRE, FUNCTION
from ._interval_ops import ops
from ._rt_interval import (  # noqa: F401 - rules the rows name
    TRANS_ULPS,
    Iv,
    empty_of,
    finish,
    mul2,
    powi,
    sqrt,
    wdown,
    wup,
)
from ._rt_interval_logic import atan2, heaviside, isnan, maximum, minimum, mod  # noqa: F401

__all__ = ["fn", "increasing", "decreasing", "even", "magnitude", "steps", "periodic",
           "poles", "pow", "plain", "clamped", "beyond", "piece", "even_preimage",
           "even_inverse", "at_least", "at_most"]

inf = math.inf
_RULES = sys.modules[__name__]


def fn(name: str, *args):
    """The inclusion function of the table's row ``name`` at ``args``."""
    f = FUNCTION[name]
    return f.interval(_RULES, f, *args)


# -- kinds of function -------------------------------------------------------------------
def increasing(f, a: Iv, rng=(-inf, inf), ulps: float = TRANS_ULPS) -> Iv:
    """A continuous increasing function on its domain (NaN outside), its result widened
    by ``ulps`` and clamped to ``rng``."""
    xp = ops(a.lo)
    dom_lo, dom_hi, open_lo, open_hi = f.domain or ENTIRE
    lo_in = xp.clamp(a.lo, min=dom_lo, max=dom_hi) + 0.0  # -0.0 -> +0.0
    hi_in = xp.clamp(a.hi, min=dom_lo, max=dom_hi) + 0.0
    out_lo = (a.lo <= dom_lo) if open_lo else (a.lo < dom_lo)
    out_hi = (a.hi >= dom_hi) if open_hi else (a.hi > dom_hi)
    none_lo = (a.hi <= dom_lo) if open_lo else (a.hi < dom_lo)
    none_hi = (a.lo >= dom_hi) if open_hi else (a.lo > dom_hi)
    raw = getattr(xp, f.name)
    lo = xp.clamp(wdown(raw(lo_in), ulps), min=rng[0], max=rng[1])
    hi = xp.clamp(wup(raw(hi_in), ulps), min=rng[0], max=rng[1])
    return finish(lo, hi, a.nan | out_lo | out_hi, empty_of(a) | none_lo | none_hi)


def decreasing(f, a: Iv, rng=(-inf, inf)) -> Iv:
    """A continuous decreasing function on its domain.  An open end makes a box that
    touches it NaN; the box is empty only beyond it (the unbounded end of ``1/sqrt``
    at 0 stays in the enclosure)."""
    xp = ops(a.lo)
    dom_lo, dom_hi, open_lo, open_hi = f.domain or ENTIRE
    lo_in = xp.clamp(a.lo, min=dom_lo, max=dom_hi) + 0.0  # -0.0 -> +0.0
    hi_in = xp.clamp(a.hi, min=dom_lo, max=dom_hi) + 0.0
    raw = getattr(xp, f.name)
    lo = xp.clamp(wdown(raw(hi_in)), min=rng[0], max=rng[1])
    hi = xp.clamp(wup(raw(lo_in)), min=rng[0], max=rng[1])
    out_lo = (a.lo <= dom_lo) if open_lo else (a.lo < dom_lo)
    out_hi = (a.hi >= dom_hi) if open_hi else (a.hi > dom_hi)
    nan = a.nan | out_lo | out_hi
    return finish(lo, hi, nan, empty_of(a) | (a.hi < dom_lo) | (a.lo > dom_hi))


def _magnitudes(a: Iv):
    xp = ops(a.lo)
    mlo = xp.where(a.lo >= 0, a.lo, xp.where(a.hi <= 0, -a.hi, 0.0))
    return mlo, xp.maximum(xp.abs(a.lo), xp.abs(a.hi))


def magnitude(a: Iv) -> Iv:
    """``|a|``, exactly."""
    return finish(*_magnitudes(a), a.nan, empty_of(a))


def even(f, a: Iv, at_zero: float) -> Iv:
    """An even function increasing in ``|a|`` from ``at_zero`` (``cosh``)."""
    xp = ops(a.lo)
    mlo, mhi = _magnitudes(a)
    raw = getattr(xp, f.name)
    lo = xp.clamp(wdown(raw(mlo)), min=at_zero)
    return finish(lo, wup(raw(mhi)), a.nan, empty_of(a))


def steps(f, a: Iv) -> Iv:
    """A non-decreasing function computed exactly (``floor``, ``ceil``, ``sign``)."""
    raw = getattr(ops(a.lo), f.name)
    return finish(raw(a.lo), raw(a.hi), a.nan, empty_of(a))


_BIG = 2.0 ** 40  # beyond this, argument reduction is not trusted: full range


def _hits(a, b, phase: float, period: float):
    """Conservatively: does ``[a, b]`` contain ``phase + k * period`` for an integer k?

    ``ka``, ``kb`` are computed in the boxes' dtype: a subtraction, a division and the
    rounded ``phase``/``period`` put a few ulps of error on them, so the margin is eight
    machine epsilons of that dtype (1e-9 at least) relative to their size; in float32 a
    pole just inside a box's end was otherwise missed."""
    xp = ops(a)
    ka = (a - phase) / period
    kb = (b - phase) / period
    margin = max(1e-9, 8.0 * float(xp.finfo(a).eps)) * (1.0 + xp.abs(ka) + xp.abs(kb))
    return xp.floor(kb + margin) >= xp.ceil(ka - margin)


def _unreduced(a: Iv, width: float):
    """Boxes too wide, unbounded or too far out for argument reduction."""
    xp = ops(a.lo)
    return ~(xp.isfinite(a.lo) & xp.isfinite(a.hi)) | (a.hi - a.lo >= width) | \
        (xp.abs(a.lo) > _BIG) | (xp.abs(a.hi) > _BIG)


def periodic(f, a: Iv, max_at: float, min_at: float) -> Iv:
    """Period ``2 pi``, range ``[-1, 1]`` (``sin``, ``cos``): the values at the ends,
    +-1 where a maximum (``max_at + 2 k pi``) or minimum may lie in the box."""
    xp = ops(a.lo)
    full = _unreduced(a, 6.0)
    lo_in = xp.where(full, 0.0, a.lo)
    hi_in = xp.where(full, 0.0, a.hi)
    raw = getattr(xp, f.name)
    fa, fb = raw(lo_in), raw(hi_in)
    lo = wdown(xp.minimum(fa, fb))
    hi = wup(xp.maximum(fa, fb))
    two_pi = 2 * math.pi
    hi = xp.where(full | _hits(lo_in, hi_in, max_at, two_pi), 1.0, xp.clamp(hi, max=1.0))
    lo = xp.where(full | _hits(lo_in, hi_in, min_at, two_pi), -1.0, xp.clamp(lo, min=-1.0))
    return finish(lo, hi, a.nan, empty_of(a))


def poles(f, a: Iv, at: float, period: float) -> Iv:
    """Increasing between poles at ``at + k period`` (``tan``): the whole line where a
    pole may lie in the box."""
    xp = ops(a.lo)
    full = _unreduced(a, float(math.floor(period)))
    lo_in = xp.where(full, 0.0, a.lo)
    hi_in = xp.where(full, 0.0, a.hi)
    pole = full | _hits(lo_in, hi_in, at, period)
    raw = getattr(xp, f.name)
    lo = xp.where(pole, -inf, wdown(raw(lo_in)))
    hi = xp.where(pole, inf, wup(raw(hi_in)))
    return finish(lo, hi, a.nan, empty_of(a))


def pow(a: Iv, b: Iv) -> Iv:  # noqa: A001
    """``a ** b`` with a symbolic exponent: ``exp(b log a)`` for ``a > 0``, else unbounded."""
    xp = ops(a.lo)
    pos = a.lo > 0
    e = fn("exp", mul2(b, fn("log", Iv(xp.where(pos, a.lo, 1.0), xp.where(pos, a.hi, 1.0),
                                       a.nan))))
    lo = xp.where(pos, e.lo, -inf)
    hi = xp.where(pos, e.hi, inf)
    return finish(lo, hi, a.nan | b.nan | ~pos | e.nan, empty_of(a) | empty_of(b))


# -- preimages (bound propagation) ---------------------------------------------------------
def plain(t: Iv) -> Iv:
    """The target's range, as an enclosure that is never NaN."""
    return Iv(t.lo, t.hi, ops(t.lo).false_like(t.lo))


def clamped(t: Iv, lo=None, hi=None) -> Iv:
    """The target's range with its lower end raised to ``lo`` and its upper end lowered
    to ``hi`` (None: as it is)."""
    xp = ops(t.lo)
    return Iv(t.lo if lo is None else xp.clamp(t.lo, min=lo),
              t.hi if hi is None else xp.clamp(t.hi, max=hi), xp.false_like(t.lo))


def beyond(t: Iv, pre: Iv, lo=None, hi=None) -> Iv:
    """The preimage ``pre`` of an increasing function whose range is ``(lo, hi)``: a
    target reaching ``lo`` (``hi``) leaves the argument unbounded below (above)."""
    xp = ops(t.lo)
    return Iv(pre.lo if lo is None else xp.where(t.lo <= lo, -inf, pre.lo),
              pre.hi if hi is None else xp.where(t.hi >= hi, inf, pre.hi), t.nan)


def piece(t: Iv, cur: Iv, inverse: str, lo_ok: float, hi_ok: float) -> Iv:
    """The preimage on one monotone piece ``[lo_ok, hi_ok]`` of ``sin``/``cos`` (range
    ``[-1, 1]``, inverse the row ``inverse``), where the argument ``cur`` lies in it
    (the floats pi/2 and pi are below the true values)."""
    xp = ops(t.lo)
    inside = (cur.lo >= lo_ok) & (cur.hi <= hi_ok)
    tc = Iv(xp.clamp(t.lo, min=-1.0, max=1.0), xp.clamp(t.hi, min=-1.0, max=1.0),
            xp.false_like(t.lo))
    r = fn(inverse, tc)
    empty = (t.lo > 1) | (t.hi < -1)
    lo = xp.where(inside, xp.where(empty, inf, r.lo), -inf)
    hi = xp.where(inside, xp.where(empty, -inf, r.hi), inf)
    return Iv(lo, hi, t.nan)


def even_preimage(cur: Iv, inner_lo, inner_hi) -> Iv:
    """``[-hi, -lo] U [lo, hi]`` intersected with ``cur``, as one interval."""
    xp = ops(cur.lo)
    nlo, nhi = xp.maximum(-inner_hi, cur.lo), xp.minimum(-inner_lo, cur.hi)
    plo, phi = xp.maximum(inner_lo, cur.lo), xp.minimum(inner_hi, cur.hi)
    neg_ok, pos_ok = nlo <= nhi, plo <= phi
    lo = xp.where(neg_ok, nlo, xp.where(pos_ok, plo, inf))
    hi = xp.where(pos_ok, phi, xp.where(neg_ok, nhi, -inf))
    return Iv(lo, hi, cur.nan)


def even_inverse(t: Iv, cur: Iv, inverse: str, at_zero: float) -> Iv:
    """The preimage under an even function increasing in ``|x|`` from ``at_zero``,
    whose inverse on ``x >= 0`` is the row ``inverse`` (``cosh``: ``acosh``)."""
    xp = ops(t.lo)
    r = fn(inverse, Iv(xp.clamp(t.lo, min=at_zero), xp.clamp(t.hi, min=at_zero),
                       xp.false_like(t.lo)))
    ilo = xp.where(t.lo > at_zero, r.lo, 0.0)
    ihi = xp.where(t.hi >= at_zero, r.hi, -inf)
    return even_preimage(cur, xp.clamp(ilo, min=0.0), ihi)


def at_least(t: Iv) -> Iv:
    """Every argument of a ``Min`` is at least its value."""
    return Iv(t.lo, ops(t.lo).full_like(t.lo, inf), t.nan)


def at_most(t: Iv) -> Iv:
    """Every argument of a ``Max`` is at most its value."""
    return Iv(ops(t.hi).full_like(t.hi, -inf), t.hi, t.nan)
