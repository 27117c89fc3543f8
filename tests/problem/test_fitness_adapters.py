"""Per-constraint values (``fitness(kind="constraints")``, ``Problem.to_pymoo``) and the
GA-library recipes of docs/fitness.md (PyGAD, DEAP, pymoo, EvoTorch), each run as written.

The recipes assert that they reach the known optimum of the original experiment's
example 2 or 3 (see /work/shared/BASELINES.md) within their stated tolerance.
"""

from __future__ import annotations

import math
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
import sympy as sp

import constropt

DOC = Path(__file__).resolve().parents[2] / "docs" / "fitness.md"
RECIPE = re.compile(r"<!--\s*recipe:\s*(\w+)\s*-->\s*\n```python\n(.*?)^```", re.S | re.M)

x, y, z = sp.symbols("x y z")


def recipes() -> dict:
    return {name: code for name, code in RECIPE.findall(DOC.read_text())}


def test_the_page_has_the_four_recipes():
    assert set(recipes()) == {"setup", "pygad", "deap", "pymoo", "evotorch"}


@pytest.mark.parametrize("name, module", [("pygad", "pygad"), ("deap", "deap"),
                                          ("pymoo", "pymoo"), ("evotorch", "evotorch")])
def test_recipe_reaches_the_known_optimum(name, module, monkeypatch, tmp_path):
    pytest.importorskip(module)
    monkeypatch.chdir(tmp_path)  # nothing a library writes lands in the repository
    code = recipes()
    namespace = {"__name__": f"__recipe_{name}__"}
    with warnings.catch_warnings():
        # the libraries' own deprecation notices are theirs; constropt's warnings stay
        # errors (a recipe must not need to silence them)
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        warnings.filterwarnings("ignore", category=FutureWarning)
        exec(compile(code["setup"], "fitness.md setup", "exec"), namespace)  # noqa: S102
        exec(compile(code[name], f"fitness.md {name}", "exec"), namespace)  # noqa: S102


@pytest.fixture(scope="module")
def blog2():
    return constropt.Problem(
        x**2 + 2 * y**2 + 3 * z**2 + 4 * x * y - 5 * y * z,
        [x >= 1, y > 3, y <= 7, z < 0, x + y + z >= 3, x**2 + z**2 <= 10],
        maximize=True, bounds={x: (-25, 25), z: (-25, 25)})


def blog2_constraints(p):
    """Example 2's constraints as g <= 0, by hand (strict ones: boundary counts > 0)."""
    x_, y_, z_ = p[:, 0], p[:, 1], p[:, 2]
    strict = [3 - y_, z_]
    g = [1 - x_, strict[0], y_ - 7, strict[1], 3 - x_ - y_ - z_, x_**2 + z_**2 - 10]
    g[1] = np.where(g[1] < 0, g[1], np.maximum(g[1], 1e-30))
    g[3] = np.where(g[3] < 0, g[3], np.maximum(g[3], 1e-30))
    return np.stack(g, axis=1)


def test_constraints_kind_is_g_per_constraint(blog2):
    rng = np.random.default_rng(0)
    pop = np.concatenate([rng.uniform(-25, 25, (2000, 3)),
                          [[1.0, 3.0, -1.0], [1.0, 3.5, 0.0], [2.0, 7.0, -1.0]]])
    want = blog2_constraints(pop)
    G = blog2.fitness("constraints")(pop)
    assert isinstance(G, np.ndarray) and G.shape == (pop.shape[0], 6)
    np.testing.assert_allclose(G, want, rtol=1e-12, atol=1e-12)
    # on a strict boundary: violated (> 0); on a closed one: satisfied (== 0)
    assert G[-3, 1] > 0 and G[-2, 3] > 0 and G[-1, 2] == 0
    # g <= 0 everywhere is exactly feasibility
    feasible = blog2.evaluate(pop).feasible
    np.testing.assert_array_equal((G <= 0).all(axis=1), feasible)
    cols = blog2.fitness("constraints", layout="columns")(np.ascontiguousarray(pop.T))
    assert cols.shape == (6, pop.shape[0])
    np.testing.assert_allclose(cols.T, want, rtol=1e-12, atol=1e-12)


