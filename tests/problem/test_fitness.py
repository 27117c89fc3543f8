"""The public fitness function (``Problem.fitness``) and ``Problem.evaluate``'s fast path.

Values are checked against the original experiment's own NumPy fitness (example 2:
``where(all constraints, -f, inf)``, maximized; example 3: ``where(..., f, inf)``), on
random points and on points at the constraint boundaries, in both layouts; the eager
tests run the same generated code the compiled ones compile.  The compiled tests
(marked ``compile``) check that one compile serves every population size.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp

import constropt
from constropt import DeviceError, OptionError, ProblemError
from constropt.backend._rowloads import INDUCTOR_OPTION

torch = pytest.importorskip("torch")

# torch.compile's first use imports torch internals that warn about their own deprecations
quiet_torch = pytest.mark.filterwarnings("ignore::DeprecationWarning:torch")
# a compiled fitness warns before its first compile (once per process and input type, so
# whether a test sees it depends on what ran before; tests of the warning use a spy)
quiet_compile = pytest.mark.filterwarnings("ignore::constropt.CompileWarning")

x, y, z = sp.symbols("x y z")
F2_STAR = 263.1739479256
X2_STAR = (1.6496678, 7.0, -2.6978874)


@pytest.fixture(scope="module")
def blog2():
    f = x**2 + 2 * y**2 + 3 * z**2 + 4 * x * y - 5 * y * z
    cons = [x >= 1, y > 3, y <= 7, z < 0, x + y + z >= 3, x**2 + z**2 <= 10]
    return constropt.Problem(f, cons, maximize=True, bounds={x: (-25, 25), z: (-25, 25)})


@pytest.fixture(scope="module")
def blog3():
    f = sp.sin(x) + x**2 - 2 * sp.cos(y) + y**2 + z**2
    cons = [x >= 0, y >= 0, y <= sp.pi, z <= 5, x + z >= 1, sp.cos(y) + z >= 0.5]
    return constropt.Problem(f, cons, bounds={x: (0, 5), z: (-5, 5)})


def blog_numpy(example, pop):
    """The experiment's vectorized fitness, float64, rows (S, 3)."""
    x_, y_, z_ = pop[:, 0], pop[:, 1], pop[:, 2]
    if example == 2:
        mask = (x_ >= 1) & (y_ > 3) & (y_ <= 7) & (z_ < 0) & (x_ + y_ + z_ >= 3) & \
            (x_**2 + z_**2 <= 10)
        f = x_**2 + 2 * y_**2 + 3 * z_**2 + 4 * x_ * y_ - 5 * y_ * z_
        return np.where(mask, -f, np.inf)
    mask = (x_ >= 0) & (y_ >= 0) & (y_ <= np.pi) & (z_ <= 5) & (x_ + z_ >= 1) & \
        (np.cos(y_) + z_ >= 0.5)
    f = np.sin(x_) + x_**2 - 2 * np.cos(y_) + y_**2 + z_**2
    return np.where(mask, f, np.inf)


def population(S=4000, seed=0):
    """Uniform points in [-25, 25]^3 plus points at and near the example's boundaries."""
    rng = np.random.default_rng(seed)
    pop = rng.uniform(-25, 25, size=(S, 3))
    near = np.array(X2_STAR) + rng.normal(scale=0.05, size=(500, 3))
    edges = np.array([[1.0, 3.0, -1.0], [1.0, 3.5, 0.0], [2.0, 7.0, -1.0], [1.0, 5.0, -3.0],
                      [0.0, 0.0, 1.0], [0.5, np.pi, 5.0], [1.0, 0.0, 0.0]])
    return np.concatenate([pop, near, edges])


def _same(got, want):
    got = np.asarray(got, dtype=np.float64)
    np.testing.assert_array_equal(np.isfinite(got), np.isfinite(want))
    fin = np.isfinite(want)
    # float64 on both sides, same operations up to order: rounding-level differences
    np.testing.assert_allclose(got[fin], want[fin], rtol=1e-12, atol=1e-9)


