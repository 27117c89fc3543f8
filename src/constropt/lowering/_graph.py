"""sympy expression trees -> a small hash-consed graph (the lowering's IR).

Every node is a tuple ``(op, *operands)``; identical tuples are interned to one id, so
a subexpression that occurs several times in the objective, the constraints or the
derivatives is one node and is computed once (common subexpression elimination by
construction).  Operands are node ids, except for the literal fields listed in
``_LITERAL_FIELDS``.  Constant subtrees are folded to ``("const", value)``.

The builder is a dispatch table from sympy classes to rules, as sympy's printers are;
a class without a rule raises :class:`~constropt.UnsupportedExpressionError` naming it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import sympy as sp
from sympy.logic.boolalg import BooleanFalse, BooleanTrue

from .._errors import ProblemError, UnsupportedExpressionError

__all__ = ["Graph", "Layout", "Block"]

UNARY = {
    sp.exp: "exp", sp.sin: "sin", sp.cos: "cos", sp.tan: "tan", sp.atan: "atan",
    sp.sinh: "sinh", sp.cosh: "cosh", sp.tanh: "tanh", sp.asinh: "asinh",
    sp.Abs: "abs", sp.floor: "floor", sp.ceiling: "ceil", sp.sign: "sign",
    sp.asin: "asin", sp.acos: "acos", sp.acosh: "acosh", sp.atanh: "atanh",
    sp.log: "log",
}
CMP = {sp.StrictLessThan: "<", sp.LessThan: "<=", sp.StrictGreaterThan: ">",
       sp.GreaterThan: ">=", sp.Equality: "==", sp.Unequality: "!="}


@dataclass(frozen=True)
class Block:
    """Where one declared variable lives in the variable-major population ``X``.

    Scalar symbols have ``shape == ()`` and occupy row ``offset``; an ``IndexedBase``
    of shape ``(n,)`` or a ``MatrixSymbol`` of shape ``(r, c)`` occupies ``size`` rows
    from ``offset`` in row-major element order.
    """

    symbol: sp.Basic
    offset: int
    shape: tuple

    @property
    def size(self) -> int:
        return math.prod(self.shape)


@dataclass(frozen=True)
class Layout:
    """Variables (blocks) and parameters, in the order of ``X``'s rows and ``P``."""

    blocks: tuple
    parameters: tuple = ()

    def block_of(self, symbol) -> Block | None:
        for b in self.blocks:
            if b.symbol == symbol:
                return b
        return None


class Graph:
    """Interned nodes in topological order (operands always precede users)."""

    def __init__(self, layout: Layout):
        self.layout = layout
        self.nodes: list[tuple] = []
        self._ids: dict[tuple, int] = {}
        self._axis: list[bool] = []  # node varies along a summation axis
        self._memo: dict = {}
        self._scalar = {b.symbol: b.offset for b in layout.blocks if b.shape == ()}
        self._vector = {b.symbol: b for b in layout.blocks if b.shape != ()}
        self._params = {p: k for k, p in enumerate(layout.parameters)}
        self._index: dict = {}  # active summation index symbol -> (start, stop)

    # -- node construction -------------------------------------------------------
    def node(self, op: str, *args, axis: bool | None = None) -> int:
        key = (op, *args)
        nid = self._ids.get(key)
        if nid is None:
            nid = len(self.nodes)
            self.nodes.append(key)
            self._ids[key] = nid
            if axis is None:
                axis = any(self._axis[a] for a in self.operands(key))
            self._axis.append(axis)
        return nid

    def const(self, value: float) -> int:
        value = float(value)
        if math.isnan(value):
            return self.node("nan")
        return self.node("const", value)

    def is_const(self, nid: int) -> bool:
        return self.nodes[nid][0] in ("const", "nan")

    def varies(self, nid: int) -> bool:
        return self._axis[nid]

    @staticmethod
    def operands(key: tuple) -> tuple:
        """The node-id operands of a node (literal fields excluded)."""
        op = key[0]
        if op in ("const", "nan", "var", "param", "block", "bsum", "index", "true", "false"):
            return ()
        if op in ("powi", "powf"):
            return (key[1],)
        if op == "cmp":
            return key[2:]
        if op in ("fn", "sum"):
            return (key[2],) if op == "fn" else (key[1],)
        return key[1:]

    # -- sympy -> nodes ------------------------------------------------------------
    def lower(self, expr) -> int:
        """Lower one sympy expression or boolean; returns its node id."""
        key = (expr, tuple(sorted(self._index.items(), key=str)))
        hit = self._memo.get(key)
        if hit is None:
            hit = self._memo[key] = self._lower(expr)
        return hit

    def _lower(self, e) -> int:
        if isinstance(e, BooleanTrue):
            return self.node("true")
        if isinstance(e, BooleanFalse):
            return self.node("false")
        if isinstance(e, sp.Expr) and e.is_number:
            return self._number(e)
        if isinstance(e, sp.Symbol):
            return self._symbol(e)
        rule = _RULES.get(type(e))
        if rule is None:
            for cls, r in _RULES.items():
                if isinstance(e, cls):
                    rule = r
                    break
        if rule is None:
            raise UnsupportedExpressionError(
                f"constropt cannot lower {type(e).__name__} (in {e}); supported: arithmetic, "
                "powers, sqrt, exp, log, trigonometric and hyperbolic functions, Abs, sign, "
                "floor, ceiling, Mod, Min, Max, Piecewise, Heaviside, Sum over vector "
                "variables, And/Or/Not of relationals")
        return rule(self, e)

    def _number(self, e) -> int:
        if e in (sp.zoo, sp.nan) or e.has(sp.zoo, sp.nan):
            return self.node("nan")
        v = complex(e.evalf(30))
        if v.imag != 0:
            raise ProblemError(f"complex value {e} in the problem: constropt works over the "
                               "reals")
        return self.const(v.real)

    def _symbol(self, s) -> int:
        if s in self._scalar:
            return self.node("var", self._scalar[s])
        if s in self._params:
            return self.node("param", self._params[s])
        if s in self._index:
            start, stop = self._index[s]
            return self.node("index", start, stop, axis=True)
        raise ProblemError(f"symbol {s} is neither a variable nor a parameter of the problem")


