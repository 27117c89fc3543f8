"""Island model across processes: one population per rank, migration over ``torch.distributed``.

Each process (rank) of a ``torchrun`` launch runs :func:`constropt.solve` on its own
device with its own seed (``seed + rank``).  A hook called after every generation keeps
the ranks in lockstep:

- every ``check_every`` generations and every ``migrate_every`` generations the ranks
  meet in one ``all_gather`` of a fixed-size float64 vector: stop flags, the rank's best
  point so far ``(cv, f)``, and (on migration generations) its best ``migrants``
  individuals ``(x, f, cv)``;
- on migration generations each rank replaces its worst individuals with the migrants
  of rank ``r - 1`` (``topology="ring"``) or with the best of all other ranks' migrants
  (``topology="all"``), keeping the population's order invariant (DE: sorted best-first
  under the constraint handler's keys; GA: the best in column 0);
- every stop decision is taken from the gathered vector, which is the same on all ranks,
  so all ranks stop at the same generation: the loop's own rank-local criteria
  (stagnation, time limit, target, callback) are switched off and decided here instead,
  and restarts are off (they would make the evaluation counts, hence the ``max_evals``
  stop, differ between ranks).

After the local solves (polish included) the ranks gather each final point's key and the
winning rank broadcasts its whole :class:`Result`, so every rank returns the same one.
Collectives run under a timeout; a failure (a peer that crashed, was killed or hangs)
raises :class:`DistributedError` instead of hanging.
"""

from __future__ import annotations

import datetime
import math
import os
import secrets
import sys
import time
import warnings
import zlib
from dataclasses import fields, replace

import numpy as np

from .._errors import ConstroptError, OptionError, SolveFailedError

__all__ = ["solve_islands", "DistributedError", "TOPOLOGIES"]

#: Migration topologies: ``"ring"`` (rank ``r`` receives from ``r - 1``) and ``"all"``
#: (every rank receives the best migrants of all the others).
TOPOLOGIES = ("ring", "all")

#: Options of :func:`constropt.solve` that are named arguments rather than SolveOptions.
_NAMED = ("variables", "bounds", "maximize", "dtype", "compile", "cross_check")

#: ``stagnation`` passed to the local loops: the islands decide stagnation together.
_NEVER = 2**62


class DistributedError(ConstroptError, RuntimeError):
    """A collective operation of :func:`solve_islands` failed or timed out.

    Raised on a rank when another rank crashed, was killed, stopped answering within
    the timeout, or runs different settings; the message names the rank that raised and
    the likely cause.

    Attributes
    ----------
    rank : int or None
        The rank that raised (None when the process group could not be set up).
    """

    def __init__(self, message: str, rank: int | None = None) -> None:
        super().__init__(message)
        self.rank = rank


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".strip()


class _Group:
    """The process group this module runs its collectives on: a group of all ranks
    created for one call (with the call's timeout and backend), its rank and size, the
    device its tensors live on, and whether the default group is this call's own (a
    single process without torchrun) and must go when the call ends."""

    def __init__(self, group, rank, world, comm, timeout, own_default, alone):
        self.group, self.rank, self.world, self.comm = group, rank, world, comm
        self.timeout, self.own_default, self.alone = timeout, own_default, alone

    def call(self, what: str, fn, *args, generation=None, **kwargs):
        """Run one collective; any failure becomes a DistributedError naming this rank."""
        try:
            return fn(*args, **kwargs)
        except DistributedError:
            raise
        except Exception as exc:
            at = f" at generation {generation}" if generation is not None else ""
            raise DistributedError(
                f"island rank {self.rank} of {self.world}: {what}{at} failed "
                f"({_first_line(exc)}). Another rank most likely crashed, was killed or "
                "stopped answering: a peer that disconnects fails the collective at once, "
                f"one that hangs after timeout={self.timeout:g}s. Look at the other ranks' "
                "output for the first error; if ranks legitimately run apart for longer "
                "(compilation, a slow polish or cross-check), raise timeout.",
                rank=self.rank) from exc

    def all_gather(self, what, vec, generation=None):
        """``(world, L)`` CPU float64 tensor of every rank's ``vec`` (L,)."""
        import torch
        import torch.distributed as dist

        vec = vec.to(device=self.comm, dtype=torch.float64).contiguous()
        out = [torch.empty_like(vec) for _ in range(self.world)]
        self.call(what, dist.all_gather, out, vec, group=self.group, generation=generation)
        return torch.stack(out).cpu()

    def broadcast_object(self, what, obj, src: int):
        import torch.distributed as dist

        box = [obj if self.rank == src else None]
        self.call(what, dist.broadcast_object_list, box, src=src, group=self.group,
                  device=self.comm)
        return box[0]

    def close(self) -> None:
        """Destroy this call's group (and the default group if it is this call's own);
        errors are ignored: a broken group may refuse."""
        import torch.distributed as dist

        try:
            if self.own_default:
                _destroy_default()
            elif self.group is not None and dist.is_initialized():
                dist.destroy_process_group(self.group)
        except Exception:  # pragma: no cover
            pass


