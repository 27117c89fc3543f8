"""Batched parametric solves against loops, measured side by side in one run.

Two parametric problems, each solved three ways in the same process:

- ``constropt.solve_batch`` (one vectorized run of the search driver over every instance,
  one Result per instance),
- a loop of ``constropt.solve`` calls (timed on ``--sequential`` instances, scaled),
- a loop of scipy SLSQP solves (exact gradients written by hand).

Problems:

1. ``disc``: minimize ``x + 2*y`` subject to ``(x-1)**2 + (y+1)**2 <= r**2``, ``r`` from
   0.5 to 5; closed-form optimum ``-1 - r*sqrt(5)`` (every instance must be within 1e-4
   of it).  SLSQP: one start per instance (the problem is convex).
2. ``blog2``: the blog's example 2 with the disc ``x^2 + z^2 <= r^2``, ``r`` in [2, 5],
   maximized; reference: multistart SLSQP (five starts, more while none is feasible).

Prints wall times and ratios and writes them to ``--out`` (default
``benchmarks/results/batch.md``).

    python benchmarks/batch.py [--instances 1000] [--sequential 40] [--threads 1] [--out FILE]

``--threads`` (default 1) sets torch's intra-op threads: the scipy loop runs on one core,
and on a machine other processes load, torch's thread barriers make every small batched
operation wait for a descheduled thread (measured here at load 10 on 2 cores: one
(2, 1000, 40) float64 multiply took 8 ms with 2 threads, 0.09 ms with 1).
"""

from __future__ import annotations

import argparse
import datetime
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


def measure(name, problem, r, radii, scipy_loop, exact, k, seed):
    import constropt

    constropt.solve_batch(problem, {r: radii[:4]}, seed=seed)  # warm-up: first calls
    constropt.solve(problem, seed=seed, parameters={r: float(radii[0])})
    t0 = time.perf_counter()
    br = constropt.solve_batch(problem, {r: radii}, seed=seed)
    t_batch = time.perf_counter() - t0
    pick = np.linspace(0, len(radii) - 1, k).round().astype(int)  # spread over the range
    t0 = time.perf_counter()
    seq = np.array([constropt.solve(problem, seed=seed, parameters={r: float(radii[i])}).fun
                    for i in pick])
    t_seq = (time.perf_counter() - t0) * len(radii) / k
    t0 = time.perf_counter()
    ref = scipy_loop(radii)
    t_ref = time.perf_counter() - t0
    truth = exact(radii) if exact is not None else ref
    err = np.abs(br.fun - truth)
    err_seq = np.abs(seq - truth[pick])
    return {"name": name, "B": len(radii), "k": k, "batch": t_batch, "seq": t_seq,
            "scipy": t_ref, "err": float(err.max()), "err_seq": float(err_seq.max()),
            "err_scipy": float(np.abs(ref - truth).max()) if exact is not None else 0.0,
            "feasible": bool(br.feasible.all()), "timings": br.timings,
            "exact": exact is not None,
            "nit": (int(min(res.nit for res in br)), int(max(res.nit for res in br)))}


def main(argv=None) -> str:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--instances", type=int, default=1000)
    ap.add_argument("--sequential", type=int, default=40,
                    help="how many sequential solves to time (scaled to all instances)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1,
                    help="torch intra-op threads (default 1, like the scipy loop)")
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args(argv)

    import os

    import torch

    torch.set_num_threads(args.threads)
    load0 = os.getloadavg()[0]

    B, k = args.instances, min(args.sequential, args.instances)
    rows = []
    p, r = disc_problem()
    rows.append(measure("disc: min x + 2y, (x-1)^2 + (y+1)^2 <= r^2, r in [0.5, 5]", p, r,
                        np.linspace(0.5, 5.0, B), disc_scipy, disc_exact, k, args.seed))
    p, r = blog2_problem()
    rows.append(measure("blog example 2 with x^2 + z^2 <= r^2, r in [2, 5]", p, r,
                        np.linspace(2.0, 5.0, B), blog2_scipy, None, k, args.seed))
    lines = [
        f"# Batched parametric solves ({datetime.date.today()}, {platform.machine()}, "
        f"{torch.get_num_threads()} torch threads, torch {torch.__version__})",
        "",
        f"Load average (1 min) on this {os.cpu_count()}-CPU machine: {load0:.1f} at the start, "
        f"{os.getloadavg()[0]:.1f} at the end (other processes; wall times inflate with it, "
        "the ratios less so since the three methods run one after the other).",
        "",
        f"Generated by `benchmarks/batch.py`: {B} instances per problem, seed {args.seed}; "
        f"the loop of `solve` calls is timed on {k} instances spread over the range and "
        "scaled; all three measured in the same process, one after the other.",
        ""]
    for m in rows:
        ref = "closed form" if m["exact"] else "scipy multistart"
        tm = m["timings"]
        lines += [
            f"## {m['name']}",
            "",
            f"| method | wall time (s) | solve_batch is | max abs. error vs {ref} |",
            "|---|---|---|---|",
            f"| constropt.solve_batch | {m['batch']:.2f} | 1.0x | {m['err']:.2e} |",
            f"| loop of constropt.solve ({m['k']} timed, scaled) | {m['seq']:.2f} | "
            f"{m['seq'] / m['batch']:.1f}x faster | {m['err_seq']:.2e} |",
            f"| loop of scipy SLSQP | {m['scipy']:.2f} | {m['scipy'] / m['batch']:.1f}x faster |"
            f" {m['err_scipy']:.2e} |",
            "",
            f"solve_batch: compile {tm['compile']:.2f} s, search {tm['search']:.2f} s, polish "
            f"{tm['polish']:.2f} s; generations per instance {m['nit'][0]}-{m['nit'][1]}; "
            f"every instance feasible: {m['feasible']}; every instance within 1e-4: "
            f"{m['err'] <= 1e-4}",
            ""]
    text = "\n".join(lines)
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    return text


if __name__ == "__main__":
    main()
