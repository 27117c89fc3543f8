"""Constraint handlers and algorithms are registries of small classes: a new one is a
class plus its registration, the options accept exactly the registered names, and no
code outside the two registry modules branches on a handler's or an algorithm's name."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest
import sympy as sp

import constropt
from constropt import OptionError
from constropt.backend._arrays import namespace
from constropt.engine import _algorithms, _handling
from constropt.engine._algorithms import (
    ALGORITHMS,
    DifferentialEvolution,
    algorithm_names,
    get_algorithm,
    register_algorithm,
)
from constropt.engine._de import DEState
from constropt.engine._ga import GAState
from constropt.engine._handling import (
    HANDLERS,
    Handler,
    handler_names,
    make_handler,
    register_handler,
)
from constropt.solver import _checkpoint as ck
from constropt.solver._options import SolveOptions

SRC = Path(__file__).resolve().parents[2] / "src" / "constropt"
x, y, r = sp.symbols("x y r")


@pytest.fixture
def registries(monkeypatch):
    """Registrations made in a test are undone after it (copies of both registries)."""
    monkeypatch.setattr(_handling, "_REGISTRY", dict(_handling._REGISTRY))
    monkeypatch.setattr(_algorithms, "_REGISTRY", dict(_algorithms._REGISTRY))


@dataclass(frozen=True)
class StaticPenalty(Handler):
    """A test-only handler: ``f + 1000 cv``, a fixed weight (no level of its own)."""

    name: ClassVar[str] = "test-static-penalty"
    calls: ClassVar[list] = []  # one entry per keys() call: proof the run used it

    def keys(self, f, cv, level):
        StaticPenalty.calls.append(1)
        xp = namespace(f)
        return xp.where(xp.isinf(cv), cv, f + 1000.0 * cv), xp.zeros_like(cv)


def _triangle():
    # min (x-2)^2 + (y-1)^2 s.t. x + y <= 2, x - y >= 0: optimum 0.5 at (1.5, 0.5)
    return constropt.Problem((x - 2) ** 2 + (y - 1) ** 2, [x + y <= 2, x - y >= 0],
                             bounds={x: (-5, 5), y: (-5, 5)})


# -- handlers -----------------------------------------------------------------------------
def test_the_builtin_handlers_are_registered_in_order():
    assert HANDLERS == ("feasibility", "epsilon", "penalty", "death")
    assert handler_names()[:4] == HANDLERS


def test_what_the_algorithms_ask_of_a_handler_is_declared_on_it():
    raw = {h: make_handler(h).raw_keys for h in HANDLERS}
    assert raw == {"feasibility": True, "epsilon": False, "penalty": False, "death": False}
    assert [h for h in HANDLERS if make_handler(h).decays] == ["epsilon"]
    assert [h for h in HANDLERS if not make_handler(h).batches] == ["penalty"]
    since = np.array([0, 199, 200, 500])
    assert make_handler("epsilon").settled(since, 200).tolist() == [False, False, True, True]
    assert make_handler("feasibility").settled(since, 200).tolist() == [True] * 4


@pytest.mark.parametrize("algorithm", ["de", "ga"])
def test_a_registered_handler_runs_through_solve(registries, algorithm):
    register_handler(StaticPenalty)
    assert "test-static-penalty" in handler_names()
    StaticPenalty.calls.clear()
    res = constropt.solve(_triangle(), seed=0, algorithm=algorithm, local_first=False,
                          constraint_handling="test-static-penalty")
    assert StaticPenalty.calls, "the search never asked the registered handler"
    assert res.feasible
    assert res.fun == pytest.approx(0.5, abs=1e-7)  # SLSQP-polished: rounding level


def test_a_registered_handler_runs_through_solve_batch(registries):
    register_handler(StaticPenalty)
    disc = constropt.Problem(x + y, [x**2 + y**2 <= r**2], bounds={x: (-6, 6), y: (-6, 6)},
                             parameters={r: 1.0})
    radii = np.array([0.5, 2.0])
    StaticPenalty.calls.clear()
    br = constropt.solve_batch(disc, {r: radii}, seed=0, local_first=False,
                               constraint_handling="test-static-penalty")
    assert StaticPenalty.calls
    assert br.feasible.all()
    np.testing.assert_allclose(br.fun, -np.sqrt(2) * radii, rtol=1e-7)  # polished optima


def test_solve_batch_names_the_handlers_it_offers(registries):
    disc = constropt.Problem(x + y, [x**2 + y**2 <= r**2], bounds={x: (-6, 6), y: (-6, 6)},
                             parameters={r: 1.0})
    with pytest.raises(OptionError, match="supports constraint_handling 'feasibility', "
                                          "'epsilon' and 'death'"):
        constropt.solve_batch(disc, {r: [1.0, 2.0]}, constraint_handling="penalty")

    @register_handler
    @dataclass(frozen=True)
    class Unbatched(StaticPenalty):
        name: ClassVar[str] = "test-unbatched"
        batches: ClassVar[bool] = False

    with pytest.raises(OptionError, match="'epsilon' and 'death'$"):
        constropt.solve_batch(disc, {r: [1.0, 2.0]}, constraint_handling="test-unbatched")


def test_options_accept_exactly_the_registered_handlers(registries):
    with pytest.raises(OptionError, match="unknown constraint_handling 'test-static-penalty'"):
        SolveOptions.from_kwargs({"constraint_handling": "test-static-penalty"})
    register_handler(StaticPenalty)
    opts = SolveOptions.from_kwargs({"constraint_handling": "test-static-penalty"})
    assert opts.constraint_handling == "test-static-penalty"
    assert SolveOptions.from_kwargs({"constraint_handling": "auto"}).constraint_handling == "auto"


def test_handler_registration_refuses_what_it_cannot_name(registries):
    with pytest.raises(TypeError, match="Handler subclass"):
        register_handler(object)

    @dataclass(frozen=True)
    class Auto(StaticPenalty):
        name: ClassVar[str] = "auto"

    with pytest.raises(ValueError, match="other than 'auto'"):
        register_handler(Auto)

    @dataclass(frozen=True)
    class Twin(StaticPenalty):
        name: ClassVar[str] = "epsilon"

    with pytest.raises(ValueError, match="'epsilon' is already registered"):
        register_handler(Twin)
    assert type(make_handler("epsilon")).__name__ == "Epsilon"


# -- algorithms ---------------------------------------------------------------------------
def test_the_builtin_algorithms_and_what_they_carry():
    assert ALGORITHMS == algorithm_names()[:2] == ("de", "ga")
    de, ga = get_algorithm("de"), get_algorithm("ga")
    assert (de.state, ga.state) == (DEState, GAState)
    assert (de.batched, ga.batched) == (True, False)
    assert (de.max_generations, ga.max_generations) == (3000, 1000)
    assert (de.pop_size(2), ga.pop_size(2)) == (40, 60)
    assert (de.pop_size(100), ga.pop_size(100)) == (300, 400)
    assert (de.small_restarts, ga.small_restarts) == (0, 1)
    assert de.handler_for(True) == ga.handler_for(True) == "epsilon"
    assert de.handler_for(False) == ga.handler_for(False) == "feasibility"
    with pytest.raises(OptionError, match="unknown algorithm 'pso'; choose one of de, ga"):
        get_algorithm("pso")


def test_a_registered_algorithm_runs_through_solve(registries):
    @register_algorithm
    class WideDE(DifferentialEvolution):
        """Test-only: DE with its own default population."""

        name: ClassVar[str] = "test-wide-de"

        def pop_size(self, n: int) -> int:
            return 64

    res = constropt.solve(_triangle(), seed=4, algorithm="test-wide-de",
                          local_first=False)  # the search itself: not the convex path
    same = constropt.solve(_triangle(), seed=4, algorithm="de", pop_size=64,
                           local_first=False)
    assert res.feasible and res.fun == pytest.approx(0.5, abs=1e-7)
    # the same search (record defaults aside, it is DE): the same counts and point
    assert (res.nit, res.nfev) == (same.nit, same.nfev)
    np.testing.assert_allclose(res.x_array, same.x_array, rtol=0, atol=1e-12)
    assert res.nfev != constropt.solve(_triangle(), seed=4, algorithm="de",
                                           local_first=False).nfev


def test_solve_batch_runs_only_batched_algorithms(registries):
    disc = constropt.Problem(x + y, [x**2 + y**2 <= r**2], bounds={x: (-6, 6), y: (-6, 6)},
                             parameters={r: 1.0})
    from constropt.solver._search import Search

    opts = SolveOptions.from_kwargs({"algorithm": "ga", "polish": False})
    with pytest.raises(OptionError, match="solve_batch runs algorithm='de'"):
        Search._create(disc, opts, "cpu", None, 0, False, np.array([[1.0, 2.0]]), t_start=0.0)


def test_options_accept_exactly_the_registered_algorithms(registries):
    with pytest.raises(OptionError, match="unknown algorithm 'test-wide-de'"):
        SolveOptions.from_kwargs({"algorithm": "test-wide-de"})

    @register_algorithm
    class WideDE(DifferentialEvolution):
        name: ClassVar[str] = "test-wide-de"

    assert SolveOptions.from_kwargs({"algorithm": "test-wide-de"}).algorithm == "test-wide-de"
    with pytest.raises(ValueError, match="'de' is already registered"):
        @register_algorithm
        class Twin(DifferentialEvolution):
            name: ClassVar[str] = "de"


# -- checkpoints name the moved state classes by tag; the old paths still read ----------
def test_state_classes_moved_with_their_algorithms_still_resolve():
    assert ck._resolve("DEState") is DEState and ck._resolve("GAState") is GAState
    assert ck._resolve("constropt.engine._algorithms:DEState") is DEState
    assert ck._resolve("constropt.engine._algorithms:GAState") is GAState
    assert ck._class_name(DEState) == "DEState" and ck._class_name(GAState) == "GAState"


# -- no name branches outside the registries ----------------------------------------------
_NAMED = {"algorithm", "constraint_handling", "handling"}
_REGISTRY_MODULES = {SRC / "engine" / "_handling.py", SRC / "engine" / "_algorithms.py"}


def _names_compared(tree):
    """``(line, code)`` of each comparison of an algorithm or handler name with a string
    (the option's own ``"auto"`` aside)."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        strings = [s.value for s in sides if isinstance(s, ast.Constant)
                   and isinstance(s.value, str)]
        if not strings or strings == ["auto"]:
            continue
        for s in sides:
            named = isinstance(s, ast.Name) and s.id in _NAMED or \
                isinstance(s, ast.Attribute) and (s.attr in _NAMED or s.attr == "name" and
                                                  "handler" in ast.unparse(s.value))
            if named:
                yield node.lineno, ast.unparse(node)


def test_no_algorithm_or_handler_name_branches_outside_the_registries():
    found, paths = [], sorted(SRC.rglob("*.py"))
    assert SRC / "solver" / "_build.py" in paths  # the scan reads the package's source
    for path in paths:
        if path in _REGISTRY_MODULES:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        found += [f"{path.relative_to(SRC)}:{line}: {code}"
                  for line, code in _names_compared(tree)]
    assert not found, "name branches:\n" + "\n".join(found)


def test_the_name_scan_sees_a_branch():
    tree = ast.parse('if opts.algorithm == "ga":\n    pass\nif handler.name != "epsilon":\n'
                     '    pass\nif opts.constraint_handling == "auto":\n    pass\n')
    assert [line for line, _ in _names_compared(tree)] == [1, 3]
