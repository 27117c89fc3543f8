"""Rigorous evaluation of a problem at one exact point, with python-flint's arb balls.

The float64 check evaluates generated code whose constants were rounded to float64 and
whose every operation rounds; at a rounding-level tie it can call a violated constraint
satisfied.  This module evaluates the user's own sympy expressions instead, at the
exact point (each float64 coordinate is a dyadic rational; integer genes are Python
ints, whatever their size), with exact constants (``Rational(2, 7)`` stays 2/7, a
sympy ``Float`` is its exact binary value, ``pi`` is Arb's enclosure of pi).  Every
value is an Arb ball ``[m +/- r]`` that is guaranteed to contain the exact real value:
Arb's elementary functions are rigorous (FLINT documents their error bounds).

Values follow sympy's semantics (what ``expr.subs(point)`` means in exact arithmetic):
a value that sympy leaves undefined (``nan``, ``zoo``, complex: ``log(0)``, ``1/0``,
``sqrt(-1)``, ``Mod(x, 0)``, ``atan2(0, 0)``, a comparison with such a value, a
``Piecewise`` without a matching branch) is :data:`UNDEF`; a value the ball cannot
settle (the argument of ``log`` straddles 0, a ``Piecewise`` condition straddles its
boundary with one branch undefined) is the NaN ball ("unknown").  Booleans are
three-valued: ``True``, ``False``, ``None`` (unknown) or :data:`UNDEF`.

The sympy trees are compiled once per problem into a flat program (iteratively, so
deep or wide expressions never recurse); a ``Sum``/``Product`` over vector elements
becomes a loop over a compiled body.
"""

from __future__ import annotations

import weakref
from contextlib import contextmanager

import sympy as sp
from sympy.matrices.expressions.matexpr import MatrixElement

__all__ = ["UNDEF", "Program", "program_for", "working_precision", "verdict_of"]

SATISFIED, VIOLATED, UNDECIDED = "satisfied", "violated", "undecided"


class _Undef:
    """Certainly undefined (sympy: nan, zoo or a complex value)."""

    def __repr__(self) -> str:
        return "UNDEF"


UNDEF = _Undef()


def _flint():
    import flint

    return flint


@contextmanager
def working_precision(bits: int):
    """Set Arb's working precision (a process-wide setting) for the block."""
    ctx = _flint().ctx
    old = ctx.prec
    ctx.prec = int(bits)
    try:
        yield
    finally:
        ctx.prec = old


def _nan():
    return _flint().arb.nan()


# -- three-valued helpers ------------------------------------------------------------------
def _cmp(op: str, a, b):
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
        return _nan()
    out = values[0]
    for v in values[1:]:
        out = out.union(v)
    return out


def _piecewise(*vc):
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
def _strict(fn):
    def wrapped(*args):
        for a in args:
            if a is UNDEF:
                return UNDEF
        try:
            return fn(*args)
        except (ArithmeticError, ValueError, TypeError, OverflowError):
            return _nan()
    return wrapped


def _add(*a):
    out = a[0]
    for v in a[1:]:
        out = out + v
    return out


def _mul(*a):
    out = a[0]
    for v in a[1:]:
        out = out * v
    return out


def _recip(a):
    if a == 0:
        return UNDEF  # zoo
    if not (a != 0):
        return _nan()
    return 1 / a


def _powi(a, n: int):
    if n >= 0:
        return a ** n
    r = _recip(a)
    return r if r is UNDEF else r ** (-n)


def _pow_const(a, r, half: bool):
    """``a ** r`` for a constant non-integer exponent ``r`` (an arb)."""
    if a > 0:
        return a.sqrt() if half else a ** r
    if a == 0:
        return UNDEF if r < 0 else a  # 0**(-r): zoo; 0**r: 0
    if a < 0:
        return UNDEF  # a complex principal root
    return _nan()


