"""Island model across processes: one population per rank, migration over ``torch.distributed``.

Each process (rank) of a ``torchrun`` launch runs the search driver (a
:class:`constropt.Search`, as ``solve`` does) on its own device with its own seed
(``seed + rank``), with a migration hook and a consensus that keep the ranks in lockstep:

- every ``migrate_every`` generations the ranks meet in one ``all_gather`` of their best
  ``migrants`` individuals ``(x, f, cv)``; every ``check_every`` generations (the
  driver's check points) in one ``all_gather`` of stop flags and best point ``(cv, f)``;
- on migration generations each rank replaces its worst individuals with the migrants
  of rank ``r - 1`` (``topology="ring"``) or with the best of all other ranks' migrants
  (``topology="all"``), keeping the population's order invariant (DE: sorted best-first
  under the constraint handler's keys; GA: the best in column 0);
- every stop decision is the driver's own rule (``engine/_driver.py``) applied to values
  gathered from all ranks (the best point over all ranks, whether any rank is past the
  time limit or asked to stop), which are the same on every rank, so all ranks stop at
  the same generation; restarts are off (they would make the evaluation counts, hence
  the ``max_evals`` stop, differ between ranks).

After the local solves (polish included) the ranks gather each final point's key and the
winning rank broadcasts its whole :class:`Result`, so every rank returns the same one.
Collectives run under a timeout; a failure (a peer that crashed, was killed or hangs)
raises :class:`DistributedError` instead of hanging.
"""

from __future__ import annotations

import math
import secrets
import time
import zlib
from dataclasses import fields, replace

import numpy as np

from .._errors import ConstroptError, OptionError, SolveFailedError
from ._group import Group, init_group, island_device

__all__ = ["solve_islands", "DistributedError", "TOPOLOGIES"]

#: Migration topologies: ``"ring"`` (rank ``r`` receives from ``r - 1``) and ``"all"``
#: (every rank receives the best migrants of all the others).
TOPOLOGIES = ("ring", "all")

#: Options of :func:`constropt.solve` that are named arguments rather than SolveOptions.
_NAMED = ("variables", "bounds", "maximize", "dtype", "compile", "cross_check")

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


def _inject(algorithm, alg_state, Xm, fm, cvm):
    """Replace the worst ``m`` individuals of the (single-instance) population with the
    migrants ``Xm`` (N, m), ``fm``, ``cvm`` (m,); the population is re-sorted best-first
    under the algorithm's comparison keys (the handler's for DE, feasibility rules for
    GA), which keeps both algorithms' invariants.  Returns the new algorithm state."""
    import torch

    from ..engine._ga import Population
    from ..engine._ranking import order

    pop = algorithm.population(alg_state)
    X, f, cv = pop.X[:, 0], pop.f[0], pop.cv[0]

    def keys(f_, cv_):
        kf, kc = algorithm.keys(f_[None], cv_[None], alg_state)
        return kf.reshape(-1), kc.reshape(-1)

    m = Xm.shape[1]
    keep = order(*keys(f, cv))[: X.shape[1] - m]
    X2 = torch.cat([X[:, keep], Xm.to(device=X.device, dtype=X.dtype)], dim=1)
    f2 = torch.cat([f[keep], fm.to(device=f.device, dtype=f.dtype)])
    cv2 = torch.cat([cv[keep], cvm.to(device=cv.device, dtype=cv.dtype)])
    idx = order(*keys(f2, cv2))
    new = Population(X2[:, idx][:, None], f2[idx][None], cv2[idx][None])
    return algorithm.with_population(alg_state, new)


def _best_index(cv, f) -> int:
    """Index of the best ``(cv, f)`` row under feasibility rules (NaN as +inf), lowest
    index on ties."""
    cv = np.nan_to_num(np.asarray(cv, dtype=np.float64), nan=np.inf)
    f = np.nan_to_num(np.asarray(f, dtype=np.float64), nan=np.inf)
    return int(np.lexsort((np.arange(len(cv)), f, cv))[0])


class _Migration:
    """Migration (the driver's ``on_generation`` hook) and the consensus on the stop
    decisions (the driver's ``consensus``): the stop rules themselves are the driver's,
    applied on values every rank agrees on."""

    def __init__(self, grp: Group, *, every, migrants, topology, user_hook):
        self.grp, self.every, self.m, self.topology = grp, every, migrants, topology
        self.user_hook = user_hook
        self.migrations = 0
        self.wants_stop = False   # the user's on_generation hook asked for a stop

    def __call__(self, st, algorithm) -> bool:
        import torch

        from ..engine._ranking import order

        g = int(st.g)
        if self.user_hook is not None and self.user_hook(st, algorithm):
            self.wants_stop = True
        grp = self.grp
        if grp.world == 1 or g % self.every != 0:
            return False
        pop = algorithm.population(st.alg)
        X, f, cv = pop.X[:, 0], pop.f[0], pop.cv[0]
        n, dt = X.shape[0], torch.float64
        idx = order(f, cv)[: self.m]  # this rank's best m individuals, feasibility rules
        vec = torch.cat([X[:, idx].T.reshape(-1).to(dt), f[idx].to(dt), cv[idx].to(dt)])
        G = grp.all_gather("migration (all_gather)", vec, generation=g)
        m, W, r = self.m, grp.world, grp.rank
        Xs = G[:, :n * m].reshape(W, m, n)
        fs, cvs = G[:, n * m:n * m + m], G[:, n * m + m:n * m + 2 * m]
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
        self.migrations += 1
        return False

    def agree(self, g, f, cv, time_up, stop):
        """The best ``(f, cv)`` over all ranks and whether any rank is past the time
        limit or asked to stop: identical on every rank, so every rank stops together."""
        import torch

        vec = torch.tensor([float(bool(time_up)), float(bool(stop) or self.wants_stop),
                            float(cv[0]), float(f[0])], dtype=torch.float64)
        G = self.grp.all_gather("synchronisation (all_gather)", vec, generation=g).numpy()
        j = _best_index(G[:, 2], G[:, 3])
        return (np.array([G[j, 3]]), np.array([G[j, 2]]), bool((G[:, 0] > 0).any()),
                bool((G[:, 1] > 0).any()))


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
    dev = island_device(device)
    grp = init_group(backend, dev, float(timeout))
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


def _islands(problem, grp: Group, dev, seed, opts, solve_options, named, S, m, every,
             topology, t_start, t_lower):
    import torch

    from ..solver._options import SolveOptions
    from ..solver._result import Result
    from ..solver._search import Search

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

    hook = _Migration(grp, every=every, migrants=m, topology=topology,
                      user_hook=opts.on_generation)
    local = dict(solve_options)
    # restarts would make the evaluation counts (hence the max_evals stop) differ
    local.update(restarts=0, throw=False, on_generation=None)
    if rank != 0:
        local["progress"] = False
    lopts = SolveOptions.from_kwargs(local)
    pvec = problem.parameter_vector(lopts.parameters)
    cross = bool(named.pop("cross_check", False))
    search = Search._create(problem, lopts, dev, named.get("dtype"), base + rank,
                            named.get("compile", "auto"), pvec[:, None],
                            t_start=time.perf_counter(), on_generation=hook,
                            consensus=hook.agree)
    res = search.result()

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
