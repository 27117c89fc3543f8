"""Packaging and ecosystem manners: ``py.typed`` and annotations, Python 3.10's TOML
parser, the ``constropt`` logger, no ``print`` in the library, Result's notebook and
dict-like reprs, progress in a Jupyter kernel."""

from __future__ import annotations

import ast
import importlib
import io
import logging
import re
import subprocess
import sys
import types
import typing
from pathlib import Path

import numpy as np
import pytest
import sympy as sp

import constropt
from constropt.finish._result import FrozenDict
from constropt.solver import _progress

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "constropt"
x, y = sp.symbols("x y")


@pytest.fixture(scope="module")
def res():
    return constropt.solve((x - 1) ** 2 + (y - 2) ** 2, [x + y <= 2],
                           bounds={x: (-3, 3), y: (-3, 3)}, seed=0)


# -- typing -------------------------------------------------------------------------------

def test_py_typed_is_shipped():
    assert (SRC / "py.typed").is_file()
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "py.typed" in meta["tool"]["setuptools"]["package-data"]["constropt"]


@pytest.mark.parametrize("fn", [
    constropt.solve, constropt.solve_batch, constropt.resume, constropt.Problem.__init__,
    constropt.Problem.fitness, constropt.Problem.evaluate, constropt.Problem.parameter_vector,
    constropt.Problem.plot, constropt.Problem.to_scipy, constropt.Problem.to_pymoo,
    constropt.Problem.to_scip, constropt.Search.result, constropt.Result.plot,
    constropt.Result.to_dict, constropt.Result.to_scipy, constropt.solve_islands,
    constropt.Search.__init__, constropt.cross_check,
], ids=lambda f: f.__qualname__)
def test_public_api_is_annotated_and_resolvable(fn):
    import inspect

    hints = typing.get_type_hints(fn)  # every name resolves at run time too
    params = [p for p in inspect.signature(fn).parameters if p != "self"]
    assert set(params) <= set(hints), set(params) - set(hints)
    assert "return" in hints


def test_result_fields_are_annotated():
    hints = typing.get_type_hints(constropt.Result)
    assert {"x", "fun", "maxcv", "nfev", "status", "success"} <= set(hints)


# -- Python 3.10 --------------------------------------------------------------------------

def test_toml_reader_falls_back_to_tomli_before_3_11(monkeypatch):
    from constropt.files import _readers

    fake = types.ModuleType("tomli")
    fake.loads, fake.TOMLDecodeError = tomllib.loads, tomllib.TOMLDecodeError
    monkeypatch.setitem(sys.modules, "tomli", fake)
    monkeypatch.setattr(sys, "version_info", (3, 10, 14, "final", 0))
    try:
        importlib.reload(_readers)
        assert _readers.tomllib is fake
        assert _readers.read_toml("a = 1", "t.toml") == {"a": 1}
    finally:
        monkeypatch.undo()
        importlib.reload(_readers)
    assert _readers.tomllib is tomllib


def test_tomli_is_a_dependency_below_3_11():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert meta["project"]["requires-python"] == ">=3.10"
    assert "tomli>=2; python_version < '3.11'" in meta["project"]["dependencies"]


# -- logging and print --------------------------------------------------------------------

def test_import_configures_no_logging():
    code = ("import logging, constropt; lg = logging.getLogger('constropt'); "
            "print(logging.getLogger().handlers, lg.level, "
            "[type(h).__name__ for h in lg.handlers])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={"PYTHONPATH": str(ROOT / "src"), "PATH": ""}, timeout=120,
                         check=True).stdout
    assert out.strip() == "[] 0 ['NullHandler']"


def test_solver_messages_go_to_the_constropt_logger(caplog):
    with caplog.at_level(logging.DEBUG, logger="constropt"):
        constropt.solve(x ** 2 + y ** 2, [x + y >= 1], bounds={x: (-2, 2), y: (-2, 2)},
                        seed=0, x0=[5.0, 0.0], check_every=10, max_generations=20,
                        polish=False)
    records = [r for r in caplog.records if r.name == "constropt"]
    info = [r.getMessage() for r in records if r.levelno == logging.INFO]
    debug = [r.getMessage() for r in records if r.levelno == logging.DEBUG]
    assert any(m.startswith("search: de, 2 variables, population") and
               "1 starting point(s) from x0" in m for m in info), info
    assert any("x0: 1 of 1 starting points clipped" in m for m in info), info
    assert [m.split()[:2] for m in debug] == [["gen", "10"], ["gen", "20"]]


#: The command line is the one module that writes to stdout; the library logs
#: (``logging.getLogger("constropt")``) instead.
ALLOWED_PRINT = {"cli.py"}


def test_no_print_outside_the_cli():
    found = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if rel in ALLOWED_PRINT:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "print":
                found.append(f"{rel}:{node.lineno}")
    assert not found


# -- Result reprs -------------------------------------------------------------------------

