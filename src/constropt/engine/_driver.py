"""The one search driver: ``B >= 1`` instances stepped together, one termination rule.

Every mode runs here: :func:`constropt.solve` is a batch of one, ``solve_batch`` a batch
of ``B`` parametric instances, and the island model a batch of one per rank with a
migration hook and a consensus on the stop decisions.  Each instance has its own best
point, counters (generations, evaluations, stagnation, restarts), epsilon clock and
termination; the stop rules live in :func:`check` and nowhere else.

Host and device: the per-instance counters are host numbers (every live instance spends
the same evaluations per generation, so the host knows them exactly); device values are
read only at check points (every ``check_every`` generations), in one transfer.  The
best point is tracked with ``gather`` (no data-dependent indexing), so a generation
never waits for the device.  Instances that finish drop out of the work: at the next
check point the live ones are gathered into a smaller batch (compaction).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from ..backend._arrays import asarray, is_torch, namespace, to_numpy
from ._best import Best, defined_pop, merge, merge_defined, raw_best
from ._ga import Population
from ._status import Status
from ._termination import _C, CODES, Termination, check

__all__ = ["Termination", "Outcome", "Instance", "DriverState", "Driver", "check", "CODES",
           "Best"]



@dataclass
class DriverState:
    """Everything needed to continue a run exactly (checkpoints): arrays only (torch
    tensors on the torch backend, NumPy arrays on NumPy).

    The algorithm state ``alg``, ``best`` and ``defined`` (the best point whose objective
    is a number, :func:`merge_defined`) hold the ``R`` rows still in the batch
    (``rows`` their instance numbers, ``row_live`` which are still running); the other
    fields have one entry per instance ``B``: counters (host int64), the last check
    point's best (``last_f``, ``last_cv``), the final best of finished instances
    (``final_*``, ``final_defined``: host float64), the history so far (``hist_*``,
    (capacity, B)), the generation ``g`` and the seconds spent ``elapsed`` (0-d).
    """

    alg: object
    best: Best
    defined: Best
    rows: Any
    row_live: Any
    g: Any
    nit: Any
    nfev: Any
    quiet: Any
    restarts: Any
    since: Any
    code: Any
    last_f: Any
    last_cv: Any
    final_x: Any
    final_f: Any
    final_cv: Any
    final_defined: Best
    hist_f: Any
    hist_cv: Any
    hist_nfev: Any
    elapsed: Any


class Instance(NamedTuple):
    """One instance's outcome (host values): best point ``x`` (N,), ``f``, ``cv``; counts;
    why it stopped; history ``hist_nfev``, ``hist_f``, ``hist_cv`` (nit + 1,); ``population``
    the last population (N, S), best first; ``defined`` the best point seen whose
    objective is a number, ``(x, f, cv)`` (working precision), or None when there was
    none."""

    x: np.ndarray
    f: float
    cv: float
    nit: int
    nfev: int
    reason: Status
    restarts: int
    hist_nfev: np.ndarray
    hist_f: np.ndarray
    hist_cv: np.ndarray
    population: np.ndarray
    defined: tuple | None = None


@dataclass
class Outcome:
    """What the search found for each of ``B`` instances (before polish)."""

    instances: tuple
    seconds: float

    def __len__(self):
        return len(self.instances)

    def __getitem__(self, b) -> Instance:
        return self.instances[b]


def _host64(x):
    """A float64 host copy, as the backend's host array (CPU tensor or ndarray)."""
    if is_torch(x):
        return x.detach().cpu().double()
    return np.array(x, dtype=np.float64)


def _better_end(a: Population, b: Population) -> Population:
    """The better of two one-point populations under feasibility rules."""
    fa, ca, fb, cb = (float(to_numpy(v)[0, 0]) for v in (a.f, a.cv, b.f, b.cv))
    return b if (cb < ca or (cb == ca and fb < fa)) else a


def _np64(x) -> np.ndarray:
    return np.asarray(to_numpy(x), dtype=np.float64)


