"""Interval backend of the lowering: enclosures over many boxes at once, from the graph.

:class:`IntervalProgram` evaluates the nodes of a :class:`~._graph.Graph` (the same
hash-consed graph the point code is generated from) with the inclusion functions of
:mod:`._rt_interval`, in topological order: one loop over node ids, no recursion, so
expression depth is unlimited.  Boxes are given as ``lo, hi`` tensors of shape
``(N, B)`` (variable-major, like the point population); every node's enclosure has the
batch shape ``(B,)`` (with leading summation axes inside ``Sum`` bodies).

:meth:`IntervalProgram.contract` is forward-backward bound propagation (HC4-revise):
a forward pass, then targets on constraint roots pushed back to the variables through
the operations whose inverse is known.  A target is pushed only along *strict* paths
(every operation on the way returns NaN when an operand is NaN), so at every feasible
point of the box the node on such a path is a real number inside its target; the dead
branches of ``Piecewise`` never receive targets.

:class:`~._interval_model.IntervalModel` lowers a problem's objective, constraint leaves
and gradients into one graph and one program.
"""

from __future__ import annotations

import math

import torch

from . import _rt_interval as ri
from . import _rt_interval_logic as rl
from . import _rt_torch
from ._graph import Graph
from ._rt_interval import Bv, Iv

__all__ = ["IntervalProgram", "reachable"]

inf = math.inf
_BINARY = {"div": ri.div, "pow": ri.pow, "atan2": ri.atan2, "mod": ri.mod,
           "min": ri.minimum, "max": ri.maximum, "heaviside": rl.heaviside}
_FN = {k: getattr(ri, k) for k in (
    "exp", "sin", "cos", "tan", "atan", "sinh", "cosh", "tanh", "asinh", "abs", "floor",
    "ceil", "sign", "asin", "acos", "acosh", "atanh", "log", "sqrt", "rsqrt")}
#: ops whose value is NaN whenever an operand is (targets may pass through them).
_STRICT = {"add", "mul", "neg", "div", "recip", "powi", "powf", "fn", "atan2", "mod",
           "min", "max", "sum", "prod"}
#: Operations a smooth mean-value form may go through (no jumps, no Piecewise).
SMOOTH = {"const", "var", "param", "add", "mul", "neg", "div", "recip", "powi", "powf",
          "fn", "index", "slice", "grid", "bsum", "sum", "prod"}
