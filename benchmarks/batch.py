"""Batched parametric solves against loops, measured side by side in one run.

Two parametric problems at several batch sizes, ``constropt.solve_batch`` against a loop
of scipy SLSQP runs (exact gradients written by hand) on the same instances, interleaved
round by round (medians of ``--rounds``); at 1,000 instances also a loop of
``constropt.solve`` (timed on ``--sequential`` instances, scaled); last, the disc batch
in one process against two ranks under torchrun.

Problems:

1. ``disc``: minimize ``x + 2*y`` subject to ``(x-1)**2 + (y+1)**2 <= r**2``, ``r`` from
   0.5 to 5; closed-form optimum ``-1 - r*sqrt(5)``.  SLSQP: one start per instance
   (the problem is convex).
2. ``blog2``: the blog's example 2 with the disc ``x^2 + z^2 <= r^2``, ``r`` in [2, 5],
   maximized; reference: multistart SLSQP (five starts, more while none is feasible).

Prints wall times and ratios and writes them to ``--out`` (default
``benchmarks/results/batch.md``).

    python benchmarks/batch.py [--sizes 10,100,1000,10000] [--rounds 5] [--threads 1]
                               [--shard-instances 1000] [--shard-rounds 11] [--out FILE]

``--threads`` (default 1) sets torch's intra-op threads: the scipy loop runs on one core,
and on a machine other processes load, torch's thread barriers make every small batched
operation wait for a descheduled thread (measured here at load 10 on 2 cores: one
(2, 1000, 40) float64 multiply took 8 ms with 2 threads, 0.09 ms with 1).
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import platform
import time
import warnings
from pathlib import Path

import numpy as np
import sympy as sp

OUT = Path(__file__).resolve().parent / "results" / "batch.md"


def disc_problem():
    import constropt

    x, y, r = sp.symbols("x y r")
    p = constropt.Problem(x + 2 * y, [(x - 1)**2 + (y + 1)**2 <= r**2],
                          bounds={x: (-10, 10), y: (-10, 10)}, parameters={r: 1.0})
    return p, r


def disc_exact(radii):
    return -1.0 - radii * math.sqrt(5.0)


def disc_scipy(radii):
    """One SLSQP run per instance from the box centre (convex problem)."""
    from scipy.optimize import minimize

    out = np.empty(len(radii))
    for i, rad in enumerate(radii):
        cons = [{"type": "ineq",
                 "fun": lambda v, rad=rad: rad**2 - (v[0] - 1)**2 - (v[1] + 1)**2,
                 "jac": lambda v: np.array([-2 * (v[0] - 1), -2 * (v[1] + 1)])}]
        res = minimize(lambda v: v[0] + 2 * v[1], np.zeros(2), jac=lambda v: np.array([1., 2.]),
                       method="SLSQP", constraints=cons, bounds=[(-10, 10)] * 2,
                       options={"ftol": 1e-12, "maxiter": 200})
        out[i] = res.fun
    return out


def blog2_problem():
    import constropt

    x, y, z, r = sp.symbols("x y z r")
    f = x**2 + 2 * y**2 + 3 * z**2 + 4 * x * y - 5 * y * z
    cons = [x >= 1, y > 3, y <= 7, z < 0, x + y + z >= 3, x**2 + z**2 <= r**2]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p = constropt.Problem(f, cons, maximize=True, bounds={x: (1, 25), z: (-25, 0)},
                              parameters={r: 3.0})
    return p, r


def blog2_scipy(radii):
    """Multistart SLSQP per instance: five fixed starts, then up to twenty random ones
    while none has ended feasible."""
    from scipy.optimize import minimize

    def fun(v):
        x, y, z = v
        return -(x * x + 2 * y * y + 3 * z * z + 4 * x * y - 5 * y * z)

    def jac(v):
        x, y, z = v
        return -np.array([2 * x + 4 * y, 4 * y + 4 * x - 5 * z, 6 * z - 5 * y])

    out = np.empty(len(radii))
    rng = np.random.default_rng(0)
    extra = np.column_stack([rng.uniform(1, 3, 20), rng.uniform(3, 7, 20),
                             rng.uniform(-3, 0, 20)])
    starts = np.array([[1.5, 5.0, -1.0], [1.0, 6.9, -0.5], [2.0, 4.0, -2.0], [1.2, 3.5, -1.5],
                       [1.0, 7.0, -3.0]])
    for i, rad in enumerate(radii):
        cons = [{"type": "ineq", "fun": lambda v, rad=rad: rad**2 - v[0] ** 2 - v[2] ** 2,
                 "jac": lambda v: np.array([-2 * v[0], 0.0, -2 * v[2]])},
                {"type": "ineq", "fun": lambda v: v[0] + v[1] + v[2] - 3,
                 "jac": lambda v: np.ones(3)}]
        best = np.inf
        for j, s in enumerate(np.vstack([starts, extra])):
            if j >= len(starts) and np.isfinite(best):
                break
            res = minimize(fun, s, jac=jac, method="SLSQP", constraints=cons,
                           bounds=[(1, 25), (3 + 1e-9, 7), (-25, -1e-9)],
                           options={"ftol": 1e-12, "maxiter": 200})
            v = res.x
            feasible = (v[0] ** 2 + v[2] ** 2 <= rad**2 + 1e-9) and v.sum() >= 3 - 1e-9
            if feasible and res.fun < best:
                best = res.fun
        out[i] = -best
    return out


def _timed(fn, rounds):
    """The median of ``rounds`` wall times of ``fn()`` and its last value."""
    times, out = [], None
    for _ in range(rounds):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times)), out


def measure(problem, r, radii, scipy_loop, exact, rounds, seed, k=0):
    """solve_batch and the loop of SLSQP starts on the same instances, interleaved round
    by round (medians); the loop of ``solve`` on ``k`` instances, scaled."""
    import constropt

    constropt.solve_batch(problem, {r: radii[:4]}, seed=seed)  # warm-up: first calls
    scipy_loop(radii[:2])
    tb, ts, br, ref = [], [], None, None
    for _ in range(rounds):  # side by side: a load change hits both
        t0 = time.perf_counter()
        br = constropt.solve_batch(problem, {r: radii}, seed=seed)
        tb.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        ref = scipy_loop(radii)
        ts.append(time.perf_counter() - t0)
    t_seq = err_seq = None
    if k:
        pick = np.linspace(0, len(radii) - 1, k).round().astype(int)
        truth_k = exact(radii[pick]) if exact is not None else ref[pick]
        t_seq, seq = _timed(lambda: np.array([
            constropt.solve(problem, seed=seed, parameters={r: float(radii[i])}).fun
            for i in pick]), 1)
        t_seq *= len(radii) / k
        err_seq = float(np.abs(seq - truth_k).max())
    truth = exact(radii) if exact is not None else ref
    err = np.abs(br.fun - truth)
    return {"B": len(radii), "batch": float(np.median(tb)), "scipy": float(np.median(ts)),
            "seq": t_seq, "err_seq": err_seq, "err": float(err.max()),
            "err_scipy": float(np.abs(ref - truth).max()) if exact is not None else 0.0,
            "feasible": bool(br.feasible.all()), "success": bool(br.success.all()),
            "timings": br.timings, "exact": exact is not None,
            "local": int(sum(res.nit == 0 for res in br))}


SHARD = """
import json, os, sys, time
sys.path.insert(0, {here!r})
import numpy as np, torch
torch.set_num_threads(1)
import constropt
import constropt.parallel._shard as shard
from constropt.parallel._group import _Group
from batch import disc_problem
rec = {{}}

