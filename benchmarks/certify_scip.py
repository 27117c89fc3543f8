"""Certificates side by side with SCIP: the collection and published problems beyond it
(issue 27's done-when).

Problems (``--sets``, default all three):

collection
    ``constropt.benchmarks.collection()`` (CEC 2006, engineering designs, CEC 2020
    real-world, GLOBALLib / MINLPLib and Hock-Schittkowski problems).
unseen
    the 66 published problems of ``benchmarks/unseen_problems.py`` (Hock-Schittkowski and
    GLOBALLib problems outside the collection, incl. Ben-Tal's pooling problem ex5_2_4,
    and scalable families up to 300 variables).
pooling
    the classic bilinear and pooling problems of ``benchmarks/pooling_problems.py``
    (Haverly 1-3, Ben-Tal, Foulds, Adhya, Floudas' chapter 5 and the ``st_bpv``
    bilinear programs), each with its citation.

Solvers, each on every problem, in a forked child process (one thread: set
``OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1``), stopped hard after ``1.5 T + 30`` s:

constropt
    ``constropt.solve(problem, seed=0, certify=True, time_limit=T, certify_time=T)``:
    ``time_limit`` bounds the search and ``certify_time`` the branch-and-bound, so a run
    can take up to about 2T; a certificate counts only when the whole call (problem
    construction included) ended within T.  ``U`` is the objective of the result's
    point (its own float64 check), ``L`` the certificate's ``lower_bound`` (``+inf``
    when it proved the problem infeasible).
scip
    SCIP (pyscipopt) on ``Problem.to_scip()`` (the same equality band as constropt's,
    ``eq_tol``), ``limits/time`` T, ``limits/gap`` and ``limits/absgap`` 1e-6; ``U``
    and ``L`` its primal and dual bounds (``L = +inf`` when it declared the problem
    infeasible); its point is also judged by constropt's float64 check
    (``scip_point_feasible``).  The time includes the problem's and the model's
    construction.

Per run, in minimization sense: certified = a bound with ``U - L <= 1e-6 max(1, |U|)``
within T; wrong = ``L > f* + 1e-6 max(1, |f*|)``, f* the best known optimum (the
tolerance of the benchmarks' float check for a solved problem: the published f* are
given to about that accuracy); ``L - f*`` is kept, so that stricter tolerances can be
read from the raw runs.

Raw runs are appended to ``benchmarks/results/certify_scip_runs/<label>_T<T>.jsonl.gz``
(gzipped JSON lines, one per run; a run already there is not repeated).  ``--report``
writes ``benchmarks/results/certify_scip.md`` from the raw files of ``--limit``: one
section per label (``before``: the code before issue 27's relaxation work; ``after``: with
the relaxation work and the local solver's incumbents inside the branch-and-bound).  A
label run with ``--solvers constropt`` alone is reported against SCIP's runs of
``before``.

Usage (from the repository root, one job on a loaded machine)::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONPATH=src python \\
        benchmarks/certify_scip.py --label before --limit 60 --report
    ... --only G10,haverly1 --limit 20          # a few problems
    ... --report --limit 60                      # the report alone, from the raw runs
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import statistics
import sys
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from _forked import run_forked  # noqa: E402

RUNS = os.path.join(HERE, "results", "certify_scip_runs")
REPORT = os.path.join(HERE, "results", "certify_scip.md")
SETS = ("collection", "unseen", "pooling")
SOLVERS = ("constropt", "scip")
REL = 1e-6


# --------------------------------------------------------------------------- problems

def _set_names(name: str) -> tuple[str, ...]:
    if name == "collection":
        from constropt import benchmarks

        return tuple(b.name for b in benchmarks.collection())
    if name == "unseen":
        import unseen_problems

        return tuple(unseen_problems.names())
    if name == "pooling":
        import pooling_problems

        return tuple(pooling_problems.names())
    raise SystemExit(f"unknown set {name!r}; known: {', '.join(SETS)}")


def get_problem(set_name: str, name: str):
    """The BenchmarkProblem record ``name`` of set ``set_name``."""
    if set_name == "collection":
        from constropt import benchmarks

        return benchmarks.get(name)
    if set_name == "unseen":
        import unseen_problems

        return unseen_problems.get(name)
    import pooling_problems

    return pooling_problems.get(name)


# --------------------------------------------------------------------------- one run

def tolerance(f_star: float) -> float:
    """How far above f* a lower bound may lie before it counts as wrong."""
    return REL * max(1.0, abs(f_star))


def closed(U: float, L: float) -> bool:
    """``U - L <= 1e-6 max(1, |U|)`` with both finite (minimization sense)."""
    return math.isfinite(U) and math.isfinite(L) and U - L <= REL * max(1.0, abs(U))


def _finite(v):
    return v if v is not None and math.isfinite(v) else None


def run_constropt(bench, T: float) -> dict:
    import constropt

    t0 = time.perf_counter()
    p = bench.problem()
    res = constropt.solve(p, seed=0, certify=True, time_limit=T, certify_time=T)
    wall = time.perf_counter() - t0
    sign = -1.0 if p.maximize else 1.0
    c = res.certificate
    U = sign * res.fun if res.feasible and math.isfinite(res.fun) else math.inf
    if c is None:
        L, kind = -math.inf, "none"
    elif c.kind == "infeasible":
        L, kind = math.inf, "infeasible"
    else:
        L, kind = sign * c.lower_bound, "bound"
    return dict(wall=wall, U=U, L=L, kind=kind, status=res.status.name,
                own_certified=bool(c.certified) if c is not None else False,
                own_gap=_finite(c.gap) if c is not None else None,
                boxes=getattr(c, "boxes", None), lps=getattr(c, "lps", None),
                convex=getattr(c, "convex", None),
                t_certify=res.timings.get("certify"), t_total=res.timings.get("total"))


def run_scip(bench, T: float) -> dict:
    import numpy as np
    from _suite_solvers import final_check

    t0 = time.perf_counter()
    p = bench.problem()
    m = p.to_scip()
    m.hideOutput()
    m.setParam("limits/time", T)
    m.setParam("limits/gap", REL)
    m.setParam("limits/absgap", REL)
    m.setParam("parallel/maxnthreads", 1)
    m.optimize()
    wall = time.perf_counter() - t0
    sign = -1.0 if p.maximize else 1.0
    status = m.getStatus()
    feas_point, f_point = None, None
    if status == "infeasible":
        U, L, kind = math.inf, math.inf, "infeasible"
    else:
        U = sign * m.getPrimalbound() if m.getNSols() > 0 else math.inf
        U = U if abs(U) < 1e19 else math.inf
        L = sign * m.getDualbound()
        L = L if abs(L) < 1e19 else math.copysign(math.inf, L)
        kind = "bound"
        if m.getNSols() > 0:
            x = np.array([m.getVal(v) for v in m.data["variables"]], dtype=float)
            _, f_point, feas_point, _ = final_check(p, p.parameter_vector(None), x)
            f_point = sign * f_point
    return dict(wall=wall, U=U, L=L, kind=kind, status=status, nodes=int(m.getNNodes()),
                scip_point_feasible=feas_point, scip_point_f=_finite(f_point))


def run_one(set_name: str, name: str, solver: str, T: float) -> dict:
    """One run -> its record (a crash is an uncertified run with its message)."""
    from _machine import LoadMonitor

    bench = get_problem(set_name, name)
    sign = -1.0 if bench.maximize else 1.0
    f_star = sign * bench.f_star
    rec = dict(set=set_name, problem=name, solver=solver, limit=T, n=len(bench.variables),
               m=len(bench.constraints), f_star=f_star)
    mon = LoadMonitor()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = (run_constropt if solver == "constropt" else run_scip)(bench, T)
        rec.update(out, error=None)
    except Exception as exc:  # a crash is an uncertified run, reported as such
        rec.update(wall=None, U=math.inf, L=-math.inf, kind="error", status="ERROR",
                   error=repr(exc)[:500])
    rec["others_cpu"] = mon.share()
    rec["load1"] = os.getloadavg()[0]
    return judged(rec)


def judged(rec: dict) -> dict:
    """Add ``certified``, ``wrong`` and ``excess`` (L - f*) to a run's record."""
    U, L, T = rec["U"], rec["L"], rec["limit"]
    in_time = rec["wall"] is not None and rec["wall"] <= T
    rec["certified"] = bool(rec["kind"] == "bound" and closed(U, L) and in_time)
    rec["excess"] = L - rec["f_star"] if math.isfinite(L) else (
        math.inf if L > 0 else -math.inf)
    rec["wrong"] = bool(L > rec["f_star"] + tolerance(rec["f_star"]))
    return rec


