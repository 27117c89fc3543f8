"""The process-wide cache of compiled functions.

Compiled functions are cached by generated source text, so every problem with the same
structure (the same expressions up to parameter values) shares one compiled kernel
across solves, seeds, population sizes (``dynamic=True``) and parameter values
(parameters are tensor inputs).  torch is imported only when a function is compiled.
"""

from __future__ import annotations

import types

__all__ = ["compiled"]

_COMPILED: dict = {}


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