def test_x_prints_as_a_plain_dict_and_stays_read_only(res):
    assert str(res.x) == repr(dict(res.x)) and re.fullmatch(r"\{x: [-+.\deE]+, y: [-+.\deE]+\}",
                                                            str(res.x))
    assert "mappingproxy" not in repr(res) and "mappingproxy" not in repr(res.timings)
    assert res.x == dict(res.x) and isinstance(res.x, FrozenDict)
    with pytest.raises(TypeError):
        res.x[x] = 1.0  # type: ignore[index]
    with pytest.raises(AttributeError):
        res.x._data = {}  # type: ignore[misc]
    copy = dict(res.x)
    copy[x] = 2.0  # a copy is a plain, writable dict
    assert res.x[x] == pytest.approx(0.5, abs=1e-6)
    assert res.to_dict()["x"] == {"x": res.x[x], "y": res.x[y]}  # unchanged: str keys
    assert sp.sympify((x - 1) ** 2).subs(res.x) == pytest.approx(0.25, abs=1e-5)


def test_frozen_dict_pickles():
    import pickle

    d = FrozenDict({x: 1.0})
    assert pickle.loads(pickle.dumps(d)) == {x: 1.0}


def test_repr_html_is_a_compact_table(res):
    html = res._repr_html_()
    assert html.startswith("<table>") and html.endswith("</table>")
    for label in ("status", "success", "fun", "x", "maxcv", "nfev", "time"):
        assert f"<th style='text-align:left'>{label}</th>" in html
    assert "CONVERGED" in html and f"<td style='text-align:left'>{res.nfev}</td>" in html
    shown = dict(re.findall(r"([xy]) = ([-+.\deE]+)", html))  # SLSQP's digits vary: approx
    assert float(shown["x"]) == pytest.approx(0.5, abs=1e-5)
    assert float(shown["y"]) == pytest.approx(1.5, abs=1e-5)


def test_repr_html_escapes_the_message(res):
    from dataclasses import replace

    odd = replace(res, message="a < b & c")
    assert "a &lt; b &amp; c" in odd._repr_html_()


# -- progress in a notebook ---------------------------------------------------------------

class _Handle:
    def __init__(self, log):
        self.log = log

    def update(self, obj, **kw):
        self.log.append(("update", obj["text/plain"], kw))


def _fake_ipython(monkeypatch, kernel=True):
    log = []
    display = types.ModuleType("IPython.display")

    def show(obj, **kw):
        log.append(("display", obj["text/plain"], kw))
        return _Handle(log)

    display.display = show
    shell = types.SimpleNamespace(kernel=object() if kernel else None)
    ipython = types.ModuleType("IPython")
    ipython.get_ipython = lambda: shell
    ipython.display = display
    monkeypatch.setitem(sys.modules, "IPython", ipython)
    monkeypatch.setitem(sys.modules, "IPython.display", display)
    return log


class _Pop:
    def __init__(self, f, cv):
        self.X = np.zeros((2, len(f)))
        self.f, self.cv = np.asarray(f, dtype=float), np.asarray(cv, dtype=float)


def test_kernel_detection(monkeypatch):
    monkeypatch.delitem(sys.modules, "IPython", raising=False)
    assert _progress.notebook_display() is None  # IPython not loaded: never imported
    assert "IPython" not in sys.modules
    _fake_ipython(monkeypatch, kernel=False)  # terminal IPython: no kernel
    assert _progress.notebook_display() is None
    _fake_ipython(monkeypatch, kernel=True)
    assert _progress.notebook_display() is sys.modules["IPython.display"]
    sys.modules["IPython"].get_ipython = lambda: None  # IPython imported, not running
    assert _progress.notebook_display() is None


def test_progress_updates_one_notebook_output(monkeypatch, capsys):
    log = _fake_ipython(monkeypatch)
    monitor = _progress.make_monitor(False, True, None)
    for g in (10, 20, 30):
        assert monitor(g, 100 * g, _Pop([1.0 / g, 2.0], [0.0, 1.0]), 0.5) is False
    monitor.finish()
    assert [e[0] for e in log] == ["display", "update", "update"]
    assert log[0][2] == {"raw": True, "display_id": True} and log[1][2] == {"raw": True}
    assert log[2][1].startswith("gen     30  best    0.033333333  cv         0  feasible  50.0%")
    assert capsys.readouterr().err == ""  # nothing on stderr in a kernel


def test_auto_progress_shows_in_a_kernel_only(monkeypatch):
    monkeypatch.delenv("PYTEST_CURRENT_TEST", raising=False)
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delitem(sys.modules, "IPython", raising=False)
    assert _progress.make_monitor(False, None, None, stream=io.StringIO()) is None
    monkeypatch.setattr(sys, "stderr", io.StringIO())  # not a terminal
    assert _progress.make_monitor(False, None, None) is None
    log = _fake_ipython(monkeypatch)
    monitor = _progress.make_monitor(False, None, None)
    assert monitor is not None
    monitor(10, 1000, _Pop([1.0], [0.0]), 1.0)
    assert [e[0] for e in log] == ["display"] and sys.stderr.getvalue() == ""
    monkeypatch.setenv("CI", "true")  # CI logs stay quiet, kernel or not
    assert _progress.make_monitor(False, None, None) is None
