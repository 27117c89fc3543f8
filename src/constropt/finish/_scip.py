"""SCIP as a second reference: a problem as a pyscipopt model, and a checked SCIP run.

:func:`problem_to_scip` translates the sympy objective and constraints into a
``pyscipopt.Model`` (:meth:`constropt.Problem.to_scip`): polynomials, ``exp``, ``log``,
``sqrt`` and real powers, ``Abs``, ``sin`` and ``cos``; the problem's search box (after
bound propagation) as variable bounds; integer variables as SCIP integers.  A nonlinear
objective becomes an epigraph variable (SCIP's objective is linear).  The constraints
every feasible point must satisfy are translated by the rules of
:mod:`constropt.problem._scipy`: ``c <= 0`` as is, ``c < 0`` as ``c <= -strict_margin``,
``h == 0`` as ``|h| <= eq_tol``.  Anything else (``Or``, ``Min``, ``floor``, vector
variables, ...) raises :class:`~constropt.UnsupportedExpressionError` naming it.

:func:`scip_reference` is the cross-check's SCIP run.  SCIP's answer is never taken on
its word: its point is re-checked with constropt's float64 evaluation and in exact
arithmetic (:func:`~._verify.verify_point`), its objective recomputed by constropt, and a
claim of infeasibility is set against constropt's own point (a point proven feasible
refutes it).  pyscipopt is an optional dependency (``pip install "constropt[scip]"``),
imported only here and only when asked for.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import pickle
import subprocess
import sys
import time
from numbers import Number

import numpy as np
import sympy as sp

from .._errors import OptionError, UnsupportedExpressionError
from ..local._newton import restore
from ..problem._evaluate import report_numpy
from ..problem._scipy import STRICT_MARGIN, _disjunctive_constraints, conjunctive_leaves
from ._verify import verify_point

__all__ = ["problem_to_scip", "scip_reference", "require_pyscipopt", "SCIP_TIME_LIMIT"]

#: Default seconds SCIP may run in a cross-check (its ``limits/time``).
SCIP_TIME_LIMIT = 5.0
#: SCIP's feasibility tolerance in a cross-check, and how far inside each inequality the
#: cross-check asks SCIP to stay, so that a point SCIP accepts within its tolerance still
#: satisfies ``c(x) <= 0`` when constropt re-checks it.
_FEASTOL = 1e-9
_INSIDE = 1e-8

_INSTALL = 'pip install pyscipopt (or pip install "constropt[scip]")'


def require_pyscipopt(what: str = "SCIP"):
    """The ``pyscipopt`` module, or an :class:`ImportError` saying how to install it."""
    try:
        import pyscipopt
    except ImportError:
        raise ImportError(f"{what} needs pyscipopt, which is not installed: "
                          f"{_INSTALL}") from None
    return pyscipopt


def scip_available() -> bool:
    """Whether pyscipopt is installed (found, not imported: the import takes 0.5 s)."""
    return importlib.util.find_spec("pyscipopt") is not None


class _Translator:
    """sympy expression -> pyscipopt expression, over the model's variables."""

    def __init__(self, scip, symbols: dict, params: dict, where: str = ""):
        self.scip = scip
        self.symbols = symbols
        self.params = params
        self.where = where

    def unsupported(self, node, why: str = "") -> UnsupportedExpressionError:
        name = node.func.__name__ if isinstance(node, sp.Basic) else type(node).__name__
        extra = f" ({why})" if why else ""
        return UnsupportedExpressionError(
            f"to_scip: SCIP has no counterpart of {name}{extra} in {self.where}: {node}; "
            "supported are polynomials, real powers, exp, log, sqrt, Abs, sin and cos")

    def __call__(self, e):
        s = self.scip
        if e in self.symbols:
            return self.symbols[e]
        if e in self.params:
            return self.params[e]
        if e.is_Number or e.is_NumberSymbol:
            v = float(e)
            if not math.isfinite(v):
                raise self.unsupported(e, "not a finite number")
            return v
        if isinstance(e, sp.Add):
            return sum((self(a) for a in e.args), 0.0)
        if isinstance(e, sp.Mul):
            out = 1.0
            for a in e.args:
                out = out * self(a)
            return out
        if isinstance(e, sp.Pow):
            return self._pow(e)
        if e.func in (sp.exp, sp.log, sp.sin, sp.cos, sp.Abs) and len(e.args) == 1:
            arg = self(e.args[0])
            if e.func is sp.Abs:
                return abs(arg)
            fn = {sp.exp: s.exp, sp.log: s.log, sp.sin: s.sin, sp.cos: s.cos}[e.func]
            return fn(arg)
        raise self.unsupported(e)

    def _pow(self, e):
        base, ex = e.args
        if ex.free_symbols & set(self.symbols):
            if base.is_Number and base > 0:  # a**x = exp(x log a)
                return self.scip.exp(self(ex) * math.log(float(base)))
            raise self.unsupported(e, "a power whose exponent depends on a variable")
        k = ex.xreplace({p: sp.Float(v) for p, v in self.params.items()})
        if not k.is_number:
            raise self.unsupported(e)
        b = self(base)
        if k == sp.Rational(1, 2):
            return self.scip.sqrt(b) if not isinstance(b, Number) else math.sqrt(b)
        if k.is_Integer:
            return b ** int(k)
        return b ** float(k)


