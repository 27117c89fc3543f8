"""What ``resume`` checks in a loaded checkpoint before it continues.

The sha256 of a checkpoint detects corruption, not forgery.  A file with a recomputed
checksum can hold any data the format describes, so the settings, the loop state and
the generator state are checked against the rebuilt problem: each array must have the
search backend's type, the working dtype and the shape this problem and population
give it, each counter must be in range, each state field of its class.  The checks
mirror what :meth:`constropt.engine._driver.Driver._initial` and the algorithms'
``start`` build; anything else is a :class:`CheckpointError` naming the field.
"""

from __future__ import annotations

import math

import numpy as np

from .._errors import CheckpointError, ConstroptError
from ..engine._algorithms import get_algorithm
from ..engine._best import Best
from ..engine._de import DEState
from ..engine._driver import DriverState
from ..engine._ga import Population
from ..engine._termination import CODES
from ..finish._crosscheck import REFERENCES
from ._options import SolveOptions

__all__ = ["check_resume", "MAX_COUNT"]

_COUNTERS = ("nit", "nfev", "quiet", "restarts", "since", "code")
_HOST_FLOATS = ("last_f", "last_cv", "final_f", "final_cv")
_KIND_NAMES = {"f": "float32 or float64", "i": "int64", "b": "bool"}
#: Largest counter a checkpoint may hold (evaluations, generations): far beyond any run.
MAX_COUNT = 2**62


def _np(a):
    return a if isinstance(a, np.ndarray) else a.detach().cpu().numpy()


def _dtype_name(a) -> str:
    return str(a.dtype).removeprefix("torch.")


def _fail(field: str, why: str):
    raise CheckpointError(f"field {field}: {why}")


def check_resume(data: dict, problem, default_pop_size) -> None:
    """:class:`CheckpointError` naming the field when the settings, loop state or
    generator of ``data`` (from :func:`read_checkpoint`) are not what a solve of
    ``problem`` writes: every resumed array has the backend's type, the working dtype
    and the shape of this problem and population (``default_pop_size(algorithm, n)``
    when the options name none), every counter is in range."""
    opts, backend, dname = _check_settings(data["settings"], problem)
    loop = data["loop"]
    if not isinstance(loop, DriverState):
        _fail("loop", f"holds a {type(loop).__name__}, expected a DriverState")
    algorithm = get_algorithm(opts.algorithm)
    want_alg = algorithm.state
    if not isinstance(loop.alg, want_alg):
        _fail("loop.alg", f"holds a {type(loop.alg).__name__}, expected a "
                          f"{want_alg.__name__} (algorithm {opts.algorithm!r})")
    if not isinstance(loop.best, Best) or not isinstance(loop.alg.pop, Population):
        _fail("loop.best", "is not the best point's state")
    check = _Fields(backend)
    W = _check_loop(check, loop, problem.n, dname)
    S = opts.pop_size or default_pop_size(opts.algorithm, problem.n)
    S += S % 2
    _check_algorithm(check, loop.alg, algorithm, problem.n, S, W)
    _check_generator(data["generator"], backend)


def _check_settings(st, problem):
    """The settings of a checkpoint: ``(options, backend, dtype name or None)``."""
    if not isinstance(st, dict):
        _fail("settings", f"holds a {type(st).__name__}, expected a dict")
    for key in ("seed", "device", "dtype", "compile", "cross_check", "pvec", "options"):
        if key not in st:
            _fail(f"settings.{key}", "missing")
    seed = st["seed"]
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**64:
        _fail("settings.seed", f"{seed!r:.40} is not an integer in [0, 2**64)")
    if not isinstance(st["device"], str) or len(st["device"]) > 100:
        _fail("settings.device", f"{st['device']!r:.40} is not a device name")
    backend = st.get("backend", "torch")
    if backend not in ("numpy", "torch"):
        _fail("settings.backend", f"{backend!r:.40} is not 'numpy' or 'torch'")
    if st["compile"] not in ("auto", True, False) or not isinstance(st["compile"], (str, bool)):
        _fail("settings.compile", f"{st['compile']!r:.40} is not 'auto', True or False")
    cc = st["cross_check"]  # a bool (older checkpoints) or the reference names
    if not (isinstance(cc, bool) or (isinstance(cc, (tuple, list)) and len(cc) <= 2 and
                                     all(isinstance(r, str) and r in REFERENCES for r in cc))):
        _fail("settings.cross_check", f"{cc!r:.40} is not True, False or reference names "
                                      f"from {REFERENCES}")
    pvec, n_par = st["pvec"], len(problem.layout.parameters)
    if not isinstance(pvec, np.ndarray) or pvec.dtype != np.float64 or pvec.shape != (n_par,) \
            or not np.isfinite(pvec).all():
        _fail("settings.pvec", f"is not {n_par} finite float64 parameter values")
    options = st["options"]
    if not isinstance(options, dict) or not all(isinstance(k, str) for k in options):
        _fail("settings.options", "is not a dict of option names")
    try:
        opts = SolveOptions.from_kwargs(options)
    except (ConstroptError, TypeError) as exc:
        _fail("settings.options", str(exc)[:300])
    if opts.backend not in ("auto", backend):
        _fail("settings.options.backend", f"{opts.backend!r} but the search ran on {backend}")
    wanted = {None: None, "float32": "float32", "float64": "float64"}
    dname = st["dtype"] if st["dtype"] is None or isinstance(st["dtype"], str) \
        else str(st["dtype"]).removeprefix("torch.")
    if dname not in wanted:
        _fail("settings.dtype", f"{st['dtype']!r:.40} is not float32, float64 or None")
    return opts, backend, dname


