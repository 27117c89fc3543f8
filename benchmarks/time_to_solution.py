"""Time and evaluations to a 1e-6 relative error: constropt against scipy and pymoo.

Problems: blog examples 2 and 3, and G06, G08 and the tension/compression spring from
``constropt.benchmarks``.  Each solver runs with several seeds in this process (after a
warm-up solve, so imports and first-call costs are not counted; the fresh-process cost
is measured separately), and the table gives medians of wall time and evaluations, the
median relative error of the reported objective against the published optimum, and how
many seeds reached the target: relative error <= 1e-6 at a point whose largest
constraint violation, checked in float64 by ``Problem.evaluate``, is at most 1e-8
(scipy's and pymoo's answers are not nudged into the feasible set as constropt's are).

Solvers, all with their own stopping rules (no target given to anyone):

- constropt ``solve(problem, seed=s)`` with default settings (and, when the default
  algorithm is not the GA, ``algorithm="ga"`` as a second row);
- scipy ``differential_evolution`` with ``vectorized=True`` (``updating="deferred"``;
  its ``nfev`` then counts calls, so points are counted by a wrapper, polish included),
  the objective and the constraints lambdified from the same sympy expressions (NumPy,
  whole population per call), ``NonlinearConstraint`` bounds for the relations, ``tol``
  1e-8, ``atol`` 0, ``polish=True`` (trust-constr with constraints), default population;
- pymoo's GA (SBX + polynomial mutation, feasibility-first survival) on a vectorized
  problem, population 100, termination on ``ftol`` 1e-10 over 50 generations, when pymoo
  is installed (skipped cleanly otherwise).

Run: ``PYTHONPATH=src python benchmarks/time_to_solution.py [--quick] [--output FILE]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import subprocess
import sys
import time
import warnings

import numpy as np
import sympy as sp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _machine import LoadMonitor, Quiet, emit, fmt_load, header  # noqa: E402

PROBLEMS = ("blog_example2", "blog_example3", "G06", "G08", "tension_compression_spring")
TARGET = 1e-6
CV_TOL = 1e-8




@dataclasses.dataclass
class Run:
    seconds: float
    nfev: int
    fun: float        # user's sense
    maxcv: float      # float64 check


def check(problem, x) -> float:
    ev = problem.evaluate(np.asarray(x, dtype=np.float64).reshape(1, -1))
    V = np.asarray(ev.violation, dtype=np.float64)
    return float(V.max()) if V.size else 0.0


# --------------------------------------------------------------------------- solvers

def run_constropt(rec, problem, seed: int, **opts) -> Run:
    import constropt

    t0 = time.perf_counter()
    res = constropt.solve(problem, seed=seed, **opts)
    dt = time.perf_counter() - t0
    return Run(dt, res.nfev, res.fun, check(problem, res.x_array))


def numpy_functions(rec):
    """Vectorized NumPy objective (minimization sense) and constraint functions
    lambdified from the record's sympy expressions; ``x`` has shape (N,) or (N, S)."""
    f_expr = -rec.objective if rec.maximize else rec.objective
    f_lam = sp.lambdify(rec.variables, f_expr, "numpy")
    cons = []
    for c in rec.constraints:
        if isinstance(c, sp.Equality):
            cons.append((c.lhs - c.rhs, 0.0, 0.0))
        elif isinstance(c, (sp.LessThan, sp.StrictLessThan)):
            cons.append((c.lhs - c.rhs, -np.inf, 0.0))
        elif isinstance(c, (sp.GreaterThan, sp.StrictGreaterThan)):
            cons.append((c.lhs - c.rhs, 0.0, np.inf))
        else:
            raise TypeError(f"unsupported constraint {c}")
    g_lam = sp.lambdify(rec.variables, [e for e, _, _ in cons], "numpy")
    lb = np.array([lo for _, lo, _ in cons])
    ub = np.array([hi for _, _, hi in cons])

    def f(x):
        x = np.asarray(x, dtype=np.float64)
        return np.broadcast_to(f_lam(*x), x.shape[1:]).astype(np.float64)

    def g(x):
        x = np.asarray(x, dtype=np.float64)
        return np.stack([np.broadcast_to(v, x.shape[1:]) for v in g_lam(*x)]).astype(
            np.float64)

    return f, g, lb, ub


