"""The one search driver: termination rule, budgets in every mode, the steppable Search,
device choice and the compiled step's memory fallback."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import sympy as sp

import constropt
from constropt.engine._driver import CODES, Termination, check
from constropt.engine._status import Status

x, y, z, r = sp.symbols("x y z r")
BLOG3 = (sp.sin(x) + x**2 - 2 * sp.cos(y) + y**2 + z**2,
         [x >= 0, y >= 0, y <= sp.pi, z <= 5, x + z >= 1, sp.cos(y) + z >= 0.5])
BLOG3_MIN = -1.1277249018
BOX3 = {x: (0, 10), z: (-10, 5)}


@pytest.fixture(scope="module")
def disc():
    """minimize x + 2y over the disc of radius r centred at (1, -1): -1 - r sqrt(5)."""
    return constropt.Problem(x + 2 * y, [(x - 1)**2 + (y + 1)**2 <= r**2],
                             bounds={x: (-10, 10), y: (-10, 10)}, parameters={r: 1.0})


def test_check_applies_one_rule_per_instance():
    term = Termination(max_generations=100, target=-1.0, stagnation=20, check_every=10)
    f = np.array([-2.0, 5.0, -math.inf, 3.0, 3.0, 1.0])
    cv = np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.5])
    f_old = np.array([0.0, 5.0, 0.0, 3.0, 3.0, 1.0])
    cv_old = np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.5])
    quiet = np.array([0, 10, 0, 10, 10, 0])
    settled = np.array([True, True, True, True, False, True])
    quiet, code = check(term, f, cv, f_old, cv_old, quiet, np.zeros(6, bool), settled)
    # -inf reaches the target first (the target has precedence over unboundedness)
    assert [CODES[c] for c in code] == [Status.TARGET, Status.CONVERGED, Status.TARGET,
                                        Status.CONVERGED, None, None]
    # no improvement: the counters grow; an improvement resets them
    assert quiet.tolist() == [0, 20, 0, 20, 20, 10]
    _, code = check(term, f, cv, f_old, cv_old, np.zeros(6, int), np.zeros(6, bool),
                    settled, time_up=True)
    assert CODES[code[0]] is Status.TARGET and CODES[code[5]] is Status.TIME_LIMIT
    plain = Termination(max_generations=100, stagnation=20, check_every=10)
    collapsed = np.array([False, False, False, False, True, True])
    _, code = check(plain, f, cv, f_old, cv_old, np.zeros(6, int), collapsed, settled)
    assert [CODES[c] for c in code] == [None, None, Status.UNBOUNDED, None, None,
                                        Status.CONVERGED]  # collapse waits for settled


@pytest.mark.parametrize("max_evals", [150, 1000, 4000])
def test_solve_never_exceeds_max_evals(max_evals):
    res = constropt.solve(*BLOG3, bounds=BOX3, seed=0, device="cpu", max_evals=max_evals)
    assert res.nfev <= max_evals and res.history.nfev[-1] <= max_evals
    if max_evals >= 4000:
        assert res.success and res.fun == pytest.approx(BLOG3_MIN, abs=1e-8)


def test_batch_never_exceeds_max_evals_polish_included(disc):
    radii = np.array([0.5, 1.0, 2.5, 5.0])
    for max_evals in (200, 2500):
        br = constropt.solve_batch(disc, {r: radii}, seed=0, max_evals=max_evals)
        nfev = np.array([res.nfev for res in br])
        assert (nfev <= max_evals).all() and (nfev > max_evals // 2).all(), nfev
    # with room for the polish the answers are the closed-form optima
    np.testing.assert_allclose(br.fun, -1 - radii * math.sqrt(5), atol=1e-7)
    assert br.feasible.all()


def test_islands_never_exceed_max_evals(monkeypatch):
    for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(k, raising=False)
    for backend in ("numpy", "torch"):
        res = constropt.solve_islands(*BLOG3, bounds=BOX3, seed=0, device="cpu",
                                      max_evals=1500, backend=backend)
        assert res.nfev <= 1500 and res.feasible and res.backend == backend


def test_batch_instances_stop_on_their_own(disc):
    """Each instance has its own termination; finished ones drop out of the batch."""
    radii = np.array([0.5, 5.0, 1.0, 3.0, 2.0])
    br = constropt.solve_batch(disc, {r: radii}, seed=2, target=-1 - 1.5 * math.sqrt(5),
                               polish=False)
    status = [res.status for res in br]
    # the target is reachable only for r > 1.5: those stop there, the others converge
    assert status == [Status.CONVERGED, Status.TARGET, Status.CONVERGED, Status.TARGET,
                      Status.TARGET]
    nit = np.array([res.nit for res in br])
    assert nit[[1, 3, 4]].max() < nit[[0, 2]].min()
    for res, rad in zip(br, radii):
        assert len(res.history) == res.nit + 1 and res.history.nfev[-1] <= res.nfev
        if res.status is Status.CONVERGED:
            assert res.fun == pytest.approx(-1 - rad * math.sqrt(5), abs=1e-6)


def test_search_steps_inspects_and_finishes_like_solve():
    s = constropt.Search(*BLOG3, bounds=BOX3, seed=4, device="cpu")
    assert s.generation == 0 and not s.done and s.status is None
    first = s.best
    for _ in range(5):
        best = next(s)
    assert s.generation == 5 and s.nfev == 40 * 6
    assert best.fun <= first.fun and best.x.shape == (3,) and not best.x.flags.writeable
    pop = s.population
    assert pop.X.shape == (40, 3) and pop.f.shape == (40,) and pop.cv.shape == (40,)
    assert pop.f[0] == pytest.approx(best.fun) and not pop.X.flags.writeable
    res = s.result()
    assert s.done and s.status is res.status and s.result() is res
    ref = constropt.solve(*BLOG3, bounds=BOX3, seed=4, device="cpu")  # solve is the same search
    np.testing.assert_array_equal(res.x_array, ref.x_array)
    assert (res.fun, res.nfev, res.nit) == (ref.fun, ref.nfev, ref.nit)
    assert res.success and res.fun == pytest.approx(BLOG3_MIN, abs=1e-8)
    with pytest.raises(StopIteration):
        next(s)


def test_auto_device_keeps_small_work_on_the_cpu(monkeypatch):
    import torch

    from constropt.backend._devices import AUTO_CUDA_WORK, resolve_device

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert resolve_device("auto", 40 * 3).type == "cpu"
    assert resolve_device("auto", AUTO_CUDA_WORK).type == "cuda"


def test_compiled_step_falls_back_to_chunks_on_out_of_memory():
    from constropt import MemoryWarning
    from constropt.engine._memory import OOMFallback

    def compiled(a):
        raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")

    calls = []
    step = OOMFallback(compiled, lambda: (lambda a: calls.append(a) or a + 1))
    with pytest.warns(MemoryWarning, match="chunks"):
        assert step(1) == 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert step(2) == 3  # the eager step serves every later call, no new warning
    assert calls == [1, 2]
    boom = OOMFallback(lambda a: 1 / 0, lambda: None)
    with pytest.raises(ZeroDivisionError):  # only out-of-memory errors fall back
        boom(1)


def test_finished_instances_drop_out_of_the_work(disc):
    """Compaction: the rows still in the batch are the live instances."""
    import time

    from constropt.solver._options import SolveOptions
    from constropt.solver._search import Search

    radii = np.array([0.5, 5.0, 1.0, 3.0])
    opts = SolveOptions.from_kwargs({"target": -1 - 1.5 * math.sqrt(5), "restarts": 0,
                                     "polish": False, "backend": "torch"})  # its trajectory
    s = Search._create(disc, opts, "cpu", None, 2, False, radii[None],
                       t_start=time.perf_counter())
    d = s._driver
    sizes = set()
    while s.step():
        sizes.add(d.algorithm.population(d.state.alg).X.shape[1])
        live = np.asarray(d.state.row_live)
        assert live.all()  # finished rows are gathered out at once
    assert sizes == {4, 2}  # two instances reach the target first, then two rows remain
    out = d.outcome()
    assert [inst.reason for inst in out] == [Status.CONVERGED, Status.TARGET,
                                             Status.CONVERGED, Status.TARGET]
