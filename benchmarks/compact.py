"""Benchmark: generated code that stays compact as n grows, and what compiling it costs.

Two problems written with ``n`` plain sympy symbols (one per variable, as a user with
named variables writes them):

- ``qp``: the separable QP ``min sum (x_k - 1/2)**2, sum x_k >= n/2 + 1, -5 <= x_k <= 5``;
- ``ex1``: the original experiment's example 1, ``max sum g_k``, integer genes in 1..24.

For each problem and ``n`` in ``--sizes``: the generated source (lines, bytes), the time
to lower it (``Lowering`` of the problem's expressions), the first NumPy evaluation
(building the NumPy functions and one call on 1,000 points), and the ``torch.compile``
of ``Problem.fitness(compile=True)`` for a problem new to the machine (a fresh process,
no FX graph cache, an inductor cache directory that has compiled only a 3-variable
problem; the first call on 1,000 points minus the second; killed after
``--compile-timeout`` seconds).  ``--eager`` prints eager torch seconds per call;
``--eval`` adds NumPy evaluation time per point at ``--points`` points, vectorized and
unrolled side by side (interleaved rounds, medians); ``--solve T`` solves the QP with
defaults and ``time_limit=T`` (one JSON line of timings per size).

The ``unrolled`` rows of this version force every sum unrolled (``MIN_TERMS`` raised);
run the script with ``PYTHONPATH=/work/main/src`` for the code before the change (it has
no vectorized form: its rows are all unrolled).

Run: ``PYTHONPATH=src python benchmarks/compact.py [--sizes 10 100 1000] [--eval]``
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

import numpy as np


def _set_mode(mode: str) -> bool:
    """Vectorized or unrolled like terms; False where this version has no such switch."""
    try:
        from constropt.lowering import _liketerms
    except ImportError:
        return mode == "unrolled"
    _liketerms.MIN_TERMS = 10**9 if mode == "unrolled" else 2  # forced, any n
    return True


def build(case: str, n: int):
    import sympy as sp

    import constropt

    if case == "qp":
        x = sp.symbols(f"x0:{n}", real=True)
        f = sum((xi - sp.Rational(1, 2)) ** 2 for xi in x)
        return constropt.Problem(f, [sum(x) >= sp.Rational(n, 2) + 1], variables=x,
                                 bounds={xi: (-5, 5) for xi in x})
    g = sp.symbols(f"g0:{n}", integer=True)
    return constropt.Problem(sum(g), variables=g, bounds={gi: (1, 24) for gi in g},
                             maximize=True)


def _points(problem, k: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    lo, hi = problem.lower, problem.upper
    return (lo + rng.uniform(0, 1, (k, problem.n)) * (hi - lo)).T.copy()


def static_row(case: str, n: int, mode: str) -> dict | None:
    """Source size, lowering time and first NumPy evaluation of one problem."""
    if not _set_mode(mode):
        return None
    from constropt.lowering import Lowering

    p = build(case, n)
    lw = p.lowering
    t0 = time.perf_counter()
    fresh = Lowering(lw.objective, lw.constraints, lw.layout, lw.maximize)
    t_lower = time.perf_counter() - t0
    X, P = _points(p, 1000), np.zeros((len(lw.layout.parameters), 1))
    t0 = time.perf_counter()
    fn = fresh.functions("numpy")["fitness"]
    with np.errstate(all="ignore"):
        fn(X, P, p.eq_tol)
    t_first = time.perf_counter() - t0
    return {"case": case, "n": n, "mode": mode, "lines": len(fresh.source.splitlines()),
            "bytes": len(fresh.source), "lower_s": t_lower, "first_numpy_s": t_first}


def compile_child(case: str, n: int, mode: str) -> None:
    """In a fresh process: the cold compile of ``Problem.fitness(compile=True)``."""
    import warnings

    _set_mode(mode)
    import torch

    p = build(case, n)
    fit = p.fitness(compile=True)
    pop = torch.as_tensor(_points(p, 1000).T.copy(), dtype=torch.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        fit(pop)
        t1 = time.perf_counter()
        fit(pop)
        t2 = time.perf_counter()
    print(json.dumps({"compile_s": (t1 - t0) - (t2 - t1),
                      "bytes": len(p.source)}))


_CACHE: dict = {}


def _warm_cache(timeout: float) -> str:
    """An inductor cache directory of this run, warmed by compiling a 3-variable
    problem: later compiles pay for their own kernels, not for the first compile's
    one-time set-up (headers), as on a machine that has compiled anything before."""
    if "dir" not in _CACHE:
        _CACHE["dir"] = tempfile.mkdtemp(prefix="compact-ind-")
        _child("qp", 3, "unrolled", timeout)
    return _CACHE["dir"]


def _child(case: str, n: int, mode: str, timeout: float):
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=_CACHE["dir"],
               TORCHINDUCTOR_FX_GRAPH_CACHE="0", TORCHINDUCTOR_AUTOGRAD_CACHE="0")
    cmd = [sys.executable, __file__, "--compile-child", case, str(n), mode]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)


def compile_row(case: str, n: int, mode: str, timeout: float) -> dict:
    """The compile of a new problem in a fresh process: no graph cache, kernels of its
    own (the one-time set-up of the cache directory paid before, :func:`_warm_cache`)."""
    _warm_cache(timeout)
    try:
        out = _child(case, n, mode, timeout)
    except subprocess.TimeoutExpired:
        return {"compile_s": None, "timeout": timeout}
    if out.returncode != 0:
        return {"compile_s": None, "error": out.stderr.strip().splitlines()[-1:]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def eval_rows(case: str, n: int, points: int, rounds: int) -> dict:
    """NumPy seconds per call at ``points`` points, both forms, interleaved rounds."""
    fns = {}
    for mode in ("vectorized", "unrolled"):
        if _set_mode(mode):
            p = build(case, n)
            fns[mode] = p.lowering.functions("numpy")["fitness"]
    X = _points(p, points)
    P = np.zeros((0, 1))
    times: dict = {m: [] for m in fns}
    for _ in range(rounds):
        for m, fn in fns.items():
            t0 = time.perf_counter()
            with np.errstate(all="ignore"):
                fn(X, P, 1e-4)
            times[m].append(time.perf_counter() - t0)
    return {m: statistics.median(t) for m, t in times.items()}


def eager_rows(case: str, sizes, mode: str, pops, rounds: int) -> list:
    """Eager torch seconds per call of the generated fitness (one thread), by source
    size and population: the cost a compile can at most remove."""
    import torch

    torch.set_num_threads(1)
    _set_mode(mode)
    rows = []
    for n in sizes:
        p = build(case, n)
        fn = p.lowering.functions("torch")["fitness"]
        P = torch.zeros((0, 1), dtype=torch.float64)
        for S in pops:
            X = torch.as_tensor(_points(p, S))
            ts = []
            with torch.no_grad():
                for _ in range(rounds):
                    t0 = time.perf_counter()
                    fn(X, P, 1e-4)
                    ts.append(time.perf_counter() - t0)
            rows.append({"case": case, "n": n, "mode": mode, "S": S, "bytes": len(p.source),
                         "eager_s": statistics.median(ts)})
    return rows


def solve_row(n: int, time_limit: float) -> dict:
    """``constropt.solve`` of the QP with defaults and ``time_limit``: its timings."""
    import warnings

    import constropt

    t0 = time.perf_counter()
    p = build("qp", n)
    t_build = time.perf_counter() - t0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = constropt.solve(p, seed=0, time_limit=time_limit)
    return {"n": n, "time_limit": time_limit, "build_s": t_build, "status": str(r.status),
            "fun": None if r.fun is None else float(r.fun), "nfev": int(r.nfev),
            "backend": r.backend, "timings": {k: round(v, 2) for k, v in r.timings.items()}}


def _fmt(v, unit="s"):
    if v is None:
        return "-"
    return f"{v * 1e3:.2f} ms" if v < 1 else f"{v:.2f} {unit}"


def main(argv=None) -> None:
    if argv is None and len(sys.argv) > 1 and sys.argv[1] == "--compile-child":
        compile_child(sys.argv[2], int(sys.argv[3]), sys.argv[4])
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 1000])
    ap.add_argument("--cases", nargs="+", default=["qp", "ex1"])
    ap.add_argument("--modes", nargs="*", default=["vectorized", "unrolled"])
    ap.add_argument("--compile", action="store_true", help="measure cold compiles")
    ap.add_argument("--compile-timeout", type=float, default=300.0)
    ap.add_argument("--eval", action="store_true", help="NumPy time per call, both forms")
    ap.add_argument("--points", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--json", help="append every row to this JSON-lines file")
    ap.add_argument("--eager", action="store_true", help="eager torch time per call")
    ap.add_argument("--solve", type=float, metavar="TIME_LIMIT",
                    help="solve the QP at each size with defaults and this time_limit")
    args = ap.parse_args(argv)
    if args.solve is not None:
        for n in args.sizes:
            print(json.dumps(solve_row(n, args.solve)), flush=True)
        return
    if args.eager:
        print("| case | n | form | bytes | population | eager torch per call |")
        print("|---|---|---|---|---|---|")
        for case in args.cases:
            for mode in args.modes:
                for r in eager_rows(case, args.sizes, mode, (16, 10_000), args.rounds):
                    print(f"| {case} | {r['n']} | {mode} | {r['bytes']} | {r['S']:,} | "
                          f"{_fmt(r['eager_s'])} |", flush=True)
        return
    sink = open(args.json, "a") if args.json else None
    print("| case | n | form | lines | bytes | lowering | first NumPy eval | cold compile |")
    print("|---|---|---|---|---|---|---|---|")
    for case in args.cases:
        for n in args.sizes:
            for mode in args.modes:
                row = static_row(case, n, mode)
                if row is None:
                    continue
                if args.compile:
                    row.update(compile_row(case, n, mode, args.compile_timeout))
                comp = row.get("compile_s")
                ctext = _fmt(comp) if comp is not None else (
                    f"> {row['timeout']:.0f} s (killed)" if "timeout" in row else "-")
                print(f"| {case} | {n} | {mode} | {row['lines']} | {row['bytes']} | "
                      f"{_fmt(row['lower_s'])} | {_fmt(row['first_numpy_s'])} | {ctext} |",
                      flush=True)
                if sink:
                    sink.write(json.dumps(row) + "\n")
                    sink.flush()
    if args.eval:
        print(f"\nNumPy fitness, {args.points:,} points, median of {args.rounds} "
              "interleaved rounds\n")
        print("| case | n | vectorized | unrolled | unrolled / vectorized |")
        print("|---|---|---|---|---|")
        for case in args.cases:
            for n in args.sizes:
                pts = min(args.points, max(1, 10**8 // (8 * n)))  # at most 100 MB of X
                t = eval_rows(case, n, pts, args.rounds)
                v, u = t.get("vectorized"), t.get("unrolled")
                ratio = f"{u / v:.2f}" if v and u else "-"
                print(f"| {case} | {n} ({pts:,} points) | {_fmt(v)} | {_fmt(u)} | {ratio} |",
                      flush=True)


if __name__ == "__main__":
    main()
