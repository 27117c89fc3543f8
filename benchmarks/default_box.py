"""The default search box: problems with open or huge sides, default options, seeds 0-2.

Prints, per problem and seed, the status, the objective reached and the known optimum (or
the honest answer, UNBOUNDED).  Run it against two source trees to compare them:

    PYTHONPATH=src python benchmarks/default_box.py
    PYTHONPATH=/path/to/other/src python benchmarks/default_box.py

Only the public API is used, so any version of constropt runs it.
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import sympy as sp

import constropt

x, y, a, b, c = sp.symbols("x y a b c")

_T = np.arange(1.0, 41.0)
_Y = 3.0 * np.exp(-0.1 * _T) + 0.5 + 0.01 * np.cos(3 * _T)
_FIT = sum((a * sp.exp(b * float(t)) + c - float(v)) ** 2 for t, v in zip(_T, _Y))

# (name, objective, constraints, bounds, known optimum or "UNBOUNDED")
PROBLEMS = [
    ("narrow well, y >= -2 only", 1 - sp.exp(-(x - 1) ** 2 - (y - sp.Rational(1, 2)) ** 2),
     [y >= -2], None, 0.0),
    ("HS1 Rosenbrock, y >= -1.5 only", 100 * (y - x**2) ** 2 + (1 - x) ** 2, [y >= -1.5],
     None, 0.0),
    ("HS2 Rosenbrock, y >= 1.5 only", 100 * (y - x**2) ** 2 + (1 - x) ** 2, [y >= 1.5], None,
     0.0504261879),
    ("exp fit a*exp(b t)+c, a >= 0", _FIT, [a >= 0], None, None),
    ("(x-1)^4 + y^2 + 1/2 in +-1e150", (x - 1) ** 4 + y**2 + sp.Rational(1, 2), [],
     {x: (-1e150, 1e150), y: (-1e150, 1e150)}, 0.5),
    ("(x-1)^4 + y^2 + 1/2 in +-1e300", (x - 1) ** 4 + y**2 + sp.Rational(1, 2), [],
     {x: (-1e300, 1e300), y: (-1e300, 1e300)}, 0.5),
    ("(x/100 - 3)^2, no bounds", (x / 100 - 3) ** 2, [], None, 0.0),
    ("min x, x <= 5 only", x, [x <= 5], None, "UNBOUNDED"),
    ("min log(x), 0 < x <= 1", sp.log(x), [x > 0, x <= 1], None, "UNBOUNDED"),
]


def main() -> None:
    print(f"constropt from {constropt.__file__}")
    print(f"{'problem':34s} seed  {'status':16s} {'success':7s} {'fun':>14s} "
          f"{'known':>12s} {'nfev':>7s} {'s':>6s}  verdict")
    right = total = 0
    for name, f, cons, bounds, known in PROBLEMS:
        for seed in range(3):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                t0 = time.perf_counter()
                res = constropt.solve(f, cons, bounds=bounds, seed=seed)
                secs = time.perf_counter() - t0
            if known == "UNBOUNDED":
                ok = res.status.name == "UNBOUNDED" and not res.success
            elif known is None:
                ok = res.success and np.isfinite(res.fun)
            else:
                ok = res.success and abs(res.fun - known) <= 1e-6 * max(1.0, abs(known))
            right += ok
            total += 1
            print(f"{name:34s} {seed:4d}  {res.status.name:16s} {str(res.success):7s} "
                  f"{res.fun:14.6g} {known!s:>12s} {res.nfev:7d} {secs:6.2f}  "
                  f"{'right' if ok else 'WRONG'}")
    print(f"right answers: {right} of {total}")


if __name__ == "__main__":
    main()