SMOOTH_FN = {"exp", "sin", "cos", "tan", "atan", "sinh", "cosh", "tanh", "asinh", "log",
             "sqrt", "rsqrt", "asin", "acos", "acosh", "atanh", "abs"}


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
            if key[0] not in SMOOTH or (key[0] == "fn" and key[1] not in SMOOTH_FN):
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
        like = lo.new_zeros(())
        vals: dict = {}
        order = self.order if only is None else self.order_for(only)
        for n in order:
            key = g.nodes[n]
            vals[n] = self._node(key, vals, lo, hi, P, like)
        return vals

    def _node(self, key, v, lo, hi, P, like):  # noqa: C901 - one dispatch table
        op = key[0]
        if op == "const":
            return ri.point(key[1], like)
        if op == "nan":
            return Iv(like + inf, like - inf, like.new_ones((), dtype=torch.bool))
        if op in ("true", "false"):
            return rl.const_bool(op == "true", like)
        if op == "var":
            return Iv(lo[key[1]], hi[key[1]], torch.zeros_like(lo[key[1]], dtype=torch.bool))
        if op == "param":
            if isinstance(P, tuple):
                return Iv(P[0][key[1]], P[1][key[1]], like.new_zeros((), dtype=torch.bool))
            return ri.point(P[key[1]], like)
        if op == "index":
            return ri.point(_rt_torch.index(*key[1:], lo, lo.dtype), like)
        if op in ("slice", "bsum"):
            a, b, step = key[1:4]
            ends = (lo[a:b:step], hi[a:b:step])
            if op == "bsum":
                iv = Iv(*ends, torch.zeros((), dtype=torch.bool, device=lo.device))
                return rl.rsum(iv, 0, 0)
            d, D = key[4:]
            ends = tuple(_rt_torch.lift(t, d, D, lo.dtype) for t in ends)
            return Iv(*ends, torch.zeros((), dtype=torch.bool, device=lo.device))
        if op == "grid":
            ends = tuple(_rt_torch.grid(t, key[1], key[2], key[3], lo.dtype) for t in (lo, hi))
            return Iv(*ends, torch.zeros((), dtype=torch.bool, device=lo.device))
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
            if key[1] == "isnan":
                return rl.isnan(v[key[2]])
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
            return Iv(a.lo, torch.where(a.nan, inf, a.hi), torch.zeros_like(a.nan))
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
        empty = torch.zeros(lo.shape[1:], dtype=torch.bool, device=lo.device)
        order = self.order_for([t[0] for t in targets])
        for _ in range(rounds):
            vals = self.forward(lo, hi, P, only=[t[0] for t in targets])
            lo, hi, emp = self._backward(vals, lo, hi, targets, order)
            if integer is not None and bool(integer.any()):
                col = integer.reshape(-1, *([1] * (lo.dim() - 1)))
                lo = torch.where(col, torch.ceil(lo), lo)
                hi = torch.where(col, torch.floor(hi), hi)
            empty = empty | emp | (lo > hi).any(0)
        return lo, hi, empty

    def _backward(self, vals, lo, hi, targets, order, want=None):  # noqa: C901
        """One backward sweep; ``want`` (a dict, optional) receives the node ranges the
        targets imply (valid at the feasible points of each box)."""
        g = self.graph
        batch = lo.shape[1:]
        empty = torch.zeros(batch, dtype=torch.bool, device=lo.device)
        want = {} if want is None else want

        def push(n, t: Iv):
            cur = want.get(n)
            if cur is None:
                cur = vals[n]
                if not isinstance(cur, Iv):
                    return
                cur = Iv(cur.lo, cur.hi, cur.nan)
            want[n] = Iv(torch.maximum(cur.lo, t.lo), torch.minimum(cur.hi, t.hi), cur.nan)

        for n, tlo, thi in targets:
            like = vals[n].lo
            push(n, Iv(torch.as_tensor(tlo, dtype=like.dtype, device=like.device),
                       torch.as_tensor(thi, dtype=like.dtype, device=like.device), False))
        new_lo, new_hi = lo.clone(), hi.clone()
        def now(a):  # the narrowest range known for node a (its consumers came first)
            w = want.get(a)
            return vals[a] if w is None else w

        for n in reversed(order):
            t = want.get(n)
            if t is None:
                continue
            e = ~(t.lo <= t.hi)
            if e.dim() <= len(batch):
                empty = empty | e
            key = g.nodes[n]
            op = key[0]
            if op == "var":
                k = key[1]
                new_lo[k] = torch.maximum(new_lo[k], t.lo)
                new_hi[k] = torch.minimum(new_hi[k], t.hi)
                continue
            if op not in _STRICT:
                continue
            args = [a for a in g.operands(key)]
            av = [vals[a] for a in args]
            if any(not isinstance(a, Iv) or a.lo.dim() > len(batch) for a in av):
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
            elif op == "fn":
                inv = _inv_fn(key[1], t, av[0])
                if inv is not None:
                    push(args[0], inv)
            elif op == "min":
                for a in args:
                    push(a, Iv(t.lo, torch.full_like(t.lo, inf), t.nan))
            elif op == "max":
                for a in args:
                    push(a, Iv(torch.full_like(t.hi, -inf), t.hi, t.nan))
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
    return Iv(torch.full_like(like, -inf), torch.full_like(like, inf), False)


def _inv_mul(t: Iv, o: Iv, cur: Iv | None = None) -> Iv:
    """``{x : x * y in t for some y in o}`` (everything when 0 is in both).  With the
    current range ``cur`` of ``x``, a ``t`` that excludes 0 over an ``o`` that
    contains it uses extended division: two half-lines, each intersected with ``cur``
    before their hull (``b = a / t``, ``t <= 12560``, ``b >= 0`` gives ``b >= a / 12560``)."""
    q = ri.div(Iv(t.lo, t.hi, torch.zeros_like(t.lo, dtype=torch.bool)), o)
    free = (t.lo <= 0) & (t.hi >= 0) & (o.lo <= 0) & (o.hi >= 0)
    lo, hi = torch.where(free, -inf, q.lo), torch.where(free, inf, q.hi)
    if cur is None:
        return Iv(lo, hi, q.nan)
    pos, neg = t.lo > 0, t.hi < 0
    split = (pos | neg) & (o.lo <= 0) & (o.hi >= 0)
    num = torch.where(pos, t.lo, t.hi)
    l_ok = torch.where(pos, o.lo < 0, o.hi > 0)  # x <= num / l_den
    r_ok = torch.where(pos, o.hi > 0, o.lo < 0)  # x >= num / r_den
    # the left piece has x < 0, the right one x > 0 (so x <= 0 and x >= 0 hold)
    l_hi = torch.minimum(cur.hi, torch.clamp(ri.up(num / torch.where(pos, o.lo, o.hi)),
                                             max=0.0))
    r_lo = torch.maximum(cur.lo, torch.clamp(ri.down(num / torch.where(pos, o.hi, o.lo)),
                                             min=0.0))
    l_ok = l_ok & (cur.lo <= l_hi) & (cur.lo < 0)
    r_ok = r_ok & (r_lo <= cur.hi) & (cur.hi > 0)
    s_lo = torch.where(l_ok, cur.lo, torch.where(r_ok, r_lo, inf))
    s_hi = torch.where(r_ok, cur.hi, torch.where(l_ok, l_hi, -inf))
    return Iv(torch.where(split, s_lo, lo), torch.where(split, s_hi, hi), q.nan)