# --------------------------------------------------------------------------- runner

def raw_path(label: str, T: float) -> str:
    return os.path.join(RUNS, f"{label}_T{T:g}.jsonl.gz")


def _jsonable(rec: dict) -> dict:
    return {k: (repr(v) if isinstance(v, float) and not math.isfinite(v) else v)
            for k, v in rec.items()}


def _decoded(rec: dict) -> dict:
    return {k: (float(v) if v in ("inf", "-inf", "nan") else v) for k, v in rec.items()}


def read_runs(path: str) -> list[dict]:
    if not os.path.exists(path):
        return []
    with gzip.open(path, "rt") as fh:
        return [_decoded(json.loads(line)) for line in fh if line.strip()]


def _child(conn, task, T):
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    try:
        import torch

        torch.set_num_threads(1)
    except ImportError:
        pass
    conn.send(run_one(*task, T))
    conn.close()


def _stopped(task, T, seconds, why):
    set_name, name, solver = task
    bench = get_problem(set_name, name)
    sign = -1.0 if bench.maximize else 1.0
    rec = dict(set=set_name, problem=name, solver=solver, limit=T,
               n=len(bench.variables), m=len(bench.constraints),
               f_star=sign * bench.f_star, wall=seconds, U=math.inf, L=-math.inf,
               kind="stopped", status="STOPPED", error=why, others_cpu=None,
               load1=os.getloadavg()[0])
    return judged(rec)


