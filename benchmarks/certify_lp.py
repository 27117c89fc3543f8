"""Certificates with and without LP relaxations, SCIP as the anchor (issue 27, item 5).

For each problem: one ``constropt.solve(bench.problem(), seed=0)`` gives the incumbent
``U``; then, each for at most ``--budget`` seconds with target gap 1e-6,

- ``interval``: the interval branch-and-bound alone (``certify._bnb.LP = False``);
- ``LP before``: the same with the LP relaxations of :mod:`constropt.certify._lp`
  (HiGHS, safe dual bounds, root bound tightening, LP branching) as they first landed:
  no reduced-cost tightening, no bound tightening at nodes, every LP from scratch;
- ``interval+LP``: the defaults: also reduced-cost tightening at every LP, bound
  tightening by LPs at the box with the smallest bound (a tenth of the time) and each
  LP's simplex started from the previous optimal basis;
- ``--alphabb``: instead, ``interval+LP`` against the same with the alpha-BB cuts of
  every nonlinear function (:mod:`constropt.certify._alphabb`, off by default) on the
  problems given (``benchmarks/results/certify_alphabb.md``);
- ``SCIP``: pyscipopt on ``Problem.to_scip()`` with gap limit 1e-6 (its own presolve,
  relaxations and incumbents).

Reported per run: the gap ``(U - L) / max(|U|, 1e-9)`` of its proven bound ``L`` against
the same incumbent ``U`` (constropt's), the seconds until it first reached 1e-6 ("-" when
it did not; SCIP: its solving time when it ended below 1e-6), boxes and LPs; for the LP
runs also LPs per second of LP time (building the relaxations, HiGHS and the safe bounds)
and simplex iterations per LP.  A bound above the best known optimum (more than 1e-9
relative) is marked WRONG.

Usage
-----
    PYTHONPATH=src python benchmarks/certify_lp.py --budget 30 \
        --out benchmarks/results/certify_lp.md
    PYTHONPATH=src python benchmarks/certify_lp.py --only G10,RC05 --budget 10
    PYTHONPATH=src python benchmarks/certify_lp.py --alphabb --only HS107,G13,G18,HS111 \
        --budget 30 --out benchmarks/results/certify_alphabb.md
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _machine import LoadMonitor, emit, header  # noqa: E402

import constropt  # noqa: E402
from constropt import benchmarks  # noqa: E402
from constropt.certify import _bnb, _branch, _lp  # noqa: E402

#: Bilinear and pooling problems first, then others of the collection (9 or 10 variables
#: among them).
PROBLEMS = ("G10", "G23", "RC05", "RC01", "G18", "st_e38", "RC21", "G13", "HS107", "HS111")


def _gap(U: float, L: float) -> float:
    if not math.isfinite(U):
        return math.inf
    return max(0.0, (U - L) / max(abs(U), 1e-9))


#: The switches of the LP path and their defaults.
SWITCHES = ((_lp, "REDUCED_COSTS"), (_lp, "WARM"), (_branch, "NODE_OBBT_SHARE"),
            (_lp, "ALPHA_BB"))
DEFAULTS = {name: getattr(mod, name) for mod, name in SWITCHES}
BEFORE = {"REDUCED_COSTS": False, "WARM": False, "NODE_OBBT_SHARE": 0.0, "ALPHA_BB": False}
#: ``--alphabb``: the defaults plus the alpha-BB cuts of every nonlinear function.
ALPHA = {**DEFAULTS, "ALPHA_BB": "all"}


def ours(p, res, budget: float, lp: bool, switches=None) -> dict:
    _bnb.LP = lp
    for mod, name in SWITCHES:
        setattr(mod, name, (switches or DEFAULTS)[name])
    made = []
    init = _lp.LPBounder.__init__

    def keep(self, *a, **k):  # the run's LP solver, for its counts
        init(self, *a, **k)
        made.append(self)
    _lp.LPBounder.__init__ = keep
    times: dict = {}
    inc = res.fun if res.feasible else math.nan
    try:
        c = _bnb.certify(p, p.parameter_vector(), inc, res.x_array, gap=1e-6,
                         time_limit=budget, target_time=times)
    finally:
        _lp.LPBounder.__init__ = init
        for mod, name in SWITCHES:
            setattr(mod, name, DEFAULTS[name])
    sign = -1.0 if p.maximize else 1.0
    lps, it = (made[-1].lps, made[-1].iterations) if made else (0, 0)
    return {"L": sign * c.lower_bound if c.kind == "bound" else math.inf,
            "t6": times.get(1e-6), "boxes": c.boxes, "lps": c.lps, "seconds": c.seconds,
            "lp_rate": lps / c.timings["lp"] if lps and c.timings["lp"] > 0 else math.nan,
            "it_per_lp": it / lps if lps else math.nan}


def scip(p, budget: float) -> dict:
    m = p.to_scip()
    m.hideOutput()
    m.setParam("limits/gap", 1e-6)
    m.setParam("limits/time", budget)
    t0 = time.perf_counter()
    m.optimize()
    wall = time.perf_counter() - t0
    sign = -1.0 if p.maximize else 1.0
    status = m.getStatus()
    L = math.inf if status == "infeasible" else sign * m.getDualbound()
    return {"L": L, "t": wall, "status": status, "nodes": m.getNNodes()}


def _t(v) -> str:
    return "-" if v is None else f"{v:.2f}"


def _solved(name):
    b = benchmarks.get(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p = b.problem()
        res = constropt.solve(p, seed=0)
    sign = -1.0 if p.maximize else 1.0
    return b, p, res, (sign * res.fun if res.feasible else math.inf), sign * b.f_star


def alphabb(names, args) -> int:
    """``interval+LP`` against the same with alpha-BB cuts on every nonlinear function."""
    load = LoadMonitor()
    lines = []
    for name in names:
        b, p, res, U, fstar = _solved(name)
        cells = []
        for sw in (DEFAULTS, ALPHA):
            r = ours(p, res, args.budget, True, sw)
            g = _gap(U, r["L"])
            wrong = " WRONG" if r["L"] > fstar + 1e-9 * max(1.0, abs(fstar)) else ""
            cells.append(f"{g:.2e}{wrong} | {_t(r['t6'])} | {r['boxes']:,} | {r['lps']:,} "
                         f"| {r['lp_rate']:.0f}")
        print(name, cells, flush=True)
        lines.append(f"| {b.name} | {len(b.variables)} | {' | '.join(cells)} |")
    text = [header("Certificates with and without alpha-BB cuts"), "",
            f"Budget {args.budget:g} s per run after `solve(seed=0)`; target gap 1e-6; gaps "
            f"against constropt's incumbent. {load.line()}", "",
            "| problem | n | LP gap | t 1e-6 (s) | boxes | LPs | LPs/s | +alpha-BB gap "
            "| t 1e-6 (s) | boxes | LPs | LPs/s |",
            "|---|---:|" + "---:|" * 10, *lines, "",
            "`+alpha-BB`: the LP defaults with `certify._lp.ALPHA_BB = \"all\"` (cuts at the "
            "centre and two corners of each box for the objective and every nonlinear "
            "constraint).  Run one after the other in one process."]
    emit("\n".join(text), args.out)
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=float, default=30.0, help="seconds per run")
    ap.add_argument("--only", default="", help="comma-separated problem names")
    ap.add_argument("--out", default=None)
    ap.add_argument("--alphabb", action="store_true",
                    help="the LP defaults against the same with alpha-BB cuts")
    args = ap.parse_args(argv)
    names = [s for s in args.only.split(",") if s] or list(PROBLEMS)
    if args.alphabb:
        return alphabb(names, args)
    load = LoadMonitor()
    rows = []
    for name in names:
        b = benchmarks.get(name)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            p = b.problem()
            res = constropt.solve(p, seed=0)
        sign = -1.0 if p.maximize else 1.0
        U = sign * res.fun if res.feasible else math.inf
        fstar = sign * b.f_star
        runs = {"interval": ours(p, res, args.budget, False),
                "LP before": ours(p, res, args.budget, True, BEFORE),
                "interval+LP": ours(p, res, args.budget, True),
                "SCIP": scip(p, args.budget)}
        _bnb.LP = True
        rows.append((b, U, fstar, runs))
        print(name, {k: (f"{_gap(U, r['L']):.3g}", r.get("t6", r.get("t"))) for k, r in
                     runs.items()}, flush=True)
    lines = [header("Certificates with and without LP relaxations, SCIP as the anchor"), "",
             f"Budget {args.budget:g} s per run after `solve(seed=0)`; target gap 1e-6; "
             f"every gap against constropt's incumbent U. {load.line()}", "",
             "| problem | n | f* | U | interval gap | t 1e-6 (s) | boxes "
             "| LP before: gap | t 1e-6 (s) | boxes | LPs | LPs/s | it/LP "
             "| interval+LP gap | t 1e-6 (s) | boxes | LPs | LPs/s | it/LP "
             "| SCIP gap | SCIP (s) | SCIP status |",
             "|---|---:|---:|---:|" + "---:|" * 3 + "---:|" * 12 + "---:|---:|---|"]
    wins = {"interval": 0, "LP before": 0, "interval+LP": 0, "SCIP": 0}
    for b, U, fstar, runs in rows:
        cells = []
        for k in ("interval", "LP before", "interval+LP"):
            r = runs[k]
            g = _gap(U, r["L"])
            wins[k] += g <= 1e-6
            wrong = " WRONG" if r["L"] > fstar + 1e-9 * max(1.0, abs(fstar)) else ""
            cell = f"{g:.2e}{wrong} | {_t(r['t6'])} | {r['boxes']:,}"
            if k != "interval":
                cell += (f" | {r['lps']:,} | {r['lp_rate']:.0f} | {r['it_per_lp']:.1f}")
            cells.append(cell)
        s = runs["SCIP"]
        gs = _gap(U, s["L"])
        wins["SCIP"] += gs <= 1e-6
        wrong = " WRONG" if s["L"] > fstar + 1e-9 * max(1.0, abs(fstar)) else ""
        lines.append(f"| {b.name} | {len(b.variables)} | {b.f_star:.10g} | "
                     f"{(U if math.isfinite(U) else math.nan):.10g} | {' | '.join(cells)} "
                     f"| {gs:.2e}{wrong} | "
                     f"{_t(s['t'] if gs <= 1e-6 else None)} | {s['status']} |")
    lines += ["", "Gap at most 1e-6 (U in minimization sense): " + ", ".join(
        f"{k} {v}/{len(rows)}" for k, v in wins.items()) + ".", "",
        "LPs/s: LPs per second of the certificate's `lp` time (building the relaxations, "
        "HiGHS, the safe bounds, tightening); it/LP: HiGHS simplex iterations per LP.  "
        "Run one after another in one process, so a row's columns share the machine's "
        "load.", "",
        "U and f* in the problem's own sense; gaps in minimization sense.  constropt's "
        "bounds are rigorous (interval arithmetic, safe LP dual bounds); SCIP's dual bound "
        "is its own (floating-point LPs)."]
    emit("\n".join(lines), args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
