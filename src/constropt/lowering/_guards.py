"""The point runtimes' functions of the function table, guarded by their domains.

:func:`guarded` is the "double where" both runtimes use: a lane outside a function's
domain feeds a harmless value to the function and is then replaced by NaN, so the
function never sees an argument outside its domain and its own gradient stays finite
there.  :func:`point_functions` builds the runtime function of every row of
:mod:`._functions` for one array library (NumPy or torch).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from typing import NamedTuple

import numpy as np

from ._functions import FUNCTION, NODE_FUNCTIONS, Domain

__all__ = ["guarded", "point_functions", "powi"]

inf = math.inf
nan = math.nan


def _every(m) -> bool:
    """Whether every lane of the NumPy mask ``m`` (an array, a NumPy or Python bool)
    holds.  One lane is read as it is (``ndarray.all`` costs 2.4 us on one element,
    ``bool`` 0.1 us); up to 4,096 lanes are counted (0.9 us, where ``all`` goes through
    the reduction machinery); more go to ``all`` (twice as fast as counting there)."""
    size = getattr(m, "size", 1)
    if size == 1:
        return bool(m)
    if size <= 4096:
        return np.count_nonzero(m) == size
    return bool(m.all())


def guarded(where, fn, ok, safe, canonical=None, coerce=None, fast=False):
    """``fn`` where ``ok`` holds, NaN elsewhere, with the inputs of the dead lanes
    replaced by ``safe`` first ("double where": ``fn`` never sees an argument outside
    its domain, so neither its value nor its gradient is poisoned there).

    One argument: ``ok`` a :class:`Domain` (its comparisons written inline: the point
    runtimes call these functions once per operation) or a mask function, ``safe`` a
    number.  Two: ``ok(a, b)``, ``safe`` a pair (None passes the argument as it is),
    ``canonical(a, b)`` applied to the guarded arguments, ``coerce(a, b)`` to the
    arguments first (torch: Python numbers become tensors).

    ``fast`` (the NumPy runtime): where every lane is inside the domain, ``fn`` of the
    arguments as they are, the same values without the three selects (a local solve
    calls these on one point at a time: ``div`` there cost 7.5 us guarded, 1.1 us bare).
    Not for torch: the test is data-dependent control flow, which ``torch.compile``
    would break its graph on.
    """
    if not isinstance(safe, tuple):
        if not isinstance(ok, Domain):
            def one(a):
                m = ok(a)
                if fast and _every(m):
                    return fn(a)
                return where(m, fn(where(m, a, safe)), nan)
            return one
        return _domain_guard(where, fn, ok, safe, fast)
    s0, s1 = safe

    def two(a, b):
        if coerce is not None:
            a, b = coerce(a, b)
        m = ok(a, b)
        if fast and _every(m):
            if canonical is not None:
                a, b = canonical(a, b)
            return fn(a, b)
        if s0 is not None:
            a = where(m, a, s0)
        if s1 is not None:
            b = where(m, b, s1)
        if canonical is not None:
            a, b = canonical(a, b)
        return where(m, fn(a, b), nan)
    return two


def _domain_guard(where, fn, domain: Domain, safe, fast=False):
    lo, hi, open_lo, open_hi = domain
    if hi == inf and open_lo:
        def above_open(a):
            m = a > lo
            if fast and _every(m):
                return fn(a)
            return where(m, fn(where(m, a, safe)), nan)
        return above_open
    if hi == inf:
        def above(a):
            m = a >= lo
            if fast and _every(m):
                return fn(a)
            return where(m, fn(where(m, a, safe)), nan)
        return above
    if lo == -inf or open_lo or open_hi:  # the other shapes: through the mask
        mask = domain.mask()

        def inside_mask(a):
            m = mask(a)
            if fast and _every(m):
                return fn(a)
            return where(m, fn(where(m, a, safe)), nan)
        return inside_mask

    def inside(a):
        m = (a >= lo) & (a <= hi)
        if fast and _every(m):
            return fn(a)
        return where(m, fn(where(m, a, safe)), nan)
    return inside


class _Runtime(NamedTuple):
    where: Callable
    isnan: Callable


def point_functions(where, raw_of, coerce=None, fast=False) -> dict:
    """``{runtime name: point function}`` of every node row, for one array library.

    ``where`` is the library's three-argument select, ``raw_of(row)`` the row's array
    function (or None), ``coerce(a, b)`` makes the arguments of a two-argument function
    something the library takes (torch: Python numbers become tensors); a row whose
    torch spelling is a builder takes Python numbers itself; ``fast``: see
    :func:`guarded` (NumPy only).
    """
    rt = _Runtime(where, raw_of(FUNCTION["isnan"]))
    out = {}
    for f in NODE_FUNCTIONS:
        raw = raw_of(f)
        pair = coerce if f.arity != 1 and not callable(f.torch) else None
        if f.point is not None:
            fn = partial(f.point, rt, raw)
            if pair is not None:
                fn = _coerced(fn, pair)
        elif f.domain is not None:
            fn = guarded(where, raw, f.domain, f.safe, f.canonical, pair, fast)
        else:
            fn = raw
        out[f.runtime_name] = fn
    return out


def _coerced(fn, coerce):
    def coerced(a, b):
        return fn(*coerce(a, b))
    return coerced


def powi(a, n: int):
    """``a ** n`` for an integer ``n >= 2`` as a chain of multiplications (square and
    multiply), for NumPy arrays and torch tensors alike: both runtimes call it."""
    result = None
    base = a
    while n:
        if n & 1:
            result = base if result is None else result * base
        n >>= 1
        if n:
            base = base * base
    return result
