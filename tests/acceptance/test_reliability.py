"""Honest results and robustness: unbounded and constant objectives, Ctrl-C, processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
import sympy as sp

import constropt
from constropt import Status

x, y = sp.symbols("x y")
ENV = {**os.environ, "PYTHONPATH": os.path.join(os.path.dirname(__file__), "..", "..", "src")}


def test_unbounded_objective_is_reported():
    res = constropt.solve(-1 / x, [x > 0], bounds={x: (-1, 1)}, seed=0)
    assert res.status is Status.UNBOUNDED and res.success is False
    assert "unbounded" in res.message and res.feasible


def test_bounded_objective_near_a_boundary_is_not_called_unbounded():
    res = constropt.solve(x, bounds={x: (-1, 1)}, seed=0)
    assert res.status is Status.CONVERGED and res.fun == pytest.approx(-1.0)


def test_constant_objective_returns_a_feasible_point_and_says_so():
    res = constropt.solve(sp.Integer(3), [x + y <= 1], bounds={x: (-1, 1), y: (-1, 1)}, seed=0)
    assert res.success and res.fun == 3.0 and res.x[x] + res.x[y] <= 1
    assert "objective is constant" in res.message


_SCRIPT = textwrap.dedent("""
    import json, signal, sys, sympy as sp, constropt
    # A process started in the background by a non-interactive shell inherits SIGINT as
    # ignored, and Python then installs no KeyboardInterrupt handler (CI run that way never
    # saw the Ctrl-C below); an interactive user's Python always has it.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    x, y = sp.symbols("x y")
    f = sp.sin(3 * x) * sp.cos(2 * y) + 0.1 * (x**2 + y**2)
    def cb(state):  # tells the parent that the loop is running
        if state.generation == 10:
            print("running", flush=True)
    res = constropt.solve(f, [x + y <= 1], bounds={x: (-5, 5), y: (-5, 5)}, seed=int(sys.argv[1]),
                          max_generations=int(sys.argv[2]), stagnation=10**9, ftol=0.0,
                          polish=False, callback=cb)
    print(json.dumps({"status": res.status.name, "x": list(res.x_array), "fun": res.fun,
                      "nit": res.nit, "feasible": res.feasible}), flush=True)
""")


def _run(seed, gens):
    out = subprocess.run([sys.executable, "-c", _SCRIPT, str(seed), str(gens)], env=ENV,
                         capture_output=True, text=True, timeout=120, check=True)
    lines = out.stdout.splitlines()
    assert lines[0] == "running"
    return json.loads(lines[-1])


@pytest.mark.slow  # subprocesses / compiles: 30-170 s on a loaded 2-core CI box
def test_same_seed_same_result_across_processes():
    a, b = _run(3, 40), _run(3, 40)
    assert a == b
    c = _run(4, 40)
    assert c["x"] != a["x"]


@pytest.mark.slow  # subprocesses / compiles: 30-170 s on a loaded 2-core CI box
def test_ctrl_c_returns_the_best_so_far():
    proc = subprocess.Popen([sys.executable, "-c", _SCRIPT, "0", str(10**7)], env=ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "running"
    time.sleep(1.0)  # let it run some more generations
    proc.send_signal(signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:  # pragma: no cover - the Ctrl-C was not acted on
        proc.kill()
        pytest.fail("the solve did not stop within 60 s of a SIGINT")
    assert proc.returncode == 0, err
    got = json.loads(out.splitlines()[-1])
    assert got["status"] == "INTERRUPTED" and got["nit"] > 0 and got["feasible"]


def test_time_limit_is_honoured_within_a_generation():
    f = sp.sin(3 * x) * sp.cos(2 * y) + 0.1 * (x**2 + y**2)
    res = constropt.solve(f, bounds={x: (-5, 5), y: (-5, 5)}, seed=0, time_limit=0.5,
                          max_generations=10**6, stagnation=10**9, ftol=0.0, polish=False)
    # the behaviour, not the wall time: nothing else could stop this run (no generation cap
    # reached, no stagnation, no ftol), so the time limit stopped it, and the best point so far
    # is returned as a success with its history up to the stopping generation
    assert res.status is Status.TIME_LIMIT and res.success
    assert 0 < res.nit < 10**6 and len(res.history.fun) == res.nit + 1


def test_dtype_the_device_cannot_use():
    with pytest.raises(constropt.DeviceError, match="not supported"):
        constropt.solve(x**2, bounds={x: (0, 1)}, dtype="bfloat16")


def test_parameter_without_value():
    a = sp.Symbol("a")
    with pytest.raises(constropt.ProblemError, match="parameter a has no value"):
        constropt.Problem(a * x, bounds={x: (0, 1)}, parameters={a: None})


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_ctrl_c_between_two_generations_is_interrupted(monkeypatch, backend):
    """A Ctrl-C that lands outside a generation (in the loop's own bookkeeping: common
    on NumPy, where a generation takes microseconds) stops the search as INTERRUPTED
    with the best point so far, as one inside a generation does."""
    from constropt.engine._driver import Driver

    real = Driver.done.fget
    calls = {"n": 0}

    def done(self):
        calls["n"] += 1
        if calls["n"] == 40:  # once, between two generations
            raise KeyboardInterrupt
        return real(self)

    monkeypatch.setattr(Driver, "done", property(done))
    f = sp.sin(3 * x) * sp.cos(2 * y) + 0.1 * (x**2 + y**2)
    res = constropt.solve(f, [x + y <= 1], bounds={x: (-5, 5), y: (-5, 5)}, seed=0,
                          max_generations=10**6, stagnation=10**9, ftol=0.0, polish=False,
                          backend=backend, progress=False)
    assert calls["n"] >= 40
    assert res.status is Status.INTERRUPTED and res.nit > 0 and res.feasible