def _check_margin(name, val) -> None:
    if val is not None and (isinstance(val, bool) or not isinstance(val, Number)
                            or not (math.isfinite(val) and val >= 0)):
        raise OptionError(f"{name} must be a finite number >= 0, got {val!r}")


def model_spec(problem, pvec, *, eq_tol=None, strict_margin: float = STRICT_MARGIN,
               inside: float = 0.0) -> dict:
    """What the SCIP model is built from, as plain picklable data: the objective and the
    conjunctive constraint leaves with the parameter values put in, the box, the
    integer flags and the rules of the constraints (see :func:`build_model`)."""
    if problem.has_vector_variables:
        raise UnsupportedExpressionError("to_scip supports scalar variables only; this "
                                         f"problem has vector variables {problem.variables}")
    orc = _disjunctive_constraints(problem)
    if orc:
        k = orc[0]
        raise UnsupportedExpressionError(
            f"to_scip: constraint {k} ({problem.constraints[k]}) holds an Or, which the "
            "SCIP model has no counterpart of")
    for name, val in (("eq_tol", eq_tol), ("strict_margin", strict_margin),
                      ("inside", inside)):
        _check_margin(name, val)
    values = {p: sp.Float(float(v)) for p, v in zip(
        problem.layout.parameters, np.asarray(pvec, dtype=np.float64).reshape(-1))}
    leaves = problem.leaves
    return {
        "symbols": tuple(problem.variables),
        "objective": problem.objective.xreplace(values),
        "leaves": tuple((k, leaves[k].expr.xreplace(values), leaves[k].kind)
                        for k in conjunctive_leaves(problem)),
        "lower": [float(v) for v in problem.lower], "upper": [float(v) for v in problem.upper],
        "integer": [bool(v) for v in problem.integer], "maximize": bool(problem.maximize),
        "eq_tol": float(problem.eq_tol if eq_tol is None else eq_tol),
        "strict_margin": float(strict_margin), "inside": float(inside),
    }