def _destroy_default() -> None:  # pragma: no cover - runs at interpreter exit
    import torch.distributed as dist

    try:
        if dist.is_initialized():
            dist.destroy_process_group()
    except Exception:
        pass


def _island_device(device):
    """``"auto"``/None: ``cuda:LOCAL_RANK`` when CUDA is available, else CPU; ``"cuda"``
    without an index also maps to the local rank's GPU; anything else as given."""
    import torch

    from ..engine._backend import resolve_device

    local = int(os.environ.get("LOCAL_RANK", "0") or 0)
    if device is None or (isinstance(device, str) and device == "auto"):
        if torch.cuda.is_available():
            return torch.device("cuda", local % torch.cuda.device_count())
        return torch.device("cpu")
    dev = resolve_device(device)
    if dev.type == "cuda" and dev.index is None:
        return torch.device("cuda", local % torch.cuda.device_count())
    return dev


def _init_group(backend, dev, timeout: float) -> _Group:
    """The group of all ranks this call communicates on.

    The default process group is used when it is initialized; otherwise it is created
    from torchrun's environment (``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR``,
    ``MASTER_PORT``) and kept for later calls (destroyed at exit), or, without that
    environment, as a group of this one process (destroyed when the call ends).  On top
    of it, each call makes its own group of all ranks with ``timeout`` and ``backend``.
    """
    import atexit

    import torch
    import torch.distributed as dist

    if not dist.is_available():
        raise DistributedError("this torch build has no torch.distributed support")
    launched = "RANK" in os.environ and "WORLD_SIZE" in os.environ
    rank_env = int(os.environ.get("RANK", "0") or 0)
    if dev.type == "cuda":
        torch.cuda.set_device(dev)
    own_default = False
    td = datetime.timedelta(seconds=timeout)
    if not dist.is_initialized():
        default_backend = backend or ("nccl" if dev.type == "cuda" else "gloo")
        try:
            if launched:
                if default_backend == "nccl":  # collectives raise on timeout, not abort
                    os.environ.setdefault("TORCH_NCCL_BLOCKING_WAIT", "1")
                dist.init_process_group(default_backend, init_method="env://", timeout=td)
                atexit.register(_destroy_default)
            else:
                dist.init_process_group(default_backend, store=dist.HashStore(), rank=0,
                                        world_size=1, timeout=td)
                own_default = True
        except Exception as exc:
            where = os.environ.get("MASTER_ADDR", "?") + ":" + os.environ.get("MASTER_PORT", "?")
            raise DistributedError(
                f"island rank {rank_env}: could not set up the {default_backend!r} process "
                f"group (rendezvous at {where}): {_first_line(exc)}. Launch every rank with "
                "torchrun and the same --nnodes, --nproc_per_node and rendezvous endpoint "
                "(NCCL needs one GPU per rank; use backend='gloo' or device='cpu' "
                "otherwise).", rank=rank_env) from exc
    rank, world = dist.get_rank(), dist.get_world_size()
    grp = _Group(None, rank, world, torch.device("cpu"), timeout, own_default,
                 own_default and not launched)
    try:
        grp.group = grp.call("creating the island group (new_group)", dist.new_group,
                             timeout=td, backend=backend)
    except BaseException:
        if own_default:
            _destroy_default()
        raise
    if str(dist.get_backend(grp.group)) == "nccl":
        grp.comm = torch.device("cuda", torch.cuda.current_device())
    return grp


