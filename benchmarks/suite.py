"""constropt, its GA, scipy and pymoo on the benchmark collection, CEC protocol.

Every run of every solver gets the same budget (500,000 evaluations by default) and
its final point is judged by the same rule: constropt's own float64 check
(``constropt.finish._verdict.check_point``: inequalities ``g <= 0``, strict ones ``g < 0``,
equalities ``|h| <= eq_tol``: 1e-4 for CEC 2006 and CEC 2020 as their rules say, 1e-6
for the MINLPLib and Hock-Schittkowski problems) plus the distance to the published
optimum f*:

* **abs** (the CEC rule): feasible and ``f - f* <= 1e-4``
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
constropt-ga
    The same with ``algorithm="ga"``. A run that raises (the GA refusing a problem,
    say) is a failed run, reported with its message.
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
The whole collection, issue 14's acceptance run (25 seeds of constropt and its GA,
fewer of scipy, all at 500,000 evaluations; before = the committed baseline)::

    PYTHONPATH=src python benchmarks/suite.py --runs 25 --solver-runs scipy=5 \
        --baseline benchmarks/results/suite_before_raw.jsonl \
        --out benchmarks/results/suite.md

A subset: ``--problems`` takes names and ``tag:T`` selectors (``tag:cec2020``,
``tag:minlplib``, ``tag:hock-schittkowski``, ``tag:cec2006``, ``tag:equality``...),
``--solvers`` any of the solvers above, ``--seeds`` explicit seeds (``0-4``,
``5-9``, ``0,3,7``)::

    PYTHONPATH=src python benchmarks/suite.py --problems tag:cec2020,G17 \
        --solvers constropt,constropt-ga --seeds 0-4 --out /tmp/cec2020.md
    PYTHONPATH=src python benchmarks/suite.py --quick --out benchmarks/results/suite_quick.md

Runs are independent and go to ``--jobs`` worker processes (default 2, torch held
to one thread each), which import a snapshot of ``src/constropt`` taken at the start.
Each finished run is appended to a JSON-lines file (next to ``--out``,
``*_raw.jsonl``, or ``--raw``). ``--resume`` keeps the runs already there and adds
the missing ones, so a long run can be stopped and continued, or grown seed range by
seed range (``--seeds 0-4``, then ``--resume --seeds 0-9``); ``--report-only``
rebuilds the tables from it. The modules: ``_suite_solvers.py`` (the solvers and the
judging), ``_suite_report.py`` (the tables).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _suite_report import fmt_time, num, report  # noqa: E402
from _suite_solvers import (  # noqa: E402
    ALL_SOLVERS,
    BUDGET,
    DEFAULT_SOLVERS,
    QUICK,
    QUICK_RUNS,
    init_worker,
    run_task,
)


def parse_seeds(text: str) -> list[int]:
    """``"0-4"`` -> [0, 1, 2, 3, 4]; ``"3,7"`` -> [3, 7]; ranges and lists mix."""
    seeds = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        lo, sep, hi = part.partition("-")
        seeds.extend(range(int(lo), int(hi) + 1) if sep else [int(lo)])
    if not seeds or min(seeds) < 0:
        raise SystemExit(f"--seeds {text!r}: give seeds >= 0 as '0-24' or '0,3,7'")
    return sorted(set(seeds))


def select_problems(args) -> list[str]:
    """The problems named by ``--problems`` (names, or ``tag:T`` for every problem tagged
    T), by ``--quick``, or the whole collection, in the collection's order."""
    from constropt import benchmarks

    if not args.problems:
        return list(QUICK) if args.quick else list(benchmarks.names())
    chosen = set()
    for item in filter(None, (p.strip() for p in args.problems.split(","))):
        if item.startswith("tag:"):
            found = [p.name for p in benchmarks.collection(item[4:])]
            if not found:
                raise SystemExit(f"no benchmark has the tag {item[4:]!r}")
            chosen.update(found)
        else:
            chosen.add(benchmarks.get(item).name)  # ProblemError lists the valid names
    return [n for n in benchmarks.names() if n in chosen]


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=25, help="seeds 0..runs-1 per problem (25)")
    ap.add_argument("--seeds", default="",
                    help="explicit seeds for every solver, e.g. 0-4 or 5-9 or 0,3,7 "
                         "(overrides --runs and --solver-runs)")
    ap.add_argument("--solver-runs", default="",
                    help="per-solver override of --runs, e.g. scipy=5,pymoo-ga=5")
    ap.add_argument("--quick", action="store_true",
                    help=f"problems {', '.join(QUICK)}; {QUICK_RUNS} runs")
    ap.add_argument("--problems", default="",
                    help="comma-separated names and/or tag:T selectors "
                         "(e.g. tag:cec2020,tag:minlplib,G10)")
    ap.add_argument("--solvers", default=",".join(DEFAULT_SOLVERS),
                    help=f"comma-separated, from {', '.join(ALL_SOLVERS)}")
    ap.add_argument("--budget", type=int, default=BUDGET, help="evaluations per run")
    ap.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    ap.add_argument("--pymoo-termination", choices=("default", "budget"), default="default")
    ap.add_argument("--out", default="", help="write the markdown report to this file")
    ap.add_argument("--raw", default="", help="JSON-lines file of the runs "
                    "(default: next to --out, *_raw.jsonl)")
    ap.add_argument("--resume", action="store_true",
                    help="keep the runs already in --raw and append the missing ones")
    ap.add_argument("--report-only", action="store_true",
                    help="only rebuild the report from --raw")
    ap.add_argument("--baseline", default="",
                    help="JSON-lines file of earlier runs: the report's 'before' columns")
    ap.add_argument("--no-snapshot", action="store_true",
                    help="import constropt from the live tree instead of a frozen copy")
    ap.add_argument("--note", action="append", default=[], help="a note for the header")
    return ap.parse_args(argv)


