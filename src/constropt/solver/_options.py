"""Solver options: one frozen, validated record; unknown names raise ``OptionError``."""

from __future__ import annotations

import difflib
import math
import os
from dataclasses import dataclass, fields

import numpy as np

from .._errors import OptionError
from ..backend._devices import BACKENDS
from ..certify._bnb import certify_option
from ..engine._algorithms import get_algorithm
from ..engine._handling import make_handler
from ._localsearch import check_local_search

__all__ = ["SolveOptions", "PROBLEM_OPTIONS", "NOT_STORED", "stored_options",
           "refuse_problem_options", "MAX_POP_SIZE", "check_population_memory"]

#: Options that shape the Problem itself; a ready Problem already has them.
PROBLEM_OPTIONS = ("eq_tol", "default_bound")
#: Largest ``pop_size``: 10**8 individuals (a search's arrays at that size take gigabytes
#: per variable).
MAX_POP_SIZE = 10**8
#: Arrays of one value per individual and gene a search holds at once (population, trial
#: vectors, random numbers, selection), for :func:`check_population_memory`.
POPULATION_ARRAYS = 8


def check_population_memory(pop_size: int, n: int, instances: int, itemsize: int,
                            available: int) -> None:
    """OptionError naming ``pop_size`` when the search's population arrays (about
    :data:`POPULATION_ARRAYS` of ``pop_size * instances * (n + 2)`` values) would not fit
    in the ``available`` bytes of the device: refused before anything is allocated."""
    need = POPULATION_ARRAYS * pop_size * instances * (n + 2) * itemsize
    if need > available:
        each = f" x {instances} instances" if instances > 1 else ""
        raise OptionError(f"pop_size={pop_size} needs about {need / 2**30:.1f} GiB for the "
                          f"search's arrays ({n} variables{each}), more than the "
                          f"{available / 2**30:.1f} GiB available on the device; choose a "
                          "smaller pop_size")

#: Options a checkpoint does not keep: code to run, the display, the file itself, and
#: what only shapes the start (``rng`` is resolved to the stored seed; ``x0`` is in the
#: initial population, which the checkpointed state already holds).
NOT_STORED = ("callback", "progress", "checkpoint", "on_generation", "rng", "x0")


def stored_options(opts) -> dict:
    """The options a checkpoint keeps (and :func:`constropt.resume` reads back)."""
    return {k: v for k, v in vars(opts).items() if k not in NOT_STORED}


def refuse_problem_options(options: dict, where: str) -> None:
    """Raise OptionError naming ``eq_tol``/``default_bound`` passed beside a ready Problem:
    they were silently ignored before (the Problem keeps its own)."""
    given = [k for k in PROBLEM_OPTIONS if k in options]
    if given:
        listed = ", ".join(f"{k}={options[k]!r}" for k in given)
        raise OptionError(f"{where}: {listed} would be ignored: a ready Problem keeps the "
                          f"{' and '.join(given)} it was built with; pass "
                          f"{'them' if len(given) > 1 else 'it'} to Problem(...) instead")


