"""Benchmark: the cost of each stage of a problem's preparation as the problem grows.

Two families (issue 28, item 4):

- ``n`` variables: ``min sum (x_i - 1/2)^2`` subject to ``sum x_i >= n/2 + 1`` and the
  box ``-5 <= x_i <= 5`` written as ``2 n`` constraints, at n = 1, 10, 100, 1,000;
- ``m`` constraints: 10 variables, ``min sum (x_i - c_i)^2`` subject to ``m`` random
  linear constraints ``a_j . x <= b_j`` (seeded; rational coefficients of 3 decimals,
  feasible at a random point), box ``[-5, 5]`` given as bounds, at m = 10 and 300.

Stages (each timed on a fresh problem, with sympy's cache and constropt's caches keyed
by the generated source emptied, so no round reuses an earlier round's work):

- ``construct``: ``Problem(objective, constraints)`` as a whole;
- ``bounds``: the bound propagation inside it (``problem._bounds.make_bounds``: bounds
  from single-variable constraints, FBBT, domains), timed alone;
- ``lowering``: the values' source (``lowering.Lowering``), timed alone;
- ``derivatives``: building, compiling and calling the exact derivatives once
  (``Lowering.derivatives("numpy")``, the process-wide source cache emptied first);
- ``verify``: the exact check of one point (``finish._verify.verify_point``, its
  program cache emptied first);
- ``fitness``: the first NumPy evaluation (``Problem.fitness(compile=False)`` on 64
  points: generated code compiled by Python, then called);
- ``compile``: the first call of ``Problem.fitness(compile=True)`` (torch inductor), in
  a fresh process with a time limit (``--compile-limit``), one round only.

Each cell is the best (least) of ``--rounds`` rounds (the sizes interleaved within a
round) of the process's CPU time (one thread: a shared machine's other work is not
counted, and what it still adds -- caches and memory bandwidth shared with other
processes, a lower clock -- only ever inflates a round, so the least is the estimate);
the compile column is the wall time of one call in a fresh process.  ``growth`` is the
cell at n = 1,000 over the cell at n = 100.

Run: ``OMP_NUM_THREADS=1 PYTHONPATH=src python benchmarks/stages.py [--rounds 5]
[--output benchmarks/results/stages.md] [--no-compile]``
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
import warnings

import numpy as np
import sympy as sp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _machine import LoadMonitor, emit, header  # noqa: E402

STAGES = ("construct", "bounds", "lowering", "derivatives", "verify", "fitness")
SIZES = (("n", 1), ("n", 10), ("n", 100), ("n", 1000), ("m", 10), ("m", 300))


def separable(n: int):
    """``(objective, constraints, variables, bounds, point)`` of the separable QP."""
    xs = sp.symbols(f"x0:{n}")
    half = sp.Rational(1, 2)
    obj = sp.Add(*[(x - half) ** 2 for x in xs])
    cons = [sp.Add(*xs) >= sp.Rational(n, 2) + 1]
    cons += [c for x in xs for c in (x >= -5, x <= 5)]
    return obj, cons, None, np.full(n, 0.5 + 1.0 / n)


def linear(m: int, n: int = 10, seed: int = 0):
    """The 10-variable QP with ``m`` random linear constraints, feasible at a point."""
    rng = np.random.default_rng(seed)
    xs = sp.symbols(f"x0:{n}")
    x0 = rng.uniform(-2, 2, n)
    A = np.round(rng.normal(size=(m, n)), 3)
    b = np.round(A @ x0 + rng.uniform(0.1, 1.0, m), 3)
    c = np.round(rng.uniform(-3, 3, n), 3)

    def q(v):
        return sp.Rational(int(round(v * 1000)), 1000)

    obj = sp.Add(*[(x - q(ci)) ** 2 for x, ci in zip(xs, c)])
    cons = [sp.Add(*[q(a) * x for a, x in zip(row, xs)]) <= q(bj) for row, bj in zip(A, b)]
    return obj, cons, {x: (-5, 5) for x in xs}, x0


def case(kind: str, size: int):
    return separable(size) if kind == "n" else linear(size)


def _timed(fn):
    """Seconds of CPU time of ``fn()`` (the stages run on one thread: time spent
    descheduled on a shared machine is not counted; on a quiet one it equals wall
    time) and its result."""
    t0 = time.process_time()
    out = fn()
    return time.process_time() - t0, out


def measure(kind: str, size: int) -> dict:
    """Seconds of every stage but the compile, on fresh objects."""
    import constropt
    from constropt.finish._verify import verify_point
    from constropt.lowering import _lower
    from constropt.problem import _bounds, _fitness_adapter, _fitness_numpy

    obj, cons, bounds, x = case(kind, size)
    sp.core.cache.clear_cache()  # every round as cold as a fresh process's
    t = {}
    t["construct"], p = _timed(lambda: constropt.Problem(obj, cons, bounds=bounds))
    b = p._args[3]
    t["bounds"], _ = _timed(lambda: _bounds.make_bounds(
        p._variables, p._layout, p._constraints, b, None, p._parameters,
        [p._objective] + [c.relation for c in p._constraints], eq_tol=p._eq_tol))
    t["lowering"], low = _timed(lambda: _lower.Lowering(p._objective, p._constraints,
                                                        p._layout, p._maximize))
    _lower._DERIVATIVE_SOURCES.clear()
    X = np.asarray(x, dtype=float).reshape(-1, 1)
    pv = p.parameter_vector().reshape(-1, 1)
    t["derivatives"], _ = _timed(lambda: low.derivatives("numpy")(X, pv))
    fresh = constropt.Problem(obj, cons, bounds=bounds)
    t["verify"], _ = _timed(lambda: verify_point(fresh, np.asarray(x, float),
                                                 fresh.parameter_vector()))
    pop = np.random.default_rng(1).uniform(-5, 5, (64, len(x)))
    _fitness_numpy._SOURCES.clear()  # keyed by the source: a fresh problem would hit them
    _fitness_numpy._NAMESPACES.clear()
    _fitness_adapter.ADAPTERS.clear()
    fresh = constropt.Problem(obj, cons, bounds=bounds)
    t["fitness"], _ = _timed(lambda: fresh.fitness(compile=False)(pop))
    return t


COMPILE = r"""
import json, sys, time, warnings
import numpy as np
sys.path.insert(0, {bench!r})
warnings.simplefilter("ignore")
import torch
import constropt
from stages import case
obj, cons, bounds, x = case({kind!r}, {size!r})
p = constropt.Problem(obj, cons, bounds=bounds)
pop = torch.as_tensor(np.random.default_rng(1).uniform(-5, 5, (64, len(x))))
t0 = time.perf_counter()
p.fitness(compile=True)(pop)
print(json.dumps(time.perf_counter() - t0))
"""


def compile_time(kind: str, size: int, limit: float):
    """Seconds of the first compiled call in a fresh process, or None past ``limit``."""
    code = COMPILE.format(bench=os.path.dirname(os.path.abspath(__file__)), kind=kind,
                          size=size)
    # a session of its own: past the limit, the compiler processes it started go too
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return None
    if proc.returncode != 0:
        return f"error: {stderr.strip().splitlines()[-1][:80]}"
    return json.loads(stdout.strip().splitlines()[-1])


def _cell(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, str):
        return v
    return f"{v * 1000:.0f} ms" if v < 10 else f"{v:.1f} s"


def report(rows: dict, comp: dict, rounds: int, limit: float, load: str) -> str:
    cols = list(STAGES) + ["compile"]
    lines = [header("Stage costs as the problem grows (benchmarks/stages.py)"),
             f"Best of {rounds} rounds of CPU time per cell (one thread; sizes interleaved "
             f"within a round, a fresh problem per stage, sympy's and constropt's source-"
             f"keyed caches emptied); compile: wall time, one round, a fresh process, "
             f"limit {limit:.0f} s ('> limit' past it).  growth: n = 1,000 over n = 100.  "
             f"{load}\n",
             "| problem | " + " | ".join(cols) + " |",
             "|---|" + "---:|" * len(cols)]
    for (kind, size), t in rows.items():
        name = (f"separable QP, n = {size:,}" if kind == "n"
                else f"10 variables, m = {size} linear")
        c = comp.get((kind, size), "not run")
        cells = [_cell(min(t[s])) for s in STAGES]
        cells.append(f"> {limit:.0f} s" if c is None and (kind, size) in comp else
                     _cell(c) if c != "not run" else c)
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    if ("n", 100) in rows and ("n", 1000) in rows:
        g = [min(rows["n", 1000][s]) / min(rows["n", 100][s]) for s in STAGES]
        c100, c1000 = comp.get(("n", 100)), comp.get(("n", 1000))
        cg = (f"{c1000 / c100:.1f}x" if isinstance(c100, float) and isinstance(c1000, float)
              else "-")
        lines.append("| growth 100 -> 1,000 | " + " | ".join(f"{v:.1f}x" for v in g)
                     + f" | {cg} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--output", default=None)
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--compile-limit", type=float, default=300.0)
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    mon = LoadMonitor()
    rows: dict = {key: {s: [] for s in STAGES} for key in SIZES}
    for r in range(args.rounds):
        for key in SIZES:
            t = measure(*key)
            for s in STAGES:
                rows[key][s].append(t[s])
            print(f"round {r + 1} {key}: " + ", ".join(f"{s} {v:.3f}" for s, v in t.items()),
                  flush=True)
    comp = {}
    if not args.no_compile:
        for key in SIZES:
            comp[key] = compile_time(*key, args.compile_limit)
            print(f"compile {key}: {comp[key]}", flush=True)
    emit(report(rows, comp, args.rounds, args.compile_limit, mon.line()), args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
