"""The public fitness function: ``Problem.fitness(...)`` for your own GA loop.

A :class:`Fitness` wraps the generated functions of the lowering (``death``, ``fitness``
or ``leaves``, see :mod:`constropt.lowering._lower`) in a thin adapter that accepts the
population in either layout, and picks per call how to run it (``compile="auto"``):

- the generated **NumPy** code for CPU populations below :data:`AUTO_COMPILE_WORK`
  numbers (individuals x genes): no torch import for NumPy input, no compile, and per
  call about what hand-written vectorized NumPy costs;
- from there on, the generated **torch** code compiled once with
  ``torch.compile(dynamic=True)`` through the process-wide cache of
  :func:`constropt.backend._compile.compiled` (a :class:`CompileWarning` says so, with the
  expected cost, before the first compile); compiled CPU calls below
  :data:`ONE_THREAD_WORK` numbers (``compile=True``) run a variant compiled for one
  thread, where waking the OpenMP team costs more than it saves (and far more when a
  core is busy elsewhere).

The generated code is branch-free (every condition a mask, every choice a ``where``),
so inductor fuses the whole fitness into one loop over the population.

Layouts and speed.  The generated code reads the population variable by variable.  Over
``(n, S)`` (``"columns"``) those reads are contiguous.  Over ``(S, n)`` (``"rows"``) they
are strided; the adapter reads the rows through ``reshape(-1, n)`` (a static stride
``n``, where ``dynamic=True`` would otherwise make the stride symbolic) and compiles
with inductor's tiling heuristic off, so the loop is vectorized with gathered loads
instead of falling back to scalar code.  Float32 rows over single genes on an x86 CPU
compile with 256-bit (AVX2) vectors where inductor would pick 512-bit ones
(:func:`row_vectors`): AVX-512's compare masks live in mask registers, which inductor's
code converts to vectors and back for every ``&`` of two conditions and every gathered
lane, about as much work again as the fitness itself; with AVX2 a compare gives a vector
mask directly; for an odd number of genes their strided loads are rewritten as
whole-vector loads and shuffles (:mod:`constropt.backend._rowloads`, the same bits, the
rows contiguous first).  Elsewhere (no AVX2) they are read as int64 words, two genes per load
(:mod:`._fitness_words`).  The NumPy path copies a row-major
population of a few genes (from :data:`CONTIGUOUS_MIN` individuals on) to contiguous
columns first and runs the generated code with
its float literals bound as 0-d arrays of the working dtype (:mod:`._fitness_numpy`).
Tensor subclasses (EvoTorch's ``ReadOnlyTensor``) are read as plain tensors.
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from .._errors import DeviceError, OptionError, ProblemError
from ..backend._compile import compiled, expected_compile_seconds
from ..backend._devices import resolve_device
from ..backend._rowloads import INDUCTOR_OPTION, deinterleaved
from ._fitness_adapter import adapter as _adapter
from ._fitness_words import eligible, unpack, words, words_adapter

if TYPE_CHECKING:  # _problem imports this module
    import sympy as sp

    from ._problem import Problem

__all__ = ["Fitness", "KINDS", "LAYOUTS", "CompileWarning", "AUTO_COMPILE_WORK",
           "ONE_THREAD_WORK", "row_vectors"]

#: The fitness a :class:`Fitness` returns, see :meth:`constropt.Problem.fitness`.
KINDS = ("death", "penalty", "split", "constraints")

#: Population layouts: ``"rows"`` is ``(S, n)``, ``"columns"`` is ``(n, S)``.
LAYOUTS = ("rows", "columns")

#: ``compile="auto"`` runs the compiled torch kernel from this many numbers per call
#: (individuals x genes; 100,000 individuals of 3 genes) and the generated NumPy code
#: below (CPU; eager torch on other devices).  From this size a compiled call saves
#: enough against NumPy that a compile pays for itself within the calls of a GA run;
#: smaller calls save too little (``benchmarks/results/fitness.md``).
AUTO_COMPILE_WORK = 300_000

#: Compiled CPU calls below this many numbers run with one torch thread.
ONE_THREAD_WORK = 300_000

#: The NumPy path copies a row-major population of at least this many individuals (and
#: at most ``CONTIGUOUS_MAX_GENES`` genes) to contiguous columns first.
CONTIGUOUS_MIN = 1000
CONTIGUOUS_MAX_GENES = 32

try:  # NumPy >= 2: set errstate's context variable directly (np.errstate costs ~2 us,
    # a sixth of a 100-point call)
    from numpy._core import _ufunc_config as _ufunc

    _ERRORS, _IGNORE_ALL = _ufunc._extobj_contextvar, _ufunc._make_extobj(all="ignore")
except (ImportError, AttributeError):  # pragma: no cover - NumPy 1.x
    _ERRORS = _IGNORE_ALL = None

_COMPILED_INPUTS: set = set()  # what has been compiled (or warned about) in this process


class CompileWarning(UserWarning):
    """A fitness function is about to run ``torch.compile`` (once per process and input
    type): the call takes seconds, later calls reuse the kernel."""


_NAMES = ("float32", "float64")
_NUMPY_GENES = frozenset(np.typecodes["AllInteger"] + "fd?")  # float16, complex: refused


def _working_dtype(dtype):
    """The working dtype's name ("float32", "float64") or None; no torch import."""
    if dtype is None:
        return None
    if isinstance(dtype, str) and dtype in _NAMES:
        return dtype
    if dtype in (np.float32, np.float64):
        return np.dtype(dtype).name
    torch = sys.modules.get("torch")
    if torch is not None and dtype in (torch.float32, torch.float64):
        return str(dtype).removeprefix("torch.")
    raise OptionError(f"dtype must be torch.float32, torch.float64 (or 'float32', "
                      f"'float64') or None, got {dtype!r}")


