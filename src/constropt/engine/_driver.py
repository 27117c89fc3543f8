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
from typing import NamedTuple

import numpy as np
import torch

from ._de import take
from ._ga import Population
from ._ranking import better
from ._status import Status

__all__ = ["Termination", "Outcome", "Instance", "DriverState", "Driver", "check", "CODES"]

#: Stop codes (index) of the per-instance ``code`` counter; 0 = still running.
CODES = (None, Status.MAX_GENERATIONS, Status.MAX_EVALS, Status.TIME_LIMIT, Status.TARGET,
         Status.CALLBACK, Status.CONVERGED, Status.UNBOUNDED, Status.INTERRUPTED)
_C = {s: k for k, s in enumerate(CODES) if s is not None}


@dataclass(frozen=True)
class Termination:
    """When an instance stops (every criterion optional except ``max_generations``).

    ``max_evals`` is the search's share of the evaluation budget (per instance); the
    polish's share is kept apart by the caller.  ``target`` is in minimization sense.
    ``collapse``: stop when the population is feasible and its objectives agree to
    ``ftol``.  ``restarts``: on stagnation start again (best point kept) this many times
    while the budget allows; with ``restart_while_improving`` only while the previous
    restart improved the best point (the GA's many cheap restarts stop paying early).
    """

    max_generations: int
    max_evals: int | None = None
    time_limit: float | None = None
    target: float | None = None
    stagnation: int = 60
    ftol: float = 1e-10
    check_every: int = 10
    collapse: bool = True
    restarts: int = 0
    restart_while_improving: bool = False


def improved(f, cv, f_old, cv_old, ftol):
    """Did the best point improve (elementwise, host arrays)?  Lower violation counts
    when it drops by more than ``ftol`` (relative) or reaches 0; at equal zero
    violation, a relative objective drop above ``ftol``."""
    f, cv, f_old, cv_old = (np.asarray(a, dtype=np.float64) for a in (f, cv, f_old, cv_old))
    with np.errstate(invalid="ignore", over="ignore"):
        by_cv = (cv_old - cv > ftol * np.maximum(1.0, cv_old)) | (cv == 0.0)
        finite = np.isfinite(f_old)
        by_f = np.where(finite, f_old - f > ftol * np.maximum(1.0, np.abs(f_old)), f < f_old)
    return np.where(cv < cv_old, by_cv, ~((cv > cv_old) | (cv > 0)) & by_f)


def check(term: Termination, f, cv, f_old, cv_old, quiet, collapsed, settled,
          time_up=False, stop=False):
    """The termination rule, for every instance at once (host arrays of shape (B,)).

    Returns ``(quiet, code)``: the stagnation counters after this check point and a stop
    code per instance (0 = go on; see :data:`CODES`).  Order of precedence: target,
    unbounded, time limit, stop request (callback), stagnation or collapse (only once
    the algorithm has ``settled``: the epsilon schedule has run out).
    """
    quiet = np.where(improved(f, cv, f_old, cv_old, term.ftol), 0, quiet + term.check_every)
    code = np.zeros(np.shape(f), dtype=np.int64)

    def put(mask, status):
        code[(code == 0) & mask] = _C[status]

    feasible = np.asarray(cv) == 0
    if term.target is not None:
        put(feasible & (np.asarray(f) <= term.target), Status.TARGET)
    put(feasible & (np.asarray(f) == -math.inf), Status.UNBOUNDED)
    put(np.broadcast_to(bool(time_up), code.shape), Status.TIME_LIMIT)
    put(np.broadcast_to(np.asarray(stop, dtype=bool), code.shape), Status.CALLBACK)
    stalled = (quiet >= term.stagnation) | (term.collapse & np.asarray(collapsed, dtype=bool))
    put(stalled & np.asarray(settled, dtype=bool), Status.CONVERGED)
    return quiet, code


class Best(NamedTuple):
    """Best point ever seen per row under feasibility rules: ``x`` (N, R), ``f``, ``cv``
    (R,)."""

    x: torch.Tensor
    f: torch.Tensor
    cv: torch.Tensor


def raw_best(pop: Population) -> Best:
    """Each row's best individual under feasibility rules, by ``gather`` (no sync)."""
    cvmin = pop.cv.min(-1, keepdim=True).values
    masked = torch.where(pop.cv == cvmin, pop.f, torch.full_like(pop.f, math.inf))
    i = masked.argmin(-1, keepdim=True)
    return Best(take(pop.X, i)[..., 0], pop.f.gather(-1, i)[:, 0], pop.cv.gather(-1, i)[:, 0])


