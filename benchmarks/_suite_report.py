"""The markdown report of ``benchmarks/suite.py``: per-problem tables built from the
JSON-lines records of the runs, with before/after columns from a baseline file."""

from __future__ import annotations

import datetime
import os
import platform
import statistics

import numpy as np

# --------------------------------------------------------------------------- report

def _med(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def _fmt_evals(v):
    if v is None:
        return "-"
    return f"{v / 1000:.1f}k" if v >= 1000 else f"{v:.0f}"


def num(v, fmt):
    return "-" if v is None else format(v, fmt)


def fmt_time(v):
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


def rate(rs) -> str:
    """``"k/n"``: runs meeting the abs rule among `rs`."""
    return f"{sum(r['ok_abs'] for r in rs)}/{len(rs)}"


def latest(records) -> dict:
    """``{(solver, problem): [records]}``, one record per seed (the last one listed; a
    crashed run counts as a failed run)."""
    last = {}
    for r in records:
        last[(r["solver"], r["problem"], r["seed"])] = r
    by = {}
    for (s, p, _), r in sorted(last.items(), key=lambda kv: kv[0]):
        by.setdefault((s, p), []).append(r)
    return by


def report(records, problems, solvers, seeds, budget, notes, opts, elapsed=None,
           baseline=(), baseline_path="") -> str:
    """The markdown report of `records` (run dicts), with 'before' counts from `baseline`.

    Parameters
    ----------
    records : list of dict
        This benchmark's runs (``run_task`` records).
    problems, solvers : list of str
        Rows and solver columns, in order.
    seeds : dict
        ``{solver: [seed, ...]}`` asked for.
    budget : int
        Evaluations per run.
    notes : list of str
        Lines for the header.
    opts : dict
        ``jobs`` and ``pymoo_termination``.
    elapsed : float, optional
        Wall time of the benchmark (s).
    baseline : list of dict, optional
        Earlier runs; per problem and solver their abs success count is printed in
        parentheses after this run's ("before").
    baseline_path : str, optional
        Where `baseline` came from, for the header.

    Returns
    -------
    str
        The report.
    """
    from constropt import benchmarks

    by = {}
    for r in records:
        by.setdefault((r["solver"], r["problem"]), []).append(r)
    before = latest(baseline)
    solvers = [s for s in solvers if any(s == k[0] for k in by)]
    lines = []
    now = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    lines += [
        "# constropt, its GA and scipy's DE on the benchmark collection (CEC protocol)",
        "",
        f"- date: {now}",
        "- machine: 2-core CPU, no GPU "
        f"({platform.processor() or platform.machine()}, {os.cpu_count()} logical CPUs); "
        f"{opts.get('jobs', 2)} runs at a time, torch at 1 thread per process",
        f"- versions: {versions()}",
        f"- budget: {budget:,} evaluations per run",
        "- seeds per problem: " + ", ".join(
            f"{s} {len(seeds[s])} ({_span(seeds[s])})" for s in solvers),
        f"- pymoo termination: {opts.get('pymoo_termination', 'default')}"
        + (" (pymoo's default stagnation criteria, evaluation cap raised to the budget)"
           if opts.get("pymoo_termination", "default") == "default" else
           " (exactly the budget)"),
    ]
    if elapsed is not None:
        lines.append(f"- wall time of this benchmark: {elapsed / 60:.1f} min")
    if baseline_path:
        lines.append(f"- before: the runs in `{os.path.basename(baseline_path)}` "
                     "(abs successes in parentheses after this run's)")
    lines += [
        "",
        "Solver settings (see the docstring of `benchmarks/suite.py`):",
        "",
        "- constropt: `constropt.solve(bench.problem(), seed=run, max_evals=budget)`, "
        "defaults (its own convergence test usually stops it well before the budget);",
        "- constropt-ga: the same with `algorithm=\"ga\"`;",
        "- scipy: `differential_evolution`, defaults (best1bin, popsize 15) with "
        "`vectorized=True` (hence deferred updating), `tol=0, atol=0`, `maxiter` = "
        "budget / (15 n) - 1, `NonlinearConstraint` (equalities -eq_tol <= h <= eq_tol), "
        "`polish=True` (trust-constr, its evaluations come on top of the budget and are "
        "counted), `integrality` for integer variables; no knowledge of f*. It runs the "
        "whole budget unless its population collapses to one energy;",
        "- pymoo-ga / pymoo-de / pymoo-isres: pymoo's `GA`, `DE` (default DE/best/1/bin) "
        "and `ISRES`, default settings, constraints as G <= 0 with equalities as "
        "|h| - eq_tol <= 0, integer variables rounded before evaluation.",
    ]
    lines += [f"- note: {n}" for n in notes]
    lines += [
        "",
        "Success is judged on each run's final point with constropt's float64 check "
        "(equalities |h| <= eq_tol: 1e-4 for CEC 2006 and CEC 2020, 1e-6 for MINLPLib "
        "and Hock-Schittkowski):",
        "",
        "- **abs** = the CEC rule, feasible and f - f* <= 1e-4 (absolute);",
        "- **rel** = feasible and f - f* <= 1e-4 * max(1, |f*|) (relative; differs from "
        "abs only where |f*| > 1).",
        "",
        "Columns per solver: success rate abs (before), success rate rel, median "
        "evaluations used by the successful (abs) runs, median wall time per run (s, all "
        "runs, problem construction included).",
        "",
    ]
    lines += acceptance(by, problems, solvers)
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
            was = before.get((s, name))
            row += [f"{k_abs}/{len(rs)}" + (f" ({rate(was)})" if was else ""),
                    f"{k_rel}/{len(rs)}",
                    _fmt_evals(_med([r["nfev"] for r in rs if r["ok_abs"]])),
                    fmt_time(_med([r["seconds"] for r in rs]))]
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
                fmt_time(_med([r["seconds"] for r in rs]))]
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

    lines += failure_modes(by, problems, solvers)
    # failures of constropt in detail, others summarised
    lines += ["", "## Runs that failed the abs rule", ""]
    for s in solvers:
        fails = [r for r in records if r["solver"] == s and r["problem"] in problems
                 and not r["ok_abs"]]
        lines.append(f"### {s}: {len(fails)} failed run(s)")
        lines.append("")
        if not fails:
            continue
        if s.startswith("constropt"):
            lines.append("| problem | seed | fun | f - f* | feasible | maxcv | nfev | "
                         "status | time (s) | rel ok |")
            lines.append("|---|---|---|---|---|---|---|---|---|---|")
            for r in sorted(fails, key=lambda r: (problems.index(r["problem"]), r["seed"])):
                lines.append(
                    f"| {r['problem']} | {r['seed']} | {num(r['fun'], '.10g')} | "
                    f"{num(r['err'], '.3g')} | {r['feasible']} | {num(r['maxcv'], '.2g')} | "
                    f"{r['nfev']} | {r['status']}: {r['message']} | "
                    f"{fmt_time(r['seconds'])} | {r['ok_rel']} |")
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



