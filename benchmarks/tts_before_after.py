"""Time to solution before and after a change: constropt at an older commit against the
working tree, on the small problems of ``time_to_solution.py``, side by side.

Each version runs in its own interpreter (``PYTHONPATH`` at its ``src``; the older one is
checked out into a temporary git worktree), rounds alternate between the two so that
load from other processes falls on both, and every round solves each problem with each
engine (the defaults, then ``algorithm="ga"``) for the same seeds after a warm-up solve.
Reported per row: median wall time over every round and seed, median evaluations
(deterministic for a seed, so the same in every round), and how many seeds reached a
relative error of 1e-6 at a point whose largest violation, checked in float64 by
``Problem.evaluate``, is at most 1e-8 (the criterion of ``time_to_solution.py``).  Then
the whole-process row of ``time_to_solution.py`` (a new interpreter imports constropt,
declares blog example 3 in sympy and solves it with defaults), ``--fresh`` times per
version, alternating.

Only the public API and ``constropt.benchmarks.get`` are used, which both versions have.

Run: ``PYTHONPATH=src python benchmarks/tts_before_after.py --before REV
[--seeds 0-10] [--rounds 3] [--fresh 5] [--output FILE]`` from a git checkout.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

PROBLEMS = ("blog_example2", "blog_example3", "G06", "G08", "tension_compression_spring")
ENGINES = (("defaults", {}), ("ga", {"algorithm": "ga"}))
TARGET = 1e-6
CV_TOL = 1e-8


def worker(seeds: list[int]) -> None:
    """Solve every problem with every engine for ``seeds``; one JSON line per solve."""
    import warnings

    import numpy as np

    import constropt
    from constropt.benchmarks import get

    warnings.simplefilter("ignore")
    warm = get("blog_example3").problem()
    for _, opts in ENGINES:  # first-call costs (imports, caches) are not timed
        constropt.solve(warm, seed=123, **opts)
    for name in PROBLEMS:
        rec = get(name)
        problem = rec.problem()
        for engine, opts in ENGINES:
            for s in seeds:
                t0 = time.perf_counter()
                res = constropt.solve(problem, seed=s, **opts)
                dt = time.perf_counter() - t0
                ev = problem.evaluate(np.asarray(res.x_array, dtype=np.float64).reshape(1, -1))
                V = np.asarray(ev.violation, dtype=np.float64)
                cv = float(V.max()) if V.size else 0.0
                err = abs(res.fun - rec.f_star) / max(1.0, abs(rec.f_star))
                print(json.dumps({"problem": name, "engine": engine, "seed": s, "seconds": dt,
                                  "nfev": int(res.nfev), "ok": bool(err <= TARGET and
                                                                    cv <= CV_TOL)}),
                      flush=True)


def run_version(src: str, seeds: list[int]) -> list[dict]:
    env = dict(os.environ, PYTHONPATH=src)
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker",
                           ",".join(map(str, seeds))], env=env, capture_output=True,
                          text=True, check=True)
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def fresh_runs(srcs: dict, repeats: int) -> dict:
    """Whole new interpreters solving blog example 3 (``time_to_solution.FRESH``), the
    versions alternating: ``{version: [(wall seconds, seconds inside, fun), ...]}``."""
    from time_to_solution import FRESH

    out: dict = {v: [] for v in srcs}
    for _ in range(repeats):
        for v, src in srcs.items():
            t0 = time.perf_counter()
            proc = subprocess.run([sys.executable, "-c", FRESH],
                                  env=dict(os.environ, PYTHONPATH=src), capture_output=True,
                                  text=True, check=True)
            wall = time.perf_counter() - t0
            inner, fun, _ = eval(proc.stdout.strip().splitlines()[-1])  # a repr'd tuple
            out[v].append((wall, inner, fun))
    return out


def git(*args: str) -> str:
    return subprocess.run(["git", "-C", ROOT, *args], capture_output=True, text=True,
                          check=True).stdout.strip()


def report(before: str, after: str, runs: dict, fresh: dict, seeds: list[int],
           rounds: int, load: str, total: float) -> str:
    from _machine import header

    lines = [header("Time to solution before and after"), "",
             f"before: `{before}`; after: `{after}`. Seeds {seeds[0]}..{seeds[-1]}, "
             f"{rounds} rounds alternating between the versions, each version in its own "
             "interpreter after a warm-up solve. Time: median wall seconds over every "
             "round and seed; evaluations: median over the seeds; 'reached': seeds at "
             f"relative error <= {TARGET:g} and max violation <= {CV_TOL:g} (float64).",
             "", "| problem | engine | time before | time after | after/before | "
             "evaluations before | evaluations after | reached before | reached after |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name in PROBLEMS:
        for engine, _ in ENGINES:
            cells = []
            for v in ("before", "after"):
                rows = [r for r in runs[v] if r["problem"] == name and r["engine"] == engine]
                first = [r for r in rows if r["round"] == 0]
                cells.append((statistics.median(r["seconds"] for r in rows),
                              statistics.median(r["nfev"] for r in first),
                              sum(r["ok"] for r in first)))
            (tb, eb, kb), (ta, ea, ka) = cells
            lines.append(f"| {name} | {engine} | {tb:.3g} | {ta:.3g} | {ta / tb:.2f} | "
                         f"{eb:,.0f} | {ea:,.0f} | {kb}/{len(seeds)} | {ka}/{len(seeds)} |")
    if fresh["before"]:
        med = {v: (statistics.median(w for w, _, _ in r), statistics.median(i for _, i, _ in r))
               for v, r in fresh.items()}
        walls = {v: ", ".join(f"{w:.2f}" for w, _, _ in r) for v, r in fresh.items()}
        funs = {v: f"{r[0][2]:.10f}" for v, r in fresh.items()}
        lines += ["", "Whole process (new interpreter: imports, declaring blog example 3 in "
                  f"sympy, solve with defaults, seed 0), {len(fresh['before'])} runs per "
                  "version, alternating: before wall " + walls["before"] + " s (median "
                  f"{med['before'][0]:.2f} s; inside the script {med['before'][1]:.2f} s, "
                  f"f = {funs['before']}), after wall " + walls["after"] + " s (median "
                  f"{med['after'][0]:.2f} s; inside the script {med['after'][1]:.2f} s, "
                  f"f = {funs['after']}): after/before {med['after'][0] / med['before'][0]:.2f}."]
    lines += ["", f"Total benchmark time {total:.0f} s. {load}"]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", help="git revision to compare the working tree against")
    ap.add_argument("--seeds", default="0-10")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--fresh", type=int, default=5,
                    help="whole-process runs per version (0: none)")
    ap.add_argument("--output")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker is not None:
        worker([int(s) for s in a.worker.split(",")])
        return
    if not a.before:
        ap.error("--before REV is required")
    from _machine import LoadMonitor, emit, fmt_load
    from suite import parse_seeds

    seeds = parse_seeds(a.seeds)
    rev = git("rev-parse", "--short", a.before)
    head = git("rev-parse", "--short", "HEAD")
    dirty = " with uncommitted changes" if git("status", "--porcelain", "--", "src") else ""
    t0 = time.perf_counter()
    mon = LoadMonitor()
    runs: dict = {"before": [], "after": []}
    with tempfile.TemporaryDirectory() as tmp:
        tree = os.path.join(tmp, "before")
        git("worktree", "add", "--detach", tree, rev)
        srcs = {"before": os.path.join(tree, "src"), "after": os.path.join(ROOT, "src")}
        try:
            for k in range(a.rounds):
                for v, src in srcs.items():
                    got = run_version(src, seeds)
                    for r in got:
                        r["round"] = k
                    runs[v] += got
                    print(f"round {k + 1}/{a.rounds}: {v} done", file=sys.stderr, flush=True)
            fresh = fresh_runs(srcs, a.fresh)
        finally:
            git("worktree", "remove", "--force", tree)
    text = report(rev, head + dirty, runs, fresh, seeds, a.rounds,
                  "Load from other processes during the run: " + fmt_load(mon.share()) + ".",
                  time.perf_counter() - t0)
    emit(text, a.output)


if __name__ == "__main__":
    main()
