"""The original experiment's fitness evaluations, side by side with constropt's evaluator.

Examples 1, 2 and 3 of the blog post (see ``/work/shared/BASELINES.md``) at 900,000
individuals, each variant timed as the median of repeated runs after one warm-up:

- pure Python loops (example 1 on a subsample, scaled up; said so in the table),
- the blog's NumPy code (float64 row-major ``(S, 3)``; int8 ``(S, 1000)`` for example 1),
- sympy ``lambdify`` with the ``numpy`` module,
- hand-written torch, eager and ``torch.compile``, over the row-major ``(S, 3)`` layout
  and the variable-major ``(3, S)`` layout (float32),
- constropt through its public API only: ``problem.fitness("death", layout=...)``
  (the compiled fitness function a user plugs into their own GA) over both layouts,
  eager and compiled, and ``problem.evaluate`` on the row-major float32 tensor,
- interleaved A/B runs of each public fitness against the best hand-written compiled
  kernel for the same input (the 1.2x criterion) and a summary of the acceptance ratios,
- the same on CUDA when a GPU is present (skipped cleanly otherwise).

Every variant is checked against the NumPy result.  Effective bandwidth is the bytes the
variant must read and write at least (inputs once, the output once) over its time, next
to a bandwidth probe (large torch copy and sum) measured in the same run.  Compile time
(the first call of a compiled function) has its own column.

Run: ``PYTHONPATH=src python benchmarks/blog_table.py [--quick] [--output FILE]``.
"""

from __future__ import annotations

import argparse
import gc
import math
import os
import statistics
import sys
import tempfile
import time
import warnings

import numpy as np
import sympy as sp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _machine import LoadMonitor, Quiet, emit, fmt_load, header  # noqa: E402

# the experiment's NumPy code, the anchor (one copy: the CLI's `bench` table uses it too)
from constropt.interface._quickbench import blog_numpy, median_time  # noqa: E402

S_DEFAULT = 900_000
GENES = 1000
INF = math.inf


# --------------------------------------------------------------------------- helpers



WAIT = [0.0]   # seconds to wait for an idle machine before each measurement
LOADS = []     # other processes' CPU share during the measurements of the current row


def timed(fn, repeats: int, sync=None) -> float:
    """Median seconds of ``fn()`` over ``repeats`` runs after one warm-up run."""
    with Quiet(WAIT[0]) as q:
        t = median_time(fn, repeats, sync)
    LOADS.append(q.load)
    return t


def ab(fa, fb, rounds: int, sync=None) -> tuple[float, float]:
    """Medians (seconds) of two functions run alternately, so that drift of the machine
    (frequency, caches, neighbours' load) hits both alike."""
    ta, tb = [], []
    fa(), fb()
    for _ in range(rounds):
        for fn, out in ((fa, ta), (fb, tb)):
            if sync:
                sync()
            t0 = time.perf_counter()
            fn()
            if sync:
                sync()
            out.append(time.perf_counter() - t0)
    return statistics.median(ta), statistics.median(tb)


CONTEXT = [True]  # False (--skip-context): only the rows the acceptance ratios need
SUMMARY = []   # acceptance lines: (example, what, ratio vs NumPy, ratio vs hand-written)


def first_call(fn, sync=None):
    """(seconds, result) of one call: the compile time of a compiled function."""
    with Quiet(WAIT[0]) as q:
        t0 = time.perf_counter()
        out = fn()
        if sync:
            sync()
        t = time.perf_counter() - t0
    LOADS.append(q.load)
    return t, out


def bandwidth_probe(repeats: int) -> dict:
    """GB/s of a 256 MiB torch copy (read + write) and sum (read) on this machine."""
    import torch

    a = torch.rand(2**26)
    b = torch.empty_like(a)
    nbytes = a.numel() * a.element_size()
    t_copy = timed(lambda: b.copy_(a), repeats)
    t_sum = timed(lambda: a.sum(), repeats)
    out = {"copy": 2 * nbytes / t_copy / 1e9, "sum": nbytes / t_sum / 1e9}
    a = b = None  # free 512 MiB
    # a working set like example 2's float32 population (~14 MB): may stay in cache
    c = torch.rand(2**22)
    d = torch.empty_like(c)
    t_small = timed(lambda: d.copy_(c), 3 * repeats)
    out["copy_16MB"] = 2 * c.numel() * 4 / t_small / 1e9
    return out


