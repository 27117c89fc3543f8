"""The solvers of ``benchmarks/unseen.py``: one run of one problem, judged one way.

Every run returns the final point judged by constropt's own float64 check
(``constropt.finish._verdict.check_point`` at the problem's ``eq_tol``) and its time,
problem (or model) construction included.  A success: feasible and
``f - f* <= 1e-6 max(1, |f*|)``.
"""

from __future__ import annotations

import math
import os
import time
import warnings

import numpy as np
import sympy as sp
from _suite_solvers import BUDGET, final_check, run_scipy

REL = 1e-6
# IPOPT's inequalities are tightened by this much and its bounds not relaxed, so that
# its end points pass constropt's check (which allows no violation of g <= 0)
INSIDE = 1e-8
IPOPT_STARTS = 20
SCIP_TIME = 60.0


def success(bench, fun, feasible) -> bool:
    """Feasible and within 1e-6 max(1, |f*|) of f* (or better)."""
    if not feasible or fun is None or not math.isfinite(fun):
        return False
    return fun - bench.f_star <= REL * max(1.0, abs(bench.f_star))


def run_constropt(bench, seed, time_limit):
    """``constropt.solve`` with defaults, ``seed`` and ``time_limit``."""
    import constropt

    t0 = time.perf_counter()
    problem = bench.problem()
    res = constropt.solve(problem, seed=seed, time_limit=time_limit)
    seconds = time.perf_counter() - t0
    x, f, feas, mcv = final_check(problem, problem.parameter_vector(None), res.x_array)
    return dict(x=x.tolist(), fun=f, feasible=feas, maxcv=mcv, seconds=seconds,
                nfev=int(res.nfev), status=str(res.status.name))


def run_scipy_de(bench, seed, time_limit):
    """scipy's differential evolution exactly as ``benchmarks/suite.py`` runs it."""
    out = run_scipy(bench, seed, BUDGET, {})
    keys = ("x", "fun", "feasible", "maxcv", "seconds", "nfev", "status")
    return {k: out[k] for k in keys}


class _Casadi:
    """sympy -> casadi SX, over the problem's variables."""

    def __init__(self, ca, symbols):
        self.ca, self.symbols = ca, symbols
        self.funcs = {sp.exp: ca.exp, sp.log: ca.log, sp.sin: ca.sin, sp.cos: ca.cos,
                      sp.tan: ca.tan, sp.Abs: ca.fabs}

    def __call__(self, e):
        if e in self.symbols:
            return self.symbols[e]
        if e.is_Number:
            return float(e)
        if e.is_Add:
            return sum((self(a) for a in e.args[1:]), self(e.args[0]))
        if e.is_Mul:
            out = self(e.args[0])
            for a in e.args[1:]:
                out = out * self(a)
            return out
        if e.is_Pow:
            base, ex = e.args
            if ex.is_Integer:
                return self(base) ** int(ex)
            if ex == sp.Rational(1, 2):
                return self.ca.sqrt(self(base))
            return self(base) ** self(ex)
        if e.func in self.funcs:
            return self.funcs[e.func](self(e.args[0]))
        raise ValueError(f"ipopt20: no casadi counterpart of {e.func.__name__}")


def run_ipopt20(bench, seed, time_limit):
    """20 IPOPT starts (casadi), uniform in the box; the best feasible point."""
    import casadi as ca  # benchmark-only dependency

    t0 = time.perf_counter()
    n = len(bench.variables)
    X = ca.SX.sym("x", n)
    tr = _Casadi(ca, {v: X[i] for i, v in enumerate(bench.variables)})
    g, lbg, ubg = [], [], []
    for c in bench.constraints:
        if isinstance(c, sp.Equality):
            g.append(tr(c.lhs - c.rhs))
            lbg.append(0.0)
            ubg.append(0.0)
        else:
            lhs, rhs = (c.lhs, c.rhs) if isinstance(c, sp.LessThan | sp.StrictLessThan) \
                else (c.rhs, c.lhs)
            g.append(tr(lhs - rhs))
            lbg.append(-np.inf)
            ubg.append(-INSIDE)
    f = tr(bench.objective)
    nlp = {"x": X, "f": -f if bench.maximize else f}
    if g:
        nlp["g"] = ca.vertcat(*g)
    opts = {"print_time": False, "ipopt.print_level": 0, "ipopt.sb": "yes",
            "ipopt.max_iter": 3000, "ipopt.bound_relax_factor": 0.0,
            "error_on_fail": False}
    solver = ca.nlpsol("ipopt20", "ipopt", nlp, opts)
    lo = np.array([float(bench.bounds[v][0]) for v in bench.variables])
    hi = np.array([float(bench.bounds[v][1]) for v in bench.variables])
    rng = np.random.default_rng(seed)
    problem, best, starts = None, None, []
    for _ in range(IPOPT_STARTS):
        x0 = lo + (hi - lo) * rng.random(n)
        kw = dict(x0=x0, lbx=lo, ubx=hi)
        if g:
            kw.update(lbg=lbg, ubg=ubg)
        sol = solver(**kw)
        starts.append(np.array(sol["x"]).ravel())
    seconds = time.perf_counter() - t0
    # judged after the clock: constropt's check needs its Problem, which IPOPT does not
    problem = bench.problem()
    pvec = problem.parameter_vector(None)
    judged = [final_check(problem, pvec, x) for x in starts]
    feasible = [j for j in judged if j[2] and math.isfinite(j[1])]
    sign = -1.0 if bench.maximize else 1.0
    if feasible:
        best = min(feasible, key=lambda j: sign * j[1])
    else:
        best = min(judged, key=lambda j: j[3])
    x, fun, feas, mcv = best
    return dict(x=x.tolist(), fun=fun, feasible=feas, maxcv=mcv, seconds=seconds,
                nfev=None, status=f"{len(feasible)}/{IPOPT_STARTS} starts feasible")


