"""Arb ball values with sympy's semantics: the operations of the rigorous evaluator.

Every value is an Arb ball (python-flint) that contains the exact real value, the
sentinel :data:`UNDEF` (certainly undefined: sympy gives ``nan``, ``zoo`` or a complex
number), or the NaN ball (unknown: the ball cannot settle it, e.g. ``log`` of a ball
straddling 0).  Booleans are ``True``, ``False``, ``None`` (unknown) or ``UNDEF``.
Each operation decides its domain from the balls (``log`` needs a ball certainly
``> 0``), so an enclosure is never produced for a value that might be undefined.  The
rules of the functions are their rows' ``ball`` in the function table
(:mod:`constropt.lowering._functions`), applied inside the rows' domains.
"""

from __future__ import annotations

import math
import sys
from contextlib import contextmanager

import sympy as sp

from ..lowering._functions import FUNCTIONS, Domain

__all__ = ["UNDEF", "working_precision", "compare", "flint_module", "FUNCS", "CMPS", "LOGIC",
           "constant", "nan", "strict", "add", "mul", "powi", "pow_const", "pow_var",
           "piecewise", "recip", "hull"]


class _Undef:
    """Certainly undefined (sympy: nan, zoo or a complex value)."""

    def __repr__(self) -> str:
        return "UNDEF"


UNDEF = _Undef()
inf = math.inf


def flint_module():
    import flint  # lazy: python-flint loads in a sixth of a second, and only a rigorous
    # check (a minority of the uses of a problem) evaluates balls

    return flint


@contextmanager
def working_precision(bits: int):
    """Set Arb's working precision (a process-wide setting) for the block."""
    ctx = flint_module().ctx
    old = ctx.prec
    ctx.prec = int(bits)
    try:
        yield
    finally:
        ctx.prec = old


def nan():
    return flint_module().arb.nan()


# -- three-valued helpers ------------------------------------------------------------------
def compare(op: str, a, b):
    if a is UNDEF or b is UNDEF:
        return UNDEF
    if op == "<":
        return True if a < b else (False if a >= b else None)
    if op == "<=":
        return True if a <= b else (False if a > b else None)
    if op == ">":
        return True if a > b else (False if a <= b else None)
    if op == ">=":
        return True if a >= b else (False if a < b else None)
    if op == "==":
        return True if a == b else (False if a != b else None)
    return False if a == b else (True if a != b else None)  # "!="


def _and(*v):
    if any(a is UNDEF for a in v):
        return UNDEF
    if any(a is False for a in v):
        return False
    return True if all(a is True for a in v) else None


def _or(*v):
    if any(a is UNDEF for a in v):
        return UNDEF
    if any(a is True for a in v):
        return True
    return False if all(a is False for a in v) else None


def _not(a):
    return a if a is UNDEF or a is None else (not a)


def _xor(*v):
    if any(a is UNDEF for a in v):
        return UNDEF
    if any(a is None for a in v):
        return None
    return sum(map(bool, v)) % 2 == 1


def hull(values):
    """Smallest ball holding every value (UNDEF among defined ones: unknown)."""
    if all(v is UNDEF for v in values):
        return UNDEF
    if any(v is UNDEF for v in values):
        return nan()
    out = values[0]
    for v in values[1:]:
        out = out.union(v)
    return out


def piecewise(*vc):
    """``vc`` = (value, condition, value, condition, ...) in sympy's order."""
    outcomes = []
    for k in range(0, len(vc), 2):
        val, cond = vc[k], vc[k + 1]
        if cond is UNDEF:
            outcomes.append(UNDEF)
            return hull(outcomes)
        if cond is True:
            outcomes.append(val)
            return hull(outcomes)
        if cond is None:
            outcomes.append(val)
    outcomes.append(UNDEF)  # no branch matches: undefined, as in the lowering
    return hull(outcomes)


# -- arithmetic with sympy's domains ---------------------------------------------------------
def strict(fn):
    def wrapped(*args):
        for a in args:
            if a is UNDEF:
                return UNDEF
        try:
            return fn(*args)
        except (ArithmeticError, ValueError, TypeError, OverflowError):
            return nan()
    return wrapped