@dataclass(frozen=True)
class SolveOptions:
    """Keyword options of :func:`constropt.solve` beyond the named arguments.

    Attributes
    ----------
    pop_size : int or None
        Population size (even), 4 to ``MAX_POP_SIZE`` (10**8); default
        ``clip(12 * n, 40, 300)`` for DE and ``clip(20 * n, 60, 400)`` for the GA (the
        algorithm registry's ``pop_size``).  A population whose arrays would not fit in the memory
        available on the device is refused (:class:`OptionError`) before the search.
    max_generations : int or None
        Generation limit; default 3000 for DE, 1000 for the GA.
    max_evals : int or None
        Evaluation budget, polish included; never exceeded.
    time_limit : float or None
        Seconds for the whole solve call, polish included: the search stops at the
        deadline less a tenth of it (kept for the polish, when on), the polish at the
        deadline (status ``TIME_LIMIT``).  The float64 check of the final point and the
        optional cross-check come after it.
    target : float or None
        Stop once a feasible point reaches this objective (user's sense).
    stagnation : int
        Stop after this many generations without improvement of the best point, or
        (problems without integer variables) as soon as the whole population is feasible
        and its objectives agree within ``ftol`` (nothing is left to select from).
    ftol : float
        Relative improvement that counts for ``stagnation``, and the relative spread of
        a collapsed population; ``0`` disables the collapse test.
    polish : bool
        Refine the best point with SLSQP on exact derivatives.
    eq_tol : float or None
        Equality tolerance (used when ``solve`` builds the Problem).  None (default):
        equalities hold tightly, to ``1e-9`` times their scale at the returned point (see
        :class:`constropt.Problem`); a number (``1e-4``: the CEC convention) accepts
        ``|h| <= eq_tol`` in the search and in the result alike.
    parameters : dict or None
        Parameter values ``{symbol: value}``.
    throw : bool
        Raise :class:`SolveFailedError` instead of returning an unsuccessful result.
    check_every : int
        Generations between device synchronisations (termination checks).
    default_bound : float or None
        Half-width of the initial box on sides without a bound; None (default) chooses it
        from the problem's scale (see :class:`Problem`).
    p_mut : float or None
        Per-gene mutation probability; default ``1 / n`` clipped to [0.05, 0.5].
    eta_c, eta_m : float
        SBX and mutation distribution indices.
    progress : bool or None
        Live one-line display on stderr; None (default): only when stderr is a terminal.
    callback : callable or None
        ``callback(state: Progress) -> bool | None`` every ``check_every`` generations;
        returning True, or raising ``StopIteration`` (scipy's convention), stops the run
        with a Result (status ``CALLBACK``).  As in scipy, a callback whose only
        parameter is named ``intermediate_result`` gets a
        ``scipy.optimize.OptimizeResult`` instead: ``x``, ``fun`` (minimized, as in
        :meth:`Result.to_scipy`), ``user_fun`` (the user's sense), ``nit``, ``nfev``,
        ``cv`` and the other :class:`Progress` fields.
    rng : int, numpy.random.Generator or None
        scipy's name for the seed: an int is the seed itself (``rng=5`` is
        ``seed=5``); from a ``Generator`` (or a ``SeedSequence``/``BitGenerator``) one
        seed is drawn, which advances it, and ``result.seed`` records the seed drawn.
        Giving both ``seed`` and ``rng`` raises :class:`OptionError`.
    x0 : dict, sequence or array or None
        Starting points put into the initial population (in place of random members):
        a dict ``{variable: value}`` (e.g. an earlier ``result.x``), a sequence of ``n``
        values in ``x_array`` order, a list of such points or dicts, or an array of
        shape ``(k, n)`` with ``k <= pop_size``.  Each point is clipped to the search
        box (integer variables rounded); restarts draw fresh random populations.
    algorithm : str
        ``"de"`` (SHADE-style differential evolution, the default) or ``"ga"`` (tournament,
        SBX, polynomial mutation).
    constraint_handling : str
        ``"auto"`` (epsilon-constraint when there are equalities, else feasibility
        rules), ``"feasibility"``, ``"epsilon"``, ``"penalty"`` or ``"death"``.
    strategy : str
        DE mutation: ``"current-to-pbest/1"`` or ``"rand/1"``.
    restarts : "auto" or int
        Restarts from a new random population (best point kept) on stagnation, while
        the budget allows.  ``"auto"``: 3; for continuous problems of at most 4
        variables without equalities none with DE (one run and the polish solve
        those) and one with the GA (its population can close on a wrong basin early),
        started without the best point (the result keeps it; a population seeded with
        it closed on the same basin again) and stopped after ``stagnation // 3``
        generations that do not improve the best point.  An explicit number keeps the
        best point in each fresh population.
    repair : "auto", True or False
        Gradient-based repair of infeasible individuals with the exact constraint
        Jacobian; ``"auto"``: when the problem has equality constraints.
        Off by default: on the benchmark collection the epsilon schedule alone solved
        more runs (G17, G21, G22) than with repair.
    checkpoint : str or path or None
        Write the engine state to this file every ``checkpoint_every`` generations
        (atomically, as data with a sha256 checksum: never a pickle); continue with
        :func:`constropt.resume`.  Its folder must exist: checked before the search
        (:class:`CheckpointError`).
    checkpoint_every : int
        Generations between checkpoints.
    memory_budget : int or None
        Bytes one evaluation may use before the population is evaluated in chunks
        (eager mode); default half the memory available on the device.
    certify : bool, "auto" or float
        After the search, prove a bound on the optimum by interval branch-and-bound
        (see the Certificates page): True aims for relative gap 1e-6, a number in
        ``(0, 1)`` is the target gap, ``"auto"`` runs only on problems of at most 4
        scalar variables for at most 2 s.  The result's ``lower_bound``, ``gap`` and
        ``certificate`` say what was proven.
    certify_time : float
        Seconds the branch-and-bound may run (``certify=True`` or a gap).
    backend : str
        Array library the search runs on: ``"auto"`` (default), ``"numpy"`` or
        ``"torch"``.  ``"auto"`` searches on NumPy when the device is the CPU, compilation
        is not forced and a generation is small (``pop_size * n`` below
        :data:`~constropt.backend._devices.NUMPY_MAX_WORK`): such a solve never imports
        torch.  Otherwise torch (CUDA, compiled steps, large populations).  ``"numpy"``
        with ``device="cuda"`` or ``compile=True`` raises :class:`OptionError`.
        The same seed gives the same result on the same backend, not across backends.
    local_search : "auto", True or False
        Local solves inside the search (:mod:`constropt.engine._multistart`): at every
        check point, SLSQP with exact derivatives from population points chosen so that
        no two fall in one basin (multi-level single linkage), the local minima fed back
        into the population, and the run stops ``CONVERGED`` once its best local minimum
        is confirmed (reached again from enough independent starts, or no better basin
        for ``stagnation`` generations) instead of running on to stagnation and
        restarts.  ``"auto"`` (default): in a single search
        of a continuous, smooth problem (no ``Abs``, ``Min``, ``Max``, ``Piecewise``,
        rounding or ``Or``) with exact derivatives and a finite box, without
        ``checkpoint`` (the record of minima is not checkpointed; a checkpointed run
        searches as before), and not where equalities are held in an ``eq_tol`` band
        wider than 1e-6 (the search's objective profits from such a band, and its
        schedule reaches band points no local start lay in).  True: also with
        integer variables (held fixed by the local solves); OptionError where it cannot
        run (batches, islands, checkpoints, no exact derivatives).
    on_generation : callable or None
        Advanced: ``on_generation(state, algorithm) -> bool | None`` after every
        generation, with the engine's loop state (``state.alg`` may be replaced, e.g. to
        inject migrants); True stops the run.  Used by the island model.
    """

    pop_size: int | None = None
    max_generations: int | None = None
    max_evals: int | None = None
    time_limit: float | None = None
    target: float | None = None
    stagnation: int = 60
    ftol: float = 1e-10
    polish: bool = True
    eq_tol: float | None = None
    parameters: dict | None = None
    throw: bool = False
    check_every: int = 10
    default_bound: float | None = None
    p_mut: float | None = None
    eta_c: float = 15.0
    eta_m: float = 20.0
    progress: bool | None = None
    callback: object = None
    algorithm: str = "de"
    constraint_handling: str = "auto"
    strategy: str = "current-to-pbest/1"
    restarts: int | str = "auto"
    repair: object = False
    checkpoint: object = None
    checkpoint_every: int = 50
    memory_budget: int | None = None
    on_generation: object = None
    certify: object = False
    certify_time: float = 60.0
    backend: str = "auto"
    rng: object = None
    x0: object = None
    local_search: object = "auto"

    @classmethod
    def from_kwargs(cls, kwargs: dict) -> SolveOptions:
        names = [f.name for f in fields(cls)]
        for k in kwargs:
            if k not in names:
                close = difflib.get_close_matches(k, names, n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise OptionError(f"unknown option {k!r}{hint} (options: {', '.join(names)})")
        opts = cls(**kwargs)
        opts._validate()
        return opts

    def _validate(self) -> None:
        def positive_int(name, allow_none=True):
            v = getattr(self, name)
            if v is None and allow_none:
                return
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise OptionError(f"{name} must be a positive integer, got {v!r}")

        for name in ("pop_size", "max_generations", "max_evals"):
            positive_int(name)
        positive_int("stagnation", False)
        if self.restarts != "auto" and (isinstance(self.restarts, bool) or not isinstance(
                self.restarts, int) or self.restarts < 0):
            raise OptionError(f"restarts must be 'auto' or an integer >= 0, got "
                              f"{self.restarts!r}")
        if self.repair not in ("auto", True, False):
            raise OptionError(f"repair must be 'auto', True or False, got {self.repair!r}")
        get_algorithm(self.algorithm)  # the registered names are the valid ones
        if self.constraint_handling != "auto":
            make_handler(self.constraint_handling)
        if self.strategy not in ("current-to-pbest/1", "rand/1"):
            raise OptionError(f"unknown strategy {self.strategy!r}; use "
                              "'current-to-pbest/1' or 'rand/1'")
        positive_int("check_every", False)
        positive_int("checkpoint_every", False)
        positive_int("memory_budget")
        if self.checkpoint is not None and not isinstance(self.checkpoint, (str, os.PathLike)):
            raise OptionError(f"checkpoint must be a file path, got {self.checkpoint!r}")
        if self.pop_size is not None and not 4 <= self.pop_size <= MAX_POP_SIZE:
            raise OptionError(f"pop_size must be 4 to {MAX_POP_SIZE:,}, got {self.pop_size}")
        for name in ("time_limit", "ftol", "eq_tol", "default_bound", "eta_c", "eta_m"):
            v = getattr(self, name)
            if v is None and name in ("time_limit", "default_bound", "eq_tol"):
                continue
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) \
                    or v < 0 or (v == 0 and name in ("time_limit", "default_bound")):
                raise OptionError(f"{name} must be a finite positive number, got {v!r}")
        if self.target is not None and (isinstance(self.target, bool) or not isinstance(
                self.target, (int, float)) or math.isnan(self.target)):
            raise OptionError(f"target must be a number, got {self.target!r}")
        if self.p_mut is not None and not (isinstance(self.p_mut, (int, float))
                                           and 0 <= self.p_mut <= 1):
            raise OptionError(f"p_mut must be in [0, 1], got {self.p_mut!r}")
        if self.progress is not None and not isinstance(self.progress, bool):
            raise OptionError(f"progress must be True, False or None, got {self.progress!r}")
        if self.on_generation is not None and not callable(self.on_generation):
            raise OptionError(f"on_generation must be callable, got {self.on_generation!r}")
        if self.callback is not None and not callable(self.callback):
            raise OptionError(f"callback must be callable, got {self.callback!r}")
        check_local_search(self.local_search)
        _check_rng(self.rng)
        _check_x0(self.x0)
        certify_option(self.certify)
        if isinstance(self.certify_time, bool) or not isinstance(
                self.certify_time, (int, float)) or not self.certify_time > 0:
            raise OptionError(f"certify_time must be a positive number of seconds, got "
                              f"{self.certify_time!r}")
        if not isinstance(self.backend, str) or self.backend not in BACKENDS:
            raise OptionError(f"backend must be one of {', '.join(map(repr, BACKENDS))}, "
                              f"got {self.backend!r}")
        for name in ("polish", "throw"):
            if not isinstance(getattr(self, name), bool):
                raise OptionError(f"{name} must be True or False, got {getattr(self, name)!r}")


def _check_rng(rng) -> None:
    if rng is None or isinstance(rng, (np.random.Generator, np.random.SeedSequence,
                                       np.random.BitGenerator)):
        return
    if isinstance(rng, bool) or not isinstance(rng, (int, np.integer)):
        raise OptionError(f"rng must be an integer seed, a numpy.random.Generator or None, "
                          f"got {rng!r}")


def _check_x0(x0) -> None:
    """The form of ``x0`` (its shape and values are checked against the problem when the
    search is built)."""
    if x0 is None or isinstance(x0, dict):
        return
    if isinstance(x0, (str, bytes)) or not hasattr(x0, "__len__"):
        raise OptionError(f"x0 must be a dict {{variable: value}}, a sequence of values in "
                          f"variable order or an array of shape (k, n), got {x0!r}")
    if len(x0) == 0:
        raise OptionError("x0 is empty: give at least one starting point, or None")