def _add(g: Graph, e) -> int:
    terms = [g.lower(a) for a in e.args]
    consts = [t for t in terms if g.nodes[t][0] == "const"]
    rest = [t for t in terms if g.nodes[t][0] != "const"]
    if consts:
        rest.append(g.const(sum(g.nodes[t][1] for t in consts)))
    return rest[0] if len(rest) == 1 else g.node("add", *rest)


def _mul(g: Graph, e) -> int:
    num, den = [], []
    for a in e.args:
        if isinstance(a, sp.Pow) and a.exp.is_Integer and a.exp < 0 and not a.base.is_number:
            den.append(g.lower(a.base ** (-a.exp)))
        else:
            num.append(g.lower(a))
    coeff = [t for t in num if g.nodes[t][0] == "const"]
    num = [t for t in num if g.nodes[t][0] != "const"]
    if coeff:
        c = math.prod(g.nodes[t][1] for t in coeff)
        if c == -1.0 and num:
            inner = num[0] if len(num) == 1 else g.node("mul", *num)
            top = g.node("neg", inner)
        else:
            top = g.node("mul", g.const(c), *num) if num else g.const(c)
    else:
        top = num[0] if len(num) == 1 else g.node("mul", *num)
    if not den:
        return top
    bottom = den[0] if len(den) == 1 else g.node("mul", *den)
    return g.node("div", top, bottom)


def _pow(g: Graph, e) -> int:
    base, ex = e.args
    if ex.is_Integer:
        n = int(ex)
        b = g.lower(base)
        if n == 0:
            return g.const(1.0)  # sympy: x**0 == 1 for every x, including 0
        if n == 1:
            return b
        mag = b if abs(n) == 1 else g.node("powi", b, abs(n))
        return mag if n > 0 else g.node("recip", mag)
    if ex.is_Rational or (ex.is_number and ex.is_real):
        b = g.lower(base)
        v = float(ex)
        if v == 0.5:
            return g.node("fn", "sqrt", b)
        if v == -0.5:
            return g.node("fn", "rsqrt", b)
        return g.node("powf", b, v)
    return g.node("pow", g.lower(base), g.lower(ex))


def _func(g: Graph, e) -> int:
    name = UNARY[type(e)] if type(e) in UNARY else UNARY[next(c for c in UNARY if isinstance(e, c))]
    return g.node("fn", name, g.lower(e.args[0]))


def _binary(op: str):
    def rule(g: Graph, e) -> int:
        return g.node(op, g.lower(e.args[0]), g.lower(e.args[1]))
    return rule


def _fold(op: str):
    def rule(g: Graph, e) -> int:
        args = [g.lower(a) for a in e.args]
        acc = args[0]
        for a in args[1:]:
            acc = g.node(op, acc, a)
        return acc
    return rule


