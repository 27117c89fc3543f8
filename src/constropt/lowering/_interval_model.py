"""A problem in the interval backend: objective, constraint leaves, exact gradients.

:class:`IntervalModel` lowers them into one hash-consed graph and one
:class:`~._interval.IntervalProgram`; :func:`graph_gradient` differentiates nodes of that
graph in reverse mode (the gradients the mean-value forms of the branch-and-bound use).
"""

from __future__ import annotations

import math

import sympy as sp

from . import _rt_interval as ri
from ._graph import FN, Graph, Layout
from ._interval import IntervalProgram, reachable
from ._interval_ops import ops
from ._rt_interval import Iv

__all__ = ["IntervalModel", "graph_gradient"]

inf = math.inf


class IntervalModel:
    """A problem's objective, constraint leaves and exact gradients in one graph.

    Parameters
    ----------
    objective : sympy.Expr or None
        None: constraints only (``f`` is None).
    leaves : sequence of Leaf
        Normalised constraint leaves (``expr <= 0``, ``< 0`` or ``== 0``).
    layout : Layout
    gradient : bool
        Also lower the exact gradient of the objective and of the Lagrangian
        ``f + sum_i lam_i c_i`` (scalar variables only).  The multipliers ``lam`` are
        extra parameters after the problem's own (``P = [p..., lam...]``), so choosing
        them never rebuilds anything.

    Attributes
    ----------
    program : IntervalProgram
    f : int
        Node of the objective.
    leaf_nodes : tuple of int
    grad : tuple of int or None
        Nodes of ``d f / d x_k``, or None when not built or not available.
    lagrangian : int or None
        Node of ``f + sum_i lam_i c_i``; ``lag_grad`` its gradient nodes.
    """

    def __init__(self, objective, leaves, layout: Layout, gradient: bool = False):
        n_lam = len(leaves) if gradient else 0
        lams = tuple(sp.Dummy(f"lam{i}") for i in range(n_lam))
        g = Graph(Layout(layout.blocks, tuple(layout.parameters) + lams))
        self.n_params = len(layout.parameters)
        self.f = None if objective is None else g.lower(objective)
        self.leaf_nodes = tuple(g.lower(lf.expr) for lf in leaves)
        self.leaves = tuple(leaves)
        self.grad = self.lagrangian = self.lag_grad = None
        self.lag_leaves: tuple = ()
        self.jac: tuple = ()
        roots = ([] if self.f is None else [self.f]) + list(self.leaf_nodes)
        if gradient and objective is not None and all(b.shape == () for b in layout.blocks):
            nvar = len(layout.blocks)
            smooth = IntervalProgram(g, roots)
            # the Lagrangian takes the smooth leaves only (others keep lam = 0)
            self.lag_leaves = tuple(i for i, c in enumerate(self.leaf_nodes)
                                    if smooth.is_smooth(c))
            self.grad = graph_gradient(g, self.f, nvar)
            jac = [graph_gradient(g, self.leaf_nodes[i], nvar) for i in self.lag_leaves]
            if any(row is None for row in jac):
                self.lag_leaves, jac = (), []
            self.jac = tuple(jac)
            if self.grad is not None:
                roots += list(self.grad)
                if self.lag_leaves:
                    lam = [g.lower(lams[i]) for i in self.lag_leaves]
                    self.lagrangian = g.node("add", self.f, *[
                        g.node("mul", lam_i, self.leaf_nodes[i])
                        for lam_i, i in zip(lam, self.lag_leaves)])
                    self.lag_grad = _lagrangian_gradient(g, self.grad, lam, jac)
                    roots += [self.lagrangian, *self.lag_grad] + [n for r in jac for n in r]
        self.program = IntervalProgram(g, roots)

    def leaf_targets(self, eq_tol: float, like=None):
        """``(node, lo, hi)`` targets: ``c <= 0`` (and ``c < 0``) and ``|h| <= eq_tol``."""
        out = []
        for node, lf in zip(self.leaf_nodes, self.leaves):
            if lf.kind == "eq":
                out.append((node, -eq_tol, eq_tol))
            else:
                out.append((node, -inf, 0.0))
        return out

    def smooth(self, node) -> bool:
        cache = self.__dict__.setdefault("_smooth_cache", {})
        if node not in cache:
            cache[node] = self.program.is_smooth(node)
        return cache[node]

    def objective_bounds(self, lo, hi, P, eq_slack: float = 0.0, eq_tol=None):
        """Rigorous lower bounds of the objective over the feasible points of each box,
        and branching scores.

        The largest of: the natural interval extension of ``f``; where ``f`` is smooth
        on the box (no NaN in its enclosure or its gradient's), the first-order
        mean-value form ``f(c) + sum_k g_k([x]) * ([x_k] - c_k)`` around the box centre
        ``c``; and the same two bounds of the Lagrangian ``f + sum_i lam_i c_i`` (with
        ``lam_i >= 0`` for inequalities it is below ``f`` wherever the constraints
        hold), less ``eq_slack`` (``sum |lam_eq| * eq_tol``).

        Parameters
        ----------
        lo, hi : Tensor, shape (N, B)
        P : Tensor, shape (n_params + n_leaves,)
            Parameters, then the multipliers (zeros: no Lagrangian bound).
        eq_slack : float
        eq_tol : float, optional
            Also test the smooth constraints by their mean-value forms (``c <= 0``,
            ``|h| <= eq_tol``) and return which boxes they prove infeasible.

        Returns
        -------
        lower : Tensor, shape (B,)
        score : Tensor, shape (N, B)
            ``|g_k| * width_k`` (the width alone where no gradient is known): split the
            box along the largest.
        infeasible : Tensor of bool, shape (B,)
            Only with ``eq_tol``: boxes where a constraint's mean-value form excludes it.
        """
        xp = ops(lo)
        B = lo.shape[1]
        width = xp.where(xp.isfinite(hi - lo), hi - lo, xp.finfo(lo).max)
        pairs = [(self.f, self.grad)]
        if self.lagrangian is not None and bool((P[self.n_params:] != 0).any()):
            pairs.append((self.lagrangian, self.lag_grad))
        mv = [(v, gr) for v, gr in pairs if gr is not None and self.smooth(v)]
        c = box_centre(lo, hi)
        leaf_mv = list(zip(self.lag_leaves, self.jac)) if eq_tol is not None else []
        need = [v for v, _ in pairs] + [n for _, gr in mv for n in gr] + [
            n for i, row in leaf_mv for n in (self.leaf_nodes[i], *row)]
        vals = self.program.forward(xp.cat([lo, c], 1), xp.cat([hi, c], 1), P,
                                    only=need)

        def part(iv, second=False):
            return half(iv, B, second)

        def mean_value(v, gr):
            return mean_value_form(vals, v, gr, lo, hi, c)

        lower = part(vals[self.f])[0]
        score = None
        for k, (v, gr) in enumerate(pairs):
            slack = 0.0 if k == 0 else eq_slack
            nat = ri.down(part(vals[v])[0] - slack)
            lower = xp.maximum(lower, nat)
            if gr is None or (v, gr) not in mv:
                continue
            acc, _, ok, mags = mean_value(v, gr)
            acc = ri.down(acc - slack)
            lower = xp.where(ok, xp.maximum(lower, acc), lower)
            if k == 0:
                sc = xp.stack(mags) * width
                score = xp.where(xp.isfinite(sc) & (sc > 0), sc, width)
        infeasible = xp.zeros_bool((B,), lo)
        for i, row in leaf_mv:  # mean-value forms of the smooth constraints
            c_lo, c_hi, ok, _ = mean_value(self.leaf_nodes[i], row)
            if self.leaves[i].kind == "eq":
                bad = (c_lo > eq_tol) | (c_hi < -eq_tol)
            else:
                bad = c_lo > 0
            infeasible = infeasible | (ok & bad)
        if eq_tol is None:
            return lower, (width if score is None else score)
        return lower, (width if score is None else score), infeasible