@pytest.mark.parametrize("layout", ["rows", "columns"])
@pytest.mark.parametrize("example", [2, 3])
def test_death_fitness_is_the_experiments_fitness(example, layout, blog2, blog3):
    problem = blog2 if example == 2 else blog3
    pop = population()
    fit = problem.fitness("death", layout=layout, compile=False)
    data = torch.as_tensor(pop if layout == "rows" else np.ascontiguousarray(pop.T))
    got = fit(data)
    assert got.shape == (pop.shape[0],) and got.dtype == torch.float64
    _same(got.numpy(), blog_numpy(example, pop))


def test_sign_convention_maximize_is_negated_and_lower_is_better(blog2):
    fit = blog2.fitness(compile=False)
    # the published optimum rounded inward (it sits on x**2 + z**2 = 10)
    best = torch.tensor([[1.649667, 7.0, -2.697887]], dtype=torch.float64)
    assert float(fit(best)[0]) == pytest.approx(-F2_STAR, rel=1e-6)
    worse = torch.tensor([[1.5, 5.0, -1.0]], dtype=torch.float64)  # feasible, f = 110.25
    assert float(fit(worse)[0]) == pytest.approx(-110.25, rel=1e-12)
    assert float(fit(best)[0]) < float(fit(worse)[0])
    on_strict_edge = torch.tensor([[1.5, 5.0, 0.0]], dtype=torch.float64)  # z < 0 fails
    assert float(fit(on_strict_edge)[0]) == math.inf


