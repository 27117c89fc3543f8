"""The ray probe of a final point: is a feasible point beyond the soft sides of the
search box better than it, or does the objective fall without limit along such a ray?

Used by the verdict (:func:`._status.verdict`) for every mode; a soft side is a side
of the default box, not a bound the user gave.
"""

from __future__ import annotations

import math

import numpy as np

from ..problem._evaluate import report_numpy
from ._result import Status
from ._verdict import _DECADES, UNBOUNDED_LEVEL, ProbeVerdict

__all__ = ["ray_probe", "ray_cost", "edge_suspect"]

#: Powers of ten (in box widths) at which the screening of :func:`ray_probe` samples a ray
#: beyond a soft side; a ray with a better feasible sample is then sampled at every power
#: from ``10**-1`` to ``10**_RAY_DECADES``.
_RAY_SCREEN = np.array([-1.0, 0.0, 1.0, 3.0, 6.0, 12.0, 24.0, 40.0])
_RAY_DECADES = 40

#: Relative offsets of the retries of a sample that is infeasible: a constraint such as
#: ``cos(v**2) < 0.29`` holds on an unbounded set that a ray crosses in and out of.
_JITTER = np.array([0.0137, 0.0731, 0.2291])

#: A sample beyond a soft side counts as better than the result when it improves the
#: objective by more than this share of ``max(1, |f|)`` (rounding and the polish's own
#: tolerance stay below it).
_BETTER = 1e-6

#: Share of the box width within which a point presses on a side (as in ``_expand``).
_NEAR = 1e-3


def _rays(problem, box, x):
    """The rays beyond the soft sides of ``box`` from ``x``: ``(directions (D, n) in
    units of the box's widths, descriptions, pressed (D,) bool)``; the sides that press
    (``x`` within :data:`_NEAR` of the width) first, then their sum when several do."""
    soft = problem._soft
    lo, hi = box.lower, box.upper
    width = np.maximum(hi - lo, 1e-300)
    names = []
    for blk in problem.layout.blocks:
        names += [str(blk.symbol)] if blk.shape == () else \
            [f"{blk.symbol}[{i}]" for i in range(blk.size)]
    dirs, desc, pressed = [], [], []
    for i in range(problem.n):
        for sgn, ok, near, side in (
                (-1.0, soft.lower[i] and x[i] > soft.hard_lower[i],
                 x[i] - lo[i] <= _NEAR * width[i], "decreasing"),
                (1.0, soft.upper[i] and x[i] < soft.hard_upper[i],
                 hi[i] - x[i] <= _NEAR * width[i], "increasing")):
            if ok:
                d = np.zeros(problem.n)
                d[i] = sgn * width[i]
                dirs.append(d)
                desc.append(f"{names[i]} {side}")
                pressed.append(bool(near))
    if not dirs:
        return np.zeros((0, problem.n)), [], np.zeros(0, dtype=bool)
    order = sorted(range(len(dirs)), key=lambda q: not pressed[q])
    dirs, desc, pressed = [dirs[q] for q in order], [desc[q] for q in order], \
        [pressed[q] for q in order]
    if sum(pressed) > 1:
        dirs.insert(0, np.sum([d for d, p in zip(dirs, pressed) if p], axis=0))
        desc.insert(0, " and ".join(d for d, p in zip(desc, pressed) if p) + " at once")
        pressed.insert(0, True)
    return np.array(dirs), desc, np.array(pressed)


