"""The pole probe of a final point: does the objective diverge toward the returned point
itself?

A pole inside the box (``1/(x - y)`` at ``x = y``) or at a constraint boundary that cuts
through it (``log(x - y)`` with ``x - y >= 0``) is no box edge, so the edge approaches of
:func:`._verdict.diverges` do not see it, and a search that ends within a few ulps of it
returns a huge but finite objective (``-9e15``).  Used by the verdict
(:func:`._status.verdict`) for every mode.
"""

from __future__ import annotations

import math

import numpy as np

from ..problem._evaluate import report_numpy
from ._budget import Budget, Incumbent
from ._result import Status
from ._verdict import _DECADES, ProbeVerdict

__all__ = ["pole_probe", "pole_cost", "pole_status"]

#: Decades (steps of ``10**-k`` box widths) at which the screening samples each coordinate
#: on both sides of the point.  Three decades apart, a smooth function's change shrinks by
#: 30x or more from one sample to the next (``c * d**p``, ``p >= 1/2``); a pole's or a
#: logarithm's does not shrink.
_SCREEN = np.array([2.0, 5.0, 8.0])

#: A coordinate whose farthest screening sample is worse than the point by this many times
#: its own magnitude (``max(1, |f|)``) is marked too: the point sits in a well too deep
#: for its neighbourhood, as next to a pole (``-9e3`` with ``-40`` a hundredth of the box
#: away).
_DEEP = 100.0

#: Coordinates (the steepest screened) whose approach is sampled at every decade.
_MAX_COORDS = 3

#: Decades nearest the point (where the step rounds to a few ulps) left out of the steady
#: tail; they must still keep the objective falling.
_MARGIN = 2

#: Powers ``10**-k`` (box widths) of the approach; those distinct from the point in
#: float64 are known without evaluating.
_STEPS = np.arange(1, 331, dtype=np.float64)

#: A sample counts as better than the result when it improves the objective by more than
#: this share of ``max(1, |f|)``.
_BETTER = 1e-6

#: An objective beyond this magnitude (optimization direction) that the budget left
#: without its pole probe is not confirmed.
POLE_SUSPECT = 1e12


def pole_cost(problem) -> int:
    """Evaluations the screening of :func:`pole_probe` needs at most."""
    return 2 * _SCREEN.size * int((~problem.integer).sum())


def _names(problem):
    names = []
    for blk in problem.layout.blocks:
        names += [str(blk.symbol)] if blk.shape == () else \
            [f"{blk.symbol}[{i}]" for i in range(blk.size)]
    return names


def pole_probe(problem, box, x, f, pvec, budget=None) -> ProbeVerdict:
    """Does the objective diverge (optimization direction) toward ``x`` (objective ``f``,
    user's sense), the final point, along a coordinate?

    Screening: each continuous coordinate is moved by ``10**-k`` of ``box``'s width,
    ``k`` in :data:`_SCREEN`, both ways (within the box).  A side where the objective
    falls toward ``x`` without the steps shrinking (a pole's or a logarithm's shape, not
    a smooth function's) marks its coordinate, and so does a point far below its
    farthest sample (:data:`_DEEP`); the :data:`_MAX_COORDS` steepest marked
    coordinates are approached both ways at the last ``_DECADES + 1 + _MARGIN`` decades
    distinct from ``x`` in float64.  ``UNBOUNDED`` when on one of them the first
    ``_DECADES + 1`` are feasible and fall by a steady step (at least
    ``1e-3 * max(1, |f|)``, each step at least 0.8 times the previous: a bounded
    approach converges, its steps shrink) and the rest keep falling.  A feasible sample
    of a marked coordinate better than ``f`` by more than :data:`_BETTER` means the pole
    lies beside ``x`` rather than at it: bisection between that sample and its
    neighbours moves toward it, and the probe runs again from there (at most
    :data:`_ROUNDS` times); ``NOT_CONFIRMED`` with the best point when no round proves
    divergence.  At most ``budget`` evaluations (None: no limit).
    """
    sign = -1.0 if problem.maximize else 1.0
    left = math.inf if budget is None else int(budget)
    used, short, found = 0, False, None
    x, fm0 = np.asarray(x, dtype=np.float64), sign * f
    for _ in range(_ROUNDS):
        status, point, fm, where, u, sh, bracket = _probe_once(problem, box, x, fm0, pvec,
                                                              left)
        used, left, short = used + u, left - u, short or sh
        if status is Status.UNBOUNDED:
            return ProbeVerdict(status, point, sign * fm, where, used, short)
        if status is None:
            break
        found = (point, fm, where)
        x, fm0, u = _bisect(problem, point, fm, pvec, bracket, left)
        used, left = used + u, left - u
        if fm0 < found[1]:
            found = (x, fm0, where)
    if found is None:
        return ProbeVerdict(None, None, math.nan, "", used, short)
    return ProbeVerdict(Status.NOT_CONFIRMED, found[0], sign * found[1], found[2], used,
                       short)