def row_vectors() -> str:
    """How compiled float32 rows over single genes are read on this CPU: ``"avx2"``
    (the kernel compiled with 256-bit AVX2 vectors) on an x86 CPU with AVX2, where
    inductor picks AVX2 or a wider ISA (AVX-512); ``"words"`` (the int64 words of
    :mod:`._fitness_words`) on every other CPU.

    ``benchmarks/results/fitness.md`` times the AVX2 rows kernel on an AVX-512 CPU
    (examples 2 and 3 at one thread).  With AVX2 the int64 words cost more than they save
    (each half needs a shift and a narrowing), so AVX2 reads the genes themselves.  A
    ``torch._inductor.config.cpp.simdlen`` or ``ATEN_CPU_CAPABILITY`` of the user's
    stands: then only a pick of AVX2 itself reads the genes, any other the words.
    """
    from torch._inductor import config
    from torch._inductor import cpu_vec_isa as isa  # lazy: the NumPy path never imports it

    pick = isa.pick_vec_isa()  # inductor's own choice, cached; compiling runs it anyway
    if isinstance(pick, isa.VecAVX2):
        return "avx2"
    if config.cpp.simdlen is not None or os.environ.get("ATEN_CPU_CAPABILITY") or \
            pick.bit_width() <= 256:
        return "words"
    return "avx2" if any(isinstance(v, isa.VecAVX2) for v in isa.valid_vec_isa_list()) \
        else "words"


def _compile_cost(source: str) -> str:
    """What the compile warning says it costs: the estimate of
    :func:`~constropt.backend._compile.expected_compile_seconds` for this generated
    source (the fitness alone, a cold cache; it errs high)."""
    cost = expected_compile_seconds(len(source))
    return (f"expect up to about {cost:.0f} s for {len(source):,} bytes of generated code "
            "with a cold compile cache, less when this structure was compiled before on "
            "this machine")


@contextlib.contextmanager
def _one_thread(torch):
    saved = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(saved)


