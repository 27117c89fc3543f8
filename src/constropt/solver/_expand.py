"""Expanding the search box on soft sides (sides with no bound, or a huge given one).

The search starts in a box of the problem's scale (``constropt.problem._bounds``).  When
the best point presses on a soft side and a point beyond that side is feasible and
better, the side moves out tenfold and the search runs again, at most
:data:`MAX_EXPANSIONS` times; a huge given side is then reached in one step.  An open
side that is still pressed after that means the problem is unbounded or its optimum is
far beyond the problem's scale: ``solve`` reports ``UNBOUNDED`` and says so.
"""

from __future__ import annotations

import numpy as np

from ..problem._bounds import with_box
from ..problem._evaluate import report_numpy

__all__ = ["MAX_EXPANSIONS", "FACTOR", "pressed_sides", "expand", "describe", "open_side"]

#: Expansions of the soft sides before an open side still pressed is reported unbounded.
MAX_EXPANSIONS = 4
#: Each expansion multiplies the box width along a pressed side by this.
FACTOR = 10.0
#: The best point presses on a side within this fraction of the box width.
_NEAR = 1e-3
#: The probe beyond a side lies this fraction of the box width outside it.
_BEYOND = 0.1


#: Further probes beyond a pressed side, as shares of :data:`_BEYOND`, tried where the
#: first is infeasible or no better: a constraint such as ``cos(v**2) < 0.29`` holds on
#: an unbounded set in stripes that one probe point may miss.
_RETRIES = np.array([0.618, 0.382, 0.854, 0.236, 0.927, 0.146, 0.472])


def pressed_sides(problem, box, x: np.ndarray, f: float, pvec: np.ndarray, budget=None):
    """Soft sides of ``box`` that the feasible point ``x`` (objective ``f``) presses on
    with the objective improving beyond them.

    One probe point per candidate side, :data:`_BEYOND` of the width outside it; where
    that one is infeasible or no better, the retries :data:`_RETRIES` nearer the side
    (at most ``budget`` evaluations in all; None: no limit).  Returns ``(lower, upper,
    evaluations)``: boolean masks of shape (n,) and the number of probe points evaluated.
    """
    soft = problem._soft
    lo, hi = box.lower, box.upper
    width = np.maximum(hi - lo, 1e-300)
    cand_lo = soft.lower & (lo > soft.hard_lower) & (x - lo <= _NEAR * width)
    cand_hi = soft.upper & (hi < soft.hard_upper) & (hi - x <= _NEAR * width)
    idx = np.concatenate([np.flatnonzero(cand_lo), np.flatnonzero(cand_hi)])
    if idx.size == 0:
        return cand_lo, cand_hi, 0
    step = np.concatenate([-np.ones(cand_lo.sum()), np.ones(cand_hi.sum())])
    edge = np.where(step < 0, lo[idx], hi[idx])
    sign = -1.0 if problem.maximize else 1.0
    left = np.inf if budget is None else budget
    better = np.zeros(idx.size, dtype=bool)
    used = 0
    for share in np.concatenate([[1.0], _RETRIES]):
        todo = np.flatnonzero(~better)
        if todo.size == 0 or todo.size > left:
            break
        pts = np.repeat(x[:, None], todo.size, axis=1)
        pts[idx[todo], np.arange(todo.size)] = np.clip(
            edge[todo] + step[todo] * share * _BEYOND * width[idx[todo]],
            soft.hard_lower[idx[todo]], soft.hard_upper[idx[todo]])
        fp, V = report_numpy(problem, pts, pvec)
        used += todo.size
        left -= todo.size
        better[todo] = (V == 0).all(axis=0) & (sign * fp < sign * f)
    out_lo, out_hi = np.zeros_like(cand_lo), np.zeros_like(cand_hi)
    k = int(cand_lo.sum())
    out_lo[idx[:k]] = better[:k]
    out_hi[idx[k:]] = better[k:]
    return out_lo, out_hi, used


def expand(problem, box, lower_mask: np.ndarray, upper_mask: np.ndarray, last: bool):
    """``box`` with the masked sides moved out: the width along each grows ``FACTOR``
    times, clipped to the side's hard limit; on the ``last`` expansion a finite (huge
    given) limit is reached directly."""
    soft = problem._soft
    lo, hi = box.lower, box.upper
    width = hi - lo
    new_lo = np.where(lower_mask, np.maximum(hi - FACTOR * width, soft.hard_lower), lo)
    new_hi = np.where(upper_mask, np.minimum(lo + FACTOR * width, soft.hard_upper), hi)
    if last:
        new_lo = np.where(lower_mask & np.isfinite(soft.hard_lower), soft.hard_lower, new_lo)
        new_hi = np.where(upper_mask & np.isfinite(soft.hard_upper), soft.hard_upper, new_hi)
    return with_box(box, new_lo, new_hi)


def describe(problem, box, lower_mask, upper_mask) -> str:
    """``"x (lower side at -4500), y (upper side at 300)"`` for a message."""
    parts = []
    for b in problem.layout.blocks:
        sl = slice(b.offset, b.offset + b.size)
        if lower_mask[sl].any():
            parts.append(f"{b.symbol} (lower side at {box.lower[sl].min():.6g})")
        if upper_mask[sl].any():
            parts.append(f"{b.symbol} (upper side at {box.upper[sl].max():.6g})")
    return ", ".join(parts)


def open_side(problem, lower_mask, upper_mask) -> bool:
    """Whether a pressed side has no bound at all (an infinite hard limit)."""
    soft = problem._soft
    return bool((lower_mask & ~np.isfinite(soft.hard_lower)).any()
                or (upper_mask & ~np.isfinite(soft.hard_upper)).any())