def _inject(algorithm, alg_state, Xm, fm, cvm):
    """Replace the worst ``m`` individuals of the population with the migrants
    ``Xm`` (N, m), ``fm``, ``cvm`` (m,); the population is re-sorted best-first under
    the algorithm's comparison keys (the handler's for DE, feasibility rules for GA),
    which keeps both algorithms' invariants.  Returns the new algorithm state."""
    import torch

    from ..engine._ga import Population
    from ..engine._ranking import order

    X, f, cv = algorithm.population(alg_state)
    handler = getattr(algorithm, "handler", None)
    level = getattr(alg_state, "level", None)

    def keys(f_, cv_):
        return handler.keys(f_, cv_, level) if handler is not None else (f_, cv_)

    m = Xm.shape[1]
    keep = order(*keys(f, cv))[: X.shape[1] - m]
    X2 = torch.cat([X[:, keep], Xm.to(device=X.device, dtype=X.dtype)], dim=1)
    f2 = torch.cat([f[keep], fm.to(device=f.device, dtype=f.dtype)])
    cv2 = torch.cat([cv[keep], cvm.to(device=cv.device, dtype=cv.dtype)])
    idx = order(*keys(f2, cv2))
    pop = Population(X2[:, idx], f2[idx], cv2[idx])
    if isinstance(alg_state, Population):
        return pop
    return replace(alg_state, pop=pop)


def _best_index(cv, f) -> int:
    """Index of the best ``(cv, f)`` row under feasibility rules (NaN as +inf), lowest
    index on ties."""
    cv = np.nan_to_num(np.asarray(cv, dtype=np.float64), nan=np.inf)
    f = np.nan_to_num(np.asarray(f, dtype=np.float64), nan=np.inf)
    return int(np.lexsort((np.arange(len(cv)), f, cv))[0])


