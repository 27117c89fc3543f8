"""The process-wide cache of compiled functions.

Compiled functions are cached by generated source text, so every problem with the same
structure (the same expressions up to parameter values) shares one compiled kernel
across solves, seeds, population sizes (``dynamic=True``) and parameter values
(parameters are tensor inputs).  torch is imported only when a function is compiled.
"""

from __future__ import annotations

import types

__all__ = ["compiled", "expected_compile_seconds", "eager_run_seconds", "compile_pays"]

_COMPILED: dict = {}

#: The cost of compiling generated code for a problem new to the machine, in seconds,
#: as ``COMPILE_BASE_S + COMPILE_S_PER_BYTE * len(source)``: Dynamo traces one
#: operation per generated operation and inductor emits and compiles C++ in proportion,
#: so the cost grows with the generated source's size; the base is tracing, scheduling
#: and one C++ build of even the smallest kernel.  Fitted to cold compiles of
#: ``Problem.fitness(compile=True)`` (``benchmarks/compact.py``, report
#: ``benchmarks/results/compact.md``); a warm cache (the same structure compiled before
#: on this machine) costs less, so the rule errs toward not compiling.
COMPILE_BASE_S = 20.0
COMPILE_S_PER_BYTE = 8e-3

#: Eager torch seconds per call, as ``EAGER_S_PER_BYTE * len(source) +
#: EAGER_S_PER_NUMBER * numbers``: a dispatch per generated operation and the
#: elementwise work on the call's numbers; upper ends of the measured range
#: (``benchmarks/compact.py --eager``), so the savings they bound are not understated.
EAGER_S_PER_BYTE = 2e-7
EAGER_S_PER_NUMBER = 3e-8

#: A search's generation step compiles the algorithm's operators with the fitness: its
#: compile costs this many times the fitness's alone (measured on one separable QP's
#: step against its fitness, ``benchmarks/results/compact.md``).
STEP_COMPILE_FACTOR = 3.0

#: ``compile="auto"`` compiles only when the expected compile takes at most this share
#: of the time a ``time_limit`` leaves: the compile cannot be interrupted, so a compile
#: that might outlast the limit would break it.
COMPILE_TIME_SHARE = 0.5


def expected_compile_seconds(source_bytes: int, step: bool = False) -> float:
    """Expected seconds to compile generated source of ``source_bytes`` characters: the
    fitness alone, or with ``step`` a search's generation step around it."""
    cost = COMPILE_BASE_S + COMPILE_S_PER_BYTE * source_bytes
    return cost * STEP_COMPILE_FACTOR if step else cost


def eager_run_seconds(source_bytes: int, work: int, calls: int) -> float:
    """Expected eager seconds of ``calls`` evaluations of ``work`` numbers each: the
    most a compile can save on them."""
    return calls * (EAGER_S_PER_BYTE * source_bytes + EAGER_S_PER_NUMBER * work)


def compile_pays(source_bytes: int, work: int, calls: int | None,
                 time_left: float | None, step: bool = True) -> bool:
    """Whether a compile (of a generation step, or with ``step=False`` of the fitness
    alone) can pay: its expected cost is at most what the eager run it replaces would
    take (``calls`` evaluations of ``work`` numbers; None: unbounded) and at most
    :data:`COMPILE_TIME_SHARE` of ``time_left`` (None: no limit)."""
    cost = expected_compile_seconds(source_bytes, step)
    if time_left is not None and cost > COMPILE_TIME_SHARE * time_left:
        return False
    return calls is None or cost <= eager_run_seconds(source_bytes, work, calls)


def compiled(fn, key, options=None):
    """``torch.compile(fn, dynamic=True, options=options)``, cached by ``key`` for the
    whole process (``options``: inductor settings for this function only).

    Each key compiles its own copy of ``fn``'s code object.  Dynamo keeps its cache on
    the code object and allows a few entries per code object
    (``torch._dynamo.config.recompile_limit``, 8) before it runs that code eagerly: every
    problem's step is the same closure code over a different generated fitness, so
    without the copy a process that solves a ninth structure would silently lose
    compilation.
    """
    import torch  # lazy: the NumPy path never imports torch

    hit = _COMPILED.get(key)
    if hit is None:
        hit = _COMPILED[key] = torch.compile(_own_code(fn, len(_COMPILED)), dynamic=True,
                                             options=options)
    return hit


def _own_code(fn, k: int):
    """``fn`` with a code object of its own (same body, closure, defaults and globals);
    callables that are not plain functions are returned as they are."""
    if not isinstance(fn, types.FunctionType):
        return fn
    code = fn.__code__.replace(co_name=f"{fn.__code__.co_name}__k{k}")
    out = types.FunctionType(code, fn.__globals__, fn.__name__, fn.__defaults__,
                             fn.__closure__)
    out.__kwdefaults__ = fn.__kwdefaults__
    out.__dict__.update(fn.__dict__)
    out.__wrapped_source__ = fn  # where it came from, for debugging
    return out
