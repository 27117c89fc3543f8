"""Benchmark: lowering cost and the classic fitness benchmark through constropt.

1,000 integer genes in [1, 24], fitness = the sum of the genes, a population of
900,000 stored as int8.  Prints the time to build the Problem and generate its code,
then the evaluation time of the population through constropt's generated torch
function (eager and ``torch.compile``d; constropt's variable-major layout, genes x
population) against ``np.sum(pop, axis=1)`` on the same int8 data in NumPy's row-major
layout (population x genes), as a markdown table of medians with ratios to ``np.sum``.

Run: ``PYTHONPATH=src python benchmarks/lowering.py [--population N] [--genes N]``
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np


def _median_times(rows, repeats: int) -> dict:
    """Median wall time of each ``(name, fn)``, the rows interleaved round by round."""
    times: dict = {name: [] for name, _ in rows}
    for _ in range(repeats):
        for name, fn in rows:
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    return {name: statistics.median(ts) for name, ts in times.items()}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--population", type=int, default=900_000)
    ap.add_argument("--genes", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args(argv)
    S, N = args.population, args.genes

    t0 = time.perf_counter()
    import sympy as sp
    import torch

    import constropt
    t_import = time.perf_counter() - t0

    x = sp.IndexedBase("x", shape=(N,), integer=True)
    i = sp.Symbol("i", integer=True)
    t0 = time.perf_counter()
    problem = constropt.Problem(sp.Sum(x[i], (i, 0, N - 1)), bounds={x: (1, 24)},
                                maximize=True)
    t_build = time.perf_counter() - t0
    t0 = time.perf_counter()
    fitness = problem.lowering.functions("torch")["fitness"]
    fitness_np = problem.lowering.functions("numpy")["fitness"]
    t_exec = time.perf_counter() - t0
    assert f"bsum(X[0:{N}], dtype)" in problem.source

    rng = np.random.default_rng(0)
    pop = rng.integers(1, 25, size=(S, N), dtype=np.int8)  # row-major, for np.sum
    popT = np.ascontiguousarray(pop.T)                      # variable-major, for constropt
    X = torch.from_numpy(popT)
    P = torch.zeros((0, 1), dtype=torch.float32)
    tol = torch.tensor(1e-4, dtype=torch.float32)
    ref = np.sum(pop, axis=1)

    t0 = time.perf_counter()
    compiled = torch.compile(fitness, dynamic=True)
    out_c = compiled(X, P, tol)[0]
    t_compile = time.perf_counter() - t0
    out_e = fitness(X, P, tol)[0]
    out_n = fitness_np(popT, np.zeros((0, 1), dtype=np.float32), 1e-4)[0]
    for out in (out_c.numpy(), out_e.numpy(), out_n):
        np.testing.assert_array_equal(-out, ref)

    rows = [
        ("np.sum(pop, axis=1)", lambda: np.sum(pop, axis=1)),
        ("np.sum(pop, axis=1, dtype=np.int32)", lambda: np.sum(pop, axis=1, dtype=np.int32)),
        ("constropt torch eager (float32)", lambda: fitness(X, P, tol)),
        ("constropt torch.compile (float32)", lambda: compiled(X, P, tol)),
        ("constropt NumPy backend (float32)",
         lambda: fitness_np(popT, np.zeros((0, 1), dtype=np.float32), 1e-4)),
    ]
    times = _median_times(rows, args.repeats)
    base = times["np.sum(pop, axis=1)"]

    print(f"# constropt lowering benchmark: {N} int8 genes, population {S:,}, "
          f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    print()
    print(f"- import sympy + torch + constropt: {t_import:.2f} s")
    print(f"- build Problem (validate, bounds, lower, generate code): {t_build:.3f} s")
    print(f"- exec generated source (torch + NumPy namespaces): {t_exec:.3f} s")
    print(f"- first torch.compile call (compile + run): {t_compile:.1f} s")
    print()
    print(f"| evaluation of {S:,} x {N} int8 | median (s) | vs np.sum(pop, axis=1) |")
    print("|---|---:|---:|")
    for name, _ in rows:
        t = times[name]
        ratio = ("baseline" if name == "np.sum(pop, axis=1)" else
                 f"{base / t:.2f}x faster" if t <= base else f"{t / base:.2f}x slower")
        print(f"| {name} | {t:.4f} | {ratio} |")


if __name__ == "__main__":
    main()
