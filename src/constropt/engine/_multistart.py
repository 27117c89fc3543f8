"""Local solves inside the search: the multistart stage the driver runs at check points.

At each check point (every ``check_every`` generations) the stage

1. picks starts from the population by multi-level single linkage (Rinnooy Kan and
   Timmer 1987): in box units, a point is a start when no better population point lies
   within the critical distance :func:`critical_distance` (which shrinks as the points
   seen grow), and no earlier start nor recorded minimum lies within it either, so no
   two starts fall in one basin; the population's best point is a start too whenever it
   beats every recorded minimum (the search found a better basin);
2. runs the local solves as one batch through the callable it was given (exact
   derivatives: the solver layer builds it, this module never sees a local solver);
3. evaluates their ends with the search's own fitness and feeds the new minima back into
   the population in place of its worst members while the landscape looks benign
   (:meth:`LocalSearch.benign`; the evolutionary search stays the explorer: it
   supplies the starts and escapes the basins);
4. keeps the record of distinct local minima (:class:`Minimum`) and says when the best
   one is *confirmed* (:meth:`LocalSearch.confirmed`): reached again from enough
   independent starts for the Bayesian rule of Boender and Rinnooy Kan (1987) (with
   ``w`` distinct minima from ``k`` successful solves, the expected number of minima
   ``w (k - 1) / (k - w - 2)`` is below ``w + 1/2``), or no better basin found for a
   window of generations; either way from two starts or more.  The driver hands that
   to :func:`._termination.check`, where every stop rule lives.

Before the search stops (by stagnation, or a minimum confirmed only by the window: not
by the Bayesian rule, which a convex problem meets at its first solves), and as soon as
the window has passed without the solves that make it evidence
(:meth:`LocalSearch.pending`), the stage runs
one *sweep* (:meth:`LocalSearch.sweep`): local solves from :data:`SWEEP` box-filling
starts (a Latin hypercube drawn from the run's seed), independent of the population, as
a multistart from the box would take them, within about as many evaluations as the
local solves have spent so far.  On a rugged landscape the population gathers in one
basin and every MLSL start lies in it: on GLOBALLib ex2_1_7 five seeds ended at four
different minima, the global one on one seed, every solve started from the population.
A sweep that finds a better basin puts its minimum into the population and the search
goes on; one sweep per run, ended early once the Bayesian rule holds.  It cannot find
a basin that almost no start reaches: on ex14_1_7 (every seed stopped at the local
minimum 0.135) SLSQP from 40 uniform starts reaches the global 0 from 2.

The local solves spend at most as many evaluations as the evolutionary search has
(:attr:`LocalSettings.share`), a quarter of them on a rugged landscape: the explorer
keeps at least half of the work.  On a rugged landscape the rounds also thin out: each
waits twice as many check points as the one before (1, 2, 4, ...: ``c`` check points
hold about ``log2 c`` rugged rounds).  A local solve is a sequence of single-point
calls, each costing about as much time as a generation's vectorized evaluation of the
whole population; where nearly every solve finds another minimum (CEC G02: 80 minima
from 80 solves) a round at every check point cost four times the search's own time and
found nothing the search did not.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..backend._arrays import asarray, to_numpy
from ._ga import Population, replace_worst
from ._ranking import order

__all__ = ["LocalSettings", "LocalSearch", "Minimum", "critical_distance", "mlsl_starts",
           "bayes_confirmed", "SWEEP", "SWEEP_FLOOR", "box_filling"]


@dataclass(frozen=True)
class LocalSettings:
    """How the stage runs: at most ``max_starts`` local solves per check point; ``sigma``
    of the critical distance; ``window`` generations without a better basin confirm the
    best minimum; two ends are one minimum when their objectives agree to ``ftol``
    (relative) and their points to ``xtol`` (largest coordinate, box units); a better
    basin beats the best minimum by more than ``ftol``; the local solves spend at most
    ``share`` times the evolutionary search's evaluations, ``rugged_share`` once the
    landscape is rugged (:meth:`LocalSearch.benign` false: the explorer's work
    matters most there)."""

    window: int
    max_starts: int = 4
    sigma: float = 4.0
    ftol: float = 1e-6
    xtol: float = 1e-3
    share: float = 1.0
    rugged_share: float = 0.25


class Minimum:
    """A distinct local minimum: its point ``x`` (N,), box units ``u``, search
    objective ``f`` and violation ``cv``, how many solves reached it (``hits``) and the
    generation it was first found (``g``)."""

    __slots__ = ("x", "u", "f", "cv", "hits", "g")

    def __init__(self, x, u, f, cv, g):
        self.x, self.u, self.f, self.cv, self.hits, self.g = x, u, f, cv, 1, g


def critical_distance(k: int, n: int, sigma: float = 4.0) -> float:
    """The MLSL critical distance in the unit box after ``k`` sample points in ``n``
    dimensions: ``pi**-1/2 (Gamma(1 + n/2) sigma log k / k)**(1/n)``."""
    k = max(int(k), 2)
    log_r = (math.lgamma(1 + n / 2) + math.log(sigma * math.log(k) / k)) / n
    return math.exp(log_r) / math.sqrt(math.pi)


def mlsl_starts(U: np.ndarray, r: float, taken: np.ndarray, most: int) -> list[int]:
    """Columns of ``U`` (N, S: population in box units, best first) that MLSL starts
    from: no better column within ``r``, none of ``taken`` (N, T: earlier starts and
    minima) within ``r``; at most ``most``, best first."""
    out: list[int] = []
    S = U.shape[1]
    for i in range(S):
        if len(out) >= most:
            break
        u = U[:, i:i + 1]
        if i and np.min(np.linalg.norm(U[:, :i] - u, axis=0)) <= r:
            continue
        if taken.shape[1] and np.min(np.linalg.norm(taken - u, axis=0)) <= r:
            continue
        out.append(i)
    return out


def farthest(U: np.ndarray, taken: np.ndarray, most: int, skip) -> list[int]:
    """Up to ``most`` columns of ``U`` (N, S) chosen one by one, each the farthest from
    ``taken`` (N, T) and the columns chosen before it; ``skip``: columns not to take."""
    out: list[int] = []
    far = np.full(U.shape[1], np.inf) if taken.shape[1] == 0 else \
        np.min(np.linalg.norm(U[:, :, None] - taken[:, None, :], axis=0), axis=1)
    far[list(skip)] = -1.0
    for _ in range(min(most, U.shape[1] - len(skip))):
        i = int(np.argmax(far))
        if far[i] <= 0:
            break
        out.append(i)
        far = np.minimum(far, np.linalg.norm(U - U[:, i:i + 1], axis=0))
        far[i] = -1.0
    return out


def bayes_confirmed(w: int, k: int) -> bool:
    """The Bayesian stopping rule: ``w`` distinct minima from ``k`` solves and the
    expected number of minima ``w (k - 1) / (k - w - 2)`` below ``w + 1/2``."""
    return w >= 1 and k > w + 2 and w * (k - 1) / (k - w - 2) < w + 0.5


#: Solves the stage wants before it judges the landscape (:meth:`LocalSearch.benign`):
#: while it has fewer, a round tops its starts up with the population's points farthest
#: from those taken (:func:`farthest`); so does a round without starts while the best
#: minimum was reached from one start only.
SEVERAL = 3

#: Box-filling starts of the sweep before a stagnation stop (:meth:`LocalSearch.sweep`):
#: as many as the 20-start multistart the held-out benchmarks compare with.
SWEEP = 20

#: The least evaluations a sweep may spend, whatever the local solves spent before it:
#: 20 solves of 200 evaluations, more than a small problem's solves take (ex14_1_7, 10
#: variables: 140 each on average).  Above the floor the cap is the local solves' own
#: evaluations: on rosenbrock_ball_100 (seed 0) they had spent 4,603 when the sweep
#: began, 3.1 s into the run; a sweep capped only by the evolutionary search's
#: evaluations solved from all 20 starts and took the median run from 7.7 s to 26 s.
SWEEP_FLOOR = 200 * SWEEP


def box_filling(lower: np.ndarray, upper: np.ndarray, k: int, seed: int) -> np.ndarray:
    """``k`` starts (N, k) in the box ``[lower, upper]`` from ``seed``: a Latin
    hypercube (each coordinate's range cut into ``k`` equal strata, one start in each,
    the strata paired at random across coordinates), so that the starts fill the box
    evenly in every coordinate whatever N.  NumPy only: the sweep must not pay for
    importing ``scipy.stats`` (0.6 s) in a run of a tenth of a second."""
    rng = np.random.default_rng([seed, 0x5EE9])
    N = lower.shape[0]
    strata = rng.permuted(np.tile(np.arange(k), (N, 1)), axis=1)
    U = (strata + rng.random((N, k))) / k
    return lower[:, None] + U * (upper - lower)[:, None]


def _one_point(pop: Population, X: np.ndarray, fe: np.ndarray, cve: np.ndarray,
               j: int) -> Population:
    """The end ``j`` of ``X`` (N, k) with its ``fe``, ``cve`` as a one-point Population
    on ``pop``'s arrays (device and dtype)."""
    return Population(asarray(X[:, j:j + 1, None], pop.X, dtype=pop.X.dtype),
                      asarray(fe[None, j:j + 1], pop.f, dtype=pop.f.dtype),
                      asarray(cve[None, j:j + 1], pop.cv, dtype=pop.cv.dtype))


