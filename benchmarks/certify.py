"""Proven optimality gaps on the benchmark collection (``solve(..., certify=...)``).

For every problem of :mod:`constropt.benchmarks` with at most ``--max-vars`` (8)
variables: one ``constropt.solve(bench.problem(), seed=0)`` gives the incumbent (its
time is reported apart), then the interval branch-and-bound
(:func:`constropt.certify._bnb.certify`) runs for at most ``--budget`` seconds with
target gap 1e-6.  Reported per problem: the proven bound and the relative gap
reached, boxes processed per second, and the seconds until the gap first fell to 1e-4
and to 1e-6 ("-" when it did not).  With a CUDA device present, the same run on the
GPU adds its gap and boxes per second.

``--convex`` measures instead the convex case: the mean-variance portfolio of issue 27
(``min w' S w``, ``sum w = 1``, a return floor ``mu' w >= r``, ``0 <= w <= 1``; ``S`` and
``mu`` drawn from a fixed seed) at 10 and 30 assets, ``solve(..., certify=True)`` with
default options in a fresh process per run (so the first solve in the process, torch's
import included, is in the time), side by side with SCIP (pyscipopt, ``Problem.to_scip``,
gap limit 1e-6, also in a fresh process).  Reported: wall seconds of each process, best of
``--rounds`` (3), and what each proved.

Usage
-----
    PYTHONPATH=src python benchmarks/certify.py --budget 60 --out benchmarks/results/certify.md
    PYTHONPATH=src python benchmarks/certify.py --convex --out benchmarks/results/certify_convex.md
    PYTHONPATH=src python benchmarks/certify.py --quick          # 10 s per problem
    PYTHONPATH=src python benchmarks/certify.py --only blog_example2,blog_example3
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _machine import LoadMonitor, emit, header  # noqa: E402

import constropt  # noqa: E402
from constropt import benchmarks  # noqa: E402
from constropt.certify._bnb import certify  # noqa: E402


def _fmt_t(times: dict, key: float) -> str:
    return f"{times[key]:.2f}" if key in times else "-"


def run_one(bench, budget: float, device: str):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p = bench.problem()
        t0 = time.perf_counter()
        res = constropt.solve(p, seed=0)
        t_solve = time.perf_counter() - t0
    inc = res.fun if res.feasible else math.nan
    times: dict = {}
    cert = certify(p, p.parameter_vector(), inc, res.x_array, gap=1e-6, time_limit=budget,
                   device=device, target_time=times)
    return res, t_solve, cert, times


PORTFOLIO = """
import numpy as np, sympy as sp
rng = np.random.default_rng(7)
A = rng.normal(size=(N, N)) * 0.1
S = np.round(A @ A.T / N + np.diag(rng.uniform(0.01, 0.04, N)), 6)
mu = np.round(rng.uniform(0.02, 0.12, N), 4)
w = sp.symbols(f"w0:{N}")
f = sum(float(S[i, j]) * w[i] * w[j] for i in range(N) for j in range(N))
floor = float(np.round(np.mean(mu) * 1.1, 4))
cons = [sp.Eq(sum(w), 1), sum(float(mu[i]) * w[i] for i in range(N)) >= floor]
cons += [wi >= 0 for wi in w] + [wi <= 1 for wi in w]
"""

_CONSTROPT = """
import json, time
t0 = time.perf_counter()
import constropt
{portfolio}
res = constropt.solve(f, cons, certify=True, seed=0)
c = res.certificate
print(json.dumps(dict(wall=time.perf_counter() - t0, fun=res.fun, certified=c.certified,
                      gap=c.gap, bound=c.lower_bound, boxes=c.boxes, convex=c.convex)))
"""

_SCIP = """
import json, time
t0 = time.perf_counter()
import constropt
{portfolio}
p = constropt.Problem(f, cons)
m = p.to_scip()
m.hideOutput(); m.setParam("limits/gap", 1e-6); m.setParam("limits/time", 60)
m.optimize()
wall = time.perf_counter() - t0
# SCIP's objective is an epigraph variable, tight only to its feasibility tolerance:
# the objective at its point, recomputed by constropt, is what it found
byname = {v.name: v for v in m.getVars()}
x = np.array([[m.getVal(byname[str(s)]) for s in p.variables]])
print(json.dumps(dict(wall=wall, fun=float(p.evaluate(x).fun[0]), status=m.getStatus(),
                      gap=m.getGap(), bound=m.getDualbound(), nodes=m.getNNodes())))
