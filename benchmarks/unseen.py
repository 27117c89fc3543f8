"""constropt against scipy DE, a 20-start IPOPT and SCIP on problems it was not tuned on.

The problems: ``benchmarks/unseen_problems.py`` (published problems of families the
collection does not contain, issue 28).  Solvers (``benchmarks/_unseen_solvers.py``):

constropt
    ``constropt.solve(problem, seed=k, time_limit=T)``, defaults otherwise.
scipy-de
    ``scipy.optimize.differential_evolution`` exactly as ``benchmarks/suite.py`` runs it
    (500,000 evaluations, its ``NonlinearConstraint``, ``polish=True``).
ipopt20
    20 IPOPT starts through casadi, uniform in the box (``numpy`` generator seeded with
    the run's seed), exact equalities, inequalities 1e-8 inside (constropt's check allows
    no violation of ``g <= 0``), bounds not relaxed; the best feasible end point.
scip
    SCIP (pyscipopt) on the model of ``Problem.to_scip``, 60 s limit.

Every run's final point is judged by constropt's float64 check at the problem's eq_tol
(1e-6); success: feasible and ``f - f* <= 1e-6 max(1, |f*|)``.  A run's time includes
the construction of the problem (constropt, scipy-de, scip) or of the casadi model
(ipopt20).  Each run is a forked child process, stopped after ``1.5 T + 30`` seconds (a
stopped run is a failure with that time).  The Python libraries a solver loads on first
use (``_unseen_solvers.IMPORTS``: scipy.optimize for constropt and scipy-de, casadi,
pyscipopt) are imported in the child before its clock starts, as casadi always was; the
record keeps their import time (``import_seconds``) and the report gives the time
ratios with it added too.  Records made before 2026-12-03 (labels ``before`` and
``after``) have no ``import_seconds``: their constropt times include importing
scipy.optimize (about 0.4 s), their ipopt20 times exclude importing casadi.

Usage (from the repository root; one thread, one job on a loaded machine)::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONPATH=src python benchmarks/unseen.py \
        --label before --solvers constropt --seeds 0-4 --jobs 1
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONPATH=src python benchmarks/unseen.py \
        --label before --solvers ipopt20,scip,scipy-de --seeds 0 --jobs 1
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONPATH=src python benchmarks/unseen.py \
        --label after --solvers constropt --seeds 0-4 --jobs 1 --report

Runs are appended to ``benchmarks/raw/unseen_<label>.jsonl`` (git-ignored); a run already
there is not repeated.  ``--carry LABEL --carry-upto N`` first copies LABEL's records of
the problems of at most N variables into the new label, each marked ``carried_from``: a
change that provably leaves small problems alone reruns only the large ones.
``--report`` (alone, or after the runs) writes
``benchmarks/results/unseen.md`` from every raw file: constropt per label (``before``,
``after``), the references from whichever file holds them.

``--set unseen2`` runs the second held-out set instead (``benchmarks/unseen2_problems.py``,
issue 28's rule for a change of the search: a set nobody looked at, measured once before
and once after): raw files ``benchmarks/raw/unseen2_<label>.jsonl``, report
``benchmarks/results/unseen2.md``, raw runs kept gzipped in
``benchmarks/results/unseen2_runs/``.  Its "before" measurement::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONHASHSEED=0 PYTHONPATH=src \
        python benchmarks/unseen.py --set unseen2 --label before \
        --solvers ipopt20,scip,constropt --seeds 0-2 --jobs 1 --report
"""

from __future__ import annotations

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import importlib  # noqa: E402

import _unseen_report  # noqa: E402
import unseen_problems  # noqa: E402
from _forked import run_forked  # noqa: E402
from _unseen_solvers import SOLVERS, run_one  # noqa: E402
from suite import parse_seeds  # noqa: E402

