"""The multistart stage (engine/_multistart.py): MLSL starts, the Bayesian rule, and a
search with ``local_search="auto"`` that confirms its minimum and ends early."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

import constropt
from constropt._errors import OptionError
from constropt.engine._multistart import bayes_confirmed, critical_distance, mlsl_starts


def test_critical_distance_shrinks_with_the_sample():
    r = [critical_distance(k, 3) for k in (10, 100, 1000, 10000)]
    assert all(a > b for a, b in zip(r, r[1:]))


def test_mlsl_skips_points_near_better_ones_and_taken_ones():
    U = np.array([[0.1, 0.12, 0.9, 0.5], [0.1, 0.1, 0.9, 0.5]])  # best first
    taken = np.array([[0.5], [0.5]])
    # column 1 lies next to the better column 0; column 3 next to a taken point
    assert mlsl_starts(U, 0.05, taken, 4) == [0, 2]
    assert mlsl_starts(U, 0.05, taken, 1) == [0]


def test_bayes_rule():
    assert not bayes_confirmed(1, 3)
    assert bayes_confirmed(1, 8) and not bayes_confirmed(1, 7)  # k > 2 w^2 + 3 w + 2
    assert not bayes_confirmed(2, 16) and bayes_confirmed(2, 17)


x = sp.symbols("x0:6")
G03_6 = (-(sp.sqrt(6) ** 6) * sp.Mul(*x), [sp.Eq(sum(v**2 for v in x), 1)],
         {v: (0, 1) for v in x})


def test_auto_confirms_a_minimum_and_ends_early():
    f, cons, box = G03_6
    on = constropt.solve(f, cons, bounds=box, seed=0, local_search="auto")
    off = constropt.solve(f, cons, bounds=box, seed=0, local_search=False)
    assert on.feasible and on.status is constropt.Status.CONVERGED
    assert on.fun == pytest.approx(-1.0, abs=1e-6)  # tight equality: f* = -1
    assert abs(float(np.sum(on.x_array ** 2)) - 1.0) <= 1e-9
    assert on.nfev < off.nfev


def test_true_refused_where_it_cannot_run(tmp_path):
    f, cons, box = G03_6
    with pytest.raises(OptionError, match="local_search"):
        constropt.solve(f, cons, bounds=box, seed=0, local_search=True,
                        checkpoint=str(tmp_path / "c.ckpt"), max_generations=20)
    with pytest.raises(OptionError, match="local_search"):
        constropt.solve(f, cons, bounds=box, local_search="yes")


class _Flat:
    """A stand-in search for the stage: a fresh random population of 2-D points in the
    unit box at every call, objective ``x0 + 2 x1`` (every point its own value), no
    constraints."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.bounds = (np.zeros((2, 1)), np.ones((2, 1)))
        self.args = ()

    def fit(self, X):
        return X[0] + 2 * X[1], np.zeros(X.shape[1])

    def population(self, _state):
        from constropt.engine._ga import Population
        X = self.rng.random((2, 1, 20))
        f = X[0] + 2 * X[1]
        order = np.argsort(f[0])
        return Population(X[:, :, order], f[:, order], np.zeros((1, 20)))


def test_rounds_thin_out_on_a_rugged_landscape():
    # every solve "ends" where it started: each end is another minimum, so the best
    # minimum never draws half the solves and the landscape is rugged
    from types import SimpleNamespace

    from constropt.engine._multistart import LocalSearch, LocalSettings
    rounds = []

    def solve(X, limit):
        rounds.append(X.shape[1])
        return X.copy(), 5 * X.shape[1], np.ones(X.shape[1], dtype=bool)

    stage = LocalSearch(solve, np.zeros(2), np.ones(2), LocalSettings(window=60))
    alg, st = _Flat(0), SimpleNamespace(alg=None)
    for c in range(1, 65):
        stage(st, alg, 10 * c, None, 10_000 * c)
    assert stage.solves >= 3 and not stage.benign()
    # the rounds before the landscape is judged, then one at waits of 1, 2, 4, ... check
    # points: at most log2(64) + 1 rugged rounds in 64 check points
    rugged = len(rounds) - next(i for i in range(len(rounds)) if sum(rounds[:i + 1]) >= 3) - 1
    assert 3 <= rugged <= 7