def test_constraints_kind_torch_matches_numpy(blog2):
    torch = pytest.importorskip("torch")
    pop = np.random.default_rng(1).uniform(-25, 25, (500, 3))
    want = blog2.fitness("constraints")(pop)
    # CUDA-free: the eager torch path is what a small CUDA call runs
    fit = blog2.fitness("constraints")
    eager = fit._run_torch(torch.as_tensor(pop), compiled=False, work=pop.size)
    assert isinstance(eager, torch.Tensor) and eager.shape == (500, 6)
    np.testing.assert_allclose(eager.numpy(), want, rtol=1e-12, atol=1e-12)
    small = fit(torch.as_tensor(pop))
    assert isinstance(small, torch.Tensor)
    np.testing.assert_allclose(small.numpy(), want, rtol=1e-12, atol=1e-12)


@pytest.fixture(scope="module")
def mixed():
    """An Or, an And, an equality and a strict inequality: every node of the tree."""
    cons = [sp.Or(x <= -1, x >= 1), sp.Eq(x + y, 1), sp.And(y <= 2, y >= -2), x * y < 4]
    return constropt.Problem(x**2 + y**2, cons, bounds={x: (-5, 5), y: (-5, 5)},
                             eq_tol=1e-3)


def test_constraints_kind_composes_and_or_and_equalities(mixed):
    pts = np.array([[0.0, 1.0], [2.0, -1.0], [1.5, -0.4995], [-3.0, 4.0], [2.0, 2.0]])
    G = mixed.fitness("constraints")(pts)
    x_, y_ = pts[:, 0], pts[:, 1]
    want = np.stack([np.minimum(x_ + 1, 1 - x_), np.abs(x_ + y_ - 1) - 1e-3,
                     np.maximum(y_ - 2, -2 - y_), x_ * y_ - 4], axis=1)
    want[:, 3] = np.where(want[:, 3] < 0, want[:, 3], np.maximum(want[:, 3], 1e-30))
    np.testing.assert_allclose(G, want, rtol=1e-12, atol=1e-15)
    assert G[4, 3] == 1e-30  # x * y == 4 on the strict boundary: violated
    np.testing.assert_array_equal((G <= 0).all(axis=1), mixed.evaluate(pts).feasible)


def test_to_pymoo_splits_g_and_h_and_uses_the_propagated_box(mixed, blog2):
    pytest.importorskip("pymoo")
    pm = mixed.to_pymoo()
    assert (pm.n_var, pm.n_obj, pm.n_ieq_constr, pm.n_eq_constr) == (2, 1, 3, 1)
    np.testing.assert_array_equal(pm.xl, mixed.lower)
    np.testing.assert_array_equal(pm.xu, mixed.upper)
    pts = np.array([[0.0, 1.0], [2.0, -1.0], [1.5, -0.4995]])
    out = pm.evaluate(pts, return_as_dictionary=True)
    np.testing.assert_allclose(out["F"][:, 0], pts[:, 0]**2 + pts[:, 1]**2, rtol=1e-15)
    G = mixed.fitness("constraints")(pts)
    np.testing.assert_allclose(out["G"], G[:, [0, 2, 3]], rtol=1e-15)
    np.testing.assert_allclose(out["H"][:, 0], pts[:, 0] + pts[:, 1] - 1, rtol=1e-12,
                               atol=1e-15)
    # maximize: F = -f; the box is the propagated one, not the given [-25, 25]
    pm2 = blog2.to_pymoo()
    assert (pm2.n_ieq_constr, pm2.n_eq_constr) == (6, 0)
    np.testing.assert_allclose(pm2.xl, [1.0, 3.0, -3.0])
    np.testing.assert_allclose(pm2.xu, [math.sqrt(10), 7.0, 0.0])
    F = pm2.evaluate(np.array([[1.5, 5.0, -1.0]]), return_as_dictionary=True)["F"]
    assert F[0, 0] == pytest.approx(-110.25, rel=1e-14)
