"""Memory budget: chunked evaluation gives the same results; out-of-memory is survived."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
import torch

import constropt
from constropt.engine._memory import Chunked, MemoryWarning, bytes_per_individual

x, y, z = sp.symbols("x y z")
F = x**2 + 2 * y**2 + 3 * z**2 + 4 * x * y - 5 * y * z
C = [x >= 1, y > 3, y <= 7, z < 0, x + y + z >= 3, x**2 + z**2 <= 10]
BOX = {x: (-25, 25), z: (-25, 25)}


def _fitness():
    p = constropt.Problem(F, C, maximize=True, bounds=BOX)
    return p, p.lowering.functions("torch")["fitness"]


def test_chunked_evaluation_equals_whole():
    p, fit = _fitness()
    X = torch.rand((3, 10_001), dtype=torch.float64) * 50 - 25
    P, tol = torch.zeros((0, 1), dtype=torch.float64), torch.tensor(1e-4, dtype=torch.float64)
    whole = fit(X, P, tol)
    per = bytes_per_individual(p, 8)
    chunked = Chunked(fit, per, budget=per * 999)
    assert chunked.chunk == 999
    parts = chunked(X, P, tol)
    for a, b in zip(whole, parts):
        assert torch.equal(a, b)


def test_out_of_memory_halves_the_chunk_and_warns():
    calls = []

    def fragile(X, *args):
        calls.append(X.shape[-1])
        if X.shape[-1] > 300:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2 GiB")
        return (X.sum(0), X.max(0).values)

    X = torch.arange(3 * 1000, dtype=torch.float64).reshape(3, 1000)
    chunked = Chunked(fragile, 1, budget=10**9)
    with pytest.warns(MemoryWarning, match="ran out of memory"):
        s, m = chunked(X)
    assert torch.equal(s, X.sum(0)) and torch.equal(m, X.max(0).values)
    assert chunked.chunk <= 300


def test_other_errors_are_not_swallowed():
    def broken(X, *args):
        raise ValueError("a real bug")

    with pytest.raises(ValueError, match="a real bug"):
        Chunked(broken, 1, 10)(torch.zeros((1, 100)))


def test_solve_under_a_tiny_memory_budget_matches_the_default():
    p = constropt.Problem(F, C, maximize=True, bounds=BOX)
    a = constropt.solve(p, seed=0, pop_size=2000, max_generations=30, polish=False)
    b = constropt.solve(p, seed=0, pop_size=2000, max_generations=30, polish=False,
                        memory_budget=50_000)
    np.testing.assert_array_equal(a.x_array, b.x_array)
    assert a.nfev == b.nfev


@pytest.mark.slow
def test_ten_million_individuals_on_cpu():
    p = constropt.Problem(F, C, maximize=True, bounds=BOX)
    res = constropt.solve(p, seed=0, pop_size=10_000_000, max_generations=1, compile=False,
                          dtype="float32")
    assert res.feasible and res.nfev >= 20_000_000