class Driver:
    """Steps ``algorithm`` (see :mod:`._algorithms`) over a batch of instances.

    Parameters
    ----------
    algorithm : GA or DE
    term : Termination
    X0 : array, shape (N, B, S), optional
        Initial populations (not needed with ``state``).
    state : DriverState, optional
        Continue from a checkpoint's state.
    new_population : callable, optional
        ``new_population(k) -> array (N, k, S)``: fresh populations for restarts.
    monitor : callable, optional
        ``monitor(generation, nfev, population_of_instance_0, elapsed) -> bool`` at check
        points; True stops every instance (``CALLBACK``).
    on_generation : callable, optional
        ``on_generation(state, algorithm) -> bool`` after every generation; it may
        replace ``state.alg`` (migration) and return True to stop (``CALLBACK``).
    consensus : callable, optional
        ``consensus(g, f, cv, time_up, stop) -> (f, cv, time_up, stop)`` at check points:
        replaces the local best and stop requests by values every cooperating process
        agrees on (islands), so they all take the same decisions.  With a consensus, the
        time limit is read only at check points.
    checkpoint : callable, optional
        ``checkpoint(state)`` every ``checkpoint_every`` generations.
    min_rows : int
        Compaction never shrinks the batch below this many rows (a compiled step
        specialises on a batch of one, so compiled batches keep two).
    snap : callable, optional
        ``snap(X) -> X`` on host genes (N, ...): the genes as the fitness evaluated them
        (integers confined to allowed values), applied to the reported best points and
        final populations.
    local : LocalSearch, optional
        The multistart stage (:mod:`._multistart`, one instance only): a round of local
        solves at every check point, its evaluations counted, its minima fed into the
        population; its confirmation of the best minimum is one of the stop rules of
        :func:`check`.
    """

    def __init__(self, algorithm, term: Termination, X0=None, *, state=None,
                 new_population=None, monitor=None, on_generation=None, consensus=None,
                 checkpoint=None, checkpoint_every: int = 0, min_rows: int = 1, snap=None,
                 local=None):
        self.algorithm, self.term = algorithm, term
        self.new_population, self.monitor = new_population, monitor
        self.on_generation, self.consensus = on_generation, consensus
        self.checkpoint, self.checkpoint_every = checkpoint, checkpoint_every
        self.min_rows, self.snap = min_rows, snap
        self.local = local
        self._local_end = None  # the stage's best end not yet merged into the best point
        self.populations: dict = {}  # instance -> final population, once it finished
        self._t0 = time.perf_counter()
        self.state = state if state is not None else self._initial(X0)
        self._elapsed0 = float(self.state.elapsed)
        self._rows_dev = asarray(self.state.rows, self.state.best.f)
        self._live_rows = None  # (positions, instance numbers) of the live rows, cached
        # populations sorted best-first under feasibility rules: the best is column 0
        self._first = getattr(algorithm, "sorted_raw", False)

    # -- set-up -------------------------------------------------------------------------
    def _initial(self, X0) -> DriverState:
        alg = self.algorithm.start(X0)
        pop = self.algorithm.population(alg)
        best = raw_best(pop)
        defined = raw_best(defined_pop(pop))
        N, B, S = X0.shape
        xp = namespace(best.f)  # device arrays on best.f's device; host ones on the CPU
        dev, dt = getattr(best.f, "device", None), best.f.dtype
        cap = min(self.term.max_generations, 63) + 1
        hist_f = xp.full((cap, B), math.nan, dtype=dt, device=dev)
        hist_cv = xp.full((cap, B), math.nan, dtype=dt, device=dev)
        hist_f[0], hist_cv[0] = best.f, best.cv
        hist_nfev = xp.zeros((cap, B), dtype=xp.int64)
        hist_nfev[0] = S

        def z(dtype=xp.int64, shape=(B,)):
            return xp.zeros(shape, dtype=dtype)
        return DriverState(
            alg=alg, best=best, defined=defined, rows=xp.arange(B),
            row_live=xp.ones(B, dtype=xp.bool),
            g=z(shape=()), nit=z(), nfev=xp.full((B,), S, dtype=xp.int64),
            quiet=z(), restarts=z(), since=z(), code=z(),
            last_f=_host64(best.f), last_cv=_host64(best.cv),
            final_x=z(xp.float64, (N, B)), final_f=z(xp.float64), final_cv=z(xp.float64),
            final_defined=Best(z(xp.float64, (N, B)), z(xp.float64), z(xp.float64)),
            hist_f=hist_f, hist_cv=hist_cv, hist_nfev=hist_nfev,
            elapsed=z(xp.float64, ()))

    # -- inspection ---------------------------------------------------------------------
    @property
    def done(self) -> bool:
        """Whether every instance has stopped."""
        return not bool(to_numpy(self.state.row_live).any())

    @property
    def generation(self) -> int:
        return int(self.state.g)

    def elapsed(self) -> float:
        return self._elapsed0 + time.perf_counter() - self._t0

    def _live(self):
        """Host arrays: the live rows' positions in the batch and instance numbers
        (cached until :meth:`_finish` changes them)."""
        if self._live_rows is None:
            rl = to_numpy(self.state.row_live)
            pos = np.flatnonzero(rl)
            self._live_rows = pos, to_numpy(self.state.rows)[pos]
        return self._live_rows

    # -- one generation -----------------------------------------------------------------
    def step(self) -> bool:
        """Run one generation of every live instance; returns whether any is still
        running afterwards.  A ``KeyboardInterrupt`` stops every instance
        (``INTERRUPTED``) with the best points of the generations completed."""
        try:
            if self.done:
                return False
            self._step()
        except KeyboardInterrupt:
            self.interrupt()
        return not self.done

    def interrupt(self) -> None:
        """Stop every live instance as ``INTERRUPTED`` (a Ctrl-C between generations)."""
        self._stop_all(Status.INTERRUPTED)

    def run(self) -> Outcome:
        """Step until every instance has stopped; returns the :class:`Outcome`."""
        try:
            while self.step():
                pass
        except KeyboardInterrupt:  # landed between two generations
            self.interrupt()
        return self.outcome()

    def _step(self) -> None:
        st, term, alg = self.state, self.term, self.algorithm
        S = alg.evals_per_step
        pos, ids = self._live()
        if term.max_evals is not None:  # the budget is checked before a generation runs
            over = to_numpy(st.nfev)[ids] + S > term.max_evals
            if over.any():
                self._finish(pos[over], Status.MAX_EVALS)
                if self.done:
                    return
                pos, ids = self._live()
        st.alg = alg.advance(st.alg)
        pop = alg.population(st.alg)
        st.best = merge(st.best, pop, self._first)
        st.defined = merge_defined(st.defined, pop)
        g = int(st.g) + 1
        st.g[...] = g
        live = ids if len(ids) < len(st.nit) else Ellipsis  # all live: no index needed
        for name in ("nit", "since"):
            to_numpy(getattr(st, name))[live] += 1
        to_numpy(st.nfev)[live] += S
        hook_stop = False
        if self.on_generation is not None:
            hook_stop = bool(self.on_generation(st, alg))
            pop = alg.population(st.alg)
            st.best = merge(st.best, pop, self._first)
            st.defined = merge_defined(st.defined, pop)
        if self.local is not None and g % term.check_every == 0:
            self._local_round(g)
        self._record(g)
        if hook_stop:
            return self._stop_all(Status.CALLBACK)
        time_up = term.time_limit is not None and self.elapsed() >= term.time_limit
        if time_up and self.consensus is None:
            return self._stop_all(Status.TIME_LIMIT)
        if g % term.check_every == 0 or g == term.max_generations:
            self._check(g, time_up)
        if g >= term.max_generations and not self.done:
            self._finish(*self._live()[:1], Status.MAX_GENERATIONS)
        if self.checkpoint is not None and self.checkpoint_every and \
                g % self.checkpoint_every == 0 and not self.done:
            st.elapsed[...] = self.elapsed()
            self.checkpoint(st)

    def _local_round(self, g: int) -> None:
        """A round of the multistart stage (one instance): its evaluations count, and
        the minima it fed into the population may be the new best point."""
        st, term = self.state, self.term
        nfev = int(to_numpy(st.nfev)[0])
        left = None if term.max_evals is None else term.max_evals - nfev
        spent, end = self.local(st, self.algorithm, g, left, nfev - self.local.used)
        if spent:
            to_numpy(st.nfev)[0] += spent
            pop = self.algorithm.population(st.alg)
            st.best = merge(st.best, pop, self._first)
            st.defined = merge_defined(st.defined, pop)
        if end is not None:
            self._local_end = end if self._local_end is None else \
                _better_end(self._local_end, end)
            if self.local.benign():  # else kept aside until the end (see _finish)
                self._merge_local_end()

    def _sweep(self, g: int) -> bool:
        """The multistart stage's sweep before a stagnation stop (one instance,
        :meth:`._multistart.LocalSearch.sweep`); True when it found a better basin."""
        st, term = self.state, self.term
        nfev = int(to_numpy(st.nfev)[0])
        left = None if term.max_evals is None else term.max_evals - nfev
        spent, end, better = self.local.sweep(st, self.algorithm, g, left,
                                              nfev - self.local.used)
        if spent:
            to_numpy(st.nfev)[0] += spent
            self._local_end = end if self._local_end is None else \
                _better_end(self._local_end, end)
            self._merge_local_end()
        return better

    def _merge_local_end(self) -> None:
        """The multistart stage's best end merged into the best point.  On a rugged
        landscape this waits until the instance finishes: a best point the population
        cannot improve on would end the search by stagnation before it has explored."""
        st, end = self.state, self._local_end
        if end is not None:
            st.best = merge(st.best, end, True)
            st.defined = merge_defined(st.defined, end)
            self._local_end = None

    def _record(self, g: int) -> None:
        st = self.state
        cap = st.hist_f.shape[0]
        if g >= cap:  # the history grows as it fills (no room reserved for unrun gens)
            extra = min(cap, self.term.max_generations + 1 - cap)
            xp = namespace(st.hist_f)
            st.hist_f = xp.concat([st.hist_f, xp.full_like(st.hist_f[:extra], math.nan)])
            st.hist_cv = xp.concat([st.hist_cv, xp.full_like(st.hist_cv[:extra], math.nan)])
            st.hist_nfev = xp.concat([st.hist_nfev, xp.zeros_like(st.hist_nfev[:extra])])
        st.hist_f[g, self._rows_dev] = st.best.f
        st.hist_cv[g, self._rows_dev] = st.best.cv
        st.hist_nfev[g] = st.nfev

    def _check(self, g: int, time_up: bool) -> None:
        """A check point: the only place device values are read (one transfer)."""
        st, term, alg = self.state, self.term, self.algorithm
        pop = alg.population(st.alg)
        xp = namespace(pop.f)
        feasible = xp.astype(xp.all(pop.cv <= 0, axis=-1), pop.f.dtype)
        stats = _np64(xp.stack([st.best.f, st.best.cv, feasible, xp.min(pop.f, axis=-1),
                                xp.max(pop.f, axis=-1)]))
        pos, ids = self._live()
        f, cv, feas, lo, hi = stats[:, pos]
        stop = False
        if self.monitor is not None:
            p0 = Population(pop.X[:, 0], pop.f[0], pop.cv[0])
            stop = bool(self.monitor(g, int(st.nfev[0]), p0, self.elapsed()))
        if self.consensus is not None:
            f, cv, time_up, stop = self.consensus(g, f, cv, time_up, stop)
        with np.errstate(invalid="ignore"):
            collapsed = (feas > 0) & np.isfinite(lo) & (term.ftol > 0) & \
                (hi - lo <= term.ftol * np.maximum(1.0, np.abs(lo)))
        confirmed, swept_better = False, False
        if self.local is not None:
            if self.local.pending(g):  # a window without its solves: the sweep's supply them
                swept_better = self._sweep(g)
            confirmed = np.array([self.local.confirmed(g)])
        quiet, code = check(term, f, cv, to_numpy(st.last_f)[ids], to_numpy(st.last_cv)[ids],
                            to_numpy(st.quiet)[ids], collapsed,
                            alg.settled(to_numpy(st.since)[ids]), time_up, stop, confirmed)
        to_numpy(st.quiet)[ids] = 0 if swept_better else quiet
        to_numpy(st.last_f)[ids], to_numpy(st.last_cv)[ids] = f, cv
        conv = code == _C[Status.CONVERGED]
        if conv.any() and self.local is not None and not self.local.bayes() and \
                self._sweep(g):
            code[conv] = 0  # the sweep found a better basin: the search goes on from it
            to_numpy(st.quiet)[ids] = 0
            conv[...] = False
        if conv.any() and term.restarts and self.new_population is not None:
            S = alg.evals_per_step
            room = np.ones(ids.size, dtype=bool) if term.max_evals is None else \
                to_numpy(st.nfev)[ids] + (term.stagnation + 1) * S <= term.max_evals
            # a confirmed local minimum ends the run: no restart looks for another
            again = conv & room & (to_numpy(st.restarts)[ids] < term.restarts) & \
                ~np.broadcast_to(confirmed, conv.shape)
            if again.any():
                self._restart(pos[again], ids[again])
                code[again] = 0
        for c in np.unique(code[code > 0]):
            self._finish(pos[code == c], CODES[c])

    def _restart(self, pos, ids) -> None:
        st = self.state
        X1 = self.new_population(len(pos))
        sel = asarray(pos, X1)
        keep = namespace(X1).take(st.best.x, sel, axis=1) if self.term.restart_keep else None
        st.alg = self.algorithm.restart(st.alg, sel, X1, keep)
        to_numpy(st.nfev)[ids] += X1.shape[-1]
        to_numpy(st.restarts)[ids] += 1
        # an independent restart's window starts part-spent: it stops after
        # restart_window quiet generations unless it improves the best point
        window = self.term.restart_window
        to_numpy(st.quiet)[ids] = 0 if self.term.restart_keep or window is None else \
            max(0, self.term.stagnation - window)
        to_numpy(st.since)[ids] = 0

    # -- stopping and compaction ----------------------------------------------------------
    def _stop_all(self, status: Status) -> None:
        pos, _ = self._live()
        self._finish(pos, status)

    def _finish(self, pos, status: Status) -> None:
        """Stop the rows at ``pos`` with ``status``; keep their results on the host and
        gather the remaining rows into a smaller batch."""
        st = self.state
        if len(pos) == 0:
            return
        self._live_rows = None
        self._merge_local_end()  # one instance: the stage's best end is its own
        ids = to_numpy(st.rows)[pos]
        to_numpy(st.code)[ids] = _C[status]
        to_numpy(st.row_live)[pos] = False
        xp = namespace(st.best.f)
        sel = asarray(pos, st.best.f)
        st.final_x[:, ids] = _host64(xp.take(st.best.x, sel, axis=1))
        st.final_f[ids] = _host64(xp.take(st.best.f, sel, axis=0))
        st.final_cv[ids] = _host64(xp.take(st.best.cv, sel, axis=0))
        fd = st.final_defined
        fd.x[:, ids] = _host64(xp.take(st.defined.x, sel, axis=1))
        fd.f[ids] = _host64(xp.take(st.defined.f, sel, axis=0))
        fd.cv[ids] = _host64(xp.take(st.defined.cv, sel, axis=0))
        X = _np64(xp.take(self.algorithm.population(st.alg).X, sel, axis=1))
        for k, b in enumerate(ids):
            self.populations[int(b)] = X[:, k]
        live = np.flatnonzero(to_numpy(st.row_live))
        if live.size == 0 or live.size == len(st.row_live):
            return
        keep = live
        if keep.size < self.min_rows:  # pad with finished rows (their results are saved)
            dead = np.flatnonzero(~to_numpy(st.row_live))
            keep = np.sort(np.concatenate([live, dead[: self.min_rows - live.size]]))
            if keep.size == len(st.row_live):
                return
        idx = asarray(keep, st.best.f)
        self.algorithm, st.alg = self.algorithm.compact(st.alg, idx)
        st.best, st.defined = (Best(xp.take(b.x, idx, axis=1), xp.take(b.f, idx, axis=0),
                                    xp.take(b.cv, idx, axis=0)) for b in (st.best, st.defined))
        st.rows = st.rows[asarray(keep, st.rows)]
        st.row_live = st.row_live[asarray(keep, st.rows)]
        self._rows_dev = asarray(st.rows, st.best.f)

    # -- the result ---------------------------------------------------------------------
    def outcome(self) -> Outcome:
        """Per-instance results (host values); every instance must have stopped."""
        if not self.done:
            raise RuntimeError("the search is still running")
        st = self.state
        g = int(st.g)
        hf = _np64(st.hist_f[: g + 1])
        hc = _np64(st.hist_cv[: g + 1])
        hn = to_numpy(st.hist_nfev[: g + 1])
        out = []
        snap = self.snap if self.snap is not None else (lambda X: X)
        fd = st.final_defined
        for b in range(st.code.shape[0]):
            k = int(st.nit[b]) + 1
            f_d = float(fd.f[b])
            defined = None
            if f_d < math.inf:
                defined = (snap(to_numpy(fd.x[:, b]).copy()), f_d, float(fd.cv[b]))
            out.append(Instance(
                snap(to_numpy(st.final_x[:, b]).copy()), float(st.final_f[b]),
                float(st.final_cv[b]), int(st.nit[b]), int(st.nfev[b]),
                CODES[int(st.code[b])], int(st.restarts[b]), hn[:k, b].copy(),
                hf[:k, b].copy(), hc[:k, b].copy(), snap(self.populations[b]), defined))
        return Outcome(tuple(out), self.elapsed())
