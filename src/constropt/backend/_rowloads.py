"""Row-major float32 genes read as whole vectors in inductor's AVX2 kernels.

A population of ``S`` rows of ``n`` float32 genes, ``(S, n)`` contiguous, puts gene
``c`` of row ``i`` at ``n i + c``.  Inductor reads such a strided gene into a vector of
8 lanes one float at a time (a scalar load and an insert per lane), which made the rows
kernel of the blog's example 2 take 1.5-2x the time of the same kernel over ``(n, S)``
columns.

For an odd ``n`` the 8 rows ``x0 .. x0+7`` are the ``8 n`` floats from ``n x0``: rows
0-3 are the first ``4 n``, rows 4-7 the next, and both are read in 4-float chunks into
the low and the high halves of 256-bit vectors.  In a half, lane ``j`` wants the float
at ``n j + c``, and those four positions have four different residues mod 4 (``n`` is
odd), so one blend per chunk puts each float in the lane of its residue and one in-half
permute puts them in row order (:func:`_odd`); for 3 genes, five in-half shuffles give
the three genes (:func:`_three`, the fastest of the schemes measured on 3 genes).  Every
read lies inside the 8 rows.  The values are the same floats, so the kernel's results
are the same bits (``tests/backend/test_rowloads.py``).

How: :func:`deinterleaved` wraps a compiled adapter; while it runs (and so while Dynamo
and inductor compile it, in this thread: a context variable), inductor's vectorized
``load`` of a graph input with a constant odd stride equal to the gene count, offset
``0 <= c < n``, in the main loop (8 float32 lanes, no tail, no mask) emits those
intrinsics; every other load, kernel and thread keeps inductor's code.  Written against
torch 2.13's C++ backend (``CppVecKernel``): where its internals differ, the load keeps
inductor's code (slower, the same values).  The caller passes contiguous ``(S, n)``
rows, so the stride equals the row's width.
"""

from __future__ import annotations

import contextvars
import functools

__all__ = ["deinterleaved", "INDUCTOR_OPTION", "loads_emitted"]

#: The genes per row of the compile in progress in this thread (0: none).
_GENES: contextvars.ContextVar[int] = contextvars.ContextVar("constropt_rowloads",
                                                             default=0)
_STATE = {"installed": False, "emitted": 0}

#: Set on the compiles whose loads this module may rewrite: inductor's FX graph cache keys
#: on its options, so a kernel compiled with the rewrite and one without never stand in
#: for each other (the option names kernels by their nodes, nothing else).
INDUCTOR_OPTION = {"cpp.descriptive_names": "inductor_node"}


def loads_emitted() -> int:
    """How many gene loads this process has emitted as whole vectors (for the tests)."""
    return _STATE["emitted"]


def deinterleaved(fn, genes: int):
    """``fn`` (a compiled adapter over contiguous ``(S, genes)`` float32 rows), its
    compiles reading the genes as whole vectors where :func:`_vector_load` applies."""
    _install()

    @functools.wraps(fn)
    def call(*args):
        token = _GENES.set(genes)
        try:
            return fn(*args)
        finally:
            _GENES.reset(token)

    return call


def _install() -> None:
    """Wrap ``CppVecKernel.load`` once per process (a no-op without that class)."""
    if _STATE["installed"]:
        return
    _STATE["installed"] = True
    try:
        from torch._inductor.codegen.cpp import CppVecKernel
    except ImportError:  # pragma: no cover - another torch layout: inductor's loads
        return
    inductor_load = CppVecKernel.load

    @functools.wraps(inductor_load)
    def load(self, name, index):
        genes = _GENES.get()
        if genes:
            try:
                got = _vector_load(self, name, index, genes)
            except Exception:  # noqa: BLE001 - internals of another torch: inductor's load
                got = None
            if got is not None:
                _STATE["emitted"] += 1
                return got
        return inductor_load(self, name, index)

    CppVecKernel.load = load


