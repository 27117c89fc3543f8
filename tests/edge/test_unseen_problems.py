"""The unseen problem set of ``benchmarks/unseen_problems.py`` and the bookkeeping of
``benchmarks/unseen.py``'s report (no solver runs here)."""

from __future__ import annotations

import math
import os
import sys

import numpy as np
import pytest
import sympy as sp

BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "benchmarks")
sys.path.insert(0, BENCH)

import _unseen_report  # noqa: E402
import unseen_problems as U  # noqa: E402

from constropt import benchmarks  # noqa: E402

NAMES = U.names()


def test_names_unique_many_and_outside_the_collection():
    lower = [n.lower() for n in NAMES]
    assert len(set(lower)) == len(lower)
    assert len(NAMES) >= 40
    assert not set(lower) & {n.lower() for n in benchmarks.names()}


@pytest.mark.parametrize("name", NAMES)
def test_every_problem_builds(name):
    b = U.get(name)
    p = b.problem()
    assert p.n == len(b.variables)
    lo = np.array([float(b.bounds[v][0]) for v in b.variables])
    hi = np.array([float(b.bounds[v][1]) for v in b.variables])
    # lo == hi: a variable the model fixes (HS042: x1 = 2, the book's equality)
    assert np.all(np.isfinite(lo)) and np.all(np.isfinite(hi)) and np.all(lo <= hi)
    assert b.eq_tol == 1e-6 and math.isfinite(b.f_star) and b.source


def _exact_points():
    out = [(n, x) for n, (_, x) in U.F_STAR.items() if x is not None]
    out += [(n, None) for n in NAMES if n in U.SCALABLE and U.get(n).x_star]
    return out


@pytest.mark.parametrize("name, x_star", _exact_points())
def test_stated_solution_is_feasible_and_has_f_star(name, x_star):
    b = U.get(name)
    exact = x_star is not None
    point = x_star if exact else b.x_star
    subs = {v: sp.nsimplify(c) if not exact else sp.sympify(c)
            for v, c in zip(b.variables, point)}
    # the models print their coefficients to 15 digits, and the simplex projection's
    # solution is a float64 one: 1e-12 covers both roundings
    tol = 1e-12
    for v, c in subs.items():
        lo, hi = b.bounds[v]
        assert float(lo) - tol <= float(c) <= float(hi) + tol
    for c in b.constraints:
        if isinstance(c, sp.Equality):
            assert abs(float((c.lhs - c.rhs).subs(subs).evalf(30))) <= tol
        else:
            assert float((c.lhs - c.rhs).subs(subs).evalf(30)) <= tol
    f = float(b.objective.subs(subs).evalf(30))
    assert f == pytest.approx(b.f_star, rel=1e-9, abs=1e-12)


def test_simplex_projection_is_the_projection():
    c = np.array([0.9, 0.4, -0.3, 0.8])
    x = U._simplex_projection(c)
    # sum 1, x >= 0, and the KKT rule: x_i = max(c_i - t, 0) for one threshold t
    assert x.sum() == pytest.approx(1.0, abs=1e-14)
    t = (c - x)[x > 0]
    assert np.all(x >= 0) and np.ptp(t) < 1e-14 and np.all(c[x == 0] <= t[0])


def _rec(solver, problem, seed, ok, seconds, fun=1.0, feasible=True, f_star=1.0):
    return dict(solver=solver, problem=problem, seed=seed, ok=ok, seconds=seconds,
                fun=fun, feasible=feasible, n=2, m=1, f_star=f_star, load1=1.0)


def test_ratio_uses_problems_both_solve_and_successful_seeds():
    c = {"a": [_rec("constropt", "a", 0, True, 4.0), _rec("constropt", "a", 1, True, 6.0),
               _rec("constropt", "a", 2, False, 100.0)],
         "b": [_rec("constropt", "b", 0, False, 9.0)],
         "c": [_rec("constropt", "c", 0, True, 3.0)]}
    ref = {"a": [_rec("ipopt20", "a", 0, True, 1.0)], "b": [_rec("ipopt20", "b", 0, True, 1.0)],
           "c": [_rec("ipopt20", "c", 0, True, 1.0)]}
    r, k = _unseen_report.ratio(c, ref)
    # a: median of 4 and 6 over 1 = 5; b unsolved by constropt; c: 3
    assert k == 2 and r == pytest.approx(4.0)


def test_runs_prefer_the_labels_own_file_and_verification_flags():
    data = {"before": [_rec("constropt", "a", 0, False, 2.0, fun=1.5),
                       _rec("ipopt20", "a", 0, True, 1.0, fun=1.0)],
            "ref": [_rec("ipopt20", "a", 0, False, 7.0, fun=2.0),
                    _rec("scip", "a", 0, True, 3.0, fun=0.5)]}
    assert _unseen_report.runs_of(data, "ipopt20", "before")["a"][0]["seconds"] == 1.0
    assert _unseen_report.runs_of(data, "scip", "before")["a"][0]["seconds"] == 3.0
    rows = _unseen_report.verification_rows(data, ["a"], {"a": (2, 1, 1.0)})
    assert "ipopt20" in rows[2] and "scip" not in rows[2].split("|")[3]
    assert "below f*" in rows[2]


def test_docs_quote_the_report():
    # docs/benchmarks.md's unseen-problem tables are rows of benchmarks/results/unseen.md
    with open(os.path.join(BENCH, "..", "docs", "benchmarks.md")) as fh:
        rows = _unseen_report.quoted_rows(fh.read(), "### Unseen published problems")
    with open(os.path.join(BENCH, "results", "unseen.md")) as fh:
        report = fh.read().splitlines()
    assert len(rows) >= 4
    for row in rows:
        assert row in report, row