def _heaviside(g: Graph, e) -> int:
    h0 = e.args[1] if len(e.args) > 1 else sp.Rational(1, 2)
    return g.node("heaviside", g.lower(e.args[0]), g.lower(h0))


def _piecewise(g: Graph, e) -> int:
    acc = g.node("nan")  # no branch matches: NaN, never a silent 0
    for expr, cond in reversed(e.args):
        val = g.lower(expr)
        if isinstance(cond, BooleanTrue):
            acc = val
        elif isinstance(cond, BooleanFalse):
            continue
        else:
            acc = g.node("where", g.lower(cond), val, acc)
    return acc


def _relational(g: Graph, e) -> int:
    return g.node("cmp", CMP[type(e)], g.lower(e.lhs), g.lower(e.rhs))


def _logic(op: str):
    def rule(g: Graph, e) -> int:
        return g.node(op, *[g.lower(a) for a in e.args])
    return rule


def _indexed(g: Graph, e) -> int:
    base, idx = (e.base, e.indices) if isinstance(e, sp.Indexed) else (e.parent, (e.i, e.j))
    block = g._vector.get(base)
    if block is None:
        raise ProblemError(f"{base} in {e} is neither a vector variable nor a parameter")
    if len(idx) != len(block.shape):
        raise ProblemError(f"{e}: {len(idx)} indices for a variable of shape {block.shape}")
    strides = [math.prod(block.shape[k + 1:]) for k in range(len(block.shape))]
    offset, moving, step = block.offset, None, 0
    for k, ix in enumerate(idx):
        ix = sp.sympify(ix)
        if isinstance(ix, sp.Idx):
            ix = ix.label
        free = ix.free_symbols
        if not free:
            j = int(ix)
            if not 0 <= j < block.shape[k]:
                raise ProblemError(f"{e}: index {j} out of range for shape {block.shape}")
            offset += j * strides[k]
            continue
        (s,) = free if len(free) == 1 else (None,)
        if s is None or s not in g._index or sp.diff(ix, s) != 1 or moving is not None:
            raise UnsupportedExpressionError(
                f"{e}: indices must be constants or 'i + c' with one summation index i")
        moving, shift = s, int(ix - s)
        start, stop = g._index[s]
        if start + shift < 0 or stop - 1 + shift >= block.shape[k]:
            raise ProblemError(f"{e}: the summation range reaches outside shape {block.shape}")
        offset += (start + shift) * strides[k]
        step = strides[k]
    if moving is None:
        return g.node("var", offset)
    n = g._index[moving][1] - g._index[moving][0]
    return g.node("block", offset, offset + step * (n - 1) + 1, step, axis=True)


def _sum(g: Graph, e) -> int:
    if len(e.limits) != 1:
        raise UnsupportedExpressionError(f"{e}: only single-index sums are supported")
    (s, lo, hi), = e.limits
    if not (lo.is_Integer and hi.is_Integer):
        raise UnsupportedExpressionError(f"{e}: summation limits must be integers")
    if g._index:
        raise UnsupportedExpressionError(f"{e}: nested sums are not supported")
    start, stop = int(lo), int(hi) + 1
    if stop <= start:
        return g.const(0.0)
    g._index[s] = (start, stop)
    try:
        body = g.lower(e.function)
    finally:
        del g._index[s]
    if not g.varies(body):
        if g.nodes[body][0] == "const":
            return g.const((stop - start) * g.nodes[body][1])
        return body if g.nodes[body][0] == "nan" else g.node("mul", g.const(stop - start), body)
    if g.nodes[body][0] == "block":
        return g.node("bsum", *g.nodes[body][1:], axis=False)
    return g.node("sum", body, axis=False)


_RULES = {
    sp.Add: _add, sp.Mul: _mul, sp.Pow: _pow,
    sp.atan2: _binary("atan2"), sp.Mod: _binary("mod"),
    sp.Min: _fold("min"), sp.Max: _fold("max"),
    sp.Heaviside: _heaviside, sp.Piecewise: _piecewise,
    sp.And: _logic("and"), sp.Or: _logic("or"), sp.Not: _logic("not"),
    sp.Indexed: _indexed, sp.Sum: _sum,
}
for _cls in UNARY:
    _RULES[_cls] = _func
for _cls in CMP:
    _RULES[_cls] = _relational
_RULES[sp.matrices.expressions.matexpr.MatrixElement] = _indexed
