"""Interval backend of the lowering: enclosures over many boxes at once, from the graph.

:class:`IntervalProgram` evaluates the nodes of a :class:`~._graph.Graph` (the same
hash-consed graph the point code is generated from) with the inclusion functions of
:mod:`._rt_interval` and of the function table's rows (:mod:`._interval_rules`), in
topological order: one loop over node ids, no recursion, so
expression depth is unlimited.  Boxes are given as ``lo, hi`` tensors of shape
``(N, B)`` (variable-major, like the point population); every node's enclosure has the
batch shape ``(B,)`` (with leading summation axes inside ``Sum`` bodies).

:meth:`IntervalProgram.contract` is forward-backward bound propagation (HC4-revise):
a forward pass, then targets on constraint roots pushed back to the variables through
the operations whose inverse is known (for functions, their rows' ``inverse``).  A
target is pushed only along *strict* paths (every operation on the way returns NaN when
an operand is NaN), so at every feasible point of the box the node on such a path is a
real number inside its target; the dead branches of ``Piecewise`` never receive targets.

:class:`~._interval_model.IntervalModel` lowers a problem's objective, constraint leaves
and gradients into one graph and one program.
"""

from __future__ import annotations

import math
from functools import partial

from . import _interval_rules as rules
from . import _rt_interval as ri
from . import _rt_interval_logic as rl
from ._graph import FN, MULTI, Graph
from ._interval_ops import ops
from ._interval_rules import even_preimage
from ._rt_interval import Bv, Iv

__all__ = ["IntervalProgram", "reachable"]

inf = math.inf
#: The inclusion functions of the table's rows (one argument, several), by name.
_FN = {name: partial(f.interval, rules, f) for name, f in FN.items()}
_BINARY = {"div": ri.div, "pow": rules.pow,
           **{op: partial(f.interval, rules, f) for op, f in MULTI.items()}}
#: ops whose value is NaN whenever an operand is (targets may pass through them).
_STRICT = {"add", "mul", "neg", "div", "recip", "powi", "powf", "fn", "sum", "prod"} | {
    op for op, f in MULTI.items() if f.strict}
#: Operations a smooth mean-value form may go through (no jumps, no Piecewise); a
#: function only when its row is smooth.
SMOOTH = {"const", "var", "param", "add", "mul", "neg", "div", "recip", "powi", "powf",
          "fn", "index", "slice", "grid", "bsum", "sum", "prod"}


def reachable(graph: Graph, roots) -> list[int]:
    """Ids of the nodes ``roots`` depend on, in topological (id) order."""
    seen: set = set()
    stack = list(roots)
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        stack.extend(graph.operands(graph.nodes[n]))
    return sorted(seen)


