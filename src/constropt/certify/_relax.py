"""Linear relaxations of a problem over boxes, from the one graph (the factorable form).

For each box, every node of the objective and the constraint leaves that has a finite
enclosure (never NaN on the box) gets a column, bounded by its enclosure (the node
ranges of :func:`~._nodes.forward_nodes`, which hold at the feasible points of the
box), and rows that tie it to its operands' columns:

- sums and negation: one equality with the (exact, float64) coefficients of the graph;
- products of two factors: the four McCormick inequalities (longer products by a chain
  of auxiliary columns, each bounded by the interval product of its factors); a
  constant factor ``c * u``: ``w - c u = 0``;
- quotients ``a / b`` with ``0`` outside ``b``'s range: McCormick on ``a = w * b``;
- univariate pieces whose convexity on the operand's range ``[a, b]`` is known (``exp``;
  ``log``, ``sqrt`` concave; ``x**n``; ``1/x`` and real powers on a sign-definite
  range): tangents at ``a``, ``b`` and the midpoint on the convex side, the secant on
  the other;
- anything else (and an operand without a column): the column's bounds alone (the
  interval fallback), so an unknown node kind never breaks a relaxation.

**What guarantees what.**  Every row holds, in exact real arithmetic, at every point of
the box where every node is defined (the exact node values are then a feasible point of
the LP, so its minimum is at most the objective there).  Coefficients are float64
numbers used as they are (the row is about those numbers); only right-hand sides carry
rounding: McCormick constants are products of two floats moved one ulp outward; a
tangent at ``p`` uses a slope ``s`` that need not be the derivative ``f'(p)``, its
right-hand side made valid by the enclosures of ``f(p)`` and ``f'(p)`` (convex ``f``:
``f(x) >= f(p) + s (x - p) - |f'(p) - s| max|x - p|``) in outward-rounded interval
arithmetic; the secant likewise with the enclosure of its slope.  The LP itself is then
solved in floating point, and :func:`~._lp.safe_bound` turns its duals into a bound that
does not trust the solver.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..lowering import _interval_rules as rules
from ..lowering import _rt_interval as ri
from ..lowering._graph import FN
from ..lowering._rt_interval import Iv

__all__ = ["Relaxation", "relax"]

inf = np.inf


@dataclass
class Relaxation:
    """LPs of ``m`` boxes with one sparsity pattern: ``min z[obj]`` subject to
    ``row_lo <= A z <= row_hi`` and ``col_lo <= z <= col_hi``.

    ``A`` is in coordinates ``(rows, cols)`` with values ``vals`` of shape ``(nnz, m)``;
    ``ok`` says on which boxes the objective has a column (no LP elsewhere)."""

    ncol: int
    rows: np.ndarray
    cols: np.ndarray
    vals: np.ndarray
    row_lo: np.ndarray   # (nrow, m)
    row_hi: np.ndarray
    col_lo: np.ndarray   # (ncol, m)
    col_hi: np.ndarray
    obj: int
    ok: np.ndarray       # (m,) bool
    var_cols: dict       # {variable row of X: column}
    products: list       # (w, u, v) columns with McCormick rows of w = u * v


class _Builder:
    def __init__(self, m: int):
        self.m = m
        self.clo: list = []
        self.chi: list = []
        self.entries: list = []  # (row, col, values)
        self.rlo: list = []
        self.rhi: list = []
        self.products: list = []  # (w, u, v) columns of the McCormick products

    def column(self, lo, hi, usable):
        self.clo.append(np.where(usable, lo, 0.0))
        self.chi.append(np.where(usable, hi, 0.0))
        return len(self.clo) - 1

    def row(self, terms, lo, hi, active):
        """``lo <= sum coef * z[col] <= hi`` where ``active`` (a free row elsewhere)."""
        lo = np.broadcast_to(np.asarray(lo, dtype=np.float64), (self.m,))
        hi = np.broadcast_to(np.asarray(hi, dtype=np.float64), (self.m,))
        ok = active & (np.isfinite(lo) | np.isfinite(hi))
        for _, coef in terms:
            ok = ok & np.isfinite(coef)
        r = len(self.rlo)
        for col, coef in terms:
            self.entries.append((r, col, np.where(ok, coef, 0.0)))
        self.rlo.append(np.where(ok & np.isfinite(lo), lo, -inf))
        self.rhi.append(np.where(ok & np.isfinite(hi), hi, inf))


def _pt(v) -> Iv:
    v = np.asarray(v, dtype=np.float64)
    return Iv(v, v, np.zeros(v.shape, dtype=bool))


def _prod_iv(a, b):
    """Enclosure of the product of the float arrays ``a * b`` (one ulp outward)."""
    p = a * b
    return np.nextafter(p, -inf), np.nextafter(p, inf)


def _mccormick(B, w, u, v, ul, uh, vl, vh, active):
    """Rows of ``w = u * v`` (``w`` a column or a float constant)."""
    if isinstance(w, int):
        B.products.append((w, u, v))
    for (x1, y1), upper in (((vl, ul), False), ((vh, uh), False),
                            ((vh, ul), True), ((vl, uh), True)):
        # w >= x1 u + y1 v - y1 x1 (lower), w <= ... (upper): w - x1 u - y1 v vs -y1 x1
        qlo, qhi = _prod_iv(y1, x1)
        terms = [(u, -x1), (v, -y1)]
        if isinstance(w, int):
            terms.append((w, np.ones(B.m)))
            lo, hi = (-inf, -qlo) if upper else (-qhi, inf)
        else:  # a constant w: -x1 u - y1 v vs -y1 x1 - w
            lo = -inf if upper else np.nextafter(-qhi - w, -inf)
            hi = np.nextafter(-qlo - w, inf) if upper else inf
        B.row(terms, lo, hi, active)


def _always(a, b):
    return np.ones(np.shape(a), dtype=bool)


def _never(a, b):
    return np.zeros(np.shape(a), dtype=bool)


def _univariate(key):
    """``(F, D, convex(a, b), concave(a, b))`` for a node kind with known curvature, or
    None: ``F`` and ``D`` enclose the function and its derivative at points."""
    op = key[0]
    if op == "fn" and key[1] in ("exp", "log", "sqrt"):
        row = FN[key[1]]

        def f(p):
            return row.interval(rules, row, p)
        if key[1] == "exp":
            return f, f, _always, _never
        if key[1] == "log":
            return f, ri.recip, _never, lambda a, b: a > 0

        def d(p):
            return ri.mul(_pt(0.5), ri.recip(ri.sqrt(p)))
        return f, d, _never, lambda a, b: a >= 0
    if op == "powi":
        n = key[2]

        def f(p):
            return ri.powi(p, n)

        def d(p):
            return ri.mul(_pt(float(n)), p if n == 2 else ri.powi(p, n - 1))
        if n % 2 == 0:
            return f, d, _always, _never
        return f, d, lambda a, b: a >= 0, lambda a, b: b <= 0
    if op == "recip":
        def d(p):
            return ri.neg(ri.recip(ri.powi(p, 2)))
        return ri.recip, d, lambda a, b: a > 0, lambda a, b: b < 0
    if op == "powf":
        e = key[2]

        def f(p):
            return ri.powf(p, e)

        def d(p):
            return ri.div(ri.mul(_pt(e), ri.powf(p, e)), p)
        if 0 < e < 1:
            return f, d, _never, lambda a, b: a >= 0
        return f, d, (lambda a, b: a >= 0) if e > 1 else (lambda a, b: a > 0), _never
    return None


def _curvature_rows(B, w, u, a, b, rule, active):
    """Tangents at ``a``, ``b`` and the midpoint on the convex side, the secant on the
    other, of ``w = F(u)`` with ``u`` in ``[a, b]``."""
    F, D, convex, concave = rule
    cvx, ccv = convex(a, b) & active, concave(a, b) & active
    if not (cvx | ccv).any():
        return
    one = np.ones(B.m)
    for p in (a, b, np.clip(a + 0.5 * (b - a), a, b)):
        fp, dp = F(_pt(p)), D(_pt(p))
        s = 0.5 * dp.lo + 0.5 * dp.hi
        s = np.where(np.isfinite(s), s, 0.0)
        delta = np.maximum(ri.sub(_pt(s), Iv(dp.lo, dp.lo, dp.nan)).hi,
                           ri.sub(Iv(dp.hi, dp.hi, dp.nan), _pt(s)).hi)
        W = np.maximum(ri.sub(_pt(p), _pt(a)).hi, ri.sub(_pt(b), _pt(p)).hi)
        err = ri.mul2(_pt(delta), _pt(W))
        sp_ = ri.mul2(_pt(s), _pt(p))
        lo = ri.sub(ri.sub(Iv(fp.lo, fp.lo, fp.nan), sp_), err).lo   # convex: below
        hi = ri.add(ri.sub(Iv(fp.hi, fp.hi, fp.nan), sp_), err).hi   # concave: above
        good = ~(fp.nan | dp.nan) & np.isfinite(delta)
        B.row([(w, one), (u, -s)], np.where(cvx & good, lo, -inf),
              np.where(ccv & good, hi, inf), (cvx | ccv) & good)
    fa, fb = F(_pt(a)), F(_pt(b))
    m_iv = ri.div(ri.sub(fb, fa), ri.sub(_pt(b), _pt(a)))
    s = 0.5 * m_iv.lo + 0.5 * m_iv.hi
    s = np.where(np.isfinite(s), s, 0.0)
    delta = np.maximum(ri.sub(_pt(s), Iv(m_iv.lo, m_iv.lo, m_iv.nan)).hi,
                       ri.sub(Iv(m_iv.hi, m_iv.hi, m_iv.nan), _pt(s)).hi)
    err = ri.mul2(_pt(delta), ri.sub(_pt(b), _pt(a)))
    sa = ri.mul2(_pt(s), _pt(a))
    lo = ri.sub(ri.sub(Iv(fa.lo, fa.lo, fa.nan), sa), err).lo   # concave: secant below
    hi = ri.add(ri.sub(Iv(fa.hi, fa.hi, fa.nan), sa), err).hi   # convex: secant above
    good = ~(fa.nan | fb.nan | m_iv.nan) & np.isfinite(delta) & (b > a)
    B.row([(w, one), (u, -s)], np.where(ccv & good, lo, -inf),
          np.where(cvx & good, hi, inf), (cvx | ccv) & good)


def relax(graph, order, ranges: dict, consts: dict, obj: int, targets, m: int,
          cuts=()):
    """The :class:`Relaxation` of ``m`` boxes.

    Parameters
    ----------
    graph : Graph
    order : list of int
        Nodes of the objective and the leaves, operands first.
    ranges : dict
        ``{node: (lo, hi, usable)}``, float64 arrays of shape ``(m,)`` (``usable``:
        finite, never NaN on the box); missing nodes have no column.
    consts : dict
        ``{node: float}`` for constants and parameters.
    obj : int
        The objective's node.
    targets : list of (node, lo, hi)
        Constraint leaves: the node's value lies in ``[lo, hi]`` at feasible points.
    cuts : sequence of (node, slopes, rhs)
        Rows ``z[node] - slopes^T x >= rhs`` (slopes of shape ``(n_vars, m)``, ``rhs``
        of shape ``(m,)``, ``-inf`` where none) that hold at every point of the box
        (:class:`~._alphabb.AlphaCuts`); a cut on a variable without a column is left
        out.
    """
    B = _Builder(m)
    col: dict = {}
    for n in order:
        if n in consts or n not in ranges:
            continue
        lo, hi, use = ranges[n]
        col[n] = B.column(lo, hi, use)
    for lf, tlo, thi in targets:
        if lf in col:
            j = col[lf]
            use = ranges[lf][2]
            B.clo[j] = np.where(use, np.maximum(B.clo[j], tlo), B.clo[j])
            B.chi[j] = np.where(use, np.minimum(B.chi[j], thi), B.chi[j])
    with np.errstate(all="ignore"):  # overflow and 0/0 leave non-finite rows: dropped
        for n in order:
            if n in col:
                _rows(B, graph, n, col, ranges, consts)
        var_col = {graph.nodes[n][1]: n for n in col if graph.nodes[n][0] == "var"}
        one = np.ones(m)
        for node, S, rhs in cuts:
            if node not in col:
                continue
            act = ranges[node][2] & np.isfinite(rhs)
            terms = [(col[node], one)]
            for k in range(S.shape[0]):
                if k in var_col:
                    terms.append((col[var_col[k]], -S[k]))
                    act = act & ranges[var_col[k]][2]
                else:
                    act = act & (S[k] == 0)
            B.row(terms, np.where(act, rhs, -inf), inf, act)
    if obj not in col:
        return None
    rows = np.array([e[0] for e in B.entries], dtype=np.int64)
    cols = np.array([e[1] for e in B.entries], dtype=np.int64)
    vals = np.array([e[2] for e in B.entries]).reshape(len(B.entries), m)
    return Relaxation(len(B.clo), rows, cols, vals,
                      np.array(B.rlo).reshape(-1, m), np.array(B.rhi).reshape(-1, m),
                      np.array(B.clo), np.array(B.chi), col[obj], ranges[obj][2].copy(),
                      {graph.nodes[n][1]: j for n, j in col.items()
                       if graph.nodes[n][0] == "var"}, B.products)


def _rows(B, graph, n, col, ranges, consts):  # noqa: C901 - one dispatch on node kinds
    key = graph.nodes[n]
    op = key[0]
    w = col[n]
    use = ranges[n][2]
    opnds = graph.operands(key)
    if any(a not in consts and a not in col for a in opnds):
        return  # an operand without a column: the interval fallback
    act = use.copy()
    for a in opnds:
        if a in col:
            act &= ranges[a][2]
    one = np.ones(B.m)
    if op == "add":
        c = [consts[a] for a in opnds if a in consts]
        if len(c) > 1:
            return  # the graph folds constants: more than one is left to the fallback
        terms = [(w, one)] + [(col[a], -one) for a in opnds if a in col]
        B.row(terms, c[0] if c else 0.0, c[0] if c else 0.0, act)
    elif op == "neg":
        B.row([(w, one), (col[key[1]], one)], np.zeros(B.m), np.zeros(B.m), act)
    elif op == "mul":
        _mul_rows(B, w, [a for a in opnds if a not in consts],
                  [consts[a] for a in opnds if a in consts], col, ranges, act)
    elif op == "div":
        a, b = key[1], key[2]
        if b in consts:
            return
        bl, bh = ranges[b][0], ranges[b][1]
        wl, wh = ranges[n][0], ranges[n][1]
        act = act & ((bl > 0) | (bh < 0))
        lhs = consts[a] if a in consts else col[a]
        _mccormick(B, lhs, w, col[b], wl, wh, bl, bh, act)
    else:
        rule = _univariate(key)
        if rule is not None:
            a = key[2] if op == "fn" else key[1]
            _curvature_rows(B, w, col[a], ranges[a][0], ranges[a][1], rule, act)


def _mul_rows(B, w, factors, consts, col, ranges, act):
    if len(consts) > 1 or not factors:
        return
    c = consts[0] if consts else 1.0
    one = np.ones(B.m)
    if len(factors) == 1:
        B.row([(w, one), (col[factors[0]], np.full(B.m, -c))], np.zeros(B.m),
              np.zeros(B.m), act)
        return
    t, tl, th = col[factors[0]], ranges[factors[0]][0], ranges[factors[0]][1]
    for k, v in enumerate(factors[1:]):
        vl, vh = ranges[v][0], ranges[v][1]
        last = k == len(factors) - 2
        if col[v] == t:
            return  # u * u: left to the interval fallback
        if last and c == 1.0:
            _mccormick(B, w, t, col[v], tl, th, vl, vh, act)
            return
        p = ri.mul2(Iv(tl, th, np.zeros(B.m, bool)), Iv(vl, vh, np.zeros(B.m, bool)))
        fin = np.isfinite(p.lo) & np.isfinite(p.hi)
        act = act & fin
        nt = B.column(p.lo, p.hi, fin)
        _mccormick(B, nt, t, col[v], tl, th, vl, vh, act)
        t, tl, th = nt, p.lo, p.hi
    B.row([(w, one), (t, np.full(B.m, -c))], np.zeros(B.m), np.zeros(B.m), act)