def run_tasks(tasks, jobs: int, T: float, path: str) -> None:
    """Run ``tasks`` in forked children, ``jobs`` at a time, appending each record."""
    os.makedirs(os.path.dirname(path), exist_ok=True)

    def record(rec, done, total):
        with gzip.open(path, "at") as out:  # one gzip member per run: safe to stop
            out.write(json.dumps(_jsonable(rec)) + "\n")
        wall = rec["wall"] if rec["wall"] is not None else math.nan
        print(f"[{done}/{total}] {rec['solver']:9s} {rec['problem']:24s} "
              f"{'CERT ' if rec['certified'] else 'no   '}"
              f"{'WRONG ' if rec['wrong'] else ''}L={rec['L']:.10g} U={rec['U']:.10g} "
              f"f*={rec['f_star']:.10g} {wall:.2f}s {rec['status']}", flush=True)

    run_forked(tasks, jobs, T, _child,
               lambda task, seconds, why, _timed_out: _stopped(task, T, seconds, why), record)


# --------------------------------------------------------------------------- report

def _med(v):
    return statistics.median(v) if v else math.nan


def _num(v, fmt=".6g"):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return format(v, fmt)


def summary(runs: list[dict]) -> tuple[list[str], dict]:
    """The summary table of one label's runs and its numbers."""
    by = {}
    for r in runs:
        by[(r["problem"], r["solver"])] = r
    probs = sorted({(r["set"], r["problem"]) for r in runs})
    complete = [(s, p) for s, p in probs if all((p, v) in by for v in SOLVERS)]
    cert = {v: sum(by[(p, v)]["certified"] for _, p in complete) for v in SOLVERS}
    wrong = {v: [p for _, p in complete if by[(p, v)]["wrong"]] for v in SOLVERS}
    both = [p for _, p in complete if all(by[(p, v)]["certified"] for v in SOLVERS)]
    t = {v: [by[(p, v)]["wall"] for p in both] for v in SOLVERS}
    ratios = [by[(p, "constropt")]["wall"] / max(by[(p, "scip")]["wall"], 1e-3) for p in both]
    only = {v: [p for _, p in complete if by[(p, v)]["certified"]
                and not by[(p, [w for w in SOLVERS if w != v][0])]["certified"]]
            for v in SOLVERS}
    per_set = {}
    for s in SETS:
        ps = [p for ss, p in complete if ss == s]
        if ps:
            per_set[s] = (len(ps), {v: sum(by[(p, v)]["certified"] for p in ps)
                                    for v in SOLVERS})
    others = [r["others_cpu"] for r in runs if r.get("others_cpu") is not None]
    load1 = [r["load1"] for r in runs if r.get("load1") is not None]
    nums = dict(n=len(complete), cert=cert, wrong=wrong, both=len(both),
                med=({v: _med(t[v]) for v in SOLVERS}), ratio=_med(ratios), only=only)
    lines = ["| | SCIP | constropt `certify=True` |", "|---|---:|---:|",
             f"| problems (both solvers run) | {len(complete)} | {len(complete)} |",
             f"| certified (`U - L <= 1e-6 max(1, abs(U))` within the limit) | "
             f"{cert['scip']} | {cert['constropt']} |"]
    for s, (k, c) in per_set.items():
        lines.append(f"| - of which {s} ({k}) | {c['scip']} | {c['constropt']} |")
    lines += [f"| certified by this solver only | {len(only['scip'])} | "
              f"{len(only['constropt'])} |",
              f"| median time on the {len(both)} both certify (s) | "
              f"{_num(nums['med']['scip'], '.3g')} | {_num(nums['med']['constropt'], '.3g')} |",
              f"| median of the per-problem ratio constropt / SCIP there | 1x | "
              f"{_num(nums['ratio'], '.3g')}x |",
              f"| wrong bounds (`L > f* + 1e-6 max(1, abs(f*))`) | {len(wrong['scip'])} | "
              f"{len(wrong['constropt'])} |"]
    lines += ["", f"Wrong bounds: SCIP {', '.join(wrong['scip']) or 'none'}; constropt "
              f"{', '.join(wrong['constropt']) or 'none'}.  Certified by SCIP only: "
              f"{', '.join(only['scip']) or 'none'}.  By constropt only: "
              f"{', '.join(only['constropt']) or 'none'}.", "",
              f"Load while the runs ran: other processes used a median "
              f"{_num(100 * _med(others), '.0f')}% of the machine's CPU time (max "
              f"{_num(100 * max(others, default=math.nan), '.0f')}%); 1-minute load average "
              f"{_num(min(load1, default=math.nan), '.2f')} to "
              f"{_num(max(load1, default=math.nan), '.2f')}."]
    return lines, nums


