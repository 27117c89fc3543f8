"""SCIP as a second reference: Problem.to_scip and cross_check="scip", with constropt's own
checks of SCIP's answers."""

import math
import sys

import numpy as np
import pytest
import sympy as sp

import constropt
from constropt.finish import _scip
from constropt.finish._crosscheck import Verdict, references_of

x, y, z = sp.symbols("x y z")
n = sp.Symbol("n", integer=True)
BLOG2 = (x**2 + 2 * y**2 + 3 * z**2 + 4 * x * y - 5 * y * z,
         [x >= 1, y > 3, y <= 7, z < 0, x + y + z >= 3, x**2 + z**2 <= 10])
BLOG2_MAX = 263.1739479  # the known maximum (docs/experiment.md)


def _scip_or_skip():
    return pytest.importorskip("pyscipopt")


@pytest.fixture(scope="module")
def blog2():
    return constropt.Problem(*BLOG2, maximize=True)


@pytest.fixture(scope="module")
def blog2_result(blog2):
    return constropt.solve(blog2, seed=0, device="cpu")


def test_to_scip_solves_blog2_with_the_propagated_box(blog2):
    _scip_or_skip()
    m = blog2.to_scip()
    xs = m.data["variables"]
    assert [v.name for v in xs] == ["x", "y", "z"]
    # the box after bound propagation: x in [1, sqrt(10)], z in [-3, 0]
    assert xs[0].getLbOriginal() == 1.0
    assert xs[0].getUbOriginal() == pytest.approx(math.sqrt(10))
    assert xs[2].getLbOriginal() == pytest.approx(-3.0) and xs[2].getUbOriginal() == 0.0
    m.hideOutput()
    m.optimize()
    assert m.getStatus() == "optimal"
    assert m.getObjVal() == pytest.approx(BLOG2_MAX, rel=1e-6)  # SCIP's own tolerance


def test_to_scip_integer_variables_and_functions():
    _scip_or_skip()
    p = constropt.Problem((n - 2.6) ** 2 + sp.exp(x) + sp.sqrt(y + 1) + sp.Abs(x - 1)
                          + sp.sin(y) + sp.cos(x) - sp.log(y + 2),
                          [x + n <= 6, sp.Eq(x + y, 1)], variables=[x, y, n],
                          bounds={x: (-2, 2), y: (-0.5, 3), n: (0, 5)})
    m = p.to_scip()
    assert [v.vtype() for v in m.data["variables"]] == ["CONTINUOUS", "CONTINUOUS",
                                                        "INTEGER"]
    assert m.data["objective"] is not None  # a nonlinear objective: the epigraph variable
    m.hideOutput()
    m.setParam("limits/time", 20)
    m.optimize()
    assert m.getStatus() == "optimal"
    sol = [m.getVal(v) for v in m.data["variables"]]
    assert sol[2] == 3.0  # integer: (n - 2.6)**2 is least at n = 3
    assert abs(sol[0] + sol[1] - 1) <= p.eq_tol  # the equality within its band


@pytest.mark.parametrize(("objective", "name"), [
    (sp.Max(x, y), "Max"), (sp.floor(x) + y, "floor"), (sp.tan(x) + y, "tan"),
    (x ** y, "Pow")])
def test_to_scip_names_an_unsupported_function(objective, name):
    _scip_or_skip()
    p = constropt.Problem(objective, [x + y <= 1], bounds={x: (0.5, 1), y: (0.5, 1)})
    with pytest.raises(constropt.UnsupportedExpressionError, match=rf"counterpart of {name}"):
        p.to_scip()


def test_to_scip_refuses_an_or():
    _scip_or_skip()
    p = constropt.Problem(x + y, [sp.Or(x <= -1, x >= 1)], bounds={x: (-2, 2), y: (0, 1)})
    with pytest.raises(constropt.UnsupportedExpressionError, match="holds an Or"):
        p.to_scip()


def test_to_scip_without_pyscipopt_says_how_to_install(monkeypatch, blog2):
    monkeypatch.setitem(sys.modules, "pyscipopt", None)  # import fails
    with pytest.raises(ImportError, match=r"constropt\[scip\]"):
        blog2.to_scip()


def test_cross_check_option_values(monkeypatch):
    assert references_of(True) == ("scipy",)
    assert references_of(False) == () and references_of(None) == ()
    assert references_of("scipy") == ("scipy",)
    for bad in ("gurobi", ("scipy", 3), 7, ()):
        with pytest.raises(constropt.OptionError, match="cross_check must be"):
            references_of(bad)
    monkeypatch.setattr(_scip, "scip_available", lambda: False)
    monkeypatch.setattr("constropt.finish._crosscheck.scip_available", lambda: False)
    # named before any search runs
    with pytest.raises(constropt.OptionError, match=r"needs pyscipopt.*constropt\[scip\]"):
        constropt.solve(x**2, [x >= 1], bounds={x: (0, 2)}, cross_check=("scipy", "scip"))


def test_cross_check_with_scip_and_scipy(blog2_result):
    _scip_or_skip()
    cc = constropt.cross_check(blog2_result, references=("scipy", "scip"), de=False)
    assert cc.verdict is Verdict.AGREE
    methods = [r.method for r in cc.runs]
    assert methods[0].startswith("SLSQP") and methods[-1].startswith("SCIP ")
    run = cc.runs[-1]
    # SCIP's point, checked by constropt: feasible in float64 and exact arithmetic, and
    # its objective recomputed by constropt at that point
    assert run.feasible and run.maxcv == 0
    f = float(blog2_result.problem.evaluate(run.x.reshape(1, -1)).fun[0])
    assert run.fun == f and run.fun == pytest.approx(BLOG2_MAX, rel=1e-6)
    assert "optimal" in run.note
    assert "SCIP" in cc.table() and "optimal" in cc.table()