def _pow(a, b):
    """``a ** b`` with a variable exponent."""
    arb = _flint().arb
    if a > 0:
        return a ** b
    if b.is_exact() and b.is_integer():
        if a == 0 and b == 0:
            return arb(1)  # sympy: 0**0 == 1
        return _powi(a, int(b.unique_fmpz()))
    if a == 0 and b > 0:
        return a
    if a == 0 and b < 0:
        return UNDEF
    if a < 0 and not b.contains_integer():
        return UNDEF
    return _nan()


def _log(a):
    if a > 0:
        return a.log()
    return UNDEF if a <= 0 else _nan()


def _unit(method):
    def fn(a):
        if a >= -1 and a <= 1:
            return getattr(a, method)()
        return UNDEF if (a < -1 or a > 1) else _nan()
    return fn


def _acosh(a):
    if a >= 1:
        return a.acosh()
    return UNDEF if a < 1 else _nan()


def _atanh(a):
    arb = _flint().arb
    if a > -1 and a < 1:
        return a.atanh()
    if a == 1:
        return arb.pos_inf()
    if a == -1:
        return arb.neg_inf()
    return UNDEF if (a < -1 or a > 1) else _nan()


def _reciprocal_of(method):
    def fn(a):
        return _recip(getattr(a, method)())
    return fn


def _sign(a):
    return a.sgn()


def _heaviside(a, h0):
    arb = _flint().arb
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
        return _nan()
    return a - b * (a / b).floor()


def _atan2(y, x):
    if y == 0 and x == 0:
        return UNDEF
    return _flint().arb.atan2(y, x)


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


