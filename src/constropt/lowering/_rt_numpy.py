"""Runtime helpers that generated NumPy code calls; the twin of :mod:`._rt_torch`.

Same names, same semantics (see that module).  The functions of the function table
(``exp``, ``sqrt``, ``atan2``, ...) are its rows' NumPy functions, guarded by their
domains (:func:`._guards.point_functions`).  The NumPy evaluator runs the generated
function under ``numpy.errstate(all="ignore")``: guarded lanes never reach a math
function out of its domain, but overflow to ``inf`` is a legitimate result.
"""

from __future__ import annotations

import math

import numpy as np

from ._guards import (
    _every,
    powi,  # noqa: F401 - the generated code's rt.powi
)
from ._guards import guarded as _guarded
from ._guards import point_functions as _point_functions

nan = math.nan
inf = math.inf
TINY = 1e-30

globals().update(_point_functions(np.where, lambda f: f.numpy, fast=True))


def where(c, a, b, dtype=None):
    r = np.where(c, a, b)
    return r.astype(dtype, copy=False) if dtype is not None else r


def cast(block, dtype):
    return block if block.dtype == dtype else block.astype(dtype)


recip = _guarded(np.where, lambda a: 1.0 / a, lambda a: a != 0, 1.0, fast=True)
div = _guarded(np.where, lambda a, b: a / b, lambda a, b: np.asarray(b) != 0, (None, 1.0),
               fast=True)


def powf(a, e: float):
    ok = a > 0 if e < 0 else a >= 0
    if _every(ok):  # every lane inside: the same values without the selects
        return np.power(a, e)
    return np.where(ok, np.power(np.where(ok, a, 1.0), e), nan)


def _pow_arrays(a, b):
    a = np.asarray(a, dtype=np.result_type(a, b, np.float32))
    return a, np.asarray(b, dtype=a.dtype)


pow = _guarded(  # noqa: A001
    np.where, np.power,
    lambda a, b: (a > 0) | ((a == 0) & (b >= 0)) | ((a < 0) & (b == np.floor(b))),
    (1.0, 1.0), coerce=_pow_arrays, fast=True)


# -- vector variables -------------------------------------------------------------------
def rsum(body, axis: int = 0, drop: int = 0):
    s = np.sum(body, axis=axis)
    return s.reshape(s.shape[drop:]) if drop else s


def rprod(body, axis: int = 0, drop: int = 0):
    s = np.prod(body, axis=axis)
    return s.reshape(s.shape[drop:]) if drop else s


def bsum(block, dtype):
    # 8-bit genes: an integer accumulator where dtype could not hold every partial sum
    # exactly (float32 from 65,794 genes of magnitude <= 255), as the torch twin
    if block.dtype.itemsize == 1 and block.dtype.kind in "biu" and \
            block.shape[0] * 255 >= 2 ** (np.finfo(dtype).nmant + 1):
        return np.sum(block, axis=0, dtype=np.int64).astype(dtype)
    return np.sum(block, axis=0, dtype=dtype)


def _lead(n: int, d: int, D: int, batch: int) -> tuple:
    return (1,) * d + (n,) + (1,) * (D - 1 - d + batch)


def index(start: int, stop: int, d: int, D: int, X, dtype):
    return np.arange(start, stop, dtype=dtype).reshape(_lead(stop - start, d, D, X.ndim - 1))


def lift(block, d: int, D: int, dtype):
    return block.astype(dtype, copy=False).reshape(
        (1,) * d + (block.shape[0],) + (1,) * (D - 1 - d) + tuple(block.shape[1:]))


def grid(X, base: int, axes, D: int, dtype):
    idx = np.full((1,) * D, base, dtype=np.int64)
    for c, n, d in axes:
        idx = idx + c * np.arange(n, dtype=np.int64).reshape(_lead(n, d, D, 0))
    return X[idx].astype(dtype, copy=False)


