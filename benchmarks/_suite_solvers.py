"""The solvers of ``benchmarks/suite.py`` and how a run is judged.

One function per solver runs one seed of one problem under the evaluation budget and
returns a record (final point, objective, feasibility, evaluations, time, the
evaluation count at which the incumbent first met the abs rule); :func:`run_task` is
what the worker processes call. See the docstring of ``suite.py`` for the protocol.
"""

from __future__ import annotations

import math
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
# issue 14's acceptance: constropt's defaults, its GA, and scipy's DE at the same budget
DEFAULT_SOLVERS = ("constropt", "constropt-ga", "scipy")
ALL_SOLVERS = ("constropt", "constropt-ga", "scipy", "pymoo-ga", "pymoo-de", "pymoo-isres")
# constropt.solve options per constropt solver
CONSTROPT_OPTIONS = {"constropt": {}, "constropt-ga": {"algorithm": "ga"}}
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
        from constropt.finish._verdict import check_point

        x = np.where(self.problem.integer, np.round(x), np.asarray(x, float))
        f, V = check_point(self.problem, x, self.pvec)
        if success(self.bench, f, bool(np.all(V == 0)))[0]:
            self.hit = int(nfev)


def final_check(problem, pvec, x):
    from constropt.finish._verdict import check_point

    x = np.where(problem.integer, np.round(x), np.asarray(x, float))
    f, V = check_point(problem, x, pvec)
    return x, f, bool(np.all(V == 0)), float(V.max()) if V.size else 0.0


# --------------------------------------------------------------------------- solvers

def _leaf_rows(problem):
    from constropt.local._polish import conjunctive_leaves

    conj = conjunctive_leaves(problem)
    if len(conj) != len(problem.leaves):
        raise RuntimeError("the problem has disjunctive constraints, which scipy and "
                           "pymoo cannot express")
    return np.array(conj, dtype=int), [problem.leaves[k].kind for k in conj]


def run_constropt(bench, seed, budget, opts, options=None):
    """One run of ``constropt.solve`` with `options` (e.g. ``{"algorithm": "ga"}``)."""
    import constropt

    t0 = time.perf_counter()
    problem = bench.problem()
    res = constropt.solve(problem, seed=seed, max_evals=budget, **(options or {}))
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

def init_worker(snapshot=None):
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
            if solver in CONSTROPT_OPTIONS:
                out = run_constropt(bench, seed, budget, opts, CONSTROPT_OPTIONS[solver])
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