def _cell(r: dict) -> str:
    flag = "**yes**" if r["certified"] else "no"
    if r["wrong"]:
        flag += " WRONG"
    L = "infeasible" if r["kind"] == "infeasible" else _num(r["L"], ".8g")
    return (f"{flag} | {_num(r['wall'], '.2f')} | {L} | {_num(r['U'], '.8g')} | "
            f"{r['status']}")


def report(T: float, path: str = REPORT) -> str:
    from _machine import emit, header

    labels = sorted((f[: -len(f"_T{T:g}.jsonl.gz")] for f in os.listdir(RUNS)
                     if f.endswith(f"_T{T:g}.jsonl.gz")),
                    key=lambda s: (s != "before", s))
    lines = [header(f"Certificates side by side with SCIP ({T:g} s per problem)"), "",
             "Written by `benchmarks/certify_scip.py --report --limit "
             f"{T:g}` from the raw runs in `benchmarks/results/certify_scip_runs/`; the "
             "protocol is in the script's docstring.  Every run is a forked child process "
             "on one thread; constropt `solve(seed=0, certify=True, time_limit=T, "
             "certify_time=T)`, SCIP on `Problem.to_scip()` with gap limits 1e-6.  U and "
             "L in minimization sense; f* the best known optimum (published), the "
             "tolerance for a wrong bound 1e-6 max(1, |f*|).", ""]
    for label in labels:
        runs = read_runs(raw_path(label, T))
        if not runs:
            continue
        reused = label != "before" and not any(r["solver"] == "scip" for r in runs)
        if reused:  # a label run with --solvers constropt: SCIP's runs of "before"
            runs = runs + [r for r in read_runs(raw_path("before", T))
                           if r["solver"] == "scip"]
        head, _ = summary(runs)
        lines += [f"## {label}", "", *head, ""]
        if reused:
            lines += ["SCIP's runs in this section are those of `before` (the same SCIP "
                      "on the same problems, not rerun: this label was run with "
                      "`--solvers constropt`); the load figures above mix both.", ""]
        by = {(r["problem"], r["solver"]): r for r in runs}
        lines += ["| set | problem | n | f* | constropt cert. | s | L | U | status | "
                  "SCIP cert. | s | L | U | status |",
                  "|---|---|---:|---:|---|---:|---:|---:|---|---|---:|---:|---:|---|"]
        for s, p in sorted({(r["set"], r["problem"]) for r in runs},
                           key=lambda k: (SETS.index(k[0]), k[1])):
            rc, rs = by.get((p, "constropt")), by.get((p, "scip"))
            ref = rc or rs
            cells = [(_cell(r) if r else "- | - | - | - | -") for r in (rc, rs)]
            lines.append(f"| {s} | {p} | {ref['n']} | {ref['f_star']:.10g} | "
                         f"{cells[0]} | {cells[1]} |")
        lines.append("")
    return emit("\n".join(lines), path)


