"""``Problem.fitness()`` with its defaults against hand-written code, per call, side by side.

Rows (the targets of issue 25 in brackets):

- examples 2 and 3 on a NumPy float64 ``(S, 3)`` population at 100, 10,000 and 900,000
  points: ``problem.fitness()(pop)`` against the blog's vectorized ``np.where`` NumPy code
  [no slower at 100 and 10,000; >= 5x at 900,000];
- the same examples on a float32 ``(S, 3)`` torch tensor at 900,000 points with one torch
  thread, against the blog's NumPy code on the float64 copy [>= 30x];
- example 1 (900,000 x 1,000 int8 genes, sum of genes): ``fitness()`` against the best
  hand-written compiled kernel, ``torch.compile(lambda x: x.to(float32).sum(1))``
  [within 1.1x].

How a row is timed: both sides are called through the same loop (a lambda called
``calls`` times per batch, the batch's mean per call), alternately, in rounds, the order
flipped every round (hand, fitness(); then fitness(), hand), so drift of the shared
machine hits both alike; each side's time is its **best round**.  Each batch follows
one untimed call of the same side: at 900,000 points the NumPy code's temporaries (7.2
MB each, a dozen and more per call) evict the other side's population (10.8 MB in
float32) from the last-level cache, which a loop calling one fitness does not pay.
Single-threaded rows (the NumPy sizes and the one-thread torch row) count the calling
thread's CPU time (``time.thread_time``): on a small machine shared with other work,
time spent descheduled is not counted, and on a quiet machine it equals wall time for
these calls.  Rows that run torch on several threads count wall time
(``time.perf_counter``).  NumPy sizes run 4x ``--rounds`` rounds (default 7) of batches
of about 100,000 points, the 900,000-point rows 3x ``--rounds`` of 3 calls.  The first
compiled call (compile time) is reported on its own and never timed with the rest.
Every row checks that both sides agree.

Run: ``PYTHONPATH=src python benchmarks/fitness.py [--rounds 7] [--output FILE]``.
``--quote RESULTS`` runs nothing: it rewrites the speed table of docs/fitness.md (between
its ``fitness-table`` markers) from a results file this script wrote, so the page quotes
that run and nothing else (``tests/edge/test_docs_claims.py`` checks it).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
import warnings

import numpy as np
import sympy as sp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _machine import LoadMonitor, emit, header  # noqa: E402

import constropt  # noqa: E402
from constropt.interface._quickbench import blog_numpy  # noqa: E402

x, y, z = sp.symbols("x y z")


def example(k: int):
    if k == 2:
        return constropt.Problem(
            x**2 + 2 * y**2 + 3 * z**2 + 4 * x * y - 5 * y * z,
            [x >= 1, y > 3, y <= 7, z < 0, x + y + z >= 3, x**2 + z**2 <= 10],
            maximize=True, bounds={x: (-25, 25), z: (-25, 25)})
    return constropt.Problem(
        sp.sin(x) + x**2 - 2 * sp.cos(y) + y**2 + z**2,
        [x >= 0, y >= 0, y <= sp.pi, z <= 5, x + z >= 1, sp.cos(y) + z >= 0.5],
        bounds={x: (0, 5), z: (-5, 5)})


def ab(fa, fb, rounds: int, calls: int, clock=time.perf_counter) -> tuple[float, float]:
    """Best-of-rounds mean seconds per call of ``fa`` and ``fb``: the same loop for both,
    run alternately, the order flipped every round, each batch after one untimed call;
    ``clock`` is ``time.thread_time`` for single-threaded calls (CPU time of this
    thread) or wall time."""
    ta, tb = [], []
    sides = [(fa, ta), (fb, tb)]
    for r in range(rounds):
        for fn, out in (sides if r % 2 == 0 else sides[::-1]):
            fn()  # untimed: the other side's batch left its own data in the caches
            t0 = clock()
            for _ in range(calls):
                fn()
            out.append((clock() - t0) / calls)
    return min(ta), min(tb)


def first(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def agree(got, want, rtol: float) -> str:
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    same_inf = np.isfinite(got) == np.isfinite(want)
    fin = np.isfinite(want) & np.isfinite(got)
    ok = same_inf.mean() > 0.9999 and np.allclose(got[fin], want[fin], rtol=rtol, atol=1e-3)
    return "ok" if ok else "MISMATCH"


def fmt(t: float) -> str:
    return f"{t * 1e3:.4g}"


def met(ratio: float, goal: float) -> str:
    """Whether a measured speed-up reaches its target (the table says so, not the reader)."""
    return "yes" if ratio >= goal else "**no**"


def numpy_rows(k: int, fit, hand, rng, rounds: int, compile_s: dict) -> list[str]:
    """Example ``k`` on NumPy float64 ``(S, 3)`` at 100, 10,000 and 900,000 points."""
    lines = []
    for S in (100, 10_000, 900_000):
        pop = rng.uniform(-25, 25, (S, 3))
        path = "NumPy" if S * 3 < constropt.problem._fitness.AUTO_COMPILE_WORK else \
            "compiled torch"
        if path == "NumPy":  # one thread, many small calls
            th, tf = ab(lambda: hand(pop), lambda: fit(pop), 4 * rounds,
                        max(1, 100_000 // S), time.thread_time)
        else:  # torch's threads: wall time
            compile_s[(k, "float64 rows")] = first(lambda: fit(pop))
            th, tf = ab(lambda: hand(pop), lambda: fit(pop), 3 * rounds, 3)
        goal = 5.0 if S == 900_000 else 1.0
        lines.append(f"| {k} | NumPy float64 (S, 3) | {S:,} | {path} | {fmt(th)} | "
                     f"{fmt(tf)} | {th / tf:.3g}x | >= {goal:g}x | {met(th / tf, goal)} | "
                     f"{agree(fit(pop), hand(pop), 1e-12)} |")
    return lines


def float32_rows(k: int, problem, fit, hand, rounds: int, compile_s: dict):
    """Example ``k`` on a float32 ``(S, 3)`` tensor at one thread against the blog's NumPy
    on the float64 copy; the same call against ``layout="columns"`` over ``(3, S)``; and,
    where the rows read as AVX2 vectors, against the int64 words kernel the other CPUs
    run (inductor's own vector width)."""
    import torch

    S = 900_000
    pop32 = torch.rand(S, 3) * 50 - 25
    pop64, cols32 = pop32.double().numpy(), pop32.T.contiguous()
    by_columns = problem.fitness(layout="columns")
    saved = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        compile_s[(k, "float32 rows")] = first(lambda: fit(pop32))
        th, tf = ab(lambda: hand(pop64), lambda: fit(pop32), 3 * rounds, 3, time.thread_time)
        by_columns(cols32)  # compiled before it is timed
        tr, tc = ab(lambda: fit(pop32), lambda: by_columns(cols32), 3 * rounds, 3,
                    time.thread_time)
        reads = {r for _, r in fit._compiled}
        by_words = None
        if "avx2" in reads:
            by_words = problem.fitness()
            by_words._reads = "words"  # what row_vectors() answers without AVX2
            by_words(pop32)
            ta, tw = ab(lambda: fit(pop32), lambda: by_words(pop32), 3 * rounds, 3,
                        time.thread_time)
    finally:
        torch.set_num_threads(saved)
    how = "compiled torch, " + ("AVX2 rows" if "avx2" in reads else "int64 words"
                                if "words" in reads else "plain rows")
    row = (f"| {k} | torch float32 (S, 3), 1 thread | {S:,} | {how} | {fmt(th)} | "
           f"{fmt(tf)} | {th / tf:.3g}x | >= 30x | {met(th / tf, 30.0)} | "
           f"{agree(fit(pop32).numpy(), hand(pop64), 2e-5)} |")
    note = (f"example {k}: rows {fmt(tr)} ms, columns {fmt(tc)} ms ({tr / tc:.2g}x), "
            f"{agree(by_columns(cols32).numpy(), fit(pop32).numpy(), 1e-6)}")
    if by_words is not None:
        same = "same bits" if torch.equal(by_words(pop32), fit(pop32)) else "values differ"
        note += (f"; AVX2 rows {fmt(ta)} ms, int64 words {fmt(tw)} ms ({tw / ta:.2g}x), "
                 f"{same}")
    return row, note


def example1_row(rounds: int, genes_rows: int, compile_s: dict) -> tuple[str, float]:
    """Example 1 (1,000 int8 genes, sum) against the best hand-written compiled kernel."""
    import torch

    g = sp.IndexedBase("g", shape=(1000,), integer=True)
    i = sp.Symbol("i", integer=True)
    genes = constropt.Problem(sp.Sum(g[i], (i, 0, 999)), [], bounds={g: (1, 24)})
    pop1 = torch.randint(1, 25, (genes_rows, 1000), dtype=torch.int8)
    hand1 = torch.compile(lambda a: a.to(torch.float32).sum(1), dynamic=True)
    fit1 = genes.fitness()
    c_hand = first(lambda: hand1(pop1))
    compile_s[(1, "int8 rows")] = first(lambda: fit1(pop1))
    th, tf = ab(lambda: hand1(pop1), lambda: fit1(pop1), 3 * rounds, 2)
    exact = "ok" if torch.equal(fit1(pop1), pop1.sum(1, dtype=torch.int64).float()) \
        else "MISMATCH"
    row = (f"| 1 | torch int8 ({genes_rows:,}, 1000), {torch.get_num_threads()} threads | "
           f"{genes_rows:,} | compiled torch | {fmt(th)} (compiled "
           f"`x.to(float32).sum(1)`) | {fmt(tf)} | {th / tf:.3g}x | >= 0.91x (1.1x) | "
           f"{met(th / tf, 1 / 1.1)} | {exact} (exact) |")
    return row, c_hand


#: The page's row order: the two examples side by side at each size.
PAGE_ORDER = (0, 4, 1, 5, 2, 6, 3, 7, 8)
PAGE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "docs", "fitness.md")
_MARKS = re.compile(r"(<!-- fitness-table: begin[^>]*-->\n)(.*?)(<!-- fitness-table: end -->)",
                    re.S)


