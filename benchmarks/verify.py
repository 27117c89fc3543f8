"""Cost of the rigorous final check (Arb balls at the exact point) next to the float64
check it follows, measured side by side in one run.

Problems: the blog's examples 2 and 3 at their published optima; every benchmark problem
of the collection at its best known point; a 1,000-variable vector problem
(``Sum((x[i] - i/1000)**2)`` with two ``Sum`` constraints) and a 1,000-scalar-variable
problem (an ``Add`` of 1,000 terms).  For each: milliseconds per call of the float64
check (``check_point``), of :func:`verify_point` on a warm program (compiled once per
problem and cached), the first call (compilation included), and the ratio.

    python benchmarks/verify.py [--repeat 20]
"""

from __future__ import annotations

import argparse
import platform
import time
import warnings

import numpy as np
import sympy as sp


def _time(fn, repeat):
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def cases():
    import constropt
    from constropt import benchmarks

    out = []
    for name in benchmarks.names():
        bp = benchmarks.get(name)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            p = bp.problem()
        out.append((name, p, np.array(bp.x_star, dtype=np.float64)))
    n = 1000
    x = sp.IndexedBase("x", shape=(n,))
    i = sp.Symbol("i", integer=True)
    obj = sp.Sum((x[i] - i / sp.Integer(n)) ** 2, (i, 0, n - 1))
    cons = [sp.Sum(x[i], (i, 0, n - 1)) <= n / 2,
            sp.Sum(x[i] ** 2 * (i + 1), (i, 0, n - 1)) <= n**2]
    p = constropt.Problem(obj, cons, bounds={x: (-1, 1)})
    out.append(("vector_1000", p, np.arange(n) / n * 0.9))
    xs = sp.symbols(f"s0:{n}", real=True)
    p = constropt.Problem(sp.Add(*[(s - 0.5) ** 2 for s in xs]), [sp.Add(*xs) <= n / 3],
                          variables=xs, bounds={s: (0, 1) for s in xs})
    out.append(("scalars_1000", p, np.full(n, 0.3)))
    return out


def main(argv=None):
    from constropt.finish._verdict import check_point
    from constropt.finish._verify import verify_point
    from constropt.problem._rigorous import _PROGRAMS

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=20)
    args = ap.parse_args(argv)
    print(f"# rigorous final check vs float64 check ({platform.processor() or 'cpu'}, "
          f"best of {args.repeat})")
    print(f"{'problem':24s} {'n':>5s} {'m':>3s} {'float64 ms':>10s} {'rigorous ms':>11s} "
          f"{'first ms':>9s} {'ratio':>7s} {'float64':>8s} {'rigorous':>9s}")
    for name, p, x in cases():
        pvec = p.parameter_vector()
        f, V = check_point(p, x, pvec)
        _PROGRAMS.pop(p, None)
        t0 = time.perf_counter()
        ver = verify_point(p, x, pvec, fun=f, float64_feasible=bool(np.all(V == 0)))
        first = time.perf_counter() - t0
        t64 = _time(lambda p=p, x=x, pvec=pvec: check_point(p, x, pvec), args.repeat)
        trig = _time(lambda p=p, x=x, pvec=pvec, f=f: verify_point(p, x, pvec, fun=f),
                     args.repeat)
        print(f"{name:24s} {p.n:5d} {len(p.constraints):3d} {1e3 * t64:10.3f} "
              f"{1e3 * trig:11.3f} {1e3 * first:9.1f} {trig / t64:7.1f} "
              f"{str(ver.float64_feasible):>8s} {str(ver.feasible):>9s}")


if __name__ == "__main__":
    main()