def test_solve_with_cross_check_scip(blog2):
    _scip_or_skip()
    res = constropt.solve(blog2, seed=0, device="cpu", cross_check="scip")
    assert res.success and [r.method[:4] for r in res.cross_check.runs] == ["SCIP"]
    assert res.cross_check.agrees
    d = res.to_dict()["cross_check"]
    assert d["runs"][0]["note"].startswith("optimal")


def _fake(answer):
    def solver(spec, time_limit):
        return dict(answer)
    return solver


INFEASIBLE = {"version": "10.0", "status": "infeasible", "nodes": 0, "dual": 1e20}


def test_a_wrong_infeasibility_claim_is_refuted(blog2, blog2_result, monkeypatch):
    # SCIP 10 says G16 is infeasible (the slow test below); the same answer on a problem
    # where constropt's point is proven feasible is marked wrong, and counts as failed
    assert blog2_result.feasible and blog2_result.verification.feasible
    run = _scip.scip_reference(blog2, blog2_result, blog2.parameter_vector(None),
                               solver=_fake(INFEASIBLE))
    assert not run["feasible"] and math.isnan(run["fun"])
    assert "claims the problem infeasible" in run["note"] and "claim is wrong" in run["note"]
    real = _scip.scip_reference
    monkeypatch.setattr("constropt.finish._crosscheck.scip_reference",
                        lambda *a: real(*a, solver=_fake(INFEASIBLE)))
    cc = constropt.cross_check(blog2_result, references="scip")
    assert cc.verdict is Verdict.REFERENCE_FAILED and not cc.agrees
    assert "claim is wrong" in cc.table()


def test_an_infeasibility_claim_beside_no_feasible_point_is_not_refuted():
    # a disc and a far half-plane: infeasible (constropt proves it before any search)
    p = constropt.Problem(x + y, [x**2 + y**2 <= 1, x + y >= 3], bounds={x: (-5, 5),
                                                                        y: (-5, 5)})
    res = constropt.solve(p, seed=0, device="cpu")
    assert not res.feasible
    run = _scip.scip_reference(p, res, p.parameter_vector(None), solver=_fake(INFEASIBLE))
    assert "claims the problem infeasible" in run["note"] and "wrong" not in run["note"]


def test_a_scip_point_is_checked_not_trusted(blog2, blog2_result, monkeypatch):
    pv = blog2.parameter_vector(None)
    # x**2 + z**2 = 10.0007: outside by 7e-4 (a point within a looser tolerance); the
    # restoration moves it onto the feasible side, and the note says so
    near = [1.6496, 7.0, -2.6981]
    assert not blog2.evaluate(np.array([near])).feasible[0]
    run = _scip.scip_reference(blog2, blog2_result, pv, solver=_fake(
        {"version": "10.0", "status": "optimal", "nodes": 1, "dual": 263.17, "x": near}))
    assert run["feasible"] and "restoration" in run["note"]
    assert run["fun"] == pytest.approx(BLOG2_MAX, rel=1e-3)
    # without the restoration, a point that violates a constraint stays infeasible
    far = [3.1, 7.0, -2.9]  # x**2 + z**2 = 18.02 > 10
    monkeypatch.setattr(_scip, "restore", lambda p, x0, P, max_evals=None: (x0.copy(), 0))
    run = _scip.scip_reference(blog2, blog2_result, pv, solver=_fake(
        {"version": "10.0", "status": "optimal", "nodes": 1, "dual": 300.0, "x": far}))
    assert not run["feasible"] and run["maxcv"] > 1
    assert "infeasible in constropt's check" in run["note"]


def test_a_scip_crash_or_overrun_is_a_failed_reference(blog2, blog2_result):
    for answer in ({"error": "SCIP failed (Segmentation fault)"},
                   {"error": "SCIP did not stop within its time limit"}):
        run = _scip.scip_reference(blog2, blog2_result, blog2.parameter_vector(None),
                                   solver=_fake(answer))
        assert not run["feasible"] and run["note"] == answer["error"]


def test_scip_time_limit_is_an_option(blog2_result):
    with pytest.raises(constropt.OptionError, match="scip_time_limit"):
        constropt.cross_check(blog2_result, references="scip", scip_time_limit=0)
    with pytest.raises(constropt.OptionError, match="scip_time_limit"):
        constropt.cross_check(blog2_result, references="scip", scip_time_limit=math.inf)


@pytest.mark.slow
def test_scip_claims_g16_infeasible_and_constropt_refutes_it():
    _scip_or_skip()
    from constropt import benchmarks

    bench = benchmarks.get("G16")
    res = constropt.solve(bench.problem(), seed=0, device="cpu")
    assert res.success and res.fun == pytest.approx(bench.f_star, abs=1e-4)
    # SCIP's presolve (22 s on this machine) ignores its time limit; 60 s lets it end
    cc = constropt.cross_check(res, references="scip", scip_time_limit=60)
    (run,) = cc.runs
    assert cc.verdict is Verdict.REFERENCE_FAILED and not run.feasible
    assert "infeasible" in run.note and "claim is wrong" in run.note
