"""Float32 rows read as whole vectors (``backend/_rowloads.py``) give the bits of
inductor's own loads.

- The gene loads of 3 genes (shuffles) and of 5 (blends and a permute) are rewritten
  (counted, with the FX graph cache off so the kernel is generated here) and the kernels
  give the values of the plain rows kernel (inductor's loads), bit for bit, at sizes with
  and without a tail of fewer than 8 rows, NaN and infinities among the genes;
- 4 genes (even: no rewrite) and non-contiguous populations (copied to contiguous rows
  first) give the same values too;
- the rewrite is scoped: a compile outside :func:`deinterleaved` keeps inductor's loads.
"""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

import constropt
from constropt.backend import _rowloads

torch = pytest.importorskip("torch")

pytestmark = [pytest.mark.compile,
              pytest.mark.filterwarnings("ignore::DeprecationWarning:torch"),
              pytest.mark.filterwarnings("ignore::constropt.CompileWarning")]

g = sp.symbols("g0:5")


def _has_avx2() -> bool:
    from torch._inductor import cpu_vec_isa

    return any(isinstance(v, cpu_vec_isa.VecAVX2) for v in cpu_vec_isa.valid_vec_isa_list())


def problem(n: int):
    """``n`` genes, each in the objective and in a constraint, with a transcendental and
    a division so that NaN and infinities travel."""
    v = g[:n]
    f = sum((k + 1) * v[k]**2 for k in range(n)) - 3 * v[0] * v[n - 1] + sp.sin(v[1])
    cons = [v[0] + v[n - 1] >= 1, v[1]**2 + v[n - 2] <= 7, v[n - 1] / (1 + v[0]**2) < 2]
    return constropt.Problem(f, cons, bounds={s: (-5, 5) for s in v})


def population(n: int, S: int, seed: int):
    pop = np.random.default_rng(seed).uniform(-6, 6, (S, n)).astype(np.float32)
    pop[0], pop[1, 0], pop[2, n - 1], pop[3, 1] = 0.0, np.nan, np.inf, -np.inf
    return torch.as_tensor(pop)


@pytest.fixture
def fresh(monkeypatch):
    """Kernels generated in this test, not read from inductor's FX graph cache."""
    monkeypatch.setattr(_rowloads, "INDUCTOR_OPTION",
                        {**_rowloads.INDUCTOR_OPTION, "fx_graph_cache": False})
    from constropt.problem import _fitness

    monkeypatch.setattr(_fitness, "INDUCTOR_OPTION", _rowloads.INDUCTOR_OPTION)


def _same(a, b):
    assert a.dtype == b.dtype == torch.float32 and a.shape == b.shape
    assert torch.equal(a.isnan(), b.isnan())
    assert torch.equal(a.nan_to_num(0.0), b.nan_to_num(0.0))


@pytest.mark.parametrize("n, rewritten", [(3, True), (5, True), (4, False)])
def test_rows_read_as_vectors_give_inductors_bits(fresh, n, rewritten):
    if not _has_avx2():
        pytest.skip("no AVX2 on this CPU")
    prob = problem(n)
    fast = prob.fitness("penalty", compile=True)
    fast._reads = "avx2"
    plain = prob.fitness("penalty", compile=True)
    plain._genes = False  # the rows kernel as inductor picks it (its own loads)
    before = _rowloads.loads_emitted()
    for S in (4099, 64, 13):  # a tail of 3 rows, none, and 5 (13 < 16: one vector)
        pop = population(n, S, S)
        got, want = fast(pop), plain(pop)
        _same(got, want)
        want_np = prob.fitness("penalty", compile=False)(pop.numpy())
        fin = np.isfinite(want_np)
        np.testing.assert_allclose(got.numpy()[fin], want_np[fin], rtol=1e-5, atol=1e-5)
    # inductor generates a kernel's loop more than once (its variants): a count > 0
    assert (_rowloads.loads_emitted() > before) == rewritten


@pytest.mark.parametrize("n", [3, 5])
def test_views_of_rows_are_read_from_a_contiguous_copy(n):
    if not _has_avx2():
        pytest.skip("no AVX2 on this CPU")
    prob = problem(n)
    fit = prob.fitness("death", compile=True)
    fit._reads = "avx2"
    wide = population(n + 2, 2003, 7)
    view = wide[:, :n]  # row stride n + 2: not the gene count
    assert not view.is_contiguous()
    _same(fit(view), fit(view.contiguous()))
    strided = population(n, 4006, 8)[::2]
    _same(fit(strided), fit(strided.contiguous()))


def test_the_rewrite_is_scoped_to_deinterleaved_calls(fresh):
    """A compile of rows outside :func:`deinterleaved` (here: any torch.compile of the
    user's) keeps inductor's loads."""
    _rowloads.deinterleaved(lambda: None, 3)  # installed
    before = _rowloads.loads_emitted()
    fn = torch.compile(lambda a: a[:, 0] * a[:, 1] - a[:, 2], dynamic=True,
                       options={"cpp.simdlen": 256, "fx_graph_cache": False})
    pop = population(3, 1001, 3)
    _same(fn(pop), pop[:, 0] * pop[:, 1] - pop[:, 2])
    assert _rowloads.loads_emitted() == before