def _ray_points(problem, x, d, powers):
    """Points ``x + 10**k * d`` for each power ``k``, stopped at the hard limits of the
    soft sides (the last point on a limit, later powers dropped); integer genes rounded.
    Returns ``(points (n, K'), powers (K',), reached a finite limit)``."""
    soft = problem._soft
    room = np.full(d.shape, np.inf)
    up, dn = d > 0, d < 0
    room[up] = (soft.hard_upper[up] - x[up]) / d[up]
    room[dn] = (soft.hard_lower[dn] - x[dn]) / d[dn]
    tmax = float(room.min())
    t = 10.0 ** powers
    capped = t >= tmax
    if capped.any():
        first = int(np.argmax(capped))
        t, powers = np.append(t[:first], tmax), powers[:first + 1]
    pts = x[:, None] + d[:, None] * t[None, :]
    pts[problem.integer] = np.round(pts[problem.integer])
    with np.errstate(invalid="ignore"):
        ok = np.all(np.isfinite(pts), axis=0)
    return pts[:, ok], powers[ok], bool(capped.any())


def ray_cost(problem, box, x) -> int:
    """Evaluations the screening of :func:`ray_probe` needs at least (no retries)."""
    dirs, _, _ = _rays(problem, box, x)
    return int(dirs.shape[0] * _RAY_SCREEN.size)


def ray_probe(problem, box, x, f, pvec, budget=None) -> ProbeVerdict:
    """Is there a feasible point beyond a soft side of ``box`` (a side the search box
    got by default, not a given bound) that is better than the result ``x``
    (objective ``f``, user's sense), or a proof that the objective is unbounded there?

    Each ray (per soft side, and the sides ``x`` presses on at once) is screened at
    ``10**k`` box widths, ``k`` in :data:`_RAY_SCREEN`, up to the side's hard limit; an
    infeasible sample is retried at the offsets :data:`_JITTER`.  A ray with a better
    feasible sample is sampled at every power of ten up to ``10**_RAY_DECADES``.  The
    verdict is ``UNBOUNDED`` when a feasible sample lies beyond
    :data:`UNBOUNDED_LEVEL`, or when the ray is open (no finite limit) and its last
    ``_DECADES + 1`` powers are feasible with the objective falling by a steady step
    (the rule of the edge approaches, :func:`_diverges_at_edge`); ``NOT_CONFIRMED``
    when a feasible sample is better than ``f`` by more than :data:`_BETTER` without
    such a proof.  At most ``budget`` evaluations (None: no limit); a probe the budget
    cut short says so (``short``).
    """
    sign = -1.0 if problem.maximize else 1.0
    f0 = sign * f
    dirs, desc, _ = _rays(problem, box, x)
    pvec = np.reshape(pvec, -1)
    left = math.inf if budget is None else int(budget)
    used, short = 0, False
    best = None  # (fmin, point, q)

    def evaluate(P, origin):
        nonlocal used, left
        fm, ok, u = _samples(problem, P, origin, pvec, left)
        used, left = used + u, left - u
        return fm, ok

    for q in range(dirs.shape[0]):
        P, _, _ = _ray_points(problem, x, dirs[q], _RAY_SCREEN.copy())
        if P.shape[1] == 0:
            continue
        if left < P.shape[1]:
            short = True
            break
        fm, ok = evaluate(P, x)
        if not (ok & (fm < f0 - _BETTER * max(1.0, abs(f0)))).any():
            continue
        full, powers, limited = _ray_points(problem, x, dirs[q],
                                            np.arange(-1.0, _RAY_DECADES + 1.0))
        if left >= full.shape[1]:
            fm, ok = evaluate(full, x)
            P = full
        else:
            short, powers, limited = True, None, True
        with np.errstate(invalid="ignore"):
            good = ok & (fm < f0 - _BETTER * max(1.0, abs(f0)))
        k = int(np.argmin(np.where(good, fm, np.inf)))
        cand = (float(fm[k]), P[:, k].copy(), q)
        if fm[k] <= -UNBOUNDED_LEVEL:
            return ProbeVerdict(Status.UNBOUNDED, cand[1], sign * cand[0], desc[q], used,
                                short)
        if powers is not None and not limited and _steady(fm, ok, powers):
            return ProbeVerdict(Status.UNBOUNDED, P[:, -1].copy(), sign * float(fm[-1]),
                                desc[q], used, short)
        if best is None or cand[0] < best[0]:
            best = cand
    if best is None:
        return ProbeVerdict(None, None, math.nan, "", used, short)
    return ProbeVerdict(Status.NOT_CONFIRMED, best[1], sign * best[0], desc[best[2]], used,
                        short)