def page_table(results: str) -> str:
    """docs/fitness.md's speed table, made from a results file of this script: its nine
    rows grouped by size, times in us below 0.1 ms, the targets missed marked, and the
    run's load in the header."""
    rows = [[c.strip() for c in line.strip().strip("|").split("|")]
            for line in results.splitlines() if re.match(r"\| [123] \|", line)]
    if len(rows) != len(PAGE_ORDER):
        raise ValueError(f"expected {len(PAGE_ORDER)} result rows, got {len(rows)}")
    load = re.search(r"Load from other processes during the run: (\d+%)", results)
    when = re.search(r"^(\d{4}-\d\d-\d\d \d\d:\d\d);", results, re.M)
    head = (f"| call (2-core CPU, {when.group(1) if when else 'run'}, other load "
            f"{load.group(1) if load else 'unknown'}) | hand-written | `fitness()` | "
            "ratio | target |")
    out = [head, "|---|---|---|---|---|"]

    def ms(cell: str) -> str:  # "19.8" or "167 (compiled ...)": ms, then a note
        value, _, rest = cell.partition(" ")
        t = float(value)
        text = f"{t * 1e3:.3g} us" if t < 0.1 else f"{value} ms"
        return text + (f" {rest}" if rest else "")

    for i in PAGE_ORDER:
        k, what, points, _path, hand, fit, ratio, target, met, _agree = rows[i]
        if k == "1":  # "torch int8 (900,000, 1000), 2 threads": the run's thread count
            threads = re.search(r"(\d+) threads?$", what)
            n_thr = int(threads.group(1)) if threads else 1
            call = (f"example 1, int8 {points} x 1,000, "
                    f"{'one thread' if n_thr == 1 else f'{n_thr} threads'}")
            goal = "within 1.1x"
        elif what.startswith("torch"):
            call = f"example {k}, torch float32 `(S, 3)`, one thread, {points}"
            hand, goal = f"{hand} (NumPy)", target
        else:
            call = f"example {k}, NumPy float64, {points} points"
            goal = target
        if met != "yes":
            goal += " (missed)"
        out.append(f"| {call} | {ms(hand)} | {ms(fit)} | {ratio} | {goal} |")
    return "\n".join(out) + "\n"


