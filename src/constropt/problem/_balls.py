"""Arb ball values with sympy's semantics: the operations of the rigorous evaluator.

Every value is an Arb ball (python-flint) that contains the exact real value, the
sentinel :data:`UNDEF` (certainly undefined: sympy gives ``nan``, ``zoo`` or a complex
number), or the NaN ball (unknown: the ball cannot settle it, e.g. ``log`` of a ball
straddling 0).  Booleans are ``True``, ``False``, ``None`` (unknown) or ``UNDEF``.
Each operation decides its domain from the balls (``log`` needs a ball certainly
``> 0``), so an enclosure is never produced for a value that might be undefined.
"""

from __future__ import annotations

from contextlib import contextmanager

import sympy as sp

__all__ = ["UNDEF", "working_precision", "compare", "flint_module", "FUNCS", "CMPS", "LOGIC",
           "constant", "nan", "strict", "add", "mul", "powi", "pow_const", "pow_var",
           "piecewise", "recip"]


class _Undef:
    """Certainly undefined (sympy: nan, zoo or a complex value)."""

    def __repr__(self) -> str:
        return "UNDEF"


UNDEF = _Undef()


def flint_module():
    import flint

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


def _hull(values):
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
            return _hull(outcomes)
        if cond is True:
            outcomes.append(val)
            return _hull(outcomes)
        if cond is None:
            outcomes.append(val)
    outcomes.append(UNDEF)  # no branch matches: undefined, as in the lowering
    return _hull(outcomes)


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


def _log(a):
    if a > 0:
        return a.log()
    return UNDEF if a <= 0 else nan()


def _unit(method):
    def fn(a):
        if a >= -1 and a <= 1:
            return getattr(a, method)()
        return UNDEF if (a < -1 or a > 1) else nan()
    return fn


def _acosh(a):
    if a >= 1:
        return a.acosh()
    return UNDEF if a < 1 else nan()


def _atanh(a):
    arb = flint_module().arb
    if a > -1 and a < 1:
        return a.atanh()
    if a == 1:
        return arb.pos_inf()
    if a == -1:
        return arb.neg_inf()
    return UNDEF if (a < -1 or a > 1) else nan()


def _reciprocal_of(method):
    def fn(a):
        return recip(getattr(a, method)())
    return fn


def _sign(a):
    return a.sgn()


def _heaviside(a, h0):
    arb = flint_module().arb
    if a > 0:
        return arb(1)
    if a < 0:
        return arb(0)
    if a == 0:
        return h0
    return _hull([arb(0), arb(1), h0])


def _mod(a, b):
    if b == 0:
        return UNDEF  # sympy: ZeroDivisionError
    if not (b != 0):
        return nan()
    return a - b * (a / b).floor()


def _atan2(y, x):
    if y == 0 and x == 0:
        return UNDEF
    return flint_module().arb.atan2(y, x)


def _min(*a):
    out = a[0]
    for v in a[1:]:
        out = out.min(v)
    return out


def _max(*a):
    out = a[0]
    for v in a[1:]:
        out = out.max(v)
    return out


def _method(name):
    return lambda a: getattr(a, name)()


FUNCS = {
    sp.exp: _method("exp"), sp.sin: _method("sin"), sp.cos: _method("cos"),
    sp.tan: _method("tan"), sp.atan: _method("atan"), sp.sinh: _method("sinh"),
    sp.cosh: _method("cosh"), sp.tanh: _method("tanh"), sp.asinh: _method("asinh"),
    sp.Abs: abs, sp.floor: _method("floor"), sp.ceiling: _method("ceil"), sp.sign: _sign,
    sp.asin: _unit("asin"), sp.acos: _unit("acos"), sp.acosh: _acosh, sp.atanh: _atanh,
    sp.log: _log, sp.cot: _reciprocal_of("tan"), sp.sec: _reciprocal_of("cos"),
    sp.csc: _reciprocal_of("sin"), sp.frac: lambda a: a - a.floor(),
    sp.re: lambda a: a, sp.conjugate: lambda a: a, sp.im: lambda a: a * 0,
    sp.Mod: _mod, sp.atan2: _atan2, sp.Min: _min, sp.Max: _max, sp.Heaviside: _heaviside,
}
FUNCS = {cls: strict(fn) for cls, fn in FUNCS.items()}
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