class _Fields:
    """The checks of one resumed array or counter: the backend's array type, a dtype,
    a shape, a range."""

    def __init__(self, backend: str):
        self.backend = backend
        if backend == "torch":
            import torch  # a torch checkpoint: its run imported torch (never the NumPy path)

            self.array = torch.Tensor
        else:
            self.array = np.ndarray

    def arr(self, field, value, shape=None, kinds="f", dtype=None):
        if not isinstance(value, self.array):
            _fail(field, f"holds a {type(value).__name__}, expected a "
                         f"{'NumPy array' if self.backend == 'numpy' else 'torch tensor'} "
                         f"(backend {self.backend})")
        name = _dtype_name(value)
        ok = {"f": name in ("float32", "float64"), "i": name == "int64", "b": name == "bool"}
        if not ok[kinds] or (dtype is not None and name != dtype):
            _fail(field, f"has dtype {name}, expected {dtype or _KIND_NAMES[kinds]}")
        if shape is not None and tuple(value.shape) != tuple(shape):
            _fail(field, f"has shape {tuple(value.shape)}, expected {tuple(shape)}")
        return value

    def count(self, field, value, shape, top=MAX_COUNT):
        v = _np(self.arr(field, value, shape, "i"))
        if v.size and (v.min() < 0 or v.max() > top):
            _fail(field, f"holds {int(v.min() if v.min() < 0 else v.max())}, outside [0, {top}]")


def _check_loop(check: _Fields, loop, n: int, dname) -> str:
    """The driver's state of one resumed solve; returns the working dtype's name."""
    arr, count = check.arr, check.count
    B, R = 1, 1  # resume continues one solve: one instance, one row
    arr("loop.nfev", loop.nfev, (B,), "i")
    arr("loop.rows", loop.rows, (R,), "i")
    count("loop.rows", loop.rows, (R,), B - 1)
    arr("loop.row_live", loop.row_live, (R,), "b")
    W = _dtype_name(arr("loop.best.f", loop.best.f, (R,)))
    if dname is not None and W != dname:
        _fail("loop.best.f", f"has dtype {W}, but settings.dtype is {dname}")
    arr("loop.best.x", loop.best.x, (n, R), dtype=W)
    arr("loop.best.cv", loop.best.cv, (R,), dtype=W)
    for name in _COUNTERS:
        count(f"loop.{name}", getattr(loop, name), (B,),
              len(CODES) - 1 if name == "code" else MAX_COUNT)
    count("loop.g", loop.g, ())
    for name in _HOST_FLOATS:
        arr(f"loop.{name}", getattr(loop, name), (B,), dtype="float64")
    arr("loop.final_x", loop.final_x, (n, B), dtype="float64")
    elapsed = float(_np(arr("loop.elapsed", loop.elapsed, (), dtype="float64")))
    if not (math.isfinite(elapsed) and elapsed >= 0):
        _fail("loop.elapsed", f"is {elapsed}, not a number of seconds")
    cap = arr("loop.hist_f", loop.hist_f, dtype=W).shape[0]
    if cap < 1:
        _fail("loop.hist_f", "holds no history row")
    arr("loop.hist_f", loop.hist_f, (cap, B), dtype=W)
    arr("loop.hist_cv", loop.hist_cv, (cap, B), dtype=W)
    count("loop.hist_nfev", loop.hist_nfev, (cap, B))
    return W


def _check_algorithm(check: _Fields, alg, algorithm, n: int, S: int, W: str) -> None:
    """The algorithm's state (population of ``S``, epsilon levels, DE's memory)."""
    arr, count = check.arr, check.count
    R = 1
    pop = alg.pop
    lead = (R,) if algorithm.batched else ()  # the instance axis
    arr("loop.alg.pop.X", pop.X, (n, *lead, S), dtype=W)
    arr("loop.alg.pop.f", pop.f, (*lead, S), dtype=W)
    arr("loop.alg.pop.cv", pop.cv, (*lead, S), dtype=W)
    level = (R, 1) if algorithm.batched else ()
    arr("loop.alg.level", alg.level, level, dtype=W)
    arr("loop.alg.level0", alg.level0, level, dtype=W)
    if isinstance(alg, DEState):
        count("loop.alg.t", alg.t, (R, 1))
        mem = alg.mem
        H = arr("loop.alg.mem.F", mem.F, dtype=W).shape[-1] if mem.F.ndim else 0
        if H < 1:
            _fail("loop.alg.mem.F", f"has shape {tuple(mem.F.shape)}, expected ({R}, slots)")
        arr("loop.alg.mem.F", mem.F, (R, H), dtype=W)
        arr("loop.alg.mem.CR", mem.CR, (R, H), dtype=W)
        count("loop.alg.mem.slot", mem.slot, (R,), H - 1)
    elif isinstance(alg.t, int) and not isinstance(alg.t, bool):
        if not 0 <= alg.t <= MAX_COUNT:
            _fail("loop.alg.t", f"holds {alg.t}, outside [0, {MAX_COUNT}]")
    else:
        count("loop.alg.t", alg.t, ())


def _check_generator(gen, backend: str) -> None:
    """The random generator's state of the backend."""
    try:
        if backend == "torch":
            import torch  # a torch checkpoint: its run imported torch

            if not isinstance(gen, torch.Tensor) or gen.dtype != torch.uint8:
                raise TypeError
            torch.Generator().set_state(gen)
        else:
            if not isinstance(gen, dict):
                raise TypeError
            np.random.PCG64().state = gen
    except (TypeError, ValueError, KeyError, RuntimeError, OverflowError):
        _fail("generator", f"is not the state of a {backend} random generator")