def run_scipy_de(rec, problem, seed: int) -> Run:
    from scipy.optimize import NonlinearConstraint, differential_evolution

    f, g, lb, ub = numpy_functions(rec)
    bounds = [tuple(float(b) for b in rec.bounds[v]) for v in rec.variables]
    points = [0]

    def counted(x):  # vectorized DE counts calls in res.nfev; count points instead
        points[0] += 1 if np.ndim(x) == 1 else np.shape(x)[1]
        return f(x)

    t0 = time.perf_counter()
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        res = differential_evolution(
            counted, bounds, constraints=NonlinearConstraint(g, lb, ub), vectorized=True,
            updating="deferred", tol=1e-8, atol=0, polish=True, seed=seed, maxiter=3000)
    dt = time.perf_counter() - t0
    fun = -res.fun if rec.maximize else res.fun
    return Run(dt, points[0], float(fun), check(problem, res.x))


def have_pymoo() -> bool:
    try:
        import pymoo  # noqa: F401
    except ImportError:
        return False
    return True


def run_pymoo(rec, problem, seed: int) -> Run:
    from pymoo.algorithms.soo.nonconvex.ga import GA
    from pymoo.core.problem import Problem as PymooProblem
    from pymoo.optimize import minimize
    from pymoo.termination.default import DefaultSingleObjectiveTermination

    f, g, lb, ub = numpy_functions(rec)
    n = len(rec.variables)
    xl = np.array([float(rec.bounds[v][0]) for v in rec.variables])
    xu = np.array([float(rec.bounds[v][1]) for v in rec.variables])
    n_ieq = int(np.sum(np.isfinite(lb)) + np.sum(np.isfinite(ub)) - np.sum(lb == ub))
    n_eq = int(np.sum(lb == ub))

    class P(PymooProblem):
        def __init__(self):
            super().__init__(n_var=n, n_obj=1, n_ieq_constr=n_ieq, n_eq_constr=n_eq,
                             xl=xl, xu=xu)

        def _evaluate(self, X, out, *args, **kwargs):
            with np.errstate(all="ignore"):
                C = g(X.T)                     # (M, S)
                out["F"] = f(X.T)[:, None]
                G, H = [], []
                for k in range(C.shape[0]):
                    if lb[k] == ub[k]:
                        H.append(C[k] - lb[k])
                    else:
                        if np.isfinite(ub[k]):
                            G.append(C[k] - ub[k])
                        if np.isfinite(lb[k]):
                            G.append(lb[k] - C[k])
                if G:
                    out["G"] = np.stack(G, axis=1)
                if H:
                    out["H"] = np.stack(H, axis=1)

    term = DefaultSingleObjectiveTermination(ftol=1e-10, period=50, n_max_gen=3000,
                                             n_max_evals=10**7)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = minimize(P(), GA(pop_size=100, eliminate_duplicates=True), term, seed=seed,
                       verbose=False)
    dt = time.perf_counter() - t0
    if res.X is None:  # no feasible point
        return Run(dt, int(res.algorithm.evaluator.n_eval), float("nan"), float("inf"))
    x = np.asarray(res.X, dtype=np.float64).ravel()
    fun = float(f(x))
    return Run(dt, int(res.algorithm.evaluator.n_eval), -fun if rec.maximize else fun,
               check(problem, x))


# --------------------------------------------------------------------------- fresh process

FRESH = r"""
import time
t0 = time.perf_counter()
import sympy as sp
import constropt
x, y, z = sp.symbols("x y z")
res = constropt.solve(sp.sin(x) + x**2 - 2 * sp.cos(y) + y**2 + z**2,
                      [x >= 0, y >= 0, y <= sp.pi, z <= 5, x + z >= 1,
                       sp.cos(y) + z >= 0.5],
                      bounds={x: (-25, 25), y: (-25, 25), z: (-25, 25)}, seed=0)
print(repr((time.perf_counter() - t0, res.fun, res.success)))
"""