def timed(name, fn):  # wall and CPU seconds of each call of fn, kept under name
    def run(*args, **kwargs):
        w, c = time.perf_counter(), time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            rec[name] = (time.perf_counter() - w, time.process_time() - c)
    return run

shard._solve_one = timed("solve", shard._solve_one)  # this process's own instances
_Group.all_gather_object = timed("collective", _Group.all_gather_object)
p, r = disc_problem()
radii = np.linspace(0.5, 5.0, {B})
constropt.solve_batch(p, {{r: radii[:40]}}, seed={seed})  # warm-up: first calls, the group
rows = []
for _ in range({rounds}):
    rec.clear()
    w, c = time.perf_counter(), time.process_time()
    br = constropt.solve_batch(p, {{r: radii}}, seed={seed})
    wall, cpu = time.perf_counter() - w, time.process_time() - c
    w = time.perf_counter()
    for res in br:  # the other rank's Results are built on first access
        pass
    rows.append({{"wall": wall, "cpu": cpu, "read": time.perf_counter() - w,
                 "solve": rec["solve"][0], "solve_cpu": rec["solve"][1],
                 "gather": br.timings.get("gather", 0.0),
                 "collective": rec.get("collective", (0.0, 0.0))[0],
                 "collective_cpu": rec.get("collective", (0.0, 0.0))[1]}})
    rows[-1]["rest"] = rows[-1]["wall"] - rows[-1]["solve"] - rows[-1]["gather"]
    rows[-1]["other_cpu"] = rows[-1]["cpu"] - rows[-1]["solve_cpu"]
