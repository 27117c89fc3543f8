"""The choices a search makes before any array exists: algorithm and constraint handler
(``"auto"`` resolved), population size, starting points, restarts, compile choice and
backend.  Every default here comes from the registered algorithm, never from its name."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from .._errors import OptionError
from ..backend._compile import compile_pays, expected_compile_seconds
from ..backend._devices import AUTO_CUDA_WORK, choose_backend
from ..engine._algorithms import Algorithm, algorithm_names, get_algorithm
from ..engine._handling import Handler, make_handler
from ..problem._fitness import CompileWarning
from ._starts import starts_of

__all__ = ["Plan", "make_plan", "has_equalities", "default_pop_size", "default_restarts",
           "independent_restarts", "compile_choice", "COMPILE_THRESHOLD", "COMPILE_RUN_WORK",
           "BATCH_GENERATIONS", "LONG_COMPILE_S"]

#: ``compile="auto"`` compiles the generation step when ``pop_size * n * B`` (B: the
#: instances of a batch) reaches this: the numbers one generation handles decide
#: whether the compile time pays for itself, however they split into instances.
COMPILE_THRESHOLD = 200_000

#: A batch (``B > 1``) with ``compile="auto"`` compiles only when the numbers one
#: generation handles times the generations it expects (:data:`BATCH_GENERATIONS`,
#: at most ``max_generations``) reach this: a compile of the batched step costs more
#: than a run of a few hundred eager NumPy generations of that size saves
#: (``benchmarks/results/batch.md``).  A single solve keeps :data:`COMPILE_THRESHOLD`
#: alone.
COMPILE_RUN_WORK = 2_000_000_000

#: Generations a batch expects: its ``ftol`` stops smooth instances well before this
#: (the disc benchmark's, ``benchmarks/batch.py``).
BATCH_GENERATIONS = 200


def has_equalities(problem) -> bool:
    """Whether the problem has an equality constraint."""
    return any(lf.kind == "eq" for lf in problem.leaves)


def _small(problem) -> bool:
    """At most 4 continuous variables and no equalities."""
    return problem.n <= 4 and not problem.integer.any() and not has_equalities(problem)


def default_restarts(problem, opts) -> int:
    """``restarts="auto"``: 3, but for small continuous problems without equalities (at
    most 4 variables) the algorithm's own ``small_restarts``: none with DE (one run and
    the polish solve them) and one, independent
    (:func:`independent_restarts`), with the GA, whose population can close on a wrong
    basin early."""
    if opts.restarts != "auto":
        return opts.restarts
    if not _small(problem):
        return 3
    return get_algorithm(opts.algorithm).small_restarts


def independent_restarts(problem, opts) -> bool:
    """Whether restarts leave the best point out of the fresh population: the ``"auto"``
    restarts of a small problem with an algorithm whose ``independent_small_restarts``
    says so (the GA).  The GA's survival keeps its best member, so a restart seeded with
    it closes on the same wrong basin; unseeded, the restart is a second look, and the
    polish starts from the best point and from the new population's clusters.  Such a
    restart stops after ``stagnation // 3`` generations that do not improve the best
    point (``Termination.restart_window``): run to its own stagnation, a second look
    that found nothing better would cost a whole second run."""
    return opts.restarts == "auto" and _small(problem) and \
        get_algorithm(opts.algorithm).independent_small_restarts


def default_pop_size(algorithm: str, n: int) -> int:
    """Population size (per instance) of ``algorithm`` when ``pop_size`` is not given."""
    return get_algorithm(algorithm).pop_size(n)


def compile_choice(compile, work: int, generations: int | None = None, *,
                   source_bytes: int | None = None, calls: int | None = None,
                   time_left: float | None = None) -> bool:
    """Whether to compile: ``compile`` as given, or for ``"auto"`` when ``work`` (numbers
    per generation) reaches :data:`COMPILE_THRESHOLD`, where the expected run length
    ``generations`` is given (batches) ``work * generations`` reaches
    :data:`COMPILE_RUN_WORK`, and, where the generated source's size ``source_bytes``
    is given, the compile can pay (:func:`~constropt.backend._compile.compile_pays`:
    its cost, estimated from the size, within what at most ``calls`` eager generations
    would take and within a share of ``time_left``, the seconds a time limit leaves).

    ``compile=True`` compiles whatever it costs: a compile cannot be interrupted, so it
    may outlast a ``time_limit``; a :class:`~constropt.CompileWarning` gives the
    expected cost first where it is long (:data:`LONG_COMPILE_S`), once per process
    and source size.
    """
    if compile == "auto":
        if generations is not None and work * generations < COMPILE_RUN_WORK:
            return False
        if work < COMPILE_THRESHOLD:
            return False
        return source_bytes is None or compile_pays(source_bytes, work, calls, time_left)
    if isinstance(compile, bool):
        if compile and source_bytes is not None:
            _warn_long(source_bytes)
        return compile
    raise OptionError(f"compile must be 'auto', True or False, got {compile!r}")


#: ``compile=True`` warns before a compile expected to take at least this many seconds.
LONG_COMPILE_S = 180.0
_WARNED: set = set()  # source sizes warned about in this process


def _warn_long(source_bytes: int) -> None:
    cost = expected_compile_seconds(source_bytes, step=True)
    if cost >= LONG_COMPILE_S and source_bytes not in _WARNED:
        _WARNED.add(source_bytes)
        warnings.warn(
            f"compile=True: compiling the search's step from {source_bytes:,} bytes of "
            f"generated code; expect about {cost:.0f} s (not interruptible: it may "
            "outlast time_limit); compile='auto' skips a compile that cannot pay",
            CompileWarning, stacklevel=4)


def _compile_costs(problem, opts, S: int, run: int | None, algorithm) -> dict:
    """What :func:`compile_choice` weighs a compile against: the generated source's
    size, the generations the run may take at most (its cap over every restart, or a
    batch's expected ``run``, fewer where ``max_evals`` allows fewer) and the time
    limit."""
    calls = run
    if calls is None:
        cap = opts.max_generations or algorithm.max_generations
        calls = cap * (1 + default_restarts(problem, opts))
    if opts.max_evals:
        calls = min(calls, max(1, opts.max_evals // S))
    return {"source_bytes": len(problem.source), "calls": calls,
            "time_left": opts.time_limit}


def _gpu_possible(device, work: int) -> bool:
    """Whether ``device`` may put ``work`` on a GPU (``"auto"`` with CUDA available and
    work from ``AUTO_CUDA_WORK``; any non-CPU device); torch is asked only where it is
    already imported or the work is that large."""
    if not isinstance(device, str):
        return getattr(device, "type", "cpu") != "cpu"
    if device == "cpu":
        return False
    if device != "auto":
        return True
    if work < AUTO_CUDA_WORK:
        return False
    import torch  # lazy: only for large work, whether CUDA may take it

    return bool(torch.cuda.is_available())


@dataclass(frozen=True)
class Plan:
    """The choices made before any array exists: the algorithm and its handler, the
    population ``S`` per instance of ``B``, the starting points, the work of one
    generation (``S * n * B`` numbers), the compile choice and the backend."""

    algorithm: Algorithm
    handler: Handler
    S: int
    B: int
    starts: np.ndarray | None
    work: int
    compile: bool
    backend: str


def make_plan(problem, opts, device, compile, M, resume, settings) -> Plan:
    """The :class:`Plan` of a search (each choice checked in the order users meet it)."""
    n, B = problem.n, M.shape[1]
    algorithm = get_algorithm(opts.algorithm)
    if B > 1 and not algorithm.batched:
        runs = " or ".join(repr(a) for a in algorithm_names() if get_algorithm(a).batched)
        raise OptionError(f"solve_batch runs algorithm={runs}")
    handling = opts.constraint_handling
    if handling == "auto":
        handling = algorithm.handler_for(has_equalities(problem))
    handler = make_handler(handling)
    S = opts.pop_size or algorithm.pop_size(n)
    S += S % 2
    starts = starts_of(problem, opts.x0, S) if resume is None else None  # checked early
    work = S * n * B
    run = None if B == 1 else min(BATCH_GENERATIONS, opts.max_generations or BATCH_GENERATIONS)
    use_compile = compile_choice(compile, work, run, **_compile_costs(problem, opts, S, run,
                                                                     algorithm))
    # a resumed run continues on its backend (checkpoints from before backends: torch)
    backend = (settings or {}).get("backend", "torch") if resume is not None else None
    # an eager batch stays on NumPy on the CPU (cheaper than eager torch at every size
    # measured) unless a GPU may take it: the single solve's rule is left as it is
    bwork = work if B == 1 or use_compile or _gpu_possible(device, work) else 0
    backend = backend or choose_backend(opts.backend, device, compile, bwork)
    return Plan(algorithm, handler, S, B, starts, work, use_compile, backend)