def graph_gradient(g: Graph, root: int, nvar: int):
    """Exact gradient of node ``root`` with respect to the scalar variables (rows
    ``0..nvar-1`` of ``X``) as nodes of the same graph, by reverse-mode differentiation
    over the hash-consed graph (linear in its size, no sympy); None when the root
    depends on an operation without a derivative rule here (jumps, ``Piecewise``,
    summation bodies)."""
    order = reachable(g, [root])
    adj: dict = {root: g.const(1.0)}

    def acc(n, term):
        adj[n] = term if n not in adj else g.node("add", adj[n], term)

    def mul(*xs):
        xs = [x for x in xs if not (g.is_const(x) and g.value(x) == 1.0)]
        if any(g.is_const(x) and g.value(x) == 0.0 for x in xs):
            return g.const(0.0)
        return xs[0] if len(xs) == 1 else g.node("mul", *xs) if xs else g.const(1.0)

    g.const(1.0)  # the node of 1 before the derivatives' nodes, which use it
    for n in reversed(order):
        a_n = adj.get(n)
        if a_n is None:
            continue
        key = g.nodes[n]
        op = key[0]
        if op in ("const", "param", "var"):
            continue
        args = g.operands(key)
        if op == "add":
            for a in args:
                acc(a, a_n)
        elif op == "neg":
            acc(args[0], g.node("neg", a_n))
        elif op == "mul":
            for i, a in enumerate(args):
                acc(a, mul(a_n, *[b for j, b in enumerate(args) if j != i]))
        elif op == "div":
            a, b = args
            acc(a, g.node("div", a_n, b))
            acc(b, g.node("neg", g.node("div", mul(a_n, n), b)))
        elif op == "recip":
            acc(args[0], g.node("neg", mul(a_n, g.node("powi", n, 2))))
        elif op == "powi":
            k = key[2]
            base = args[0] if k == 2 else g.node("powi", args[0], k - 1)
            acc(args[0], mul(g.const(float(k)), a_n, base))
        elif op == "powf":
            e = key[2]
            acc(args[0], mul(g.const(e), a_n, g.node("powf", args[0], e - 1.0)))
        elif op == "fn":
            d = _fn_derivative(g, key[1], args[0], n)
            if d is None:
                return None
            acc(args[0], mul(a_n, d))
        else:
            return None
    # the variables' adjoints, read from the adjoints (not a look-up per variable: the
    # gradients of all leaves would cost leaves x variables)
    out: list = [None] * nvar
    for m, a_m in adj.items():
        key = g.nodes[m]
        if key[0] == "var" and key[1] < nvar:
            out[key[1]] = a_m
    if any(o is None for o in out):
        zero = g.const(0.0)
        out = [zero if o is None else o for o in out]
    return tuple(out)


