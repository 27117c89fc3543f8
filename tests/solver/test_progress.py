"""Live progress display and user callbacks."""

from __future__ import annotations

import io

import numpy as np
import pytest
import sympy as sp

import constropt
from constropt import Progress, Status
from constropt.solver._progress import make_monitor

x, y = sp.symbols("x y")
PROBLEM = constropt.Problem((x - 1)**2 + (y + 2)**2, [x + y <= 0], bounds={x: (-5, 5), y: (-5, 5)})


def test_callback_receives_snapshots_and_can_stop_the_run():
    seen: list[Progress] = []

    def cb(state):
        seen.append(state)
        return state.generation >= 20

    res = constropt.solve(PROBLEM, seed=0, callback=cb, check_every=5, stagnation=10_000)
    assert res.status is Status.CALLBACK and res.nit == 20
    assert [s.generation for s in seen] == [5, 10, 15, 20]
    assert all(s.nfev > 0 and s.elapsed > 0 and s.x.shape == (2,) for s in seen)
    assert all(0.0 <= s.feasible_fraction <= 1.0 for s in seen)
    assert not seen[-1].x.flags.writeable
    # a callback stop is a normal end: the point is still reported, checked, successful
    assert res.success and res.feasible


def test_callback_returning_none_does_not_stop():
    res = constropt.solve(PROBLEM, seed=0, callback=lambda s: None, max_generations=30,
                          stagnation=10_000)
    assert res.status is Status.MAX_GENERATIONS and res.nit == 30


def test_progress_is_off_when_not_a_terminal():
    assert make_monitor(False, None, None, stream=io.StringIO()) is None


def test_progress_true_writes_lines():
    buf = io.StringIO()
    mon = make_monitor(True, True, None, stream=buf)
    import torch

    from constropt.engine import Population
    pop = Population(torch.zeros((2, 4)), torch.tensor([-3.0, 1, 2, 3]), torch.zeros(4))
    assert mon(10, 400, pop, 0.5) is False
    mon.finish()
    text = buf.getvalue()
    assert "gen     10" in text and "best" in text and "3" in text and "evals/s" in text
    assert text.endswith("\n")


def test_bad_callback_is_rejected():
    with pytest.raises(constropt.OptionError, match="callback must be callable"):
        constropt.solve(PROBLEM, callback=3)


def test_progress_snapshot_fun_is_in_user_sense():
    got = []
    p = constropt.Problem(-(x**2), bounds={x: (-1, 1)}, maximize=True)
    constropt.solve(p, seed=0, callback=lambda s: got.append(s.fun) or True, check_every=2)
    assert got and np.isfinite(got[0]) and got[0] <= 0
