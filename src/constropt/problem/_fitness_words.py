"""Float32 rows read as 64-bit words: the compiled CPU fitness over ``(S, n)`` float32.

Inductor's CPU code reads a strided column (gene ``k`` of every row) one element at a
time, a scalar load and an insert per vector lane; over a few genes per row those loads
cost more than the whole fitness arithmetic.  Read as int64 words, the same memory
gives two float32 genes per load, so half the loads:

- even ``n``: each row is ``n / 2`` words, gene ``k`` the low (``k`` even) or the high
  half of word ``k // 2``;
- odd ``n``: two rows are ``n`` words (genes ``0..n-1`` of the even row, then the odd
  row's); the fitness runs once over the even rows and once over the odd ones in the
  same kernel, and its two float32 results are packed into one int64 word per pair of
  rows, so the output is one contiguous store, read back as float32 in row order.

Bit casts only (little-endian halves): every value is the one the plain kernel
computes.  Only scalar genes (generated code that reads ``X[k]``, no slices) and the
one-value kinds; anything else, or a population these views cannot take (not
contiguous, an odd number of floats, misaligned), runs the plain rows kernel.
"""

from __future__ import annotations

import math
import re
import sys

__all__ = ["KINDS", "eligible", "words", "words_adapter", "unpack"]

#: The kinds with one value (or a pair of values) per individual.
KINDS = ("death", "penalty", "split")

_READ = re.compile(r"\bX\[([^\]]*)\]")


def eligible(problem, kind: str) -> bool:
    """Whether ``problem``'s generated code reads only single genes, ``X[k]``."""
    if kind not in KINDS or sys.byteorder != "little":
        return False
    src = problem.source
    return "grid(X" not in src and all(k.isdigit() for k in _READ.findall(src))


def words(pop, n: int):
    """The int64 view of a float32 ``(S, n)`` CPU population, or None: ``(S, n / 2)``
    for even ``n``, ``(S / 2, n)`` (pairs of rows) for odd ``n``."""
    import torch  # lazy: the NumPy path never imports torch

    if pop.dtype != torch.float32 or pop.device.type != "cpu" or pop.ndim != 2 or \
            not pop.is_contiguous() or pop.storage_offset() % 2 or pop.data_ptr() % 8 or \
            pop.numel() % 2 or pop.shape[0] < 4:
        return None
    if n % 2 == 0:
        return pop.view(torch.int64)
    return pop.reshape(-1).view(torch.int64).view(-1, n)


def unpack(out, n: int):
    """The float32 values, in row order, of what a words adapter returned."""
    if n % 2 == 0:
        return out
    import torch  # lazy: the NumPy path never imports torch

    if isinstance(out, tuple):
        return tuple(o.view(torch.float32) for o in out)
    return out.view(torch.float32)


class _Genes:
    """``X`` for the generated code: gene ``k`` of every individual of one parity as
    float32, cut from the int64 words (its genes start at float ``first`` of a row of
    words: 0 for the even rows, ``n`` for the odd ones)."""

    def __init__(self, W, first: int, n: int, torch):
        self.W, self.first, self.torch = W, first, torch
        self.shape = (n, W.shape[0])
        self.device = W.device

    def dim(self) -> int:
        return 2

    def __getitem__(self, k: int):
        j = self.first + k
        w = self.W[:, j >> 1]
        if j & 1:
            w = w >> 32
        return w.to(self.torch.int32).view(self.torch.float32)


def words_adapter(problem, kind: str):
    """The torch function of ``(W, P, eq_tol, weight)`` over the words of
    :func:`words`: the ``kind`` fitness, packed as int64 for odd ``n``."""
    import torch  # lazy: the NumPy path never imports torch

    n = problem.n
    fns = problem.lowering.functions("torch")
    death, fitness = fns["death"], fns["fitness"]

    def one(X, P, tol, weight):
        if kind == "death":
            return death(X, P, tol)
        f, cv = fitness(X, P, tol)
        if kind == "split":
            return f, cv
        return (f + weight * cv).nan_to_num(nan=math.inf, posinf=math.inf)

    def pack(lo, hi):
        low = lo.view(torch.int32).to(torch.int64) & 0xFFFFFFFF
        return (hi.view(torch.int32).to(torch.int64) << 32) | low

    if n % 2 == 0:
        def adapter(W, P, tol, weight):
            return one(_Genes(W, 0, n, torch), P, tol, weight)
    else:
        def adapter(W, P, tol, weight):
            even = one(_Genes(W, 0, n, torch), P, tol, weight)
            odd = one(_Genes(W, n, n, torch), P, tol, weight)
            if kind == "split":
                return pack(even[0], odd[0]), pack(even[1], odd[1])
            return pack(even, odd)

    adapter.__name__ = adapter.__qualname__ = f"{kind}_words"
    return adapter
