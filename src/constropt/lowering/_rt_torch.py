"""Runtime helpers that generated torch code calls.

The generated source stays short and readable (``sqrt(t0)`` rather than three nested
``torch.where`` calls) while the semantics live here, in one tested place.  Every helper
is branch-free on tensor values, so ``torch.compile`` inlines and fuses it.

Semantics shared with :mod:`._rt_numpy` (same names, same results):

- results that sympy calls ``nan``, ``zoo`` or complex are NaN (``log(0)``, ``1/0``,
  ``sqrt(-1)``, ``atan2(0, 0)``, ``0**-1``, ``Mod(x, 0)``, ...);
- inputs of functions with a restricted domain are guarded with the "double where"
  pattern: a lane outside the domain feeds a harmless value to the math function and is
  then replaced by NaN, so the math function never sees an input outside its domain
  and its own gradient stays finite there; ``Piecewise`` selects with ``where``, so a
  dead branch never poisons the value of a live one (for autograd through whole
  expressions, :func:`._derivatives.gradient_runtime` also zeroes the dead NaNs);
- every helper that receives a Python number next to a tensor returns a tensor of the
  tensor's dtype and device; only ``where`` with two constant branches needs ``dtype``.

The functions of the function table (``exp``, ``sqrt``, ``atan2``, ...) are its rows'
torch functions, guarded by their domains (:func:`._guards.point_functions`); the
"double where" itself is :func:`._guards.guarded`, shared with NumPy.
"""

from __future__ import annotations

import math

import torch

from ._guards import guarded as _guarded
from ._guards import point_functions as _point_functions
from ._guards import powi  # noqa: F401 - the generated code's rt.powi

nan = math.nan
inf = math.inf
TINY = 1e-30

#: Eager ``bsum`` of 8-bit integer genes switches to chunked int16 accumulation when a
#: block has at least this many elements (see ``_bsum_rowwise``).
BSUM_ROWWISE_MIN = 1 << 20
_BSUM_CHUNK = 1 << 15  # columns per chunk: at torch's grain size, so one thread
_INT32_EXACT_ROWS = (2**31 - 1) // 255  # 8-bit genes an int32 sum holds exactly


def _t(v, like):
    """Python number -> tensor shaped like ``like`` (so both operands are tensors)."""
    if isinstance(v, torch.Tensor):
        return v
    return torch.full_like(like, v)


def _pair(a, b):
    if not isinstance(a, torch.Tensor):
        a = _t(a, b)
    if not isinstance(b, torch.Tensor):
        b = _t(b, a)
    return a, b


def where(c, a, b, dtype=None):
    """``a`` where ``c`` else ``b``; ``dtype`` types the result when both are numbers."""
    if not isinstance(a, torch.Tensor) and not isinstance(b, torch.Tensor):
        a = torch.full(c.shape, a, dtype=dtype or torch.get_default_dtype(), device=c.device)
    return torch.where(c, a, b)


def cast(block, dtype):
    return block.to(dtype)


globals().update(_point_functions(
    torch.where, lambda f: f.torch(torch) if callable(f.torch)
    else getattr(torch, f.torch or f.name, None) if f.numpy is not None else None,
    coerce=_pair))

recip = _guarded(torch.where, lambda a: 1.0 / a, lambda a: a != 0, 1.0)
div = _guarded(torch.where, lambda a, b: a / b, lambda a, b: b != 0, (None, 1.0),
               coerce=_pair)


def powf(a, e: float):
    """``a ** e`` for a constant non-integer exponent (real branch only)."""
    ok = a > 0 if e < 0 else a >= 0
    return torch.where(ok, torch.where(ok, a, 1.0) ** e, nan)


# ``a ** b`` with a symbolic exponent: NaN where sympy is zoo or complex
pow = _guarded(  # noqa: A001
    torch.where, torch.pow,
    lambda a, b: (a > 0) | ((a == 0) & (b >= 0)) | ((a < 0) & (b == torch.floor(b))),
    (1.0, 1.0), coerce=_pair)


# -- vector variables -------------------------------------------------------------------
def rsum(body, axis: int = 0, drop: int = 0):
    """Reduce a summation body over ``axis``; then drop ``drop`` leading unit axes."""
    s = body.sum(axis)
    return s.reshape(s.shape[drop:]) if drop else s


