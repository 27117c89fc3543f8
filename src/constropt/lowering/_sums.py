"""Vector variables: ``Indexed``/``MatrixElement`` and ``Sum`` -> tensor reductions.

A ``Sum`` pushes its index on the graph's stack of summation axes (``Graph.ctx``); with
``D`` active indices, a node that varies along any of them has ``D`` leading axes (size
1 where it does not vary) before the batch axes, so bodies combine by broadcasting:

- the index itself: ``index(start, stop, d, D, X, dtype)``;
- an element ``x[a*i + b*j + c]`` (any affine integer index expression per dimension)
  is one row of ``X`` when constant, a slice of rows ``X[lo:hi:step]`` when it moves
  along one axis with a positive stride (``cast(...)`` for ``D == 1``, ``lift(...)``
  otherwise), else a gathered ``grid(...)`` of rows;
- ``Sum`` reduces its own (innermost) axis: ``bsum(X[lo:hi], dtype)`` straight from
  storage when the body is a plain slice, else ``rsum(body, axis, drop)``; a body that
  does not vary along the axis is multiplied by the number of terms.  ``Product`` is
  the same with ``rprod`` (and a power for a body that does not vary).

Sympy's convention for reversed limits (``Sum(f, (i, a, b)) == -Sum(f, (i, b+1, a-1))``
when ``b < a - 1``, and ``1/Product(...)`` likewise) is followed.  Limits must be
integers (not other indices).
"""

from __future__ import annotations

import math

import sympy as sp
from sympy.matrices.expressions.matexpr import MatrixElement

from .._errors import ProblemError, UnsupportedExpressionError
from ._graph import RULES, Graph, int_power, product

__all__ = ["lower_indexed", "lower_sum", "lower_product"]


def _affine(g: Graph, e, ix):
    """``ix`` as ``(const, {depth: coeff})`` over the active summation indices."""
    ix = sp.sympify(ix)
    ix = ix.xreplace({a: a.label for a in ix.atoms(sp.Idx)})
    depth = {}
    for d, (sym, _, _) in enumerate(g.ctx):
        depth[sym] = d  # inner bindings shadow outer ones
    coeffs, rest = {}, sp.expand(ix)
    for s in ix.free_symbols:
        if s not in depth:
            raise UnsupportedExpressionError(
                f"{e}: index {ix} uses {s}, which is not a summation index of an enclosing "
                "Sum; indices must be integers or affine in summation indices")
        a = sp.diff(rest, s)
        if not a.is_Integer:
            raise UnsupportedExpressionError(
                f"{e}: index {ix} is not affine with integer coefficients in {s}")
        rest = sp.expand(rest - a * s)
        if a != 0:
            coeffs[depth[s]] = coeffs.get(depth[s], 0) + int(a)
    if not rest.is_Integer:
        raise UnsupportedExpressionError(f"{e}: index {ix} has a non-integer offset {rest}")
    return int(rest), {d: c for d, c in coeffs.items() if c}