FRESH_SCIPY = r"""
import time
t0 = time.perf_counter()
import numpy as np
import sympy as sp
from scipy.optimize import NonlinearConstraint, differential_evolution
x, y, z = sp.symbols("x y z")
f = sp.lambdify((x, y, z), sp.sin(x) + x**2 - 2 * sp.cos(y) + y**2 + z**2, "numpy")
g = sp.lambdify((x, y, z), [x, y, y - sp.pi, z - 5, x + z - 1, sp.cos(y) + z - 0.5],
                "numpy")
lb = np.array([0, 0, -np.inf, -np.inf, 0, 0.0])
ub = np.array([np.inf, np.inf, 0, 0, np.inf, np.inf])
res = differential_evolution(
    lambda v: f(*v), [(-25, 25)] * 3, vectorized=True, updating="deferred", tol=1e-8,
    atol=0, polish=True, seed=0, maxiter=3000,
    constraints=NonlinearConstraint(lambda v: np.stack(np.broadcast_arrays(*g(*v))), lb, ub))
print(repr((time.perf_counter() - t0, float(res.fun), bool(res.success))))
"""


def fresh_process(repeats: int):
    """Wall times of whole new Python processes declaring and solving blog example 3:
    constropt and scipy DE interleaved (one of each per repeat), so both see the same
    machine.  Returns ``{"constropt": (walls, inner, funs), "scipy": (...)}``."""
    env = dict(os.environ)
    src = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")
    env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    out_all = {"constropt": ([], [], []), "scipy": ([], [], [])}
    for _ in range(repeats):
        for name, code in (("constropt", FRESH), ("scipy", FRESH_SCIPY)):
            walls, inner, funs = out_all[name]
            t0 = time.perf_counter()
            out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                                 text=True, check=True)
            walls.append(time.perf_counter() - t0)
            t_in, fun, ok = eval(out.stdout.strip().splitlines()[-1])
            inner.append(t_in)
            funs.append((fun, ok))
    return out_all


# --------------------------------------------------------------------------- main

def summarize(name, solver, runs, f_star):
    rel = [abs(r.fun - f_star) / max(abs(f_star), 1e-300) if np.isfinite(r.fun) else np.inf
           for r in runs]
    ok = [e <= TARGET and r.maxcv <= CV_TOL for e, r in zip(rel, runs, strict=True)]
    return (f"| {name} | {solver} | {statistics.median(r.seconds for r in runs):.3g} | "
            f"{statistics.median(r.nfev for r in runs):,.0f} | {statistics.median(rel):.1e} | "
            f"{max(r.maxcv for r in runs):.1e} | {sum(ok)}/{len(ok)} |"), ok, runs