def read_jsonl(path: str) -> list[dict]:
    """The records of a JSON-lines file (an absent file has none)."""
    if not path or not os.path.exists(path):
        return []
    with open(path) as fh:
        return [json.loads(line) for line in fh if line.strip()]


def main(argv=None) -> int:
    args = parse_args(argv)
    warnings.simplefilter("ignore")
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))

    problems = select_problems(args)
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
    seeds = {s: list(range(runs)) for s in solvers}
    for item in filter(None, (t.strip() for t in args.solver_runs.split(","))):
        s, _, k = item.partition("=")
        if s in seeds:
            seeds[s] = list(range(int(k)))
    if args.seeds:
        seeds = {s: parse_seeds(args.seeds) for s in solvers}
    opts = {"pymoo_termination": args.pymoo_termination, "jobs": args.jobs}

    raw = args.raw or (os.path.splitext(args.out)[0] + "_raw.jsonl" if args.out else "")
    done = []
    if raw and (args.resume or args.report_only):
        loaded = {(r["solver"], r["problem"], r["seed"]): r for r in read_jsonl(raw)
                  if r["problem"] in problems and r["solver"] in solvers
                  and r["seed"] in seeds[r["solver"]] and r["budget"] == args.budget}
        # one record per run, the last written; a crashed run is run again on --resume
        # and reported as a failed run by --report-only (the GA refusing a problem, say)
        done = [r for r in loaded.values() if args.report_only or not r.get("error")]
    elif raw and not args.report_only:
        open(raw, "w").close()
    have = {(r["solver"], r["problem"], r["seed"]) for r in done}
    tasks = [(s, p, seed, args.budget, opts) for p in problems for s in solvers
             for seed in seeds[s] if (s, p, seed) not in have]
    if args.report_only:
        tasks = []
    # constropt first, then the others seed by seed (slowest first within a seed), so a
    # benchmark cut short still has whole seeds for every solver
    order = {"constropt": 0, "constropt-ga": 1, "scipy": 2, "pymoo-isres": 3,
             "pymoo-ga": 4, "pymoo-de": 5}
    tasks.sort(key=lambda t: (not t[0].startswith("constropt"), t[2], order.get(t[0], 9)))
    records = list(done)
    t_start = time.perf_counter()
    if tasks:
        records += run_all(tasks, raw, args, done)
    elapsed = time.perf_counter() - t_start if tasks and not done else None
    baseline = read_jsonl(args.baseline)
    for s in solvers:
        if len(seeds[s]) < runs and not args.seeds:
            notes.append(f"{s}: {len(seeds[s])} runs per problem instead of {runs}, to fit "
                         "the time available")
    text = report(records, problems, solvers, seeds, args.budget, notes, opts, elapsed,
                  baseline=baseline, baseline_path=args.baseline)
    print()
    print(text)
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w") as fh:
            fh.write(text)
        print(f"written {args.out}" + (f" and {raw}" if raw else ""))
    return 0


def run_all(tasks, raw, args, done) -> list[dict]:
    """Run `tasks` on ``--jobs`` workers, appending each record to `raw` as it ends."""
    records = []
    t_start = time.perf_counter()
    snapshot = None
    if not args.no_snapshot:
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
    print(f"{len(tasks)} runs ({len(done)} already done) on {args.jobs} workers", flush=True)
    pool = None
    if args.jobs <= 1:
        init_worker(snapshot)
        results = map(run_task, tasks)
    else:
        import concurrent.futures as cf
        import multiprocessing as mp

        pool = cf.ProcessPoolExecutor(args.jobs, mp_context=mp.get_context("spawn"),
                                      initializer=init_worker, initargs=(snapshot,))
        futures = [pool.submit(run_task, t) for t in tasks]
        results = (f.result() for f in cf.as_completed(futures))
    try:
        for k, rec in enumerate(results, 1):
            records.append(rec)
            if raw:
                with open(raw, "a") as fh:
                    fh.write(json.dumps(rec) + "\n")
            el = time.perf_counter() - t_start
            print(f"[{k}/{len(tasks)} {el / 60:5.1f} min] {rec['solver']:12s} "
                  f"{rec['problem']:27s} seed {rec['seed']:2d}: "
                  f"{'OK  ' if rec['ok_abs'] else 'FAIL'} "
                  f"f={num(rec['fun'], '.10g')} "
                  f"feas={rec['feasible']} nfev={rec['nfev']} "
                  f"t={fmt_time(rec['seconds'])}"
                  + (f" ERROR {rec['message']}" if rec["error"] else ""), flush=True)
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)
        if snapshot:
            import shutil
            shutil.rmtree(snapshot, ignore_errors=True)
    return records


if __name__ == "__main__":
    sys.exit(main())