med = {{k: float(np.median([row[k] for row in rows])) for k in rows[0]}}
rank = int(os.environ.get("RANK", "0"))
with open(sys.argv[1] + f".{{rank}}", "w") as fh:  # one file per rank: no interleaving
    json.dump({{**med, "t": med["wall"], "rank": rank, "fun": br.fun.tolist(),
               "status": [s.status.name for s in br]}}, fh)
"""


def busy_cores(seconds=2.0):
    """Cores kept busy by other work over ``seconds`` (nothing of this benchmark runs
    then), from /proc/stat; the 1-minute load average where there is none (it lags:
    right after the one-process run it still counts that run)."""
    import os

    def ticks():
        with open("/proc/stat") as fh:
            vals = [int(v) for v in fh.readline().split()[1:]]
        return sum(vals), vals[3] + (vals[4] if len(vals) > 4 else 0)  # all, idle + iowait

    try:
        t0, i0 = ticks()
        time.sleep(seconds)
        t1, i1 = ticks()
    except (OSError, ValueError, IndexError):
        return os.getloadavg()[0]
    return (os.cpu_count() or 1) * (1.0 - (i1 - i0) / max(1, t1 - t0))


def ranks(B, rounds, seed):
    """The disc batch in one process and under torchrun with two ranks (each a fresh
    process, one thread): median wall times of the solve_batch call and the answers."""
    import os
    import socket
    import subprocess
    import sys
    import tempfile

    here = str(Path(__file__).resolve().parent)
    src = str(Path(here).parent / "src")
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as fh:
        fh.write(SHARD.format(here=here, B=B, seed=seed, rounds=rounds))
    env = {k: v for k, v in os.environ.items()
           if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")}
    env.update(PYTHONPATH=src, OMP_NUM_THREADS="1")
    out = {}
    for name, pre in (("one", []), ("two", None)):
        if pre is None:
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                port = s.getsockname()[1]
            pre = ["-m", "torch.distributed.run", "--nproc_per_node=2",
                   "--master_addr=127.0.0.1", f"--master_port={port}"]
        load, others = os.getloadavg()[0], busy_cores()
        stem = fh.name + f".{name}"
        proc = subprocess.run([sys.executable, *pre, fh.name, stem], env=env, text=True,
                              capture_output=True, timeout=600)
        files = sorted(Path(stem).parent.glob(Path(stem).name + ".*"))
        if proc.returncode or not files:
            raise RuntimeError(proc.stderr[-2000:])
        got = [json.loads(f.read_text()) for f in files]
        for f in files:
            f.unlink()
        out[name] = {"ranks": sorted(got, key=lambda g: g["rank"]), "load": load,
                     "load_after": os.getloadavg()[0], "others": others}
    os.unlink(fh.name)
    return out


def shard_section(sh, B, R) -> list:
    """The report's torchrun section: wall times, and the split of each rank's time into
    its own solve, the exchange of the results and the rest, in wall and CPU seconds (on
    a loaded machine the CPU seconds show the split that the wall times hide: a rank
    that waits in the collective blocks, it does not spin)."""
    one, two = sh["one"]["ranks"][0], sh["two"]["ranks"]
    diff = max(float(np.max(np.abs(np.array(one["fun"]) - np.array(t["fun"])))) for t in two)
    same = all(t["status"] == one["status"] for t in two)
    lines = [
        "", f"## {B:,} disc instances: one process against two ranks under torchrun", "",
        "Each a fresh process (two for torchrun, gloo), one thread each; medians of "
        f"{R} calls of solve_batch after a warm-up call (import, lowering and the process "
        "group are not timed).  Per process: the call's wall and CPU seconds; `solve`, "
        "its solve of its own instances; `exchange`, from the end of that solve to the "
        "end of the call (packing the Results as columns, waiting for the other rank, the "
        "one all-gather, assembling the BatchResult), of which `all-gather` is the "
        "collective itself (waiting included); `rest`, the call minus the two (the "
        "parameter matrix, the shares); `first read`, after the call, the first loop "
        "over every Result (a rank builds the other's Results from their columns then; "
        "the arrays `x`, `fun`, `feasible`, `success` need none of them).", "",
        "| run | wall (s) | CPU (s) | solve: wall / CPU (s) | exchange (s) | all-gather: "
        "wall / CPU (s) | rest (s) | CPU outside the solve (s) | first read (s) | "
        "load (1 min) before / after |",
        "|---|---|---|---|---|---|---|---|---|---|"]

    def row(name, g, run):
        return (f"| {name} | {g['wall']:.4f} | {g['cpu']:.4f} | {g['solve']:.4f} / "
                f"{g['solve_cpu']:.4f} | {g['gather']:.4f} | {g['collective']:.4f} / "
                f"{g['collective_cpu']:.4f} | {g['rest']:.4f} | {g['other_cpu']:.4f} | "
                f"{g['read']:.4f} | {sh[run]['load']:.2f} / {sh[run]['load_after']:.2f} |")

    lines.append(row("one process", one, "one"))
    lines += [row(f"rank {g['rank']} of two", g, "two") for g in two]
    wall2 = max(g["wall"] for g in two)
    cpu2 = max(g["cpu"] for g in two)  # waiting in the collective blocks: no CPU
    shares = ", ".join(f"{g['solve_cpu'] / one['solve_cpu']:.2f}" for g in two)
    import os

    # fewer than two free cores: other work kept more than half a core busy beyond them
    # in the seconds before the ranks started
    others = sh["two"]["others"]
    busy = others > (os.cpu_count() or 1) - 2 + 0.5
    lines += [
        "", f"Other work kept {others:.2f} cores busy in the 2 s before the ranks started."
        f"  Two ranks / one process, wall: {wall2 / one['wall']:.2f}x"
        f"{' (fewer than two free cores: the ranks did not run side by side)' if busy else ''}"
        ".  CPU seconds, which the load inflates far less than wall "
        f"times: each rank's solve of its share took {shares} of the one process's "
        f"solve; the slower rank's whole call {cpu2:.4f} s against the one process's "
        f"{one['cpu']:.4f} s, so with a free core per rank the call would take about "
        f"{cpu2 / one['cpu']:.2f}x one process's time.  With the first read of every "
        f"Result: {max(g['wall'] + g['read'] for g in two) / (one['wall'] + one['read']):.2f}x"
        " (wall).  Largest difference of the "
        f"objectives {diff:.1e}; statuses equal: {same}."]
    return lines


def _table_row(m) -> str:
    """One size's row of a problem's table: times, ratio, error, local answers, checks."""
    return (f"| {m['B']:,} | {m['batch']:.4f} | {m['scipy']:.4f} | "
            f"{m['scipy'] / m['batch']:.2f}x | {m['err']:.2e} | {m['local']:,} | "
            f"{m['feasible'] and m['success']} |")


def main(argv=None) -> str:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10,100,1000,10000",
                    help="batch sizes of the disc problem, comma-separated")
    ap.add_argument("--blog2-sizes", default="10,100,1000")
    ap.add_argument("--rounds", type=int, default=5, help="rounds per size (medians)")
    ap.add_argument("--sequential", type=int, default=20,
                    help="sequential solve calls timed at 1,000 instances (scaled)")
    ap.add_argument("--shard-instances", type=int, default=1000,
                    help="instances of the one-process / two-rank comparison (0: skip)")
    ap.add_argument("--shard-rounds", type=int, default=11,
                    help="timed calls per process of that comparison (medians; on a loaded "
                         "machine five calls' CPU seconds still moved by 0.1 of a share)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1,
                    help="torch intra-op threads (default 1, like the scipy loop)")
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args(argv)

    import os

    import torch

    torch.set_num_threads(args.threads)
    load0 = os.getloadavg()[0]
    seed, R = args.seed, args.rounds
    lines = [
        f"# Batched parametric solves ({datetime.date.today()}, {platform.machine()}, "
        f"{torch.get_num_threads()} torch threads, torch {torch.__version__})",
        "",
        "Generated by `benchmarks/batch.py`.  Each size: `solve_batch` and the loop of "
        f"SLSQP runs on the same instances, interleaved round by round, median of {R} "
        "rounds, one thread, in one process (the machine is shared: the ratio is the "
        "measure, wall times move with the load).  `local` counts the instances the local "
        "solves answered (the rest had the global search).",
        ""]
    p, r = disc_problem()
    rows = []
    for B in map(int, args.sizes.split(",")):
        radii = np.linspace(0.5, 5.0, B)
        k = args.sequential if B == 1000 else 0
        rows.append(measure(p, r, radii, disc_scipy, disc_exact, R if B < 10000 else
                            max(1, R // 2), seed, k))
        print(rows[-1]["B"], rows[-1]["batch"], rows[-1]["scipy"], flush=True)
    lines += [
        "## disc: min x + 2y, (x-1)^2 + (y+1)^2 <= r^2, r in [0.5, 5]",
        "",
        "Closed form `-1 - r sqrt(5)`; the loop: one SLSQP run per instance from the box "
        "centre (exact gradients by hand).",
        "",
        "| B | solve_batch (s) | loop of SLSQP (s) | loop / batch | max error of solve_batch |"
        " local | all feasible, success |",
        "|---|---|---|---|---|---|---|"]
    lines += [_table_row(m) for m in rows]
    by = {m["B"]: m for m in rows}
    if 1000 in by and 10000 in by:
        lines += ["", f"1,000 -> 10,000 instances: solve_batch x"
                      f"{by[10000]['batch'] / by[1000]['batch']:.1f}, the SLSQP loop x"
                      f"{by[10000]['scipy'] / by[1000]['scipy']:.1f}."]
    if 1000 in by and by[1000]["seq"] is not None:
        m = by[1000]
        lines += ["", f"A loop of `constropt.solve` at 1,000 instances ({args.sequential} "
                      f"timed, scaled): {m['seq']:.1f} s, max error {m['err_seq']:.1e}."]
    lines.append("")
    for B, m in by.items():
        tm = m["timings"]
        lines.append(f"- B = {B:,}: compile {tm['compile']:.2f} s, search {tm['search']:.3f} s,"
                     f" polish and local solves {tm['polish']:.3f} s, exact checks, probes "
                     f"and status rules {tm['check']:.3f} s ({tm['check'] / tm['total']:.0%}"
                     f"), total {tm['total']:.3f} s")
    p, r = blog2_problem()
    rows = []
    for B in map(int, args.blog2_sizes.split(",")):
        rows.append(measure(p, r, np.linspace(2.0, 5.0, B), blog2_scipy, None, max(1, R // 2),
                            seed))
    lines += [
        "", "## blog example 2 with x^2 + z^2 <= r^2, r in [2, 5], maximized", "",
        "Reference: multistart SLSQP per instance (five starts, more while none is feasible).",
        "",
        "| B | solve_batch (s) | multistart SLSQP loop (s) | loop / batch | max abs. difference |"
        " local | all feasible, success |",
        "|---|---|---|---|---|---|---|"]
    lines += [_table_row(m) for m in rows]
    if args.shard_instances:
        SR = args.shard_rounds
        lines += shard_section(ranks(args.shard_instances, SR, seed), args.shard_instances,
                               SR)
    lines += ["", f"Load average (1 min) on this {os.cpu_count()}-CPU machine: {load0:.1f} at "
                  f"the start, {os.getloadavg()[0]:.1f} at the end."]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    return text


if __name__ == "__main__":
    main()
