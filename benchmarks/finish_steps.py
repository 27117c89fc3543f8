"""Cost of the finishing steps of issue 14 on small problems, side by side in one run.

``solve`` with defaults, interleaved seed by seed in one process, with the Newton
restoration (``local/_newton.py``, ``restore``) and the bound flips
(``finish/_flips.py``, ``bound_flips``) on ("new") and replaced by no-ops ("old").
The integer search never runs on these continuous problems.  Prints the median wall
time of each and the ratio new / old, and the median evaluations.

Run: ``PYTHONPATH=src python benchmarks/finish_steps.py [--reps 6]``.
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings

import numpy as np

PROBLEMS = ("blog_example2", "blog_example3", "G06", "G08", "tension_compression_spring")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=6, help="seeds per problem and mode")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    import constropt
    import constropt.finish._deadgenes as deadgenes
    import constropt.finish._intsearch as intsearch
    import constropt.finish._polishing as polishing
    import constropt.local._newton as newton
    from constropt import benchmarks

    restore, flips = newton.restore, polishing.bound_flips
    callers = (polishing, intsearch, deadgenes)  # the modules that call restore

    def no_restore(problem, x0, pvec, max_evals=None, iters=30, inside=None):
        return np.asarray(x0, dtype=float).copy(), 0

    def no_flips(problem, inc, budget):
        return inc, False

    print("| problem | new s (median) | old s (median) | new / old | new evals | old evals |")
    print("|---|---|---|---|---|---|")
    for name in PROBLEMS:
        problem = benchmarks.get(name).problem()
        constropt.solve(problem, seed=99)  # warm-up: imports, lowering
        t = {"new": [], "old": []}
        ev = {"new": [], "old": []}
        for seed in range(args.reps):
            for mode in ("new", "old"):
                for module in callers:
                    module.restore = restore if mode == "new" else no_restore
                polishing.bound_flips = flips if mode == "new" else no_flips
                t0 = time.perf_counter()
                res = constropt.solve(problem, seed=seed)
                t[mode].append(time.perf_counter() - t0)
                ev[mode].append(res.nfev)
        m = {k: statistics.median(v) for k, v in t.items()}
        print(f"| {name} | {m['new']:.4f} | {m['old']:.4f} | {m['new'] / m['old']:.3f} | "
              f"{statistics.median(ev['new']):.0f} | {statistics.median(ev['old']):.0f} |",
              flush=True)
    for module in callers:
        module.restore = restore
    polishing.bound_flips = flips


if __name__ == "__main__":
    main()
