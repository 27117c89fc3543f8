"""Batches at scale: local solves before the global search, the compile decision of a
batch, and the instances sharded across two gloo ranks."""

from __future__ import annotations

import json
import math
import textwrap

import numpy as np
import pytest
import sympy as sp

import constropt
from constropt import OptionError, Status
from constropt.local import _interior
from constropt.problem._bounds import parameter_box
from constropt.solver import _localfirst as lf
from constropt.solver._build import compile_choice

x, y, z, r, c = sp.symbols("x y z r c")


def _disc():
    return constropt.Problem(x + 2 * y, [(x - 1)**2 + (y + 1)**2 <= r**2],
                             bounds={x: (-10, 10), y: (-10, 10)}, parameters={r: 1.0})


def _exact(radii):
    return -1.0 - radii * math.sqrt(5.0)


def test_local_first_answers_a_smooth_sweep_without_a_global_search():
    radii = np.linspace(0.5, 5.0, 300)
    br = constropt.solve_batch(_disc(), {r: radii}, seed=0)
    # 1e-8: the settle step lands on the circle or aims 1e-9 inside it
    np.testing.assert_allclose(br.fun, _exact(radii), atol=1e-8)
    assert br.success.all() and br.feasible.all()
    assert all(res.status is Status.CONVERGED and res.nit == 0 for res in br)
    assert all(res.message.startswith("local solve") for res in br)
    assert br.timings["search"] == 0.0
    # the local solves count as polish, the exact checks and probes of their answers as
    # check; with the set-up they make up the call
    tm = br.timings
    assert tm["polish"] > 0 and tm["check"] > 0
    assert abs(sum(v for k, v in tm.items() if k != "total") - tm["total"]) <= 1e-6 * tm["total"]
    for res, rad in zip(br, radii):  # exact feasibility, as every mode
        assert res.verification.feasible
        assert (res.x_array[0] - 1) ** 2 + (res.x_array[1] + 1) ** 2 <= rad**2


def test_a_sweep_proven_convex_stops_each_anchor_at_its_first_converged_start():
    # the disc is convex at every radius: an anchor's starts stop once one converges,
    # and that one, tested, answers it
    p = parameter_box(_disc(), np.array([[0.5, 5.0]]))
    M = np.linspace(0.5, 5.0, 6)[None]
    T = lf.STARTS
    X0 = np.repeat(np.array([[0.0, 4.0, -4.0, 9.0], [0.0, 4.0, 3.0, -9.0]]), 6, axis=1)
    X, conv, its = _interior.interior_point(p, X0, np.tile(M, (1, T)), first_of=6)
    won = conv.reshape(T, 6)
    assert won.any(axis=0).all()
    j = np.argmax(won, axis=0)
    its = its.reshape(T, 6)
    # the others stopped in the iteration that found the first converged (which does
    # not count that one: it takes no step)
    assert (its.max(axis=0) <= its[j, np.arange(6)] + 1).all()
    assert (~won).any()  # some start was stopped unconverged
    f = X[0] + 2 * X[1]
    np.testing.assert_allclose(f.reshape(T, 6)[j, np.arange(6)], _exact(M[0]), atol=1e-8)
    br = constropt.solve_batch(_disc(), {r: M[0]}, seed=0)
    assert all("proven convex for every instance" in res.message for res in br)
    np.testing.assert_allclose(br.fun, _exact(M[0]), atol=1e-8)


def test_a_curvature_that_changes_sign_along_the_sweep_is_not_taken_as_convex():
    # a x**2 is convex for a >= 0 only: the first instance's convexity says nothing of
    # the others, so every start must pass and agree, and the concave instances' two
    # box ends (x = -2 or x = 1.5, whichever is lower) are found
    a = sp.Symbol("a")
    p = constropt.Problem(a * x**2 + 0.1 * x + y, [x + y >= -1, y <= 1],
                          bounds={x: (-2, 1.5), y: (-1, 1)}, parameters={a: 1.0})
    avals = np.linspace(1.0, -1.0, 12)
    br = constropt.solve_batch(p, {a: avals}, seed=0)
    assert not any("proven convex" in res.message for res in br)
    grid = np.linspace(-2, 1.5, 350001)  # spacing 1e-5: error ~1e-10 near a minimum
    # y is pushed down to max(-1, -1 - x): the lower of the two bounds binds
    best = np.array([np.min(aa * grid**2 + 0.1 * grid + np.maximum(-1.0, -1.0 - grid))
                     for aa in avals])
    assert br.success.all()
    np.testing.assert_allclose(br.fun, best, atol=1e-6)


