"""Throughput of the full search loop: generations/s and evaluations/s on blog example 2.

``constropt.solve`` with a fixed number of generations (``stagnation`` too large to stop
early, ``polish=False``), eager (``compile=False``) and compiled (``compile=True``), at
populations 1e4, 1e5 and 1e6.  A callback at every generation records the elapsed time,
so the steady-state rate excludes generation 1, which under ``compile=True`` includes
compiling the generation step; the evaluator's own compile is
``Result.timings["compile"]``.  The working dtype is solve's default (float64 below
2e6 genes on CPU, float32 above) unless ``--dtype`` says otherwise.

Run: ``PYTHONPATH=src python benchmarks/ga_throughput.py [--quick] [--output FILE]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _machine import LoadMonitor, Quiet, emit, fmt_load, header  # noqa: E402

SIZES = (10_000, 100_000, 1_000_000)
GENERATIONS = {10_000: 200, 100_000: 60, 1_000_000: 25}




def supported_options() -> set:
    from constropt.solver._options import SolveOptions

    return {f.name for f in dataclasses.fields(SolveOptions)}


def one_run(problem, S: int, G: int, compile_: bool, algorithm: str, device: str,
            dtype, seed: int = 0) -> dict:
    import constropt

    marks = {}

    def callback(state):
        marks[state.generation] = state.elapsed

    opts = dict(pop_size=S, max_generations=G, polish=False, compile=compile_,
                stagnation=10**9, ftol=0.0, seed=seed, device=device, dtype=dtype)
    have = supported_options()
    if "algorithm" in have:
        opts["algorithm"] = algorithm
    if "restarts" in have:
        opts["restarts"] = 0
    if "callback" in have:
        opts.update(callback=callback, check_every=1)
    t0 = time.perf_counter()
    res = constropt.solve(problem, **opts)
    wall = time.perf_counter() - t0
    search = res.timings["search"]
    nit = res.nit
    if 1 in marks and nit in marks and nit > 1:
        steady = (nit - 1) / (marks[nit] - marks[1])
        first = marks[1]
    else:  # no callback support: whole search
        steady, first = nit / search, float("nan")
    return {"nit": nit, "nfev": res.nfev, "search": search, "wall": wall,
            "compile": res.timings.get("compile", 0.0), "first": first, "steady": steady,
            "fun": res.fun, "feasible": res.feasible, "device": res.device}


def main(argv=None) -> str:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer generations")
    ap.add_argument("--sizes", default=",".join(str(s) for s in SIZES))
    ap.add_argument("--algorithms", default="ga",
                    help="comma-separated: ga (the target), de (if this build has it)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default=None, help="float32/float64 (default: solve's)")
    ap.add_argument("--output", help="also write the markdown here")
    ap.add_argument("--wait-quiet", type=float, default=0.0, metavar="SECONDS",
                    help="before each run, wait up to this long for an idle machine")
    args = ap.parse_args(argv)
    load = LoadMonitor()

    import torch

    from constropt import benchmarks

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        problem = benchmarks.get("blog_example2").problem()
    f_star = benchmarks.get("blog_example2").f_star
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    algos = [a for a in args.algorithms.split(",") if a]
    if "algorithm" not in supported_options():
        algos = ["ga"]
    rows = ["| algorithm | population | compile | dtype | generations | gen/s (steady) | "
            "evals/s (steady) | gen/s (whole search) | first generation (s) | "
            "evaluator compile (s) | best f (rel. err) | other load |",
            "|" + "---|" * 12]
    t_all = time.perf_counter()
    for algo in algos:
        for S in sizes:
            G = GENERATIONS.get(S, 30)
            if args.quick:
                G = max(5, G // 4)
            from constropt.backend._devices import resolve_device, resolve_dtype

            dt = resolve_dtype(args.dtype, resolve_device(args.device), S * problem.n)
            for comp in (False, True):
                with Quiet(args.wait_quiet) as q:
                    r = one_run(problem, S, G, comp, algo, args.device, args.dtype)
                rel = abs(r["fun"] - f_star) / abs(f_star)
                rows.append(
                    f"| {algo} | {S:,} | {comp} | {str(dt).replace('torch.', '')} | "
                    f"{r['nit']} | {r['steady']:.3g} | {r['steady'] * S:.3g} | "
                    f"{r['nit'] / r['search']:.3g} | {r['first']:.2f} | {r['compile']:.2f} | "
                    f"{r['fun']:.6f} ({rel:.1e}) | {fmt_load(q.load)} |")
                print(rows[-1], file=sys.stderr, flush=True)
    text = [header("GA throughput: blog example 2, full search loop"),
            "constropt.solve(pop_size=S, max_generations=G, polish=False, stagnation=1e9, "
            "restarts=0, seed=0, callback at every generation).  'steady' excludes "
            "generation 1 (which includes compiling the step under compile=True); "
            "'whole search' is generations / Result.timings['search'] (includes the "
            "initial population and generation 1); 'evaluator compile' is "
            "Result.timings['compile'] (in this build it includes compiling the step).  "
            "'other load': CPU share other processes took during the run (each run first "
            "waits for an idle machine when --wait-quiet is given).  "
            "Inductor cache: as left by earlier runs.  "
            "Acceptance target: >= 3 M evaluations/s at 1e6 with compile=True.",
            "", *rows, "",
            f"Total benchmark time {time.perf_counter() - t_all:.0f} s; "
            f"torch threads {torch.get_num_threads()}.  {load.line()}"]
    return emit("\n".join(text), args.output)


if __name__ == "__main__":
    main()