def _root(v, k: float, up: bool):
    """``|v| ** (1/k)`` rounded outward (for the magnitudes of targets)."""
    r = torch.abs(v) ** (1.0 / k)
    return ri.wup(r) if up else torch.clamp(ri.wdown(r), min=0.0)


def _even_preimage(t: Iv, cur: Iv, inner_lo, inner_hi) -> Iv:
    """``[-hi, -lo] U [lo, hi]`` intersected with ``cur``, as one interval."""
    nlo, nhi = torch.maximum(-inner_hi, cur.lo), torch.minimum(-inner_lo, cur.hi)
    plo, phi = torch.maximum(inner_lo, cur.lo), torch.minimum(inner_hi, cur.hi)
    neg_ok, pos_ok = nlo <= nhi, plo <= phi
    lo = torch.where(neg_ok, nlo, torch.where(pos_ok, plo, inf))
    hi = torch.where(pos_ok, phi, torch.where(neg_ok, nhi, -inf))
    return Iv(lo, hi, cur.nan)


def _inv_powi(t: Iv, n: int, cur: Iv) -> Iv:
    if n % 2:
        lo = torch.where(t.lo < 0, -_root(t.lo, n, True), _root(t.lo, n, False))
        hi = torch.where(t.hi < 0, -_root(t.hi, n, False), _root(t.hi, n, True))
        return Iv(lo, hi, t.nan)
    ilo = torch.where(t.lo > 0, _root(t.lo, n, False), 0.0)
    ihi = torch.where(t.hi >= 0, _root(t.hi, n, True), -inf)
    return _even_preimage(t, cur, ilo, ihi)


def _inv_powf(t: Iv, e: float) -> Iv:
    tlo = torch.clamp(t.lo, min=0.0)
    a = _root(tlo, e, False) if e > 0 else _root(tlo, e, True)
    b = _root(t.hi, e, True) if e > 0 else _root(t.hi, e, False)
    if e > 0:
        return Iv(a, torch.where(t.hi < 0, -inf, b), t.nan)
    return Iv(torch.where(t.hi <= 0, inf, b), a, t.nan)


def _inv_fn(name: str, t: Iv, cur: Iv):
    tt = Iv(t.lo, t.hi, torch.zeros_like(t.lo, dtype=torch.bool))
    if name == "sqrt":
        return ri.powi(Iv(torch.clamp(t.lo, min=0.0), t.hi, tt.nan), 2)
    if name == "exp":
        r = ri.log(tt)
        return Iv(torch.where(t.lo <= 0, -inf, r.lo), r.hi, t.nan)
    if name == "log":
        return ri.exp(tt)
    if name == "sinh":
        return ri.asinh(tt)
    if name == "asinh":
        return ri.sinh(tt)
    if name == "tanh":
        r = ri.atanh(tt)
        return Iv(torch.where(t.lo <= -1, -inf, r.lo), torch.where(t.hi >= 1, inf, r.hi), t.nan)
    if name == "atan":
        half = math.pi / 2 * (1 - 1e-15)
        r = ri.tan(Iv(torch.clamp(t.lo, min=-half), torch.clamp(t.hi, max=half), tt.nan))
        return Iv(torch.where(t.lo <= -half, -inf, r.lo), torch.where(t.hi >= half, inf, r.hi),
                  t.nan)
    if name in ("sin", "cos"):
        # invert only on one monotone piece: sin on [-pi/2, pi/2], cos on [0, pi]
        half = math.pi / 2  # the floats pi/2 and pi are below the true values
        lo_ok, hi_ok = (-half, half) if name == "sin" else (0.0, math.pi)
        inside = (cur.lo >= lo_ok) & (cur.hi <= hi_ok)
        tc = Iv(torch.clamp(t.lo, min=-1.0, max=1.0), torch.clamp(t.hi, min=-1.0, max=1.0),
                tt.nan)
        r = ri.asin(tc) if name == "sin" else ri.acos(tc)
        empty = (t.lo > 1) | (t.hi < -1)
        lo = torch.where(inside, torch.where(empty, inf, r.lo), -inf)
        hi = torch.where(inside, torch.where(empty, -inf, r.hi), inf)
        return Iv(lo, hi, t.nan)
    if name == "abs":
        return _even_preimage(t, cur, torch.clamp(t.lo, min=0.0), t.hi)
    if name == "cosh":
        r = ri.acosh(Iv(torch.clamp(t.lo, min=1.0), torch.clamp(t.hi, min=1.0), tt.nan))
        ilo = torch.where(t.lo > 1, r.lo, 0.0)
        ihi = torch.where(t.hi >= 1, r.hi, -inf)
        return _even_preimage(t, cur, torch.clamp(ilo, min=0.0), ihi)
    return None