class IntervalProgram:
    """Interval evaluation of ``roots`` of ``graph`` (see the module docstring)."""

    def __init__(self, graph: Graph, roots):
        self.graph = graph
        self.roots = tuple(roots)
        self.order = reachable(graph, self.roots)

    def is_smooth(self, node: int) -> bool:
        """Whether ``node`` is continuously differentiable wherever it is defined (so a
        mean-value form over its exact derivative encloses it)."""
        for n in reachable(self.graph, [node]):
            key = self.graph.nodes[n]
            if key[0] not in SMOOTH or (key[0] == "fn" and not FN[key[1]].smooth):
                return False
            if key[0] == "powf" and 0 < key[2] < 1:
                return False  # unbounded derivative at 0
        return True

    # -- forward ---------------------------------------------------------------------
    def order_for(self, nodes) -> list[int]:
        key = tuple(sorted(set(nodes)))
        cache = self.__dict__.setdefault("_orders", {})
        if key not in cache:
            cache[key] = reachable(self.graph, key)
        return cache[key]

    def forward(self, lo, hi, P, only=None) -> dict:
        """Enclosures ``{node: Iv or Bv}`` over the boxes ``[lo, hi]`` (shape ``(N, B)``).

        ``P`` : tensor, shape ``(n_params,)`` (point values) or a pair of such tensors
        ``(P_lo, P_hi)`` (parameters known only to lie in a range).
        """
        g = self.graph
        xp = ops(lo)
        like = xp.asarray(0.0, lo)
        vals: dict = {}
        order = self.order if only is None else self.order_for(only)
        for n in order:
            key = g.nodes[n]
            vals[n] = self._node(key, vals, lo, hi, P, like, xp)
        return vals

    def _node(self, key, v, lo, hi, P, like, xp):  # noqa: C901 - one dispatch table
        op = key[0]
        if op == "const":
            return ri.point(key[1], like)
        if op == "nan":
            return Iv(like + inf, like - inf, xp.bool_scalar(True, like))
        if op in ("true", "false"):
            return rl.const_bool(op == "true", like)
        if op == "var":
            return Iv(lo[key[1]], hi[key[1]], xp.false_like(lo[key[1]]))
        if op == "param":
            if isinstance(P, tuple):
                return Iv(P[0][key[1]], P[1][key[1]], xp.bool_scalar(False, like))
            return ri.point(P[key[1]], like)
        if op == "index":
            return ri.point(xp.index(*key[1:], lo, lo.dtype), like)
        if op in ("slice", "bsum"):
            a, b, step = key[1:4]
            ends = (lo[a:b:step], hi[a:b:step])
            if op == "bsum":
                iv = Iv(*ends, xp.bool_scalar(False, like))
                return rl.rsum(iv, 0, 0)
            d, D = key[4:]
            ends = tuple(xp.lift(t, d, D, lo.dtype) for t in ends)
            return Iv(*ends, xp.bool_scalar(False, like))
        if op == "grid":
            ends = tuple(xp.grid(t, key[1], key[2], key[3], lo.dtype) for t in (lo, hi))
            return Iv(*ends, xp.bool_scalar(False, like))
        if op == "add":
            return ri.add(*(v[a] for a in key[1:]))
        if op == "mul":
            return ri.mul(*(v[a] for a in key[1:]))
        if op == "neg":
            return ri.neg(v[key[1]])
        if op == "recip":
            return ri.recip(v[key[1]])
        if op == "powi":
            return ri.powi(v[key[1]], key[2])
        if op == "powf":
            return ri.powf(v[key[1]], key[2])
        if op == "fn":
            return _FN[key[1]](v[key[2]])
        if op in _BINARY:
            return _BINARY[op](v[key[1]], v[key[2]])
        if op == "cmp":
            return rl.cmp(key[1], v[key[2]], v[key[3]])
        if op == "where":
            c, a, b = (v[k] for k in key[1:])
            return rl.where_bool(c, a, b) if isinstance(a, Bv) else rl.where(c, a, b)
        if op == "and":
            return rl.and_(*(v[a] for a in key[1:]))
        if op == "or":
            return rl.or_(*(v[a] for a in key[1:]))
        if op == "not":
            return rl.not_(v[key[1]])
        if op == "xor":
            return rl.xor(v[key[1]], v[key[2]])
        if op == "sum":
            return rl.rsum(v[key[1]], key[2], key[3])
        if op == "prod":
            return rl.rprod(v[key[1]], key[2], key[3])
        if op == "minkey":
            a = v[key[1]]
            return Iv(a.lo, xp.where(a.nan, inf, a.hi), xp.false_like(a.nan))
        raise AssertionError(f"no inclusion function for node {op}")  # pragma: no cover

    # -- backward ----------------------------------------------------------------------
    def contract(self, lo, hi, P, targets, integer=None, rounds: int = 4):
        """Forward-backward propagation: shrink the boxes to the points where every
        target ``node in [t_lo, t_hi]`` can hold (with the node's value not NaN).

        Parameters
        ----------
        lo, hi : Tensor, shape (N, B)
        P : Tensor, shape (n_params,), or a pair (P_lo, P_hi)
        targets : list of (node, t_lo, t_hi)
            ``t_lo``, ``t_hi`` numbers or tensors of shape ``(B,)``.
        integer : Tensor of bool, shape (N,), optional
            Integer variables: their bounds are rounded inward.
        rounds : int
            Forward-backward sweeps.

        Returns
        -------
        lo, hi : Tensor, shape (N, B)
            The contracted boxes (never larger than the input).
        empty : Tensor of bool, shape (B,)
            Boxes proven to contain no point where all targets hold.
        """
        xp = ops(lo)
        empty = xp.zeros_bool(lo.shape[1:], lo)
        order = self.order_for([t[0] for t in targets])
        for _ in range(rounds):
            vals = self.forward(lo, hi, P, only=[t[0] for t in targets])
            lo, hi, emp = self._backward(vals, lo, hi, targets, order)
            if integer is not None and bool(integer.any()):
                col = integer.reshape(-1, *([1] * (lo.ndim - 1)))
                lo = xp.where(col, xp.ceil(lo), lo)
                hi = xp.where(col, xp.floor(hi), hi)
            empty = empty | emp | (lo > hi).any(0)
        return lo, hi, empty

    def _backward(self, vals, lo, hi, targets, order, want=None):  # noqa: C901
        """One backward sweep; ``want`` (an empty dict, optional) receives the node ranges
        the targets imply (valid at the feasible points of each box)."""
        g = self.graph
        xp = ops(lo)
        batch = lo.shape[1:]
        empty = xp.zeros_bool(batch, lo)
        want = {} if want is None else want

        def push(n, t: Iv):
            cur = want.get(n)
            if cur is None:
                cur = vals[n]
                if not isinstance(cur, Iv):
                    return
                cur = Iv(cur.lo, cur.hi, cur.nan)
            want[n] = Iv(xp.maximum(cur.lo, t.lo), xp.minimum(cur.hi, t.hi), cur.nan)

        for n, tlo, thi in targets:
            like = vals[n].lo
            push(n, Iv(xp.asarray(tlo, like), xp.asarray(thi, like), False))
        new_lo, new_hi = xp.copy(lo), xp.copy(hi)
        def now(a):  # the narrowest range known for node a (its consumers came first)
            w = want.get(a)
            return vals[a] if w is None else w

        for n in reversed(order):
            t = want.get(n)
            if t is None:
                continue
            e = ~(t.lo <= t.hi)
            if e.ndim <= len(batch):
                empty = empty | e
            key = g.nodes[n]
            op = key[0]
            if op == "var":
                k = key[1]
                new_lo[k] = xp.maximum(new_lo[k], t.lo)
                new_hi[k] = xp.minimum(new_hi[k], t.hi)
                continue
            if op not in _STRICT:
                continue
            args = [a for a in g.operands(key)]
            av = [vals[a] for a in args]
            if any(not isinstance(a, Iv) or a.lo.ndim > len(batch) for a in av):
                continue  # summation bodies: no backward rule
            if op == "add":
                for i, o in _others(av, ri.add):
                    push(args[i], ri.sub(t, o))
            elif op == "neg":
                push(args[0], ri.neg(t))
            elif op == "mul":
                for i, o in _others(av, ri.mul):
                    push(args[i], _inv_mul(t, o, now(args[i])))
            elif op == "div":
                a, b = av
                push(args[0], ri.mul2(t, b))
                push(args[1], _inv_mul(a, t, now(args[1])))  # b = a / t
            elif op == "recip":
                push(args[0], _inv_mul(ri.point(1.0, t.lo), t, now(args[0])))
            elif op == "powi":
                push(args[0], _inv_powi(t, key[2], av[0]))
            elif op == "powf":
                push(args[0], _inv_powf(t, key[2]))
            elif op == "fn" or op in MULTI:  # a function of the table: its preimage rule
                f = FN[key[1]] if op == "fn" else MULTI[op]
                if f.inverse is not None:
                    pre = f.inverse(rules, t, *av)
                    for a, p in zip(args, (pre,) if f.arity == 1 else pre):
                        push(a, p)
        return new_lo, new_hi, empty


