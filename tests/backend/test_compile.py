"""torch.compile: one compiled step serves every solve; compiled and eager agree.

Compiling is slow on a small CPU (about 20 s cold, 5 s with a warm inductor cache), so
these tests are marked ``compile`` (deselect with ``-m 'not compile'``) and share one
compile per function: the first solve compiles, the next ones must not.

Recompiles are detected two ways: ``torch.compiler.set_stance("fail_on_recompile")``
makes any further compilation raise (torch >= 2.6), and dynamo's
``counters["stats"]["unique_graphs"]`` (one per compiled graph, recompiles included)
must not move.
"""

from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np
import pytest
import sympy as sp

import constropt
from constropt import benchmarks

torch = pytest.importorskip("torch")
from torch._dynamo.utils import counters  # noqa: E402

pytestmark = [pytest.mark.compile,
              pytest.mark.filterwarnings("ignore::DeprecationWarning:torch")]  # torch internals

x, y = sp.symbols("x y")
r = sp.Symbol("r", positive=True)

# (pop_size, seed, r): sizes, seeds and parameter values all change
RUNS = [(64, 0, 1.0), (100, 1, 2.0), (150, 2, 0.5), (256, 3, 3.0), (90, 4, 1.5)]


def _options() -> set:
    from constropt.solver._options import SolveOptions

    return {f.name for f in dataclasses.fields(SolveOptions)}


def _algorithms():
    """The GA (this engine's generation step) and the default algorithm, if another."""
    if "algorithm" not in _options():
        return ["ga"]
    from constropt.solver._options import SolveOptions

    default = SolveOptions().algorithm
    return ["ga"] if default == "ga" else ["ga", default]


def _graphs() -> int:
    return counters["stats"]["unique_graphs"]


def _breaks() -> int:
    return sum(counters["graph_break"].values())


@pytest.mark.slow  # subprocesses / compiles: 30-170 s on a loaded 2-core CI box
@pytest.mark.parametrize("algorithm", _algorithms())
def test_no_recompiles_across_solves(algorithm):
    problem = constropt.Problem(x + y, [x**2 + y**2 <= r**2],
                                bounds={x: (-5, 5), y: (-5, 5)}, parameters={r: 1.0})
    extra = {"algorithm": algorithm} if "algorithm" in _options() else {}

    def solve(S, seed, rv):
        return constropt.solve(problem, pop_size=S, seed=seed, parameters={r: rv},
                               compile=True, device="cpu", max_generations=60, **extra)

    graphs0, breaks0 = _graphs(), _breaks()
    results = [solve(*RUNS[0])]  # compiles (or finds the process-wide cache warm)
    graphs1, breaks1 = _graphs(), _breaks()
    if algorithm == "ga":
        assert breaks1 == breaks0, "graph breaks in the compiled GA step / evaluator"
    with torch.compiler.set_stance("fail_on_recompile"):
        for S, seed, rv in RUNS[1:]:
            results.append(solve(S, seed, rv))
        again = solve(*RUNS[3])
    assert _graphs() == graphs1, "a solve recompiled"
    assert graphs1 - graphs0 <= 4  # the step and the evaluator, compiled once each

    for (S, seed, rv), res in zip(RUNS, results, strict=True):
        assert res.success and res.feasible, (S, seed, rv, res.message)
        assert res.fun == pytest.approx(-rv * math.sqrt(2), rel=1e-6)  # the parameter took
        assert res.seed == seed
    assert results[0].timings["compile"] >= 0.0
    # same seed, same result under compile as well
    np.testing.assert_array_equal(again.x_array, results[3].x_array)
    assert again.nfev == results[3].nfev


