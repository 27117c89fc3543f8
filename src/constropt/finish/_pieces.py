"""Piece moves: a continuous variable moved across the breakpoints of a piecewise
expression, and the point polished inside its new piece.

A cost table written as ``Piecewise((28*x2, x2 < 100), (29*x2, x2 < 200), (30*x2,
True))`` jumps at each breakpoint.  SLSQP sees one piece's gradient and cannot cross a
jump, and a search that settles in one piece keeps its population there, at a local
optimum of that piece, while the optimum lies in the next.

:func:`piece_moves` finds the breakpoints (conditions of a ``Piecewise`` in the
objective or a constraint that compare one scalar continuous variable with a constant,
:func:`breakpoints`), and for each such variable of the best point tries every other
piece of its range: the variable is sent to the piece's nearest point, and the
continuous variables are polished in a box where that variable stays inside the piece
(its ends pulled in by :data:`EDGE`, so that a strict ``x2 < 100`` holds).  The end is
checked on the problem itself and kept only when feasible and better; the moves repeat
from a kept point.  A problem without such a condition pays nothing.  Cases behind
these rules: ``benchmarks/results/finishing_cases.md``.
"""

from __future__ import annotations

import numpy as np
import sympy as sp

from ..local._polish import real_gain
from ..problem._bounds import with_box
from ._budget import Budget, Incumbent
from ._intsearch import try_move
from ._verdict import check_point

__all__ = ["breakpoints", "piece_moves", "EDGE", "MAX_PIECES"]

#: A piece's ends that are breakpoints are pulled this far inside (relative to
#: ``max(1, |c|)``), so that the piece's own branch of the condition holds there.
EDGE = 1e-12
#: Pieces tried per variable at most (the nearest ones first).
MAX_PIECES = 8
#: Rounds of first-improvement moves, and moves tried, at most.
ROUNDS = 4
MAX_TRIES = 64


def breakpoints(problem, pvec: np.ndarray) -> dict[int, np.ndarray]:
    """``{gene: sorted breakpoints strictly inside its box}`` for the scalar continuous
    variables that a ``Piecewise`` condition of the objective or of a constraint compares
    with a constant (``a*x + b (op) 0``, parameters at their values ``pvec``)."""
    layout = problem.layout
    gene = {b.symbol: b.offset for b in layout.blocks if b.shape == ()}
    values = dict(zip(layout.parameters, (float(v) for v in pvec)))
    exprs = [problem.objective, *problem.constraints]
    found: dict[int, set] = {}
    for expr in exprs:
        for pw in expr.atoms(sp.Piecewise):
            for _, cond in pw.args:
                for rel in _relations(cond):
                    hit = _root(rel, gene, values)
                    if hit is not None:
                        found.setdefault(hit[0], set()).add(hit[1])
    out = {}
    for i, cs in sorted(found.items()):  # by gene: one order of moves whatever the hash seed
        if problem.integer[i]:
            continue
        lo, hi = problem.lower[i], problem.upper[i]
        inside = sorted(c for c in cs if lo < c < hi)
        if inside:
            out[i] = np.array(inside)
    return out


def _relations(cond):
    if isinstance(cond, sp.core.relational.Relational):
        return [cond]
    if isinstance(cond, sp.logic.boolalg.BooleanFunction):
        return [r for a in cond.args for r in _relations(a)]
    return []


def _root(rel, gene: dict, values: dict):
    """``(gene, c)`` where ``rel`` changes truth at ``x = c`` for one scalar variable
    ``x`` entering linearly, else None."""
    if isinstance(rel, (sp.Eq, sp.Ne)):
        return None
    e = sp.sympify(rel.lhs - rel.rhs).subs(values)
    if len(e.free_symbols) != 1:
        return None
    (x,) = e.free_symbols
    a = sp.diff(e, x)
    if x not in gene or a.free_symbols or a == 0:
        return None
    try:  # e = a x + e(0) with a constant: its one root
        c = float(-e.subs(x, 0) / a)
    except (TypeError, ValueError):
        return None
    return (gene[x], c) if np.isfinite(c) else None


def _pieces(lo: float, hi: float, cuts: np.ndarray, v: float):
    """The other pieces of ``[lo, hi]`` cut at ``cuts``: ``(a, b)`` with breakpoint ends
    pulled in by :data:`EDGE`, the nearest to ``v`` first."""
    ends = np.concatenate([[lo], cuts, [hi]])
    out = []
    for k in range(ends.size - 1):
        a, b = ends[k], ends[k + 1]
        if a <= v <= b and not (v == a and k > 0) and not (v == b and k < ends.size - 2):
            continue  # v's own piece (v on a breakpoint belongs to both: try both)
        if k > 0:
            a = a + EDGE * max(1.0, abs(a))
        if k < ends.size - 2:
            b = b - EDGE * max(1.0, abs(b))
        if a <= b:
            out.append((min(abs(v - a), abs(v - b)), a, b))
    out.sort()
    return [(a, b) for _, a, b in out[:MAX_PIECES]]


def piece_moves(problem, inc: Incumbent, budget: Budget):
    """Move each continuous variable of a feasible incumbent that a piecewise condition
    cuts into its other pieces, polish inside the piece, keep improvements (see the
    module).  Same parameters and returns as :func:`._intsearch.integer_search`."""
    if not inc.feasible or not np.isfinite(inc.f):
        return inc, False
    cuts = breakpoints(problem, inc.pvec)
    if not cuts:
        return inc, False
    tries = 0
    for _ in range(ROUNDS):
        moves = [(i, a, b) for i, cs in cuts.items()
                 for a, b in _pieces(problem.lower[i], problem.upper[i], cs, inc.x[i])]
        improved = False
        for i, a, b in moves:
            if tries >= MAX_TRIES or not budget.room(20) or budget.expired():
                return inc, tries < MAX_TRIES
            tries += 1
            lo, hi = problem.lower.copy(), problem.upper.copy()
            lo[i], hi[i] = a, b
            start = inc.x.copy()
            start[i] = min(max(inc.x[i], a), b)
            x, _, _, timed_out = try_move(with_box(problem, lo, hi), start, inc.pvec, budget)
            f, V = check_point(problem, x, inc.pvec)  # on the problem itself
            budget.spend(1)
            if np.all(V == 0) and real_gain(problem, f, inc.f):
                inc, improved = inc.at(x, f, V), True
            if timed_out:
                return inc, True
            if improved:  # first improvement: the next round's pieces from the new best
                break
        if not improved:
            break
    return inc, False