class Fitness:
    """A branch-free fitness function of a :class:`~constropt.Problem`, for a whole
    population per call.

    Built by :meth:`constropt.Problem.fitness`.

    Sign convention: ``"death"``, ``"penalty"`` and ``"split"`` return values in
    **minimization sense**, lower is better: the objective ``f`` for a minimize problem,
    ``-f`` for a maximize problem (the original experiment's ``where(all constraints,
    -f, inf)`` for its maximized example 2).  NaN never wins: an undefined objective is
    ``+inf``.  ``"constraints"`` returns one signed value per constraint, ``<= 0`` where
    it holds (see :mod:`constropt.problem._adapters`).

    Attributes
    ----------
    problem : Problem
    kind : {"death", "penalty", "split", "constraints"}
    layout : {"rows", "columns"}
    device : torch.device or None
        The device populations must be on (None: the population's own).
    dtype : torch.dtype or None
        The working (accumulation) dtype (None: the population's floating dtype,
        float32 for integer genes).
    compile : {"auto", True, False}
    penalty : float
        The weight of the total violation for ``kind="penalty"``.
    """

    def __init__(self, problem: Problem, kind: str = "death", *, layout: str = "rows",
                 device: Any = None, dtype: Any = None, compile: bool | str = "auto",
                 penalty: float = 1e6,
                 parameters: Mapping[sp.Symbol, float] | None = None) -> None:
        if kind not in KINDS:
            raise OptionError(f"unknown fitness kind {kind!r}; use one of "
                              f"{', '.join(map(repr, KINDS))}")
        if layout not in LAYOUTS:
            raise OptionError(f"unknown layout {layout!r}; use 'rows' for a population of "
                              "shape (S, n) or 'columns' for (n, S)")
        if not (isinstance(compile, (bool, np.bool_)) or
                (isinstance(compile, str) and compile == "auto")):
            raise OptionError(f"compile must be 'auto', True or False, got {compile!r}")
        if isinstance(penalty, bool) or not isinstance(penalty, (int, float)) or \
                not (math.isfinite(penalty) and penalty >= 0):
            raise OptionError(f"penalty must be a finite number >= 0, got {penalty!r}")
        self.problem = problem
        self._n, self._rows = problem.n, layout == "rows"
        self._tol = problem.eq_tol
        self._contiguous = self._rows and self._n <= CONTIGUOUS_MAX_GENES
        self.kind, self.layout = kind, layout
        self.compile = compile if isinstance(compile, str) else bool(compile)
        self.penalty = float(penalty)
        self._device = None
        if device is not None:

            self._device = resolve_device(device)
        self._dtype = _working_dtype(dtype)
        self._pvec = problem.parameter_vector(parameters)
        self._eager = None  # the torch adapter, built on first use
        self._compiled: dict = {}  # (serial?, reads) -> its compiled adapter
        # float32 rows over single genes: the reads of row_vectors() (decided on the
        # first compiled call), else "" (the plain rows kernel as inductor picks)
        self._genes = self._rows and eligible(problem, kind)
        self._reads: str | None = None
        self._inputs: dict = {}  # (device, dtype) -> (P, eq_tol, weight) tensors
        self._np_inputs: dict = {}  # genes' dtype char -> (adapter, P, eq_tol, weight)
        # the NumPy fast path of __call__: a plain CPU array of fewer individuals than
        # this runs the generated NumPy code after only the shape and dtype checks
        self._np_below = math.inf if self.compile is False else \
            (-(-AUTO_COMPILE_WORK // max(self._n, 1)) if self.compile == "auto" else 2)

    @property
    def device(self):
        return self._device

    @property
    def dtype(self):
        if self._dtype is None:
            return None
        import torch

        return getattr(torch, self._dtype)

    # -- the three ways to run ---------------------------------------------------------
    def _run_numpy(self, arr: np.ndarray):
        hit = self._np_inputs.get(arr.dtype.char)
        if hit is None:
            hit = self._np_inputs[arr.dtype.char] = self._numpy_inputs(arr.dtype)
        fn, P, tol, weight = hit
        if self._contiguous and arr.shape[0] >= CONTIGUOUS_MIN:
            # vectorized NumPy loops need contiguous columns: one copy, then every
            # operation runs at full speed (a strided column costs up to twice as much)
            arr = np.ascontiguousarray(arr.T).T
        if _ERRORS is None:  # pragma: no cover - NumPy 1.x
            with np.errstate(all="ignore"):
                out = fn(arr, P, tol, weight)
        else:
            token = _ERRORS.set(_IGNORE_ALL)
            try:
                out = fn(arr, P, tol, weight)
            finally:
                _ERRORS.reset(token)
        return out

    def _numpy_inputs(self, genes: np.dtype) -> tuple:
        """(adapter, P, eq_tol, weight) of the NumPy path for populations of ``genes``:
        every number in the working dtype (a 0-d array is no weak scalar to convert on
        each operation, see :mod:`._fitness_numpy`)."""
        name = self._dtype or (genes.name if genes.name in _NAMES else "float32")
        fn = _adapter(self.problem, self.kind, self.layout, "numpy", name)
        return (fn, self._pvec.astype(name).reshape(-1, 1), np.array(self._tol, dtype=name),
                np.array(self.penalty, dtype=name))

    def _constants(self, device, dtype):
        import torch

        key = (device, dtype)
        hit = self._inputs.get(key)
        if hit is None:
            P = torch.as_tensor(self._pvec, dtype=dtype, device=device).reshape(-1, 1)
            tol = torch.tensor(self.problem.eq_tol, dtype=dtype, device=device)
            w = torch.tensor(self.penalty, dtype=dtype, device=device)
            hit = self._inputs[key] = (P, tol, w)
        return hit

    def _run_torch(self, pop, compiled: bool, work: int):
        import torch

        dtype = getattr(torch, self._dtype) if self._dtype else (
            pop.dtype if pop.dtype in (torch.float32, torch.float64) else torch.float32)
        P, tol, w = self._constants(pop.device, dtype)
        if self._eager is None:
            self._eager = _adapter(self.problem, self.kind, self.layout, "torch")
        fn, threads, genes = self._eager, contextlib.nullcontext(), pop.dtype
        pop = pop.detach()  # no requires_grad guard: one compile for every caller
        W = None
        if compiled:
            # small CPU calls: a kernel compiled for (and run on) one thread; Dynamo
            # guards on the thread count, so each variant keeps its own compiled code
            serial = work < ONE_THREAD_WORK and pop.device.type == "cpu" and \
                torch.get_num_threads() > 1
            reads = ""
            if self._genes and dtype == torch.float32 and pop.device.type == "cpu":
                if self._reads is None:
                    self._reads = row_vectors()
                reads = self._reads
                if reads == "avx2":  # the whole rows of 8 genes read as vectors
                    pop = pop.contiguous()
                if reads == "words":  # float32 rows as int64 words
                    W = words(pop, self._n)
                    pop, reads = (pop, "") if W is None else (W, reads)
            fn = self._compiled_fn(serial, reads)
            if serial:
                threads = _one_thread(torch)
            axis = 0 if self.layout == "rows" else 1
            seen = (id(fn), pop.device.type, genes, dtype)
            if seen not in _COMPILED_INPUTS:
                _COMPILED_INPUTS.add(seen)
                warnings.warn(
                    f"compiling the {self.kind!r} fitness for {self.problem.n} genes of "
                    f"{genes} on {pop.device.type}"
                    f"{' (one thread, for small calls)' if serial else ''} with "
                    f"torch.compile: {_compile_cost(self.problem.source)}; once per "
                    "process, later calls of any population size reuse it "
                    "(compile=False never compiles)", CompileWarning, stacklevel=3)
                # the genes' axis static: constant strides, which inductor vectorizes
                torch._dynamo.mark_static(pop, 1 - axis)
                if not serial:  # compile as for a large population (parallel loops)
                    torch._dynamo.mark_dynamic(pop, axis, hint_override=max(
                        int(pop.shape[axis]), 1 << 20))
        with torch.no_grad(), threads:  # one grad mode: Dynamo guards on it
            out = fn(pop, P, tol, w)
        return out if W is None else unpack(out, self._n)

    def _compiled_fn(self, serial: bool = False, reads: str = ""):
        """The compiled adapter: on one thread (``serial``) or not; ``reads`` "words"
        (over the int64 words of :mod:`._fitness_words`), "avx2" (the rows kernel with
        256-bit vectors, see :func:`row_vectors`) or "" (as inductor picks)."""
        hit = self._compiled.get((serial, reads))
        if hit is None:

            if self._eager is None:
                self._eager = _adapter(self.problem, self.kind, self.layout, "torch")
            # the rows view reads with a constant stride: inductor's tiling heuristic
            # would still count those reads as too costly to vectorize (a scalar
            # loop); gathered vector loads win (docs/fitness.md)
            options = {"cpp.enable_tiling_heuristics": False} if self._rows else None
            if reads == "avx2":
                options["cpp.simdlen"] = 256  # this compile only; inductor picks AVX2
                options.update(INDUCTOR_OPTION)
            fn = words_adapter(self.problem, self.kind) if reads == "words" else self._eager
            hit = compiled(
                fn, (self.problem.source, "public fitness", self.kind, self.layout,
                     self.problem.n, "serial" if serial else "", reads),
                options=options)
            if reads == "avx2":  # its genes read as whole vectors (backend/_rowloads.py)
                hit = deinterleaved(hit, self.problem.n)
            self._compiled[serial, reads] = hit
        return hit

    # -- the call ----------------------------------------------------------------------
    def __call__(self, population):
        """Fitness of every individual.

        Parameters
        ----------
        population : ndarray or Tensor, shape (S, n) for ``layout="rows"``, (n, S) for ``"columns"``
            Genes in ``problem.variables`` order (vector variables flattened, as in
            ``Result.x_array``): float32/float64, or integer genes (int8, int16, int32,
            int64, uint8, bool).  A NumPy array is read in place (CPU).  A tensor subclass
            is read as a plain tensor.

        Returns
        -------
        ndarray or Tensor (the kind of the input)
            ``"death"`` and ``"penalty"``: shape (S,) in the working dtype; ``"split"``:
            ``(objective, violation)``, each (S,); ``"constraints"``: (S, m) for rows,
            (m, S) for columns, one signed value per constraint.
        """
        if type(population) is np.ndarray and self._device is None:  # the common small call
            shape = population.shape
            if len(shape) == 2 and shape[self._rows] == self._n and \
                    shape[not self._rows] < self._np_below and \
                    population.dtype.char in _NUMPY_GENES:
                return self._run_numpy(population)
        torch = None
        if isinstance(population, np.ndarray):
            if population.dtype.char not in _NUMPY_GENES:
                raise ProblemError(f"population has dtype {population.dtype}; use a float "
                                   "or integer array")
        else:
            torch = sys.modules.get("torch")
            if torch is None or not isinstance(population, torch.Tensor):
                raise ProblemError(f"population must be a torch.Tensor or numpy.ndarray, "
                                   f"got {type(population).__name__}")
            if type(population) is not torch.Tensor:  # EvoTorch's ReadOnlyTensor & co
                population = population.as_subclass(torch.Tensor)
            if population.is_complex():
                raise ProblemError(f"population has complex dtype {population.dtype}")
        n = self._n
        axis = 1 if self._rows else 0
        if population.ndim != 2 or population.shape[axis] != n:
            want = f"(S, {n})" if self.layout == "rows" else f"({n}, S)"
            raise ProblemError(f"population must have shape {want} for layout="
                               f"{self.layout!r} ({n} genes), got {tuple(population.shape)}")
        S = int(population.shape[1 - axis])
        work = S * n
        small = S < 2 or self.compile is False or (
            self.compile == "auto" and work < AUTO_COMPILE_WORK)
        if torch is None:  # NumPy in, NumPy out
            if self._device is not None:
                self._check_device("cpu")
            if small:
                return self._run_numpy(population)
            import torch
            with warnings.catch_warnings():  # a read-only array is only read
                warnings.filterwarnings("ignore", "The given NumPy array is not writable")
                pop = torch.from_numpy(population)
            out = self._run_torch(pop, True, work)
            return tuple(o.numpy() for o in out) if isinstance(out, tuple) else out.numpy()
        self._check_device(population.device)
        if small and population.device.type == "cpu" and population.dtype in (
                torch.float32, torch.float64, torch.int8, torch.int16, torch.int32,
                torch.int64, torch.uint8, torch.bool):
            out = self._run_numpy(population.detach().numpy())
            if isinstance(out, tuple):
                return tuple(torch.from_numpy(o) for o in out)
            return torch.from_numpy(out)
        return self._run_torch(population, not small, work)

    def _check_device(self, device) -> None:
        want = self._device
        if want is None:
            return
        typ = device if isinstance(device, str) else device.type
        index = None if isinstance(device, str) else device.index
        if typ != want.type or (want.index is not None and index != want.index):
            raise DeviceError(f"population is on {device}, but this fitness function was "
                              f"built for device {want}; move it with .to({str(want)!r}) "
                              "or build one with device=None")

    def __repr__(self) -> str:
        return (f"Fitness(kind={self.kind!r}, layout={self.layout!r}, device="
                f"{None if self._device is None else str(self._device)!r}, dtype="
                f"{self._dtype}, compile={self.compile!r}, n={self.problem.n})")
