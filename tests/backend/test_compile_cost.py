"""The compile's expected cost (from the generated source's size) decides whether
``compile="auto"`` compiles: never when it cannot pay or could outlast the time limit;
``compile=True`` still compiles and warns first where the compile is long."""

from __future__ import annotations

import warnings

import pytest
import sympy as sp

import constropt
from constropt.backend import _compile as bc
from constropt.solver import _plan
from constropt.solver._plan import compile_choice

WORK = 400_000  # numbers per generation: above COMPILE_THRESHOLD


def test_the_cost_grows_with_the_source():
    small, big = bc.expected_compile_seconds(1_000), bc.expected_compile_seconds(300_000)
    assert bc.COMPILE_BASE_S < small < big
    assert big - small == pytest.approx(bc.COMPILE_S_PER_BYTE * 299_000)
    assert bc.expected_compile_seconds(1_000, step=True) == pytest.approx(
        bc.STEP_COMPILE_FACTOR * small)


def test_the_eager_run_bounds_what_a_compile_saves():
    assert bc.eager_run_seconds(1_000, WORK, 10) == pytest.approx(
        10 * (bc.EAGER_S_PER_BYTE * 1_000 + bc.EAGER_S_PER_NUMBER * WORK))
    # a long run of large generations pays for a small source's compile
    assert bc.compile_pays(1_300, WORK, 12_000, None)
    # a handful of generations does not
    assert not bc.compile_pays(1_300, WORK, 5, None)


def test_auto_skips_a_compile_that_could_outlast_the_time_limit():
    cost = bc.expected_compile_seconds(1_300, step=True)
    assert compile_choice("auto", WORK, source_bytes=1_300, calls=12_000) is True
    assert compile_choice("auto", WORK, source_bytes=1_300, calls=12_000,
                          time_left=cost / bc.COMPILE_TIME_SHARE * 1.01) is True
    assert compile_choice("auto", WORK, source_bytes=1_300, calls=12_000,
                          time_left=cost / bc.COMPILE_TIME_SHARE * 0.99) is False
    # the 1,000-variable QP's compact code with a 120 s limit: the step's compile
    # (about 90 s expected) would leave the search too little
    assert compile_choice("auto", 300_000, source_bytes=1_283, calls=12_000,
                          time_left=120.0) is False
    # the unrolled code of a 1,000-variable QP (293 kB): no limit is long enough at 300 s
    assert compile_choice("auto", 300_000, source_bytes=293_074, calls=9000,
                          time_left=300.0) is False


def test_auto_keeps_its_size_rules():
    assert compile_choice("auto", 1_000, source_bytes=1_000, calls=10**6) is False
    assert compile_choice("auto", WORK) is True  # no source size given: the work rule
    assert compile_choice("auto", WORK, 200) is False  # a short batch


def test_true_compiles_and_warns_once_before_a_long_compile(monkeypatch):
    monkeypatch.setattr(_plan, "_WARNED", set())
    long_src = int((_plan.LONG_COMPILE_S / bc.STEP_COMPILE_FACTOR - bc.COMPILE_BASE_S)
                   / bc.COMPILE_S_PER_BYTE) + 10
    with pytest.warns(constropt.CompileWarning, match="expect about"):
        assert compile_choice(True, 10, source_bytes=long_src, time_left=1.0) is True
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert compile_choice(True, 10, source_bytes=long_src) is True  # once
        assert compile_choice(True, 10, source_bytes=1_000) is True  # short: silent
    assert compile_choice(False, WORK, source_bytes=10) is False


def test_a_solve_counts_the_generated_source_and_its_run_length(monkeypatch):
    """The plan weighs the compile with the problem's source, its generation cap over
    the restarts and ``max_evals``: a 2-variable problem with a huge population would
    compile by work alone, and does not for a 2-generation budget."""
    seen = {}

    def spy(compile, work, generations=None, **kw):
        seen.update(kw, work=work)
        return False
    monkeypatch.setattr(_plan, "compile_choice", spy)
    x, y = sp.symbols("x y")
    p = constropt.Problem(x ** 2 + y ** 2, bounds={x: (-1, 1), y: (-1, 1)})
    constropt.solve(p, seed=0, pop_size=200_000, max_evals=400_000, polish=False,
                    cross_check=False, backend="numpy", time_limit=50.0)
    assert seen["source_bytes"] == len(p.source)
    assert seen["calls"] == 2 and seen["time_left"] == 50.0 and seen["work"] == 400_000
    assert not compile_choice("auto", **{k: v for k, v in seen.items()})
