"""The island model (``constropt.solve_islands``) on torch.distributed.

The multi-process tests launch real ranks with ``python -m torch.distributed.run``
(torchrun) on localhost with the gloo backend: two CPU processes, one thread each.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import numpy as np
import pytest
import sympy as sp

import constropt
from _torchrun import torchrun
from constropt.parallel._migration import _inject

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "problems"

# A multimodal 2-D problem: many local minima; the global one is at about
# (0.53397, -1.54359) with f = -0.9467693169 (dense grid + SLSQP, see the test).
PROBLEM = textwrap.dedent("""
    import sympy as sp
    x, y = sp.symbols("x y")
    OBJ = sp.sin(3 * x) * sp.cos(2 * y) + sp.Rational(1, 10) * ((x - 1)**2 + (y + 1)**2)
    CONS = [x + y <= 1]
    BOUNDS = {x: (-4, 4), y: (-4, 4)}
""")


def _reference_optimum():
    from scipy.optimize import minimize

    def f(v):
        return np.sin(3 * v[0]) * np.cos(2 * v[1]) + 0.1 * ((v[0] - 1)**2 + (v[1] + 1)**2)

    g = np.linspace(-4, 4, 801)
    X, Y = np.meshgrid(g, g)
    F = f((X, Y))
    F[X + Y > 1] = np.inf
    i = np.unravel_index(np.argmin(F), F.shape)
    r = minimize(f, [X[i], Y[i]], bounds=[(-4, 4)] * 2, tol=1e-14,
                 constraints=[{"type": "ineq", "fun": lambda v: 1 - v[0] - v[1]}])
    return r.x, float(r.fun)


ISLANDS_SCRIPT = PROBLEM + textwrap.dedent("""
    import json, os, sys
    import constropt

    out = sys.argv[1]
    rank = int(os.environ["RANK"])
    runs = {}
    for name, kw in [("de_ring", dict(topology="ring")),  # NumPy (backend="auto")
                     ("ga_all", dict(topology="all", algorithm="ga")),
                     ("de_ring_again", dict(topology="ring")),
                     ("de_ring_torch", dict(topology="ring", backend="torch"))]:
        r = constropt.solve_islands(OBJ, CONS, bounds=BOUNDS, seed=3, migrate_every=10,
                                    migrants=2, pop_size=40, timeout=30.0, **kw)
        runs[name] = {"x": r.x_array.tolist(), "fun": r.fun, "feasible": r.feasible,
                      "success": r.success, "message": r.message, "nit": r.nit,
                      "nfev": r.nfev, "seed": r.seed, "hist": r.history.fun.tolist(),
                      "status": r.status.name, "backend": r.backend}
    try:  # a rank with other settings: every rank refuses, nobody hangs
        constropt.solve_islands(OBJ, CONS, bounds=BOUNDS, seed=3, pop_size=40 + 2 * rank)
    except constropt.DistributedError as exc:
        runs["mismatch"] = str(exc)
    with open(os.path.join(out, f"rank{rank}.json"), "w") as fh:
        json.dump(runs, fh)