class _Migration:
    """The ``on_generation`` hook: synchronisation, migration and symmetric stops."""

    def __init__(self, grp: _Group, *, every, migrants, topology, check_every, stagnation,
                 ftol, target, time_limit, user_hook, t0):
        self.grp, self.every, self.m, self.topology = grp, every, migrants, topology
        self.check_every, self.stagnation, self.ftol = check_every, stagnation, ftol
        self.target, self.time_limit, self.user_hook, self.t0 = target, time_limit, user_hook, t0
        self.migrations = 0
        self.stop = None          # the Status all ranks agreed to stop for
        self.wants_stop = False   # the user's callback or hook asked for a stop
        self.quiet = 0
        self.last = 0
        self.gbest = (math.inf, math.inf)  # (f, cv): best over all ranks at the last sync

    def user_callback(self, callback):
        """Wrap the user's progress callback: a stop request waits for the next sync."""
        if callback is None:
            return None

        def wrapped(progress):
            if callback(progress):
                self.wants_stop = True
            return False

        return wrapped

    def __call__(self, st, algorithm) -> bool:
        import torch

        from ..engine._loop import _improved, _merge
        from ..engine._ranking import order
        from ..solver._result import Status

        g = st.g
        if self.user_hook is not None and self.user_hook(st, algorithm):
            self.wants_stop = True
        grp = self.grp
        migrate = grp.world > 1 and g % self.every == 0
        if not migrate and g % self.check_every != 0:
            return False
        pop = algorithm.population(st.alg)
        late = self.time_limit is not None and time.perf_counter() - self.t0 >= self.time_limit
        bx, bf, bcv = st.best
        dev, dt = pop.f.device, torch.float64
        head = torch.stack([torch.tensor(float(late), device=dev, dtype=dt),
                            torch.tensor(float(self.wants_stop), device=dev, dtype=dt),
                            bcv.to(dt), bf.to(dt)])
        parts = [head]
        n = pop.X.shape[0]
        if migrate:  # this rank's best m individuals under feasibility rules
            idx = order(pop.f, pop.cv)[: self.m]
            parts += [pop.X[:, idx].T.reshape(-1).to(dt), pop.f[idx].to(dt),
                      pop.cv[idx].to(dt)]
        what = "migration (all_gather)" if migrate else "synchronisation (all_gather)"
        G = grp.all_gather(what, torch.cat(parts), generation=g)
        if migrate:
            m, W, r = self.m, grp.world, grp.rank
            Xs = G[:, 4:4 + n * m].reshape(W, m, n)
            fs = G[:, 4 + n * m:4 + n * m + m]
            cvs = G[:, 4 + n * m + m:4 + n * m + 2 * m]
            if self.topology == "ring":
                src = (r - 1) % W
                Xm, fm, cvm = Xs[src].T, fs[src], cvs[src]
            else:
                others = [q for q in range(W) if q != r]
                Xp = torch.cat([Xs[q].T for q in others], dim=1)
                fp, cvp = torch.cat([fs[q] for q in others]), torch.cat([cvs[q] for q in others])
                sel = order(fp, cvp)[:m]
                Xm, fm, cvm = Xp[:, sel], fp[sel], cvp[sel]
            st.alg = _inject(algorithm, st.alg, Xm, fm, cvm)
            st.best = _merge(st.best, algorithm.population(st.alg))
            self.migrations += 1
        # every decision below reads only G, identical on all ranks: symmetric by design
        j = _best_index(G[:, 2].numpy(), G[:, 3].numpy())
        gcv, gf = float(G[j, 2]), float(G[j, 3])
        if _improved(gf, gcv, self.gbest[0], self.gbest[1], self.ftol):
            self.quiet = 0
        else:
            self.quiet += g - self.last
        self.last, self.gbest = g, (gf, gcv)
        stop = None
        if gcv == 0 and gf == -math.inf:
            stop = Status.UNBOUNDED
        elif self.target is not None and gcv == 0 and gf <= self.target:
            stop = Status.TARGET
        elif bool((G[:, 0] > 0).any()):
            stop = Status.TIME_LIMIT
        elif bool((G[:, 1] > 0).any()):
            stop = Status.CALLBACK
        elif self.quiet >= self.stagnation:
            stop = Status.CONVERGED
        if stop is None:
            return False
        self.stop = stop
        # the loop records no history for the generation a hook stops; record it here
        st.hist[g, 0], st.hist[g, 1] = st.best[1], st.best[2]
        st.hist_nfev[g] = st.nfev
        return True


