"""The fitness's two speed paths give the values of the plain code, bit for bit.

- NumPy: the generated source with its float literals hoisted into 0-d arrays of the
  working dtype (``problem/_fitness_numpy.py``) against the same source run with Python
  float literals, on every problem of the collection's kind of expressions used here;
  NumPy's floating-point error state is restored and no warning reaches the caller.
- Compiled CPU float32 rows read as int64 words (``problem/_fitness_words.py``) or with
  256-bit AVX2 vectors (``row_vectors``) against the plain rows kernel, for an odd and
  an even number of genes, and every kind they serve; populations the words cannot view
  fall back to the plain kernel.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import sympy as sp

import constropt
from constropt.lowering._codegen import compile_source
from constropt.problem import _fitness_numpy, _fitness_words

x, y, z, w = sp.symbols("x y z w")

# torch.compile's first use imports torch internals that warn about their own deprecations
quiet_torch = pytest.mark.filterwarnings("ignore::DeprecationWarning:torch")
quiet_compile = pytest.mark.filterwarnings("ignore::constropt.CompileWarning")


def blog2():
    return constropt.Problem(
        x**2 + 2 * y**2 + 3 * z**2 + 4 * x * y - 5 * y * z,
        [x >= 1, y > 3, y <= 7, z < 0, x + y + z >= 3, x**2 + z**2 <= 10],
        maximize=True, bounds={x: (-25, 25), z: (-25, 25)})


def awkward():
    """Literals that round in float32 (0.1, pi), one beyond float32 (1e300), a tiny one,
    a negated one, an equality (eq_tol) and NaN-producing helpers (sqrt, log, 1/x)."""
    return constropt.Problem(
        0.1 * x**3 - sp.pi * sp.sqrt(y) + sp.log(z) / x + 1e300 * w**2 - 1e-30 * y,
        [x + y <= 2.5, sp.Eq(x * z, 0.3), y - 0.7 * w >= -1.5, x**2 + w**2 < 9],
        bounds={x: (-3, 3), y: (-2, 5), z: (-1, 4), w: (-3, 3)})


def points(problem, S, seed, dtype):
    rng = np.random.default_rng(seed)
    X = rng.uniform(problem.lower - 1, problem.upper + 1, size=(S, problem.n))
    X[:4] = 0.0
    X[4] = -0.0
    X[5, 0], X[6, 1], X[7, -1] = np.inf, np.nan, -np.inf
    return X.astype(dtype)


def test_hoisting_names_float_literals_and_leaves_everything_else():
    src = ("def f(X, P, eq_tol):\n    dtype = P.dtype\n    x0 = cast(X[0], dtype)\n"
           "    t = powi(x0, 3) * -2.5 + where(x0 > 0.0, 1.0, -inf, dtype) - nan\n"
           "    return out(t + 2.5, X, dtype)\n")
    text, values = _fitness_numpy.hoist_literals(src)
    assert sorted(map(repr, values.values())) == ["-2.5", "-inf", "0.0", "1.0", "2.5", "nan"]
    assert "2.5" not in text and "inf" not in text and "nan" not in text
    assert "X[0]" in text and "powi(x0, 3)" in text  # integers stay literals
    assert len(values) == 6  # 2.5 twice: one name


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("make", [blog2, awkward])
def test_hoisted_literals_give_the_same_bits_and_dtypes(make, dtype):
    problem = make()
    plain = compile_source(problem.source, _fitness_numpy._RUNTIME, "plain-literals")
    hoisted = _fitness_numpy.numpy_functions(problem, dtype)
    X = points(problem, 3000, 1, dtype).T
    P = problem.parameter_vector(None).astype(dtype).reshape(-1, 1)
    tol = np.array(problem.eq_tol, dtype=dtype)
    with np.errstate(all="ignore"):
        for name in ("death", "fitness", "report", "leaves"):
            args = (X, P) if name == "leaves" else (X, P, problem.eq_tol)
            want = plain[name](*args)
            got = hoisted[name](*(args if name == "leaves" else (X, P, tol)))
            got, want = (got, want) if isinstance(got, tuple) else ((got,), (want,))
            for g, v in zip(got, want, strict=True):
                assert g.dtype == v.dtype == np.dtype(dtype) and g.shape == v.shape
                np.testing.assert_array_equal(g, v)  # NaN where NaN
                np.testing.assert_array_equal(np.signbit(g), np.signbit(v))


@pytest.mark.parametrize("kind", ["death", "penalty", "split", "constraints"])
def test_numpy_calls_leak_no_warning_and_keep_the_error_state(kind):
    problem = awkward()
    fit = problem.fitness(kind)
    pop = points(problem, 500, 2, np.float32) * np.float32(1e20)  # overflow in float32
    before = np.geterr()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = fit(pop)
    assert np.geterr() == before
    first = out[0] if isinstance(out, tuple) else out
    assert first.shape[0] == 500 and np.isinf(first).any()


def test_words_need_a_view_they_can_take():
    torch = pytest.importorskip("torch")
    pop = torch.zeros(10, 3)
    W = _fitness_words.words(pop, 3)
    assert W.dtype == torch.int64 and W.shape == (5, 3) and W.data_ptr() == pop.data_ptr()
    assert _fitness_words.words(torch.zeros(10, 4), 4).shape == (10, 2)
    assert _fitness_words.words(torch.zeros(9, 3), 3) is None  # odd number of floats
    assert _fitness_words.words(torch.zeros(10, 3, dtype=torch.float64), 3) is None
    assert _fitness_words.words(torch.zeros(3, 10).T, 3) is None  # not contiguous
    assert _fitness_words.words(torch.zeros(21, 3)[1:], 3) is None  # misaligned start
    g = sp.IndexedBase("g", shape=(4,))
    i = sp.Symbol("i", integer=True)
    vector = constropt.Problem(sp.Sum(g[i], (i, 0, 3)), [], bounds={g: (0, 1)})
    assert not _fitness_words.eligible(vector, "death")  # reads X[0:4]
    assert not _fitness_words.eligible(blog2(), "constraints")
    assert _fitness_words.eligible(blog2(), "split")


def _has_avx2() -> bool:
    from torch._inductor import cpu_vec_isa

    return any(isinstance(v, cpu_vec_isa.VecAVX2) for v in cpu_vec_isa.valid_vec_isa_list())


@pytest.mark.compile
@quiet_torch
@quiet_compile
@pytest.mark.parametrize("kind", ["death", "penalty", "split"])
@pytest.mark.parametrize("make", [blog2, awkward])  # 3 genes (pairs of rows), 4 (words)
@pytest.mark.parametrize("reads", ["words", "avx2"])
def test_float32_rows_as_words_or_avx2_give_the_plain_kernels_bits(make, kind, reads):
    torch = pytest.importorskip("torch")
    if reads == "avx2" and not _has_avx2():
        pytest.skip("no AVX2 on this CPU")
    problem = make()
    fast = problem.fitness(kind, compile=True)
    fast._reads = reads  # what row_vectors() answers on a CPU of that kind
    plain = problem.fitness(kind, compile=True)
    plain._genes = False  # the rows kernel as inductor picks it
    for S in (3000, 1202, 777):  # 777 rows of 3: an odd count of floats, no words
        pop = torch.as_tensor(points(problem, S, S, np.float32))
        if S == 1202:  # a second size reuses the kernel
            with torch.compiler.set_stance("fail_on_recompile"):
                got = fast(pop)
        else:
            got = fast(pop)
        want = plain(pop)
        got, want = (got, want) if kind == "split" else ((got,), (want,))
        for g, v in zip(got, want, strict=True):
            assert g.dtype == torch.float32 and g.shape == (S,) and g.is_contiguous()
            assert torch.equal(g.isnan(), v.isnan())
            assert torch.equal(g.nan_to_num(0.0), v.nan_to_num(0.0))
    # keys (one thread?, reads): the words / AVX2 kernel served the fast one only; the
    # words' fallback (777 rows of 3) is the plain kernel
    assert {r for _, r in plain._compiled} == {""}
    assert {r for _, r in fast._compiled} == (
        {reads, ""} if reads == "words" and problem.n % 2 else {reads})
