"""The choices a search makes before any array exists: algorithm and constraint handler
(``"auto"`` resolved), population size, starting points, restarts, compile choice and
backend.  Every default here comes from the registered algorithm, never from its name."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._errors import OptionError
from ..backend._devices import AUTO_CUDA_WORK, choose_backend
from ..engine._algorithms import Algorithm, algorithm_names, get_algorithm
from ..engine._handling import Handler, make_handler
from ._starts import starts_of

__all__ = ["Plan", "make_plan", "has_equalities", "default_pop_size", "default_restarts",
           "independent_restarts", "compile_choice", "COMPILE_THRESHOLD", "COMPILE_RUN_WORK",
           "BATCH_GENERATIONS"]

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


def compile_choice(compile, work: int, generations: int | None = None) -> bool:
    """Whether to compile: ``compile`` as given, or for ``"auto"`` when ``work`` (numbers
    per generation) reaches :data:`COMPILE_THRESHOLD` and, where the expected run length
    ``generations`` is given (batches), ``work * generations`` reaches
    :data:`COMPILE_RUN_WORK`."""
    if compile == "auto":
        if generations is not None and work * generations < COMPILE_RUN_WORK:
            return False
        return work >= COMPILE_THRESHOLD
    if isinstance(compile, bool):
        return compile
    raise OptionError(f"compile must be 'auto', True or False, got {compile!r}")


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
    use_compile = compile_choice(compile, work, run)
    # a resumed run continues on its backend (checkpoints from before backends: torch)
    backend = (settings or {}).get("backend", "torch") if resume is not None else None
    # an eager batch stays on NumPy on the CPU (cheaper than eager torch at every size
    # measured) unless a GPU may take it: the single solve's rule is left as it is
    bwork = work if B == 1 or use_compile or _gpu_possible(device, work) else 0
    backend = backend or choose_backend(opts.backend, device, compile, bwork)
    return Plan(algorithm, handler, S, B, starts, work, use_compile, backend)

