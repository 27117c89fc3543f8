"""The package layout: the import graph of ``src/constropt`` has no cycles and follows the
stages of the architecture, and the architecture notes (docs/how-it-works.md, section
"Module map") say the same thing as this file.

Imports are read with ``ast`` from the source files, module-level and function-level
alike (a lazy import inside a function still ties the two modules together), so the test
needs no import of constropt itself.

Stages, lowest first (``RANK``): ``_errors`` and ``_plotting``; ``backend`` (devices,
dtypes, the compile cache, the array namespace); ``lowering`` and ``engine``
(independent of each other); ``problem``; ``local`` (local solvers); ``finish`` (the
finishing path); ``certify`` (the branch-and-bound); ``solver`` (the run); ``parallel``;
and the edge (``cli``, ``files``, ``interface``, ``benchmarks``, the package's
``__init__``).  A module may import its own stage and lower ones, never a higher one,
not even lazily inside a function: the thin ``Problem.plot`` and ``Result.plot`` methods
reach the edge's plotting code through the
registry ``_plotting`` (rank 0), which the edge fills.

The module map is checked both ways: its stage table is ``RANK``, every module of the
package has a row under its own stage (a missing one is named), every module it names
exists.  The tests themselves sit in one
folder per stage (``tests/<stage>/``, ``tests/edge/`` for the edge, ``tests/acceptance/``
for suites across stages); this file stays at the root because it checks every stage.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
PKG = "constropt"
MAP_PAGE = ROOT / "docs" / "how-it-works.md"

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


#: The guards of imports only type checkers run.
_TYPE_CHECKING = ("TYPE_CHECKING", "typing.TYPE_CHECKING")


def _imports(module: str, runtime: bool = False) -> list[tuple[str, str, bool]]:
    """``(imported module or outside name, how it is written, at module level?)``;
    ``runtime``: without the imports only type checkers run (``if TYPE_CHECKING:``)."""
    path, is_pkg = MODULES[module]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top = {id(n) for n in tree.body}
    typing_only = set()
    for node in tree.body:  # imports under a module-level if/try count as module level
        if isinstance(node, (ast.If, ast.Try)):
            top |= {id(n) for n in ast.walk(node)}
        if isinstance(node, ast.If) and ast.unparse(node.test) in _TYPE_CHECKING:
            typing_only |= {id(n) for n in ast.walk(node)}
    out = []
    for node in ast.walk(tree):
        if runtime and id(node) in typing_only:
            continue
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


#: Who imports whom when the package runs.  An import only type checkers run ties no two
#: modules at run time, so it makes no cycle (``Fitness`` names ``Problem``, which builds
#: it); the stage rules below still read it.
GRAPH = {m: {t for t, _, _ in _imports(m, runtime=True) if t in MODULES and t != m}
         for m in MODULES}


def _stage(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_the_parser_sees_the_package():
    assert {"constropt.problem._problem", "constropt.lowering._lower",
            "constropt.backend._devices", "constropt.problem._scipy"} <= set(MODULES)
    # a known function-level import is found
    assert "constropt.problem._fitness" in GRAPH["constropt.problem._problem"]
    # a type checker's import is seen, and kept out of the run-time graph
    fitness = "constropt.problem._fitness"
    assert "constropt.problem._problem" in {t for t, _, _ in _imports(fitness)}
    assert "constropt.problem._problem" not in GRAPH[fitness]
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


#: Libraries a module may import only inside the function that needs them: torch (the
#: NumPy path never imports it), and the optional extras.
HEAVY = ("torch", "pyscipopt", "matplotlib", "pymoo")


def _heavy_modules() -> set:
    """The constropt modules whose import loads a heavy library: at their module level,
    directly or through the constropt modules they import there."""
    top = {m: {name for name, _, at_top in _imports(m) if at_top} for m in MODULES}
    heavy = {m for m, names in top.items()
             if any(n.split(".")[0] in HEAVY for n in names)}
    grew = True
    while grew:
        grew = False
        for m, names in top.items():
            if m not in heavy and names & heavy:
                heavy.add(m)
                grew = True
    return heavy


def test_imports_of_constropt_modules_sit_at_module_level():
    # the route between modules is visible at the top of each file; an import inside a
    # function is there only to keep a heavy library (torch on the NumPy path, the
    # optional extras) from loading until it is needed
    heavy = _heavy_modules()
    lazy = sorted(f"{m}: {code}" for m in MODULES for name, code, at_top in _imports(m)
                  if not at_top and name in MODULES and name != m and name not in heavy)
    assert not lazy, ("function-level imports of modules that load no heavy library "
                      "(move them to the module's top):\n" + "\n".join(lazy))


@pytest.mark.parametrize("module", sorted(MODULES))
def test_modules_stay_small(module):
    lines = MODULES[module][0].read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_LINES, f"{module} has {lines} lines; split it by idea"



# -- the module map of docs/how-it-works.md -----------------------------------------------
def _map_section() -> str:
    text = MAP_PAGE.read_text(encoding="utf-8")
    start = re.search(r"^## \d+\. Module map$", text, re.M)
    assert start, f"{MAP_PAGE.name} has no '## N. Module map' section"
    end = re.search(r"^## ", text[start.end():], re.M)
    return text[start.end():start.end() + end.start() if end else len(text)]


def _table(section: str, first_header: str) -> list[list[str]]:
    """The rows (cells stripped) of the markdown table whose first header cell is
    ``first_header``."""
    lines = section.splitlines()
    for i, line in enumerate(lines):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and cells[0] == first_header:
            rows = []
            for row in lines[i + 2:]:
                if not row.startswith("|"):
                    break
                rows.append([c.strip() for c in row.strip().strip("|").split("|")])
            return rows
    raise AssertionError(f"the module map has no table headed '| {first_header} |'")


def _ticked(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def _stage_of_path(path: str) -> str:
    """``backend/`` -> ``backend``, ``cli.py`` -> ``cli``, ``__init__.py`` -> ``""``."""
    name = path.rstrip("/").split("/")[0]
    name = name[:-3] if name.endswith(".py") else name
    return "" if name == "__init__" else name


def _module_of_path(path: str) -> str:
    """``engine/_de.py`` -> ``constropt.engine._de``; ``__init__.py`` -> ``constropt``."""
    parts = path[:-3].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join([PKG, *parts])


def _mapped_modules() -> dict[str, set[str]]:
    """``{module: stages of the row group it is listed under}`` from the module table; a
    name without a folder takes the folder of the name before it in its cell
    (``engine/_de.py``, ``_ga.py``)."""
    out, group = {}, set()
    for stage_cell, module_cell, *_ in _table(_map_section(), "stage"):
        if stage_cell == "edge":
            group = {st for st, r in RANK.items() if r == EDGE}
        elif stage_cell:
            group = {_stage_of_path(t) for t in _ticked(stage_cell)}
        folder = ""
        for token in _ticked(module_cell):
            if "/" in token:
                folder = token.rsplit("/", 1)[0]
            elif folder:
                token = f"{folder}/{token}"
            out[_module_of_path(token)] = group
    return out


#: The modules the map must list: every module but the stage packages' ``__init__``
#: (the stage table describes those), and the package's own ``__init__`` (the edge).
MAPPED = sorted(m for m, (_, is_pkg) in MODULES.items() if not is_pkg or m == PKG)


def test_the_map_ranks_the_stages_as_the_test_does():
    ranks = {}
    for rank, stages, *_ in _table(_map_section(), "rank"):
        for token in _ticked(stages):
            ranks[_stage_of_path(token)] = int(rank)
    assert ranks == RANK


def test_every_module_is_in_the_map():
    missing = [m for m in MAPPED if m not in _mapped_modules()]
    assert not missing, (f"modules without a row in the module map of {MAP_PAGE.name}: "
                         + ", ".join(missing))


def test_every_module_the_map_names_exists():
    section = _map_section()
    named = set(_mapped_modules())
    # the prose too (the route of solve(), the upward imports): paths with a stage folder
    named |= {_module_of_path(t) for t in _ticked(section)
              if t.endswith(".py") and "/" in t and t.split("/")[0] in RANK}
    absent = sorted(m for m in named if m not in MODULES)
    assert not absent, f"the module map of {MAP_PAGE.name} names modules that do not " \
                       "exist: " + ", ".join(absent)


def test_the_map_lists_each_module_under_its_own_stage():
    wrong = [f"{m} ({_stage(m) or '__init__'}) under {sorted(group)}"
             for m, group in _mapped_modules().items()
             if m in MODULES and _stage(m) not in group]
    assert not wrong, "modules listed under another stage: " + "; ".join(wrong)


def test_readme_names_the_stages_lowest_first():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    layout = readme[readme.index("## Layout"):]
    layout = layout[:layout.index("\n## ", 1)]
    ranks = [RANK[_stage_of_path(t)] for t in _ticked(layout)
             if _stage_of_path(t) in RANK and (t.endswith("/") or t.endswith(".py"))]
    assert set(ranks) == set(RANK.values()) and ranks == sorted(ranks), ranks


# -- the tests' own layout -------------------------------------------------------------------
def test_tests_sit_in_a_folder_per_stage():
    tests = ROOT / "tests"
    folders = {p.name for p in tests.iterdir() if p.is_dir() and any(p.glob("test_*.py"))}
    stages = {st for st, r in RANK.items() if r < EDGE} | {"edge", "acceptance"}
    assert folders <= stages, f"test folders that name no stage: {sorted(folders - stages)}"
    loose = sorted(p.name for p in tests.glob("test_*.py") if p.name != Path(__file__).name)
    assert not loose, f"tests at the root of tests/ (move them to their stage): {loose}"
