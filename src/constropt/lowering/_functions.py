"""The function table: every sympy function constropt lowers, declared once.

Each :class:`Function` row says what every backend needs to know about one function,
and each backend reads the rows (none keeps its own list of names):

- the graph (:mod:`._graph`): the sympy classes lowered to the row's node, constant
  folding, whether the value may be NaN where the argument is not;
- the point runtimes (:mod:`._rt_numpy`, :mod:`._rt_torch`): the row's NumPy function
  and torch spelling, guarded by its domain (:mod:`._guards`);
- derivatives: forward mode on NumPy (:mod:`._forward`) and the graph's reverse mode
  (:mod:`._interval_model`) both evaluate the row's ``derivative``;
- intervals: the inclusion function and the preimage rule of bound propagation
  (:mod:`._interval_rules`, :mod:`._interval`);
- Arb balls (:mod:`constropt.problem._balls`) and the problem-file parser
  (:mod:`constropt.files._builder`).

A rule that needs a backend receives it as its first argument (``r`` the interval
rules, ``b`` the ball module, ``p`` the parser, ``k`` a derivative algebra), so this
module imports no backend and every backend can import it.  Sympy's own derivative of
the class serves the symbolic route (:mod:`._derivatives`); torch autograd needs nothing.

Adding a function is one row; ``erf`` is the example (docs/how-it-works.md).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import reduce
from typing import NamedTuple

import numpy as np
import sympy as sp

__all__ = ["Function", "Domain", "Parse", "FUNCTIONS", "FUNCTION", "NODE_FUNCTIONS",
           "SYMPY_CLASSES"]

inf = math.inf
nan = math.nan
#: ``2 / sqrt(pi)``, correctly rounded (the slope of ``erf`` at 0).
TWO_OVER_SQRT_PI = 1.1283791670955126
#: Where ``atan``'s preimage stops: just below pi/2, which the float pi/2 exceeds.
_ATAN_END = math.pi / 2 * (1 - 1e-15)


class Domain(NamedTuple):
    """An interval of the real line, each end closed unless ``open_lo``/``open_hi``."""

    lo: float = -inf
    hi: float = inf
    open_lo: bool = False
    open_hi: bool = False

    def mask(self):
        """``ok(a)``: the array mask of ``a`` inside (the comparisons of a finite end only)."""
        lo, hi, olo, ohi = self
        if hi == inf:
            return (lambda a: a > lo) if olo else (lambda a: a >= lo)
        if lo == -inf:
            return (lambda a: a < hi) if ohi else (lambda a: a <= hi)
        below = (lambda a: a > lo) if olo else (lambda a: a >= lo)
        above = (lambda a: a < hi) if ohi else (lambda a: a <= hi)
        return lambda a: below(a) & above(a)


ENTIRE = Domain()


class Parse(NamedTuple):
    """A name of the problem-file parser.

    ``build(p, *args)`` builds the sympy value (``p`` is the parser, whose ``power`` and
    ``exp`` guard the size of constants); None calls the row's sympy class.  ``lo`` to
    ``hi`` arguments, ``hi`` None for any number.
    """

    name: str
    build: Callable | None = None
    lo: int = 1
    hi: int | None = 1


@dataclass(frozen=True)
class Function:
    """One row of the table (see the module docstring for who reads which field).

    name : the node's name: ``("fn", name, a)`` for one argument, ``(name, a, b)`` for two.
    sympy : the sympy classes lowered to this row (none: only the lowering makes it).
    numpy, torch : the array function on arguments in the domain: a NumPy callable; a
        torch attribute name (default ``name``) or ``torch -> callable``.
    arity : operands of the node; None: any number, lowered as a balanced tree of pairs.
    domain, safe : where the value is real, a :class:`Domain` (one argument) or a mask
        ``ok(*args)``; outside it the point runtimes give NaN and feed ``safe`` (one
        value, or one per argument, None to pass it) to the function ("double where").
    canonical : applied to the guarded arguments before the function.
    point : ``point(rt, raw, *args)``, the point value when it is not the guarded
        function (``rt.where``, ``rt.isnan``; ``raw`` the array function).
    call : the runtime's name (default ``name``).
    derivative : ``derivative(*args, y, k)`` with ``y`` the value: the slope (one
        argument) or one partial per argument (None: no dependence), written with
        ``+ - * /``, ``** n`` and ``k``'s functions (``k.<row name>``, ``recip``,
        ``powi``, ``div``, ``where``, ``zeros_like``).
    choose : for Min/Max: ``choose(a, b)`` is where the first argument is the value
        (forward mode differentiates the argument chosen).
    smooth : a mean-value form over ``derivative`` encloses the function (no jumps).
    strict : the value is NaN whenever an argument is (bound propagation may pass it).
    interval : ``interval(r, f, *args)``, the inclusion function (``f`` is this row).
    inverse : ``inverse(r, t, *cur)``, what the arguments may be for the value to lie in
        the target ``t`` (one argument: an Iv; more: a tuple).
    ball : an Arb method name (applied inside ``domain``) or ``ball(b, *args)``.
    parse : the problem-file parser's names.
    lower : ``lower(g, *nodes)``, the node of a sympy class that is not a node of its own
        (``cot`` is ``1 / tan``), or of a default argument (``Heaviside``).
    """

    name: str
    sympy: tuple = ()
    numpy: Callable | None = None
    torch: str | Callable | None = None
    arity: int | None = 1
    domain: Domain | Callable | None = None
    safe: float | tuple = 1.0
    canonical: Callable | None = None
    point: Callable | None = None
    call: str | None = None
    derivative: Callable | None = None
    choose: Callable | None = None
    smooth: bool = True
    strict: bool = True
    interval: Callable | None = None
    inverse: Callable | None = None
    ball: str | Callable | None = None
    parse: tuple = ()
    lower: Callable | None = None

    @property
    def runtime_name(self) -> str:
        return self.call or self.name

    @property
    def total(self) -> bool:
        """Never NaN where no argument is (overflow aside)."""
        return self.domain is None

    @property
    def has_node(self) -> bool:
        return self.numpy is not None or self.point is not None


# -- rules of a few rows, too long for a lambda -----------------------------------------------
def _np_rsqrt(x):
    return 1.0 / np.sqrt(x)  # two roundings: inside the transcendental widening


def _np_erf(x):
    # scipy is a dependency of constropt; scipy.special is slow to import, so only a
    # problem with erf pays for it
    from scipy.special import erf

    return erf(x)


def _torch_isnan(torch):
    def isnan(a):
        """``a != a``: the same as ``torch.isnan``, but inductor keeps it vectorized (it
        lowers ``isnan`` to a scalar loop on CPU)."""
        return a != a
    return isnan


def _torch_clamped(name: str, bound: str):
    """torch ``minimum``/``maximum`` that clamps against a Python number (no tensor)."""
    def build(torch):
        both = getattr(torch, name)

        def fn(a, b):
            if not isinstance(b, torch.Tensor):
                return torch.clamp(a, **{bound: b})
            if not isinstance(a, torch.Tensor):
                return torch.clamp(b, **{bound: a})
            return both(a, b)
        return fn
    return build


def _atan2_partials(y, x, v, k):
    r2 = k.recip(x * x + y * y)
    return x * r2, -y * r2


def _heaviside_point(rt, raw, a, h0):
    return rt.where(a > 0, 1.0, rt.where(a < 0, 0.0, rt.where(a == 0, h0, nan)))


def _lower_heaviside(g, a, h0=None):
    return g.node("heaviside", a, g.const(0.5) if h0 is None else h0)  # sympy: H(0) = 1/2


def _ball_atanh(b, a):
    if a > -1 and a < 1:
        return a.atanh()
    arb = b.flint_module().arb
    if a == 1:
        return arb.pos_inf()
    if a == -1:
        return arb.neg_inf()
    return b.nan()


def _ball_atan2(b, y, x):
    if y == 0 and x == 0:
        return b.UNDEF
    return b.flint_module().arb.atan2(y, x)


def _ball_mod(b, a, m):
    if m == 0:
        return b.UNDEF  # sympy: ZeroDivisionError
    if not (m != 0):
        return b.nan()
    return a - m * (a / m).floor()


def _ball_heaviside(b, a, h0=None):
    arb = b.flint_module().arb
    h0 = arb(0.5) if h0 is None else h0
    if a > 0:
        return arb(1)
    if a < 0:
        return arb(0)
    if a == 0:
        return h0
    return b.hull([arb(0), arb(1), h0])


def _parse_log(p, x, base=None):
    if base is None:
        return sp.log(x)
    if base == 1 or base == 0:
        raise ValueError(f"logarithm base {base} is not allowed")
    return sp.log(x, base)


_STEPS = {"derivative": lambda x, y, k: k.zeros_like(y), "smooth": False,
          "interval": lambda r, f, a: r.steps(f, a)}


def _plain(name, sympy, numpy, **kw):
    """A row whose ball rule and parser name are its own name."""
    return Function(name, (sympy,), numpy, ball=kw.pop("ball", name),
                    parse=kw.pop("parse", (Parse(name),)), **kw)


FUNCTIONS: tuple[Function, ...] = (
    _plain("exp", sp.exp, np.exp, derivative=lambda x, y, k: y,
           interval=lambda r, f, a: r.increasing(f, a, rng=(0.0, inf)),
           inverse=lambda r, t, cur: r.beyond(t, r.fn("log", r.plain(t)), lo=0.0),
           parse=(Parse("exp", lambda p, x: p.exp(x)),)),
    _plain("log", sp.log, np.log, domain=Domain(0.0, open_lo=True),
           derivative=lambda x, y, k: k.recip(x),
           interval=lambda r, f, a: r.increasing(f, a),  # log(0) is NaN (sympy's zoo)
           inverse=lambda r, t, cur: r.fn("exp", r.plain(t)),
           parse=(Parse("log", _parse_log, 1, 2), Parse("ln"),
                  Parse("log10", lambda p, x: sp.log(x, 10)),
                  Parse("log2", lambda p, x: sp.log(x, 2)))),
    Function("sqrt", (), np.sqrt, domain=Domain(0.0), derivative=lambda x, y, k: 1 / (2 * y),
             interval=lambda r, f, a: r.sqrt(a),
             inverse=lambda r, t, cur: r.powi(r.clamped(t, lo=0.0), 2),
             parse=(Parse("sqrt", lambda p, x: p.power(x, sp.S.Half)),)),
    Function("rsqrt", (), _np_rsqrt, domain=Domain(0.0, open_lo=True),
             derivative=lambda x, y, k: -0.5 * k.powi(y, 3),
             interval=lambda r, f, a: r.decreasing(f, a, rng=(0.0, inf))),
    _plain("sin", sp.sin, np.sin, derivative=lambda x, y, k: k.cos(x),
           interval=lambda r, f, a: r.periodic(f, a, max_at=math.pi / 2, min_at=-math.pi / 2),
           inverse=lambda r, t, cur: r.piece(t, cur, "asin", -math.pi / 2, math.pi / 2)),
    _plain("cos", sp.cos, np.cos, derivative=lambda x, y, k: -k.sin(x),
           interval=lambda r, f, a: r.periodic(f, a, max_at=0.0, min_at=math.pi),
           inverse=lambda r, t, cur: r.piece(t, cur, "acos", 0.0, math.pi)),
    _plain("tan", sp.tan, np.tan, derivative=lambda x, y, k: 1 + y**2,
           interval=lambda r, f, a: r.poles(f, a, at=math.pi / 2, period=math.pi)),
    _plain("atan", sp.atan, np.arctan, derivative=lambda x, y, k: 1 / (1 + x**2),
           interval=lambda r, f, a: r.increasing(f, a, rng=(-2.0, 2.0)),
           inverse=lambda r, t, cur: r.beyond(
               t, r.fn("tan", r.clamped(t, -_ATAN_END, _ATAN_END)), -_ATAN_END, _ATAN_END)),
    _plain("sinh", sp.sinh, np.sinh, derivative=lambda x, y, k: k.cosh(x),
           interval=lambda r, f, a: r.increasing(f, a),
           inverse=lambda r, t, cur: r.fn("asinh", r.plain(t))),
    _plain("cosh", sp.cosh, np.cosh, derivative=lambda x, y, k: k.sinh(x),
           interval=lambda r, f, a: r.even(f, a, 1.0),
           inverse=lambda r, t, cur: r.even_inverse(t, cur, "acosh", 1.0)),
    _plain("tanh", sp.tanh, np.tanh, derivative=lambda x, y, k: 1 - y**2,
           interval=lambda r, f, a: r.increasing(f, a, rng=(-1.0, 1.0)),
           inverse=lambda r, t, cur: r.beyond(t, r.fn("atanh", r.plain(t)), -1.0, 1.0)),
    _plain("asinh", sp.asinh, np.arcsinh, derivative=lambda x, y, k: k.rsqrt(x**2 + 1),
           interval=lambda r, f, a: r.increasing(f, a),
           inverse=lambda r, t, cur: r.fn("sinh", r.plain(t))),
    _plain("asin", sp.asin, np.arcsin, domain=Domain(-1.0, 1.0), safe=0.0,
           derivative=lambda x, y, k: k.rsqrt(1 - x**2),
           interval=lambda r, f, a: r.increasing(f, a, rng=(-2.0, 2.0))),
    _plain("acos", sp.acos, np.arccos, domain=Domain(-1.0, 1.0), safe=0.0,
           derivative=lambda x, y, k: -k.rsqrt(1 - x**2),
           interval=lambda r, f, a: r.decreasing(f, a, rng=(0.0, 4.0))),
    _plain("acosh", sp.acosh, np.arccosh, domain=Domain(1.0),
           derivative=lambda x, y, k: k.rsqrt(x**2 - 1),
           interval=lambda r, f, a: r.increasing(f, a, rng=(0.0, inf))),
    # atanh(+-1) is +-inf, as sympy's +-oo
    _plain("atanh", sp.atanh, np.arctanh, domain=Domain(-1.0, 1.0), safe=0.0,
           derivative=lambda x, y, k: 1 / (1 - x**2),
           interval=lambda r, f, a: r.increasing(f, a), ball=_ball_atanh),
    _plain("erf", sp.erf, _np_erf, derivative=lambda x, y, k: TWO_OVER_SQRT_PI * k.exp(-x**2),
           # widened by 8 ulps: scipy documents no error bound of erf for every x
           interval=lambda r, f, a: r.increasing(f, a, rng=(-1.0, 1.0), ulps=8)),
    Function("abs", (sp.Abs,), np.abs, derivative=lambda x, y, k: k.sign(x),
             interval=lambda r, f, a: r.magnitude(a),
             inverse=lambda r, t, cur: r.even_preimage(cur, *r.clamped(t, lo=0.0)[:2]),
             ball=lambda b, a: abs(a), parse=(Parse("abs"), Parse("Abs"))),
    _plain("floor", sp.floor, np.floor, **_STEPS),
    _plain("ceil", sp.ceiling, np.ceil, ball="ceil", parse=(Parse("ceil"), Parse("ceiling")),
           **_STEPS),
    _plain("sign", sp.sign, np.sign, ball="sgn",
           point=lambda rt, raw, a: rt.where(rt.isnan(a), nan, raw(a)), **_STEPS),
    # the NaN test the graph puts on the comparisons of a Piecewise condition
    Function("isnan", (), np.isnan, torch=_torch_isnan, smooth=False,
             interval=lambda r, f, a: r.isnan(a)),
    # -- two arguments ------------------------------------------------------------------
    Function("atan2", (sp.atan2,), np.arctan2, arity=2, smooth=False,
             domain=lambda y, x: (x != 0) | (y != 0), safe=(0.0, 1.0),
             canonical=lambda y, x: (y + 0.0, x),  # atan2(-0.0, -1) is pi, as in sympy
             derivative=_atan2_partials, interval=lambda r, f, y, x: r.atan2(y, x),
             ball=_ball_atan2, parse=(Parse("atan2", lo=2, hi=2),)),
    # the sign of the divisor (floor division), NaN for a zero divisor
    Function("mod", (sp.Mod,), np.mod, torch="remainder", arity=2, smooth=False,
             domain=lambda a, m: m != 0, safe=(None, 1.0),
             derivative=lambda a, m, y, k: (1.0, -k.floor(k.div(a, m))),
             interval=lambda r, f, a, m: r.mod(a, m), ball=_ball_mod),
    Function("min", (sp.Min,), np.minimum, torch=_torch_clamped("minimum", "max"),
             arity=None, call="minimum", smooth=False, choose=lambda a, b: a <= b,
             interval=lambda r, f, a, b: r.minimum(a, b),
             inverse=lambda r, t, a, b: (r.at_least(t), r.at_least(t)),
             ball=lambda b, *a: reduce(lambda u, v: u.min(v), a),
             parse=(Parse("min", hi=None), Parse("Min", hi=None))),
    Function("max", (sp.Max,), np.maximum, torch=_torch_clamped("maximum", "min"),
             arity=None, call="maximum", smooth=False, choose=lambda a, b: a >= b,
             interval=lambda r, f, a, b: r.maximum(a, b),
             inverse=lambda r, t, a, b: (r.at_most(t), r.at_most(t)),
             ball=lambda b, *a: reduce(lambda u, v: u.max(v), a),
             parse=(Parse("max", hi=None), Parse("Max", hi=None))),
    Function("heaviside", (sp.Heaviside,), arity=2, point=_heaviside_point, smooth=False,
             strict=False, lower=_lower_heaviside,
             derivative=lambda a, h0, y, k: (None, k.where(a == 0, 1.0, 0.0)),
             interval=lambda r, f, a, h0: r.heaviside(a, h0), ball=_ball_heaviside,
             parse=(Parse("heaviside", lo=1, hi=2), Parse("Heaviside", lo=1, hi=2))),
    # -- classes written with the rows above --------------------------------------------
    Function("cot", (sp.cot,), lower=lambda g, a: g.node("recip", g.node("fn", "tan", a)),
             ball=lambda b, a: b.recip(a.tan())),
    Function("sec", (sp.sec,), lower=lambda g, a: g.node("recip", g.node("fn", "cos", a)),
             ball=lambda b, a: b.recip(a.cos())),
    Function("csc", (sp.csc,), lower=lambda g, a: g.node("recip", g.node("fn", "sin", a)),
             ball=lambda b, a: b.recip(a.sin())),
    Function("frac", (sp.frac,), ball=lambda b, a: a - a.floor(),
             lower=lambda g, a: g.node("add", a, g.node("neg", g.node("fn", "floor", a)))),
    # every value the lowering handles is real: re is the identity, im is 0 (NaN where
    # the argument is undefined)
    Function("re", (sp.re, sp.conjugate), lower=lambda g, a: a, ball=lambda b, a: a),
    Function("im", (sp.im,), lower=lambda g, a: g.node("mul", g.const(0.0), a),
             ball=lambda b, a: a * 0),
)

#: Rows by name.
FUNCTION: dict[str, Function] = {f.name: f for f in FUNCTIONS}
#: Rows that are nodes of the graph (and functions of the point runtimes).
NODE_FUNCTIONS: tuple[Function, ...] = tuple(f for f in FUNCTIONS if f.has_node)
#: Every sympy class the table lowers, in table order.
SYMPY_CLASSES: tuple = tuple(cls for f in FUNCTIONS for cls in f.sympy)