def merge(best: Best, pop: Population) -> Best:
    """The better of the stored best and the population's best, per row."""
    x, f, cv = raw_best(pop)
    win = better(f, cv, best.f, best.cv)
    return Best(torch.where(win, x, best.x), torch.where(win, f, best.f),
                torch.where(win, cv, best.cv))


@dataclass
class DriverState:
    """Everything needed to continue a run exactly (checkpoints): tensors only.

    The algorithm state ``alg`` and ``best`` hold the ``R`` rows still in the batch
    (``rows`` their instance numbers, ``row_live`` which are still running); the other
    fields have one entry per instance ``B``: counters (host int64), the last check
    point's best (``last_f``, ``last_cv``), the final best of finished instances
    (``final_*``), the history so far (``hist_*``, (capacity, B)), the generation ``g``
    and the seconds spent ``elapsed`` (0-d).
    """

    alg: object
    best: Best
    rows: torch.Tensor
    row_live: torch.Tensor
    g: torch.Tensor
    nit: torch.Tensor
    nfev: torch.Tensor
    quiet: torch.Tensor
    restarts: torch.Tensor
    since: torch.Tensor
    code: torch.Tensor
    last_f: torch.Tensor
    last_cv: torch.Tensor
    final_x: torch.Tensor
    final_f: torch.Tensor
    final_cv: torch.Tensor
    hist_f: torch.Tensor
    hist_cv: torch.Tensor
    hist_nfev: torch.Tensor
    elapsed: torch.Tensor


class Instance(NamedTuple):
    """One instance's outcome (host values): best point ``x`` (N,), ``f``, ``cv``; counts;
    why it stopped; history ``hist_nfev``, ``hist_f``, ``hist_cv`` (nit + 1,); ``population``
    the last population (N, S), best first."""

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


@dataclass
class Outcome:
    """What the search found for each of ``B`` instances (before polish)."""

    instances: tuple
    seconds: float

    def __len__(self):
        return len(self.instances)

    def __getitem__(self, b) -> Instance:
        return self.instances[b]


def _host(t):
    return t.detach().cpu()


