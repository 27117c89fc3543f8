"""Same seeds, same results: a fingerprint of every collection solve, to compare two
versions of constropt around a change that should not alter behaviour.

Solves every problem of :mod:`constropt.benchmarks` with DE and with the GA (seed 0 by
default, ``--max-evals`` 60,000, no cross-check) and writes one JSON line per run: the
status, the objective and the point (``repr`` of each float, so equal lines mean
bit-identical results) and the evaluation count.  Run it on both versions with the same
thread settings and compare:

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONPATH=src python benchmarks/same_results.py \
        --out benchmarks/raw/before.jsonl            # on the old version
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONPATH=src python benchmarks/same_results.py \
        --out benchmarks/raw/after.jsonl --compare benchmarks/raw/before.jsonl

``--compare`` prints every run whose line differs and exits 1 if any does.  SLSQP and
the BLAS take other paths with other thread counts, so compare runs made with the same
ones.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings


def run(seeds, max_evals: int, out) -> list[dict]:
    import constropt
    from constropt.benchmarks import collection

    rows = []
    for bench in collection():
        for algo in ("de", "ga"):
            for seed in seeds:
                t0 = time.perf_counter()
                try:
                    res = constropt.solve(bench.problem(), seed=seed, max_evals=max_evals,
                                          cross_check=False, algorithm=algo)
                    rec = {"status": str(res.status),
                           "fun": None if res.fun is None else repr(float(res.fun)),
                           "x": None if res.x is None else
                           [repr(float(v)) for v in res.x.values()],
                           "nfev": int(res.nfev)}
                except Exception as err:  # a refusal is a result too: it must not change
                    rec = {"error": f"{type(err).__name__}: {str(err)[:200]}"}
                rec.update(name=bench.name, algo=algo, seed=seed)
                rows.append(rec)
                out.write(json.dumps(rec) + "\n")
                out.flush()
                print(f"{bench.name} {algo} seed {seed}: "
                      f"{rec.get('status', rec.get('error'))} "
                      f"({time.perf_counter() - t0:.2f} s)", flush=True)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                  "raw", "same_results.jsonl"))
    ap.add_argument("--seeds", default="0", help="comma-separated seeds (0)")
    ap.add_argument("--max-evals", type=int, default=60_000)
    ap.add_argument("--compare", default="", help="a JSON-lines file of an earlier run")
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as out:
        rows = run([int(s) for s in args.seeds.split(",") if s], args.max_evals, out)
    if not args.compare:
        return 0
    with open(args.compare) as fh:
        before = {(r["name"], r["algo"], r["seed"]): r for r in map(json.loads, fh)}
    changed = [r for r in rows if before.get((r["name"], r["algo"], r["seed"])) != r]
    for r in changed:
        print(f"changed: {r['name']} {r['algo']} seed {r['seed']}: "
              f"{before.get((r['name'], r['algo'], r['seed']))} -> {r}")
    print(f"{len(rows) - len(changed)} of {len(rows)} runs identical")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