RAW = os.path.join(HERE, "raw")
REPORT = os.path.join(HERE, "results", "unseen.md")
AFTER2 = ("mkdir -p benchmarks/raw && gunzip -c benchmarks/results/unseen2_runs/before.jsonl.gz "
          "> benchmarks/raw/unseen2_before.jsonl && "
          "OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONHASHSEED=0 PYTHONPATH=src "
          "python benchmarks/unseen.py --set unseen2 --label after "
          "--solvers ipopt20,scip,constropt --seeds 0-2 --ref-seeds 0 --jobs 1 --report\n"
          "# 2026-12-03, the libraries' imports off the clock (IMPORTS), beside a fresh "
          "ipopt20 run:\n"
          "OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONHASHSEED=0 PYTHONPATH=src "
          "python benchmarks/unseen.py --set unseen2 --label imports "
          "--solvers ipopt20,constropt --seeds 0-2 --ref-seeds 0 --jobs 1 --report\n"
          "# then on the code of the chain-rule derivatives and the NumPy guards' fast "
          "path (4f47cfa, e7a56b4), again beside ipopt20:\n"
          "OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONHASHSEED=0 PYTHONPATH=src "
          "python benchmarks/unseen.py --set unseen2 --label speedups "
          "--solvers ipopt20,constropt --seeds 0-2 --ref-seeds 0 --jobs 1 --report\n"
          "# 2026-12-04: SLSQP's iteration cap max(200, 10 n) changes only problems of "
          "more than 20 variables; their runs made again beside ipopt20, the rest carried "
          "over:\n"
          "OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONHASHSEED=0 PYTHONPATH=src "
          "python benchmarks/unseen.py --set unseen2 --label iterations --carry speedups "
          "--carry-upto 20 --solvers ipopt20,constropt --seeds 0-2 --ref-seeds 0 --jobs 1 "
          "--report\n"
          "# 2026-12-04: the sweep from 20 box-filling starts before a stagnation stop "
          "(engine/_multistart.LocalSearch.sweep), every problem again beside ipopt20:\n"
          "OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONHASHSEED=0 PYTHONPATH=src "
          "python benchmarks/unseen.py --set unseen2 --label sweep "
          "--solvers ipopt20,constropt --seeds 0-2 --ref-seeds 0 --jobs 1 --report\n"
          "# 2026-12-05: the sweep as soon as the window passes without its solves "
          "(engine/_multistart.LocalSearch.pending), every problem again beside ipopt20:\n"
          "OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONHASHSEED=0 PYTHONPATH=src "
          "python benchmarks/unseen.py --set unseen2 --label pending "
          "--solvers ipopt20,constropt --seeds 0-2 --ref-seeds 0 --jobs 1 --report\n"
          "# the report alone, from the committed runs:\n"
          "mkdir -p benchmarks/raw && for f in before after ref imports speedups iterations "
          "sweep pending; "
          "do gunzip -c "
          "benchmarks/results/unseen2_runs/$f.jsonl.gz > benchmarks/raw/unseen2_$f.jsonl; "
          "done && PYTHONPATH=src python benchmarks/unseen.py --set unseen2 --seeds 0-2 "
          "--report")
# set -> (its problems module, raw-file prefix, report, title, the "after" command)
SETS = {"unseen": ("unseen_problems", "unseen", REPORT, "Unseen published problems",
                   _unseen_report.AFTER),
        "unseen2": ("unseen2_problems", "unseen2", os.path.join(HERE, "results", "unseen2.md"),
                    "Unseen published problems, second held-out set", AFTER2)}
PROBLEMS = unseen_problems  # the module of the set being run (main sets it)
PREFIX = "unseen"


def raw_path(label: str) -> str:
    return os.path.join(RAW, f"{PREFIX}_{label}.jsonl")


def done_runs(path: str) -> set:
    if not os.path.exists(path):
        return set()
    with open(path) as fh:
        recs = [json.loads(line) for line in fh if line.strip()]
    return {(r["solver"], r["problem"], r["seed"]) for r in recs}


def _child(conn, task, time_limit):
    conn.send(run_one(*task, time_limit, PROBLEMS.__name__))
    conn.close()


def _stopped(task, seconds):
    name, solver, seed = task
    bench = PROBLEMS.get(name)
    return dict(problem=name, solver=solver, seed=seed, n=len(bench.variables),
                m=len(bench.constraints), f_star=bench.f_star, x=None, fun=None,
                feasible=False, maxcv=None, seconds=seconds, nfev=None, status="STOPPED",
                error=f"stopped after {seconds:.0f} s", ok=False)


def _ended(task, seconds, why, timed_out):
    rec = _stopped(task, seconds)
    if not timed_out:
        rec.update(status="ERROR", error=why)
    return rec