def rprod(body, axis: int = 0, drop: int = 0):
    """Product of a body over ``axis``; then drop ``drop`` leading unit axes."""
    s = body.prod(axis)
    return s.reshape(s.shape[drop:]) if drop else s


def _bsum_rowwise(block, dtype):
    """Exact sum over the rows of a 2-D 8-bit integer block, in column chunks.

    Each chunk of columns is accumulated row by row in int16 (partial sums of 128 rows,
    ``|sum| <= 128 * 255`` fits) and the partial sums are added in ``dtype``.  Chunks
    of ``_BSUM_CHUNK`` columns keep the accumulator in cache and every operation below
    torch's parallel grain size: one thread, no per-operation barrier, so the sum does
    not collapse when the CPU is oversubscribed (full-width multi-threaded row additions
    wait at a barrier each, and a busy machine makes every wait long).
    """
    n, S = block.shape
    result = torch.empty(S, dtype=dtype, device=block.device)
    for c in range(0, S, _BSUM_CHUNK):
        cols = slice(c, min(c + _BSUM_CHUNK, S))
        acc = result[cols]
        for a in range(0, n, 128):
            part = block[a, cols].to(torch.int16)
            for k in range(a + 1, min(a + 128, n)):
                part += block[k, cols]
            if a == 0:
                acc.copy_(part)
            else:
                acc += part
    return result


def bsum(block, dtype):
    """Sum a block of genes straight from storage (rows are genes), result in ``dtype``.

    Eager on CPU, large 2-D blocks of 8-bit integers take the exact chunked int16 path
    (``Tensor.sum(0, dtype=float32)`` over int8 is far slower); under
    ``torch.compile`` and elsewhere one reduction, which inductor fuses into one kernel:
    8-bit genes accumulate in ``dtype`` where every partial sum is an integer it holds
    exactly (float32: up to 65,793 genes of magnitude <= 255; faster compiled than an
    int32 accumulator, whose horizontal reduction inductor spills), else in int32
    (exact) converted to ``dtype`` once; other genes sum in ``dtype``.
    """
    small = block.dtype in (torch.int8, torch.uint8, torch.bool)
    if (small and block.dim() == 2
            and block.device.type == "cpu" and block.numel() >= BSUM_ROWWISE_MIN
            and block.shape[0] >= 8 and not torch.compiler.is_compiling()):
        return _bsum_rowwise(block, dtype)
    if small and dtype.is_floating_point and not _exact_in(dtype, block.shape[0]) \
            and block.shape[0] < _INT32_EXACT_ROWS:
        return block.sum(0, dtype=torch.int32).to(dtype)
    return block.sum(0, dtype=dtype)


def _exact_in(dtype, rows: int) -> bool:
    """Whether ``dtype`` sums ``rows`` 8-bit genes exactly (every partial sum < 2**p)."""
    bits = {torch.float32: 24, torch.float64: 53}.get(dtype, 0)
    return rows * 255 < 2**bits


def _lead(n: int, d: int, D: int, batch: int) -> tuple:
    return (1,) * d + (n,) + (1,) * (D - 1 - d + batch)


def index(start: int, stop: int, d: int, D: int, X, dtype):
    """Summation index ``start..stop-1`` along axis ``d`` of ``D`` summation axes."""
    return torch.arange(start, stop, dtype=dtype, device=X.device).reshape(
        _lead(stop - start, d, D, X.dim() - 1))


def lift(block, d: int, D: int, dtype):
    """Rows ``(n, *batch)`` of a vector variable placed on summation axis ``d`` of ``D``."""
    return block.to(dtype).reshape((1,) * d + (block.shape[0],) + (1,) * (D - 1 - d)
                                   + tuple(block.shape[1:]))


def grid(X, base: int, axes, D: int, dtype):
    """Rows ``base + sum(c * t_d)`` of ``X`` for ``(c, n, d)`` in ``axes``, ``t_d < n``."""
    idx = torch.full((1,) * D, base, dtype=torch.long, device=X.device)
    for c, n, d in axes:
        idx = idx + c * torch.arange(n, dtype=torch.long, device=X.device).reshape(
            _lead(n, d, D, 0))
    return X[idx].to(dtype)


