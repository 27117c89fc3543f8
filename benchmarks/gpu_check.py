"""What a GPU machine should confirm, in one script (no GPU was available where the
driver was written; every check here was reasoned about and run on CPU only).

    python benchmarks/gpu_check.py [--device cuda] [--quick]

``--device cpu --quick`` dry-runs the checks that do not need CUDA on the CPU (small
sizes), to check the script itself.

Checks (each prints PASS/FAIL with numbers; the exit code is 1 if any failed):

1. sync audit: generations between check points run under
   ``torch.cuda.set_sync_debug_mode("error")``: any blocking host synchronisation
   (``.item()``, ``bool(tensor)``, a device-to-host copy, data-dependent indexing)
   raises.  DE and GA single solves, and a DE batch of 64 instances.
2. correctness, eager and compiled, on the blog's examples 2 and 3 (known optima; the
   float64 check decides feasibility), and that a compiled solve compiles one graph
   once (``torch._dynamo.config.error_on_recompile``).
3. batch: 1,000 instances of ``min x + 2y`` over discs of radius 0.5..5 on the GPU, every
   instance within 1e-4 of ``-1 - r sqrt(5)``.
4. memory: a tiny ``memory_budget`` forces chunked evaluation (eager), and chunks of a
   compiled fitness (compile on); a compiled step that raises out-of-memory falls back
   to the chunked eager step.
5. ``device="auto"``: a 40-individual problem stays on the CPU, a large one goes to CUDA.

On a machine without CUDA it prints why it skips and exits 0.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import traceback
import warnings

import numpy as np
import sympy as sp

x, y, z, r = sp.symbols("x y z r")
RESULTS: list = []
SIZE = {"pop": 20_000, "pop2": 30_000, "big": 200_000, "B": 1000}


def check(name):
    def wrap(fn):
        def run(*a, **kw):
            t0 = time.perf_counter()
            try:
                note = fn(*a, **kw) or ""
                ok = True
            except Exception as exc:  # noqa: BLE001 - report and go on to the next check
                ok, note = False, f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
                traceback.print_exc()
            dt = time.perf_counter() - t0
            RESULTS.append((name, ok, dt, note))
            print(f"[{'PASS' if ok else 'FAIL'}] {name} ({dt:.1f} s) {note}", flush=True)
        return run
    return wrap


def blog(example):
    import constropt

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rec = constropt.benchmarks.get(f"blog_example{example}")
        return rec.problem(), rec


def disc():
    import constropt

    return constropt.Problem(x + 2 * y, [(x - 1)**2 + (y + 1)**2 <= r**2],
                             bounds={x: (-10, 10), y: (-10, 10)}, parameters={r: 1.0})


@check("sync audit: no host synchronisation between check points")
def sync_audit(device):
    import torch

    import constropt
    from constropt.solver._options import SolveOptions
    from constropt.solver._search import Search

    problem, _ = blog(3)
    runs = []
    for algorithm in ("de", "ga"):
        runs.append((algorithm, 1, constropt.Search(problem, device=device, seed=0,
                                                    check_every=25, algorithm=algorithm,
                                                    pop_size=4096)))
    opts = SolveOptions.from_kwargs({"check_every": 25, "restarts": 0})
    M = np.linspace(0.5, 5.0, 64)[None]
    runs.append(("de batch", 64, Search._create(disc(), opts, device, None, 0, "auto", M,
                                                t_start=time.perf_counter())))
    notes = []
    for name, B, s in runs:
        for _ in range(3):  # first generations build cached tensors (the epsilon table)
            s.step()
        torch.cuda.synchronize()
        torch.cuda.set_sync_debug_mode("error")
        try:
            for _ in range(20):  # generations 4..23: no check point (every 25)
                s.step()
        finally:
            torch.cuda.set_sync_debug_mode(0)
        notes.append(f"{name} (B={B}): 20 generations, 0 syncs")
    return "; ".join(notes)


@check("eager and compiled solves of blog examples 2 and 3 (known optima)")
def correctness(device):
    import torch
    from torch._dynamo.utils import counters

    import constropt

    notes = []
    for example in (2, 3):
        problem, rec = blog(example)
        for compile in (False, True):
            graphs = counters["stats"]["unique_graphs"]
            res = constropt.solve(problem, device=device, seed=0, compile=compile,
                                  pop_size=SIZE["pop"])
            assert res.feasible and res.success, res.message
            assert abs(res.fun - rec.f_star) <= 1e-6 * max(1.0, abs(rec.f_star)), \
                (example, compile, res.fun, rec.f_star)
            if compile:
                new = counters["stats"]["unique_graphs"] - graphs
                old = torch._dynamo.config.error_on_recompile
                torch._dynamo.config.error_on_recompile = True
                try:  # a second solve, another size and seed: no recompile
                    again = constropt.solve(problem, device=device, seed=1, compile=True,
                                            pop_size=SIZE["pop2"])
                finally:
                    torch._dynamo.config.error_on_recompile = old
                assert again.success and counters["stats"]["unique_graphs"] - graphs == new
                notes.append(f"ex{example} compiled: {new} graph(s), no recompile, "
                             f"search {res.timings['search']:.2f} s")
            else:
                notes.append(f"ex{example} eager: search {res.timings['search']:.2f} s")
    return "; ".join(notes)


@check("solve_batch: 1,000 disc instances within 1e-4 of the closed form")
def batch(device):
    import constropt

    radii = np.linspace(0.5, 5.0, SIZE["B"])
    br = constropt.solve_batch(disc(), {r: radii}, device=device, seed=0)
    err = np.abs(br.fun - (-1 - radii * math.sqrt(5)))
    assert br.feasible.all() and err.max() <= 1e-4, err.max()
    assert all(res.device.startswith(device) for res in br)
    t = br.timings
    return (f"max error {err.max():.1e}; compile {t['compile']:.1f} s, search "
            f"{t['search']:.2f} s, polish {t['polish']:.2f} s")


@check("memory: chunked evaluation (eager and compiled) and the out-of-memory fallback")
def memory(device):
    import torch

    import constropt
    from constropt.engine._memory import OOMFallback

    problem, rec = blog(3)
    notes = []
    for compile in (False, True):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = constropt.solve(problem, device=device, seed=0, compile=compile,
                                  pop_size=SIZE["big"], memory_budget=1 << 20,
                                  max_generations=150)
        assert res.feasible and abs(res.fun - rec.f_star) <= 1e-6, res.fun
        notes.append(f"budget 1 MiB, compile={compile}: ok")

    def oom(*a):
        raise torch.cuda.OutOfMemoryError("CUDA out of memory (simulated)")

    step = OOMFallback(oom, lambda: (lambda v: v + 1))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert step(1) == 2
    assert any("chunks" in str(m.message) for m in w)
    notes.append("OutOfMemoryError -> chunked eager step")
    return "; ".join(notes)


@check('device="auto" picks CUDA only for large work')
def auto_device(device):
    import constropt

    problem, _ = blog(3)
    small = constropt.solve(problem, seed=0, max_generations=20)
    assert small.device == "cpu", small.device
    big = constropt.solve(problem, seed=0, pop_size=200_000, max_generations=5, polish=False)
    assert big.device.startswith("cuda"), big.device
    return f"40 individuals -> {small.device}; 200,000 -> {big.device}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--quick", action="store_true", help="small sizes")
    args = ap.parse_args(argv)
    if args.quick:
        SIZE.update(pop=2000, pop2=3000, big=20_000, B=100)
    try:
        import torch
    except ImportError:  # pragma: no cover
        print("gpu_check: SKIPPED - torch is not installed")
        return 0
    if args.device == "cpu":  # a dry run of the script itself
        for fn in (correctness, batch, memory):
            fn("cpu")
        return 1 if any(not ok for _, ok, _, _ in RESULTS) else 0
    if not torch.cuda.is_available():
        print("gpu_check: SKIPPED - no CUDA device on this machine (torch "
              f"{torch.__version__}, cuda build: {torch.version.cuda}); run it on a GPU "
              "machine: python benchmarks/gpu_check.py")
        return 0
    print(f"gpu_check on {torch.cuda.get_device_name()} (torch {torch.__version__})")
    for fn in (sync_audit, correctness, batch, memory, auto_device):
        fn(args.device)
    failed = [name for name, ok, _, _ in RESULTS if not ok]
    print(f"\n{len(RESULTS) - len(failed)} of {len(RESULTS)} checks passed"
          + (f"; FAILED: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