#: Rounds of :func:`pole_probe` (probe, bisection toward a pole beside the point).
_ROUNDS = 3

#: Bisection steps toward a pole between two samples (each bracket).
_BISECT = 60


def _bisect(problem, point, fm, pvec, bracket, left):
    """From the sample ``point`` (objective ``fm``, minimization sense), toward a pole
    between it and each neighbouring coordinate value in ``bracket`` ``(i, others)``:
    halve the interval, keeping the half whose inner end improves on the best so far.
    Returns ``(point, fm, evaluations)`` with the best point reached."""
    sign = -1.0 if problem.maximize else 1.0
    i, others = bracket
    best, f_best, used = point, fm, 0
    for other in others:
        near, far, f_near = point[i], other, fm
        for _ in range(_BISECT):
            mid = 0.5 * (near + far)
            if mid in (near, far) or used >= left:
                break
            q = point.copy()
            q[i] = mid
            fq, V = report_numpy(problem, q[:, None], pvec)
            used += 1
            fq = sign * float(fq[0])
            if bool((V == 0).all()) and math.isfinite(fq) and fq < f_near:
                near, f_near = mid, fq
                if fq < f_best:
                    best, f_best = q, fq
            else:
                far = mid
    return best, f_best, used


def _probe_once(problem, box, x, f0, pvec, left):
    """One round of :func:`pole_probe` from ``x`` (objective ``f0``, minimization sense):
    ``(status, point, fm, where, used, short, bracket)``; ``bracket`` ``(i, values)``
    the coordinate and its neighbouring sampled values around the best sample when the
    status is ``NOT_CONFIRMED``."""
    r = _Samples(problem, box, x, f0, pvec)
    nothing = (None, None, math.nan, "")
    screened = _screen(r, left)
    if screened is None:
        return (*nothing, 0, r.short, None)
    marked, samples = screened
    if not marked:
        return (*nothing, r.used, r.short, None)
    for i, s, fm, ok, P in samples:
        if i in marked:
            r.better(i, fm, ok, P, r.side(i, s))
    T = _DECADES + 1
    for i in sorted(marked, key=lambda q: -marked[q])[:_MAX_COORDS]:
        for s in (-1.0, 1.0):
            c, keep = r.steps_of(i, s, _STEPS)
            idx = np.flatnonzero(keep)[-(T + _MARGIN):]
            if idx.size == 0 or idx.size > left - r.used:
                r.short = r.short or idx.size > 0
                continue
            P = r.moved(i, c[idx])
            fm, ok = r.evaluate(P)
            if idx.size == T + _MARGIN and _steady(fm, ok, T):
                return (Status.UNBOUNDED, P[:, -1].copy(), float(fm[-1]), r.side(i, s),
                        r.used, r.short, None)
            r.better(i, fm, ok, P, r.side(i, s))
    if r.best is None:
        return (*nothing, r.used, r.short, None)
    best = r.best
    return (Status.NOT_CONFIRMED, best[1], best[0], best[2], r.used, r.short, best[3])


def _screen(r: _Samples, left):
    """The screening of one round: the samples :data:`_SCREEN` of every continuous
    coordinate both ways, at once (as ``left`` allows).  Returns ``(marked, samples)``:
    the coordinates whose samples fall toward the point without shrinking steps (or
    sit far above it), each with its steepness, and ``(i, s, fm, ok, points)`` per
    screened side; None when nothing was sampled."""
    cols, owner = [], []
    for i in r.free:
        per = [(s, *r.steps_of(i, s, _SCREEN)) for s in (-1.0, 1.0)]
        need = sum(int(k.sum()) for _, _, k in per)
        if need > left - sum(p.shape[1] for p in cols):
            r.short = True
            break
        for s, c, keep in per:
            if keep.any():
                cols.append(r.moved(i, c[keep]))
                owner.append((i, s))
    if not cols:
        return None
    fm_all, ok_all = r.evaluate(np.concatenate(cols, axis=1))
    f0 = r.f0
    marked: dict[int, float] = {}
    samples = []  # (i, s, fm, ok, points) per screened side
    a = 0
    for (i, s), P in zip(owner, cols):
        m = P.shape[1]
        fm, ok = fm_all[a:a + m], ok_all[a:a + m]
        a += m
        samples.append((i, s, fm, ok, P))
        if ok[0] and f0 < fm[0] - _DEEP * max(1.0, abs(fm[0])):  # a well or a pole
            marked[i] = max(marked.get(i, 0.0), (fm[0] - f0) / max(1.0, abs(f0)))
        if m < _SCREEN.size or not ok.all():
            continue
        d1, d2 = fm[0] - fm[1], fm[1] - fm[2]
        scale = max(1.0, abs(fm[2]))
        if d1 > 1e-9 * scale and d2 > 1e-9 * scale and d2 >= 0.5 * d1:
            marked[i] = max(marked.get(i, 0.0), (fm[0] - fm[2]) / scale)
    return marked, samples