def main(argv=None) -> str:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer seeds")
    ap.add_argument("--seeds", type=int, default=None)
    ap.add_argument("--problems", default=",".join(PROBLEMS))
    ap.add_argument("--output", help="also write the markdown here")
    ap.add_argument("--fresh", type=int, default=5,
                    help="whole-process runs of each solver (interleaved)")
    ap.add_argument("--wait-quiet", type=float, default=0.0, metavar="SECONDS",
                    help="before each problem/solver, wait up to this long for an idle "
                         "machine")
    args = ap.parse_args(argv)
    load = LoadMonitor()
    seeds = list(range(args.seeds or (3 if args.quick else 5)))

    import constropt
    from constropt import benchmarks
    from constropt.solver._options import SolveOptions

    t_all = time.perf_counter()
    opt_names = {f.name for f in dataclasses.fields(SolveOptions)}
    default_algo = SolveOptions().algorithm if "algorithm" in opt_names else "ga"
    solvers = [(f"constropt (defaults: {default_algo})", lambda rec, p, s: run_constropt(
        rec, p, s))]
    if default_algo != "ga":
        solvers.append(("constropt (algorithm='ga')", lambda rec, p, s: run_constropt(
            rec, p, s, algorithm="ga")))
    solvers.append(("scipy DE (vectorized, polish)", run_scipy_de))
    pymoo_note = "pymoo: installed" if have_pymoo() else "pymoo: not installed (skipped)"
    if have_pymoo():
        solvers.append(("pymoo GA (pop 100)", run_pymoo))

    # warm-up: imports, first torch calls, scipy imports
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        warm = benchmarks.get("blog_example3")
        for _, fn in solvers:
            fn(warm, warm.problem(), 12345)

    rows = ["| problem | solver | time (s, median) | evaluations (median) | rel. error "
            "(median) | max violation (worst seed) | reached 1e-6 | other load |",
            "|" + "---|" * 8]
    verdict = {}
    for name in args.problems.split(","):
        rec = benchmarks.get(name)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            problem = rec.problem()
        for label, fn in solvers:
            with Quiet(args.wait_quiet) as q:
                runs = [fn(rec, problem, s) for s in seeds]
            row, ok, runs = summarize(name, label, runs, rec.f_star)
            row += f" {fmt_load(q.load)} |"
            rows.append(row)
            verdict[(name, label)] = (statistics.median(r.seconds for r in runs), sum(ok))
            print(row, file=sys.stderr, flush=True)

    fresh = "Whole process: not measured (--fresh 0)."
    if args.fresh > 0:
        with Quiet(args.wait_quiet) as qf:
            fp = fresh_process(args.fresh)
        med = {k: statistics.median(v[0]) for k, v in fp.items()}
        rows.append(f"| blog_example3, whole process | constropt (defaults) | "
                    f"{med['constropt']:.3g} | - | - | - | "
                    f"{sum(ok for _, ok in fp['constropt'][2])}/{args.fresh} success | "
                    f"{fmt_load(qf.load)} |")
        rows.append(f"| blog_example3, whole process | scipy DE (vectorized, polish) | "
                    f"{med['scipy']:.3g} | - | - | - | "
                    f"{sum(ok for _, ok in fp['scipy'][2])}/{args.fresh} success | "
                    f"{fmt_load(qf.load)} |")
        fresh = (f"Whole process (new interpreter: imports, declaring blog example 3 in sympy, "
                 f"solve with defaults, seed 0), {args.fresh} runs each, constropt and scipy DE "
                 f"interleaved: constropt wall {', '.join(f'{w:.2f}' for w in fp['constropt'][0])}"
                 f" s (median {med['constropt']:.2f} s; inside the script "
                 f"{statistics.median(fp['constropt'][1]):.2f} s), scipy DE wall "
                 f"{', '.join(f'{w:.2f}' for w in fp['scipy'][0])} s (median {med['scipy']:.2f} s):"
                 f" constropt at {med['constropt'] / med['scipy']:.2f}x scipy's wall time; "
                 f"constropt f = {fp['constropt'][2][0][0]:.10f}, scipy f = "
                 f"{fp['scipy'][2][0][0]:.10f}; other load {fmt_load(qf.load)}.")
    comp = []
    for name in args.problems.split(","):
        c = verdict[(name, solvers[0][0])]
        d = verdict[(name, "scipy DE (vectorized, polish)")]
        comp.append(f"{name}: constropt {c[0]:.3g} s ({c[1]}/{len(seeds)} reached) vs scipy DE "
                    f"{d[0]:.3g} s ({d[1]}/{len(seeds)})")
    text = [header("Time to solution: constropt vs scipy DE vs pymoo"),
            f"Seeds {seeds[0]}..{seeds[-1]}, all solvers in one process after a warm-up solve; "
            f"'reached 1e-6': relative error of the reported objective <= {TARGET:g} and "
            f"max violation <= {CV_TOL:g} (float64 check).  {pymoo_note}.  'other load': "
            "CPU share other processes took while the row ran.",
            "", *rows, "", fresh, "", "Second-solve comparison (median wall time): "
            + "; ".join(comp) + ".", "",
            f"Total benchmark time {time.perf_counter() - t_all:.0f} s; constropt "
            f"{getattr(constropt, '__version__', '?')}." + f"  {load.line()}"]
    return emit("\n".join(text), args.output)


if __name__ == "__main__":
    main()
