"""The NumPy runtime's guarded functions: the fast path where every lane is inside the
domain gives the values of the double ``where`` (the same NumPy function on the same
values, to a few units in the last place: see below), the double ``where`` still runs
wherever a lane is outside, and
the torch runtime never takes the path (a data-dependent branch would break
``torch.compile``'s graph)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from constropt.lowering import _guards, _rt_numpy, _rt_torch
from constropt.lowering._functions import NODE_FUNCTIONS


def _slow_numpy():
    """The NumPy runtime's guarded functions without the fast path."""
    out = dict(_guards.point_functions(np.where, lambda f: f.numpy))
    out["recip"] = _guards.guarded(np.where, lambda a: 1.0 / a, lambda a: a != 0, 1.0)
    out["div"] = _guards.guarded(np.where, lambda a, b: a / b,
                                 lambda a, b: np.asarray(b) != 0, (None, 1.0))
    out["pow"] = _guards.guarded(
        np.where, np.power,
        lambda a, b: (a > 0) | ((a == 0) & (b >= 0)) | ((a < 0) & (b == np.floor(b))),
        (1.0, 1.0), coerce=_rt_numpy._pow_arrays)
    return out


SLOW = _slow_numpy()
GUARDED = sorted(["recip", "div", "pow"] + [f.runtime_name for f in NODE_FUNCTIONS
                                             if f.point is None and f.domain is not None])
ARITY = {f.runtime_name: f.arity for f in NODE_FUNCTIONS}
ARITY.update(recip=1, div=2, pow=2)


def test_every_reads_one_lane_counts_few_and_reduces_many():
    for m in (True, np.True_, np.array(True), np.array([[True]]), np.ones(5, bool),
              np.ones(4096, bool), np.ones(5000, bool)):
        assert _guards._every(m)
    for m in (False, np.False_, np.array([[False]]), np.r_[np.ones(4095, bool), False],
              np.r_[False, np.ones(4999, bool)], np.zeros((3, 2), bool)):
        assert not _guards._every(m)


@pytest.mark.parametrize("name", GUARDED)
@pytest.mark.parametrize("shape", [(1,), (1, 1), (7, 3), (5000,)])
def test_fast_path_equals_the_double_where(name, shape):
    rng = np.random.default_rng(len(name) + len(shape))
    fast, slow = getattr(_rt_numpy, name), SLOW[name]
    inside = rng.uniform(0.05, 0.95, shape)  # inside every domain but acosh's: fast
    mixed = rng.uniform(-3.0, 3.0, shape)  # lanes outside most domains: the double where
    mixed.flat[0] = np.nan
    if mixed.size > 2:
        mixed.flat[1], mixed.flat[2] = np.inf, 0.0
    with np.errstate(all="ignore"):
        for a in (inside, mixed, float(inside.flat[0])):
            if ARITY[name] == 1:
                got, want = fast(a), slow(a)
            else:
                b = np.round(a * 2) if name == "pow" else a[::-1] if np.ndim(a) else a
                got, want = fast(a, b), slow(a, b)
            # the same NumPy function on the same values, NaN for NaN and inf for inf;
            # not to the bit: the fast path reads a strided view (a[::-1]) where the
            # double where reads a contiguous copy, and NumPy may run a SIMD loop on
            # one and the scalar libm on the other (atan2 on AVX-512 CI: 1 ulp apart)
            got, want = np.asarray(got), np.asarray(want)
            np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
            np.testing.assert_allclose(got, want, rtol=8 * np.finfo(float).eps,
                                       atol=np.finfo(float).tiny, equal_nan=True)
            assert np.shape(got) == np.shape(want)


def test_fast_path_is_taken_only_where_every_lane_is_inside(monkeypatch):
    calls = []
    real = _guards._every
    monkeypatch.setattr(_guards, "_every", lambda m: calls.append(m) or real(m))
    fast_log = _guards._domain_guard(np.where, np.log, next(
        f.domain for f in NODE_FUNCTIONS if f.runtime_name == "log"), 1.0, fast=True)
    with np.errstate(all="ignore"):
        assert fast_log(np.array([1.0, np.e]))[1] == pytest.approx(1.0, rel=1e-15)
        out = fast_log(np.array([1.0, -1.0]))
    assert out[0] == 0.0 and np.isnan(out[1]) and len(calls) == 2


def test_torch_runtime_never_takes_the_fast_path(monkeypatch):
    def boom(m):
        raise AssertionError("the torch runtime consulted the fast path")

    monkeypatch.setattr(_guards, "_every", boom)
    x = torch.tensor([0.3, 0.7], dtype=torch.float64)
    for name in GUARDED:
        fn = getattr(_rt_torch, name)
        out = fn(x) if ARITY[name] == 1 else fn(x, x)
        assert out.shape == x.shape


@pytest.mark.parametrize("e", [0.5, -1.5, 2.5, 1.0 / 3.0])
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
def test_powf_fast_path_equals_the_double_where(e, dtype):
    def slow(a, e):
        ok = a > 0 if e < 0 else a >= 0
        return np.where(ok, np.power(np.where(ok, a, 1.0), e), np.nan)

    rng = np.random.default_rng(7)
    with np.errstate(all="ignore"):
        for a in (rng.uniform(0.1, 9.0, (6, 2)), rng.uniform(-3.0, 3.0, 9),
                  np.array([[2.0]]), np.zeros(3)):
            a = a.astype(dtype)
            got, want = _rt_numpy.powf(a, e), slow(a, e)
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)
