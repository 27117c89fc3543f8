"""The NumPy runtime of the public fitness (:meth:`constropt.Problem.fitness`).

The generated source runs here, per working dtype, with two changes from the engine's
NumPy evaluator, both for the per-call cost of small populations and neither changing a
value:

- outputs the caller owns: ``out`` hands back the fresh result array itself (never a
  read-only view, never a view of the caller's population);
- every float literal of the source (``2.0``, ``-1.5``, ``inf``, ``nan``) is bound once
  to a 0-d array of the working dtype.  NumPy converts a Python float operand on every
  ufunc call (a weak scalar, NEP 50), which costs more than the operation itself on a
  few hundred numbers; a 0-d array of the other operand's own dtype it takes as it is.
  The value is the same: the literal rounded to the working dtype, once here instead of
  on every call, and no operation changes its dtype.
"""

from __future__ import annotations

import ast

import numpy as np

from ..lowering import _rt_numpy
from ..lowering._codegen import compile_source

__all__ = ["numpy_functions", "hoist_literals"]

_PREFIX = "_lit"  # generated names never start with an underscore


def _fresh_out(v, X, dtype):
    """``out`` for the public NumPy fitness: the result array itself when it is a fresh
    one of the right dtype and shape (the engine's ``out`` returns a read-only view),
    else a fresh copy (never a view of the caller's population or of a literal)."""
    shape = X.shape[1:]
    if type(v) is np.ndarray and v.base is None and v.dtype == dtype and v.shape == shape:
        return v
    return np.array(np.broadcast_to(np.asarray(v, dtype=dtype), shape))


def _np_where(c, a, b, dtype=None):
    r = np.where(c, a, b)
    return r if dtype is None else r.astype(dtype, copy=False)


#: The runtime of the public fitness: the engine's, with outputs the caller owns.
_RUNTIME = {**{k: getattr(_rt_numpy, k) for k in dir(_rt_numpy) if not k.startswith("_")},
            "out": _fresh_out, "where": _np_where}


class _Literals(ast.NodeTransformer):
    """Float literals (a negated one folded in, ``inf`` and ``nan`` included) replaced
    by names; ``values`` maps each name to its float."""

    def __init__(self):
        self.names: dict[str, str] = {}  # repr(value) -> name
        self.values: dict[str, float] = {}  # name -> value

    def _name(self, value: float, node) -> ast.Name:
        key = repr(value)  # -0.0 and 0.0 stay two literals
        name = self.names.get(key)
        if name is None:
            name = self.names[key] = f"{_PREFIX}{len(self.names)}"
            self.values[name] = value
        return ast.copy_location(ast.Name(name, ast.Load()), node)

    @staticmethod
    def _float(node):
        if isinstance(node, ast.Constant) and type(node.value) is float:
            return node.value
        if isinstance(node, ast.Name) and node.id in ("inf", "nan"):
            return float(node.id)
        return None

    def visit_UnaryOp(self, node):
        value = self._float(node.operand)
        if isinstance(node.op, ast.USub) and value is not None:
            return self._name(-value, node)
        return self.generic_visit(node)

    def visit_Constant(self, node):
        value = self._float(node)
        return node if value is None else self._name(value, node)

    def visit_Name(self, node):
        value = self._float(node) if isinstance(node.ctx, ast.Load) else None
        return node if value is None else self._name(value, node)


def hoist_literals(source: str) -> tuple[str, dict[str, float]]:
    """``source`` with its float literals replaced by names, and those names' values."""
    lits = _Literals()
    tree = ast.fix_missing_locations(lits.visit(ast.parse(source)))
    return ast.unparse(tree) + "\n", lits.values


_SOURCES: dict = {}  # generated source -> (hoisted source, literal values)
_NAMESPACES: dict = {}  # (generated source, dtype name) -> namespace


def numpy_functions(problem, dtype: str) -> dict:
    """The generated functions of ``problem`` over the public runtime, with the float
    literals as 0-d arrays of ``dtype`` ("float32" or "float64")."""
    key = (problem.source, dtype)
    ns = _NAMESPACES.get(key)
    if ns is None:
        hit = _SOURCES.get(problem.source)
        if hit is None:
            hit = _SOURCES[problem.source] = hoist_literals(problem.source)
        text, values = hit
        runtime = dict(_RUNTIME)
        with np.errstate(all="ignore"):  # a literal beyond float32 rounds to inf, as on a call
            runtime.update({k: np.array(v, dtype=dtype) for k, v in values.items()})
        ns = _NAMESPACES[key] = compile_source(text, runtime, f"numpy-fitness-{dtype}")
    return ns
