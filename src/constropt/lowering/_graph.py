"""sympy expression trees -> a small hash-consed graph (the lowering's IR).

Every node is a tuple ``(op, *fields)``; identical tuples are interned to one id, so a
subexpression that occurs several times in the objective, the constraints or the
derivatives is one node and is computed once (common subexpression elimination by
construction).  Which fields are node ids is given by :data:`OPERANDS`; the others are
literals.  A node whose operands are all constants is folded to ``("const", value)``
(with the NumPy runtime, so folding has the runtime's semantics).

Inside ``Sum`` bodies nodes carry summation axes: the active indices form a stack of
``D`` axes, and a node that varies along any of them has ``D`` leading axes (size 1
where it does not vary) in front of the batch axes; see :mod:`._sums`.

The builder is a dispatch table from sympy classes to rules, as sympy's printers are:
arithmetic, ``Piecewise`` and logic here, every function from its row of the function
table (:mod:`._functions`); a class without a rule raises
:class:`~constropt.UnsupportedExpressionError` naming it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import sympy as sp
from sympy.core.function import AppliedUndef
from sympy.logic.boolalg import BooleanFalse, BooleanTrue

from .._errors import ProblemError, UnsupportedExpressionError
from . import _rt_numpy
from ._functions import FUNCTIONS, NODE_FUNCTIONS, SYMPY_CLASSES

__all__ = ["Graph", "Layout", "Block", "RULES", "OPERANDS", "SUPPORTED", "product",
           "int_power", "balanced", "add_terms"]

CMP = {sp.StrictLessThan: "<", sp.LessThan: "<=", sp.StrictGreaterThan: ">",
       sp.GreaterThan: ">=", sp.Equality: "==", sp.Unequality: "!="}
SUPPORTED = ("arithmetic, powers, sqrt, " + ", ".join(c.__name__ for c in SYMPY_CLASSES)
             + ", Piecewise, Sum and Product over vector variables, And/Or/Not/Xor of "
             "relationals")

_LEAVES = ("const", "nan", "true", "false", "var", "param", "index", "slice", "grid", "bsum",
           "cvec", "gather", "ctab")
#: op -> positions (in the node tuple) of operands that are node ids; default: all.
OPERANDS = {op: () for op in _LEAVES}
OPERANDS.update({"powi": (1,), "powf": (1,), "fn": (2,), "cmp": (2, 3), "sum": (1,),
                 "prod": (1,), "matvec": (2,)})
#: The table's functions of one argument (``("fn", name, a)``) and of several
#: (``(name, a, b)``), by name.
FN = {f.name: f for f in NODE_FUNCTIONS if f.arity == 1}
MULTI = {f.name: f for f in NODE_FUNCTIONS if f.arity != 1}
#: ops whose result is never NaN when no operand is (overflow aside); see ``may_nan``.
_TOTAL = {"add", "mul", "neg", "powi", "cmp", "and", "or", "not", "xor", "where", "sum",
          "prod", "const", "true", "false", "var", "param", "index", "slice", "grid",
          "bsum", "cvec", "gather", "ctab", "matvec", "all"} | {
              op for op, f in MULTI.items() if f.total}
#: ops folded by the NumPy runtime's function of that name.
_FOLD = {"div": "div", "pow": "pow", "recip": "recip", "minkey": "minimize_key",
         **{op: f.runtime_name for op, f in MULTI.items()}}
_CMP = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal,
        "==": np.equal, "!=": np.not_equal}


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
        self._axes: list[frozenset] = []  # summation axes (depths) a node varies along
        self._nan: list[bool] = []  # node may be NaN although no variable is
        self._memo: dict = {}
        self._scalar = {b.symbol: b.offset for b in layout.blocks if b.shape == ()}
        self.vector = {b.symbol: b for b in layout.blocks if b.shape != ()}
        self._params = {p: k for k, p in enumerate(layout.parameters)}
        self.ctx: list[tuple] = []  # active summation indices: (symbol, start, stop)
        #: the fewest like terms of an ``Add`` lowered as one vector operation
        #: (:mod:`._liketerms`); None keeps every sum unrolled
        self.like_terms: int | None = None

    # -- node construction -------------------------------------------------------
    def node(self, op: str, *args, axes: frozenset | None = None) -> int:
        key = (op, *args)
        nid = self._ids.get(key)
        if nid is not None:
            return nid
        opnds = self.operands(key)
        if op == "where" and self.is_const(args[0]):
            return args[1] if self.value(args[0]) else args[2]
        if opnds and op in _FOLDABLE and all(self.is_const(a) for a in opnds):
            return self._fold(key)
        nid = len(self.nodes)
        self.nodes.append(key)
        self._ids[key] = nid
        if axes is None:
            axes = frozenset().union(*(self._axes[a] for a in opnds))
        self._axes.append(axes)
        total = op in _TOTAL or (op == "fn" and FN[key[1]].total)
        self._nan.append(not total or any(self._nan[a] for a in opnds))
        return nid

    def const(self, value: float) -> int:
        value = float(value)
        if math.isnan(value):
            return self.node("nan")
        return self.node("const", value)

    def is_const(self, nid: int) -> bool:
        return self.nodes[nid][0] in ("const", "nan", "true", "false")

    def value(self, nid: int):
        op = self.nodes[nid][0]
        return {"nan": math.nan, "true": True, "false": False}.get(op, self.nodes[nid][-1])

    def axes(self, nid: int) -> frozenset:
        return self._axes[nid]

    def may_nan(self, nid: int) -> bool:
        return self._nan[nid]

    @staticmethod
    def operand_positions(key: tuple):
        """The positions in ``key`` of its node-id operands (literal fields excluded)."""
        pos = OPERANDS.get(key[0])
        return range(1, len(key)) if pos is None else pos

    @staticmethod
    def operands(key: tuple) -> tuple:
        """The node-id operands of a node (literal fields excluded)."""
        return tuple(key[p] for p in Graph.operand_positions(key))

    def _fold(self, key: tuple) -> int:
        op = key[0]
        v = [self.value(a) for a in self.operands(key)]
        f = [np.float64(x) for x in v]
        with np.errstate(all="ignore"):
            if op in ("and", "or", "xor", "not"):
                r = {"and": all(v), "or": any(v), "xor": sum(map(bool, v)) % 2 == 1,
                     "not": not v[0]}[op]
                return self.node("true" if r else "false")
            if op == "cmp":
                return self.node("true" if _CMP[key[1]](f[0], f[1]) else "false")
            if op == "add":
                r = sum(f)
            elif op == "mul":
                r = math.prod(f)
            elif op == "neg":
                r = -f[0]
            elif op == "powi":
                r = _rt_numpy.powi(f[0], key[2])
            elif op == "powf":
                r = _rt_numpy.powf(f[0], key[2])
            elif op == "fn":
                r = getattr(_rt_numpy, FN[key[1]].runtime_name)(f[0])
            else:
                r = getattr(_rt_numpy, _FOLD[op])(*f)
        if isinstance(r, (bool, np.bool_)):  # a test (isnan)
            return self.node("true" if r else "false")
        return self.const(float(r))

    # -- sympy -> nodes ------------------------------------------------------------
    def lower(self, expr) -> int:
        """Lower one sympy expression or boolean; returns its node id.

        The operands are lowered first, bottom-up with an explicit stack (see
        :meth:`_lower_operands`), so a rule only ever looks one level down and a deep
        expression never exhausts Python's recursion limit.
        """
        ctx = tuple(self.ctx)
        hit = self._memo.get((expr, ctx))
        if hit is None:
            self._lower_operands(expr, ctx)
            hit = self._memo[(expr, ctx)] = self._lower(expr)
        return hit

    def _lower_operands(self, expr, ctx: tuple) -> None:
        """Memoize every plain operand below ``expr``, deepest first, without recursion.

        Only classes whose operands are lowered in the same summation context are
        entered (not ``Sum``/``Product``, which push an index, nor constants).
        """
        stack = [(a, False) for a in reversed(_plain_operands(expr))]
        pending = set()
        while stack:
            e, ready = stack.pop()
            if ready:
                self._memo[(e, ctx)] = self._lower(e)
                continue
            if (e, ctx) in self._memo or e in pending:
                continue
            pending.add(e)
            stack.append((e, True))
            stack.extend((a, False) for a in reversed(_plain_operands(e))
                         if (a, ctx) not in self._memo)

    def _lower(self, e) -> int:
        if isinstance(e, BooleanTrue):
            return self.node("true")
        if isinstance(e, BooleanFalse):
            return self.node("false")
        if isinstance(e, sp.Expr) and e.is_number:
            return self._number(e)
        if isinstance(e, (sp.Symbol, sp.Idx)):
            return self._symbol(e)
        rule = RULES.get(type(e))
        if rule is None:
            rule = next((r for cls, r in RULES.items() if isinstance(e, cls)), None)
        if rule is None:
            what = type(e).__name__
            if isinstance(e, AppliedUndef):
                what = f"the undefined function {what} (AppliedUndef)"
            raise UnsupportedExpressionError(
                f"constropt cannot lower {what} (in {e}); supported: {SUPPORTED}")
        return rule(self, e)

    def _number(self, e) -> int:
        if e.is_Rational or e.is_Float:  # the common constants: one correct rounding,
            try:  # without evalf's 30 digits (sympy's slowest step on linear rows)
                return self.const(float(e))
            except OverflowError:  # beyond float64: as evalf's route rounds it below
                pass
        if e.has(sp.zoo, sp.nan):
            return self.node("nan")
        try:
            v = complex(e.evalf(30))
        except (TypeError, ValueError):
            raise UnsupportedExpressionError(
                f"constropt cannot evaluate the constant {e} ({type(e).__name__})") from None
        return self.const(v.real if v.imag == 0 else math.nan)  # complex: NaN, as sympy's

    def _symbol(self, s) -> int:
        if isinstance(s, sp.Idx):
            s = s.label
        for d in range(len(self.ctx) - 1, -1, -1):
            sym, start, stop = self.ctx[d]
            if sym == s:
                return self.node("index", start, stop, d, len(self.ctx),
                                 axes=frozenset((d,)))
        if s in self._scalar:
            return self.node("var", self._scalar[s])
        if s in self._params:
            return self.node("param", self._params[s])
        raise ProblemError(f"symbol {s} is neither a variable nor a parameter of the problem")


def _plain_operands(e) -> tuple:
    """The sympy operands of ``e`` that its rule lowers in the current context."""
    if not isinstance(e, _SAME_CONTEXT) or (isinstance(e, sp.Expr) and e.is_number):
        return ()
    if isinstance(e, sp.Piecewise):
        return tuple(a for pair in e.args for a in pair.args)
    return tuple(a for a in e.args if not (isinstance(a, sp.Expr) and a.is_number))


_FOLDABLE = {"add", "mul", "neg", "powi", "powf", "fn", "cmp", "where", "and", "or", "not",
             "xor"} | set(_FOLD)


def add_terms(g: Graph, terms: list) -> int:
    """The sum of nodes ``terms``, its constants folded into one at the end."""
    consts = [t for t in terms if g.nodes[t][0] == "const"]
    rest = [t for t in terms if g.nodes[t][0] != "const"]
    if consts:
        c = sum(g.nodes[t][1] for t in consts)
        if c != 0 or not rest:
            rest.append(g.const(c))
    return rest[0] if len(rest) == 1 else g.node("add", *rest)


def _add(g: Graph, e) -> int:
    return add_terms(g, [g.lower(a) for a in e.args])


def product(g: Graph, factors: list) -> int:
    """Product of nodes with the constant factors folded in front (``-1`` as ``neg``)."""
    coeff = [t for t in factors if g.nodes[t][0] == "const"]
    rest = [t for t in factors if g.nodes[t][0] != "const"]
    c = math.prod(g.nodes[t][1] for t in coeff)
    if not rest:
        return g.const(c)
    inner = rest[0] if len(rest) == 1 else g.node("mul", *rest)
    if c == 1.0:
        return inner
    if c == -1.0:
        return g.node("neg", inner)
    return g.node("mul", g.const(c), *rest)


def _mul(g: Graph, e) -> int:
    num, den = [], []
    for a in e.args:
        if isinstance(a, sp.Pow) and a.exp.is_Integer and a.exp < 0 and not a.base.is_number:
            den.append(g.lower(a.base ** (-a.exp)))
        else:
            num.append(g.lower(a))
    top = product(g, num)
    if not den:
        return top
    return g.node("div", top, den[0] if len(den) == 1 else g.node("mul", *den))


def int_power(g: Graph, b: int, n: int) -> int:
    """``b ** n`` for an integer ``n`` (``powi``, ``recip``)."""
    if n == 0:
        return g.const(1.0)  # sympy: x**0 == 1 for every x, including 0
    mag = b if abs(n) == 1 else g.node("powi", b, abs(n))
    return mag if n > 0 else g.node("recip", mag)


def _pow(g: Graph, e) -> int:
    base, ex = e.args
    if ex.is_Integer or (ex.is_Float and float(ex).is_integer() and abs(float(ex)) < 2**31):
        return int_power(g, g.lower(base), int(ex))
    if ex.is_number and ex.is_real:
        b = g.lower(base)
        v = float(ex)
        if v == 0.5:
            return g.node("fn", "sqrt", b)
        if v == -0.5:
            return g.node("fn", "rsqrt", b)
        return g.node("powf", b, v)
    return g.node("pow", g.lower(base), g.lower(ex))


def _table_rule(f):
    """The rule of a row of the function table: its node (``("fn", name, a)`` for one
    argument, a balanced tree of pairs for any number) or its ``lower``."""
    def rule(g: Graph, e) -> int:
        if f.arity == 1 and len(e.args) != 1:
            raise UnsupportedExpressionError(f"constropt cannot lower {type(e).__name__} "
                                             f"with {len(e.args)} arguments (in {e})")
        args = [g.lower(a) for a in e.args]
        if f.lower is not None:
            return f.lower(g, *args)
        if f.arity is None:
            return balanced(g, f.name, args)
        return g.node("fn", f.name, *args) if f.arity == 1 else g.node(f.name, *args)
    return rule


def balanced(g: Graph, op: str, args: list) -> int:
    """A binary ``op`` over ``args`` as a balanced tree (depth log2 n, not n)."""
    args = list(args)
    while len(args) > 1:
        pairs = [g.node(op, a, b) for a, b in zip(args[0::2], args[1::2])]
        args = pairs + args[len(pairs) * 2:]
    return args[0]


def _undefined_if_nan(g: Graph, cond: int) -> int | None:
    """A node true where a relational inside ``cond`` compares NaN (sympy raises)."""
    if not g.may_nan(cond):
        return None
    key = g.nodes[cond]
    if key[0] == "cmp":
        bad = [g.node("fn", "isnan", a) for a in key[2:] if g.may_nan(a)]
    else:
        bad = [b for a in g.operands(key) if (b := _undefined_if_nan(g, a)) is not None]
    if not bad:
        return None
    return bad[0] if len(bad) == 1 else g.node("or", *bad)


def _piecewise(g: Graph, e) -> int:
    acc = g.node("nan")  # no branch matches: NaN, never a silent 0
    for expr, cond in reversed(e.args):
        val = g.lower(expr)
        if isinstance(cond, BooleanTrue):
            acc = val
        elif not isinstance(cond, BooleanFalse):
            c = g.lower(cond)
            acc = g.node("where", c, val, acc)
            bad = _undefined_if_nan(g, c)
            if bad is not None:  # a NaN comparison: sympy cannot decide, neither do we
                acc = g.node("where", bad, g.node("nan"), acc)
    return acc


def _relational(g: Graph, e) -> int:
    return g.node("cmp", CMP[type(e)], g.lower(e.lhs), g.lower(e.rhs))


def _logic(op: str):
    def rule(g: Graph, e) -> int:
        return g.node(op, *[g.lower(a) for a in e.args])
    return rule


def _xor(g: Graph, e) -> int:
    return balanced(g, "xor", [g.lower(a) for a in e.args])


RULES: dict = {sp.Add: _add, sp.Mul: _mul, sp.Pow: _pow}
for _f in FUNCTIONS:
    for _cls in _f.sympy:
        RULES[_cls] = _table_rule(_f)
RULES.update({sp.Piecewise: _piecewise, sp.And: _logic("and"), sp.Or: _logic("or"),
              sp.Not: _logic("not"), sp.Xor: _xor})
for _cls in CMP:
    RULES[_cls] = _relational
#: Classes whose rule lowers ``e.args`` in the enclosing context (entered iteratively).
_SAME_CONTEXT = tuple(RULES)