_FUNCS = {
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
_FUNCS = {cls: _strict(fn) for cls, fn in _FUNCS.items()}
_CMPS = {sp.StrictLessThan: "<", sp.LessThan: "<=", sp.StrictGreaterThan: ">",
         sp.GreaterThan: ">=", sp.Equality: "==", sp.Unequality: "!="}
_LOGIC = {sp.And: _and, sp.Or: _or, sp.Not: _not, sp.Xor: _xor}


def _constant(e):
    """A closure giving the exact constant ``e`` as a ball at the working precision."""
    flint = _flint()
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
            return lambda: _nan()
        m = fmpz(-int(man) if sign else int(man))
        return lambda: arb(m) * arb(2) ** int(ex)
    known = {sp.pi: arb.pi, sp.E: arb.const_e, sp.EulerGamma: arb.const_euler,
             sp.Catalan: arb.const_catalan,
             sp.GoldenRatio: lambda: (1 + arb(5).sqrt()) / 2}
    fn = known.get(e)
    return fn if fn is not None else _nan  # an unknown constant: never decided


def _label(s):
    return s.label if isinstance(s, sp.Idx) else s


class Program:
    """Sympy expressions compiled to a flat list of ball operations.

    Parameters
    ----------
    roots : sequence of sympy Expr or Boolean
        The expressions to evaluate (the objective, then the constraint leaves).
    layout : Layout
        Where each variable lives in the point vector (rows of ``X``), and the order
        of the parameters.
    indices : tuple, optional
        Summation indices bound by enclosing ``Sum``/``Product`` (for bodies).
    """

    def __init__(self, roots, layout, indices: tuple = ()):
        self.layout = layout
        self.indices = tuple(indices)
        self._pos = {s: k for k, s in enumerate(self.indices)}  # inner ones shadow
        self.code: list = []  # (fn, operand slots, kind)
        self._memo: dict = {}
        self._scalar = {b.symbol: b.offset for b in layout.blocks if b.shape == ()}
        self._params = {p: k for k, p in enumerate(layout.parameters)}
        self.roots = [self._compile(sp.sympify(r)) for r in roots]

    # -- compilation ------------------------------------------------------------------
    def _children(self, e) -> tuple:
        if e.is_Atom or isinstance(e, (sp.Idx, sp.Sum, sp.Product, sp.Indexed,
                                       MatrixElement)):
            return ()
        if isinstance(e, sp.Pow) and (e.exp.is_Integer or (e.exp.is_Float and
                                                           float(e.exp).is_integer())):
            return (e.base,)
        if isinstance(e, sp.Piecewise):
            return tuple(a for pair in e.args for a in pair)
        return tuple(e.args)

    def _compile(self, root) -> int:
        stack = [(root, False)]
        while stack:
            e, ready = stack.pop()
            if e in self._memo:
                continue
            kids = self._children(e)
            if not ready:
                stack.append((e, True))
                stack.extend((k, False) for k in kids if k not in self._memo)
                continue
            self._memo[e] = self._emit(e, [self._memo[k] for k in kids])
        return self._memo[root]

    def _push(self, fn, slots=(), kind="op") -> int:
        self.code.append((fn, tuple(slots), kind))
        return len(self.code) - 1

    def _emit(self, e, slots) -> int:
        from sympy.logic.boolalg import BooleanFalse, BooleanTrue

        if isinstance(e, BooleanTrue):
            return self._push(lambda: True, kind="const")
        if isinstance(e, BooleanFalse):
            return self._push(lambda: False, kind="const")
        if isinstance(e, (sp.Symbol, sp.Idx)):
            return self._leaf(_label(e))
        if isinstance(e, (sp.Indexed, MatrixElement)):  # (sympy calls Indexed an atom)
            return self._element(e)
        if e.is_Atom:
            return self._push(_constant(e), kind="const")
        if isinstance(e, (sp.Sum, sp.Product)):
            return self._reduction(e)
        if isinstance(e, sp.Add):
            return self._push(_strict(_add), slots)
        if isinstance(e, sp.Mul):
            return self._push(_strict(_mul), slots)
        if isinstance(e, sp.Pow):
            return self._power(e, slots)
        if isinstance(e, sp.Piecewise):
            return self._push(_piecewise, slots)
        if isinstance(e, sp.Heaviside) and len(slots) == 1:
            half = self._push(_constant(sp.Rational(1, 2)), kind="const")
            return self._push(_FUNCS[sp.Heaviside], (slots[0], half))
        for table in (_CMPS, _LOGIC, _FUNCS):
            cls = next((c for c in table if isinstance(e, c)), None)
            if cls is None:
                continue
            if table is _CMPS:
                op = table[cls]
                return self._push(lambda a, b, op=op: _cmp(op, a, b), slots)
            return self._push(table[cls], slots)
        return self._push(_nan, kind="const")  # nothing we can bound: never decided

    def _leaf(self, s) -> int:
        if s in self._pos:
            return self._push(self._pos[s], kind="index")
        if s in self._scalar:
            return self._push(self._scalar[s], kind="var")
        if s in self._params:
            return self._push(self._params[s], kind="param")
        return self._push(_nan, kind="const")

    def _power(self, e, slots) -> int:
        ex = e.exp
        if not ex.is_number:
            return self._push(_strict(_pow), slots)
        if ex.is_Integer or (ex.is_Float and float(ex).is_integer()):
            n = int(ex)
            return self._push(_strict(lambda a, n=n: _powi(a, n)), slots)
        if ex.has(sp.nan, sp.zoo) or ex.is_real is False:
            return self._push(lambda: UNDEF, kind="const")
        half = ex == sp.S.Half
        return self._push(_strict(lambda a, r, half=half: _pow_const(a, r, half)), slots)

    def _affine(self, ix):
        ix = sp.expand(sp.sympify(ix).xreplace({a: a.label for a in
                                                sp.sympify(ix).atoms(sp.Idx)}))
        const, terms = 0, []
        for term, coeff in ix.as_coefficients_dict().items():
            if term == 1:
                const += int(coeff)
            elif term in self._pos and coeff.is_Integer:
                terms.append((self._pos[term], int(coeff)))
            else:
                return None
        return const, tuple(terms)

    def _element(self, e) -> int:
        base, idx = (e.base, e.indices) if isinstance(e, sp.Indexed) else (e.parent,
                                                                           (e.i, e.j))
        block = self.layout.block_of(base)
        forms = [self._affine(ix) for ix in idx]
        if block is None or len(idx) != len(block.shape) or any(f is None for f in forms):
            return self._push(_nan, kind="const")
        return self._push((block, tuple(forms)), kind="elem")

    def _reduction(self, e) -> int:
        body, limits = e.function, list(e.limits)
        for lim in limits[:-1]:  # the first limit is the innermost
            body = type(e)(body, lim)
        sym, lo, hi = _label(limits[-1][0]), limits[-1][1], limits[-1][2]
        if not (sp.sympify(lo).is_Integer and sp.sympify(hi).is_Integer):
            return self._push(_nan, kind="const")
        inner = Program([body], self.layout, self.indices + (sym,))
        return self._push((inner, int(lo), int(hi), isinstance(e, sp.Product)),
                          kind="reduce")

    # -- evaluation -----------------------------------------------------------------------
    def run(self, genes, params, env=None) -> list:
        """Evaluate every root; ``genes``/``params`` are lists of exact arb balls."""
        slots: list = []
        env = env or []
        arb = _flint().arb
        for fn, args, kind in self.code:
            if kind == "op":
                if len(args) == 1:
                    v = fn(slots[args[0]])
                elif len(args) == 2:
                    v = fn(slots[args[0]], slots[args[1]])
                else:
                    v = fn(*[slots[a] for a in args])
            elif kind == "var":
                v = genes[fn]
            elif kind == "param":
                v = params[fn]
            elif kind == "const":
                v = fn()
            elif kind == "index":
                v = arb(env[fn])
            elif kind == "elem":
                v = _fetch(fn, genes, env)
            else:  # "reduce"
                v = _reduce(fn, genes, params, env)
            slots.append(v)
        return [slots[r] for r in self.roots]


def _fetch(spec, genes, env):
    block, forms = spec
    k = block.offset
    stride = 1
    pos = []
    for const, terms in forms:
        for d, c in terms:
            const += c * env[d]
        pos.append(const)
    for d in range(len(block.shape) - 1, -1, -1):
        if not 0 <= pos[d] < block.shape[d]:
            return _nan()
        k += pos[d] * stride
        stride *= block.shape[d]
    return genes[k]


def _reduce(spec, genes, params, env):
    arb = _flint().arb
    inner, lo, hi, prod = spec
    flip = hi < lo - 1  # sympy/Karr: Sum(f, (i, a, b)) = -Sum(f, (i, b+1, a-1))
    if flip:
        lo, hi = hi + 1, lo - 1
    acc = arb(1) if prod else arb(0)
    env2 = list(env) + [0]
    for i in range(lo, hi + 1):
        env2[-1] = i
        v = inner.run(genes, params, env2)[0]
        if v is UNDEF:
            return UNDEF
        acc = acc * v if prod else acc + v
    if flip:
        return _recip(acc) if prod else -acc
    return acc


def verdict_of(kind: str, value, eq_tol) -> str:
    """Verdict of one leaf ``value (kind) 0`` (``eq``: ``|value| <= eq_tol``)."""
    if value is UNDEF:
        return VIOLATED  # an undefined constraint is violated (as in the float64 check)
    if kind == "le":
        return SATISFIED if value <= 0 else (VIOLATED if value > 0 else UNDECIDED)
    if kind == "lt":
        return SATISFIED if value < 0 else (VIOLATED if value >= 0 else UNDECIDED)
    if abs(value) <= eq_tol:
        return SATISFIED
    return VIOLATED if (value > eq_tol or value < -eq_tol) else UNDECIDED


_PROGRAMS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def program_for(problem) -> Program:
    """The compiled program of ``problem`` (objective, then every leaf), cached."""
    prog = _PROGRAMS.get(problem)
    if prog is None:
        roots = [problem.objective] + [lf.expr for lf in problem.leaves]
        prog = _PROGRAMS[problem] = Program(roots, problem.layout)
    return prog