class _Samples:
    """The samples of one round of the pole probe around ``x`` (objective ``f0``,
    minimization sense): where they lie, their evaluations (``used``), whether the
    budget cut them short (``short``), and the best sample better than ``x``
    (``best``: ``(fmin, point, description, bracket)``)."""

    def __init__(self, problem, box, x, f0, pvec):
        self.problem, self.x, self.f0 = problem, x, f0
        self.sign = -1.0 if problem.maximize else 1.0
        self.pvec = np.reshape(pvec, -1)
        self.lo, self.hi = box.lower, box.upper
        self.width = self.hi - self.lo
        self.free = [int(i) for i in np.flatnonzero(~problem.integer)
                     if math.isfinite(self.width[i]) and self.width[i] > 0]
        self.names = _names(problem)
        self.used, self.short, self.best = 0, False, None

    def moved(self, i, coords):
        P = np.repeat(self.x[:, None], coords.size, axis=1)
        P[i] = coords
        return P

    def evaluate(self, P):
        fm, V = report_numpy(self.problem, P, self.pvec)
        self.used += P.shape[1]
        fm = self.sign * fm
        with np.errstate(invalid="ignore"):
            ok = (V == 0).all(axis=0) & np.isfinite(fm)
        return fm, ok

    def steps_of(self, i, s, ks):
        c = self.x[i] + s * self.width[i] * 10.0 ** -ks
        keep = (c != self.x[i]) & (c >= self.lo[i]) & (c <= self.hi[i])
        return c, keep

    def better(self, i, fm, ok, P, desc):
        f0 = self.f0
        with np.errstate(invalid="ignore"):
            good = ok & (fm < f0 - _BETTER * max(1.0, abs(f0)))
        if good.any():
            k = int(np.argmin(np.where(good, fm, np.inf)))
            if self.best is None or fm[k] < self.best[0]:
                nb = [P[i, j] for j in (k - 1, k + 1) if 0 <= j < P.shape[1]] + \
                    ([self.x[i]] if k == P.shape[1] - 1 else [])
                self.best = (float(fm[k]), P[:, k].copy(), desc, (i, nb))

    def side(self, i, s):
        return (f"{self.names[i]} approaches {self.x[i]:.17g} from "
                f"{'below' if s < 0 else 'above'}")


def _steady(fm, ok, T) -> bool:
    """The first ``T`` samples of an approach (far to near) feasible and falling by a
    steady step (at least ``1e-3 * max(1, |f|)``, each at least 0.8 times the previous),
    the rest feasible and still falling."""
    if not ok.all():
        return False
    steps = -np.diff(fm)
    head = steps[:T - 1]
    return bool(np.all(head >= 1e-3 * np.maximum(1.0, np.abs(fm[1:T]))) and
                np.all(head[1:] >= 0.8 * head[:-1]) and np.all(steps[T - 1:] > 0))


def pole_status(problem, box, inc: Incumbent, reason, budget: Budget, status, message):
    """The verdict's use of :func:`pole_probe` on a feasible final point ``inc`` whose
    status is still ``reason`` (nothing else found against it): ``(status, message)``,
    with ``UNBOUNDED`` or ``NOT_CONFIRMED`` where the probe (within what is left of the
    ``budget``, which counts its evaluations) says so, or where the budget left it
    unscreened at an objective beyond :data:`POLE_SUSPECT`; else ``status`` and
    ``message`` as given."""
    if status is not reason:
        return status, message
    f = inc.f
    pole = pole_probe(problem, box, inc.x, f, inc.pvec, budget.left())
    budget.spend(pole.used)
    fmin = -f if problem.maximize else f
    if pole.status is Status.UNBOUNDED:
        return Status.UNBOUNDED, (
            f"{Status.UNBOUNDED.value}: the objective falls by a steady step per decade "
            f"as {pole.where} (a pole; {pole.fun:.6g} there, best objective "
            f"{f:.6g})")
    if pole.status is Status.NOT_CONFIRMED:
        return Status.NOT_CONFIRMED, (
            f"{Status.NOT_CONFIRMED.value}: the objective falls steeply toward the "
            f"returned point, as near a pole, and a point nearby ({pole.where}) has "
            f"objective {pole.fun:.6g}, better than the result's {f:.6g}")
    if pole.short and fmin <= -POLE_SUSPECT:
        return Status.NOT_CONFIRMED, (
            f"{Status.NOT_CONFIRMED.value}: the evaluation budget ran out before the "
            f"pole probe of the returned point, whose objective {f:.3g} is beyond "
            f"{POLE_SUSPECT:.0e} (raise max_evals; search ended: {reason.value})")
    return status, message
