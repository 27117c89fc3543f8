"""Search engine: constraint handlers in isolation, algorithms, and a quick subset of the
benchmark collection solved with fixed seeds (equality and mixed-integer among them)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import sympy as sp
import torch

import constropt
from constropt import OptionError, Status, benchmarks
from constropt.engine._handling import HANDLERS, make_handler
from constropt.engine._ranking import better, order

INF = math.inf


def t(*v):
    return torch.tensor(v, dtype=torch.float64)


# -- feasibility rules and handlers on hand-made populations --------------------------
def test_feasible_beats_infeasible_whatever_the_objective():
    assert better(t(100.0), t(0.0), t(-100.0), t(1e-12)).item()
    assert not better(t(-100.0), t(1e-12), t(100.0), t(0.0)).item()


def test_lower_violation_beats_higher_then_objective_breaks_ties():
    assert better(t(5.0), t(0.5), t(1.0), t(0.7)).item()
    assert better(t(1.0), t(0.5), t(2.0), t(0.5)).item()
    assert not better(t(2.0), t(0.5), t(2.0), t(0.5)).item()  # a tie is not "better"


def test_nan_never_wins():
    f, cv = t(math.nan, 1.0, 2.0), t(0.0, 0.0, INF)
    from constropt.engine._ranking import clean
    f, cv = clean(f, cv)
    assert order(f, cv).tolist() == [1, 0, 2]


def test_order_sorts_by_violation_then_objective():
    f = t(3.0, 1.0, 2.0, -5.0, 0.0)
    cv = t(0.0, 0.0, 0.0, 2.0, 1.0)
    assert order(f, cv).tolist() == [1, 2, 0, 4, 3]


def test_epsilon_counts_small_violations_as_zero():
    h = make_handler("epsilon")
    kf, kc = h.keys(t(1.0, 2.0), t(0.05, 0.2), torch.tensor(0.1, dtype=torch.float64))
    assert kc.tolist() == [0.0, 0.2] and kf.tolist() == [1.0, 2.0]
    level0 = h.initial_level(t(0, 0, 0, 0, 0), t(0.0, 1.0, 2.0, 3.0, 4.0))
    assert level0.item() == 0.0  # theta=0.2 of 5 -> the best point's violation
    assert h.next_level(level0 + 1, level0 + 1, 1.0, t(0.0)).item() == 0.0  # schedule ends at 0
    mid = h.next_level(torch.tensor(1.0), torch.tensor(1.0), 0.5, t(0.0)).item()
    assert 0.0 < mid < 1.0


def test_penalty_and_death_keys():
    p = make_handler("penalty")
    kf, kc = p.keys(t(1.0, 1.0), t(0.0, 2.0), torch.tensor(10.0, dtype=torch.float64))
    assert kf.tolist() == [1.0, 21.0] and kc.tolist() == [0.0, 0.0]
    grown = p.next_level(torch.tensor(10.0), torch.tensor(10.0), 0.0, t(1.0))
    assert grown.item() > 10.0
    d = make_handler("death")
    kf, kc = d.keys(t(1.0, -9.0), t(0.0, 1e-9), None)
    assert kf.tolist() == [1.0, INF] and kc.tolist() == [0.0, 0.0]


def test_unknown_handler_and_algorithm():
    with pytest.raises(OptionError, match="unknown constraint_handling 'nope'"):
        make_handler("nope")
    x = sp.Symbol("x")
    with pytest.raises(OptionError, match="unknown algorithm 'pso'"):
        constropt.solve(x**2, bounds={x: (0, 1)}, algorithm="pso")


# -- every handler and algorithm solves a small problem --------------------------------
@pytest.mark.parametrize("handling", HANDLERS)
def test_each_handler_solves_g06(handling):
    b = benchmarks.get("G06")
    res = constropt.solve(b.problem(), seed=0, constraint_handling=handling)
    assert res.feasible and res.fun == pytest.approx(b.f_star, abs=1e-4), handling


@pytest.mark.parametrize("algorithm, strategy", [("ga", None), ("de", "rand/1"),
                                                 ("de", "current-to-pbest/1")])
def test_algorithms_solve_blog_example3(algorithm, strategy):
    b = benchmarks.get("blog_example3")
    kw = {"strategy": strategy} if strategy else {}
    res = constropt.solve(b.problem(), seed=1, algorithm=algorithm, **kw)
    assert res.success and res.fun == pytest.approx(b.f_star, abs=1e-6)


def test_gradient_repair_reaches_feasibility_on_g05():
    b = benchmarks.get("G05")
    res = constropt.solve(b.problem(), seed=0, repair=True, max_evals=100_000)
    assert res.feasible and res.fun - b.f_star <= 1e-4 * abs(b.f_star)


# -- quick subset of the collection (CEC protocol: feasible, f - f* <= 1e-4) -------------
QUICK = ["G01", "G04", "G06", "G08", "G11", "G13", "G24", "tension_compression_spring",
         "pressure_vessel", "welded_beam"]


@pytest.mark.parametrize("name", QUICK)
def test_benchmark_subset_is_solved(name):
    b = benchmarks.get(name)
    res = constropt.solve(b.problem(), seed=0, max_evals=500_000)
    err = (b.f_star - res.fun) if b.maximize else (res.fun - b.f_star)
    assert res.feasible and err <= 1e-4 * max(1.0, abs(b.f_star)), (res.fun, b.f_star)
    assert res.nfev <= 500_000
    if "mixed-integer" in b.tags:
        ints = np.asarray(b.problem().integer)
        assert np.all(res.x_array[ints] == np.round(res.x_array[ints]))


@pytest.mark.parametrize("name", benchmarks.names())
def test_published_point_evaluates_to_published_optimum(name):
    b = benchmarks.get(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # the CEC x* sit on the 1e-4 edge of their equalities, up to printed rounding
        p = b.problem(eq_tol=b.eq_tol + 1e-11)
    ev = p.evaluate(np.array([b.x_star], dtype=float))
    assert ev.fun[0] == pytest.approx(b.f_star, rel=1e-6)
    # x* is printed to limited digits: violations are at rounding level at most
    assert ev.violation.max(initial=0.0) <= 1e-6 * max(1.0, abs(b.f_star)), ev.violation


@pytest.mark.parametrize("name", ["G07", "G22"])
def test_budget_is_honoured_with_polish_and_restarts(name):
    b = benchmarks.get(name)
    for budget in (3_000, 20_000):
        res = constropt.solve(b.problem(), seed=4, max_evals=budget)
        assert res.nfev <= budget
        # a budget-cut end, or the honest "not confirmed" when the cut left the
        # unboundedness probe of the returned point unrun (G22's best point lies at a
        # strict side with one BLAS thread, inside with two: the polish's path differs)
        assert res.status in (Status.MAX_EVALS, Status.CONVERGED, Status.INFEASIBLE,
                              Status.NOT_CONFIRMED), res.message
        if res.status is Status.NOT_CONFIRMED:
            assert "budget ran out" in res.message


def test_restarts_are_counted_within_the_budget():
    x, y = sp.symbols("x y")
    f = sp.sin(5 * x) * sp.cos(5 * y) + 0.05 * (x**2 + y**2)
    res = constropt.solve(f, bounds={x: (-5, 5), y: (-5, 5)}, seed=0, restarts=5,
                          stagnation=20, max_evals=40_000)
    assert res.nfev <= 40_000 and res.success