def test_auto_leaves_a_nonsmooth_problem_to_the_search():
    # a kink (Abs) in the objective: "auto" runs the search alone, exactly as False
    y = sp.symbols("y0:3")
    f = sp.Abs(y[0] - 0.3) + (y[1] - 0.2) ** 2 + (y[2] + 0.1) ** 2
    box = {v: (-1, 1) for v in y}
    auto = constropt.solve(f, [y[0] + y[1] <= 1], bounds=box, seed=0)
    off = constropt.solve(f, [y[0] + y[1] <= 1], bounds=box, seed=0, local_search=False)
    assert auto.nfev == off.nfev
    np.testing.assert_array_equal(auto.x_array, off.x_array)
    assert auto.fun == pytest.approx(0.0, abs=1e-6)  # at (0.3, 0.2, -0.1)


def test_auto_leaves_equalities_in_a_band_to_the_search():
    # eq_tol given: the equalities hold in a band the search profits from, and a minimum
    # confirmed from a few starts could end it before its schedule reaches a better band
    # point (tests/finish/test_unbounded.py's ex8_5_4); "auto" runs the search alone,
    # exactly as False (with tight equalities it ends early: the test above)
    f, cons, box = G03_6
    auto = constropt.solve(f, cons, bounds=box, seed=0, eq_tol=1e-4)
    off = constropt.solve(f, cons, bounds=box, seed=0, eq_tol=1e-4, local_search=False)
    assert auto.nfev == off.nfev
    np.testing.assert_array_equal(auto.x_array, off.x_array)
    # in the band the product beats the tight optimum -1, by at most about n eq_tol / 2
    assert auto.feasible and -1.0 - 6e-4 <= auto.fun < -1.0
    # a band of 1e-6 (MINLPLib's, Hock-Schittkowski's) is too narrow to profit from: the
    # stage runs, and ends early as with tight equalities
    narrow = constropt.solve(f, cons, bounds=box, seed=0, eq_tol=1e-6)
    narrow_off = constropt.solve(f, cons, bounds=box, seed=0, eq_tol=1e-6, local_search=False)
    assert narrow.feasible and narrow.fun == pytest.approx(-1.0, abs=1e-5)
    assert narrow.nfev < narrow_off.nfev


def _sweep_stage(seed, solve):
    from constropt.engine._multistart import LocalSearch, LocalSettings
    return LocalSearch(solve, np.array([-1.0, 0.0]), np.array([1.0, 4.0]),
                       LocalSettings(window=60), seed)


def test_sweep_solves_from_box_filling_starts_once(monkeypatch):
    # the stand-in solver "reaches" 0 from starts with x0 > 0.8 and 1 elsewhere: a basin
    # the population (all at x0 = -0.5) never lies in
    from types import SimpleNamespace

    from constropt.engine import _multistart as ms
    seen, injected = [], []

    def solve(X, limit):
        seen.append(X.copy())
        ends = X.copy()
        ends[0] = np.where(X[0] > 0.8, 0.9, -0.5)
        return ends, 7 * X.shape[1], np.ones(X.shape[1], dtype=bool)

    class _Trapped(_Flat):
        def fit(self, X):
            return np.where(X[0] > 0.8, 0.0, 1.0), np.zeros(X.shape[1])

    monkeypatch.setattr(ms, "_inject", lambda alg, state, X, f, cv: injected.append(X) or state)
    stage = _sweep_stage(3, solve)
    st = SimpleNamespace(alg=None)
    spent, end, better = stage.sweep(st, _Trapped(0), 50, None, 10_000)
    assert len(seen) == ms.SWEEP and all(X.shape == (2, 1) for X in seen)
    starts = np.concatenate(seen, axis=1)
    assert np.all(starts[0] >= -1) and np.all(starts[0] <= 1)
    assert np.all(starts[1] >= 0) and np.all(starts[1] <= 4)
    # box-filling: each twentieth of each coordinate's range holds one start
    for k, (lo, hi) in enumerate([(-1, 1), (0, 4)]):
        cells = np.floor(ms.SWEEP * (starts[k] - lo) / (hi - lo)).astype(int)
        assert sorted(cells.tolist()) == list(range(ms.SWEEP))
    assert spent == 8 * ms.SWEEP and stage.used == spent
    assert better and len(injected) == 1 and injected[0][0, 0] == pytest.approx(0.9)
    assert float(end.f[0, 0]) == 0.0
    assert stage.best().f == 0.0
    # once per run
    assert stage.sweep(st, _Trapped(0), 60, None, 10_000) == (0, None, False)
    assert len(seen) == ms.SWEEP
    # the starts come from the run's seed
    other = []
    _sweep_stage(4, lambda X, limit: (other.append(X) or X.copy(), 0,
                                      np.ones(X.shape[1], dtype=bool))).sweep(
        st, _Trapped(0), 50, None, 10_000)
    assert not np.allclose(np.concatenate(other, axis=1), starts)