def lower_indexed(g: Graph, e) -> int:
    """An element (or moving elements) of a vector variable."""
    if isinstance(e, sp.Indexed):
        base, idx = e.base, e.indices
    else:
        base, idx = e.parent, (e.i, e.j)
    block = g.vector.get(base)
    if block is None:
        if isinstance(base, (sp.IndexedBase, sp.MatrixSymbol)):
            raise ProblemError(f"{base} in {e} is not a variable of the problem")
        raise UnsupportedExpressionError(
            f"constropt cannot lower {type(e).__name__} of {type(base).__name__} (in {e}); "
            "index vector variables (IndexedBase or MatrixSymbol) directly")
    if len(idx) != len(block.shape):
        raise ProblemError(f"{e}: {len(idx)} indices for a variable of shape {block.shape}")
    strides = [math.prod(block.shape[k + 1:]) for k in range(len(block.shape))]
    base_off, moving = block.offset, {}
    for k, ix in enumerate(idx):
        c, coeffs = _affine(g, e, ix)
        lo = c + sum(a * (g.ctx[d][1] if a > 0 else g.ctx[d][2] - 1) for d, a in coeffs.items())
        hi = c + sum(a * (g.ctx[d][2] - 1 if a > 0 else g.ctx[d][1]) for d, a in coeffs.items())
        if lo < 0 or hi >= block.shape[k]:
            raise ProblemError(f"{e}: index {ix} takes values {lo}..{hi}, outside the shape "
                               f"{block.shape} of {base}")
        base_off += strides[k] * (c + sum(a * g.ctx[d][1] for d, a in coeffs.items()))
        for d, a in coeffs.items():
            moving[d] = moving.get(d, 0) + a * strides[k]
    moving = {d: s for d, s in moving.items() if s}
    D = len(g.ctx)
    if not moving:
        return g.node("var", base_off)
    axes = frozenset(moving)
    if len(moving) == 1:
        (d, step), = moving.items()
        n = g.ctx[d][2] - g.ctx[d][1]
        if step > 0:
            return g.node("slice", base_off, base_off + step * (n - 1) + 1, step, d, D,
                          axes=axes)
    spec = tuple((s, g.ctx[d][2] - g.ctx[d][1], d) for d, s in sorted(moving.items()))
    return g.node("grid", base_off, spec, D, axes=axes)


def lower_sum(g: Graph, e) -> int:
    """``Sum`` over one or several indices (``Sum(f, (i, ..), (j, ..))``: ``i`` innermost)."""
    return _reduce(g, e, e.function, e.limits, "sum")


def lower_product(g: Graph, e) -> int:
    """``Product``, like ``Sum`` with a product reduction."""
    return _reduce(g, e, e.function, e.limits, "prod")


def _reduce(g: Graph, e, function, limits, kind: str) -> int:
    if not limits:
        return g.lower(function)
    lim = limits[-1]  # the outermost index
    name = type(e).__name__
    if len(lim) != 3:
        raise UnsupportedExpressionError(f"{e}: a {name} needs limits (i, lo, hi)")
    s = lim[0].label if isinstance(lim[0], sp.Idx) else lim[0]
    lo, hi = lim[1], lim[2]
    if not (lo.is_Integer and hi.is_Integer):
        raise UnsupportedExpressionError(
            f"{e}: {name} limits must be integers, got ({s}, {lo}, {hi})")
    start, stop = int(lo), int(hi) + 1
    if stop == start:
        return g.const(0.0 if kind == "sum" else 1.0)
    if stop < start:  # Karr's convention, as sympy: Sum(f, (i, a, b)) = -Sum(f, (i, b+1, a-1))
        flipped = (lim[0], sp.Integer(stop), sp.Integer(start - 1))
        inner = _reduce(g, e, function, limits[:-1] + (flipped,), kind)
        return g.node("neg" if kind == "sum" else "recip", inner)
    g.ctx.append((s, start, stop))
    try:
        body = _reduce(g, e, function, limits[:-1], kind)
    finally:
        g.ctx.pop()
    D = len(g.ctx) + 1
    axis = D - 1
    axes = g.axes(body)
    if axis not in axes:
        if axes:  # varies along outer axes only: drop the unit axis of this one
            body = g.node("sum", body, axis, 0, axes=axes)
        if kind == "prod":
            return int_power(g, body, stop - start)
        return product(g, [g.const(stop - start), body])
    left = axes - {axis}
    key = g.nodes[body]
    if kind == "sum" and key[0] == "slice" and D == 1:
        return g.node("bsum", *key[1:4], axes=left)
    drop = 0 if left else axis
    return g.node(kind, body, axis, drop, axes=left)


RULES[sp.Indexed] = lower_indexed
RULES[MatrixElement] = lower_indexed
RULES[sp.Sum] = lower_sum
RULES[sp.Product] = lower_product
