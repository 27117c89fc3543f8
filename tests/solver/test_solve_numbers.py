"""Numbers a user reads add up, and the polish is part of the solve: Ctrl-C during the
polish keeps the best point, time_limit bounds the polish too, timings account for the
wall time, nfev counts every evaluation, progress to a non-terminal is line-based
(issue 12, items 12 and "numbers a user reads must add up")."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.optimize
import sympy as sp

import constropt
from constropt import Status
from constropt.local import _polish
from constropt.solver._progress import make_monitor

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "src")}

x, y, z = sp.symbols("x y z", real=True)
# blog example 3: min -1.1277249018 at (0.2582932, 0, 0.7417068)
F3 = sp.sin(x) + x**2 - 2 * sp.cos(y) + y**2 + z**2
C3 = [x >= 0, y >= 0, y <= sp.pi, z <= 5, x + z >= 1, sp.cos(y) + z >= 0.5]
B3 = {x: (0, 5), z: (-5, 5)}
OPT3 = -1.1277249018


def test_ctrl_c_during_polish_returns_the_best_point_so_far(monkeypatch):
    calls = []

    def interrupted(fun, x0, *args, **kwargs):
        calls.append(1)
        fun(np.asarray(x0, float))
        fun(np.asarray(x0, float) + 1e-6)
        raise KeyboardInterrupt

    monkeypatch.setattr(scipy.optimize, "minimize", interrupted)
    # the search's own local solves (SLSQP too) are off: this is about the finish
    res = constropt.solve(F3, C3, bounds=B3, seed=0, progress=False, local_search=False)
    assert res.status is Status.INTERRUPTED and res.success is False
    assert len(calls) == 1  # nothing more after Ctrl-C
    # the search's best point is kept, checked in float64: feasible and near the optimum
    # (the search alone gets within ~1e-3 here; 0.05 leaves room for any seed or CPU)
    assert res.feasible and abs(res.fun - OPT3) < 0.05
    assert float(F3.subs(res.x)) == pytest.approx(res.fun, rel=1e-12, abs=1e-12)
    assert res.nfev >= res.history.nfev[-1] + 2  # the polish's two evaluations count


def test_time_limit_stops_the_polish(monkeypatch):
    state = {"evals": 0, "stopped": False}

    def endless(fun, x0, *args, **kwargs):  # a polish that would run for minutes
        x0 = np.asarray(x0, float)
        try:
            for i in range(200_000):
                fun(x0 + 1e-9 * (i + 1))
                state["evals"] += 1
        except Exception:
            state["stopped"] = True
            raise
        return scipy.optimize.OptimizeResult(x=x0)

    monkeypatch.setattr(scipy.optimize, "minimize", endless)
    res = constropt.solve(F3, C3, bounds=B3, seed=0, time_limit=1.0, progress=False)
    assert state["stopped"], "the polish ran past the deadline"
    assert state["evals"] < 200_000
    assert res.status is Status.TIME_LIMIT and res.feasible


def test_polish_with_a_past_deadline_does_nothing():
    import time

    p = constropt.Problem(F3, C3, bounds=B3)
    x0 = np.array([0.3, 0.1, 0.8])
    info = {}
    xp, used = _polish.polish(p, x0, p.parameter_vector(), deadline=time.perf_counter(),
                              info=info)
    assert used == 0 and info["timed_out"] and np.array_equal(xp, x0)


def _parts(timings):
    return sum(v for k, v in timings.items() if k != "total")


def test_timings_add_up_to_the_total():
    res = constropt.solve(F3, C3, bounds=B3, seed=0, progress=False)
    t = res.timings
    assert {"import", "lowering", "setup", "compile", "search", "polish", "check",
            "total"} <= set(t)
    assert all(v >= 0 for v in t.values())
    # the parts are measured back to back: they miss only the statements between them
    assert _parts(t) == pytest.approx(t["total"], rel=0.02, abs=0.01)


def test_resumed_timings_count_this_call_only(tmp_path):
    ckpt = tmp_path / "t.ckpt"
    full = constropt.solve(F3, C3, bounds=B3, seed=0, checkpoint=ckpt, checkpoint_every=10,
                           progress=False, callback=lambda s: s.generation >= 40)
    assert full.status is Status.CALLBACK
    res = constropt.resume(ckpt)
    t = res.timings
    assert t["search"] <= t["total"]
    assert _parts(t) == pytest.approx(t["total"], rel=0.02, abs=0.01)


FRESH = """
import json, sympy as sp, constropt
x, y = sp.symbols("x y", real=True)
res = constropt.solve((x - 1)**2 + (y - 2)**2, [x + y <= 2], bounds={x: (-3, 3), y: (-3, 3)},
                      seed=0, progress=False)