def test_local_first_agrees_with_the_global_search_on_blog2():
    f = x**2 + 2 * y**2 + 3 * z**2 + 4 * x * y - 5 * y * z
    cons = [x >= 1, y > 3, y <= 7, z < 0, x + y + z >= 3, x**2 + z**2 <= r**2]
    p = constropt.Problem(f, cons, maximize=True, bounds={x: (1, 25), z: (-25, 0)},
                          parameters={r: 3.0})
    radii = np.linspace(2.0, 5.0, 40)
    loc = constropt.solve_batch(p, {r: radii}, seed=0)
    glob = constropt.solve_batch(p, {r: radii}, seed=0, local_first=False)
    assert loc.success.all() and glob.success.all()
    # 1e-7 relative: the global run's polish and the local solves stop at their tolerances
    np.testing.assert_allclose(loc.fun, glob.fun, rtol=1e-7)


def test_instances_whose_local_answers_disagree_get_the_global_search():
    # two wells whose depths swap at c = 0: the cold starts reach both minima, which
    # disagree, so those anchors (and their neighbours) go to the global search
    p = constropt.Problem((x**2 - 1)**2 + c * x, [x + y <= 3, y >= -1],
                          bounds={x: (-2, 2), y: (-1, 1)}, parameters={c: 0.1})
    cs = np.linspace(-0.4, 0.4, 24)
    br = constropt.solve_batch(p, {c: cs}, seed=0)
    grid = np.linspace(-2, 2, 400001)
    best = np.array([np.min((grid**2 - 1)**2 + cc * grid) for cc in cs])
    np.testing.assert_allclose(br.fun, best, atol=1e-6)  # grid spacing 1e-5: error ~1e-10
    assert br.success.all()
    assert any(res.nit > 0 for res in br)  # some went to the global search


def test_kkt_test_rejects_the_maximum_and_accepts_the_minimum():
    p = parameter_box(_disc(), np.array([[2.0, 2.0]]))
    u = np.array([1.0, 2.0]) / math.sqrt(5.0)
    X = np.stack([np.array([1.0, -1.0]) - 2.0 * u, np.array([1.0, -1.0]) + 2.0 * u], axis=1)
    ok, act = _interior.kkt_test(p, X, np.array([[2.0, 2.0]]))
    assert ok.tolist() == [True, False] and act.all()


def test_kkt_test_second_order_part_can_be_left_to_a_convexity_proof():
    # a saddle: stationary with nothing active, its Hessian indefinite; only the
    # second-order part rejects it (the convex path skips that part: it always holds)
    p = constropt.Problem(x**2 - y**2 + c * x, [x + y <= 3], bounds={x: (-1, 1), y: (-1, 1)},
                          parameters={c: 0.0})
    X, M = np.zeros((2, 1)), np.zeros((1, 1))
    assert _interior.kkt_test(p, X, M)[0].tolist() == [False]
    assert _interior.kkt_test(p, X, M, second_order=False)[0].tolist() == [True]


def test_interior_point_converges_from_outside_the_feasible_set():
    p = parameter_box(_disc(), np.array([[0.5, 3.0]]))
    X, conv, its = _interior.interior_point(p, np.array([[4.0, -4.0], [3.0, 3.0]]),
                                            np.array([[0.5, 3.0]]))
    assert conv.all()
    f = X[0] + 2 * X[1]
    np.testing.assert_allclose(f, _exact(np.array([0.5, 3.0])), atol=1e-8)


def test_the_garbage_collector_is_left_as_it_was():
    import gc

    radii = np.linspace(0.5, 5.0, 8)
    assert gc.isenabled()
    constropt.solve_batch(_disc(), {r: radii}, seed=0)
    assert gc.isenabled()  # paused only while the Results were built
    gc.disable()
    try:
        constropt.solve_batch(_disc(), {r: radii}, seed=0)
        assert not gc.isenabled()  # a caller's own pause is kept
    finally:
        gc.enable()


def test_local_first_option_errors():
    p = _disc()
    with pytest.raises(OptionError, match="local_first must be"):
        constropt.solve_batch(p, {r: [1.0, 2.0]}, local_first="yes")
    with pytest.raises(OptionError, match="max_evals"):
        constropt.solve_batch(p, {r: [1.0, 2.0]}, local_first=True, max_evals=5000)
    q = constropt.Problem(x**2 + y**2, [sp.Eq(x + y, c)], bounds={x: (-3, 3), y: (-3, 3)},
                          parameters={c: 1.0})
    with pytest.raises(OptionError, match="equality constraints"):
        constropt.solve_batch(q, {c: [1.0, 2.0]}, local_first=True)