def _lagrangian_gradient(g: Graph, grad, lam, jac) -> tuple:
    """Nodes of ``grad_k + sum_i lam_i * jac_i[k]`` per variable ``k``, the terms of the
    entries that are the constant 0 left out (a product with 0 is 0): built from the
    nonzeros, not from every (leaf, variable) pair."""
    zero = g.const(0.0)
    terms: list = [[] for _ in grad]
    for lam_i, row in zip(lam, jac):
        for k, node in enumerate(row):
            if node != zero:
                terms[k].append(g.node("mul", lam_i, node))
    return tuple(g.node("add", gk, *t) if t else gk for gk, t in zip(grad, terms))


def _fn_derivative(g: Graph, name: str, a: int, n: int):
    """``d fn(a) / da`` as a node (``n`` is the node ``fn(a)`` itself): the row's
    ``derivative`` evaluated on nodes; None for a function that is not smooth."""
    f = FN[name]
    if not f.smooth or f.derivative is None:
        return None
    return f.derivative(_Node(g, a), _Node(g, n), _Nodes()).id


class _Node:
    """A node as a value of the derivative algebra: ``+ - * /`` and ``** k`` build
    nodes, numbers become ``const`` nodes, ``1 / x`` is ``recip``."""

    __slots__ = ("g", "id")

    def __init__(self, g: Graph, nid: int):
        self.g, self.id = g, nid

    def _of(self, v) -> int:
        return v.id if isinstance(v, _Node) else self.g.const(float(v))

    def new(self, *key) -> _Node:
        return _Node(self.g, self.g.node(*key))

    def __add__(self, o):
        return self.new("add", self.id, self._of(o))

    def __radd__(self, o):
        return self.new("add", self._of(o), self.id)

    def __sub__(self, o):
        if isinstance(o, _Node):
            return self.new("add", self.id, self.g.node("neg", o.id))
        return self.new("add", self.id, self.g.const(-float(o)))

    def __rsub__(self, o):
        return self.new("add", self._of(o), self.g.node("neg", self.id))

    def __mul__(self, o):
        return self.new("mul", self.id, self._of(o))

    def __rmul__(self, o):
        return self.new("mul", self._of(o), self.id)

    def __truediv__(self, o):
        return self.new("div", self.id, self._of(o))

    def __rtruediv__(self, o):
        if float(o) == 1.0:
            return self.new("recip", self.id)
        return self.new("div", self._of(o), self.id)

    def __neg__(self):
        return self.new("neg", self.id)

    def __pow__(self, k: int):
        return self.new("powi", self.id, int(k))


