"""Dead genes (issue 14: Hock-Schittkowski 111): genes that enter only through exp() and
end far down a wide box, where every partial derivative involving them is ~1e-30 of the
largest, so neither the search nor SLSQP moves them again.

The small instance is HS111's kind with a closed-form optimum: Gibbs' free energy
``sum y_j (ln y_j + c_j)`` with ``y_j = exp(x_j)`` under ``sum y_j = 1`` (the
log-sum-exp term of HS111 is 0 on that set) is minimized by ``y_j = exp(-c_j) / Z``,
``Z = sum exp(-c_j)``, with ``f* = -ln Z``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp

import constropt
from _moves import move as _move
from _moves import polish as _polish_from
from constropt import benchmarks
from constropt.finish._deadgenes import dead_genes, revive
from constropt.finish._verdict import check_point

C = (0, 1, 5, 8)
Z = sum(math.exp(-c) for c in C)
F_STAR = -math.log(Z)  # -0.318461...


def _gibbs(eq_tol=1e-8):
    x = sp.symbols("x0:4", real=True)
    y = [sp.exp(v) for v in x]
    total = sp.log(sum(y))
    f = sum(yj * (c + xj - total) for yj, c, xj in zip(y, C, x))
    return constropt.Problem(f, [sp.Eq(sum(y), 1)], bounds={v: (-100, 1) for v in x},
                             eq_tol=eq_tol)


def _dead_start():
    # the two live genes at their optimum given y2 = y3 = 0; the others where a search
    # drops them (exp(-70), exp(-60): 1e-30 of the live terms)
    z = 1 + math.exp(-1)
    return np.array([-math.log(z), -1 - math.log(z), -70.0, -60.0])


def test_dead_genes_found_and_revived_to_the_optimum():
    problem = _gibbs()
    pvec = problem.parameter_vector(None)
    x0 = _dead_start()
    f0, V0 = check_point(problem, x0, pvec)
    # f0 = -ln(1 + e^-1): the optimum without y2, y3, ln(Z / (1 + e^-1)) = 0.0052 above
    assert np.all(V0 == 0) and f0 - F_STAR == pytest.approx(math.log(Z / (1 + math.exp(-1))))
    dead, used = dead_genes(problem, x0, pvec)
    assert dead.tolist() == [2, 3] and used == 5  # the point, then 2 probes per gene
    # the failure class: the polish alone does not move them
    _, f_p, V_p, _, _ = _polish_from(problem, x0, pvec, x0, f0, V0, None, 0)
    assert np.all(V_p == 0) and f_p - F_STAR > 5e-3
    x, f, V, nfev, stop = _move(revive, problem, x0, f0, V0, pvec, None, 0)
    assert not stop and np.all(V == 0) and nfev > used
    # |h| <= 1e-8 admits f about 1e-8 below f* (the multiplier of sum y = 1 is ln Z);
    # SLSQP's ftol 1e-12 leaves less than that above it
    assert f == pytest.approx(F_STAR, abs=1e-7)
    assert x == pytest.approx([-c - math.log(Z) for c in C], abs=1e-3)


def test_a_stationary_gene_is_not_dead():
    # at x = 1e-12 the objective's slope in x (2e-12) is 1e-12 of the slope in y, but
    # x**2 comes alive a step away: not a dead gene, nothing moves, one evaluation spent
    x, y = sp.symbols("x y", real=True)
    problem = constropt.Problem(x**2 + y, [y**2 + y - 3 <= 0], bounds={x: (-1, 1), y: (0, 1)})
    pvec = problem.parameter_vector(None)
    assert [str(v) for v in problem.variables] == ["x", "y"]
    x0 = np.array([1e-12, 0.0])
    dead, used = dead_genes(problem, x0, pvec)
    assert dead.size == 0 and used == 3
    f0, V0 = check_point(problem, x0, pvec)
    x1, f1, V1, nfev, stop = _move(revive, problem, x0, f0, V0, pvec, None, 0)
    assert not stop and nfev == 3 and np.array_equal(x1, x0) and f1 == f0


def test_no_dead_gene_costs_one_evaluation():
    problem = _gibbs()
    pvec = problem.parameter_vector(None)
    x0 = np.array([-c - math.log(Z) for c in C])  # the optimum: every gene alive
    f0, V0 = check_point(problem, x0, pvec)
    dead, used = dead_genes(problem, x0, pvec)
    assert dead.size == 0 and used == 1
    x1, f1, _, nfev, stop = _move(revive, problem, x0, f0, V0, pvec, None, 0)
    assert not stop and nfev == 1 and np.array_equal(x1, x0) and f1 == f0


def test_revive_keeps_to_the_budget():
    problem = _gibbs()
    pvec = problem.parameter_vector(None)
    x0 = _dead_start()
    f0, V0 = check_point(problem, x0, pvec)
    for limit in (10, 150, 400):
        x, f, V, nfev, _ = _move(revive, problem, x0, f0, V0, pvec, limit, 0)
        assert nfev <= limit and np.all(V == 0) and f <= f0


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", ["de", "ga"])
def test_hs111_default_and_ga(algorithm):
    bench = benchmarks.get("HS111")
    res = constropt.solve(bench.problem(), seed=0, max_evals=500_000, algorithm=algorithm)
    assert res.feasible
    # the suite's rule; |h| <= 1e-6 lets f go ~4e-5 below f*
    assert -1e-4 <= res.fun - bench.f_star <= 1e-4