def test_compiled_evaluator_agrees_with_eager_blog_example2():
    from constropt.backend._compile import compiled

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rec = benchmarks.get("blog_example2")
        problem = rec.problem()
    fns = problem.lowering.functions("torch")
    g = torch.Generator().manual_seed(0)
    S = 200_000
    X = torch.rand((3, S), generator=g, dtype=torch.float64) * 50 - 25
    # plus points on and near the feasible set, where the comparisons are decided
    near = torch.tensor(rec.x_star, dtype=torch.float64)[:, None] + \
        torch.randn((3, 4096), generator=g, dtype=torch.float64) * 0.05
    X = torch.cat([X, near, torch.tensor([[1.0, 1.0], [3.0, 7.0], [0.0, -1.0]],
                                         dtype=torch.float64)], dim=1)
    X32 = X.to(torch.float32)
    P = torch.zeros((0, 1), dtype=torch.float32)
    tol = torch.tensor(problem.eq_tol, dtype=torch.float32)

    f_e, cv_e = fns["fitness"](X32, P, tol)
    cfit = compiled(fns["fitness"], (problem.source, "fitness"))
    f_c, cv_c = cfit(X32, P, tol)
    assert f_c.shape == f_e.shape == (X.shape[1],) and f_c.dtype == torch.float32
    torch.testing.assert_close(f_c, f_e, rtol=2e-6, atol=1e-4)
    torch.testing.assert_close(cv_c, cv_e, rtol=2e-6, atol=1e-4)
    # feasibility decided identically (the violation is exactly 0 in both or in neither)
    assert torch.equal(cv_c == 0, cv_e == 0)
    feasible = cv_e == 0
    assert 0 < int(feasible.sum()) < X.shape[1]

    # the objective against the float64 NumPy reference of the original experiment
    from constropt.interface._quickbench import blog_numpy

    ref = blog_numpy(2)(X.T.numpy())  # -f where feasible, inf elsewhere
    ok = np.isfinite(ref) & feasible.numpy()
    np.testing.assert_allclose(f_c.numpy()[ok], ref[ok], rtol=1e-5, atol=1e-3)

    # a different population size reuses the compiled kernel
    graphs = _graphs()
    with torch.compiler.set_stance("fail_on_recompile"):
        f_small, _ = cfit(X32[:, :1000].contiguous(), P, tol)
    assert _graphs() == graphs
    torch.testing.assert_close(f_small, f_e[:1000], rtol=2e-6, atol=1e-4)


def test_compiled_solve_compiles_each_function_exactly_once():
    """The warm-up runs under the search's autograd mode (Dynamo guards on it: warming
    up with grad mode on compiled every function a second time for the search), and the
    initial population is evaluated eagerly, so a compiled solve compiles one graph (the
    generation step) once; later solves of any size and seed reuse it."""
    # a structure no other test uses: the process-wide compile cache is cold for it (the
    # step's code object may hold other problems' graphs: that is a new graph, not a
    # recompile of this one, so the fail-on-recompile stance is armed after the first solve)
    problem = constropt.Problem(x**2 + 3 * sp.cos(y) + x * y / 7, [x + y <= 1.25],
                                bounds={x: (-3, 3), y: (-3, 3)})
    graphs0 = _graphs()
    first = constropt.solve(problem, compile=True, device="cpu", seed=0, pop_size=64,
                            max_generations=40)
    assert _graphs() - graphs0 == 1, "the compiled solve compiled more than one graph"
    assert first.timings["compile"] > 0
    # (a stance, not a patched Dynamo config entry: undoing that patch removed the entry
    # for the rest of the process)
    with torch.compiler.set_stance("fail_on_recompile"):
        again = constropt.solve(problem, compile=True, device="cpu", seed=5, pop_size=96,
                                max_generations=40)
    assert _graphs() - graphs0 == 1  # no recompile (the stance would raise)
    for res in (first, again):
        assert res.feasible and np.isfinite(res.fun)


def test_each_structure_compiles_its_own_code_object():
    """Dynamo caches on the code object and runs it eagerly past ``recompile_limit``
    entries; every problem's step is the same closure code, so each compile key gets
    its own copy of the code (here with the limit lowered to 1: two closures over
    different constants must both compile)."""
    from constropt.backend._compile import compiled

    def make(c):
        def scaled(v):
            return v * c + 1.0
        return scaled

    name = "recompile_limit" if hasattr(torch._dynamo.config, "recompile_limit") \
        else "cache_size_limit"
    v = torch.arange(5, dtype=torch.float64)
    before = _graphs()
    with torch._dynamo.config.patch(**{name: 1}):
        out = [compiled(make(c), ("test own code", c))(v) for c in (2.0, 3.0)]
    assert _graphs() - before == 2  # one graph each; without the copy the second ran eagerly
    for c, o in zip((2.0, 3.0), out, strict=True):
        assert torch.equal(o, v * c + 1.0)