def test_a_large_eager_batch_neither_compiles_nor_leaves_numpy():
    # 10,000 instances x 20 individuals x 2 genes = 400,000 numbers per generation: the
    # single-solve rule compiled it (84 s); 200 generations of it cost ~13 s eagerly
    assert compile_choice("auto", 400_000) is True          # a single solve: unchanged
    assert compile_choice("auto", 400_000, 200) is False
    assert compile_choice(True, 400_000, 200) is True
    radii = np.linspace(0.5, 5.0, 2_000)  # 2,000 x 100 x 2 = 400,000 numbers
    br = constropt.solve_batch(_disc(), {r: radii}, seed=0, polish=False, pop_size=100,
                               max_generations=2, device="cpu")
    assert br.timings["compile"] == 0.0 and br[0].backend == "numpy"


SHARD_SCRIPT = textwrap.dedent("""
    import json, os, sys
    import numpy as np, sympy as sp
    import constropt
    import constropt.parallel._shard as shard
    solved, one = [], shard._solve_one

    def counting(problem, parameters, **kw):  # the instances this rank solves itself
        solved.append(len(next(iter(parameters.values()))))
        return one(problem, parameters, **kw)

    shard._solve_one = counting
    x, y, r = sp.symbols("x y r")
    p = constropt.Problem(x + 2 * y, [(x - 1)**2 + (y + 1)**2 <= r**2],
                          bounds={x: (-10, 10), y: (-10, 10)}, parameters={r: 1.0})
    radii = np.linspace(0.5, 5.0, int(sys.argv[2]))
    br = constropt.solve_batch(p, {r: radii}, seed=0)
    deferred = int((br.results._owner >= 0).sum())  # the other rank's: not built yet
    arrays = (br.x.copy(), br.fun.copy(), br.feasible.copy(), br.success.copy())
    first = br[len(br) - 1 - int(os.environ["RANK"])]  # one of the other rank's
    import pickle
    again = pickle.loads(pickle.dumps(br.results))
    pairs = [(s.fun, s.message) for s in br]
    out = {"deferred": deferred, "tuple": type(again).__name__,
           "equal": [(s.fun, s.message) for s in again] == pairs,
           "arrays": all(np.array_equal(a, b, equal_nan=True) for a, b in zip(arrays, (
               np.stack([s.x_array for s in br]), np.array([s.fun for s in br]),
               np.array([s.feasible for s in br]), np.array([s.success for s in br])))),
           "first": first is br.results[-1 - int(os.environ["RANK"])],
           "fun": br.fun.tolist(), "status": [s.status.name for s in br],
           "params": br.parameters[r].tolist(), "rank": int(os.environ["RANK"]),
           "solved": solved, "nfev": [s.nfev for s in br], "x": br.x.tolist(),
           "messages": [s.message for s in br], "timings": dict(br.timings),
           "same_problem": all(s.problem is p for s in br)}
    with open(sys.argv[1] + f".{out['rank']}", "w") as fh:
        json.dump(out, fh)
""")