# --------------------------------------------------------------------------- main

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--label", default="before")
    ap.add_argument("--limit", type=float, default=60.0, help="seconds per run (T)")
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--solvers", default=",".join(SOLVERS))
    ap.add_argument("--only", default="", help="comma-separated problem names")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--report", action="store_true",
                    help="write benchmarks/results/certify_scip.md (alone: no runs)")
    ap.add_argument("--no-run", action="store_true", help="only --report")
    args = ap.parse_args(argv)
    only = {s for s in args.only.split(",") if s}
    solvers = [s for s in args.solvers.split(",") if s]
    if any(s not in SOLVERS for s in solvers):
        raise SystemExit(f"unknown solver in {solvers}; known: {', '.join(SOLVERS)}")
    problems = [(s, p) for s in args.sets.split(",") if s for p in _set_names(s)
                if not only or p in only]
    if only - {p for _, p in problems}:
        raise SystemExit(f"unknown problems: {sorted(only - {p for _, p in problems})}")
    if not args.no_run:
        path = raw_path(args.label, args.limit)
        have = {(r["problem"], r["solver"]) for r in read_runs(path)}
        for s, p in problems:  # every record builds before any run
            get_problem(s, p)
        # problem by problem, the solvers side by side (similar load for a ratio)
        tasks = [(s, p, v) for s, p in problems for v in solvers if (p, v) not in have]
        print(f"{len(tasks)} runs to do ({len(have)} already in {path})", flush=True)
        import pyscipopt  # noqa: F401  (imported once, before the children fork)
        import torch  # noqa: F401

        import constropt  # noqa: F401

        run_tasks(tasks, args.jobs, args.limit, path)
    if args.report or args.no_run:
        report(args.limit)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
