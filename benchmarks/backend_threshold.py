"""Per-generation cost of the engine on NumPy against torch (eager, CPU), by work size.

The ``backend="auto"`` rule searches on NumPy while a generation handles fewer than
``NUMPY_MAX_WORK`` numbers (individuals x variables x instances).  This script measures
where that crossover lies: for each (population, variables) pair it builds the same DE
search on both backends (``Search`` with ``backend=...``, no polish, no stop before the
measured generations), runs a few warm-up generations, then times ``reps`` generations
of each backend interleaved, and prints the median seconds per generation and the ratio
torch / NumPy (above 1: NumPy is faster).

The problem: minimize ``sum(x_i^2) + sum(sin(x_i))`` subject to ``sum(x_i) >= 1`` and
``x_0 * x_1 <= 2``, each ``x_i`` in [-5, 5].

Run: ``PYTHONPATH=src python benchmarks/backend_threshold.py [--quick]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import sympy as sp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _machine import LoadMonitor, fmt_load  # noqa: E402


def problem(n: int):
    import constropt

    xs = sp.symbols(f"x0:{n}")
    obj = sum(x**2 for x in xs) + sum(sp.sin(x) for x in xs)
    cons = [sum(xs) >= 1, xs[0] * xs[1] <= 2]
    return constropt.Problem(obj, cons, variables=list(xs), bounds={x: (-5, 5) for x in xs})


def searches(prob, S: int):
    from constropt import Search

    kw = dict(pop_size=S, polish=False, stagnation=10**6, max_generations=10**6, ftol=0.0,
              restarts=0, seed=1, device="cpu", compile=False)
    return {b: Search(prob, backend=b, **kw) for b in ("numpy", "torch")}


def per_generation(search, gens: int) -> float:
    t0 = time.perf_counter()
    for _ in range(gens):
        search.step()
    return (time.perf_counter() - t0) / gens


def main(argv=None) -> str:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer sizes and repeats")
    args = ap.parse_args(argv)
    from constropt.backend._devices import NUMPY_MAX_WORK

    sizes = [(40, 3), (120, 10), (300, 20), (400, 50), (1000, 50), (4000, 50)]
    if args.quick:
        sizes = [(40, 3), (300, 20), (1000, 50)]
    reps, gens = (3, 10) if args.quick else (5, 20)
    load = LoadMonitor()
    rows = ["| population | variables | work | NumPy s/gen | torch s/gen | torch / NumPy |",
            "|---|---|---|---|---|---|"]
    probs = {}
    for S, n in sizes:
        prob = probs.setdefault(n, problem(n))
        runs = searches(prob, S)
        for s in runs.values():
            per_generation(s, 3)  # warm-up: first calls, caches
        t = {b: [] for b in runs}
        for _ in range(reps):  # interleaved, so both see the same machine
            for b, s in runs.items():
                t[b].append(per_generation(s, gens))
        med = {b: statistics.median(v) for b, v in t.items()}
        row = (f"| {S} | {n} | {S * n:,} | {med['numpy'] * 1e3:.3g} ms | "
               f"{med['torch'] * 1e3:.3g} ms | {med['torch'] / med['numpy']:.2f} |")
        rows.append(row)
        print(row, file=sys.stderr, flush=True)
    text = "\n".join(rows) + (
        f"\n\nEager DE generations on the CPU, torch threads: default; NUMPY_MAX_WORK = "
        f"{NUMPY_MAX_WORK:,} (backend='auto' uses NumPy below it). Other load during the "
        f"run: {fmt_load(load.share())}.\n")
    print(text)
    return text


if __name__ == "__main__":
    main()