def build_model(scip, spec: dict):
    """The ``pyscipopt.Model`` of a :func:`model_spec`."""
    maximize = spec["maximize"]
    model = scip.Model(f"constropt: {'maximize' if maximize else 'minimize'} "
                       f"{spec['objective']}"[:200])
    symbols = {}
    for v, lo, hi, integer in zip(spec["symbols"], spec["lower"], spec["upper"],
                                  spec["integer"]):
        symbols[v] = model.addVar(str(v), vtype="I" if integer else "C",
                                  lb=lo if math.isfinite(lo) else None,
                                  ub=hi if math.isfinite(hi) else None)
    band, inside = spec["eq_tol"], spec["inside"]
    for k, expr, kind in spec["leaves"]:
        c = _Translator(scip, symbols, {}, f"constraint leaf {expr} ({kind} 0)")(expr)
        if isinstance(c, Number):  # a constant leaf: a fixed verdict, nothing to model
            continue
        if kind == "eq":
            model.addCons(c <= band, name=f"c{k}_hi")
            model.addCons(c >= -band, name=f"c{k}_lo")
        else:
            margin = max(spec["strict_margin"], inside) if kind == "lt" else inside
            model.addCons(c <= -margin, name=f"c{k}")
    f = _Translator(scip, symbols, {}, "the objective")(spec["objective"])
    sense = "maximize" if maximize else "minimize"
    epigraph = None
    if isinstance(f, scip.Expr) and f.degree() <= 1:
        model.setObjective(f, sense)
    elif isinstance(f, Number):  # a constant objective: any feasible point is optimal
        model.setObjective(0.0 * next(iter(symbols.values())) + f, sense)
    else:  # SCIP's objective is linear: t >= f (minimize t) or t <= f (maximize t)
        epigraph = model.addVar("objective", vtype="C", lb=None, ub=None)
        model.addCons(epigraph - f <= 0 if maximize else f - epigraph <= 0, name="objective")
        model.setObjective(epigraph, sense)
    model.data = {"variables": tuple(symbols[v] for v in spec["symbols"]),
                  "symbols": dict(symbols), "objective": epigraph}
    return model


def problem_to_scip(problem, parameters=None, *, eq_tol=None,
                    strict_margin: float = STRICT_MARGIN):
    """The ``pyscipopt.Model`` of ``problem``; see :meth:`constropt.Problem.to_scip`."""
    scip = require_pyscipopt("Problem.to_scip")
    spec = model_spec(problem, problem.parameter_vector(parameters), eq_tol=eq_tol,
                      strict_margin=strict_margin)
    return build_model(scip, spec)


def _solve_spec(spec: dict, time_limit: float) -> dict:
    """Build and solve a model (in the child process): SCIP's status and best point."""
    import pyscipopt as scip

    try:
        model = build_model(scip, spec)
    except UnsupportedExpressionError as exc:
        return {"error": f"not run: {exc}"}
    out = {"version": str(model.version())}
    model.hideOutput()
    model.setParam("limits/time", float(time_limit))
    model.setParam("numerics/feastol", _FEASTOL)
    model.optimize()
    out["status"] = str(model.getStatus())
    out["nodes"] = int(model.getNNodes())
    out["dual"] = float(model.getDualbound())
    if model.getNSols():
        sol = model.getBestSol()
        out["x"] = [float(model.getSolVal(sol, v)) for v in model.data["variables"]]
    return out


def _child() -> None:
    """The child process: a pickled ``(spec, time_limit)`` on stdin, JSON on stdout."""
    spec, time_limit = pickle.load(sys.stdin.buffer)
    out = _solve_spec(spec, time_limit)
    sys.stdout.write("\n" + json.dumps(out) + "\n")


#: Seconds the child process may take beyond SCIP's own time limit (interpreter start,
#: the imports, building the model) before it is stopped: SCIP checks its limit between
#: steps, not inside a long presolve (G16: 22 s at a 5 s limit).
_GRACE = 10.0


def run_scip(spec: dict, time_limit: float) -> dict:
    """Solve a :func:`model_spec` with SCIP in a child process, stopped after
    ``time_limit + _GRACE`` seconds at most (and isolated: SCIP 10 crashes on some
    models, such as G16 without presolve).  Returns SCIP's status and point, or
    ``{"error": why}``."""
    src = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH")) if p)
    code = "from constropt.finish._scip import _child; _child()"
    try:
        proc = subprocess.run([sys.executable, "-c", code],
                              input=pickle.dumps((spec, float(time_limit))),
                              capture_output=True, timeout=float(time_limit) + _GRACE,
                              env=env)
    except subprocess.TimeoutExpired:
        return {"error": f"SCIP did not stop within its time limit ({time_limit:g} s) and "
                         f"{_GRACE:g} s more: stopped"}
    lines = proc.stdout.decode(errors="replace").strip().splitlines()
    if proc.returncode != 0 or not lines:
        why = proc.stderr.decode(errors="replace").strip().splitlines()
        tail = why[-1] if why else f"exit status {proc.returncode}"
        return {"error": f"SCIP failed ({tail[:300]})"}
    return json.loads(lines[-1])