""")


@pytest.mark.slow  # subprocesses / compiles: 30-170 s on a loaded 2-core CI box
def test_two_ranks_migrate_and_agree_on_the_best(tmp_path):
    script = tmp_path / "islands.py"
    script.write_text(ISLANDS_SCRIPT)
    out = torchrun([script, tmp_path])
    assert out.returncode == 0, out.stdout + out.stderr
    r0 = json.loads((tmp_path / "rank0.json").read_text())
    r1 = json.loads((tmp_path / "rank1.json").read_text())
    x_ref, f_ref = _reference_optimum()
    for name in ("de_ring", "ga_all", "de_ring_again", "de_ring_torch"):
        a, b = r0[name], r1[name]
        assert a["backend"] == ("torch" if name.endswith("torch") else "numpy")
        assert a == b, f"{name}: ranks returned different results"  # identical, every field
        m = a["message"]
        assert "; islands: 2 ranks, " in m, m
        migrations = int(m.split("; islands: 2 ranks, ")[1].split(" migration")[0])
        assert migrations > 0 and migrations == a["nit"] // 10, m
        assert ("(ring)" in m) == name.startswith("de_ring") and ("(all)" in m) != ("(ring)" in m)
        assert a["success"] and a["feasible"] and a["seed"] == 3
        assert abs(a["fun"] - f_ref) <= 1e-6, (name, a["fun"], f_ref)
        assert np.allclose(a["x"], x_ref, atol=1e-3), (name, a["x"], x_ref)
        assert np.all(np.isfinite(a["hist"]))  # the stopping generation is recorded too
    assert r0["de_ring"] == r0["de_ring_again"]  # same seed, same run (CPU)
    for r, data in enumerate((r0, r1)):
        assert data["mismatch"].startswith(f"island rank {r} of 2: ranks [1] run a different "
                                           "problem or different settings than rank 0")


CRASH_SCRIPT = PROBLEM + textwrap.dedent("""
    import json, os, sys, time
    import constropt

    out, mode = sys.argv[1], sys.argv[2]
    rank = int(os.environ["RANK"])

    def callback(progress):  # rank 1 dies (or hangs) at the check point of generation 20
        if rank == 1 and progress.generation >= 20:
            if mode == "crash":
                os._exit(3)
            time.sleep(600)

    try:
        constropt.solve_islands(OBJ, CONS, bounds=BOUNDS, seed=1, migrate_every=10,
                                timeout=float(sys.argv[3]), max_generations=10**6,
                                stagnation=10**6, callback=callback)
    except constropt.DistributedError as exc:
        with open(os.path.join(out, f"error{rank}.json"), "w") as fh:
            json.dump({"message": str(exc), "rank": exc.rank,
                       "is_constropt_error": isinstance(exc, constropt.ConstroptError)}, fh)
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(5)
    sys.exit(0)
