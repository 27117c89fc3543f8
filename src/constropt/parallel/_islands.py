"""Island model across processes: one population per rank, migration over ``torch.distributed``.

Each process (rank) of a ``torchrun`` launch runs the search driver (a
:class:`constropt.Search`, as ``solve`` does) on its own device with its own seed
(``seed + rank``) and on the array backend ``solve`` would pick (NumPy for small work on
the CPU, torch otherwise; the migrants travel as torch tensors either way), with a
migration hook and a consensus that keep the ranks in lockstep:

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

Modules: this one is the API (validation, start-up agreement, the final selection);
``_group.py`` the process group and its collectives; ``_migration.py`` the per-generation
hook and the stop consensus.  The command line's ``--distributed`` glue lives in
:mod:`constropt.cli`.
"""

from __future__ import annotations

import math
import secrets
import time
import warnings
import zlib
from collections.abc import Iterable
from dataclasses import fields, replace
from typing import Any

import numpy as np
import sympy as sp

from .._errors import OptionError
from ..backend._devices import BACKENDS, choose_backend
from ..finish._crosscheck import references_of
from ..finish._interrupt import cross_checked
from ..finish._result import Result, raise_if_failed
from ..problem._problem import Problem
from ..solver._build import _seed
from ..solver._options import SolveOptions, refuse_problem_options
from ..solver._search import Search, default_pop_size
from ._group import DistributedError, _Group, _init_group, _island_device
from ._migration import _Migration

__all__ = ["solve_islands", "DistributedError", "TOPOLOGIES"]

#: Migration topologies: ``"ring"`` (rank ``r`` receives from ``r - 1``) and ``"all"``
#: (every rank receives the best migrants of all the others).
TOPOLOGIES = ("ring", "all")

#: Options of :func:`constropt.solve` that are named arguments rather than SolveOptions.
_NAMED = ("variables", "bounds", "maximize", "dtype", "compile", "cross_check")


def _backends(backend, group_backend):
    """``(array backend, process-group backend)`` from the two arguments.  ``backend``
    used to name the process-group backend (``"gloo"``, ``"nccl"``, ``"mpi"``,
    ``"ucc"``): such a value is still taken that way, with a FutureWarning."""
    if isinstance(backend, str) and group_backend is None and \
            any(name in backend for name in ("gloo", "nccl", "mpi", "ucc")):
        warnings.warn(f"solve_islands(backend={backend!r}): backend now names the array "
                      "backend ('auto', 'numpy' or 'torch'), as in solve(); pass the "
                      f"process-group backend as group_backend={backend!r}", FutureWarning,
                      stacklevel=3)
        return "auto", backend
    if backend is None:
        backend = "auto"
    if not isinstance(backend, str) or backend not in BACKENDS:
        raise OptionError(f"backend must be one of {', '.join(map(repr, BACKENDS))}, "
                          f"got {backend!r}")
    return backend, group_backend


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
        raise OptionError(f"group_backend must be None or a string such as 'gloo' or "
                          f"'nccl', got {backend!r}")


def _result_fields(result) -> dict:
    """A Result's fields as a picklable dict (mappings copied, the problem left out:
    every rank has its own, equal one)."""
    out = {f.name: getattr(result, f.name) for f in fields(result) if f.name != "problem"}
    out["x"], out["timings"] = dict(result.x), dict(result.timings)
    return out