def _note_status(status: str, nodes: int, dual: float) -> str:
    return f"{status}, {nodes} node{'s' if nodes != 1 else ''}, dual bound {dual:.10g}"


def _run(method, x, fun, feasible, maxcv, nfev, seconds, note) -> dict:
    return {"method": method, "x": x, "fun": fun, "feasible": feasible, "maxcv": maxcv,
            "nfev": nfev, "seconds": seconds, "note": note}


def scip_reference(problem, result, pvec, time_limit: float = SCIP_TIME_LIMIT, *,
                   solver=run_scip) -> dict:
    """One SCIP run on ``problem``, its answer checked by constropt: the fields of a
    :class:`~._crosscheck.ReferenceRun` (method ``"SCIP <version>"``).

    SCIP's point is clipped to the box (integers rounded), re-checked in float64 and, if
    SCIP's tolerance left it a hair outside, moved back by constropt's restoration; then
    checked in exact arithmetic.  A claim of infeasibility where ``result``'s point is
    feasible (float64 and exact) is refuted in the note.  ``solver`` runs SCIP (a
    replacement lets the tests feed it SCIP's answers)."""
    t0 = time.perf_counter()
    nan_x = np.full(problem.n, np.nan)
    P = np.asarray(pvec, dtype=np.float64).reshape(-1)
    try:
        spec = model_spec(problem, P, eq_tol=0.5 * problem.eq_tol, inside=_INSIDE)
    except UnsupportedExpressionError as exc:
        return _run("SCIP", nan_x, math.nan, False, math.inf, 0, time.perf_counter() - t0,
                    f"not run: {exc}")
    out = solver(spec, time_limit)
    method = f"SCIP {out['version']}" if "version" in out else "SCIP"
    if "error" in out:
        return _run(method, nan_x, math.nan, False, math.inf, 0, time.perf_counter() - t0,
                    out["error"])
    status = out["status"]
    note = _note_status(status, out["nodes"], out["dual"])
    if "x" not in out:
        if status in ("infeasible", "inforunbd") and result.feasible:
            note += ("; SCIP claims the problem infeasible, but constropt's point is "
                     "feasible in exact arithmetic: the claim is wrong")
        elif status == "infeasible":
            note += "; SCIP claims the problem infeasible"
        else:
            note += "; no solution"
        return _run(method, nan_x, math.nan, False, math.inf, 0, time.perf_counter() - t0,
                    note)
    x = np.asarray(out["x"], dtype=np.float64)
    x = np.clip(np.where(problem.integer, np.round(x), x), problem.lower, problem.upper)
    f, V = report_numpy(problem, x.reshape(-1, 1), P)
    used = 1
    if not np.all(V[:, 0] == 0):  # SCIP's tolerance: restored by constropt's projection
        xr, spent = restore(problem, x, P, max_evals=200)
        used += spent
        fr, Vr = report_numpy(problem, xr.reshape(-1, 1), P)
        used += 1
        if np.sum(Vr[:, 0]) < np.sum(V[:, 0]):
            x, f, V = xr, fr, Vr
            note += "; its point moved onto the feasible side by constropt's restoration"
    fun, V = float(f[0]), V[:, 0]
    feas64 = bool(np.all(V == 0))
    ver = verify_point(problem, x, P, fun=fun, float64_feasible=feas64)
    feasible = feas64 and ver.feasible
    if feas64 and not ver.feasible:
        note += "; its point is not feasible in exact arithmetic"
    elif not feas64:
        note += "; its point is infeasible in constropt's check"
    return _run(method, x, fun, feasible, float(V.max()) if V.size else 0.0, used,
                time.perf_counter() - t0, note)
