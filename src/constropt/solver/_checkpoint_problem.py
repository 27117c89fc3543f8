"""The problem a checkpoint belongs to: its fingerprint, and the problem as data.

A checkpoint stores the arguments that rebuild its problem (:func:`problem_data`, what
``Problem.__reduce__`` names, never a callable) and a hash of everything that defines
the problem's search (:func:`fingerprint`); ``resume`` rebuilds the problem
(:func:`problem_from_data`) and refuses a file whose problem does not match.
"""

from __future__ import annotations

import hashlib

import numpy as np
import sympy

from .._errors import CheckpointError, ConstroptError
from ..problem._problem import _rebuild

__all__ = ["fingerprint", "problem_data", "problem_from_data"]


def fingerprint(problem) -> str:
    """A hash of everything that defines the problem's search (code, box, sense)."""
    h = hashlib.sha256()
    for part in (problem.source, repr(tuple(str(v) for v in problem.variables)),
                 repr(problem.maximize), repr(problem.eq_tol)):
        h.update(part.encode())
    for arr in (problem.lower, problem.upper, problem.integer.astype(np.uint8)):
        h.update(np.ascontiguousarray(arr).tobytes())
    return h.hexdigest()


def problem_data(problem):
    """The arguments that rebuild ``problem`` (what ``Problem.__reduce__`` names)."""
    return tuple(problem.__reduce__()[1])


def problem_from_data(args):
    """Rebuild a Problem from :func:`problem_data` (never a callable from the file);
    :class:`CheckpointError` naming the argument when they do not make one."""
    names = ("objective", "constraints", "variables", "bounds", "maximize", "parameters",
             "eq_tol", "default_bound")
    if not isinstance(args, tuple) or not 7 <= len(args) <= len(names):
        raise CheckpointError("field problem: expected the problem's 7 or 8 arguments")
    kinds = {"objective": sympy.Expr, "constraints": tuple, "variables": tuple,
             "bounds": (dict, type(None)), "maximize": bool, "parameters": dict,
             "eq_tol": (float, type(None)), "default_bound": (int, float, type(None))}
    for name, value in zip(names, args):
        if not isinstance(value, kinds[name]) or (name == "eq_tol" and isinstance(value, bool)):
            raise CheckpointError(f"field problem.{name}: holds a {type(value).__name__}")
    try:
        return _rebuild(*args)
    except ConstroptError as exc:
        raise CheckpointError(f"field problem: does not make a problem ({str(exc)[:200]})") \
            from None
    except (TypeError, ValueError, AttributeError, KeyError, IndexError, OverflowError,
            RecursionError, MemoryError) as exc:
        raise CheckpointError(f"field problem: does not make a problem "
                              f"({type(exc).__name__})") from None
