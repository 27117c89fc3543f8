"""Benchmark: ``Problem`` construction with bound propagation (FBBT) on NumPy vs torch.

Bound propagation runs on one box at construction.  It used to run the interval
runtime on torch tensors, which imports torch (about 2.4 s of a fresh process on a
2-core machine); it now runs the same inclusion functions on NumPy float64.  Printed:

1. whole fresh processes (new interpreter: import constropt, declare blog example 3),
   the two backends interleaved, medians;
2. in one process, the median construction time of each problem with either backend
   (torch already imported, so this is the per-problem cost alone), and their ratio;
3. the check that both backends give the same boxes on every collection problem:
   identical, or how many ulps apart (the libraries' last bits of transcendental
   results and torch's faithful ``sqrt`` differ; each box encloses the exact one).

Run: ``PYTHONPATH=src python benchmarks/construction.py [--repeats N]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
import warnings

import numpy as np

FRESH = r"""
import time
t0 = time.perf_counter()
import sympy as sp
import constropt
from constropt.problem import _fbbt
if {torch!r}:
    _fbbt.propagate.__defaults__ = _fbbt.propagate.__defaults__[:-1] + ("torch",)
x, y, z = sp.symbols("x y z")
p = constropt.Problem(sp.sin(x) + x**2 - 2 * sp.cos(y) + y**2 + z**2,
                      [x >= 0, y >= 0, y <= sp.pi, z <= 5, x + z >= 1,
                       sp.cos(y) + z >= 0.5],
                      bounds={{x: (-25, 25), y: (-25, 25), z: (-25, 25)}})
import sys
print(repr((time.perf_counter() - t0, "torch" in sys.modules)))
"""


def fresh(repeats: int) -> dict:
    env = dict(os.environ)
    src = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")
    env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    out = {"numpy": [], "torch": []}
    for _ in range(repeats):
        for name in out:
            t0 = time.perf_counter()
            r = subprocess.run([sys.executable, "-c", FRESH.format(torch=name == "torch")],
                               env=env, capture_output=True, text=True, check=True)
            wall = time.perf_counter() - t0
            _, imported = eval(r.stdout.strip().splitlines()[-1])
            assert imported == (name == "torch"), (name, imported)
            out[name].append(wall)
    return out


def _problems():
    import sympy as sp

    import constropt
    from constropt import benchmarks

    x, y, z = sp.symbols("x y z")
    g = sp.IndexedBase("g", shape=(1000,), integer=True)
    i = sp.Idx("i", 1000)
    rows = {
        "blog example 1": lambda: constropt.Problem(sp.Sum(g[i], (i, 0, 999)),
                                                    bounds={g: (1, 24)}, maximize=True),
        "blog example 2": lambda: constropt.Problem(
            x**2 + 2 * y**2 + 3 * z**2 + 4 * x * y - 5 * y * z,
            [x >= 1, y > 3, y <= 7, z < 0, x + y + z >= 3, x**2 + z**2 <= 10],
            maximize=True),
        "blog example 3": lambda: constropt.Problem(
            sp.sin(x) + x**2 - 2 * sp.cos(y) + y**2 + z**2,
            [x >= 0, y >= 0, y <= sp.pi, z <= 5, x + z >= 1, sp.cos(y) + z >= 0.5],
            bounds={x: (-25, 25), y: (-25, 25), z: (-25, 25)}),
    }
    for name in ("G03", "G05", "G10", "HS043", "welded_beam", "pressure_vessel"):
        rows[name] = (lambda n: lambda: benchmarks.get(n).problem())(name)
    return rows


def in_process(repeats: int) -> dict:
    import torch  # noqa: F401 - imported up front: only the per-problem cost is timed

    from constropt.problem import _fbbt

    defaults = _fbbt.propagate.__defaults__
    res = {}
    for name, build in _problems().items():
        times = {"numpy": [], "torch": []}
        build()  # warm: sympy caches, generated code
        for _ in range(repeats):
            for backend in times:
                _fbbt.propagate.__defaults__ = defaults[:-1] + (backend,)
                t0 = time.perf_counter()
                build()
                times[backend].append(time.perf_counter() - t0)
        _fbbt.propagate.__defaults__ = defaults
        res[name] = {k: statistics.median(v) for k, v in times.items()}
    return res


def same_boxes() -> tuple[int, int, list]:
    """FBBT with both backends on each collection problem's starting box."""
    from constropt import benchmarks
    from constropt.problem import _fbbt

    calls, orig = [], _fbbt.propagate

    def record(*a, **k):
        calls.append((a, k))
        return orig(*a, **k)

    _fbbt.propagate = record
    try:
        identical, total, diffs = 0, 0, []
        for bp in benchmarks.collection():
            calls.clear()
            bp.problem()
            for a, k in calls:
                r1 = orig(*a, **k)
                r2 = orig(*a, **dict(k, backend="torch"))
                total += 1
                assert (r1.proof is None) == (r2.proof is None), bp.name
                if np.array_equal(r1.lo, r2.lo) and np.array_equal(r1.hi, r2.hi):
                    identical += 1
                    continue
                ulps = max(_ulps(r1.lo, r2.lo), _ulps(r1.hi, r2.hi))
                diffs.append((bp.name, ulps))
    finally:
        _fbbt.propagate = orig
    return identical, total, diffs


def _ulps(u, v) -> float:
    fin = np.isfinite(u) & np.isfinite(v)
    assert np.array_equal(np.isfinite(u), np.isfinite(v))
    d = np.abs(u[fin] - v[fin]) / np.spacing(np.maximum(np.abs(u[fin]), np.abs(v[fin])))
    return float(d.max(initial=0.0))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")

    fr = fresh(args.repeats)
    tn, tt = statistics.median(fr["numpy"]), statistics.median(fr["torch"])
    print(f"## Fresh process: import constropt + declare blog example 3 "
          f"(median of {args.repeats}, interleaved)\n")
    print("| FBBT backend | wall (s) | ratio to torch |\n|---|---:|---:|")
    print(f"| torch (before) | {tt:.2f} | 1.00 |")
    print(f"| NumPy (now) | {tn:.2f} | {tn / tt:.2f} |\n")

    res = in_process(args.repeats)
    print(f"## Problem construction in one process (median of {args.repeats}, ms)\n")
    print("| problem | torch FBBT | NumPy FBBT | ratio |\n|---|---:|---:|---:|")
    for name, t in res.items():
        print(f"| {name} | {1e3 * t['torch']:.1f} | {1e3 * t['numpy']:.1f} | "
              f"{t['numpy'] / t['torch']:.2f} |")
    identical, total, diffs = same_boxes()
    print(f"\n## Same boxes on the collection\n\n{identical} of {total} propagations give "
          "bit-identical boxes on NumPy and torch" + (":" if diffs else "."))
    for name, u in diffs:
        print(f"- {name}: at most {u:.0f} ulps apart (transcendental/sqrt last bits)")


if __name__ == "__main__":
    main()