def _same(a: float, b: float, ftol: float) -> bool:
    return abs(a - b) <= ftol * max(1.0, abs(a), abs(b))


@dataclass
class LocalSearch:
    """The stage, called by the driver at check points of a single instance.

    Parameters
    ----------
    solve : callable
        ``solve(X, limit) -> (X_end, used, ok)``: local solves from the columns of ``X``
        (N, k) float64 within ``limit`` evaluations (None: no limit); ``X_end`` (N, k),
        ``used`` the evaluations spent, ``ok`` (k,) which ends are local minima (the
        others, a solve that stalled, are no record and no start of a count).
    lower, upper : ndarray, shape (N,)
        The search box (finite).
    settings : LocalSettings
    seed : int
        Draws the sweep's box-filling starts (:meth:`sweep`).
    """

    solve: object
    lower: np.ndarray
    upper: np.ndarray
    settings: LocalSettings
    seed: int = 0
    minima: list = field(default_factory=list)
    starts: list = field(default_factory=list)
    seen: int = 0            # population points considered so far (MLSL's k)
    solves: int = 0          # local solves that ended feasible
    used: int = 0            # evaluations the stage spent
    g_better: int = 0        # generation the best minimum was first found
    s_better: int = 0        # feasible solves made before it was found
    calls: int = 0           # check points the stage was called at
    last: int = 0            # the call of the last round that ran
    backoff: int = 0         # check points a rugged round waits (doubles each time)
    swept: bool = False      # whether the sweep ran

    def _units(self, X: np.ndarray) -> np.ndarray:
        width = np.where(self.upper > self.lower, self.upper - self.lower, 1.0)
        return (X - self.lower[:, None]) / width[:, None]

    def best(self) -> Minimum | None:
        """The best feasible minimum recorded (None while there is none)."""
        feas = [m for m in self.minima if m.cv == 0]
        return min(feas, key=lambda m: m.f) if feas else None

    def __call__(self, st, algorithm, g: int, evals_left: int | None,
                 search_evals: int):
        """One round at generation ``g``: pick starts, solve, record, inject; returns
        ``(evaluations spent, the round's best end as a one-point Population or
        None)``.  ``evals_left``: the search's budget left (None: no
        cap); ``search_evals``: the evolutionary search's evaluations so far."""
        cfg = self.settings
        self.calls += 1
        rugged = self.solves >= SEVERAL and not self.benign()
        if rugged and self.calls - self.last <= self.backoff:
            return 0, None  # rugged: each round waits twice as long as the last
        share = cfg.rugged_share if rugged else cfg.share
        room = share * search_evals - self.used
        if evals_left is not None:
            room = min(room, evals_left)
        if room < 10:
            return 0, None
        pop = algorithm.population(st.alg)
        X = np.asarray(to_numpy(pop.X[:, 0]), dtype=np.float64)
        f = np.asarray(to_numpy(pop.f[0]), dtype=np.float64)
        cv = np.asarray(to_numpy(pop.cv[0]), dtype=np.float64)
        N, S = X.shape
        self.seen += S
        U = self._units(X)
        r = critical_distance(self.seen, N, cfg.sigma)
        taken = [self._units(s[:, None])[:, 0] for s in self.starts] + \
            [m.u for m in self.minima]
        T = np.stack(taken, axis=1) if taken else np.zeros((N, 0))
        picks = mlsl_starts(U, r, T, cfg.max_starts)
        best = self.best()
        i0 = int(order(f, cv)[0])
        if best is not None and cv[i0] == 0 and f[i0] < best.f and \
                not _same(f[i0], best.f, cfg.ftol) and i0 not in picks:
            picks = [i0] + picks[: cfg.max_starts - 1]  # a better basin than any recorded
        short = SEVERAL - self.solves - len(picks)
        if best is not None and best.hits < 2 and not picks:
            short = max(short, 1)  # the best minimum wants a second start to confirm it
        if short > 0:  # too few solves to judge the landscape: the farthest points too
            picks += farthest(U, np.concatenate([T, U[:, picks]], axis=1), short, picks)
        if not picks:
            return 0, None
        starts = X[:, picks]
        self.last = self.calls
        self.backoff = 2 * self.backoff + 1 if rugged else self.backoff
        ends, used, ok = self.solve(starts, int(room) - len(picks))
        fe, cve = _evaluate(algorithm, ends, pop.X)
        spent = int(used) + len(picks)
        self.used += spent
        self.starts.extend(starts.T.copy())
        new = [j for j in range(len(picks))
               if ok[j] and self._record(ends[:, j], fe[j], cve[j], g)]
        if new and self.benign():
            st.alg = _inject(algorithm, st.alg, ends[:, new], fe[new], cve[new])
        j = int(order(fe, cve)[0])
        return spent, _one_point(pop, ends, fe, cve, j)

    def sweep(self, st, algorithm, g: int, evals_left: int | None, search_evals: int):
        """The sweep before a stagnation stop at generation ``g``: local solves from
        :data:`SWEEP` box-filling starts (:func:`box_filling`, from ``seed``), one after
        another within as many evaluations as the local solves have spent so far (at
        least :data:`SWEEP_FLOOR`: a sweep about doubles the local search's work), the
        evolutionary search's (``search_evals``) and ``evals_left``.  The cap counts
        evaluations, not seconds, so that a seed gives the same run on any machine.  The
        sweep ends early once the Bayesian rule (:meth:`bayes`) holds for every solve
        so far: on a landscape of one minimum, once eight solves have reached it.
        Runs once; returns ``(evaluations spent, the sweep's best end as a one-point
        Population or None, whether it found a better basin than every recorded
        minimum)``.  A better basin's minimum replaces the population's worst member, so
        the search goes on from it."""
        if self.swept:
            return 0, None, False
        self.swept = True
        room = min(search_evals, max(self.used, SWEEP_FLOOR))
        if evals_left is not None:
            room = min(room, evals_left)
        if room < 10 * SWEEP:
            return 0, None, False
        starts = box_filling(self.lower, self.upper, SWEEP, self.seed)
        before, g_better = self.best(), self.g_better
        pop = algorithm.population(st.alg)
        spent, ends = 0, []
        for j in range(SWEEP):
            left = int(room) - spent - 1
            if left < 10:
                break
            end, used, ok = self.solve(starts[:, j:j + 1], left)
            fe, cve = _evaluate(algorithm, end, pop.X)
            spent += int(used) + 1
            self.starts.append(starts[:, j].copy())
            if ok[0]:
                self._record(end[:, 0], fe[0], cve[0], g)
            ends.append((end, fe, cve))
            if self.bayes():
                break  # the Bayesian rule now holds: the minima found are all there are
        self.used += spent
        best = self.best()
        better = best is not None and (before is None or self.g_better != g_better)
        if better:
            st.alg = _inject(algorithm, st.alg, best.x[:, None], np.array([best.f]),
                             np.array([best.cv]))
        X = np.concatenate([e[0] for e in ends], axis=1)
        fe = np.concatenate([e[1] for e in ends])
        cve = np.concatenate([e[2] for e in ends])
        j = int(order(fe, cve)[0])
        return spent, _one_point(pop, X, fe, cve, j), better

    def benign(self) -> bool:
        """Whether the best basin drew at least half of :data:`SEVERAL` or more
        solves.  Only then are minima fed into the population: where most
        starts end in other minima the landscape is rugged, a minimum in the population
        would pull the search into its basin early, and the search's own stagnation
        rules (and restarts) decide; the best end still counts as the search's best
        point."""
        best = self.best()
        return best is not None and self.solves >= SEVERAL and 2 * best.hits >= self.solves

    def _record(self, x, f: float, cv: float, g: int) -> bool:
        """Add the end ``x`` to the record; True when it is a new minimum.  An end
        within ``xtol`` of a recorded minimum is that minimum reached again (its point
        and value become the better of the two); an end elsewhere with the best
        minimum's value (a manifold of minima, or a symmetry) counts as reaching it."""
        if not np.isfinite(f) or not np.isfinite(cv):
            return False
        cfg = self.settings
        u = self._units(x[:, None])[:, 0]
        if cv == 0:
            self.solves += 1
        best = self.best()
        for m in self.minima:
            if (cv == 0) == (m.cv == 0) and np.max(np.abs(u - m.u)) <= cfg.xtol:
                m.hits += 1
                if f < m.f:
                    m.x, m.u, m.f, m.cv = x.copy(), u, f, cv
                return False
        if cv == 0 and best is not None and _same(f, best.f, cfg.ftol):
            best.hits += 1
        self.minima.append(Minimum(x.copy(), u, f, cv, g))
        if cv == 0 and (best is None or (f < best.f and not _same(f, best.f, cfg.ftol))):
            self.g_better, self.s_better = g, self.solves  # a better basin
        return True

    def bayes(self) -> bool:
        """Whether the Bayesian rule (:func:`bayes_confirmed`) holds for the minima
        recorded: the strong evidence (a convex problem: every solve reaches one
        minimum), against which no sweep runs."""
        best = self.best()
        w = sum(1 for m in self.minima if m.cv == 0)
        return best is not None and best.hits >= 2 and bayes_confirmed(w, self.solves)

    def confirmed(self, g: int) -> bool:
        """Whether the best minimum is confirmed at generation ``g``: reached from two
        starts or more, and from enough of them for :func:`bayes_confirmed`, or no
        better basin came for ``window`` generations and :data:`SEVERAL` solves (or
        :data:`SEVERAL` reached it).  A search point better than every minimum was a
        start of this generation's round (:meth:`__call__`, which runs before the
        check), so a better basin it lies in has reset the window.  (A search point
        may beat an exact minimum within the equality tolerance: G03's does, so the
        search's best value is no test here.)"""
        if self.bayes():
            return True
        best = self.best()
        if best is None or best.hits < 2:
            return False
        # the window counts once SEVERAL solves after the best minimum's found no
        # better one, or SEVERAL reached it: a window of rounds without starts is no
        # evidence (CEC G13 with the GA: three solves, two to mirror images of the
        # local minimum 0.4388)
        return (
            g - self.g_better >= self.settings.window
            and (self.solves - self.s_better >= SEVERAL or best.hits >= SEVERAL))

    def pending(self, g: int) -> bool:
        """Whether the window has passed at generation ``g`` without the solves that
        make it evidence (:meth:`confirmed`: fewer than :data:`SEVERAL` since the best
        minimum was found, and it reached from fewer than that) and the sweep has not
        run: the driver then runs the sweep, whose solves supply them.  A population
        gathered in the best basin offers MLSL no start, and a search whose epsilon
        schedule has not run out never stagnates: CEC G03 at 100 variables found its
        minimum at generation 320 from two starts, and ran to the generation cap
        (3,000, 901,481 evaluations) without another solve."""
        best = self.best()
        return (not self.swept and best is not None and best.hits >= 2
                and g - self.g_better >= self.settings.window
                and not self.confirmed(g))


def _evaluate(algorithm, X: np.ndarray, like):
    """The search's ``(f, cv)`` of the points ``X`` (N, k), as host float64 arrays."""
    lower = algorithm.bounds[0]
    Xd = asarray(X, like, dtype=like.dtype)
    if len(lower.shape) == 3:  # an instance axis (DE): one instance
        f, cv = algorithm.fit(Xd[:, None], *algorithm.args)
        f, cv = f[0], cv[0]
    else:
        f, cv = algorithm.fit(Xd, *algorithm.args)
    return (np.asarray(to_numpy(f), dtype=np.float64).reshape(-1),
            np.asarray(to_numpy(cv), dtype=np.float64).reshape(-1))


def _inject(algorithm, alg_state, Xm: np.ndarray, fm: np.ndarray, cvm: np.ndarray):
    """The state with the worst members of its one population replaced by the points
    ``Xm`` (N, m) with ``fm``, ``cvm`` (m,): at most all but one member, so the
    population's own best always survives (:func:`._ga.replace_worst`)."""
    m = min(Xm.shape[1], algorithm.population(alg_state).X.shape[-1] - 1)
    return replace_worst(algorithm, alg_state, Xm[:, :m], fm[:m], cvm[:m])