def vconst(values, X, dtype):
    """Constants of like terms (:mod:`._liketerms`) on the terms' axis, shape
    ``(len(values), 1, ...)`` beside the batch axes of ``X``."""
    return np.asarray(values, dtype=dtype).reshape((len(values),) + (1,) * (X.ndim - 1))


# -- constant tables and leaf blocks (._leafblocks) ---------------------------------------
def table(kind: str, shape: tuple, text: str):
    """A module-level constant of generated code: the exact ``repr`` words of ``text``
    as float64 (``kind == "f"``) or int64 (``"i"``) of ``shape``."""
    return np.array(text.split(), dtype=np.float64 if kind == "f" else np.int64).reshape(shape)


def vtab(values, X, dtype):
    """A constant table on the leaves' axis, shape ``(len(values), 1, ...)`` beside the
    batch axes of ``X`` (as ``vconst``)."""
    return values.astype(dtype, copy=False).reshape((len(values),) + (1,) * (X.ndim - 1))


def matvec(matrix, v):
    """``matrix @ v`` over the first axis of ``v`` (rows of ``X``, shape ``(c, *batch)``):
    shape ``(k, *batch)``."""
    m = matrix.astype(v.dtype, copy=False)
    return (m @ v.reshape(v.shape[0], -1)).reshape((m.shape[0],) + v.shape[1:])


def rall(body):
    return np.all(body, axis=0)


def _rows(spec):
    return slice(*spec) if isinstance(spec, tuple) else spec


def assemble(items, blocks, rows, m: int, X, dtype):
    """An ``(m, *batch)`` array of the rows ``items`` (one each) and ``blocks`` (``(k,
    *batch)`` each) at their ``rows`` (``(start, stop, step)`` or an index table), the
    items' first."""
    res = np.empty((m,) + tuple(X.shape[1:]), dtype=dtype)
    res[_rows(rows[0])] = stack(items, X, dtype)
    for b, spec in zip(blocks, rows[1:]):
        res[_rows(spec)] = b
    return res


# -- constraints and outputs ------------------------------------------------------------
def viol_le(c):
    return np.where(c <= 0, 0.0, np.where(c > 0, c, inf))


def viol_lt(c):
    return np.where(c < 0, 0.0, np.where(c >= 0, np.maximum(c, TINY), inf))


def viol_eq(c, tol):
    a = np.abs(c)
    return np.where(a <= tol, 0.0, np.where(a > tol, a, inf))


def out(v, X, dtype):
    shape = X.shape[1:]
    if type(v) is np.ndarray and v.dtype == dtype and v.shape == shape:
        v = v.view()  # already the right array: a read-only view, as broadcast_to gives,
        v.flags.writeable = False  # at a tenth of its cost
        return v
    return np.broadcast_to(np.asarray(v, dtype=dtype), shape)


def stack(items, X, dtype):
    # one array filled row by row: assignment broadcasts a scalar or an (B,) row at a
    # fraction of the cost of broadcast_to + np.stack (a Jacobian is mostly constants,
    # and the polish evaluates it at every step)
    res = np.empty((len(items),) + tuple(X.shape[1:]), dtype=dtype)
    for i, v in enumerate(items):
        res[i] = v
    return res


def minimize_key(f):
    return np.fmin(f, inf)  # NaN -> inf in one pass


def scatter(shape, index, values, cindex, cvalues, X, dtype):
    # an array of shape + batch, zero but for its nonzero entries (flat indices): the
    # constant ones in one assignment, the others row by row (a derivative is sparse)
    batch = tuple(X.shape[1:])
    res = np.zeros((math.prod(shape),) + batch, dtype=dtype)
    if cindex:
        res[list(cindex)] = np.asarray(cvalues, dtype=dtype).reshape(
            (len(cindex),) + (1,) * len(batch))
    for k, v in zip(index, values):
        res[k] = v
    return res.reshape(tuple(shape) + batch)