class _Nodes:
    """The functions of the derivative algebra on nodes: ``k.cos(x)`` is the node
    ``("fn", "cos", x)``; ``recip`` and ``powi`` are nodes of their own."""

    @staticmethod
    def recip(x: _Node) -> _Node:
        return x.new("recip", x.id)

    @staticmethod
    def powi(x: _Node, k: int) -> _Node:
        return x.new("powi", x.id, int(k))

    def __getattr__(self, name):
        return lambda x: x.new("fn", name, x.id)


def box_centre(lo, hi):
    """Centres of the boxes ``[lo, hi]`` (N, B), inside them; where a side is infinite,
    the finite side or 0."""
    xp = ops(lo)
    c = xp.clamp(lo + 0.5 * (hi - lo), min=lo, max=hi)
    return xp.where(xp.isfinite(c), c, xp.where(xp.isfinite(lo), lo, xp.where(
        xp.isfinite(hi), hi, 0.0)))


def half(iv, B: int, second: bool = False):
    """``(lo, hi, nan)`` of node values computed on ``2 B`` boxes (the boxes, then their
    centres): the first ``B`` or, with ``second``, the last ``B``."""
    xp = ops(iv.lo)
    sl = slice(B, 2 * B) if second else slice(0, B)
    return (xp.expand(iv.lo, (2 * B,))[sl], xp.expand(iv.hi, (2 * B,))[sl],
            xp.expand(iv.nan, (2 * B,))[sl])


def mean_value_form(vals, v, gr, lo, hi, c):
    """Mean-value enclosure ``(lo, hi, ok, |g_k| per variable)`` of node ``v`` on the
    boxes ``[lo, hi]`` (N, B) around their centres ``c``: ``vals`` holds the nodes on
    the boxes and the centres (:func:`half`), ``gr`` the nodes of ``v``'s gradient."""
    xp = ops(lo)
    B = lo.shape[1]
    fc_lo, fc_hi, fc_nan = half(vals[v], B, True)
    ok = ~half(vals[v], B)[2] & ~fc_nan
    acc_lo, acc_hi, mags = fc_lo, fc_hi, []
    for j, gn in enumerate(gr):
        glo, ghi, gnan = half(vals[gn], B)
        ok = ok & ~gnan
        d = Iv(ri.down(lo[j] - c[j]), ri.up(hi[j] - c[j]), xp.false_like(ok))
        term = ri.mul2(Iv(glo, ghi, xp.false_like(ok)), d)
        acc_lo = ri.down(acc_lo + term.lo)
        acc_hi = ri.up(acc_hi + term.hi)
        mags.append(xp.maximum(xp.abs(glo), xp.abs(ghi)))
    ok = ok & ~xp.isnan(acc_lo) & ~xp.isnan(acc_hi)
    return acc_lo, acc_hi, ok, mags