def _span(seeds) -> str:
    seeds = sorted(seeds)
    if seeds == list(range(seeds[0], seeds[-1] + 1)):
        return f"seeds {seeds[0]}..{seeds[-1]}"
    return "seeds " + ",".join(map(str, seeds))


def acceptance(by, problems, solvers) -> list[str]:
    """Issue 14's acceptance lines: whole-collection rates of constropt and its GA, and
    the problems where scipy's DE succeeds more often than constropt's defaults, and
    than its GA (success rates: scipy may run fewer seeds)."""
    out = ["## Acceptance (issue 14)", ""]
    goals = {"constropt": 98.0, "constropt-ga": 90.0}
    for s in solvers:
        rs = [r for p in problems for r in by.get((s, p), [])]
        if not rs:
            continue
        pct = 100 * sum(r["ok_abs"] for r in rs) / len(rs)
        goal = goals.get(s)
        verdict = "" if goal is None else (f" (goal >= {goal:g}%: "
                                           f"{'met' if pct >= goal else 'NOT met'})")
        out.append(f"- {s}: {pct:.1f}% of {len(rs)} runs succeed (abs){verdict}")
    for mine, who in (("constropt", "defaults"), ("constropt-ga", "GA")):
        if "scipy" not in solvers or mine not in solvers:
            continue
        worse, compared = [], 0
        for p in problems:
            a, b = by.get((mine, p)), by.get(("scipy", p))
            if a and b:
                compared += 1
                ra = sum(r["ok_abs"] for r in a) / len(a)
                rb = sum(r["ok_abs"] for r in b) / len(b)
                if rb > ra:
                    worse.append(f"{p} ({rate(b)} vs {rate(a)})")
        out.append(f"- problems where scipy's DE succeeds more often than constropt's {who} "
                   f"(of the {compared} where scipy ran): "
                   + (", ".join(worse) if worse else "none"))
    return out + [""]


def failure_modes(by, problems, solvers) -> list[str]:
    """Per problem and constropt solver, how the failed runs failed: a crash (an
    exception, e.g. an option the solver refuses), an infeasible final point (with the
    largest violation seen), or a feasible local optimum (with the smallest f - f*)."""
    out = ["", "## How constropt's failed runs failed", "",
           "| problem | solver | failed | crash | infeasible (max cv) | "
           "local optimum (best f - f*) | median s |", "|---|---|---|---|---|---|---|"]
    for name in problems:
        for s in (s for s in solvers if s.startswith("constropt")):
            rs = by.get((s, name), [])
            fails = [r for r in rs if not r["ok_abs"]]
            if not fails:
                continue
            crash = [r for r in fails if r.get("error")]
            infeas = [r for r in fails if not r.get("error") and not r["feasible"]]
            local = [r for r in fails if not r.get("error") and r["feasible"]]
            cv = max((r["maxcv"] or 0 for r in infeas), default=None)
            err = min((r["err"] for r in local if r["err"] is not None), default=None)
            kind = crash[0]["message"].split("(")[0] if crash else ""
            out.append(
                f"| {name} | {s} | {len(fails)}/{len(rs)} | "
                f"{len(crash) or '-'}{f' ({kind})' if kind else ''} | "
                f"{len(infeas) or '-'}{f' ({cv:.2g})' if infeas else ''} | "
                f"{len(local) or '-'}{f' ({err:.3g})' if local and err is not None else ''} | "
                f"{fmt_time(_med([r['seconds'] for r in rs]))} |")
    return out