def add(*a):
    out = a[0]
    for v in a[1:]:
        out = out + v
    return out


def mul(*a):
    out = a[0]
    for v in a[1:]:
        out = out * v
    return out


def recip(a):
    if a == 0:
        return UNDEF  # zoo
    if not (a != 0):
        return nan()
    return 1 / a


def powi(a, n: int):
    if n >= 0:
        return a ** n
    r = recip(a)
    return r if r is UNDEF else r ** (-n)


def pow_const(a, r, half: bool):
    """``a ** r`` for a constant non-integer exponent ``r`` (an arb)."""
    if a > 0:
        return a.sqrt() if half else a ** r
    if a == 0:
        return UNDEF if r < 0 else a  # 0**(-r): zoo; 0**r: 0
    if a < 0:
        return UNDEF  # a complex principal root
    return nan()


def pow_var(a, b):
    """``a ** b`` with a variable exponent."""
    arb = flint_module().arb
    if a > 0:
        return a ** b
    if b.is_exact() and b.is_integer():
        if a == 0 and b == 0:
            return arb(1)  # sympy: 0**0 == 1
        return powi(a, int(b.unique_fmpz()))
    if a == 0 and b > 0:
        return a
    if a == 0 and b < 0:
        return UNDEF
    if a < 0 and not b.contains_integer():
        return UNDEF
    return nan()


def _within(domain: Domain, fn):
    """``fn`` where the ball is certainly inside ``domain``; UNDEF where it is certainly
    outside (sympy: complex or undefined), the NaN ball where it cannot tell."""
    lo, hi, open_lo, open_hi = domain

    def inside(a) -> bool:
        return ((lo == -inf or (a > lo if open_lo else a >= lo))
                and (hi == inf or (a < hi if open_hi else a <= hi)))

    def outside(a) -> bool:
        return ((lo != -inf and (a <= lo if open_lo else a < lo))
                or (hi != inf and (a >= hi if open_hi else a > hi)))

    def within(a):
        if inside(a):
            return fn(a)
        return UNDEF if outside(a) else nan()
    return within


def _rule(f):
    """The ball rule of the table's row ``f``."""
    if isinstance(f.ball, str):
        method = f.ball
        fn = lambda a: getattr(a, method)()  # noqa: E731
    else:
        rule, module = f.ball, sys.modules[__name__]
        fn = lambda *a: rule(module, *a)  # noqa: E731
    if isinstance(f.domain, Domain):
        fn = _within(f.domain, fn)
    return fn


#: The ball operation of each sympy class of the function table.
FUNCS = {cls: strict(_rule(f)) for f in FUNCTIONS if f.ball is not None for cls in f.sympy}
CMPS = {sp.StrictLessThan: "<", sp.LessThan: "<=", sp.StrictGreaterThan: ">",
         sp.GreaterThan: ">=", sp.Equality: "==", sp.Unequality: "!="}
LOGIC = {sp.And: _and, sp.Or: _or, sp.Not: _not, sp.Xor: _xor}


def constant(e):
    """A closure giving the exact constant ``e`` as a ball at the working precision."""
    flint = flint_module()
    arb, fmpq, fmpz = flint.arb, flint.fmpq, flint.fmpz
    if e.has(sp.nan, sp.zoo):
        return lambda: UNDEF
    if e is sp.oo:
        return arb.pos_inf
    if e is sp.S.NegativeInfinity:
        return arb.neg_inf
    if e.is_Integer:
        v = fmpz(int(e))
        return lambda: arb(v)
    if e.is_Rational:
        v = fmpq(int(e.p), int(e.q))
        return lambda: arb(v)
    if e.is_Float:
        sign, man, ex, _ = e._mpf_
        if not e.is_finite:
            return lambda: nan()
        m = fmpz(-int(man) if sign else int(man))
        return lambda: arb(m) * arb(2) ** int(ex)
    known = {sp.pi: arb.pi, sp.E: arb.const_e, sp.EulerGamma: arb.const_euler,
             sp.Catalan: arb.const_catalan,
             sp.GoldenRatio: lambda: (1 + arb(5).sqrt()) / 2}
    fn = known.get(e)
    return fn if fn is not None else nan  # an unknown constant: never decided
