"""constropt beside scipy and pymoo on the benchmark collection, CEC 2006 style.

Every run of every solver gets the same budget (500,000 evaluations by default) and
its final point is judged by the same rule: constropt's own float64 check
(``constropt.solver._solve.check_point``: inequalities ``g <= 0``, strict ones ``g < 0``,
equalities ``|h| <= eq_tol``, 1e-4 for the whole collection) plus the distance to
the published optimum f*:

* **abs** (the CEC 2006 rule): feasible and ``f - f* <= 1e-4``
  (``f* - f`` for maximization problems);
* **rel**: feasible and ``f - f* <= 1e-4 * max(1, |f*|)``, which matters for
  problems with large |f*| (G04 -30665.5, G05 5126.5, G10 7049.2, pressure
  vessel 6059.7, ...).

A point better than f* (possible where f* is a best known value or relies on the
equality tolerance) counts as a success.

Solvers
-------
constropt
    ``constropt.solve(bench.problem(), seed=run, max_evals=budget)``, all defaults
    (SLSQP polish included).
scipy
    ``scipy.optimize.differential_evolution`` on the generated NumPy code,
    vectorized (one call per generation, hence ``updating="deferred"``), defaults
    otherwise (``best1bin``, ``popsize=15``, latin hypercube init), ``tol=0,
    atol=0`` and ``maxiter`` such that ``popsize * n * (maxiter + 1)`` is the
    budget, its own constraint handling through a ``NonlinearConstraint``
    (equalities as ``-eq_tol <= h <= eq_tol``, strict inequalities as
    ``g <= -1e-12``), ``polish=True`` (trust-constr, on top of the budget),
    ``integrality`` for integer variables. No knowledge of f* is given to it.
pymoo-ga, pymoo-de, pymoo-isres
    pymoo's ``GA``, ``DE`` (its default ``DE/best/1/bin``) and ``ISRES``
    (Runarsson and Yao's stochastic ranking ES), default settings, inequality
    constraints ``G <= 0`` with equalities as ``|h| - eq_tol <= 0``; integer
    variables are rounded before each evaluation. Termination: pymoo's default
    single-objective criteria (x, cv and f stagnation over 30 generations) with the
    evaluation cap raised to the budget (``--pymoo-termination default``), or
    exactly the budget (``--pymoo-termination budget``).

The problem is built (``bench.problem()``) inside each timed run, for every solver.
Evaluations are points at which the objective and constraints were evaluated
(for scipy: distinct points passed to the objective or to the constraint function,
the larger of the two counts: a point equal to one of the last two batches, e.g.
scipy's re-evaluation of its unchanged population while no member is feasible, or a
trial identical to a member of a collapsed population, is answered from a memo and
not counted). "to target" is the number of evaluations after which
the solver's incumbent (best point of the generation, as the solver ranks it;
for constropt the best point of its history) first met the abs rule, recorded
by a callback that never stops or steers the run; the final polish of constropt
and scipy is reached only at the end, so a success found there counts all the
run's evaluations.

Usage
-----
    cd /work/main && PYTHONPATH=src python benchmarks/suite.py --quick \\
        --out benchmarks/results/suite_quick.md
    PYTHONPATH=src python benchmarks/suite.py --runs 25 \\
        --solver-runs scipy=5,pymoo-ga=5,pymoo-de=5 --out benchmarks/results/suite.md

Runs are independent and go to ``--jobs`` worker processes (default 2, torch held
to one thread each). Each finished run is appended to a JSON-lines file (next to
``--out``, ``*_raw.jsonl``); ``--resume`` skips the runs already there, and
``--report-only`` rebuilds the tables from it.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import statistics
import sys
import time
import traceback
import warnings

import numpy as np

BUDGET = 500_000
ABS_TOL = 1e-4
REL_TOL = 1e-4
QUICK = ("blog_example2", "G01", "G04", "G06", "G08", "G11", "G24",
         "tension_compression_spring", "pressure_vessel")
QUICK_RUNS = 3
DEFAULT_SOLVERS = ("constropt", "scipy", "pymoo-ga", "pymoo-de")
ALL_SOLVERS = ("constropt", "scipy", "pymoo-ga", "pymoo-de", "pymoo-isres")
STRICT = 1e-12  # margin for strict inequalities in scipy and pymoo


# --------------------------------------------------------------------------- judging

def errors(bench, fun: float) -> float:
    """``f - f*`` in the direction of optimization (negative: better than f*)."""
    if fun is None or not math.isfinite(fun):
        return math.inf
    return (bench.f_star - fun) if bench.maximize else (fun - bench.f_star)


def success(bench, fun, feasible) -> tuple[bool, bool]:
    """(abs rule, rel rule) for a final point."""
    if not feasible:
        return False, False
    e = errors(bench, fun)
    return e <= ABS_TOL, e <= REL_TOL * max(1.0, abs(bench.f_star))


class Tracker:
    """Records the evaluation count at which an incumbent first met the abs rule."""

    def __init__(self, bench, problem, pvec):
        self.bench, self.problem, self.pvec = bench, problem, pvec
        self.hit = None

    def see(self, x, nfev: int) -> None:
        if self.hit is not None or x is None:
            return
        from constropt.solver._solve import check_point

        x = np.where(self.problem.integer, np.round(x), np.asarray(x, float))
        f, V = check_point(self.problem, x, self.pvec)
        if success(self.bench, f, bool(np.all(V == 0)))[0]:
            self.hit = int(nfev)


def final_check(problem, pvec, x):
    from constropt.solver._solve import check_point

    x = np.where(problem.integer, np.round(x), np.asarray(x, float))
    f, V = check_point(problem, x, pvec)
    return x, f, bool(np.all(V == 0)), float(V.max()) if V.size else 0.0


# --------------------------------------------------------------------------- solvers

def _leaf_rows(problem):
    from constropt.solver._polish import conjunctive_leaves

    conj = conjunctive_leaves(problem)
    if len(conj) != len(problem.leaves):
        raise RuntimeError("the problem has disjunctive constraints, which scipy and "
                           "pymoo cannot express")
    return np.array(conj, dtype=int), [problem.leaves[k].kind for k in conj]


def run_constropt(bench, seed, budget, opts):
    import constropt

    t0 = time.perf_counter()
    problem = bench.problem()
    res = constropt.solve(problem, seed=seed, max_evals=budget)
    seconds = time.perf_counter() - t0
    pvec = problem.parameter_vector(None)
    hit = None
    h = res.history
    ok_abs = success(bench, res.fun, res.feasible)[0]
    for nf, f, cv in zip(h.nfev, h.fun, h.cv):
        if cv == 0 and errors(bench, float(f)) <= ABS_TOL:
            hit = int(nf)
            break
    if ok_abs and hit is None:
        hit = int(res.nfev)  # reached by the polish
    if not ok_abs:
        hit = None
    return dict(x=np.asarray(res.x_array, float).tolist(), fun=float(res.fun),
                feasible=bool(res.feasible), maxcv=float(res.maxcv), nfev=int(res.nfev),
                hit=hit, seconds=seconds, status=str(res.status.name),
                message=str(res.message),
                timings={k: round(float(v), 4) for k, v in res.timings.items()},
                _pvec=pvec, _problem=problem)


def run_scipy(bench, seed, budget, opts):
    from scipy.optimize import NonlinearConstraint, differential_evolution

    t0 = time.perf_counter()
    problem = bench.problem()
    pvec = problem.parameter_vector(None)
    P = pvec.reshape(-1, 1)
    leaves = problem.lowering.functions("numpy")["leaves"]
    n = problem.n
    rows, kinds = _leaf_rows(problem)
    sign = -1.0 if problem.maximize else 1.0
    count = {"f": 0, "c": 0}

    def evaluate(x, key):
        X = np.asarray(x, dtype=float)
        single = X.ndim == 1
        X = X.reshape(n, -1)
        count[key] += X.shape[1]
        with np.errstate(all="ignore"):
            f, C = leaves(X, P)
        f = np.broadcast_to(np.asarray(f, float), (X.shape[1],))
        C = np.broadcast_to(np.asarray(C, float), (len(problem.leaves), X.shape[1]))[rows]
        return single, f, C

    def fun(x):
        single, f, _ = evaluate(x, "f")
        f = np.where(np.isfinite(f), sign * f, 1e300)
        return float(f[0]) if single else f

    # scipy re-evaluates the constraints of its whole (unchanged) population every
    # generation while no member is feasible; those repeats are answered from a
    # memo of the last two calls and not counted as evaluations
    memo = [{}, {}]

    def cons(x):
        X = np.asarray(x, dtype=float)
        single = X.ndim == 1
        X = X.reshape(n, -1)
        keys = [X[:, j].tobytes() for j in range(X.shape[1])]
        known = {**memo[0], **memo[1]}
        new = [j for j, k in enumerate(keys) if k not in known]
        C = np.empty((rows.size, X.shape[1]))
        if new:
            _, _, Cn = evaluate(X[:, new], "c")
            C[:, new] = np.where(np.isnan(Cn), 1e300, Cn)
        for j, k in enumerate(keys):
            if k in known:
                C[:, j] = known[k]
        fresh = {k: C[:, j].copy() for j, k in enumerate(keys)}
        if X.shape[1] > 1:  # a population or trial batch: keep the last two
            memo[0], memo[1] = memo[1], fresh
        else:  # single points (scipy's result bookkeeping, the polish)
            memo[1].update(fresh)
        return C[:, 0] if single else C

    tol = problem.eq_tol
    kinds_a = np.array(kinds)
    lb = np.where(kinds_a == "eq", -tol, -np.inf)
    ub = np.where(kinds_a == "eq", tol, np.where(kinds_a == "lt", -STRICT, 0.0))
    constraints = (NonlinearConstraint(cons, lb, ub),) if rows.size else ()
    popsize = 15
    S = max(5, popsize * n)
    maxiter = max(1, budget // S - 1)
    tracker = Tracker(bench, problem, pvec)

    def callback(intermediate_result):
        tracker.see(intermediate_result.x, max(count["f"], count["c"]))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            res = differential_evolution(
                fun, list(zip(problem.lower, problem.upper)), constraints=constraints,
                seed=seed, popsize=popsize, maxiter=maxiter, tol=0, atol=0, polish=True,
                vectorized=True, updating="deferred", callback=callback,
                integrality=problem.integer if problem.integer.any() else None)
    nfev = max(count["f"], count["c"])
    x, f, feas, mcv = final_check(problem, pvec, res.x)
    seconds = time.perf_counter() - t0
    hit = tracker.hit
    ok_abs = success(bench, f, feas)[0]
    if ok_abs and hit is None:
        hit = nfev  # reached by the polish
    if not ok_abs:
        hit = None
    return dict(x=x.tolist(), fun=f, feasible=feas, maxcv=mcv, nfev=nfev, hit=hit,
                seconds=seconds, status=f"nit={res.nit}", message=str(res.message))


def run_pymoo(kind, bench, seed, budget, opts):
    from pymoo.core.callback import Callback
    from pymoo.core.problem import Problem as PymooProblem
    from pymoo.optimize import minimize

    t0 = time.perf_counter()
    problem = bench.problem()
    pvec = problem.parameter_vector(None)
    P = pvec.reshape(-1, 1)
    leaves = problem.lowering.functions("numpy")["leaves"]
    rows, kinds = _leaf_rows(problem)
    kinds_a = np.array(kinds)
    sign = -1.0 if problem.maximize else 1.0
    integer = problem.integer
    tol = problem.eq_tol
    count = {"n": 0}

    class Wrapped(PymooProblem):
        def __init__(self):
            super().__init__(n_var=problem.n, n_obj=1, n_ieq_constr=int(rows.size),
                             xl=problem.lower.copy(), xu=problem.upper.copy())

        def _evaluate(self, X, out, *args, **kwargs):
            X = np.array(X, dtype=float)
            X[:, integer] = np.round(X[:, integer])
            S = X.shape[0]
            count["n"] += S
            with np.errstate(all="ignore"):
                f, C = leaves(np.ascontiguousarray(X.T), P)
                f = np.broadcast_to(np.asarray(f, float), (S,))
                C = np.broadcast_to(np.asarray(C, float), (len(problem.leaves), S))[rows]
                G = np.where((kinds_a == "eq")[:, None], np.abs(C) - tol,
                             np.where((kinds_a == "lt")[:, None], C + STRICT, C))
            out["F"] = np.where(np.isfinite(f), sign * f, 1e300).reshape(-1, 1)
            if rows.size:
                out["G"] = np.where(np.isnan(G), 1e300, G).T

    tracker = Tracker(bench, problem, pvec)

    class Track(Callback):
        def notify(self, algorithm):
            opt = algorithm.opt
            if opt is not None and len(opt):
                tracker.see(opt[0].X, count["n"])

    if kind == "ga":
        from pymoo.algorithms.soo.nonconvex.ga import GA
        algorithm = GA()
    elif kind == "de":
        from pymoo.algorithms.soo.nonconvex.de import DE
        algorithm = DE()
    elif kind == "isres":
        from pymoo.algorithms.soo.nonconvex.isres import ISRES
        algorithm = ISRES()
    else:
        raise ValueError(kind)
    if opts.get("pymoo_termination") == "budget":
        termination = ("n_eval", budget)
    else:
        from pymoo.termination.default import DefaultSingleObjectiveTermination
        termination = DefaultSingleObjectiveTermination(n_max_gen=10**12, n_max_evals=budget)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = minimize(Wrapped(), algorithm, termination, seed=seed, callback=Track(),
                       verbose=False)
    pop = res.algorithm.opt if res.algorithm.opt is not None else res.pop
    best = pop[0].X if len(pop) else None
    if best is None:
        best = res.pop.get("X")[int(np.argmin(res.pop.get("CV")[:, 0]))]
    x, f, feas, mcv = final_check(problem, pvec, best)
    seconds = time.perf_counter() - t0
    ok_abs = success(bench, f, feas)[0]
    hit = tracker.hit if ok_abs else None
    if ok_abs and hit is None:
        hit = count["n"]
    return dict(x=x.tolist(), fun=f, feasible=feas, maxcv=mcv, nfev=int(count["n"]),
                hit=hit, seconds=seconds, status=f"n_gen={res.algorithm.n_gen}",
                message="")


# --------------------------------------------------------------------------- workers

def _init_worker(snapshot=None):
    warnings.simplefilter("ignore")
    if snapshot:
        sys.path.insert(0, snapshot)
    try:
        import torch
        torch.set_num_threads(1)
    except ImportError:
        pass


def run_task(task):
    """One run: ``task = (solver, problem name, seed, budget, opts)`` -> record dict."""
    solver, name, seed, budget, opts = task
    from constropt import benchmarks

    bench = benchmarks.get(name)
    rec = dict(solver=solver, problem=name, seed=seed, budget=budget)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if solver == "constropt":
                out = run_constropt(bench, seed, budget, opts)
            elif solver == "scipy":
                out = run_scipy(bench, seed, budget, opts)
            elif solver.startswith("pymoo-"):
                out = run_pymoo(solver.split("-", 1)[1], bench, seed, budget, opts)
            else:
                raise ValueError(f"unknown solver {solver!r}")
        out = {k: v for k, v in out.items() if not k.startswith("_")}
        rec.update(out)
        rec["error"] = None
    except Exception as exc:  # a crash is a failed run, reported as such
        rec.update(x=None, fun=None, feasible=False, maxcv=None, nfev=None, hit=None,
                   seconds=None, status="ERROR", message=repr(exc),
                   error=traceback.format_exc(limit=5))
    ok_abs, ok_rel = success(bench, rec["fun"], rec["feasible"])
    rec["err"] = errors(bench, rec["fun"]) if rec["fun"] is not None else None
    if rec["err"] is not None and not math.isfinite(rec["err"]):
        rec["err"] = None
    rec["ok_abs"], rec["ok_rel"] = ok_abs, ok_rel
    return rec


# --------------------------------------------------------------------------- report

def _med(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def _fmt_evals(v):
    if v is None:
        return "-"
    return f"{v / 1000:.1f}k" if v >= 1000 else f"{v:.0f}"


def _num(v, fmt):
    return "-" if v is None else format(v, fmt)


def _fmt_time(v):
    if v is None:
        return "-"
    return f"{v:.2f}" if v < 10 else f"{v:.1f}"


def versions() -> str:
    import scipy
    import torch

    parts = [f"Python {platform.python_version()}", f"numpy {np.__version__}",
             f"scipy {scipy.__version__}", f"torch {torch.__version__}"]
    try:
        import constropt
        parts.insert(0, f"constropt {getattr(constropt, '__version__', '?')}")
    except ImportError:
        pass
    try:
        import subprocess
        here = os.path.dirname(os.path.abspath(__file__))
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=here,
                             capture_output=True, text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "../src"], cwd=here,
                               capture_output=True, text=True, timeout=10).stdout.strip()
        if rev:
            parts.insert(1, f"git {rev}" + (" + uncommitted changes in src/" if dirty else ""))
    except Exception:
        pass
    try:
        import pymoo
        parts.append(f"pymoo {pymoo.__version__}")
    except ImportError:
        parts.append("pymoo not installed")
    return ", ".join(parts)


def report(records, problems, solvers, runs_per_solver, budget, notes, opts,
           elapsed=None) -> str:
    from constropt import benchmarks

    by = {}
    for r in records:
        by.setdefault((r["solver"], r["problem"]), []).append(r)
    solvers = [s for s in solvers if any(s == k[0] for k in by)]
    lines = []
    now = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    lines += [
        "# constropt vs scipy and pymoo on the benchmark collection (CEC 2006 protocol)",
        "",
        f"- date: {now}",
        "- machine: 2-core CPU, no GPU "
        f"({platform.processor() or platform.machine()}, {os.cpu_count()} logical CPUs); "
        f"{opts.get('jobs', 2)} runs at a time, torch at 1 thread per process",
        f"- versions: {versions()}",
        f"- budget: {budget:,} evaluations per run",
        "- runs per problem: " + ", ".join(f"{s} {runs_per_solver[s]}" for s in solvers)
        + " (seeds 0..N-1)",
        f"- pymoo termination: {opts.get('pymoo_termination', 'default')}"
        + (" (pymoo's default stagnation criteria, evaluation cap raised to the budget)"
           if opts.get("pymoo_termination", "default") == "default" else
           " (exactly the budget)"),
    ]
    if elapsed is not None:
        lines.append(f"- wall time of this benchmark: {elapsed / 60:.1f} min")
    lines += [
        "",
        "Solver settings (see the docstring of `benchmarks/suite.py`):",
        "",
        "- constropt: `constropt.solve(bench.problem(), seed=run, max_evals=budget)`, "
        "defaults (its own convergence test usually stops it well before the budget);",
        "- scipy: `differential_evolution`, defaults (best1bin, popsize 15) with "
        "`vectorized=True` (hence deferred updating), `tol=0, atol=0`, `maxiter` = "
        "budget / (15 n) - 1, `NonlinearConstraint` (equalities -1e-4 <= h <= 1e-4), "
        "`polish=True` (trust-constr, its evaluations come on top of the budget and are "
        "counted), `integrality` for integer variables; no knowledge of f*. It runs the "
        "whole budget unless its population collapses to one energy;",
        "- pymoo-ga / pymoo-de / pymoo-isres: pymoo's `GA`, `DE` (default DE/best/1/bin) "
        "and `ISRES`, default settings, constraints as G <= 0 with equalities as "
        "|h| - 1e-4 <= 0, integer variables rounded before evaluation.",
    ]
    lines += [f"- note: {n}" for n in notes]
    lines += [
        "",
        "Success is judged on each run's final point with constropt's float64 check "
        "(equalities |h| <= 1e-4):",
        "",
        "- **abs** = the CEC 2006 rule, feasible and f - f* <= 1e-4 (absolute);",
        "- **rel** = feasible and f - f* <= 1e-4 * max(1, |f*|) (relative; differs from "
        "abs only where |f*| > 1).",
        "",
        "Columns per solver: success rate abs, success rate rel, median evaluations "
        "used by the successful (abs) runs, median wall time per run (s, all runs, "
        "problem construction included).",
        "",
    ]
    head = ["problem", "f*"]
    for s in solvers:
        head += [f"{s} abs", f"{s} rel", f"{s} evals", f"{s} s"]
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "---|" * len(head))
    for name in problems:
        bench = benchmarks.get(name)
        row = [name, f"{bench.f_star:.10g}" + (" (max)" if bench.maximize else "")]
        for s in solvers:
            rs = by.get((s, name), [])
            if not rs:
                row += ["-", "-", "-", "-"]
                continue
            k_abs = sum(r["ok_abs"] for r in rs)
            k_rel = sum(r["ok_rel"] for r in rs)
            row += [f"{k_abs}/{len(rs)}", f"{k_rel}/{len(rs)}",
                    _fmt_evals(_med([r["nfev"] for r in rs if r["ok_abs"]])),
                    _fmt_time(_med([r["seconds"] for r in rs]))]
        lines.append("| " + " | ".join(row) + " |")
    # totals
    row = ["**all runs**", ""]
    for s in solvers:
        rs = [r for r in records if r["solver"] == s and r["problem"] in problems]
        if not rs:
            row += ["-"] * 4
            continue
        k_abs = sum(r["ok_abs"] for r in rs)
        k_rel = sum(r["ok_rel"] for r in rs)
        row += [f"**{100 * k_abs / len(rs):.1f}%** ({k_abs}/{len(rs)})",
                f"**{100 * k_rel / len(rs):.1f}%** ({k_rel}/{len(rs)})",
                _fmt_evals(_med([r["nfev"] for r in rs if r["ok_abs"]])),
                _fmt_time(_med([r["seconds"] for r in rs]))]
    lines.append("| " + " | ".join(row) + " |")
    row = ["**problems solved in every run**", ""]
    for s in solvers:
        names = [p for p in problems if by.get((s, p))]
        all_abs = sum(all(r["ok_abs"] for r in by[(s, p)]) for p in names)
        all_rel = sum(all(r["ok_rel"] for r in by[(s, p)]) for p in names)
        tot = sum(sum(r["seconds"] or 0 for r in by[(s, p)]) for p in names)
        row += [f"{all_abs}/{len(names)}", f"{all_rel}/{len(names)}", "",
                f"total {tot / 60:.1f} min"]
    lines.append("| " + " | ".join(row) + " |")

    # evaluations to target and final error
    lines += [
        "",
        "## Evaluations to target and final error",
        "",
        "\"to target\": median over the abs-successful runs of the evaluations after "
        "which the solver's incumbent first met the abs rule (callback bookkeeping, the "
        "run is never stopped by it; a success reached only by the final polish counts "
        "the whole run). \"median err\": median over all runs of f - f* (sign: "
        "positive = worse than f*) of the final point; \"feas\": runs ending feasible.",
        "",
    ]
    head = ["problem"]
    for s in solvers:
        head += [f"{s} to target", f"{s} median err", f"{s} feas"]
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "---|" * len(head))
    for name in problems:
        row = [name]
        for s in solvers:
            rs = by.get((s, name), [])
            if not rs:
                row += ["-"] * 3
                continue
            errs = [r["err"] if r["feasible"] and r["err"] is not None else None for r in rs]
            feas_errs = [e for e in errs if e is not None]
            med = _med(feas_errs)
            row += [_fmt_evals(_med([r["hit"] for r in rs if r["ok_abs"]])),
                    "-" if med is None else f"{med:.3g}",
                    f"{sum(r['feasible'] for r in rs)}/{len(rs)}"]
        lines.append("| " + " | ".join(row) + " |")

    # failures of constropt in detail, others summarised
    lines += ["", "## Runs that failed the abs rule", ""]
    for s in solvers:
        fails = [r for r in records if r["solver"] == s and r["problem"] in problems
                 and not r["ok_abs"]]
        lines.append(f"### {s}: {len(fails)} failed run(s)")
        lines.append("")
        if not fails:
            continue
        if s == "constropt":
            lines.append("| problem | seed | fun | f - f* | feasible | maxcv | nfev | "
                         "status | time (s) | rel ok |")
            lines.append("|---|---|---|---|---|---|---|---|---|---|")
            for r in sorted(fails, key=lambda r: (problems.index(r["problem"]), r["seed"])):
                lines.append(
                    f"| {r['problem']} | {r['seed']} | {_num(r['fun'], '.10g')} | "
                    f"{_num(r['err'], '.3g')} | {r['feasible']} | {_num(r['maxcv'], '.2g')} | "
                    f"{r['nfev']} | {r['status']}: {r['message']} | "
                    f"{_fmt_time(r['seconds'])} | {r['ok_rel']} |")
        else:
            lines.append("| problem | failed | infeasible | best feasible f - f* among "
                         "failures | crashed |")
            lines.append("|---|---|---|---|---|")
            for name in problems:
                fs = [r for r in fails if r["problem"] == name]
                if not fs:
                    continue
                infeas = sum(not r["feasible"] for r in fs)
                fe = [r["err"] for r in fs if r["feasible"] and r["err"] is not None]
                crashed = sum(r["error"] is not None for r in fs)
                lines.append(f"| {name} | {len(fs)}/{len(by[(s, name)])} | {infeas} | "
                             f"{'-' if not fe else f'{min(fe):.3g}'} | {crashed} |")
            crashes = [r for r in fails if r["error"]]
            if crashes:
                lines.append("")
                lines.append("Crashes: " + "; ".join(
                    f"{r['problem']} seed {r['seed']}: {r['message']}" for r in crashes[:10]))
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


# --------------------------------------------------------------------------- main

def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=25, help="runs per problem (default 25)")
    ap.add_argument("--solver-runs", default="",
                    help="per-solver override of --runs, e.g. scipy=5,pymoo-ga=5")
    ap.add_argument("--quick", action="store_true",
                    help=f"problems {', '.join(QUICK)}; {QUICK_RUNS} runs")
    ap.add_argument("--problems", default="", help="comma-separated problem names")
    ap.add_argument("--solvers", default=",".join(DEFAULT_SOLVERS),
                    help=f"comma-separated, from {', '.join(ALL_SOLVERS)}")
    ap.add_argument("--budget", type=int, default=BUDGET, help="evaluations per run")
    ap.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    ap.add_argument("--pymoo-termination", choices=("default", "budget"), default="default")
    ap.add_argument("--out", default="", help="write the markdown report to this file")
    ap.add_argument("--raw", default="", help="JSON-lines file of the runs "
                    "(default: next to --out, *_raw.jsonl)")
    ap.add_argument("--resume", action="store_true", help="skip runs already in --raw")
    ap.add_argument("--report-only", action="store_true",
                    help="only rebuild the report from --raw")
    ap.add_argument("--no-snapshot", action="store_true",
                    help="import constropt from the live tree instead of a frozen copy")
    ap.add_argument("--note", action="append", default=[], help="a note for the header")
    return ap.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    warnings.simplefilter("ignore")
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))
    from constropt import benchmarks

    if args.problems:
        problems = [benchmarks.get(p).name for p in args.problems.split(",") if p.strip()]
    elif args.quick:
        problems = list(QUICK)
    else:
        problems = list(benchmarks.names())
    runs = QUICK_RUNS if args.quick and "--runs" not in " ".join(sys.argv) else args.runs
    solvers = [s.strip() for s in args.solvers.split(",") if s.strip()]
    for s in solvers:
        if s not in ALL_SOLVERS:
            raise SystemExit(f"unknown solver {s!r}; choose from {', '.join(ALL_SOLVERS)}")
    notes = list(args.note)
    if any(s.startswith("pymoo-") for s in solvers):
        try:
            import pymoo  # noqa: F401
        except ImportError:
            msg = "pymoo is not installed (pip install pymoo): pymoo solvers skipped"
            print(msg, file=sys.stderr)
            notes.append(msg)
            solvers = [s for s in solvers if not s.startswith("pymoo-")]
    runs_per_solver = {s: runs for s in solvers}
    for item in filter(None, (t.strip() for t in args.solver_runs.split(","))):
        s, _, k = item.partition("=")
        if s in runs_per_solver:
            runs_per_solver[s] = int(k)
    for s in solvers:
        if runs_per_solver[s] < runs:
            notes.append(f"{s}: {runs_per_solver[s]} runs per problem instead of {runs}, "
                         "to fit the time available")
    opts = {"pymoo_termination": args.pymoo_termination, "jobs": args.jobs}

    raw = args.raw or (os.path.splitext(args.out)[0] + "_raw.jsonl" if args.out else "")
    done = []
    if raw and (args.resume or args.report_only) and os.path.exists(raw):
        with open(raw) as fh:
            done = [json.loads(line) for line in fh if line.strip()]
        done = [r for r in done
                if not r.get("error") and r["problem"] in problems and r["solver"] in solvers
                and r["seed"] < runs_per_solver[r["solver"]] and r["budget"] == args.budget]
    elif raw and not args.report_only:
        open(raw, "w").close()
    have = {(r["solver"], r["problem"], r["seed"]) for r in done}
    tasks = [(s, p, seed, args.budget, opts) for p in problems for s in solvers
             for seed in range(runs_per_solver[s]) if (s, p, seed) not in have]
    if args.report_only:
        tasks = []
    # constropt first, then the others seed by seed (slowest first within a seed), so a
    # benchmark cut short still has whole seeds for every solver
    order = {"scipy": 0, "pymoo-isres": 1, "pymoo-ga": 2, "pymoo-de": 3}
    tasks.sort(key=lambda t: (t[0] != "constropt", t[2], order.get(t[0], 4)))
    records = list(done)
    t_start = time.perf_counter()
    snapshot = None
    if tasks and not args.no_snapshot:
        # the working tree may change while the benchmark runs: the workers import a
        # frozen copy of the package taken now
        import shutil
        import tempfile

        import constropt

        snapshot = tempfile.mkdtemp(prefix="constropt_suite_")
        pkg = os.path.dirname(os.path.abspath(constropt.__file__))
        shutil.copytree(pkg, os.path.join(snapshot, "constropt"),
                        ignore=shutil.ignore_patterns("__pycache__"))
        print(f"workers import constropt from a snapshot of {pkg} in {snapshot}",
              flush=True)
    if tasks:
        print(f"{len(tasks)} runs ({len(done)} already done) on {args.jobs} workers",
              flush=True)
        if args.jobs <= 1:
            _init_worker(snapshot)
            results = map(run_task, tasks)
            pool = None
        else:
            import concurrent.futures as cf
            import multiprocessing as mp

            pool = cf.ProcessPoolExecutor(args.jobs, mp_context=mp.get_context("spawn"),
                                          initializer=_init_worker, initargs=(snapshot,))
            futures = [pool.submit(run_task, t) for t in tasks]
            results = (f.result() for f in cf.as_completed(futures))
        try:
            for k, rec in enumerate(results, 1):
                records.append(rec)
                if raw:
                    with open(raw, "a") as fh:
                        fh.write(json.dumps(rec) + "\n")
                el = time.perf_counter() - t_start
                print(f"[{k}/{len(tasks)} {el / 60:5.1f} min] {rec['solver']:11s} "
                      f"{rec['problem']:27s} seed {rec['seed']:2d}: "
                      f"{'OK  ' if rec['ok_abs'] else 'FAIL'} "
                      f"f={_num(rec['fun'], '.10g')} "
                      f"feas={rec['feasible']} nfev={rec['nfev']} "
                      f"t={_fmt_time(rec['seconds'])}"
                      + (f" ERROR {rec['message']}" if rec["error"] else ""), flush=True)
        finally:
            if pool is not None:
                pool.shutdown(cancel_futures=True)
            if snapshot:
                import shutil
                shutil.rmtree(snapshot, ignore_errors=True)
    elapsed = time.perf_counter() - t_start if tasks and not done else None
    text = report(records, problems, solvers, runs_per_solver, args.budget, notes, opts,
                  elapsed)
    print()
    print(text)
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w") as fh:
            fh.write(text)
        print(f"written {args.out}" + (f" and {raw}" if raw else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
