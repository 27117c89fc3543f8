"""``constropt bench``: a quick side-by-side of fitness evaluation on the blog examples.

For examples 2 and 3 at a population of 900,000: the original experiment's NumPy code
(float64, row-major ``(S, 3)``), and constropt's public fitness function
(``problem.fitness("death", layout="columns")``) over a variable-major float32
population, eager and compiled.  Medians of repeated runs, with
the ratio to NumPy.  The full benchmark lives in ``benchmarks/blog_table.py``.
"""

from __future__ import annotations

import statistics
import time
import warnings

import numpy as np

from .. import benchmarks
from ..backend._devices import resolve_device

__all__ = ["median_time", "blog_numpy", "quick_table"]


def median_time(fn, repeats: int, sync=None) -> float:
    """Median wall time of ``fn()`` in seconds over ``repeats`` runs (after one warm-up)."""
    fn()
    times = []
    for _ in range(repeats):
        if sync:
            sync()
        t0 = time.perf_counter()
        fn()
        if sync:
            sync()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def blog_numpy(example: int):
    """The original experiment's vectorized NumPy fitness for example 2 or 3."""
    if example == 2:
        def fitness(pop):
            x, y, z = pop[:, 0], pop[:, 1], pop[:, 2]
            mask = (x >= 1) & (y > 3) & (y <= 7) & (z < 0) & (x + y + z >= 3) & \
                (x**2 + z**2 <= 10)
            f = x**2 + 2 * y**2 + 3 * z**2 + 4 * x * y - 5 * y * z
            return np.where(mask, -f, np.inf)
    else:
        def fitness(pop):
            x, y, z = pop[:, 0], pop[:, 1], pop[:, 2]
            mask = (x >= 0) & (y >= 0) & (y <= np.pi) & (z <= 5) & (x + z >= 1) & \
                (np.cos(y) + z >= 0.5)
            f = np.sin(x) + x**2 - 2 * np.cos(y) + y**2 + z**2
            return np.where(mask, f, np.inf)
    return fitness


def quick_table(device: str = "cpu", repeats: int = 5, population: int = 900_000) -> str:
    """Markdown table: NumPy vs constropt eager vs constropt compiled (ms, ratios)."""
    import torch  # lazy: the CLI imports this module, and only this command needs torch

    dev = resolve_device(device)
    sync = torch.cuda.synchronize if dev.type == "cuda" else None
    rows = ["| example | NumPy (ms) | constropt eager (ms) | constropt compiled (ms) | "
            "compile (s) | compiled vs NumPy |", "|---|---|---|---|---|---|"]
    rng = np.random.default_rng(0)
    for ex in (2, 3):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            problem = benchmarks.get(f"blog_example{ex}").problem()
        pop = rng.uniform(-25, 25, size=(population, 3))
        t_np = median_time(lambda: blog_numpy(ex)(pop), repeats)
        X = torch.as_tensor(pop.T.copy(), dtype=torch.float32, device=dev)
        fn = problem.fitness("death", layout="columns", device=dev, compile=False)
        t_eager = median_time(lambda: fn(X), repeats, sync)
        cfn = problem.fitness("death", layout="columns", device=dev)
        t0 = time.perf_counter()
        cfn(X)
        t_compile = time.perf_counter() - t0
        t_comp = median_time(lambda: cfn(X), repeats, sync)
        rows.append(f"| {ex} | {t_np * 1e3:.1f} | {t_eager * 1e3:.1f} | {t_comp * 1e3:.2f} | "
                    f"{t_compile:.1f} | {t_np / t_comp:.0f}x |")
    return "\n".join(rows)
