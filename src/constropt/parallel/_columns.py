"""A rank's Results as columns: what a sharded ``solve_batch`` sends to the other ranks.

The Results of one batch differ in a few numbers each and share the rest (variables,
seed, device, most messages and verdicts), so :func:`pack` turns them into one column per
field: a value every Result shares is sent once, numbers as one array, strings as the
distinct ones and an index per Result, arrays of one shape stacked, 1-D arrays of
several lengths concatenated with their lengths, dataclasses (history, verification) and
mappings with the same keys (``x``, ``timings``) as columns of their own fields,
anything else as a list.  Pickled, that is a few arrays instead of ``B`` object graphs;
:func:`unpack` rebuilds the Results (the receiver's own problem attached), equal to the
sender's field by field.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from itertools import repeat
from operator import attrgetter, is_, itemgetter

import numpy as np

from ..finish._result import FrozenDict, Result

__all__ = ["pack", "unpack", "field_array"]

_SIMPLE = (str, int, float, bool, type(None), enum.Enum)


def pack(results, skip=("problem",)) -> dict:
    """``{"type": the Result class, "n": count, "cols": {field: column}}`` of
    ``results`` (dataclass instances of one type), the fields in ``skip`` left out."""
    cls = type(results[0])
    names = [f.name for f in dataclasses.fields(cls) if f.init and f.name not in skip]
    return {"type": cls, "n": len(results),
            "cols": {k: _column(v) for k, v in zip(names, _transpose(results, names,
                                                                   attrgetter))}}


def _transpose(objs, keys, getter) -> list:
    """One list per key of ``getter(key)`` of every object (``attrgetter`` or
    ``itemgetter``): each object read in one C call, not one call per key."""
    if len(keys) == 1:
        return [list(map(getter(keys[0]), objs))]
    return [list(col) for col in zip(*map(getter(*keys), objs))]


def unpack(packed, **extra) -> list:
    """The Results of :func:`pack`'s ``packed``, with the fields ``extra`` (the skipped
    ones) set on every one."""
    n, cols = packed["n"], packed["cols"]
    names = [*cols, *extra]
    columns = [_values(c, n) for c in cols.values()] + [[v] * n for v in extra.values()]
    return _build_rows(packed["type"], names, columns)


def field_array(packed, name) -> np.ndarray:
    """One field of :func:`pack`'s Results as an array (``(n, ...)``), without
    rebuilding them: a stacked or numeric column as it was sent."""
    col, n = packed["cols"][name], packed["n"]
    if col[0] == "stack":
        return col[1]
    if col[0] == "numbers":
        return col[2]
    return np.array(_values(col, n))


def _build_rows(cls, names, columns) -> list:
    """The instances of the dataclass ``cls`` whose fields ``names`` take, instance by
    instance, the values of ``columns`` (one list per name).  Where ``names`` are all
    its fields and each is set by ``__init__`` (none derived or hidden), an instance's
    attributes are set at once and its ``__post_init__`` run, which is what its
    ``__init__`` does, without one frozen ``__setattr__`` per field (a batch rebuilds
    thousands); otherwise ``cls(**fields)``."""
    fields = dataclasses.fields(cls)
    plain = all(f.init for f in fields) and {f.name for f in fields} == set(names) and \
        not hasattr(cls, "__slots__") and dataclasses.is_dataclass(cls)
    rows = zip(*columns)
    if not plain:
        return [cls(**dict(zip(names, row))) for row in rows]
    # a Result's __post_init__ only makes its mappings FrozenDicts and its arrays
    # read-only float64 copies; the sender's were, and the columns rebuild them so
    post = None if cls is Result else getattr(cls, "__post_init__", None)
    new = object.__new__
    out = []
    for row in rows:
        obj = new(cls)
        obj.__dict__.update(zip(names, row))
        if post is not None:
            post(obj)
        out.append(obj)
    return out


def _simple(v) -> bool:
    return isinstance(v, _SIMPLE) or (type(v) is tuple and all(isinstance(e, _SIMPLE)
                                                               for e in v))


def _one_type(vals) -> bool:
    return len(set(map(type, vals))) == 1


def _column(vals):
    """One field's values as ``(kind, payload...)``."""
    v0 = vals[0]
    simple = _simple(v0)
    if simple and vals.count(v0) == len(vals):  # equal plain values (one C pass) ...
        if _one_type(vals):  # ... of one type (True == 1 == 1.0)
            return ("same", v0)
    elif all(map(is_, vals, repeat(v0))):  # one object (the variables)
        return ("same", v0)
    if _one_type(vals):
        if isinstance(v0, (bool, int, float)) and not isinstance(v0, enum.Enum):
            return ("numbers", type(v0), np.array(vals))
        if isinstance(v0, str) and not isinstance(v0, enum.Enum):
            code = {v: k for k, v in enumerate(dict.fromkeys(vals))}  # first-seen order
            return ("strings", list(code), np.fromiter(map(code.__getitem__, vals),
                                                        dtype=np.int32, count=len(vals)))
        if isinstance(v0, np.ndarray):
            return _arrays(vals)
        if dataclasses.is_dataclass(v0) and not isinstance(v0, type):
            names = [f.name for f in dataclasses.fields(v0) if f.init]
            return ("fields", type(v0), {k: _column(c) for k, c in
                                         zip(names, _transpose(vals, names, attrgetter))})
        if isinstance(v0, Mapping):
            frozen = type(v0) is FrozenDict
            if frozen:  # their dicts: the Mapping protocol is slow
                vals = [v._data for v in vals]
                # equal read-only mappings of plain values (a batch's timings shares):
                # one, shared by every Result, as the sender's could have been
                if all(map(_simple, vals[0].values())) and vals.count(vals[0]) == len(vals):
                    return ("same", v0)
            keys = tuple(vals[0])
            if all(tuple(v) == keys for v in vals):
                cols = _transpose(vals, keys, itemgetter) if keys else []
                return ("mapping", keys, [_column(c) for c in cols], frozen)
    return ("list", list(vals))