class Driver:
    """Steps ``algorithm`` (see :mod:`._algorithms`) over a batch of instances.

    Parameters
    ----------
    algorithm : GA or DE
    term : Termination
    X0 : Tensor, shape (N, B, S), optional
        Initial populations (not needed with ``state``).
    state : DriverState, optional
        Continue from a checkpoint's state.
    new_population : callable, optional
        ``new_population(k) -> Tensor (N, k, S)``: fresh populations for restarts.
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
    """

    def __init__(self, algorithm, term: Termination, X0=None, *, state=None,
                 new_population=None, monitor=None, on_generation=None, consensus=None,
                 checkpoint=None, checkpoint_every: int = 0, min_rows: int = 1, snap=None):
        self.algorithm, self.term = algorithm, term
        self.new_population, self.monitor = new_population, monitor
        self.on_generation, self.consensus = on_generation, consensus
        self.checkpoint, self.checkpoint_every = checkpoint, checkpoint_every
        self.min_rows, self.snap = min_rows, snap
        self.populations: dict = {}  # instance -> final population, once it finished
        self._t0 = time.perf_counter()
        self.state = state if state is not None else self._initial(X0)
        self._elapsed0 = float(self.state.elapsed)
        self._rows_dev = self.state.rows.to(self.state.best.f.device)

    # -- set-up -------------------------------------------------------------------------
    def _initial(self, X0) -> DriverState:
        alg = self.algorithm.start(X0)
        best = raw_best(self.algorithm.population(alg))
        N, B, S = X0.shape
        dev, dt = best.f.device, best.f.dtype
        cap = min(self.term.max_generations, 63) + 1
        hist_f = torch.full((cap, B), math.nan, dtype=dt, device=dev)
        hist_cv = torch.full((cap, B), math.nan, dtype=dt, device=dev)
        hist_f[0], hist_cv[0] = best.f, best.cv
        hist_nfev = torch.zeros((cap, B), dtype=torch.int64)
        hist_nfev[0] = S
        z = torch.zeros(B, dtype=torch.int64)
        return DriverState(
            alg=alg, best=best, rows=torch.arange(B), row_live=torch.ones(B, dtype=torch.bool),
            g=torch.zeros((), dtype=torch.int64), nit=z.clone(), nfev=torch.full((B,), S),
            quiet=z.clone(), restarts=z.clone(), since=z.clone(), code=z.clone(),
            last_f=_host(best.f).double(), last_cv=_host(best.cv).double(),
            final_x=torch.zeros((N, B), dtype=torch.float64),
            final_f=torch.zeros(B, dtype=torch.float64),
            final_cv=torch.zeros(B, dtype=torch.float64),
            hist_f=hist_f, hist_cv=hist_cv, hist_nfev=hist_nfev,
            elapsed=torch.zeros((), dtype=torch.float64))

    # -- inspection ---------------------------------------------------------------------
    @property
    def done(self) -> bool:
        """Whether every instance has stopped."""
        return not bool(self.state.row_live.any())

    @property
    def generation(self) -> int:
        return int(self.state.g)

    def elapsed(self) -> float:
        return self._elapsed0 + time.perf_counter() - self._t0

    def _live(self):
        """Host arrays: the live rows' positions in the batch and instance numbers."""
        rl = self.state.row_live.numpy()
        pos = np.flatnonzero(rl)
        return pos, self.state.rows.numpy()[pos]

    # -- one generation -----------------------------------------------------------------
    def step(self) -> bool:
        """Run one generation of every live instance; returns whether any is still
        running afterwards.  A ``KeyboardInterrupt`` stops every instance
        (``INTERRUPTED``) with the best points of the generations completed."""
        if self.done:
            return False
        try:
            self._step()
        except KeyboardInterrupt:
            self._stop_all(Status.INTERRUPTED)
        return not self.done

    def run(self) -> Outcome:
        """Step until every instance has stopped; returns the :class:`Outcome`."""
        while self.step():
            pass
        return self.outcome()

    def _step(self) -> None:
        st, term, alg = self.state, self.term, self.algorithm
        S = alg.evals_per_step
        pos, ids = self._live()
        if term.max_evals is not None:  # the budget is checked before a generation runs
            over = st.nfev.numpy()[ids] + S > term.max_evals
            if over.any():
                self._finish(pos[over], Status.MAX_EVALS)
                if self.done:
                    return
                pos, ids = self._live()
        st.alg = alg.advance(st.alg)
        st.best = merge(st.best, alg.population(st.alg))
        g = int(st.g) + 1
        st.g.fill_(g)
        for name in ("nit", "since"):
            getattr(st, name).numpy()[ids] += 1
        st.nfev.numpy()[ids] += S
        hook_stop = False
        if self.on_generation is not None:
            hook_stop = bool(self.on_generation(st, alg))
            st.best = merge(st.best, alg.population(st.alg))
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
            st.elapsed.fill_(self.elapsed())
            self.checkpoint(st)

    def _record(self, g: int) -> None:
        st = self.state
        cap = st.hist_f.shape[0]
        if g >= cap:  # the history grows as it fills (no room reserved for unrun gens)
            extra = min(cap, self.term.max_generations + 1 - cap)
            st.hist_f = torch.cat([st.hist_f, torch.full_like(st.hist_f[:extra], math.nan)])
            st.hist_cv = torch.cat([st.hist_cv, torch.full_like(st.hist_cv[:extra], math.nan)])
            st.hist_nfev = torch.cat([st.hist_nfev, torch.zeros_like(st.hist_nfev[:extra])])
        st.hist_f[g].index_copy_(0, self._rows_dev, st.best.f)
        st.hist_cv[g].index_copy_(0, self._rows_dev, st.best.cv)
        st.hist_nfev[g] = st.nfev

    def _check(self, g: int, time_up: bool) -> None:
        """A check point: the only place device values are read (one transfer)."""
        st, term, alg = self.state, self.term, self.algorithm
        pop = alg.population(st.alg)
        feasible = (pop.cv <= 0).all(-1).to(pop.f.dtype)
        stats = _host(torch.stack([st.best.f, st.best.cv, feasible, pop.f.min(-1).values,
                                   pop.f.max(-1).values])).double().numpy()
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
        quiet, code = check(term, f, cv, st.last_f.numpy()[ids], st.last_cv.numpy()[ids],
                            st.quiet.numpy()[ids], collapsed,
                            alg.settled(st.since.numpy()[ids]), time_up, stop)
        st.quiet.numpy()[ids] = quiet
        st.last_f.numpy()[ids], st.last_cv.numpy()[ids] = f, cv
        conv = code == _C[Status.CONVERGED]
        if conv.any() and term.restarts and self.new_population is not None:
            S = alg.evals_per_step
            room = np.ones(ids.size, dtype=bool) if term.max_evals is None else \
                st.nfev.numpy()[ids] + (term.stagnation + 1) * S <= term.max_evals
            again = conv & room & (st.restarts.numpy()[ids] < term.restarts)
            if term.restart_while_improving:
                again &= self._paid(ids, f, cv)
            if again.any():
                self._restart(pos[again], ids[again])
                code[again] = 0
        for c in np.unique(code[code > 0]):
            self._finish(pos[code == c], CODES[c])

    def _paid(self, ids, f, cv):
        """Per instance: no restart yet, or the best improved since the last one (host
        record, not in checkpoints: a resumed run may restart once more)."""
        rec = getattr(self, "_at_restart", None)
        if rec is None:
            B = self.state.code.shape[0]
            rec = self._at_restart = (np.full(B, np.inf), np.full(B, np.inf))
        r_f, r_cv = rec[0][ids], rec[1][ids]
        first = ~np.isfinite(r_f) & ~np.isfinite(r_cv)
        return first | improved(f, cv, r_f, r_cv, self.term.ftol)

    def _restart(self, pos, ids) -> None:
        st = self.state
        rec = getattr(self, "_at_restart", None)
        if rec is not None:
            rec[0][ids], rec[1][ids] = st.last_f.numpy()[ids], st.last_cv.numpy()[ids]
        X1 = self.new_population(len(pos))
        sel = torch.as_tensor(pos, device=X1.device)
        st.alg = self.algorithm.restart(st.alg, sel, X1, st.best.x.index_select(1, sel))
        st.nfev.numpy()[ids] += X1.shape[-1]
        st.restarts.numpy()[ids] += 1
        st.quiet.numpy()[ids] = 0
        st.since.numpy()[ids] = 0

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
        ids = st.rows.numpy()[pos]
        st.code.numpy()[ids] = _C[status]
        st.row_live.numpy()[pos] = False
        sel = torch.as_tensor(pos, device=st.best.f.device)
        st.final_x[:, ids] = _host(st.best.x.index_select(1, sel)).double()
        st.final_f[ids] = _host(st.best.f.index_select(0, sel)).double()
        st.final_cv[ids] = _host(st.best.cv.index_select(0, sel)).double()
        X = _host(self.algorithm.population(st.alg).X.index_select(1, sel)).double().numpy()
        for k, b in enumerate(ids):
            self.populations[int(b)] = X[:, k]
        live = np.flatnonzero(st.row_live.numpy())
        if live.size == 0 or live.size == len(st.row_live):
            return
        keep = live
        if keep.size < self.min_rows:  # pad with finished rows (their results are saved)
            dead = np.flatnonzero(~st.row_live.numpy())
            keep = np.sort(np.concatenate([live, dead[: self.min_rows - live.size]]))
            if keep.size == len(st.row_live):
                return
        idx = torch.as_tensor(keep, device=st.best.f.device)
        self.algorithm, st.alg = self.algorithm.compact(st.alg, idx)
        st.best = Best(st.best.x.index_select(1, idx), st.best.f.index_select(0, idx),
                       st.best.cv.index_select(0, idx))
        st.rows = st.rows[torch.as_tensor(keep)]
        st.row_live = st.row_live[torch.as_tensor(keep)]
        self._rows_dev = st.rows.to(st.best.f.device)

    # -- the result ---------------------------------------------------------------------
    def outcome(self) -> Outcome:
        """Per-instance results (host values); every instance must have stopped."""
        if not self.done:
            raise RuntimeError("the search is still running")
        st = self.state
        g = int(st.g)
        hf = _host(st.hist_f[: g + 1]).double().numpy()
        hc = _host(st.hist_cv[: g + 1]).double().numpy()
        hn = st.hist_nfev[: g + 1].numpy()
        out = []
        snap = self.snap if self.snap is not None else (lambda X: X)
        for b in range(st.code.shape[0]):
            k = int(st.nit[b]) + 1
            out.append(Instance(
                snap(st.final_x[:, b].numpy().copy()), float(st.final_f[b]),
                float(st.final_cv[b]), int(st.nit[b]), int(st.nfev[b]),
                CODES[int(st.code[b])], int(st.restarts[b]), hn[:k, b].copy(),
                hf[:k, b].copy(), hc[:k, b].copy(), snap(self.populations[b])))
        return Outcome(tuple(out), self.elapsed())