def _others(av, combine):
    """``(i, combine of all operands but i)`` with prefix and suffix combinations."""
    k = len(av)
    pre = [None] * k
    suf = [None] * k
    for i in range(1, k):
        pre[i] = av[0] if i == 1 else combine(pre[i - 1], av[i - 1])
    for i in range(k - 2, -1, -1):
        suf[i] = av[k - 1] if i == k - 2 else combine(av[i + 1], suf[i + 1])
    for i in range(k):
        parts = [p for p in (pre[i], suf[i]) if p is not None]
        yield i, parts[0] if len(parts) == 1 else combine(*parts)


def _entire(like) -> Iv:
    xp = ops(like)
    return Iv(xp.full_like(like, -inf), xp.full_like(like, inf), False)


def _inv_mul(t: Iv, o: Iv, cur: Iv | None = None) -> Iv:
    """``{x : x * y in t for some y in o}`` (everything when 0 is in both).  With the
    current range ``cur`` of ``x``, a ``t`` that excludes 0 over an ``o`` that
    contains it uses extended division: two half-lines, each intersected with ``cur``
    before their hull (``b = a / t``, ``t <= 12560``, ``b >= 0`` gives ``b >= a / 12560``)."""
    xp = ops(t.lo)
    q = ri.div(Iv(t.lo, t.hi, xp.false_like(t.lo)), o)
    free = (t.lo <= 0) & (t.hi >= 0) & (o.lo <= 0) & (o.hi >= 0)
    lo, hi = xp.where(free, -inf, q.lo), xp.where(free, inf, q.hi)
    if cur is None:
        return Iv(lo, hi, q.nan)
    pos, neg = t.lo > 0, t.hi < 0
    split = (pos | neg) & (o.lo <= 0) & (o.hi >= 0)
    num = xp.where(pos, t.lo, t.hi)
    l_ok = xp.where(pos, o.lo < 0, o.hi > 0)  # x <= num / l_den
    r_ok = xp.where(pos, o.hi > 0, o.lo < 0)  # x >= num / r_den
    # the left piece has x < 0, the right one x > 0 (so x <= 0 and x >= 0 hold)
    l_hi = xp.minimum(cur.hi, xp.clamp(ri.up(num / xp.where(pos, o.lo, o.hi)), max=0.0))
    r_lo = xp.maximum(cur.lo, xp.clamp(ri.down(num / xp.where(pos, o.hi, o.lo)), min=0.0))
    l_ok = l_ok & (cur.lo <= l_hi) & (cur.lo < 0)
    r_ok = r_ok & (r_lo <= cur.hi) & (cur.hi > 0)
    s_lo = xp.where(l_ok, cur.lo, xp.where(r_ok, r_lo, inf))
    s_hi = xp.where(r_ok, cur.hi, xp.where(l_ok, l_hi, -inf))
    return Iv(xp.where(split, s_lo, lo), xp.where(split, s_hi, hi), q.nan)