def _arrays(vals):
    if len(set(map(attrgetter("dtype"), vals))) > 1:
        return ("list", list(vals))
    shapes = set(map(attrgetter("shape"), vals))
    if len(shapes) == 1:
        shape = shapes.pop()  # one concatenation: np.stack reshapes each array first
        arr = np.concatenate(vals).reshape((len(vals), *shape)) if shape else np.array(vals)
        return ("stack", arr, not any(map(attrgetter("flags.writeable"), vals)))
    if {v.ndim for v in vals} == {1}:
        return ("ragged", np.concatenate(vals), np.array([v.size for v in vals]))
    return ("list", list(vals))


def _values(col, n) -> list:
    """The ``n`` values of one column."""
    kind = col[0]
    if kind == "same":
        return [col[1]] * n
    if kind == "numbers":
        return [col[1](v) for v in col[2].tolist()]
    if kind == "strings":
        return [col[1][i] for i in col[2].tolist()]
    if kind == "stack":
        arr = col[1]
        if len(col) > 2 and col[2]:  # read-only in every Result: views of a read-only copy
            arr = arr.copy()
            arr.setflags(write=False)
        return list(arr)
    if kind == "ragged":
        return np.split(col[1], np.cumsum(col[2])[:-1])
    if kind == "fields":
        return _build_rows(col[1], list(col[2]), [_values(c, n) for c in col[2].values()])
    if kind == "mapping":
        keys, wrap = col[1], FrozenDict if len(col) > 3 and col[3] else dict
        if not keys:
            return [wrap() for _ in range(n)]
        return [wrap(dict(zip(keys, row))) for row in zip(*(_values(c, n) for c in col[2]))]
    return col[1]