"""


def _child(code: str, n: int) -> dict:
    import json
    import subprocess

    src = code.replace("{portfolio}", PORTFOLIO.replace("N", str(n)))
    out = subprocess.run([sys.executable, "-c", src], capture_output=True, text=True,
                         check=True, env={**os.environ, "PYTHONWARNINGS": "ignore"})
    return json.loads(out.stdout.strip().splitlines()[-1])


def convex_section(rounds: int) -> list[str]:
    """The portfolio QP at 10 and 30 assets: constropt and SCIP, each in fresh processes,
    best wall time of ``rounds``."""
    lines = ["| assets | constropt (s) | objective | proven bound | gap | boxes | convex | "
             "SCIP (s) | SCIP objective | SCIP bound | ratio |",
             "|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|"]
    for n in (10, 30):
        ours = min((_child(_CONSTROPT, n) for _ in range(rounds)), key=lambda r: r["wall"])
        scip = min((_child(_SCIP, n) for _ in range(rounds)), key=lambda r: r["wall"])
        print(f"portfolio {n}: {ours} | SCIP {scip}", flush=True)
        cert = "" if ours["certified"] else " (not certified)"
        lines.append(f"| {n} | {ours['wall']:.2f} | {ours['fun']:.10g} | {ours['bound']:.10g} | "
                     f"{ours['gap']:.2e}{cert} | {ours['boxes']} | {ours['convex']} | "
                     f"{scip['wall']:.2f} | {scip['fun']:.10g} ({scip['status']}) | "
                     f"{scip['bound']:.10g} | {ours['wall'] / scip['wall']:.2f}x |")
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=float, default=60.0, help="seconds per problem")
    ap.add_argument("--quick", action="store_true", help="10 s per problem")
    ap.add_argument("--max-vars", type=int, default=8)
    ap.add_argument("--only", default="", help="comma-separated problem names")
    ap.add_argument("--out", default=None)
    ap.add_argument("--convex", action="store_true", help="the portfolio QP vs SCIP only")
    ap.add_argument("--rounds", type=int, default=3, help="--convex: best of this many")
    args = ap.parse_args(argv)
    if args.convex:
        load = LoadMonitor()
        rows = convex_section(args.rounds)
        emit("\n".join([header("Convex problems certified by one bound (portfolio QP)"), "",
                         f"Wall seconds of a fresh process per run (imports and the first "
                         f"solve included), best of {args.rounds}; constropt with default "
                         f"options and `certify=True`, SCIP with gap limit 1e-6. "
                         f"{load.line()}", "", *rows]), args.out)
        return 0
    budget = 10.0 if args.quick else args.budget
    import torch

    cuda = torch.cuda.is_available()
    names = [s for s in args.only.split(",") if s]
    probs = [b for b in benchmarks.collection() if len(b.variables) <= args.max_vars
             and (not names or b.name in names)]
    rows = []
    load = LoadMonitor()
    for b in probs:
        res, t_solve, cert, times = run_one(b, budget, "cpu")
        row = {"name": b.name, "n": len(b.variables), "f_star": b.f_star, "fun": res.fun,
               "feasible": res.feasible, "t_solve": t_solve, "cert": cert, "times": times}
        if cuda:
            _, _, ccert, ctimes = run_one(b, budget, "cuda")
            row["cuda"] = (ccert, ctimes)
        rows.append(row)
        print(f"{b.name}: gap {cert.gap:.3g} bound {cert.lower_bound!r} "
              f"{cert.boxes / max(cert.seconds, 1e-9):.0f} boxes/s "
              f"t(1e-4) {_fmt_t(times, 1e-4)} t(1e-6) {_fmt_t(times, 1e-6)}", flush=True)
    lines = [header("Certified optimality gaps (interval branch-and-bound)"), "",
             f"Budget {budget:g} s per problem after `solve(seed=0)`; target gap 1e-6; "
             f"float64 boxes on CPU{' and CUDA' if cuda else ''}. {load.line()}", ""]
    n_all = sum(len(b.variables) <= args.max_vars for b in benchmarks.collection())
    if len(probs) < n_all:
        lines += [f"{len(probs)} of the collection's {n_all} problems with at most "
                  f"{args.max_vars} variables (`--only`).", ""]
    head = ("| problem | n | f* | incumbent | proven bound | gap | boxes/s | t to 1e-4 (s) "
            "| t to 1e-6 (s) | solve (s) |")
    sep = "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    if cuda:
        head += " CUDA gap | CUDA boxes/s |"
        sep += "---:|---:|"
    lines += [head, sep]
    for r in rows:
        c = r["cert"]
        bound = "infeasible" if c.kind == "infeasible" else f"{c.lower_bound:.10g}"
        line = (f"| {r['name']} | {r['n']} | {r['f_star']:.10g} | "
                f"{r['fun']:.10g}{'' if r['feasible'] else ' (infeasible)'} | {bound} | "
                f"{c.gap:.2e} | {c.boxes / max(c.seconds, 1e-9):,.0f} | "
                f"{_fmt_t(r['times'], 1e-4)} | {_fmt_t(r['times'], 1e-6)} | "
                f"{r['t_solve']:.2f} |")
        if cuda:
            cc, _ = r["cuda"]
            line += f" {cc.gap:.2e} | {cc.boxes / max(cc.seconds, 1e-9):,.0f} |"
        lines.append(line)
    ok4 = sum(r["cert"].gap <= 1e-4 for r in rows)
    ok6 = sum(r["cert"].gap <= 1e-6 for r in rows)
    lines += ["", f"Certified to 1e-4: {ok4}/{len(rows)} ({100 * ok4 / max(len(rows), 1):.0f}%); "
              f"to 1e-6: {ok6}/{len(rows)}.", "",
              "The bound is rigorous whatever the gap: no point of the search box that "
              "satisfies the constraints (exact real arithmetic, equalities within eq_tol) "
              "has a better objective.  The gap is relative to the incumbent "
              "(|U - L| / max(|U|, 1e-9))."]
    emit("\n".join(lines), args.out)
    np.seterr(all="ignore")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