def carry(source: str, path: str, label: str, upto: int) -> None:
    """Append `source`'s records of problems with at most `upto` variables to `path`
    (those not there yet), each marked ``carried_from: label``."""
    done = done_runs(path)
    with open(source) as fh:
        recs = [json.loads(line) for line in fh if line.strip()]
    moved = [dict(r, carried_from=label) for r in recs if r["n"] <= upto
             and (r["solver"], r["problem"], r["seed"]) not in done]
    with open(path, "a") as out:
        for r in moved:
            out.write(json.dumps(r) + "\n")
    print(f"carried {len(moved)} records of problems with n <= {upto} from {source}",
          flush=True)


def run_tasks(tasks, jobs, time_limit, path):
    """Run `tasks` in forked children, `jobs` at a time, appending each record."""
    with open(path, "a") as out:
        def record(rec, finished, total):
            out.write(json.dumps(rec) + "\n")
            out.flush()
            secs = rec["seconds"] if rec["seconds"] is not None else float("nan")
            print(f"[{finished}/{total}] {rec['solver']:10s} {rec['problem']:24s} "
                  f"seed {rec['seed']}: {'ok ' if rec['ok'] else 'NO '} "
                  f"f={rec['fun']} {secs:.2f}s {rec['status']}", flush=True)

        run_forked(tasks, jobs, time_limit, _child, _ended, record)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--set", default="unseen", choices=sorted(SETS),
                    help="the problem set (default unseen; unseen2: the second held-out set)")
    ap.add_argument("--label", default="before")
    ap.add_argument("--solvers", default=None,
                    help=f"comma-separated, of {', '.join(SOLVERS)} (default constropt)")
    ap.add_argument("--seeds", default="0-4", help="constropt's seeds")
    ap.add_argument("--ref-seeds", default="0", help="the other solvers' seeds")
    ap.add_argument("--problems", default="", help="comma-separated names (default: all)")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--time-limit", type=float, default=120.0,
                    help="constropt's time_limit; every run is stopped after 1.5x + 30 s")
    ap.add_argument("--carry", default=None, metavar="LABEL",
                    help="before running, copy LABEL's records of the problems of at most "
                    "--carry-upto variables into this label (each marked carried_from): "
                    "a change that cannot touch small problems reruns only the large ones")
    ap.add_argument("--carry-upto", type=int, default=None, metavar="N",
                    help="with --carry: the largest problem (variables) carried over; "
                    "the change being measured decides it")
    ap.add_argument("--report", action="store_true",
                    help="write the set's report, benchmarks/results/<set>.md (alone: "
                    "without running)")
    args = ap.parse_args(argv)
    if args.carry and args.carry_upto is None:
        ap.error("--carry needs --carry-upto N (the largest problem the change leaves alone)")
    global PROBLEMS, PREFIX
    module, PREFIX, report, title, after = SETS[args.set]
    PROBLEMS = importlib.import_module(module)
    report_only = args.report and args.solvers is None
    solvers = [s for s in (args.solvers or "constropt").split(",") if s]
    unknown = [s for s in solvers if s not in SOLVERS]
    if unknown:
        raise SystemExit(f"unknown solver(s) {unknown}; known: {', '.join(SOLVERS)}")
    names = [p for p in args.problems.split(",") if p] or list(PROBLEMS.names())
    for p in names:
        PROBLEMS.get(p)  # an unknown name fails here, before any run
    PROBLEMS.get.cache_clear()  # the children build their own records
    if not report_only:
        os.makedirs(RAW, exist_ok=True)
        path = raw_path(args.label)
        if args.carry:
            carry(raw_path(args.carry), path, args.carry, args.carry_upto)
        done = done_runs(path)
        # problem by problem, the solvers side by side (similar load for a ratio)
        seeds = {s: parse_seeds(args.seeds if s == "constropt" else args.ref_seeds)
                 for s in solvers}
        tasks = [(p, s, k) for p in names for s in solvers for k in seeds[s]
                 if (s, p, k) not in done]
        print(f"{len(tasks)} runs to do ({len(done)} already in {path})", flush=True)
        run_tasks(tasks, args.jobs, args.time_limit, path)
    if args.report:
        if args.set == "unseen":  # the first set's report, as it always was
            _unseen_report.write(RAW, REPORT, args.time_limit)
        else:
            _unseen_report.write(RAW, report, args.time_limit, PROBLEMS, PREFIX, after,
                                 args.seeds, title)
        print(f"wrote {report}")


if __name__ == "__main__":
    main()