def _root(v, k: float, up: bool):
    """``|v| ** (1/k)`` rounded outward (for the magnitudes of targets).  Square roots
    and reciprocals use the correctly rounded operations (the same bits on NumPy and
    torch), other powers the library's ``pow`` (widened like a transcendental)."""
    xp = ops(v)
    if k == 2:
        r = xp.sqrt(xp.abs(v))
    elif k == -1:
        r = 1.0 / xp.abs(v)
    else:
        r = xp.abs(v) ** (1.0 / k)
    return ri.wup(r) if up else xp.clamp(ri.wdown(r), min=0.0)


def _inv_powi(t: Iv, n: int, cur: Iv) -> Iv:
    xp = ops(t.lo)
    if n % 2:
        lo = xp.where(t.lo < 0, -_root(t.lo, n, True), _root(t.lo, n, False))
        hi = xp.where(t.hi < 0, -_root(t.hi, n, False), _root(t.hi, n, True))
        return Iv(lo, hi, t.nan)
    ilo = xp.where(t.lo > 0, _root(t.lo, n, False), 0.0)
    ihi = xp.where(t.hi >= 0, _root(t.hi, n, True), -inf)
    return even_preimage(cur, ilo, ihi)


def _inv_powf(t: Iv, e: float) -> Iv:
    xp = ops(t.lo)
    tlo = xp.clamp(t.lo, min=0.0)
    a = _root(tlo, e, False) if e > 0 else _root(tlo, e, True)
    b = _root(t.hi, e, True) if e > 0 else _root(t.hi, e, False)
    if e > 0:
        return Iv(a, xp.where(t.hi < 0, -inf, b), t.nan)
    return Iv(xp.where(t.hi <= 0, inf, b), a, t.nan)
