"""The package layout: the import graph of ``src/constropt`` has no cycles and follows the
stage directions of the architecture (docs/how-it-works.md, "Module map").

Imports are read with ``ast`` from the source files, module-level and function-level
alike (a lazy import inside a function still ties the two modules together), so the test
needs no import of constropt itself.

Stages, lowest first: ``_errors`` and ``_plotting`` (the registry the plotting module
fills), ``backend``, then ``lowering`` and ``engine`` (independent of each other),
``problem``, ``local``, ``finish``, ``certify``, ``solver``, ``parallel``, and the edge
(``cli``, ``files``, ``interface``, ``benchmarks``, the package's ``__init__``).  A module
may import its own stage and lower ones, never a higher one, not even lazily: the thin
``Problem.plot`` and ``Result.plot`` methods reach the edge's plotting code through the
registry, which the edge fills.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PKG = "constropt"

RANK = {"_errors": 0, "_plotting": 0, "backend": 1, "lowering": 2, "engine": 2, "problem": 3,
        "local": 4, "finish": 5, "certify": 6, "solver": 7, "parallel": 8,
        "cli": 9, "files": 9, "interface": 9, "benchmarks": 9, "": 9}

EDGE = RANK["cli"]

#: The longest a module may grow (the project's "about 450 lines").
MAX_LINES = 500


def _modules() -> dict:
    out = {}
    for path in sorted((SRC / PKG).rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        if is_pkg:
            parts = parts[:-1]
        out[".".join(parts)] = (path, is_pkg)
    return out


MODULES = _modules()


def _target(name: str) -> str:
    """The module an import of ``name`` loads (a name inside a module: that module)."""
    while name not in MODULES and "." in name:
        name = name.rsplit(".", 1)[0]
    return name


def _imports(module: str) -> list[tuple[str, str, bool]]:
    """``(imported module or outside name, how it is written, at module level?)``."""
    path, is_pkg = MODULES[module]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top = {id(n) for n in tree.body}
    for node in tree.body:  # imports under a module-level if/try count as module level
        if isinstance(node, (ast.If, ast.Try)):
            top |= {id(n) for n in ast.walk(node)}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                if not is_pkg:
                    base = base[:-1]
                base = base[:len(base) - (node.level - 1)]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            names = [f"{prefix}.{a.name}" if f"{prefix}.{a.name}" in MODULES else prefix
                     for a in node.names]
        else:
            continue
        for name in names:
            if name == PKG or name.startswith(PKG + "."):
                name = _target(name)
            out.append((name, ast.unparse(node), id(node) in top))
    return out


GRAPH = {m: {t for t, _, _ in _imports(m) if t in MODULES and t != m} for m in MODULES}


def _stage(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_the_parser_sees_the_package():
    assert {"constropt.problem._problem", "constropt.lowering._lower",
            "constropt.backend._devices", "constropt.problem._scipy"} <= set(MODULES)
    # a known function-level import is found
    assert "constropt.problem._fitness" in GRAPH["constropt.problem._problem"]
    assert all(_stage(m) in RANK for m in MODULES), "a new stage needs a rank here"


def test_no_import_cycles():
    index, low, stack, on, cycles = {}, {}, [], set(), []

    def visit(v):  # Tarjan's strongly connected components, iteratively
        work = [(v, iter(sorted(GRAPH[v])))]
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        while work:
            node, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(GRAPH[w]))))
                    break
                if w in on:
                    low[node] = min(low[node], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == node:
                            break
                    if len(comp) > 1:
                        cycles.append(sorted(comp))

    for m in sorted(GRAPH):
        if m not in index:
            visit(m)
    assert not cycles, f"import cycles: {cycles}"


def test_engine_sees_arrays_not_sympy_or_the_lowering():
    for m in MODULES:
        if _stage(m) != "engine":
            continue
        for name, code, _ in _imports(m):
            assert not name.startswith("sympy"), f"{m}: {code}"
            if name.startswith(PKG + "."):
                assert _stage(name) in ("engine", "backend", "_errors"), f"{m}: {code}"


def test_lowering_never_imports_the_engine_or_later_stages():
    for m in MODULES:
        if _stage(m) != "lowering":
            continue
        for name, code, _ in _imports(m):
            if name.startswith(PKG + "."):
                assert _stage(name) in ("lowering", "_errors"), f"{m}: {code}"


def test_nothing_below_the_edge_imports_the_cli_or_the_file_readers():
    for m in MODULES:
        if RANK[_stage(m)] >= EDGE:
            continue
        for name, code, _ in _imports(m):
            assert _stage(name) not in ("cli", "files") or not name.startswith(PKG + "."), \
                f"{m}: {code}"


def test_stages_import_downward():
    wrong = []
    for m in MODULES:
        for name, code, _ in _imports(m):
            if not name.startswith(PKG + ".") and name != PKG or name == m:
                continue
            a, b = _stage(m), _stage(name)
            if a == b or RANK[b] < RANK[a] or RANK[a] == RANK[b] == EDGE:
                continue  # the edge knows everyone; lowering and engine stay apart
            wrong.append(f"{m} ({a}) -> {name} ({b}): {code}")
    assert not wrong, "upward imports:\n" + "\n".join(sorted(set(wrong)))


@pytest.mark.parametrize("module", sorted(MODULES))
def test_modules_stay_small(module):
    lines = MODULES[module][0].read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_LINES, f"{module} has {lines} lines; split it by idea"