""")


@pytest.mark.slow  # subprocesses / compiles: 30-170 s on a loaded 2-core CI box
@pytest.mark.parametrize("mode", ["crash", "hang"])
def test_a_failing_rank_makes_the_other_exit_with_a_clear_error(tmp_path, mode):
    """A peer that crashes fails the next collective at once; one that hangs, after the
    timeout.  The surviving rank raises DistributedError and exits: nothing hangs."""
    script = tmp_path / "crash.py"
    script.write_text(CRASH_SCRIPT)
    # a slow monitor lets rank 0 report the error before torchrun tears the job down
    out = torchrun([script, tmp_path, mode, 8.0], timeout=90, monitor=3)
    assert out.returncode != 0
    err_file = tmp_path / "error0.json"
    assert err_file.is_file(), out.stdout + out.stderr
    err = json.loads(err_file.read_text())
    assert err["is_constropt_error"] and err["rank"] == 0
    msg = err["message"]
    # rank 0 fails in the next collective: the stop consensus of that check point
    assert msg.startswith("island rank 0 of 2: synchronisation (all_gather) at generation 20 "
                          "failed"), msg
    assert "Another rank most likely crashed" in msg and "timeout=8s" in msg
    assert "error: island rank 0 of 2" in out.stderr
    # which failure the collective saw, not how long it took: a peer that exits breaks the
    # connection (no timeout involved); one that hangs makes the collective time out
    cause = msg.split(" failed (", 1)[1].split("). Another rank", 1)[0].lower()
    timed_out = "timed out" in cause or "timeout" in cause
    assert timed_out == (mode == "hang"), (mode, cause)


@pytest.mark.slow  # subprocesses / compiles: 30-170 s on a loaded 2-core CI box
def test_cli_solve_distributed_prints_one_result(tmp_path):
    out = torchrun(["-m", "constropt.cli", "solve", EXAMPLES / "blog_example3.toml",
                          "--distributed", "--seed", "0", "--json"])
    assert out.returncode == 0, out.stdout + out.stderr
    data = json.loads(out.stdout)  # exactly one JSON document: rank 1 printed nothing
    assert data["success"] is True and abs(data["fun"] - (-1.127724902)) <= 1e-6
    assert "; islands: 2 ranks, " in data["message"] and data["seed"] == 0
    assert out.stderr.count("warning: no finite bound") == 1  # rank 0's only


# in-process: the pieces, and a single island without torchrun's environment


X, Y = sp.symbols("x y")
BOX = {X: (-5, 5), Y: (-5, 5)}


@pytest.fixture
def no_torchrun(monkeypatch):
    for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(k, raising=False)


def test_single_process_is_one_island(no_torchrun):
    import torch.distributed as dist

    x, y = sp.symbols("x y")
    res = constropt.solve_islands((x - 1)**2 + (y - 2)**2, [x + y <= 2], seed=0,
                                  bounds=BOX, device="cpu", max_generations=200)
    assert res.success and abs(res.fun - 0.5) < 1e-6 and res.seed == 0
    assert res.backend == "numpy"  # backend="auto": small work on the CPU searches on NumPy
    assert "islands: 1 rank (no torchrun environment: one process), 0 migrations" in res.message
    assert not dist.is_initialized()  # the group it created is gone
    t = res.timings  # the island start-up is counted (as setup): the parts add up
    parts = sum(v for k, v in t.items() if k != "total")
    assert all(v >= 0 for v in t.values())
    assert parts == pytest.approx(t["total"], rel=0.02, abs=0.01)


def test_stop_rules_are_taken_together(no_torchrun):
    x, y = sp.symbols("x y")
    obj = (x - 1)**2 + (y - 2)**2
    res = constropt.solve_islands(obj, [x + y <= 2], seed=0, device="cpu", target=0.6,
                                  bounds=BOX, polish=False)
    assert res.status is constropt.Status.TARGET and res.fun <= 0.6 and res.success
    assert res.nit % 10 == 0  # decided at a synchronisation point
    calls = []
    res = constropt.solve_islands(obj, [x + y <= 2], seed=0, device="cpu", bounds=BOX,
                                  callback=lambda p: calls.append(p.generation) or True)
    # the request is shared at the same check point: every rank stops there
    assert res.status is constropt.Status.CALLBACK and res.nit == 10 and calls == [10]
    assert np.isfinite(res.history.fun).all() and res.history.nfev[-1] > 0
    with pytest.raises(constropt.SolveFailedError):
        constropt.solve_islands(obj, [x + y >= 3, x + y <= 1], seed=0, device="cpu", bounds=BOX,
                                max_generations=30, throw=True)


@pytest.mark.parametrize("kwargs, match", [
    ({"topology": "star"}, "topology"), ({"migrants": 0}, "migrants"),
    ({"migrate_every": 2.5}, "migrate_every"), ({"timeout": 0}, "timeout"),
    ({"checkpoint": "x.ckpt"}, "checkpoint"), ({"pop_sise": 10}, "pop_size"),
    ({"backend": "jax"}, "backend must be one of 'auto', 'numpy', 'torch', got 'jax'"),
    ({"backend": "numpy", "compile": True}, "backend='numpy' cannot compile"),
    ({"group_backend": 3}, "group_backend must be None or a string"),
])
def test_bad_options(kwargs, match, no_torchrun):
    x = sp.Symbol("x")
    with pytest.raises(constropt.OptionError, match=match):
        constropt.solve_islands(x**2, bounds={x: (-1, 1)}, **kwargs)


def _engine(algorithm, handling="feasibility", backend="torch"):
    """A small DE or GA with its state (one instance), built the way ``build`` does, on
    ``backend`` (NumPy arrays or torch tensors)."""
    import torch

    from constropt.backend._arrays import Random, asarray
    from constropt.engine import _de, _ga
    from constropt.engine._algorithms import DE, GA
    from constropt.engine._handling import make_handler

    x, y = sp.symbols("x y")
    problem = constropt.Problem(sp.sin(3 * x) + y**2, [x + y <= 1],
                                bounds={x: (-3, 3), y: (-3, 3)})
    fit = problem.lowering.functions(backend)["fitness"]
    like = torch.zeros((), dtype=torch.float64) if backend == "torch" else np.zeros(())

    def arr(a, dtype=np.float64):
        return asarray(np.asarray(a, dtype=dtype), like)

    dt = torch.float64 if backend == "torch" else np.float64
    P = arr(np.zeros((0, 1)))
    tol = arr(1e-4)
    shape = (2, 1) if algorithm == "ga" else (2, 1, 1)
    lower = arr(np.full(shape, -3.0))
    upper = arr(np.full(shape, 3.0))
    integer = arr(np.zeros(shape, dtype=bool), bool)
    gen = Random(backend, 0)  # the engine's seeded generator
    S = 12
    if algorithm == "ga":
        cfg = _ga.GAConfig(pop_size=S)
        alg = GA(fit, _ga.make_step(fit, cfg.eta_c, cfg.eta_m), cfg,
                 gen, (lower, upper, integer), (P, tol))
    else:
        handler = make_handler(handling)
        cfg = _de.DEConfig()
        alg = DE(fit, _de.make_step(fit, handler, cfg), cfg, handler,
                 gen, (lower, upper, integer), (P[:, :, None], tol), S)
    X0 = _ga.initial(gen, S, lower.reshape(2, 1), upper.reshape(2, 1),
                     integer.reshape(2, 1), dt)
    state = alg.start(X0[:, None])
    for _ in range(3):
        state = alg.advance(state)
    return alg, state


@pytest.mark.parametrize("backend", ["torch", "numpy"])
@pytest.mark.parametrize("algorithm, handling", [("de", "feasibility"), ("de", "epsilon"),
                                                 ("ga", "feasibility")])
def test_inject_replaces_the_worst_and_keeps_the_order(algorithm, handling, backend):
    """Migrants arrive as torch tensors (what the collectives gather); the population
    stays on its own backend."""
    import torch

    from constropt.backend._arrays import is_torch, to_numpy
    from constropt.engine._ranking import order

    alg, state = _engine(algorithm, handling, backend)
    full = alg.population(state)
    assert full.X.shape == (2, 1, 12) and full.f.shape == (1, 12)  # one instance
    Xm = torch.tensor([[0.1, 2.9], [-0.2, 2.9]], dtype=torch.float64)  # 2 migrants
    fm, cvm = torch.sin(3 * Xm[0]) + Xm[1]**2, torch.clamp(Xm[0] + Xm[1] - 1, min=0)
    new = _inject(alg, state, Xm, fm, cvm)
    nfull = alg.population(new)
    assert nfull.X.shape == full.X.shape and type(new) is type(state)
    assert is_torch(nfull.X) == (backend == "torch")
    pop = type(full)(full.X[:, 0], full.f[0], full.cv[0])
    npop = type(full)(nfull.X[:, 0], nfull.f[0], nfull.cv[0])
    Xn, Xmn = to_numpy(npop.X), Xm.numpy()
    for j in range(2):  # both migrants are in
        assert any(np.array_equal(Xn[:, k], Xmn[:, j]) for k in range(Xn.shape[1]))

    def keys(p, st):
        kf, kc = alg.keys(p.f[None], p.cv[None], st)
        return kf.reshape(-1), kc.reshape(-1)

    kf, kc = keys(npop, new)
    assert np.array_equal(to_numpy(order(kf, kc)), np.arange(len(kf)))  # sorted best-first
    # the survivors are the old population's best S - 2
    kept = to_numpy(pop.X[:, order(*keys(pop, new))[:-2]])
    for k in range(kept.shape[1]):
        assert any(np.array_equal(Xn[:, i], kept[:, k]) for i in range(Xn.shape[1]))
    alg.advance(new)  # the algorithm runs on from the injected state


def test_a_process_group_name_as_backend_still_means_the_group(no_torchrun):
    """``backend`` named the process-group backend before ``group_backend``."""
    x = sp.Symbol("x")
    with pytest.warns(FutureWarning, match="group_backend='gloo'"):
        res = constropt.solve_islands(x**2, [x >= 1], bounds={x: (-3, 3)}, seed=0,
                                      device="cpu", backend="gloo")
    assert res.success and abs(res.fun - 1.0) <= 1e-9 and res.backend == "numpy"


def test_island_timings_count_the_start_up_as_setup():
    from constropt.parallel._islands import island_timings

    search = {"import": 0.0, "lowering": 0.0, "setup": 0.1, "search": 0.7, "polish": 0.2,
              "total": 1.0}
    t = island_timings(search, t_lower=0.2, total=1.5)
    assert t["lowering"] == 0.2 and t["total"] == 1.5
    assert t["setup"] == pytest.approx(0.1 + 0.3)   # 1.5 - (0.2 + 1.0 of the search's parts)
    assert sum(v for k, v in t.items() if k != "total") == pytest.approx(t["total"])
