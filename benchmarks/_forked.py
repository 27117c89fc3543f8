"""Benchmark runs in forked children, a few at a time, each bounded in wall time.

:func:`run_forked` is the loop the benchmark drivers share (``unseen.py``,
``certify_scip.py``): a child per task (a crash or a hang costs one record, not the run),
at most ``jobs`` alive, each killed past ``1.5 * limit + 30`` seconds.
"""

from __future__ import annotations

import multiprocessing
import time


def run_forked(tasks, jobs: int, limit: float, child, stopped, record) -> None:
    """Run every task of ``tasks``: ``child(conn, task, limit)`` in a forked process sends
    the task's record through ``conn``; a child that dies, exits without a record or
    outlives the hard limit gets ``stopped(task, seconds, why, timed_out)`` instead.
    ``record(rec, finished, total)`` receives each record as its task ends."""
    ctx = multiprocessing.get_context("fork")
    hard = 1.5 * limit + 30.0
    pending, running = list(tasks), []
    total, finished = len(pending), 0
    while pending or running:
        while pending and len(running) < jobs:
            task = pending.pop(0)
            parent, conn = ctx.Pipe(duplex=False)
            proc = ctx.Process(target=child, args=(conn, task, limit))
            proc.start()
            conn.close()
            running.append((proc, parent, task, time.perf_counter()))
        time.sleep(0.05)
        for item in list(running):
            proc, conn, task, t0 = item
            rec = None
            if conn.poll():
                try:
                    rec = conn.recv()
                except EOFError:
                    rec = stopped(task, time.perf_counter() - t0, "the process died", False)
            elif not proc.is_alive():
                rec = stopped(task, time.perf_counter() - t0, f"exit code {proc.exitcode}",
                              False)
            elif time.perf_counter() - t0 > hard:
                proc.kill()
                rec = stopped(task, time.perf_counter() - t0, f"stopped after {hard:.0f} s",
                              True)
            if rec is None:
                continue
            proc.join()
            running.remove(item)
            finished += 1
            record(rec, finished, total)