def run_scip(bench, seed, time_limit):
    """SCIP (pyscipopt) on ``Problem.to_scip``'s model, 60 s limit, as constropt's own
    cross-check runs it (``finish._scip.scip_reference``: equalities at half the
    tolerance, inequalities 1e-8 inside, SCIP's point restored onto the feasible side
    where its tolerance left it a hair outside), in this process."""
    from types import SimpleNamespace

    from constropt.finish._scip import _solve_spec, scip_reference

    t0 = time.perf_counter()
    problem = bench.problem()
    pvec = problem.parameter_vector(None)
    out = scip_reference(problem, SimpleNamespace(feasible=False), pvec, SCIP_TIME,
                         solver=_solve_spec)
    seconds = time.perf_counter() - t0
    if not np.all(np.isfinite(out["x"])):
        return dict(x=None, fun=None, feasible=False, maxcv=None, seconds=seconds,
                    nfev=None, status=out["note"])
    x, fun, feas, mcv = final_check(problem, pvec, np.asarray(out["x"], float))
    return dict(x=x.tolist(), fun=fun, feasible=feas, maxcv=mcv, seconds=seconds,
                nfev=None, status=out["note"])


SOLVERS = {"constropt": run_constropt, "ipopt20": run_ipopt20, "scip": run_scip,
           "scipy-de": run_scipy_de}


#: The Python libraries each solver loads on its first use, imported before its clock
#: starts: a process pays them once, whichever solver it runs, and ipopt20's casadi was
#: always imported off the clock (constropt imports scipy.optimize on its first solve:
#: about 0.4 s here, which its records before 2026-12-03 include).  The time of these
#: imports in the run's fresh child is kept in the record (``import_seconds``): the report
#: gives the time ratios with it added as well.
IMPORTS = {"constropt": ("scipy.optimize",), "ipopt20": ("casadi",),
           "scip": ("pyscipopt",), "scipy-de": ("scipy.optimize",)}


def _import_seconds(solver):
    """Seconds to import `solver`'s libraries in this process (None when one is missing:
    the solver's own import then fails the run with its message)."""
    import importlib

    t0 = time.perf_counter()
    try:
        for module in IMPORTS.get(solver, ()):
            importlib.import_module(module)
    except ImportError:
        return None
    return time.perf_counter() - t0


def run_one(name, solver, seed, time_limit, problems="unseen_problems") -> dict:
    """One run -> its record (a crash is a failed run with its message); `problems` names
    the set's module (``unseen_problems``, ``unseen2_problems``)."""
    import importlib

    bench = importlib.import_module(problems).get(name)
    rec = dict(problem=name, solver=solver, seed=seed, n=len(bench.variables),
               m=len(bench.constraints), f_star=bench.f_star)
    rec["import_seconds"] = _import_seconds(solver)
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            rec.update(SOLVERS[solver](bench, seed, time_limit))
        rec["error"] = None
    except Exception as exc:  # a crash is a failed run, reported as such
        rec.update(x=None, fun=None, feasible=False, maxcv=None, seconds=None, nfev=None,
                   status="ERROR", error=repr(exc)[:500])
    rec["ok"] = success(bench, rec["fun"], rec["feasible"])
    rec["load1"] = os.getloadavg()[0]  # the machine's load as the run ended
    return rec