def _vector_load(self, name, index, genes):
    """The load of gene ``c`` of 8 rows from 4-float chunks and in-half shuffles
    (:func:`_three`, :func:`_odd`), or None where it does not apply (then inductor's own
    load)."""
    import sympy
    import torch
    from torch._inductor.codegen.cpp_utils import cexpr_index
    from torch._inductor.virtualized import V

    if genes < 3 or genes % 2 == 0 or self.tail_size or self.tiling_factor != 8 or \
            self._load_mask is not None or self.vec_isa.bit_width() != 256:
        return None
    if name not in V.graph.graph_inputs or V.graph.get_dtype(name) != torch.float32:
        return None
    index = self.rename_indexing(index)
    x0 = self.itervars[self.tiling_idx]
    if index.free_symbols != {x0}:
        return None
    stride, c = index.diff(x0), index.subs(x0, 0)
    if not (stride.is_Integer and c.is_Integer) or sympy.expand(index - stride * x0 - c) != 0:
        return None
    n, c = int(stride), int(c)
    if n != genes or not 0 <= c < n:
        return None
    rows = f"({self.args.input(name)} + {cexpr_index(n * x0)})"
    line = _three(rows, c) if n == 3 else _odd(rows, n, c)
    var = self.cse.generate(self.loads, line, dtype=torch.float32)
    var.update_on_args("load", (self, name, index), {})
    var.is_vec = True
    return var


def _halves(rows, a, b):
    """The 4 floats at ``a`` in the low half and the 4 at ``b`` in the high half."""
    return (f"_mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps({rows} + {a})), "
            f"_mm_loadu_ps({rows} + {b}), 1)")


def _shuffle(a, b, d0, d1, d2, d3):
    """Per half: ``a[d0], a[d1], b[d2], b[d3]``."""
    return f"_mm256_shuffle_ps({a}, {b}, {d3 << 6 | d2 << 4 | d1 << 2 | d0})"


def _three(rows, c):
    """Gene ``c`` of 8 rows of 3: the rows 0-3 in the low halves, 4-7 in the high ones
    (``m03 = x0 y0 z0 x1``, ``m14 = y1 z1 x2 y2``, ``m25 = z2 x3 y3 z3``), two shuffles
    shared by the genes (``x2 y2 x3 y3``, ``y0 z0 y1 z1``) and one per gene: five
    in-half shuffles for the three."""
    m03, m14, m25 = _halves(rows, 0, 12), _halves(rows, 4, 16), _halves(rows, 8, 20)
    xy = _shuffle(m14, m25, 2, 3, 1, 2)
    yz = _shuffle(m03, m14, 1, 2, 0, 1)
    got = (_shuffle(m03, xy, 0, 3, 0, 2), _shuffle(yz, xy, 0, 2, 1, 3),
           _shuffle(yz, m25, 1, 3, 0, 3))[c]
    return f"at::vec::Vectorized<float>({got})"


def _odd(rows, n, c):
    """Gene ``c`` of 8 rows of an odd ``n``: rows 0-3 (``4 n`` floats) in the low halves,
    4-7 in the high ones; lane ``j`` of a half wants the float at ``n j + c``, and those
    four positions have four different residues mod 4, so a blend per 4-float chunk puts
    each in the lane of its residue and one in-half permute puts them in row order."""
    positions = [n * j + c for j in range(4)]
    chunk = {p % 4: p // 4 for p in positions}  # residue lane -> its chunk of 4 floats
    ks = sorted(set(chunk.values()))
    expr = _halves(rows, 4 * ks[0], 4 * n + 4 * ks[0])
    for k in ks[1:]:
        mask = sum(1 << lane for lane, v in chunk.items() if v == k)
        expr = f"_mm256_blend_ps({expr}, {_halves(rows, 4 * k, 4 * n + 4 * k)}, " \
            f"{mask | mask << 4})"
    order = sum((p % 4) << (2 * j) for j, p in enumerate(positions))
    return f"at::vec::Vectorized<float>(_mm256_permute_ps({expr}, {order}))"