def _llc() -> str:
    try:
        base = "/sys/devices/system/cpu/cpu0/cache"
        sizes = [open(f"{base}/{d}/size").read().strip() for d in sorted(os.listdir(base))
                 if d.startswith("index")]
        return f" ({sizes[-1]})" if sizes else ""
    except OSError:
        return ""


class Table:
    """Rows of one long markdown table."""

    def __init__(self, probe_gbs: float):
        self.rows = []
        self.probe = probe_gbs

    def add(self, example, variant, layout, seconds, ref, nbytes, compile_s=None,
            check="ok", note=""):
        loads = [v for v in LOADS if v is not None]
        load = fmt_load(max(loads) if loads else None)
        LOADS.clear()
        if seconds is None:
            self.rows.append((example, variant, layout, "skipped", "", "", "", "", check,
                              "", note))
            return
        gbs = nbytes / seconds / 1e9
        self.rows.append((
            example, variant, layout, f"{seconds * 1e3:.3g}" if seconds < 1 else
            f"{seconds * 1e3:,.0f}",
            f"{ref / seconds:.3g}x" if ref else "",
            f"{gbs:.3g}", f"{100 * gbs / self.probe:.0f}%",
            "" if compile_s is None else f"{compile_s:.1f}", check, load, note))
        print(" | ".join(str(c) for c in self.rows[-1]), file=sys.stderr, flush=True)

    def markdown(self) -> str:
        head = ("| ex | variant | layout, dtype | time (ms) | vs NumPy | GB/s | of probe | "
                "compile (s) | check | other load | note |")
        lines = [head, "|" + "---|" * 11]
        for r in self.rows:
            lines.append("| " + " | ".join(str(c) for c in r) + " |")
        return "\n".join(lines)