def _validate(migrate_every, migrants, topology, timeout, backend) -> None:
    for name, v in (("migrate_every", migrate_every), ("migrants", migrants)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise OptionError(f"{name} must be a positive integer, got {v!r}")
    if topology not in TOPOLOGIES:
        raise OptionError(f"unknown topology {topology!r}; use one of "
                          f"{', '.join(map(repr, TOPOLOGIES))}")
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or \
            not math.isfinite(timeout) or timeout <= 0:
        raise OptionError(f"timeout must be a finite positive number of seconds, got {timeout!r}")
    if backend is not None and not isinstance(backend, str):
        raise OptionError(f"backend must be None or a string such as 'gloo' or 'nccl', "
                          f"got {backend!r}")


def _result_fields(result) -> dict:
    """A Result's fields as a picklable dict (mappings copied, the problem left out:
    every rank has its own, equal one)."""
    out = {f.name: getattr(result, f.name) for f in fields(result) if f.name != "problem"}
    out["x"], out["timings"] = dict(result.x), dict(result.timings)
    return out


def solve_islands(objective, constraints=(), *, migrate_every=20, migrants=2,
                  topology="ring", timeout=60.0, backend=None, seed=None, device="auto",
                  **solve_options):
    """Solve with an island model: one population per process, migration between them.

    Call it from every process of a ``torchrun`` launch (``torchrun --nproc_per_node=4
    script.py``; several machines through torchrun's rendezvous).  Each rank runs
    :func:`solve` on its own device with seed ``seed + rank``; every ``migrate_every``
    generations the ranks exchange their best ``migrants`` individuals through
    ``torch.distributed`` collectives (gloo on CPU, NCCL on CUDA), and each rank
    replaces its worst individuals with the ones it receives.  All ranks run the same
    number of generations and return the same :class:`Result`: the best final point over
    all ranks (feasible first, then lower total violation, then better objective; ties
    go to the lowest rank).

    Without torchrun's environment (and no initialized process group) it runs a single
    island in this process.

    Parameters
    ----------
    objective : sympy.Expr or Problem
        As in :func:`solve`.
    constraints : sequence of sympy relationals
        As in :func:`solve`.
    migrate_every : int
        Generations between migrations (K).
    migrants : int
        Individuals each rank sends per migration (at most half the population).
    topology : {"ring", "all"}
        ``"ring"``: rank ``r`` receives rank ``r - 1``'s migrants; ``"all"``: each rank
        receives the best ``migrants`` of all other ranks' migrants.
    timeout : float
        Seconds a collective may wait for the other ranks before
        :class:`DistributedError` is raised (applies when this function creates the
        process group; an existing group keeps its own timeout).  It must cover the
        longest time ranks can run apart: ``migrate_every`` generations, compilation,
        the polish stage.
    backend : str, optional
        Process-group backend when this function creates the group: ``"gloo"`` for CPU
        devices and ``"nccl"`` for CUDA ones by default.
    seed : int, optional
        Base seed; rank ``r`` uses ``seed + r``.  Drawn on rank 0 and broadcast when
        None (the result records it, so the run can be repeated); rank 0's value is
        used by every rank.
    device : str or torch.device
        ``"auto"`` (default): ``cuda:LOCAL_RANK`` when CUDA is available, else the CPU;
        ``"cuda"`` also maps to the local rank's GPU; ``"cpu"`` or ``"cuda:K"`` as
        given.
    **solve_options
        Any other argument of :func:`solve` (``variables``, ``bounds``, ``maximize``,
        ``dtype``, ``compile``, ``cross_check``) or :class:`SolveOptions` option.  The
        stopping rules are taken together at the synchronisation points (every
        ``check_every`` and every ``migrate_every`` generations): ``stagnation`` counts
        generations without improvement of the best point over all ranks, the first
        rank past ``time_limit`` or reaching ``target``, or whose ``callback`` (or
        ``on_generation`` hook) returns True, stops every rank.  ``restarts`` are not
        used (migration brings the diversity) and ``checkpoint`` is refused.

    Returns
    -------
    Result
        The winning rank's result, identical on every rank; its ``message`` ends with
        ``"; islands: W ranks, M migrations (topology), best from rank R, E evaluations
        in all"``, ``seed`` is the base seed and ``nfev`` the winning rank's count.

    Raises
    ------
    DistributedError
        A collective failed or timed out (another rank crashed, was killed or hangs),
        the process group could not be set up, or the ranks run different problems or
        settings.
    OptionError
        An invalid option (also ``checkpoint``, which islands do not support).
    SolveFailedError
        With ``throw=True``, on every rank, when the final result is not a success.
    """
    from ..problem._problem import Problem
    from ..solver._options import SolveOptions
    from ..solver._search import default_pop_size

    t_start = time.perf_counter()
    _validate(migrate_every, migrants, topology, timeout, backend)
    solve_options = dict(solve_options)
    named = {k: solve_options.pop(k) for k in _NAMED if k in solve_options}
    opts = SolveOptions.from_kwargs(solve_options)
    if opts.checkpoint is not None:
        raise OptionError("checkpoint is not supported by solve_islands: a checkpoint "
                          "cannot hold the other ranks' populations")
    if seed is not None:
        from ..solver._solve import _seed
        seed = _seed(seed)
    if isinstance(objective, Problem):
        if tuple(constraints) or any(named.get(k) is not None for k in ("variables", "bounds")) \
                or named.get("maximize"):
            raise OptionError("pass constraints, variables, bounds and maximize to Problem(), "
                              "not to solve_islands(), when the objective is already a Problem")
        from ..solver._options import refuse_problem_options

        refuse_problem_options(solve_options, "solve_islands")
        problem = objective
    else:
        problem = Problem(objective, constraints, variables=named.get("variables"),
                          bounds=named.get("bounds"), maximize=named.get("maximize", False),
                          parameters=opts.parameters, eq_tol=opts.eq_tol,
                          default_bound=opts.default_bound)
    t_lower = time.perf_counter() - t_start
    for k in ("variables", "bounds", "maximize"):
        named.pop(k, None)
    S = opts.pop_size or default_pop_size(opts.algorithm, problem.n)
    S += S % 2
    m = min(int(migrants), S // 2)
    dev = _island_device(device)
    grp = _init_group(backend, dev, float(timeout))
    try:
        result = _islands(problem, grp, dev, seed, opts, solve_options, named, S, m,
                          int(migrate_every), topology, t_start, t_lower)
    except BaseException:
        grp.close()  # peers then fail at once instead of waiting for the timeout
        raise
    grp.close()
    if opts.throw and not result.success:
        raise SolveFailedError(f"solve failed: {result.message}", result)
    return result


def _islands(problem, grp: _Group, dev, seed, opts, solve_options, named, S, m, every,
             topology, t_start, t_lower):
    import torch

    from ..solver._result import Result, Status
    from ..solver._solve import solve

    rank, world = grp.rank, grp.world
    # one collective checks that the ranks agree and carries rank 0's seed
    base = seed if seed is not None else secrets.randbits(62)
    sig = [problem.n, S, m, every, TOPOLOGIES.index(topology), opts.check_every,
           opts.max_generations or 0, zlib.crc32(problem.source.encode()),
           opts.max_evals or 0, zlib.crc32(str(opts.algorithm).encode())]
    vec = torch.tensor([float(v) for v in sig] + [float(base >> 31), float(base & (2**31 - 1))],
                       dtype=torch.float64)
    G = grp.all_gather("start-up (all_gather of the settings)", vec)
    rows = G[:, :len(sig)]
    if not bool((rows == rows[0]).all()):
        bad = [q for q in range(world) if not bool((rows[q] == rows[0]).all())]
        raise DistributedError(
            f"island rank {rank} of {world}: ranks {bad} run a different problem or "
            "different settings than rank 0 (variables, pop_size, migrants, "
            "migrate_every, topology, check_every, max_generations, max_evals or "
            "algorithm); every "
            "rank must call solve_islands with the same arguments", rank=rank)
    base = (int(G[0, len(sig)]) << 31) | int(G[0, len(sig) + 1])

    target = None
    if opts.target is not None:
        target = -opts.target if problem.maximize else opts.target
    hook = _Migration(grp, every=every, migrants=m, topology=topology,
                      check_every=opts.check_every, stagnation=opts.stagnation, ftol=opts.ftol,
                      target=target, time_limit=opts.time_limit, user_hook=opts.on_generation,
                      t0=time.perf_counter())
    local = dict(solve_options)
    # every stop is decided globally by the hook (ftol=0: no local collapse test either)
    local.update(stagnation=_NEVER, ftol=0.0, restarts=0, time_limit=None, target=None,
                 throw=False, on_generation=hook, callback=hook.user_callback(opts.callback))
    if rank != 0:
        local["progress"] = False
    cross = bool(named.pop("cross_check", False))
    res = solve(problem, device=dev, seed=base + rank, cross_check=False, **named, **local)
    if hook.stop is not None and hook.stop is not Status.UNBOUNDED:
        msg = res.message.replace(Status.CALLBACK.value, hook.stop.value)
        status = hook.stop if res.status is Status.CALLBACK else res.status
        res = replace(res, status=status, message=msg,
                      success=res.feasible and not status.failed)

    # the winner: feasible first, then lower total violation, then better objective
    cvsum = float(np.sum(res.violations)) if res.violations.size else 0.0
    fmin = -res.fun if problem.maximize else res.fun
    key = torch.tensor([0.0 if res.feasible else 1.0, cvsum, fmin, float(res.nfev)],
                       dtype=torch.float64)
    K = grp.all_gather("final selection (all_gather)", key).numpy()
    keys = np.nan_to_num(K[:, :3], nan=np.inf)
    winner = int(np.lexsort((np.arange(world), keys[:, 2], keys[:, 1], keys[:, 0]))[0])
    total = int(K[:, 3].sum())
    payload = None
    if rank == winner:
        note = " (no torchrun environment: one process)" if grp.alone else ""
        suffix = (f"; islands: {world} rank{'s' if world != 1 else ''}{note}, "
                  f"{hook.migrations} migration{'s' if hook.migrations != 1 else ''} "
                  f"({topology}), best from rank {winner}, {total} evaluations in all")
        timings = dict(res.timings)
        timings["lowering"] = t_lower
        timings["total"] = time.perf_counter() - t_start
        payload = _result_fields(replace(res, message=res.message + suffix, seed=base,
                                         timings=timings))
    payload = grp.broadcast_object("broadcast of the winning result", payload, winner)
    result = Result(**payload, problem=problem)
    if cross:  # every rank runs the same deterministic check; rank 0's copy is kept
        from ..solver._crosscheck import cross_check as _cc

        t0 = time.perf_counter()
        cc = _cc(result)
        timings = dict(result.timings)
        timings["cross_check"] = time.perf_counter() - t0
        timings["total"] = timings["total"] + timings["cross_check"]
        cc, timings = grp.broadcast_object("broadcast of the cross-check", (cc, timings), 0)
        result = replace(result, cross_check=cc, timings=timings)
    return result


def cli_solve(path, device, seed, max_evals, time_limit, pop_size, checkpoint, resume,
              emit) -> int:
    """``constropt solve FILE --distributed``: every rank solves, rank 0 prints.

    Returns the exit code (the same on every rank for a completed run).
    """
    import click

    from ..cli import EXIT_BAD_INPUT, EXIT_FAILED, _exit_code
    from ..files import load_problem

    rank = int(os.environ.get("RANK", "0") or 0)
    if checkpoint or resume:
        if rank == 0:
            click.echo("error: --distributed does not support --checkpoint or --resume",
                       err=True)
        return EXIT_BAD_INPUT
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            spec = load_problem(path)
            options = dict(spec.options)
            for k, v in (("max_evals", max_evals), ("time_limit", time_limit),
                         ("pop_size", pop_size)):
                if v is not None:
                    options[k] = v
            if seed is not None:
                options["seed"] = seed
            options.setdefault("device", device)
            options.pop("checkpoint", None)
            res = solve_islands(spec.to_problem(), **options)
    except DistributedError as exc:
        click.echo(f"error: {exc}", err=True)
        return EXIT_FAILED
    except ConstroptError as exc:  # the same bad input on every rank: say it once
        if rank == 0:
            click.echo(f"error: {exc}", err=True)
        return EXIT_BAD_INPUT
    if rank == 0:
        for w in caught:
            click.echo(f"warning: {w.message}", err=True)
        emit(res)
        sys.stdout.flush()
    return _exit_code(res)
