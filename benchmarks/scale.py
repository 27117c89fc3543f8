"""Easy problems at local-solver speed: constropt's defaults against one SLSQP start.

Side by side in one run, interleaved round by round (medians of ``--rounds``):

1. ``sepqp``: ``min sum (x_i - 1/2)^2`` subject to ``sum x_i >= n/2 + 1``,
   ``-5 <= x_i <= 5``; ``f* = 1/n`` (the constraint is active: ``x_i = 1/2 + 1/n``);
2. ``linqp``: 10 variables, ``m`` random linear constraints ``A x <= b`` (integer
   ``A``, feasible by construction: ``b = A x_f + s`` with ``s >= 1``), a dense convex
   QP objective ``(x - c)^T Q (x - c)`` (``Q = B^T B + I``, integer ``B``, ``c`` outside
   the feasible set), ``-10 <= x_i <= 10``; ``f*`` from a reference SLSQP solve with
   ``ftol = 1e-15`` from the feasible point ``x_f``.

constropt: ``Problem`` construction and ``solve`` with defaults (seed 0) from the sympy
expressions; SLSQP: scipy's, one start at the box centre with the objective, constraints
and their gradients written by hand in NumPy (``ftol = 1e-12``).  Then CEC G03 scaled to
``n`` variables (``min -(sqrt n)^n prod x_i``, ``sum x_i^2 = 1``, ``0 <= x_i <= 1``,
``f* = -1``): constropt's defaults once, its ``f`` and ``|h|``.  ``--search`` adds one run
of the evolutionary search (``local_first=False``) per problem up to 100 variables.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONPATH=src python benchmarks/scale.py \
        [--sizes 30,100,300,1000] [--constraints 100,300] [--rounds 3] [--search] \
        [--out benchmarks/results/scale.md]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings

import numpy as np
import sympy as sp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _machine import emit, header  # noqa: E402

# -- the problems: sympy for constropt, NumPy for SLSQP ---------------------------------------

def sepqp(n):
    x = sp.symbols(f"x0:{n}")
    half = sp.Rational(1, 2)
    spec = (sum((xi - half) ** 2 for xi in x), [sum(x) >= sp.Rational(n, 2) + 1],
            {xi: (-5, 5) for xi in x})
    np_ = dict(fun=lambda v: float(np.sum((v - 0.5) ** 2)), jac=lambda v: 2 * (v - 0.5),
               cons=[{"type": "ineq", "fun": lambda v: np.array([v.sum() - (n / 2 + 1)]),
                      "jac": lambda v: np.ones((1, n))}],
               bounds=[(-5.0, 5.0)] * n, x0=np.zeros(n))
    return spec, np_, 1.0 / n


def linqp(m, n=10, seed=0):
    rng = np.random.default_rng(seed)
    A = rng.integers(-9, 10, size=(m, n))
    xf = rng.integers(-2, 3, size=n)
    b = A @ xf + rng.integers(1, 6, size=m)
    B = rng.integers(-3, 4, size=(n, n))
    Q = B.T @ B + np.eye(n, dtype=np.int64)
    c = xf + rng.integers(6, 10, size=n) * rng.choice([-1, 1], size=n)
    x = sp.symbols(f"x0:{n}")
    d = [xi - int(ci) for xi, ci in zip(x, c)]
    f = sum(int(Q[i, j]) * d[i] * d[j] for i in range(n) for j in range(n))
    cons = [sum(int(A[k, j]) * x[j] for j in range(n)) <= int(b[k]) for k in range(m)]
    Qf, Af, bf, cf = Q.astype(float), A.astype(float), b.astype(float), c.astype(float)
    np_ = dict(fun=lambda v: float((v - cf) @ Qf @ (v - cf)),
               jac=lambda v: 2 * Qf @ (v - cf),
               cons=[{"type": "ineq", "fun": lambda v: bf - Af @ v, "jac": lambda v: -Af}],
               bounds=[(-10.0, 10.0)] * n, x0=np.zeros(n))
    ref = _slsqp(np_, x0=xf.astype(float), ftol=1e-15, maxiter=2000)
    fstar = kkt_reference(Qf, cf, Af, bf, -10.0, 10.0, ref.x)
    return (f, cons, {xi: (-10, 10) for xi in x}), np_, fstar


def kkt_reference(Q, c, A, b, lo, hi, x, tol=1e-6):
    """The optimum of ``min (x - c)^T Q (x - c)``, ``A x <= b``, ``lo <= x <= hi`` from an
    approximate solution ``x``: its active set (within ``tol``), the KKT system of that
    set solved exactly (in float64), the result checked: feasible, multipliers >= 0.
    Raises where the check fails (no reference to quote)."""
    n = len(c)
    act = np.flatnonzero(b - A @ x <= tol)
    at_lo, at_hi = np.flatnonzero(x - lo <= tol), np.flatnonzero(hi - x <= tol)
    E = np.vstack([A[act], -np.eye(n)[at_lo], np.eye(n)[at_hi]])
    e = np.concatenate([b[act], -lo * np.ones(len(at_lo)), hi * np.ones(len(at_hi))])
    K = np.block([[2 * Q, E.T], [E, np.zeros((len(e), len(e)))]])
    sol = np.linalg.lstsq(K, np.concatenate([2 * Q @ c, e]), rcond=None)[0]
    xs, lam = sol[:n], sol[n:]
    slack = np.concatenate([b - A @ xs, xs - lo, hi - xs])
    if slack.min() < -1e-9 or (lam.size and lam.min() < -1e-9):
        raise RuntimeError("the reference QP solve did not verify (active set)")
    return float((xs - c) @ Q @ (xs - c))


def g03(n):
    x = sp.symbols(f"x0:{n}")
    return (-(sp.sqrt(n) ** n) * sp.Mul(*x), [sp.Eq(sum(xi ** 2 for xi in x), 1)],
            {xi: (0, 1) for xi in x})


# -- the two solvers ---------------------------------------------------------------------------

def _slsqp(np_, x0=None, ftol=1e-12, maxiter=500):
    from scipy.optimize import minimize

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return minimize(np_["fun"], np_["x0"] if x0 is None else x0, jac=np_["jac"],
                        method="SLSQP", bounds=np_["bounds"], constraints=np_["cons"],
                        options={"ftol": ftol, "maxiter": maxiter})


def run_slsqp(np_):
    t0 = time.perf_counter()
    res = _slsqp(np_)
    return time.perf_counter() - t0, res


def run_constropt(spec, **kw):
    import constropt

    f, cons, bounds = spec
    t0 = time.perf_counter()
    res = constropt.solve(f, cons, bounds=bounds, seed=0, **kw)
    return time.perf_counter() - t0, res


def _feasible_np(np_, v, tol=1e-9):
    ok = all(lo - tol <= a <= hi + tol for a, (lo, hi) in zip(v, np_["bounds"]))
    return ok and all(np.all(c["fun"](v) >= -tol) for c in np_["cons"])


def compare(name, spec, np_, fstar, rounds, search):
    """One row: constropt's defaults and SLSQP, interleaved, medians."""
    tc, ts = [], []
    res = sres = None
    for _ in range(rounds):
        t, res = run_constropt(spec)
        tc.append(t)
        t, sres = run_slsqp(np_)
        ts.append(t)
    mc, ms, c1 = statistics.median(tc), statistics.median(ts), tc[0]
    row = (f"| {name} | {c1:.3f} | {mc:.3f} | {ms:.4f} | {c1 / ms:.0f} | {mc / ms:.0f} | "
           f"{'yes' if c1 <= max(1.0, 10 * ms) else 'no'} / "
           f"{'yes' if mc <= max(1.0, 10 * ms) else 'no'} | {abs(res.fun - fstar):.1e} | "
           f"{abs(res.fun - fstar) / (1 + abs(fstar)):.1e} | "
           f"{res.feasible} | {res.status.name} | {res.nfev:,} | "
           f"{abs(sres.fun - fstar):.1e} "
           f"({'feasible' if _feasible_np(np_, sres.x) else 'infeasible'}) |")
    extra = None
    if search:
        t, sr = run_constropt(spec, local_first=False)
        extra = (f"| {name} | {t:.2f} | {abs(sr.fun - fstar):.1e} | {sr.feasible} | "
                 f"{sr.status.name} | {sr.nfev:,} |")
    print(row, flush=True)
    return row, extra


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="30,100,300,1000")
    ap.add_argument("--constraints", default="100,300")
    ap.add_argument("--g03", default="30,100")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--search", action="store_true")
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    load0 = os.getloadavg()[0]
    rows, extras = [], []
    cases = [(f"sepqp n={n}", *sepqp(n)) for n in map(int, a.sizes.split(",")) if n]
    cases += [(f"linqp n=10 m={m}", *linqp(m)) for m in map(int, a.constraints.split(","))
              if m]
    for name, spec, np_, fstar in cases:
        n = len(spec[2])
        row, extra = compare(name, spec, np_, fstar, a.rounds, a.search and n <= 100)
        rows.append(row)
        if extra:
            extras.append(extra)
    g_rows = []
    for n in (int(v) for v in a.g03.split(",") if v):
        t, res = run_constropt(g03(n))
        h = abs(float(np.sum(res.x_array ** 2)) - 1.0)
        g_rows.append(f"| {n} | {t:.2f} | {res.fun:.10f} | {abs(res.fun + 1):.1e} | "
                      f"{h:.1e} | {res.feasible} | {res.status.name} | {res.nfev:,} |")
        print(g_rows[-1], flush=True)
    text = [header("Easy problems at local-solver speed: defaults against one SLSQP start"),
            f"Load average at start {load0:.1f}, at end {os.getloadavg()[0]:.1f}; "
            f"{a.rounds} interleaved rounds, medians; OMP_NUM_THREADS="
            f"{os.environ.get('OMP_NUM_THREADS', 'unset')}.  Regenerate: `python "
            f"benchmarks/scale.py {' '.join(argv if argv is not None else sys.argv[1:])}`.\n",
            "constropt time: `solve` with defaults (seed 0) from the sympy expressions, "
            "lowering included; SLSQP: one start at the box centre, NumPy objective, "
            "constraints and gradients by hand.  Target (issue 28): within 1e-6 of f*, "
            "feasible, constropt's time within max(1 s, 10x) of SLSQP's.\n",
            "The first round is a cold solve in this process (its code generated and its "
            "derivatives built); later rounds of the same problem reuse the process's "
            "caches, as a program that solves it again does.\n",
            "| problem | constropt s, first | constropt s, median | SLSQP s, median | "
            "ratio first | ratio median | within max(1 s, 10x): first / median | "
            "constropt abs(f - f*) | relative | feasible | status | evaluations | "
            "SLSQP abs(f - f*) |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|", *rows]
    if extras:
        text += ["", "The evolutionary search on the same problems (`local_first=False`, "
                 "one run each):", "",
                 "| problem | s | abs(f - f*) | feasible | status | evaluations |",
                 "|---|---|---|---|---|---|", *extras]
    if g_rows:
        text += ["", "CEC G03 scaled to n variables (f* = -1), defaults, one run; h = "
                 "abs(sum x_i^2 - 1):", "",
                 "| n | s | f | abs(f + 1) | h | feasible | status | evaluations |",
                 "|---|---|---|---|---|---|---|---|", *g_rows]
    emit("\n".join(text), a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