print(json.dumps(dict(res.timings)))
"""


def test_a_fresh_first_solve_accounts_for_its_wall_time():
    out = subprocess.run([sys.executable, "-c", FRESH], env=ENV, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    t = json.loads(out.stdout.strip().splitlines()[-1])
    assert _parts(t) == pytest.approx(t["total"], rel=0.02, abs=0.01)


def test_nfev_counts_every_evaluation(monkeypatch):
    counted = {"numpy": 0, "polish": 0}
    from constropt.finish import (
        _deadgenes,
        _finish,
        _flips,
        _intsearch,
        _poles,
        _polishing,
        _rays,
        _repair,
        _verdict,
    )
    from constropt.problem import _evaluate
    from constropt.solver import _expand

    report = _evaluate.report_numpy

    def counting_report(problem, X, pvec):
        counted["numpy"] += X.shape[1]
        return report(problem, X, pvec)

    add = _polish.Counter.add

    def counting_add(self):
        add(self)
        counted["polish"] += 1

    # every float64 evaluation (the ray and pole probes of the verdict and the exact
    # check's repair candidates included)
    for module in (_evaluate, _expand, _finish, _verdict, _rays, _poles, _repair):
        monkeypatch.setattr(module, "report_numpy", counting_report)
    monkeypatch.setattr(_polish.Counter, "add", counting_add)
    from constropt.local import _newton

    restore = _newton.restore

    def counting_restore(*args, **kwargs):  # Newton restoration of infeasible polish ends
        x, used = restore(*args, **kwargs)
        counted["restore"] += used
        return x, used

    counted["restore"] = 0
    for module in (_polishing, _intsearch, _deadgenes):  # where restore is called
        monkeypatch.setattr(module, "restore", counting_restore)
    partners = _flips._partner_moves

    def counting_partners(*args, **kwargs):  # the batched probe of the bound flips' faces
        moves, used = partners(*args, **kwargs)
        counted["faces"] += used
        return moves, used

    counted["faces"] = 0
    monkeypatch.setattr(_flips, "_partner_moves", counting_partners)
    shares = _deadgenes._shares

    def counting_shares(*args, **kwargs):  # the derivatives of the dead-gene test
        out, used = shares(*args, **kwargs)
        counted["dead"] += used
        return out, used

    counted["dead"] = 0
    monkeypatch.setattr(_deadgenes, "_shares", counting_shares)
    stationarity = _polish.stationarity

    def counting_stationarity(*args, **kwargs):  # the KKT test of a settled polish end
        r, used = stationarity(*args, **kwargs)
        counted["kkt"] += used
        return r, used

    counted["kkt"] = 0
    monkeypatch.setattr(_polishing, "stationarity", counting_stationarity)
    # the search's own local solves are off: their evaluations are in the history's
    # count, and the counters above would count them a second time
    res = constropt.solve(F3, C3, bounds=B3, seed=0, restarts=0, progress=False,
                          local_search=False)
    assert res.success
    # search evaluations + float64 checks + unboundedness probe + polish + restoration
    # + the face probe of the bound flips + the dead-gene test + the KKT test
    assert res.nfev == res.history.nfev[-1] + counted["numpy"] + counted["polish"] + \
        counted["restore"] + counted["faces"] + counted["dead"] + counted["kkt"]
    assert counted["kkt"] >= 2  # the polish as given settled: its end was tested
    assert counted["dead"] == 1  # one derivative evaluation: no gene is dead here
    assert counted["numpy"] > 1


def test_max_evals_still_holds_with_the_checks_counted():
    for polish in (True, False):
        res = constropt.solve(F3, C3, bounds=B3, seed=0, max_evals=1000, polish=polish,
                              progress=False)
        assert res.nfev <= 1000


def test_progress_to_a_file_is_line_based():
    import torch

    from constropt.engine import Population

    buf = io.StringIO()  # not a terminal
    mon = make_monitor(False, True, None, stream=buf)
    pop = Population(torch.zeros((2, 4)), torch.tensor([-3.0, 1, 2, 3]), torch.zeros(4))
    for g in (10, 20, 30):
        mon(g, 40 * g, pop, 0.1 * g)
    mon.finish()
    text = buf.getvalue()
    assert "\r" not in text
    lines = text.splitlines()
    assert len(lines) == 3 and all(ln.startswith("gen ") for ln in lines)


def test_progress_on_a_terminal_rewrites_one_line():
    import torch

    from constropt.engine import Population

    class Tty(io.StringIO):
        def isatty(self):
            return True

    buf = Tty()
    mon = make_monitor(False, True, None, stream=buf)
    pop = Population(torch.zeros((2, 4)), torch.tensor([-3.0, 1, 2, 3]), torch.zeros(4))
    mon(10, 400, pop, 0.5)
    mon(20, 800, pop, 1.0)
    mon.finish()
    assert buf.getvalue().count("\r") == 2 and buf.getvalue().endswith("\n")
