"""Conventions users bring from scipy: ``bounds`` as (lo, hi) pairs or
``scipy.optimize.Bounds``, ``callback(intermediate_result)`` and ``StopIteration``,
``rng=``, ``x0=``."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest
import sympy as sp
from scipy.optimize import Bounds, OptimizeResult

import constropt
from constropt import OptionError, ProblemError, Status
from constropt.solver._checkpoint import read_checkpoint

x, y = sp.symbols("x y")
F = (x - 1) ** 2 + (y - 2) ** 2     # minimum 0.5 at (0.5, 1.5) under x + y <= 2
CONS = [x + y <= 2]
OPT = np.array([0.5, 1.5])
B3 = {x: (-3, 3), y: (-3, 3)}


def _box(p):
    return {str(k): v for k, v in p.bounds.items()}


# -- bounds -------------------------------------------------------------------------------

def test_pairs_follow_the_given_variable_order():
    p = constropt.Problem(F, CONS, variables=[y, x], bounds=[(-1, 4), (-3, 3)])
    assert _box(p) == {"y": (-1.0, 4.0), "x": (-3.0, 3.0)}
    as_dict = constropt.Problem(F, CONS, variables=[y, x], bounds={y: (-1, 4), x: (-3, 3)})
    np.testing.assert_array_equal(p.lower, as_dict.lower)
    np.testing.assert_array_equal(p.upper, as_dict.upper)


def test_pairs_follow_natural_name_order_without_variables():
    x2, x10 = sp.symbols("x2 x10")
    p = constropt.Problem(x10 ** 2 + x2 ** 2, [], bounds=[(1, 2), (3, 4)])
    assert p.variables == (x2, x10)  # x2 before x10, so the first pair is x2's
    assert _box(p) == {"x2": (1.0, 2.0), "x10": (3.0, 4.0)}


def test_none_and_infinity_are_open_sides_as_in_scipy():
    with pytest.warns(constropt.BoundsWarning, match="y"):
        p = constropt.Problem(x ** 2 + y ** 2, [], bounds=[(0, 1), (None, np.inf)])
    with pytest.warns(constropt.BoundsWarning, match="y"):
        q = constropt.Problem(x ** 2 + y ** 2, [], bounds={x: (0, 1), y: (None, None)})
    np.testing.assert_array_equal(p.lower, q.lower)
    np.testing.assert_array_equal(p.upper, q.upper)
    assert p.lower[0] == 0 and p.upper[0] == 1


def test_scipy_bounds_arrays_scalars_and_keep_feasible():
    p = constropt.Problem(F, CONS, bounds=Bounds([-3, -2], [3, 4], keep_feasible=True))
    assert _box(p) == {"x": (-3.0, 3.0), "y": (-2.0, 4.0)}
    q = constropt.Problem(F, CONS, bounds=Bounds(-5, 5))  # a scalar applies to every variable
    assert _box(q) == {"x": (-5.0, 5.0), "y": (-5.0, 5.0)}


def test_pairs_reach_the_known_optimum_in_solve_and_search():
    res = constropt.solve(F, CONS, bounds=[(-3, 3), (-3, 3)], seed=0)
    assert res.success and res.feasible
    assert res.fun == pytest.approx(0.5, abs=1e-6)  # SLSQP's stopping tolerance
    np.testing.assert_allclose(res.x_array, OPT, atol=1e-4)
    assert _box(res.problem) == {"x": (-3.0, 3.0), "y": (-3.0, 3.0)}
    s = constropt.Search(F, CONS, bounds=Bounds([-3, -3], [3, 3]), seed=0)
    assert s.problem.lower.tolist() == [-3.0, -3.0] and s.problem.upper.tolist() == [3.0, 3.0]
    assert s.result().fun == pytest.approx(0.5, abs=1e-6)


def test_pairs_survive_pickling_and_a_read_only_box_is_accepted():
    p = constropt.Problem(F, CONS, bounds=[(-3, 3), (-2, 2)])
    q = pickle.loads(pickle.dumps(p))
    assert _box(q) == _box(p)
    r = constropt.Problem(F, CONS, bounds=p.bounds)  # Problem.bounds is a read-only mapping
    assert _box(r) == _box(p)


def test_parameter_dependent_pairs():
    r = sp.Symbol("r")
    p = constropt.Problem(x + y, [x ** 2 + y ** 2 <= 4], bounds=[(-r, r), (-r, r)],
                          parameters={r: 1.5})
    assert p.lower.tolist() == [-1.5, -1.5] and p.upper.tolist() == [1.5, 1.5]


@pytest.mark.parametrize("bounds, match", [
    ([(-1, 1)], r"bounds has 1 pair but the problem has 2 variables \(x, y\)"),
    ([(-1, 1), (0, 1), (2, 3)], r"bounds has 3 pairs but the problem has 2 variables"),
    ([(-1, 1), 5], r"bounds\[1\] \(for y\) must be a pair \(lo, hi\), got 5"),
    ([(-1, 1), (1, 2, 3)], r"bounds\[1\] \(for y\) must be a pair"),
    ([(3, 1), (0, 1)], r"bounds\[0\]: lower bound of x \(3\) is above its upper bound \(1\)"),
    ([(0, 1), (float("nan"), 1)], r"bounds\[1\] lower bound of y is NaN"),
    ([(0, 1), ("a", 1)], r"bounds\[1\] lower bound of y is not a number: 'a'"),
    ("x", r"bounds must be a dict .*, a sequence of \(lo, hi\) pairs"),
    (3.0, r"bounds must be a dict"),
    (Bounds([0, 0, 0], [1, 1, 1]), r"Bounds lb has shape \(3,\), but the problem has 2"),
    (Bounds([2, 0], [1, 1]), r"bounds \(scipy.optimize.Bounds\)\[0\]: lower bound of x"),
])
def test_bad_bounds_name_the_argument(bounds, match):
    with pytest.raises(ProblemError, match=match):
        constropt.Problem(F, CONS, bounds=bounds)
    with pytest.raises(ProblemError, match=match):
        constropt.solve(F, CONS, bounds=bounds, seed=0)


def test_one_variable_hint():
    with pytest.raises(ProblemError, match=r"for one variable write \[\(lo, hi\)\]"):
        constropt.Problem(x ** 2, [], bounds=(0, 1))
    assert _box(constropt.Problem(x ** 2, [], bounds=[(0, 1)])) == {"x": (0.0, 1.0)}


# -- callback -----------------------------------------------------------------------------

def test_stop_iteration_ends_the_run_with_a_result():
    def cb(state):
        if state.generation >= 20:
            raise StopIteration

    res = constropt.solve(F, CONS, bounds=B3, seed=0, callback=cb,
                          check_every=10, stagnation=10_000)
    assert res.status is Status.CALLBACK and res.nit == 20
    assert res.feasible and res.success  # CALLBACK: success when the point is feasible
    assert res.fun == pytest.approx(0.5, abs=1e-6)  # the polish still runs


def test_returning_true_still_stops():
    ok = constropt.solve(F, CONS, bounds=B3, seed=0, check_every=5,
                         callback=lambda s: s.generation >= 10)
    assert ok.status is Status.CALLBACK and ok.nit == 10 and ok.success


def test_intermediate_result_is_an_optimize_result():
    seen = []

    def cb(intermediate_result):
        seen.append(intermediate_result)
        if intermediate_result.nit >= 30:
            raise StopIteration

    res = constropt.solve(-F, CONS, bounds=B3, maximize=True, seed=0,
                          callback=cb, check_every=10, stagnation=10_000, polish=False)
    assert res.status is Status.CALLBACK and [r.nit for r in seen] == [10, 20, 30]
    last = seen[-1]
    assert isinstance(last, OptimizeResult)
    assert last.x.shape == (2,) and not last.x.flags.writeable
    # scipy's fun is the minimized value (as Result.to_scipy); user_fun the user's sense
    assert last.user_fun == pytest.approx(float(-F.subs({x: last.x[0], y: last.x[1]})),
                                          rel=1e-12)
    assert last.fun == -last.user_fun and last["nfev"] == last.nfev > 0
    assert last.cv == 0.0 and 0 < last.feasible_fraction <= 1
    assert res.fun >= last.user_fun  # maximizing: the result is at least the snapshot


def test_other_callbacks_get_progress():
    seen = []
    constropt.solve(F, CONS, bounds=B3, seed=0, check_every=10,
                    callback=lambda state: seen.append(state) or len(seen) == 2,
                    polish=False)
    assert len(seen) == 2 and all(isinstance(s, constropt.Progress) for s in seen)


def test_stop_iteration_in_a_search():
    def cb(state):
        raise StopIteration

    s = constropt.Search(F, CONS, bounds=B3, seed=0, callback=cb,
                         check_every=5)
    s.run()
    assert s.status is Status.CALLBACK and s.generation == 5
    assert s.result().status is Status.CALLBACK


# -- rng ----------------------------------------------------------------------------------

def _quick(**kw):
    return constropt.solve(F, CONS, bounds=B3, polish=False,
                           max_generations=30, **kw)


def test_rng_int_is_the_seed():
    a, b = _quick(rng=5), _quick(seed=5)
    assert a.seed == b.seed == 5
    np.testing.assert_array_equal(a.x_array, b.x_array)


def test_rng_generator_is_reproducible_and_advanced():
    g = np.random.default_rng(7)
    expected = np.random.default_rng(7).integers(0, 2**63, dtype=np.int64, size=2)
    first, second = _quick(rng=g), _quick(rng=g)
    assert (first.seed, second.seed) == tuple(int(v) for v in expected)  # g advanced
    again = _quick(rng=np.random.default_rng(7))
    np.testing.assert_array_equal(again.x_array, first.x_array)
    assert _quick(rng=np.random.SeedSequence(7)).seed == int(expected[0])


def test_rng_with_seed_or_of_a_bad_type_raises():
    with pytest.raises(OptionError, match="pass seed= or rng=, not both"):
        _quick(seed=1, rng=np.random.default_rng(1))
    with pytest.raises(OptionError, match="rng must be an integer seed, a numpy.random"):
        _quick(rng="7")
    with pytest.raises(OptionError, match="seed must be an integer"):
        _quick(rng=-1)


# -- x0 -----------------------------------------------------------------------------------

# a narrow well at (7.3, -4.1) in a wide, gently sloped bowl: random starts land in the
# bowl (f >= 0); the well (f about -1.30) is found only from x0
WELL = (x ** 2 + y ** 2) / 100 - 2 * sp.exp(-((x - 7.3) ** 2 + (y + 4.1) ** 2) * 1e4)
WBOX = {x: (-10, 10), y: (-10, 10)}
W0 = {x: 7.3, y: -4.1}
W_AT = float(WELL.subs(W0))


def _well(**kw):
    return constropt.solve(WELL, [x + y <= 5], bounds=WBOX, seed=0, max_evals=2000,
                           pop_size=40, **kw)


def test_x0_finds_a_narrow_well_random_starts_miss():
    without = _well()
    assert without.feasible and without.fun > -0.01  # the bowl's minimum, not the well
    with_x0 = _well(x0=W0)
    assert with_x0.success and with_x0.fun <= W_AT  # at least as good as the start
    assert with_x0.fun < -1.2
    np.testing.assert_allclose(with_x0.x_array, [7.3, -4.1], atol=1e-2)


def test_x0_at_the_optimum_is_at_least_as_good():
    for algorithm in ("de", "ga"):
        res = constropt.solve(F, CONS, bounds=WBOX, seed=3, x0=OPT, algorithm=algorithm,
                              max_evals=500, polish=False)
        assert res.feasible and res.fun <= 0.5  # the start is exact; the best is elitist


def test_x0_forms_and_clipping_into_the_initial_population():
    z = sp.Symbol("z", integer=True)
    f = x ** 2 + (z - 1) ** 2
    box = {x: (-1, 1), z: (-3, 3)}
    for x0 in ({x: 5.0, z: 2.6}, {"x": 5.0, "z": 2.6}, [5.0, 2.6], np.array([[5.0, 2.6]])):
        s = constropt.Search(f, [], bounds=box, variables=[x, z], seed=0, pop_size=10,
                             x0=x0)
        X = s.population.X
        assert any(np.array_equal(row, [1.0, 3.0]) for row in X), x0  # clipped, rounded
    several = [[0.25, 0], [-0.5, 1], [0.75, -2]]
    s = constropt.Search(f, [], bounds=box, variables=[x, z], seed=0, pop_size=10,
                         x0=several)
    rows = {tuple(r) for r in s.population.X}
    assert {(0.25, 0.0), (-0.5, 1.0), (0.75, -2.0)} <= rows


def test_x0_warm_starts_from_an_earlier_result():
    first = constropt.solve(F, CONS, bounds=WBOX, seed=0)
    again = constropt.solve(F, CONS, bounds=WBOX, seed=1, x0=first.x, max_evals=300)
    assert again.feasible and again.fun <= first.fun + 1e-9  # float64 both; polish from it


@pytest.mark.parametrize("x0, match", [
    ({x: 1.0}, r"x0\[0\] has no value for y"),
    ({x: 1.0, y: 2.0, sp.Symbol("w"): 0.0}, r"x0\[0\] gives a value for w, which is not"),
    ([1.0, 2.0, 3.0], r"x0 has shape \(3,\); expected \(2,\) or \(k, 2\)"),
    (np.zeros((2, 3)), r"x0 has shape \(2, 3\)"),
    ([1.0, math.nan], r"x0\[0\] has a non-finite value \(nan\) at gene 1"),
    (np.zeros((12, 2)), r"x0 has 12 starting points, more than the population of 10"),
    ([{x: 1, y: 2}, {x: "a", y: 2}], r"x0\[1\] value of x is not a number"),
    ("xy", r"x0 must be a dict"),
    (3.0, r"x0 must be a dict"),
    ([], r"x0 is empty"),
])
def test_bad_x0_raises_before_the_search(x0, match):
    with pytest.raises(OptionError, match=match):
        constropt.solve(F, CONS, bounds=WBOX, seed=0, pop_size=10, x0=x0)


def test_x0_in_solve_batch():
    a = sp.Symbol("a")
    p = constropt.Problem(WELL + a, [x + y <= 5], bounds=WBOX, parameters={a: 0.0})
    out = constropt.solve_batch(p, {a: [0.0, 1.0]}, seed=0, x0=W0, max_evals=2000)
    np.testing.assert_allclose(out.fun, [W_AT, W_AT + 1], atol=1e-3)


def test_resume_does_not_need_x0(tmp_path):
    ckpt = tmp_path / "x0.ckpt"

    def stop(state):
        if state.generation == 20:
            raise KeyboardInterrupt

    kw = dict(seed=4, max_evals=6000, pop_size=40, polish=False, stagnation=40)
    part = constropt.solve(WELL, [x + y <= 5], bounds=WBOX, x0=W0, checkpoint=ckpt,
                           checkpoint_every=10, callback=stop, rng=None, **kw)
    assert part.status is Status.INTERRUPTED
    stored = read_checkpoint(ckpt)["settings"]["options"]
    assert "x0" not in stored and "rng" not in stored  # in the population, and the seed
    resumed = constropt.resume(ckpt)
    # a checkpointed run (and its resume) searches without the multistart stage
    full = constropt.solve(WELL, [x + y <= 5], bounds=WBOX, x0=W0, local_search=False,
                           **kw)
    np.testing.assert_array_equal(resumed.x_array, full.x_array)
    assert resumed.nfev == full.nfev and resumed.nit == full.nit
    assert full.fun < -1.2 and full.nit > 20  # the well, from x0; resumed mid-run