def solve_islands(objective: sp.Expr | Problem, constraints: Iterable[Any] | sp.Basic = (),
                  *, migrate_every: int = 20, migrants: int = 2, topology: str = "ring",
                  timeout: float = 60.0, backend: str = "auto",
                  group_backend: str | None = None, seed: int | None = None,
                  device: Any = "auto", **solve_options: Any) -> Result:
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
    backend : {"auto", "numpy", "torch"}
        The array library each rank searches with, as in :func:`solve`: ``"auto"``
        (default) searches on NumPy when the rank's device is the CPU and the work is
        small (torch is still imported: ``torch.distributed`` carries the migrants),
        on torch otherwise; ``"numpy"`` needs a CPU device.  A process-group name here
        (``"gloo"``, ``"nccl"``: this argument's meaning before ``group_backend``) is
        taken as ``group_backend`` with a FutureWarning.
    group_backend : str, optional
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
    t_start = time.perf_counter()
    backend, group_backend = _backends(backend, group_backend)
    _validate(migrate_every, migrants, topology, timeout, group_backend)
    problem, opts, solve_options, named, seed = _problem_and_options(objective, constraints,
                                                                     seed, solve_options)
    t_lower = time.perf_counter() - t_start
    S = opts.pop_size or default_pop_size(opts.algorithm, problem.n)
    S += S % 2
    m = min(int(migrants), S // 2)
    dev = _island_device(device)
    if backend != "auto":  # a conflict (numpy on CUDA, numpy with compile=True) fails
        # here, before any process group exists
        choose_backend(backend, dev, named.get("compile", "auto"), 0)
    grp = _init_group(group_backend, dev, float(timeout))
    try:
        result = _islands(problem, grp, dev, seed, opts, solve_options, named, S, m,
                          int(migrate_every), topology, t_start, t_lower, backend)
    except BaseException:
        grp.close()  # peers then fail at once instead of waiting for the timeout
        raise
    grp.close()
    return raise_if_failed(result, opts.throw)


def _problem_and_options(objective, constraints, seed, solve_options: dict):
    """``(problem, opts, solve_options, named, seed)``: the problem (built here unless
    ``objective`` is one), its SolveOptions, the options every rank's search takes, the
    named arguments of :func:`constropt.solve` that are not SolveOptions (``dtype``,
    ``compile``, ``cross_check``) and the base seed (``rng=`` gives it too)."""
    solve_options = dict(solve_options)
    named = {k: solve_options.pop(k) for k in _NAMED if k in solve_options}
    opts = SolveOptions.from_kwargs(solve_options)
    if opts.checkpoint is not None:
        raise OptionError("checkpoint is not supported by solve_islands: a checkpoint "
                          "cannot hold the other ranks' populations")
    if seed is not None or opts.rng is not None:  # rng= (scipy's name) gives the base seed
        seed = _seed(seed, opts.rng)
        solve_options.pop("rng", None)
    if isinstance(objective, Problem):
        if tuple(constraints) or any(named.get(k) is not None for k in ("variables", "bounds")) \
                or named.get("maximize"):
            raise OptionError("pass constraints, variables, bounds and maximize to Problem(), "
                              "not to solve_islands(), when the objective is already a Problem")
        refuse_problem_options(solve_options, "solve_islands")
        problem = objective
    else:
        problem = Problem(objective, constraints, variables=named.get("variables"),
                          bounds=named.get("bounds"), maximize=named.get("maximize", False),
                          parameters=opts.parameters, eq_tol=opts.eq_tol,
                          default_bound=opts.default_bound)
    for k in ("variables", "bounds", "maximize"):
        named.pop(k, None)
    return problem, opts, solve_options, named, seed


def island_timings(search: dict, t_lower: float, total: float) -> dict:
    """The winning rank's timings for the whole call: its search's parts, the lowering
    done before it, and the island start-up (process group, settings exchange, final
    selection) counted as ``setup``, so the parts still add up to ``total``."""
    out = dict(search)
    out["lowering"] = t_lower
    out["total"] = total
    rest = total - sum(v for k, v in out.items() if k != "total")
    out["setup"] = out.get("setup", 0.0) + max(rest, 0.0)
    return out


def _islands(problem, grp: _Group, dev, seed, opts, solve_options, named, S, m, every,
             topology, t_start, t_lower, backend):
    base = _agreed_seed(problem, grp, seed, opts, S, m, every, topology)
    hook = _Migration(grp, every=every, migrants=m, topology=topology,
                      user_hook=opts.on_generation)
    local = dict(solve_options)
    # restarts would make the evaluation counts (hence the max_evals stop) differ
    local.update(restarts=0, throw=False, on_generation=None, backend=backend)
    if grp.rank != 0:
        local["progress"] = False
    lopts = SolveOptions.from_kwargs(local)
    pvec = problem.parameter_vector(lopts.parameters)
    cross = references_of(named.pop("cross_check", False))
    search = Search._create(problem, lopts, dev, named.get("dtype"), (base + grp.rank) % 2**64,
                            named.get("compile", "auto"), pvec[:, None],
                            t_start=time.perf_counter(), on_generation=hook,
                            consensus=hook.agree)
    res = search.result()
    winner, total = _winner(problem, grp, res)
    payload = None
    if grp.rank == winner:
        note = " (no torchrun environment: one process)" if grp.alone else ""
        suffix = (f"; islands: {grp.world} rank{'s' if grp.world != 1 else ''}{note}, "
                  f"{hook.migrations} migration{'s' if hook.migrations != 1 else ''} "
                  f"({topology}), best from rank {winner}, {total} evaluations in all")
        timings = island_timings(res.timings, t_lower, time.perf_counter() - t_start)
        payload = _result_fields(replace(res, message=res.message + suffix, seed=base,
                                         timings=timings))
    payload = grp.broadcast_object("broadcast of the winning result", payload, winner)
    result = Result(**payload, problem=problem)
    if cross:  # every rank runs the same deterministic check; rank 0's copy is kept
        result = cross_checked(result, t_start, cross)
        cc, timings = grp.broadcast_object("broadcast of the cross-check",
                                           (result.cross_check, dict(result.timings)), 0)
        result = replace(result, cross_check=cc, timings=timings)
    return result


def _agreed_seed(problem, grp: _Group, seed, opts, S, m, every, topology) -> int:
    """The base seed, rank 0's (drawn there when None), after one collective that
    checks that every rank runs the same problem with the same settings."""
    import torch  # lazy: importing constropt never loads torch

    rank, world = grp.rank, grp.world
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
    return (int(G[0, len(sig)]) << 31) | int(G[0, len(sig) + 1])


def _winner(problem, grp: _Group, res) -> tuple[int, int]:
    """``(winning rank, evaluations of all ranks)``: feasible first, then defined (the
    objective a number), then lower total violation, then better objective (the order
    of ``finish._defined.result_key``), ties to the lowest rank."""
    import torch  # lazy: importing constropt never loads torch

    cvsum = float(np.sum(res.violations)) if res.violations.size else 0.0
    fmin = -res.fun if problem.maximize else res.fun
    undefined = math.isnan(fmin) or fmin == math.inf
    key = torch.tensor([0.0 if res.feasible else 1.0, float(undefined), cvsum, fmin,
                        float(res.nfev)], dtype=torch.float64)
    K = grp.all_gather("final selection (all_gather)", key).numpy()
    keys = np.nan_to_num(K[:, :4], nan=np.inf)
    winner = int(np.lexsort((np.arange(grp.world), keys[:, 3], keys[:, 2], keys[:, 1],
                             keys[:, 0]))[0])
    return winner, int(K[:, 4].sum())