def test_penalty_and_split_kinds(blog3):
    pop = torch.as_tensor(population(seed=1))
    f, cv = blog3.fitness("split", compile=False)(pop)
    ev = blog3.evaluate(pop, compile=False)
    np.testing.assert_allclose(f.numpy(), ev.fun.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(cv.numpy(), ev.violation.sum(dim=1).numpy(), rtol=1e-12,
                               atol=1e-12)
    assert bool(((cv == 0) == ev.feasible).all())
    pen = blog3.fitness("penalty", penalty=100.0, compile=False)(pop)
    np.testing.assert_allclose(pen.numpy(), (f + 100.0 * cv).numpy(), rtol=1e-12, atol=1e-12)
    death = blog3.fitness(compile=False)(pop)
    feas = ev.feasible
    np.testing.assert_array_equal(pen[feas].numpy(), death[feas].numpy())


def test_float32_and_numpy_inputs(blog2):
    pop = population(seed=2)
    want = blog_numpy(2, pop)
    fit = blog2.fitness(dtype=torch.float32, compile=False)
    got = fit(pop.astype(np.float32))  # NumPy in, NumPy out, no copy
    assert isinstance(got, np.ndarray) and got.dtype == np.float32
    finite = np.isfinite(want) & np.isfinite(got)
    # float32 rounding can flip a comparison within ~1e-6 of a boundary; away from the
    # boundaries feasibility agrees, and values agree to float32 precision
    flips = np.isfinite(want) != np.isfinite(got)
    assert flips.sum() <= 3
    np.testing.assert_allclose(got[finite], want[finite], rtol=2e-5, atol=1e-3)


def test_int8_genes_sum_exactly():
    """Example 1: 1,000 int8 genes in 1..24; the float32 accumulator is exact (< 2**24)."""
    g = sp.IndexedBase("g", shape=(1000,), integer=True)
    i = sp.Symbol("i", integer=True)
    problem = constropt.Problem(sp.Sum(g[i], (i, 0, 999)), [], bounds={g: (1, 24)})
    rng = np.random.default_rng(3)
    pop = rng.integers(1, 25, size=(300, 1000), dtype=np.int8)
    want = pop.sum(axis=1, dtype=np.int64)
    rows = problem.fitness(layout="rows", dtype=torch.float32, compile=False)
    cols = problem.fitness(layout="columns", dtype=torch.float32, compile=False)
    got_r = rows(torch.from_numpy(pop))
    got_c = cols(torch.from_numpy(np.ascontiguousarray(pop.T)))
    assert got_r.dtype == torch.float32
    np.testing.assert_array_equal(got_r.numpy().astype(np.int64), want)
    np.testing.assert_array_equal(got_c.numpy().astype(np.int64), want)


def test_int8_sums_beyond_float32_exactness_are_exact():
    """8-bit genes accumulate in int32: a sum past 2**24 (where float32 holds only even
    integers) is the exact integer rounded once to float32."""
    n = 140_000
    g = sp.IndexedBase("g", shape=(n,), integer=True)
    i = sp.Symbol("i", integer=True)
    problem = constropt.Problem(sp.Sum(g[i], (i, 0, n - 1)), [], bounds={g: (-128, 127)})
    pop = np.full((2, n), 127, dtype=np.int8)
    pop[1, :1001] = -128
    want = pop.sum(axis=1, dtype=np.int64)  # 17,780,000 and 17,524,745 (odd): > 2**24
    assert (want > 2**24).all() and want[1] % 2 == 1
    got = problem.fitness(layout="rows", dtype=torch.float32, compile=False)(pop)
    np.testing.assert_array_equal(got, want.astype(np.float32))


def test_bad_arguments_name_the_culprit(blog2):
    with pytest.raises(OptionError, match="kind"):
        blog2.fitness("deth")
    with pytest.raises(OptionError, match="layout"):
        blog2.fitness(layout="row-major")
    with pytest.raises(OptionError, match="dtype"):
        blog2.fitness(dtype=torch.int32)
    with pytest.raises(OptionError, match="penalty"):
        blog2.fitness("penalty", penalty=-1.0)
    with pytest.raises(OptionError, match="compile must be 'auto', True or False"):
        blog2.fitness(compile="yes")
    fit = blog2.fitness(compile=False)
    with pytest.raises(ProblemError, match=r"shape \(S, 3\)"):
        fit(torch.zeros(3, 10))
    with pytest.raises(ProblemError, match=r"shape \(3, S\)"):
        blog2.fitness(layout="columns", compile=False)(torch.zeros(10, 3))
    with pytest.raises(ProblemError, match="torch.Tensor or numpy.ndarray"):
        fit([[1.0, 2.0, 3.0]])
    if not torch.cuda.is_available():
        with pytest.raises(DeviceError, match="CUDA"):
            blog2.fitness(device="cuda")


@pytest.mark.compile
@quiet_torch
@quiet_compile
def test_compiled_fitness_compiles_once_for_every_population_size(blog2):
    from torch._dynamo.utils import counters

    # compile=True: the default "auto" would run these sizes as NumPy
    fit = blog2.fitness("death", layout="rows", dtype=torch.float64, compile=True)
    eager = blog2.fitness("death", layout="rows", dtype=torch.float64, compile=False)
    pops = [torch.as_tensor(population(S, seed=S)) for S in (3000, 1200, 5001)]
    out = fit(pops[0])  # compiles (or finds the process-wide cache warm)
    graphs = counters["stats"]["unique_graphs"]
    with torch.compiler.set_stance("fail_on_recompile"):
        outs = [out] + [fit(p) for p in pops[1:]]
        with torch.enable_grad():  # the caller's grad mode does not matter either
            fit(pops[1])
        fit(pops[2].numpy())
        one = fit(pops[0][:1])  # a single individual runs eagerly: no size-1 recompile
    want = float(outs[0][0])  # eager and compiled: rounding-level differences at most
    assert float(one[0]) == (want if math.isinf(want) else pytest.approx(want, rel=1e-12))
    assert counters["stats"]["unique_graphs"] == graphs, "a population size recompiled"
    for p, o in zip(pops, outs, strict=True):
        assert o.shape == (p.shape[0],)
        _same(o.numpy(), eager(p).numpy())
        _same(o.numpy(), blog_numpy(2, p.numpy()))


@pytest.mark.compile
@quiet_torch
def test_evaluate_fast_path_matches_eager(blog3):
    pop = torch.as_tensor(population(6000, seed=5))
    fast = blog3.evaluate(pop, compile=True)
    slow = blog3.evaluate(pop, compile=False)
    assert fast.violation.shape == slow.violation.shape == (pop.shape[0], 6)
    np.testing.assert_array_equal(fast.feasible.numpy(), slow.feasible.numpy())
    np.testing.assert_allclose(fast.fun.numpy(), slow.fun.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(fast.violation.numpy(), slow.violation.numpy(), rtol=1e-12,
                               atol=1e-12)
    with torch.compiler.set_stance("fail_on_recompile"):
        again = blog3.evaluate(pop[:2500], compile=True)
    np.testing.assert_array_equal(again.feasible.numpy(), slow.feasible[:2500].numpy())


# -- compile="auto": what runs where ----------------------------------------------------
@pytest.fixture
def spy(monkeypatch):
    """The fitness module's ``compiled`` replaced by the eager function, recording every
    call's population shape, thread count and inductor options (no torch.compile run)."""
    from constropt.problem import _fitness

    calls = []

    def fake_compiled(fn, key, options=None):
        def run(pop, *args):
            calls.append((tuple(pop.shape), torch.get_num_threads(), options))
            return fn(pop, *args)
        return run

    monkeypatch.setattr(_fitness, "compiled", fake_compiled)
    monkeypatch.setattr(_fitness, "_COMPILED_INPUTS", set())
    return calls


def test_auto_is_the_default_numpy_below_the_threshold_compiled_above(blog2, spy):
    from constropt.problem._fitness import AUTO_COMPILE_WORK

    fit = blog2.fitness()
    assert fit.compile == "auto"
    small = population(5000)  # 5,507 x 3 numbers
    got = fit(small)
    assert isinstance(got, np.ndarray) and got.dtype == np.float64
    _same(got, blog_numpy(2, small))
    got_t = fit(torch.as_tensor(small))
    assert isinstance(got_t, torch.Tensor) and got_t.dtype == torch.float64
    _same(got_t.numpy(), blog_numpy(2, small))
    assert spy == [], "a small call went to the compiled kernel"
    big = np.random.default_rng(4).uniform(-25, 25, (AUTO_COMPILE_WORK // 3, 3))
    with pytest.warns(constropt.CompileWarning, match=r" s for [\d,]+ bytes of generated code "
                      "with a cold compile cache"):
        got = fit(big)
    assert isinstance(got, np.ndarray) and len(spy) == 1
    _same(got, blog_numpy(2, big))
    fit(big)  # no second warning (warnings are errors here)
    assert len(spy) == 2
    # rows are compiled with inductor's tiling heuristic off (vectorized gathers)
    assert spy[0][2] == {"cpp.enable_tiling_heuristics": False}


def test_the_compile_warning_states_the_estimate_for_this_source(blog2, blog3, spy,
                                                                 monkeypatch):
    """The warning's number is the compile-cost estimate for this problem's generated
    source (expected_compile_seconds, the fitness alone), not a fixed range."""
    from constropt.backend._compile import expected_compile_seconds
    from constropt.problem import _fitness

    asked = []

    def estimate(source_bytes, step=False):
        asked.append((source_bytes, step))
        return 4321.0

    monkeypatch.setattr(_fitness, "expected_compile_seconds", estimate)
    pop = torch.as_tensor(population(100, seed=3)[:100])
    size = f"{len(blog2.source):,} bytes"
    first = blog2.fitness(compile=True)  # kept: the warning's key holds its kernel's id
    with pytest.warns(constropt.CompileWarning, match=f"up to about 4321 s for {size}"):
        first(pop)
    assert asked == [(len(blog2.source), False)]
    monkeypatch.setattr(_fitness, "expected_compile_seconds", expected_compile_seconds)
    want = f"about {expected_compile_seconds(len(blog3.source)):.0f} s for " \
        f"{len(blog3.source):,} bytes"
    second = blog3.fitness(compile=True)
    with pytest.warns(constropt.CompileWarning, match=want):
        second(pop)
    assert first is not second


@pytest.mark.parametrize("reads", ["avx2", "words"])
def test_float32_rows_compile_as_row_vectors_answers(blog2, spy, monkeypatch, reads):
    """Float32 CPU rows: the plain rows kernel with 256-bit vectors (inductor picks AVX2
    for this compile only) where row_vectors() answers "avx2", the int64 words kernel
    where it answers "words"; float64 rows keep inductor's own pick."""
    from constropt.problem import _fitness

    monkeypatch.setattr(_fitness, "row_vectors", lambda: reads)
    fit = blog2.fitness()
    S = 120_000  # 360,000 numbers: compiled
    big = np.random.default_rng(6).uniform(-25, 25, (S, 3))
    pop = torch.as_tensor(big, dtype=torch.float32)
    with pytest.warns(constropt.CompileWarning):
        got = fit(pop).numpy()
    want = blog2.fitness(compile=False)(pop.numpy())  # the NumPy path, float32
    np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
    fin = np.isfinite(want)
    # float32 on both sides, the same operations: the same roundings
    np.testing.assert_array_equal(got[fin], want[fin])
    shape, _, options = spy[-1]
    if reads == "avx2":
        assert shape == (S, 3)
        assert options == {"cpp.enable_tiling_heuristics": False, "cpp.simdlen": 256,
                           **INDUCTOR_OPTION}
    else:
        assert shape == (S // 2, 3)  # pairs of rows as int64 words
        assert options == {"cpp.enable_tiling_heuristics": False}
    with pytest.warns(constropt.CompileWarning):
        fit(big)  # float64: as inductor picks
    assert spy[-1][2] == {"cpp.enable_tiling_heuristics": False}


def test_small_compiled_calls_run_on_one_thread(blog3, spy):
    """compile=True at 100 points: a variant compiled for one thread (Dynamo guards on
    the thread count, so a thread change around the parallel kernel would recompile)."""
    saved = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        fit = blog3.fitness(compile=True)
        pop = torch.as_tensor(population(100, seed=9)[:100])
        with pytest.warns(constropt.CompileWarning, match="one thread"):
            fit(pop)
        fit(pop)
        big = torch.as_tensor(np.random.default_rng(5).uniform(-25, 25, (200_000, 3)))
        with pytest.warns(constropt.CompileWarning):
            fit(big)  # the parallel kernel, compiled with every thread
        fit(big)
        assert [t for _, t, _ in spy] == [1, 1, 2, 2]
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(saved)


def test_small_numpy_calls_never_import_torch():
    import subprocess
    import sys

    code = ("import sys, numpy as np, sympy as sp, constropt\n"
            "x, y = sp.symbols('x y')\n"
            "p = constropt.Problem(x**2 + y, [x + y <= 1], bounds={x: (-1, 1), y: (-1, 1)})\n"
            "v = p.fitness()(np.full((100, 2), 0.25))\n"
            "assert 'torch' not in sys.modules, 'torch was imported'\n"
            "assert v.shape == (100,) and v[0] == 0.3125, v[0]\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]


@pytest.mark.parametrize("rows, exact_float", [(1000, True), (65_793, True),
                                               (65_794, False), (70_000, False)])
def test_8bit_sums_accumulate_in_float32_only_where_exact(rows, exact_float):
    """65,793 genes of 255 sum to 16,777,215 < 2**24: float32 holds every partial sum;
    from 65,794 on an integer accumulator keeps the sum exact (then rounded once)."""
    from constropt.lowering import _rt_numpy, _rt_torch

    assert _rt_torch._exact_in(torch.float32, rows) is exact_float
    block = np.full((rows, 3), 255, dtype=np.uint8)
    block[:, 1] = 254
    block[::7, 2] = 1  # an odd total beyond 2**24
    want = block.sum(axis=0, dtype=np.int64).astype(np.float32)
    got_t = _rt_torch.bsum(torch.from_numpy(block), torch.float32)
    got_n = _rt_numpy.bsum(block, np.dtype(np.float32))
    np.testing.assert_array_equal(got_t.numpy(), want)
    np.testing.assert_array_equal(got_n, want)


@pytest.mark.compile
@quiet_torch
@quiet_compile
def test_a_tensor_subclass_compiles_as_a_plain_tensor(blog3):
    """EvoTorch's ReadOnlyTensor: torch.compile of the subclass failed in Dynamo
    ("source must be None for ValueMutationNew/AttributeMutationNew")."""
    tools = pytest.importorskip("evotorch.tools")
    pop = torch.as_tensor(population(3000, seed=7), dtype=torch.float32)
    ro = tools.as_read_only_tensor(pop)
    assert type(ro) is not torch.Tensor
    got = blog3.fitness(compile=True)(ro)
    assert type(got) is torch.Tensor and got.shape == (pop.shape[0],)
    want = blog3.fitness(compile=False)(pop.numpy())  # the same float32 arithmetic
    flips = np.isfinite(got.numpy()) != np.isfinite(want)
    assert flips.sum() <= 2  # vectorized cos may round differently at a boundary
    fin = np.isfinite(want) & np.isfinite(got.numpy())
    np.testing.assert_allclose(got.numpy()[fin], want[fin], rtol=1e-5, atol=1e-5)