def _samples(problem, P, origin, pvec, left):
    """Objective (minimization sense) and feasibility of the ray samples ``P`` (n, K)
    from ``origin``; an infeasible sample is retried at the offsets :data:`_JITTER`
    (replaced in ``P`` where a retry is feasible) while ``left`` evaluations allow.
    Returns ``(fm, ok, evaluations)``."""
    sign = -1.0 if problem.maximize else 1.0
    fm, V = report_numpy(problem, P, pvec)
    used = P.shape[1]
    left -= P.shape[1]
    ok = (V == 0).all(axis=0)
    fm = sign * fm
    bad = np.flatnonzero(~ok)
    for a in _JITTER:
        if bad.size == 0 or left < bad.size:
            break
        Q = origin[:, None] + (P[:, bad] - origin[:, None]) * (1.0 + a)
        Q[problem.integer] = np.round(Q[problem.integer])
        fq, Vq = report_numpy(problem, Q, pvec)
        used += bad.size
        left -= bad.size
        okq = (Vq == 0).all(axis=0)
        fm[bad[okq]], ok[bad[okq]] = sign * fq[okq], True
        P[:, bad[okq]] = Q[:, okq]
        bad = bad[~okq]
    with np.errstate(invalid="ignore"):
        ok &= ~np.isnan(fm)
    return fm, ok, used


def _steady(fm, ok, powers) -> bool:
    """Whether the samples at the last ``_DECADES + 1`` powers of ten of an open ray
    (all of them up to ``10**_RAY_DECADES``, consecutive) are feasible and fall by a
    steady step per decade: by at least ``1e-3 * max(1, |f|)``, each step at least half
    the previous one."""
    T = _DECADES + 1
    if powers.size < T or powers[-1] != _RAY_DECADES or not ok[-T:].all():
        return False
    tail = fm[-T:]
    if not np.all(np.isfinite(tail)):
        return False
    steps = -np.diff(tail)
    return bool(np.all(steps >= 1e-3 * np.maximum(1.0, np.abs(tail[1:]))) and
                np.all(steps[1:] >= 0.5 * steps[:-1]))


def edge_suspect(problem, box, x, pvec, budget: int | None = None) -> tuple[bool, int]:
    """Whether ``x`` lies where an unboundedness probe is owed: on a soft side of
    ``box``, or within ``1e-6`` of the width of a side that is not itself a feasible
    point with a finite objective (a strict bound or a pole there).  Returns
    ``(suspect, evaluations)``: one evaluation per such side checked, none beyond
    ``budget`` (sides that do not fit are suspect unchecked)."""
    lo, hi = box.lower, box.upper
    width = np.maximum(hi - lo, 1e-300)
    soft = problem._soft
    if ((soft.lower & (x - lo <= _NEAR * width)) |
            (soft.upper & (hi - x <= _NEAR * width))).any():
        return True, 0
    near_lo = np.flatnonzero((x - lo <= 1e-6 * width) & (x != lo))
    near_hi = np.flatnonzero((hi - x <= 1e-6 * width) & (x != hi))
    idx = np.concatenate([near_lo, near_hi])
    if idx.size == 0:
        return False, 0
    if budget is not None and idx.size > budget:
        return True, 0
    pts = np.repeat(x[:, None], idx.size, axis=1)
    pts[idx, np.arange(idx.size)] = np.concatenate([lo[near_lo], hi[near_hi]])
    fp, V = report_numpy(problem, pts, np.reshape(pvec, -1))
    return bool(((V > 0).any(axis=0) | ~np.isfinite(fp)).any()), int(idx.size)
