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

The ball operations and their domains live in :mod:`._balls`.  The sympy trees are
compiled once per problem into a flat program (iteratively, so
deep or wide expressions never recurse); a ``Sum``/``Product`` over vector elements
becomes a loop over a compiled body.
"""

from __future__ import annotations

import weakref

import sympy as sp
from sympy.matrices.expressions.matexpr import MatrixElement

from ._balls import (
    CMPS,
    FUNCS,
    LOGIC,
    UNDEF,
    compare,
    constant,
    flint_module,
    nan,
    pow_const,
    pow_var,
    powi,
    recip,
    strict,
    working_precision,
)
from ._balls import add as _add
from ._balls import mul as _mul
from ._balls import piecewise as _piecewise

__all__ = ["UNDEF", "Program", "program_for", "working_precision", "verdict_of"]

SATISFIED, VIOLATED, UNDECIDED = "satisfied", "violated", "undecided"


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
            return self._push(constant(e), kind="const")
        if isinstance(e, (sp.Sum, sp.Product)):
            return self._reduction(e)
        if isinstance(e, sp.Add):
            return self._push(strict(_add), slots)
        if isinstance(e, sp.Mul):
            return self._push(strict(_mul), slots)
        if isinstance(e, sp.Pow):
            return self._power(e, slots)
        if isinstance(e, sp.Piecewise):
            return self._push(_piecewise, slots)
        for table in (CMPS, LOGIC, FUNCS):
            cls = next((c for c in table if isinstance(e, c)), None)
            if cls is None:
                continue
            if table is CMPS:
                op = table[cls]
                return self._push(lambda a, b, op=op: compare(op, a, b), slots)
            return self._push(table[cls], slots)
        return self._push(nan, kind="const")  # nothing we can bound: never decided

    def _leaf(self, s) -> int:
        if s in self._pos:
            return self._push(self._pos[s], kind="index")
        if s in self._scalar:
            return self._push(self._scalar[s], kind="var")
        if s in self._params:
            return self._push(self._params[s], kind="param")
        return self._push(nan, kind="const")

    def _power(self, e, slots) -> int:
        ex = e.exp
        if not ex.is_number:
            return self._push(strict(pow_var), slots)
        if ex.is_Integer or (ex.is_Float and float(ex).is_integer()):
            n = int(ex)
            return self._push(strict(lambda a, n=n: powi(a, n)), slots)
        if ex.has(sp.nan, sp.zoo) or ex.is_real is False:
            return self._push(lambda: UNDEF, kind="const")
        half = ex == sp.S.Half
        return self._push(strict(lambda a, r, half=half: pow_const(a, r, half)), slots)

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
            return self._push(nan, kind="const")
        return self._push((block, tuple(forms)), kind="elem")

    def _reduction(self, e) -> int:
        body, limits = e.function, list(e.limits)
        for lim in limits[:-1]:  # the first limit is the innermost
            body = type(e)(body, lim)
        sym, lo, hi = _label(limits[-1][0]), limits[-1][1], limits[-1][2]
        if not (sp.sympify(lo).is_Integer and sp.sympify(hi).is_Integer):
            return self._push(nan, kind="const")
        inner = Program([body], self.layout, self.indices + (sym,))
        return self._push((inner, int(lo), int(hi), isinstance(e, sp.Product)),
                          kind="reduce")

    # -- evaluation -----------------------------------------------------------------------
    def run(self, genes, params, env=None) -> list:
        """Evaluate every root; ``genes``/``params`` are lists of exact arb balls."""
        slots: list = []
        env = env or []
        arb = flint_module().arb
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
            return nan()
        k += pos[d] * stride
        stride *= block.shape[d]
    return genes[k]


def _reduce(spec, genes, params, env):
    arb = flint_module().arb
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
        return recip(acc) if prod else -acc
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