def test_sweep_spends_about_what_the_local_solves_spent(monkeypatch):
    # each solve spends what it is allowed, at most 1,500: within the floor (the local
    # solves spent nothing before) three solves, the last one cut short
    from types import SimpleNamespace

    from constropt.engine import _multistart as ms
    monkeypatch.setattr(ms, "_inject", lambda alg, state, X, f, cv: state)
    limits = []

    def solve(X, limit):
        limits.append(limit)
        return X.copy(), min(limit, 1500), np.ones(X.shape[1], dtype=bool)

    st = SimpleNamespace(alg=None)
    spent, end, better = _sweep_stage(0, solve).sweep(st, _Flat(0), 10, None, 10**6)
    assert limits == [ms.SWEEP_FLOOR - 1, ms.SWEEP_FLOOR - 1502, ms.SWEEP_FLOOR - 3003]
    assert spent == ms.SWEEP_FLOOR and end.X.shape == (2, 1, 1)
    # after 12,000 evaluations of local solves, the sweep may spend as many
    limits.clear()
    stage = _sweep_stage(0, solve)
    stage.used = 12_000
    spent, _, _ = stage.sweep(st, _Flat(0), 10, None, 10**6)
    assert len(limits) == 8 and spent == 12_000 and stage.used == 24_000
    # and never more than the evolutionary search spent
    limits.clear()
    stage = _sweep_stage(0, solve)
    stage.used = 12_000
    spent, _, _ = stage.sweep(st, _Flat(0), 10, None, 2_000)
    assert len(limits) == 2 and spent == 2_000


def test_sweep_ends_once_the_bayesian_rule_holds(monkeypatch):
    # every start reaches one minimum: the rule holds at eight solves, 1 * 7 / 5 < 1.5
    from types import SimpleNamespace

    from constropt.engine import _multistart as ms
    monkeypatch.setattr(ms, "_inject", lambda alg, state, X, f, cv: state)
    calls = []

    def solve(X, limit):
        calls.append(X)
        return np.full_like(X, 0.5), 10, np.ones(X.shape[1], dtype=bool)

    stage = _sweep_stage(0, solve)
    stage.sweep(SimpleNamespace(alg=None), _Flat(0), 10, None, 10**6)
    assert len(calls) == 8 and stage.solves == 8 and stage.bayes()
    stage = _sweep_stage(0, solve)
    m = ms.Minimum(np.full(2, 0.5), np.array([0.75, 0.125]), 1.5, 0.0, 10)
    m.hits = 5
    stage.solves, stage.minima = 5, [m]
    stage.sweep(SimpleNamespace(alg=None), _Flat(0), 10, None, 10**6)
    assert len(calls) == 8 + 3  # five solves before it: three more