def quote(results_path: str, page: str = PAGE) -> str:
    """Rewrite ``page``'s speed table from ``results_path``; returns the new page."""
    with open(results_path) as fh:
        table = page_table(fh.read())
    with open(page) as fh:
        text = fh.read()
    new, count = _MARKS.subn(lambda m: m.group(1) + table + m.group(3), text)
    if count != 1:
        raise ValueError(f"{page}: expected one fitness-table block, found {count}")
    with open(page, "w") as fh:
        fh.write(new)
    return new


def main(argv=None) -> str:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--output", default=None)
    ap.add_argument("--genes-rows", type=int, default=900_000,
                    help="example 1 population (individuals of 1,000 int8 genes)")
    ap.add_argument("--quote", metavar="RESULTS", default=None,
                    help="rewrite docs/fitness.md's table from this results file; no run")
    args = ap.parse_args(argv)
    if args.quote:
        return quote(args.quote)
    warnings.simplefilter("ignore", constropt.CompileWarning)  # compile time is reported
    monitor = LoadMonitor()
    lines = [header("Problem.fitness() with defaults against hand-written code"),
             "Per-call times in ms: each side's best round (a round: the mean of a batch "
             "of calls through the same loop after one untimed call; both sides "
             "alternately, the order flipped "
             f"every round; {4 * args.rounds} rounds at the NumPy sizes, "
             f"{3 * args.rounds} at 900,000).  One-thread rows count this thread's CPU "
             "time (`time.thread_time`, so time spent descheduled on the shared machine "
             "is not counted), the others wall time.  Hand NumPy is the experiment's "
             "vectorized `np.where` code on float64; compile = the first compiled call, "
             "in s.\n",
             "| example | input | points | path taken | hand (ms) | fitness() (ms) | "
             "speed-up | target | met | values agree |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    rng = np.random.default_rng(0)
    compile_s, notes = {}, []
    for k in (2, 3):
        problem, hand = example(k), blog_numpy(k)
        fit = problem.fitness()
        lines += numpy_rows(k, fit, hand, rng, args.rounds, compile_s)
        row, note = float32_rows(k, problem, fit, hand, args.rounds, compile_s)
        lines.append(row)
        notes.append(note)
    row, c_hand = example1_row(args.rounds, args.genes_rows, compile_s)
    lines += [row, ""]
    lines.append("The same float32 population at one thread, `fitness()` over the rows "
                 "against `fitness(layout=\"columns\")` over a `(3, S)` copy (contiguous "
                 "reads), values agree; where the rows kernel reads AVX2 vectors, also "
                 "against the int64 words kernel at inductor's own vector width (the "
                 "kernel of CPUs without AVX2, and of this one before): "
                 + " / ".join(notes) + ".\n")
    lines.append("Compile (first call, s): " + "; ".join(
        f"example {k} {what} {t:.1f}" for (k, what), t in compile_s.items())
        + f"; hand-written example 1 kernel {c_hand:.1f}.")
    lines.append(monitor.line())
    return emit("\n".join(lines), args.output)


if __name__ == "__main__":
    main()
