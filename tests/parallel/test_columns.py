"""A rank's Results as columns (``parallel/_columns.py``): what a sharded batch sends."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import sympy as sp

import constropt
from constropt.parallel._columns import pack, unpack


def _fields_equal(a, b) -> None:
    assert type(a) is type(b)
    for name in ("x_array", "violations"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    for name in ("fun", "feasible", "maxcv", "success", "message", "nit", "nfev", "seed",
                 "device", "backend", "verification", "variables", "lower_bound"):
        assert getattr(a, name) == getattr(b, name), name
    assert a.status is b.status
    assert dict(a.x) == dict(b.x) and dict(a.timings) == dict(b.timings)
    for name in ("nfev", "fun", "cv"):
        np.testing.assert_array_equal(getattr(a.history, name), getattr(b.history, name))


def test_results_come_back_equal_field_by_field_and_compact():
    x, y, r = sp.symbols("x y r")
    p = constropt.Problem(x + 2 * y, [(x - 1)**2 + (y + 1)**2 <= r**2],
                          bounds={x: (-10, 10), y: (-10, 10)}, parameters={r: 1.0})
    # a local-first batch and a searched one (histories of several lengths, statuses)
    for kw in ({}, {"local_first": False, "max_generations": 30}):
        br = constropt.solve_batch(p, {r: np.linspace(0.5, 5.0, 40)}, seed=0, **kw)
        wire = pickle.dumps(pack(br.results))
        back = unpack(pickle.loads(wire), problem=p)
        assert len(back) == len(br)
        for a, b in zip(back, br.results):
            _fields_equal(a, b)
            assert a.problem is p
    cols = pack(br.results)["cols"]
    assert cols["x_array"][0] == "stack" and cols["x_array"][1].shape == (40, 2)
    assert cols["variables"][0] == "same" and cols["seed"] == ("same", 0)


def test_mixed_values_fall_back_to_lists():
    from constropt.parallel._columns import _column, _values

    vals = [1, 2.5, "a", None]          # no common type: a list, as given
    assert _column(vals)[0] == "list" and _values(_column(vals), 4) == vals
    arrs = [np.zeros((2, 2)), np.ones(3)]  # neither one shape nor 1-D
    assert _column(arrs)[0] == "list"
    ragged = [np.arange(3.0), np.arange(1.0)]
    col = _column(ragged)
    assert col[0] == "ragged"
    got = _values(col, 2)
    np.testing.assert_array_equal(got[0], ragged[0])
    np.testing.assert_array_equal(got[1], ragged[1])
    nums = [True, False, True]
    back = _values(_column(nums), 3)
    assert back == nums and all(type(v) is bool for v in back)


def test_rebuilt_results_keep_the_normal_form_of_a_result():
    # unpack skips Result.__post_init__: the columns must rebuild what it would make
    from constropt.finish._result import FrozenDict

    x, y, r = sp.symbols("x y r")
    p = constropt.Problem(x + 2 * y, [(x - 1)**2 + (y + 1)**2 <= r**2],
                          bounds={x: (-10, 10), y: (-10, 10)}, parameters={r: 1.0})
    br = constropt.solve_batch(p, {r: np.linspace(0.5, 5.0, 6)}, seed=0)
    back = unpack(pickle.loads(pickle.dumps(pack(br.results))), problem=p)
    for a, b in zip(back, br.results):
        for name in ("x", "timings", "equality_residuals"):
            assert type(getattr(a, name)) is FrozenDict, name
            assert dict(getattr(a, name)) == dict(getattr(b, name)), name
        for name in ("x_array", "violations"):
            arr = getattr(a, name)
            assert arr.dtype == np.float64 and not arr.flags.writeable, name
        _fields_equal(a, b)


def test_arrays_of_one_shape_come_back_as_they_went():
    from constropt.parallel._columns import _column, _values

    for arrs in ([np.arange(6.0).reshape(2, 3) + k for k in range(4)],   # 2-D
                 [np.array(1.5), np.array(-2.0)],                         # 0-d
                 [np.arange(3, dtype=np.int64) * k for k in range(3)]):   # 1-D ints
        col = _column(arrs)
        assert col[0] == "stack"
        back = _values(col, len(arrs))
        for a, b in zip(back, arrs):
            assert a.shape == b.shape and a.dtype == b.dtype
            np.testing.assert_array_equal(a, b)


def test_sharded_results_build_another_ranks_results_on_first_access():
    from constropt.parallel._columns import field_array
    from constropt.parallel._shard import ShardedResults

    x, y, r = sp.symbols("x y r")
    p = constropt.Problem(x + 2 * y, [(x - 1)**2 + (y + 1)**2 <= r**2],
                          bounds={x: (-10, 10), y: (-10, 10)}, parameters={r: 1.0})
    br = constropt.solve_batch(p, {r: np.linspace(0.5, 5.0, 12)}, seed=0)
    own, other = np.arange(0, 12, 2), np.arange(1, 12, 2)  # two ranks' interleaved shares
    packed = pickle.loads(pickle.dumps(pack([br[i] for i in other])))
    np.testing.assert_array_equal(field_array(packed, "x_array"), br.x[other])
    np.testing.assert_array_equal(field_array(packed, "fun"), br.fun[other])
    assert field_array(packed, "success").dtype == bool
    res = ShardedResults(12, p)
    res._place(own, [br[i] for i in own])
    res._defer(other, packed)
    assert len(res) == 12 and (res._owner[other] == 0).all() and (res._owner[own] == -1).all()
    assert res[4] is br[4]  # its own: as they were, nothing rebuilt
    assert res._parts[0] is not None
    got = res[-1]  # the other share's last: all of that share rebuilt at once
    assert res._parts[0] is None and (res._owner == -1).all()
    assert got is res[11] and got.problem is p
    for a, b in zip(res, br):
        _fields_equal(a, b)
    assert [q.fun for q in res[1:4]] == [br[i].fun for i in (1, 2, 3)]
    assert res == tuple(res) and type(pickle.loads(pickle.dumps(res))) is tuple
    with pytest.raises(IndexError):
        res[12]