def test_two_gloo_ranks_give_the_one_process_answers(tmp_path):
    from _torchrun import torchrun

    script = tmp_path / "shard.py"
    script.write_text(SHARD_SCRIPT)
    B = 200
    proc = torchrun([script, tmp_path / "out", B], timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    radii = np.linspace(0.5, 5.0, B)
    one = constropt.solve_batch(_disc(), {r: radii}, seed=0)
    for rank in (0, 1):  # every rank returns the whole batch, in instance order
        got = json.loads((tmp_path / f"out.{rank}").read_text())
        assert got["solved"] == [B // 2]  # its share only
        # the other rank's Results are built from its columns on first access; the
        # arrays come from the columns and equal the Results' fields
        assert got["deferred"] == B // 2 and got["arrays"] and got["first"]
        assert got["tuple"] == "tuple" and got["equal"]
        np.testing.assert_array_equal(got["params"], radii)
        # 1e-8: an instance's answer may land on the circle or 1e-9 inside it, depending
        # on which anchors its shard has
        np.testing.assert_allclose(got["fun"], one.fun, atol=1e-8)
        assert got["status"] == [s.status.name for s in one]
        assert got["same_problem"]  # received Results carry the caller's problem too
        assert len(set(got["messages"])) >= 1 and all(m.startswith("local solve")
                                                       for m in got["messages"])
        # the split of the time: the slowest rank's own solve, and this rank's exchange
        assert 0 < got["timings"]["shard"] <= got["timings"]["total"]
        assert 0 < got["timings"]["gather"] <= got["timings"]["total"]
    r0, r1 = (json.loads((tmp_path / f"out.{k}").read_text()) for k in (0, 1))
    assert r0["x"] == r1["x"] and r0["nfev"] == r1["nfev"]  # the same results on each rank
    assert r0["messages"] == r1["messages"]


def test_shard_option():
    with pytest.raises(OptionError, match="several ranks"):
        constropt.solve_batch(_disc(), {r: [1.0, 2.0]}, shard=True)
    with pytest.raises(OptionError, match="shard must be"):
        constropt.solve_batch(_disc(), {r: [1.0, 2.0]}, shard="x")


def test_ctrl_c_in_the_local_solves_interrupts_every_instance(monkeypatch):
    def ipm(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(lf, "interior_point", ipm)
    br = constropt.solve_batch(_disc(), {r: [1.0, 2.0, 3.0]}, seed=0)
    for res in br:  # the box centre, checked: feasible for r >= sqrt(2), never a success
        assert res.status is Status.INTERRUPTED and not res.success
        assert res.verification is not None and res.x_array.tolist() == [0.0, 0.0]
    assert [res.feasible for res in br] == [False, True, True]


def test_ctrl_c_in_a_local_answer_check_stops_the_later_ones(monkeypatch):
    from constropt.finish import _settled

    check, calls = _settled._Certifier.__call__, {"n": 0}

    def once(self, *args, **kwargs):  # the exact check of the batched answers
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt
        return check(self, *args, **kwargs)

    monkeypatch.setattr(_settled._Certifier, "__call__", once)
    radii = np.array([1.0, 2.0, 3.0])
    br = constropt.solve_batch(_disc(), {r: radii}, seed=0)
    assert br[0].success and br[0].fun == pytest.approx(_exact(1.0), abs=1e-8)
    for res in br[1:]:  # checked once more, then INTERRUPTED with the local answer
        assert res.status is Status.INTERRUPTED and not res.success
        assert res.verification is not None and res.feasible


def test_a_convex_qp_sweep_in_ten_variables_matches_slsqp():
    # convex at every t (t moves a linear term and the ball's radius), so every anchor
    # takes the convex path; each instance checked against an SLSQP run on it
    from scipy.optimize import minimize

    rng = np.random.default_rng(3)
    n, m = 10, 8
    xs = sp.symbols(f"x0:{n}")
    t = sp.Symbol("t")
    A, b = rng.normal(size=(m, n)), rng.uniform(1, 2, m)
    Q = rng.normal(size=(n, n))
    Q = Q @ Q.T / n + 0.1 * np.eye(n)
    cvec = rng.normal(size=n)
    X = sp.Matrix(xs)
    f = (X.T * sp.Matrix(Q) * X)[0] / 2 + sum(float(cvec[i]) * xs[i] for i in range(n)) \
        + t * xs[0]
    cons = [sum(float(A[j, i]) * xs[i] for i in range(n)) <= float(b[j]) for j in range(m)]
    cons.append(sum(v**2 for v in xs) <= 4 + t)
    p = constropt.Problem(f, cons, bounds={v: (-3, 3) for v in xs}, parameters={t: 0.0})
    ts = np.linspace(-1, 1, 12)
    br = constropt.solve_batch(p, {t: ts}, seed=0)
    ref = []
    for tv in ts:
        cc = [{"type": "ineq", "fun": lambda v: b - A @ v, "jac": lambda v: -A},
              {"type": "ineq", "fun": lambda v, tv=tv: 4 + tv - v @ v, "jac": lambda v: -2 * v}]
        ref.append(minimize(lambda v, tv=tv: 0.5 * v @ Q @ v + cvec @ v + tv * v[0], np.zeros(n),
                            jac=lambda v, tv=tv: Q @ v + cvec + tv * np.eye(n)[0],
                            method="SLSQP", constraints=cc, bounds=[(-3, 3)] * n,
                            options={"ftol": 1e-12, "maxiter": 500}).fun)
    assert br.success.all() and br.feasible.all()
    assert all("proven convex for every instance" in res.message for res in br)
    # 1e-8: both stop at their tolerances (measured: 7e-12 apart)
    np.testing.assert_allclose(br.fun, ref, atol=1e-8)
