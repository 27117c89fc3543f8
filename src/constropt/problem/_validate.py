"""Validation of a Problem's declaration: objective, parameters, variables and their
layout.  Every bad input raises ProblemError naming the culprit."""

from __future__ import annotations

import math
import re

import sympy as sp

from .._errors import ProblemError
from ..lowering import Block, Layout

_VECTOR_TYPES = (sp.IndexedBase, sp.MatrixSymbol)
#: Most scalar decision values (genes) a problem may have; checked before the box's
#: arrays are allocated.
MAX_GENES = 10_000_000


def _natural_key(sym) -> tuple:
    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", str(sym)))


def _is_vector(s) -> bool:
    return isinstance(s, _VECTOR_TYPES)


def _shape_of(s) -> tuple:
    if isinstance(s, sp.MatrixSymbol):
        shape = tuple(int(d) for d in s.shape)
    else:
        if s.shape is None:
            raise ProblemError(f"vector variable {s} needs a shape: IndexedBase('{s}', "
                               "shape=(n,))")
        shape = tuple(int(d) for d in s.shape)
    if not shape or any(d <= 0 for d in shape):
        raise ProblemError(f"vector variable {s} has an invalid shape {shape}")
    return shape


def _collect_symbols(exprs) -> set:
    """Scalar symbols and vector bases used by ``exprs`` (summation indices excluded)."""
    found: set = set()
    for e in exprs:
        bound = set()
        for s in sp.preorder_traversal(e):
            if isinstance(s, (sp.Sum, sp.Product)):
                bound.update(lim[0] for lim in s.limits)
        for s in e.atoms(sp.Symbol, sp.IndexedBase, sp.MatrixSymbol):
            if s in bound or isinstance(s, sp.Dummy) and s in bound:
                continue
            found.add(s)
        for ix in e.atoms(sp.Indexed):
            found.discard(ix.base.label)
            found.add(ix.base)
        for idx in e.atoms(sp.Idx):
            found.discard(idx.label)
    return found


# -- validation helpers ------------------------------------------------------------------
def _check_objective(obj) -> sp.Expr:
    if isinstance(obj, sp.Expr) and not isinstance(obj, sp.Rel):
        return obj  # (a Symbol is also a sympy Boolean: test Expr first)
    if isinstance(obj, bool) or isinstance(obj, (sp.logic.boolalg.Boolean, sp.Rel)):
        raise ProblemError(f"the objective must be a sympy expression, got the relational or "
                           f"boolean {obj!r}; constraints go in the second argument")
    if isinstance(obj, (int, float)) and not isinstance(obj, bool):
        return sp.Float(obj) if isinstance(obj, float) else sp.Integer(obj)
    if not isinstance(obj, sp.Expr):
        raise ProblemError(f"the objective must be a sympy expression, got {obj!r} of type "
                           f"{type(obj).__name__}")
    return obj


def _check_parameters(parameters) -> dict:
    if parameters is None:
        return {}
    if not isinstance(parameters, dict):
        raise ProblemError(f"parameters must be a dict {{symbol: value}}, got {parameters!r}")
    out = {}
    for s, v in parameters.items():
        if not isinstance(s, sp.Symbol):
            raise ProblemError(f"parameter key {s!r} is not a sympy Symbol")
        if v is None:
            raise ProblemError(f"parameter {s} has no value")
        try:
            fv = float(v)
        except (TypeError, ValueError):
            raise ProblemError(f"parameter {s} has the non-numeric value {v!r}") from None
        if not math.isfinite(fv):
            raise ProblemError(f"parameter {s} has the non-finite value {v!r}")
        out[s] = fv
    return out


def _order_variables(exprs, variables, parameters) -> tuple:
    used = _collect_symbols(exprs)
    params = set(parameters)
    if variables is None:
        found = [s for s in used if s not in params]
        return tuple(sorted(found, key=_natural_key))
    if isinstance(variables, (sp.Basic, str)):
        variables = [variables]
    try:
        variables = tuple(variables)
    except TypeError:
        raise ProblemError(f"variables must be a sequence of sympy Symbols (or IndexedBase/"
                           f"MatrixSymbol), got {variables!r} of type "
                           f"{type(variables).__name__}") from None
    for v in variables:
        if not isinstance(v, (sp.Symbol,) + _VECTOR_TYPES):
            raise ProblemError(f"variable {v!r} is not a sympy Symbol, IndexedBase or "
                               "MatrixSymbol")
        if v in params:
            raise ProblemError(f"{v} is declared both as a variable and as a parameter")
    if len(set(variables)) != len(variables):
        dup = next(v for v in variables if variables.count(v) > 1)
        raise ProblemError(f"variable {dup} is listed twice in variables")
    stray = sorted((s for s in used if s not in set(variables) and s not in params),
                   key=_natural_key)
    if stray:
        raise ProblemError(f"symbol {stray[0]} appears in the problem but is neither a "
                           f"variable nor a parameter (variables: {list(variables)})")
    return variables


def _check_names(variables, parameters) -> None:
    """ProblemError when two different symbols print as the same name (``Symbol('x')`` and
    ``Symbol('x', positive=True)``, or a ``Dummy('x')``): results, ``to_dict`` and the
    command line's JSON name every variable and parameter by its name."""
    seen: dict = {}
    for s in (*variables, *parameters):
        name = str(s)
        other = seen.setdefault(name, s)
        if other is not s and other != s:
            raise ProblemError(f"two different symbols are named {name!r} "
                               f"({sp.srepr(other)[:80]} and {sp.srepr(s)[:80]}): results "
                               "name variables and parameters by their names, so rename one")


def _make_layout(variables, parameters) -> Layout:
    _check_names(variables, parameters)
    blocks, off = [], 0
    for v in variables:
        shape = _shape_of(v) if _is_vector(v) else ()
        blocks.append(Block(v, off, shape))
        off += math.prod(shape) if shape else 1
        if off > MAX_GENES:
            raise ProblemError(f"the problem has more than {MAX_GENES:,} scalar variables "
                               f"(vector variable {v} has shape {shape})")
    return Layout(tuple(blocks), tuple(parameters))
