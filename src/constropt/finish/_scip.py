"""SCIP as a second reference: the cross-check's checked SCIP run (:func:`scip_reference`).

The model is the problem's own (:mod:`constropt.problem._scip`, the translation behind
:meth:`constropt.Problem.to_scip`), asked to stay a little inside each inequality, and
is built and solved in a child process.  SCIP's answer is never taken on its word: its
point is re-checked with constropt's float64 evaluation and in exact arithmetic
(:func:`~._verify.verify_point`), its objective recomputed by constropt, and a claim of
infeasibility is set against constropt's own point (a point proven feasible refutes it).
pyscipopt is an optional dependency (``pip install "constropt[scip]"``), imported only
in the child process.
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

import numpy as np

from .._errors import UnsupportedExpressionError
from ..local._newton import restore
from ..problem._evaluate import report_numpy
from ..problem._scip import build_model, model_spec
from ._verify import verify_point

__all__ = ["scip_reference", "scip_available", "run_scip", "SCIP_TIME_LIMIT"]

#: Default seconds SCIP may run in a cross-check (its ``limits/time``).
SCIP_TIME_LIMIT = 5.0
#: SCIP's feasibility tolerance in a cross-check, and how far inside each inequality the
#: cross-check asks SCIP to stay, so that a point SCIP accepts within its tolerance still
#: satisfies ``c(x) <= 0`` when constropt re-checks it.
_FEASTOL = 1e-9
_INSIDE = 1e-8


def scip_available() -> bool:
    """Whether pyscipopt is installed (found, not imported: its import is slow)."""
    return importlib.util.find_spec("pyscipopt") is not None


def _solve_spec(spec: dict, time_limit: float) -> dict:
    """Build and solve a model (in the child process): SCIP's status and best point."""
    import pyscipopt as scip  # optional, and slow to import: only in the child process

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
#: steps, not inside a presolve, which can run several times past the limit.
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