def vconst(values, X, dtype):
    """Constants of like terms (:mod:`._liketerms`) on the terms' axis, shape
    ``(len(values), 1, ...)`` beside the batch axes of ``X``."""
    return torch.tensor(values, dtype=dtype, device=X.device).reshape(
        (len(values),) + (1,) * (X.dim() - 1))


# -- constant tables and leaf blocks (._leafblocks) ---------------------------------------
def table(kind: str, shape: tuple, text: str):
    """A module-level constant of generated code: the exact ``repr`` words of ``text``
    as float64 (``kind == "f"``) or int64 (``"i"``) of ``shape`` (on the CPU)."""
    if kind == "f":
        return torch.tensor([float(w) for w in text.split()], dtype=torch.float64).reshape(
            shape)
    return torch.tensor([int(w) for w in text.split()], dtype=torch.int64).reshape(shape)


def vtab(values, X, dtype):
    """A constant table on the leaves' axis, shape ``(len(values), 1, ...)`` beside the
    batch axes of ``X`` (as ``vconst``)."""
    return values.to(dtype=dtype, device=X.device).reshape(
        (values.shape[0],) + (1,) * (X.dim() - 1))


def matvec(matrix, v):
    """``matrix @ v`` over the first axis of ``v`` (rows of ``X``, shape ``(c, *batch)``):
    shape ``(k, *batch)``."""
    m = matrix.to(dtype=v.dtype, device=v.device)
    return (m @ v.reshape(v.shape[0], -1)).reshape((m.shape[0],) + v.shape[1:])


def rall(body):
    return torch.all(body, dim=0)


def _rows(spec, device):
    return slice(*spec) if isinstance(spec, tuple) else spec.to(device)


def assemble(items, blocks, rows, m: int, X, dtype):
    """An ``(m, *batch)`` tensor of the rows ``items`` (one each) and ``blocks`` (``(k,
    *batch)`` each) at their ``rows`` (``(start, stop, step)`` or an index table), the
    items' first."""
    res = torch.empty((m,) + tuple(X.shape[1:]), dtype=dtype, device=X.device)
    if items:
        res[_rows(rows[0], X.device)] = stack(items, X, dtype)
    for b, spec in zip(blocks, rows[1:]):
        res[_rows(spec, X.device)] = b.to(dtype)
    return res


# -- constraints and outputs ------------------------------------------------------------
def viol_le(c):
    """``max(c, 0)``, ``inf`` where ``c`` is NaN (three operations: most of a small
    problem's evaluation is per-operation overhead)."""
    return torch.where(c != c, inf, torch.clamp(c, min=0.0))


def viol_lt(c):
    return torch.where(c < 0, 0.0, torch.where(c >= 0, torch.clamp(c, min=TINY), inf))


def viol_eq(c, tol):
    a = torch.abs(c)
    return torch.where(a <= tol, 0.0, torch.where(a > tol, a, inf))


def out(v, X, dtype):
    """An output with the batch shape ``X.shape[1:]`` and the working dtype."""
    shape = X.shape[1:]
    if not isinstance(v, torch.Tensor):
        return torch.full(shape, v, dtype=dtype, device=X.device)
    return v.to(dtype).expand(shape)


def stack(items, X, dtype):
    if not items:
        return torch.zeros((0,) + tuple(X.shape[1:]), dtype=dtype, device=X.device)
    return torch.stack([out(v, X, dtype) for v in items])


def minimize_key(f):
    """Objective in minimization sense with NaN replaced by +inf (NaN never wins)."""
    if not isinstance(f, torch.Tensor):
        return inf if math.isnan(f) else f
    return torch.where(f != f, inf, f)  # isnan, vectorized by inductor


def scatter(shape, index, values, cindex, cvalues, X, dtype):
    """An array ``(*shape, *batch)``, zero but for its nonzero entries (flat indices
    ``index`` with ``values``, ``cindex`` with the constants ``cvalues``)."""
    batch = tuple(X.shape[1:])
    res = torch.zeros((math.prod(shape),) + batch, dtype=dtype, device=X.device)
    if cindex:
        res[list(cindex)] = torch.tensor(cvalues, dtype=dtype, device=X.device).reshape(
            (len(cindex),) + (1,) * len(batch))
    for k, v in zip(index, values):
        res[k] = v
    return res.reshape(tuple(shape) + batch)