def test_sweep_skipped_without_room():
    from types import SimpleNamespace

    from constropt.engine import _multistart as ms
    stage = _sweep_stage(0, lambda X, limit: pytest.fail("no solve expected"))
    assert stage.sweep(SimpleNamespace(alg=None), _Flat(0), 10, None,
                       10 * ms.SWEEP - 1) == (0, None, False)
    stage = _sweep_stage(0, lambda X, limit: pytest.fail("no solve expected"))
    assert stage.sweep(SimpleNamespace(alg=None), _Flat(0), 10, 5, 10_000) == \
        (0, None, False)


def test_bayes_evidence_needs_a_second_hit():
    from constropt.engine._multistart import LocalSearch, LocalSettings, Minimum
    stage = LocalSearch(None, np.zeros(2), np.ones(2), LocalSettings(window=60))
    stage.minima = [Minimum(np.zeros(2), np.zeros(2), 1.0, 0.0, 10)]
    stage.solves = 8
    assert not stage.bayes()  # one hit: no second start reached it
    stage.minima[0].hits = 8
    assert stage.bayes()  # eight solves, one minimum: a convex problem's evidence
    stage.minima.append(Minimum(np.ones(2), np.ones(2), 2.0, 0.0, 10))
    assert not stage.bayes()  # two minima from eight solves: 2 * 7 / 4 > 2.5


def test_a_window_without_its_solves_asks_for_the_sweep(monkeypatch):
    # the best minimum was reached from two starts at generation 20 and no solve came
    # after it: once the window (60) has passed the sweep is pending; its solves (every
    # one ends at the best minimum here) confirm the minimum, and it runs once
    from types import SimpleNamespace

    from constropt.engine import _multistart as ms
    monkeypatch.setattr(ms, "_inject", lambda alg, state, X, f, cv: state)
    best = np.array([0.25, 1.0])
    stage = _sweep_stage(0, lambda X, limit: (np.repeat(best[:, None], X.shape[1], 1),
                                              10 * X.shape[1],
                                              np.ones(X.shape[1], dtype=bool)))
    m = ms.Minimum(best.copy(), stage._units(best[:, None])[:, 0], 2.25, 0.0, 20)
    m.hits = 2
    other = ms.Minimum(np.array([0.9, 3.0]), np.array([0.95, 0.75]), 6.9, 0.0, 10)
    stage.minima, stage.solves, stage.g_better, stage.s_better = [other, m], 3, 20, 3
    assert not stage.pending(79) and not stage.confirmed(79)  # the window has not passed
    assert stage.pending(80) and not stage.confirmed(80)  # passed, but no solve after it
    spent, _, better = stage.sweep(SimpleNamespace(alg=None), _Flat(0), 80, None, 10**6)
    assert spent > 0 and not better and stage.solves > 3 + ms.SEVERAL - 1
    assert stage.confirmed(80) and not stage.pending(80)
    stage.minima[1].hits, stage.solves, stage.s_better = 2, 3, 3
    assert not stage.pending(80)  # the sweep ran: the window waits for solves again
    # a minimum reached from one start is not pending: MLSL's short rounds serve it
    fresh = _sweep_stage(0, None)
    one = ms.Minimum(best.copy(), m.u, 2.25, 0.0, 20)
    fresh.minima, fresh.solves, fresh.s_better, fresh.g_better = [one], 1, 1, 20
    assert not fresh.pending(500)


def test_g03_at_100_variables_stops_once_the_sweep_confirms_its_minimum():
    # the population gathers in the best basin (MLSL offers no start) and the equality's
    # epsilon schedule outlasts the window (no stagnation): before the pending sweep this
    # run went to the generation cap, 3,000 generations and 901,481 evaluations
    xs = sp.symbols("x0:100")
    res = constropt.solve(-(sp.sqrt(100) ** 100) * sp.Mul(*xs),
                          [sp.Eq(sum(v**2 for v in xs), 1)],
                          bounds={v: (0, 1) for v in xs}, seed=0)
    assert res.status is constropt.Status.CONVERGED and res.feasible
    assert res.fun == pytest.approx(-1.0, abs=1e-9)  # tight equality: f* = -1
    assert abs(float(np.sum(res.x_array ** 2)) - 1.0) <= 1e-9
    assert res.nit < 3000 and res.nfev < 450_000