def check_death(ref: np.ndarray, got, tol=1e-5) -> str:
    """'ok' when feasibility (finite vs inf) and values agree with the float64 reference
    up to float32 rounding at the constraint boundaries; else what differs."""
    got = np.asarray(got.cpu() if hasattr(got, "cpu") else got, dtype=np.float64).ravel()
    if got.shape != ref.shape:
        return f"shape {got.shape}"
    fin_r, fin_g = np.isfinite(ref), np.isfinite(got)
    flips = int(np.sum(fin_r != fin_g))
    both = fin_r & fin_g
    err = float(np.max(np.abs(got[both] - ref[both]) / np.maximum(1.0, np.abs(ref[both])))) \
        if both.any() else 0.0
    if flips <= max(2, ref.size // 100_000) and err <= tol:
        return "ok" if flips == 0 else f"ok ({flips} boundary flips)"
    return f"MISMATCH: {flips} flips, rel err {err:.1e}"


def check_sum(ref: np.ndarray, got) -> str:
    got = np.asarray(got.cpu() if hasattr(got, "cpu") else got).ravel()
    if got.shape != ref.shape:
        return f"shape {got.shape}"
    bad = int(np.sum(got.astype(np.int64) != ref))
    return "ok" if bad == 0 else f"WRONG in {bad} rows"


# --------------------------------------------------------------------------- example 2/3



def python_loop(example: int):
    """The blog's pure Python fitness over a list of ``[x, y, z]`` lists."""
    sin, cos, pi = math.sin, math.cos, math.pi
    if example == 2:
        def fitness(rows):
            out = []
            for x, y, z in rows:
                if x >= 1 and 3 < y <= 7 and z < 0 and x + y + z >= 3 and x**2 + z**2 <= 10:
                    out.append(-(x**2 + 2 * y**2 + 3 * z**2 + 4 * x * y - 5 * y * z))
                else:
                    out.append(INF)
            return out
    else:
        def fitness(rows):
            out = []
            for x, y, z in rows:
                if x >= 0 and 0 <= y <= pi and z <= 5 and x + z >= 1 and cos(y) + z >= 0.5:
                    out.append(sin(x) + x**2 - 2 * cos(y) + y**2 + z**2)
                else:
                    out.append(INF)
            return out
    return fitness


def hand_torch(example: int, layout: str):
    """The best hand-written torch kernel: columns, ``x*x`` instead of ``x**2``, one AND
    of the comparisons, one ``where``.  ``layout`` is ``"rm"`` (S, 3) or ``"vm"`` (3, S)."""
    import torch

    def cols(pop):
        if layout == "rm":
            return pop[:, 0], pop[:, 1], pop[:, 2]
        return pop[0], pop[1], pop[2]

    if example == 2:
        def fitness(pop):
            x, y, z = cols(pop)
            xx, zz = x * x, z * z
            mask = (x >= 1) & (y > 3) & (y <= 7) & (z < 0) & (x + y + z >= 3) & (xx + zz <= 10)
            f = xx + 2 * y * y + 3 * zz + 4 * x * y - 5 * y * z
            return torch.where(mask, -f, INF)
    else:
        def fitness(pop):
            x, y, z = cols(pop)
            cy = torch.cos(y)
            mask = (x >= 0) & (y >= 0) & (y <= math.pi) & (z <= 5) & (x + z >= 1) & \
                (cy + z >= 0.5)
            f = torch.sin(x) + x * x - 2 * cy + y * y + z * z
            return torch.where(mask, f, INF)
    return fitness


def sympy_death(problem_record):
    """The death-penalty fitness as one sympy expression (minimization sense)."""
    f = problem_record.objective
    if problem_record.maximize:
        f = -f
    return sp.Piecewise((f, sp.And(*problem_record.constraints)), (sp.oo, True))


def example_23(example: int, S: int, repeats: int, table: Table, devices):
    import torch

    from constropt import benchmarks

    rng = np.random.default_rng(example)
    pop64 = rng.uniform(-25, 25, size=(S, 3))
    ref = blog_numpy(example)(pop64)
    ex = f"{example}"

    t_np = timed(lambda: blog_numpy(example)(pop64), repeats)
    np_loads = LOADS[:]
    LOADS.clear()

    if not CONTEXT[0]:
        LOADS.extend(np_loads)
        table.add(ex, "NumPy (blog code)", "(S, 3) row-major, float64", t_np, t_np, 32 * S,
                  check="reference")
    # pure Python over the whole population (lists of floats), fewer repeats
    rows = pop64.tolist() if CONTEXT[0] else []
    py = python_loop(example)
    if CONTEXT[0]:
        t = timed(lambda: py(rows), max(1, repeats // 3))
        table.add(ex, "pure Python loop", "list of lists, float", t, t_np, 32 * S,
                  check=check_death(ref, np.array(py(rows))), note="whole population")
        rows = None
        gc.collect()
        LOADS.extend(np_loads)
        table.add(ex, "NumPy (blog code)", "(S, 3) row-major, float64", t_np, t_np, 32 * S,
                  check="reference")

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rec = benchmarks.get(f"blog_example{example}")
        problem = rec.problem()
    if CONTEXT[0]:
        lam = sp.lambdify(rec.variables, sympy_death(rec), "numpy")
        cx, cy, cz = pop64[:, 0], pop64[:, 1], pop64[:, 2]
        with np.errstate(all="ignore"):
            t = timed(lambda: lam(cx, cy, cz), repeats)
            got = lam(cx, cy, cz)
        table.add(ex, "sympy lambdify (numpy)", "(S, 3) row-major, float64", t, t_np,
                  32 * S, check=check_death(ref, got))

    ab_rounds = max(30, 5 * repeats)
    for dev in devices:
        sync = torch.cuda.synchronize if dev == "cuda" else None
        tag = "" if dev == "cpu" else " [CUDA]"
        rm = torch.as_tensor(pop64, dtype=torch.float32).to(dev).contiguous()
        vm = rm.t().contiguous()
        hand = {}
        for layout, data, desc in (("rm", rm, "(S, 3) row-major, float32"),
                                   ("vm", vm, "(3, S) variable-major, float32")):
            fn = hand_torch(example, layout)
            if dev == "cpu" and CONTEXT[0]:
                t = timed(lambda: fn(data), repeats, sync)
                table.add(ex, "hand-written torch eager", desc, t, t_np, 16 * S,
                          check=check_death(ref, fn(data)))
            cfn = torch.compile(fn)
            hand[layout] = cfn
            tc, got = first_call(lambda: cfn(data), sync)
            t = timed(lambda: cfn(data), repeats, sync)
            table.add(ex, "hand-written torch.compile" + tag, desc, t, t_np, 16 * S,
                      compile_s=tc, check=check_death(ref, got))
        # constropt, public API only: the fitness function a user plugs into a GA loop
        for layout, api_layout, data, desc in (
                ("rm", "rows", rm, "(S, 3) row-major, float32"),
                ("vm", "columns", vm, "(3, S) variable-major, float32")):
            call = f'problem.fitness("death", layout="{api_layout}")'
            if dev == "cpu" and CONTEXT[0]:
                eager = problem.fitness("death", layout=api_layout, compile=False)
                t = timed(lambda: eager(data), repeats, sync)
                table.add(ex, f"constropt {call}, compile=False", desc, t, t_np, 16 * S,
                          check=check_death(ref, eager(data)))
            fit = problem.fitness("death", layout=api_layout, device=dev)
            tc, got = first_call(lambda: fit(data), sync)
            t = timed(lambda: fit(data), repeats, sync)
            table.add(ex, f"constropt {call}" + tag, desc, t, t_np, 16 * S, compile_s=tc,
                      check=check_death(ref, got), note="compiled, dynamic shapes")
            hfn = hand[layout]
            mh, mk = ab(lambda: hfn(data), lambda: fit(data), ab_rounds, sync)
            table.add(ex, f"constropt {call}, A/B" + tag, desc, mk, t_np, 16 * S,
                      check="ok", note=f"interleaved A/B: {mk / mh:.2f}x the hand-written "
                                       f"compiled kernel on this layout ({mh * 1e3:.3f} ms)")
            SUMMARY.append((ex, f"`{call}`{tag}, {desc}", t_np / mk, mk / mh))
        # Problem.evaluate on the row-major float32 tensor (per-constraint violations too)
        t_ev0 = time.perf_counter()
        ev = problem.evaluate(rm)
        if sync:
            sync()
        tc = time.perf_counter() - t_ev0
        fun = ev.fun.double().cpu().numpy()
        sgn = -1.0 if problem.maximize else 1.0
        got = np.where(ev.feasible.cpu().numpy(), sgn * fun, np.inf)
        t = timed(lambda: problem.evaluate(rm), repeats, sync)
        table.add(ex, "constropt problem.evaluate" + tag, "(S, 3) row-major, float32", t,
                  t_np, 16 * S + 4 * S * (1 + len(problem.constraints)), compile_s=tc,
                  check=check_death(ref, got),
                  note="fun, violation (S, m), feasible; compiled above 100,000 points")
        SUMMARY.append((ex, f"`problem.evaluate`{tag}, (S, 3) row-major, float32",
                        t_np / t, None))
        rm = vm = None


# --------------------------------------------------------------------------- example 1

def example_1(S: int, repeats: int, table: Table, devices):
    import torch

    rng = np.random.default_rng(1)
    pop = rng.integers(1, 25, size=(S, GENES), dtype=np.int8)  # row-major (S, 1000)
    ref = pop.sum(axis=1, dtype=np.int64)
    nbytes = S * GENES + 4 * S  # int8 genes in, one 32-bit sum out
    ex = "1"

    t_np = timed(lambda: np.sum(pop, axis=1), repeats)
    np_loads = LOADS[:]
    LOADS.clear()
    if not CONTEXT[0]:
        LOADS.extend(np_loads)
        table.add(ex, "NumPy sum(axis=1) (blog code)", "(S, 1000) row-major, int8", t_np,
                  t_np, nbytes, check="reference")
    n_py = min(S, 20_000) if CONTEXT[0] else 0
    rows = pop[:n_py].tolist()
    if CONTEXT[0]:
        t = timed(lambda: [sum(r) for r in rows], max(1, repeats // 2)) * (S / n_py)
        table.add(ex, "pure Python loop", "list of lists, int", t, t_np, nbytes,
                  check=check_sum(ref[:n_py], np.array([sum(r) for r in rows])),
                  note=f"{n_py:,} rows timed, scaled x{S / n_py:.3g}")
        rows = None
        n_ap = min(S, 90_000)
        sub = pop[:n_ap]
        t = timed(lambda: np.apply_along_axis(np.sum, 1, sub), 1) * (S / n_ap)
        table.add(ex, "NumPy apply_along_axis(np.sum)", "(S, 1000) row-major, int8", t, t_np,
                  nbytes, check=check_sum(ref[:n_ap], np.apply_along_axis(np.sum, 1, sub)),
                  note=f"{n_ap:,} rows timed, scaled x{S / n_ap:.3g}")
        LOADS.extend(np_loads)
        table.add(ex, "NumPy sum(axis=1) (blog code)", "(S, 1000) row-major, int8", t_np, t_np,
                  nbytes, check="reference")
    vm = np.ascontiguousarray(pop.T)  # variable-major (1000, S): constropt's layout
    g = sp.IndexedBase("g", shape=(GENES,), integer=True)
    i = sp.Symbol("i", integer=True)
    objective = sp.Sum(g[i], (i, 0, GENES - 1))
    if CONTEXT[0]:
        t = timed(lambda: np.sum(vm, axis=0), repeats)
        table.add(ex, "NumPy sum(axis=0)", "(1000, S) variable-major, int8", t, t_np, nbytes,
                  check=check_sum(ref, np.sum(vm, axis=0)))

        lam = sp.lambdify([g], objective, "numpy")
        got8 = lam(vm)
        vm32 = vm.astype(np.int32)
        t = timed(lambda: lam(vm32), max(1, repeats // 2))
        table.add(ex, "sympy lambdify (numpy)", "(1000, S) variable-major, int32", t, t_np,
                  4 * S * GENES + 4 * S, check=check_sum(ref, lam(vm32)),
                  note=f"on the int8 data it is {check_sum(ref, got8).lower()} (int8 overflow); "
                       "timed on an int32 copy")
        vm32 = got8 = None
        gc.collect()

    import constropt

    problem = constropt.Problem(objective, [], bounds={g: (1, 24)})

    for dev in devices:
        sync = torch.cuda.synchronize if dev == "cuda" else None
        tag = "" if dev == "cpu" else " [CUDA]"
        trm = torch.from_numpy(pop).to(dev)
        tvm = torch.from_numpy(vm).to(dev)
        variants = [
            ("torch sum(1) (int64 accumulator)", "rm", lambda x: x.sum(1)),
            ("torch sum(1, dtype=int32)", "rm", lambda x: x.sum(1, dtype=torch.int32)),
            ("torch to(float32).sum(1)", "rm", lambda x: x.to(torch.float32).sum(1)),
            ("torch sum(0, dtype=int32)", "vm", lambda x: x.sum(0, dtype=torch.int32)),
            ("torch to(float32).sum(0)", "vm", lambda x: x.to(torch.float32).sum(0)),
        ]
        best = {}  # layout -> (seconds, name, compiled fn): the best hand-written kernel
        if not CONTEXT[0]:  # the best kernels of a full run, per layout
            variants = [v for v in variants if "int64" not in v[0]]
        for name, layout, fn in variants:
            data = trm if layout == "rm" else tvm
            desc = ("(S, 1000) row-major, int8" if layout == "rm"
                    else "(1000, S) variable-major, int8")
            if dev == "cpu" and CONTEXT[0]:
                t = timed(lambda: fn(data), repeats, sync)
                table.add(ex, name + " eager", desc, t, t_np, nbytes,
                          check=check_sum(ref, fn(data)))
            cfn = torch.compile(fn)
            tc, got = first_call(lambda: cfn(data), sync)
            t = timed(lambda: cfn(data), repeats, sync)
            table.add(ex, name + " torch.compile" + tag, desc, t, t_np, nbytes, compile_s=tc,
                      check=check_sum(ref, got))
            if layout not in best or t < best[layout][0]:
                best[layout] = (t, name, cfn)
        for layout, api_layout, data, desc in (
                ("rm", "rows", trm, "(S, 1000) row-major, int8"),
                ("vm", "columns", tvm, "(1000, S) variable-major, int8")):
            call = f'problem.fitness("death", layout="{api_layout}")'
            if dev == "cpu" and CONTEXT[0]:
                eager = problem.fitness("death", layout=api_layout, compile=False)
                t = timed(lambda: eager(data), repeats, sync)
                table.add(ex, f"constropt {call}, compile=False", desc, t, t_np, nbytes,
                          check=check_sum(ref, eager(data)))
            fit = problem.fitness("death", layout=api_layout, device=dev)
            tc, got = first_call(lambda: fit(data), sync)
            t = timed(lambda: fit(data), repeats, sync)
            table.add(ex, f"constropt {call}" + tag, desc, t, t_np, nbytes, compile_s=tc,
                      check=check_sum(ref, got),
                      note="compiled; int8 genes, int32 accumulator, float32 result")
            _, hname, hfn = best[layout]
            mh, mk = ab(lambda: hfn(data), lambda: fit(data), max(6, 2 * repeats), sync)
            table.add(ex, f"constropt {call}, A/B" + tag, desc, mk, t_np, nbytes, check="ok",
                      note=f"interleaved A/B: {mk / mh:.2f}x the best hand-written compiled "
                           f"kernel on this layout, {hname} ({mh * 1e3:.1f} ms)")
            SUMMARY.append((ex, f"`{call}`{tag}, {desc}", t_np / mk, mk / mh))
        # the best kernel on this data in either layout: the row-major float32 sum
        tb, bname, _ = min(best.values(), key=lambda r: r[0])
        SUMMARY.append((ex, f"best hand-written kernel on this data{tag}: {bname}, "
                            f"{tb * 1e3:.1f} ms", t_np / tb, None))
        trm = tvm = None
    pop = vm = None
    gc.collect()


# --------------------------------------------------------------------------- main

def summary() -> str:
    """The acceptance ratios: the public API against the experiment's NumPy code (at
    least 30x for examples 2 and 3) and against the best hand-written compiled kernel on
    the same input (at most 1.2x), each from the interleaved A/B rows above."""
    lines = ["## Acceptance: constropt's public API", "",
             "| ex | what | vs NumPy (blog code) | vs best hand-written compiled |",
             "|---|---|---|---|"]
    for ex, what, vs_np, vs_hand in SUMMARY:
        lines.append(f"| {ex} | {what} | {vs_np:.3g}x | "
                     + ("" if vs_hand is None else f"{vs_hand:.2f}x") + " |")
    return "\n".join(lines)


def main(argv=None) -> str:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats")
    ap.add_argument("--population", type=int, default=S_DEFAULT)
    ap.add_argument("--examples", default="1,2,3", help="comma-separated subset of 1,2,3")
    ap.add_argument("--cold", action="store_true",
                    help="compile with a fresh, empty inductor cache (cold compile times)")
    ap.add_argument("--no-cuda", action="store_true")
    ap.add_argument("--output", help="also write the markdown here")
    ap.add_argument("--skip-context", action="store_true",
                    help="only the rows the acceptance ratios need (no pure Python, lambdify, "
                         "eager or int64 rows)")
    ap.add_argument("--threads", type=int, default=None,
                    help="torch intra-op threads (default: torch's); 1 keeps ratios honest "
                         "on a machine other processes load (no thread barriers)")
    ap.add_argument("--wait-quiet", type=float, default=0.0, metavar="SECONDS",
                    help="before each measurement, wait up to this long for an idle machine")
    args = ap.parse_args(argv)
    WAIT[0] = args.wait_quiet
    CONTEXT[0] = not args.skip_context
    load = LoadMonitor()
    if args.cold:
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="inductor-cold-")
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    repeats = 3 if args.quick else 9
    devices = ["cpu"]
    if torch.cuda.is_available() and not args.no_cuda:
        devices.append("cuda")
    t0 = time.perf_counter()
    probe = bandwidth_probe(repeats)
    LOADS.clear()
    best = max(probe["copy"], probe["sum"])
    table = Table(best)
    examples = [int(e) for e in args.examples.split(",")]
    for ex in sorted(examples, key=lambda e: (e == 1, e)):  # example 1 last (900 MB)
        if ex == 1:
            example_1(args.population, max(2, repeats // 2), table, devices)
        else:
            example_23(ex, args.population, repeats, table, devices)
    text = [header(f"Blog examples: fitness evaluation at {args.population:,} individuals"),
            f"Medians of {repeats} runs (example 1: {max(2, repeats // 2)}) after a warm-up. "
            f"Bandwidth probe, same run, 256 MiB arrays: torch copy {probe['copy']:.1f} GB/s "
            f"(read + write), torch sum {probe['sum']:.1f} GB/s (read); 'of probe' is against "
            f"{best:.1f} GB/s.  A 16 MiB copy runs at {probe['copy_16MB']:.1f} GB/s: "
            f"examples 2/3 (float32, {16 * args.population / 2**20:.0f} MiB in + out) fit in "
            f"this CPU's last-level cache{_llc()}, so repeated runs can beat the memory "
            "probe.  GB/s counts the bytes a variant must move at least (its "
            "input once, its output once: 16 B per individual for float32 examples 2/3, "
            "32 B for float64, 1,004 B for example 1).  'compile' is the first call of a "
            "compiled function (inductor cache "
            + ("fresh: cold compile" if args.cold else "as left by earlier runs: warm or cold")
            + "); CUDA rows appear only with a GPU"
            + ("" if "cuda" in devices else " (none here: skipped)") + ".  'other load': "
            "the largest CPU share other processes took during the row's measurements "
            "(each measurement waits for an idle machine first when --wait-quiet is given; "
            f"here {args.wait_quiet:g} s); rows above a few percent may be inflated.",
            "", table.markdown(), "", summary(), "",
            f"Total benchmark time {time.perf_counter() - t0:.0f} s.  {load.line()}"]
    return emit("\n".join(text), args.output)


if __name__ == "__main__":
    main()
