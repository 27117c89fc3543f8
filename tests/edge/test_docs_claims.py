"""Claims the docs make in prose (boxes, warnings, what is proven, what an extra installs,
what a command's help says) checked against a run, so the text cannot drift from what
a user sees.  Quoted program outputs are checked by tests/edge/test_doc_outputs.py."""

from __future__ import annotations

import math
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import sympy as sp

import constropt

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def _flat(text: str) -> str:
    return " ".join(text.split())


def _section(text: str, heading: str) -> str:
    """The text of a markdown section, up to the next heading of the same level."""
    level = heading.split(" ", 1)[0]
    start = text.index(heading + "\n")
    rest = text[start + len(heading) + 1:]
    m = re.search(rf"^{re.escape(level)} ", rest, re.M)
    return rest[:m.start()] if m else rest


@pytest.fixture(scope="module")
def first_problem():
    """The getting-started problem, built with every warning recorded."""
    x, y, z = sp.symbols("x y z")
    f = x**2 + 2 * y**2 + 3 * z**2 + 4 * x * y - 5 * y * z
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        p = constropt.Problem(f, [x >= 1, y > 3, y <= 7, z < 0, x + y + z >= 3,
                                  x**2 + z**2 <= 10], maximize=True)
    return p, (x, y, z), caught


def test_getting_started_boxes_come_from_propagation(first_problem):
    p, (x, y, z), caught = first_problem
    assert not [w for w in caught if issubclass(w.category, constropt.BoundsWarning)]
    assert p.bounds[x] == pytest.approx((1.0, math.sqrt(10)), rel=1e-12)
    assert p.bounds[y] == (3.0, 7.0)
    assert p.bounds[z] == pytest.approx((-3.0, 0.0), abs=1e-12)
    # ... and the pages say so, not the default box and a warning
    for page in (DOCS / "getting-started.md", ROOT / "README.md"):
        text = _flat(page.read_text())
        assert "`x` in `[1, sqrt(10)]` and `z` in `[-3, 0]`" in text, page.name
        assert "[-1000, 1000]" not in text, page.name
    assert "no `BoundsWarning` is raised" in _flat((DOCS / "getting-started.md").read_text())


def test_getting_started_solve_raises_no_bounds_warning(first_problem):
    p, _, _ = first_problem
    with warnings.catch_warnings():
        warnings.simplefilter("error", constropt.BoundsWarning)
        res = constropt.solve(p, device="cpu", seed=0)
    assert res.success and res.fun == pytest.approx(263.1739479, rel=1e-6)


def test_exact_feasibility_is_stated_as_proven_everywhere():
    cert = (DOCS / "certificates.md").read_text()
    not_proven = _flat(_section(cert, "## What is not proven"))
    proven = _flat(_section(cert, "## What is proven"))
    assert "feasible in exact arithmetic" not in not_proven
    assert "Feasibility of the returned point" in proven and "exact arithmetic" in proven
    assert "checked in exact arithmetic" in _flat((ROOT / "README.md").read_text())
    assert "in exact arithmetic" in _flat((DOCS / "guarantees.md").read_text())
    # what the pages claim is what a solve does: the verification is exact and required
    x = sp.Symbol("x")
    res = constropt.solve(x**2, [x >= 2 / 7], bounds={x: (0, 1)}, device="cpu", seed=0)
    assert res.feasible and res.verification.feasible and res.verification.float64_feasible


def _extras():
    try:
        import tomllib
    except ImportError:  # Python 3.10
        tomllib = pytest.importorskip("tomli")
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]


def test_extras_table_lists_what_each_extra_installs():
    text = (DOCS / "getting-started.md").read_text()
    rows = {m.group(1): m.group(2) for m in
            re.finditer(r"^\| `(\w+)` \| ([^|]+) \|", text, re.M)}
    for extra, reqs in _extras().items():
        assert extra in rows, f"extra {extra!r} missing from the table"
        names = {re.split(r"[<>=\[ ]", r, maxsplit=1)[0].lower() for r in reqs}
        listed = rows[extra].lower()
        missing = [n for n in names if n not in listed]
        assert not missing, f"the {extra!r} row does not name {missing}"


def test_readme_test_extra_sentence_names_every_test_requirement():
    text = _flat((ROOT / "README.md").read_text()).lower()
    sentence = text[text.index("the `test` extra installs"):][:300]
    for r in _extras()["test"]:
        name = re.split(r"[<>=\[ ]", r, maxsplit=1)[0].lower()
        if name.startswith("mkdocs"):
            assert "docs toolchain" in sentence
        else:
            assert name in sentence, name


def test_install_text_says_how_to_get_the_cpu_build_of_torch():
    for page in (ROOT / "README.md", DOCS / "getting-started.md"):
        text = _flat(page.read_text())
        assert "--index-url https://download.pytorch.org/whl/cpu" in text, page.name
        assert "installs the CPU build of torch" not in text, page.name
        assert "CUDA build" in text, page.name


def test_readme_ci_text_matches_ci_script():
    ci = (ROOT / ".ci" / "run").read_text()
    readme = _flat((ROOT / "README.md").read_text())
    assert 'pip install -q torch==2.13.0 -e ".[test]"' in ci
    assert 'pip install torch==2.13.0 -e ".[test]" && python -m pytest -q' in readme
    assert ci.count("python -m pytest -q\n") + ci.count("python -m pytest -q -m slow") >= 2
    for n in ("2", "1"):
        assert f"threads {n}" in ci
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        assert var in ci and var in readme
    assert "PYTHONHASHSEED=12345" in ci and "PYTHONHASHSEED=12345" in readme


def test_time_limit_help_says_the_whole_solve():
    out = subprocess.run([sys.executable, "-m", "constropt.cli", "solve", "--help"],
                         capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    text = _flat(out.stdout)
    assert "Seconds for the whole solve" in text and "Seconds of search" not in text
    assert "for the whole solve" in _flat((DOCS / "cli.md").read_text())


def test_contradictory_constraints_claims():
    # README: an empty box proves the problem infeasible; docs/cli.md: exit code 3 then
    assert "an empty box would prove the problem infeasible" in _flat(
        (ROOT / "README.md").read_text())
    assert "constraints that contradict each other" in _flat((DOCS / "cli.md").read_text())
    x, y = sp.symbols("x y")
    res = constropt.solve(x + y, [x >= 3, x <= 1], bounds={y: (0, 1)}, device="cpu")
    assert res.status is constropt.Status.INFEASIBLE and res.certificate is not None


def _table_ratios(text: str, first_cell: str) -> list[str]:
    """The speed-up cells (``1.19x``) of the table whose header starts with ``first_cell``,
    in row order."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"| {first_cell}"))
    header = [c.strip() for c in lines[start].strip("|").split("|")]
    col = next(i for i, c in enumerate(header) if c in ("ratio", "speed-up"))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip("|").split("|")][col])
    return rows


def test_fitness_page_quotes_the_benchmark_results():
    # docs/fitness.md's speed table is the one benchmarks/fitness.py --quote makes from its
    # results file (same rows, times, ratios, load; misses marked), not pasted numbers
    import importlib.util

    spec = importlib.util.spec_from_file_location("fitness_bench",
                                                  ROOT / "benchmarks" / "fitness.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    results = (ROOT / "benchmarks" / "results" / "fitness.md").read_text()
    page = (DOCS / "fitness.md").read_text()
    block = bench._MARKS.search(page)
    assert block is not None, "docs/fitness.md lost its fitness-table markers"
    assert block.group(2) == bench.page_table(results), \
        "regenerate it: python benchmarks/fitness.py --quote benchmarks/results/fitness.md"
    got = _table_ratios(results, "example")
    quoted = _table_ratios(page, "call (2-core CPU")
    assert len(got) == len(quoted) == 9
    assert quoted == [got[i] for i in bench.PAGE_ORDER]
    met = [line.split("|")[9].strip() for line in results.splitlines()
           if re.match(r"\| [123] \|", line)]
    missed = sum("missed" in line for line in page.splitlines() if line.startswith("| example"))
    assert missed == sum(m != "yes" for m in met)


#: Paths in the repository the prose quotes: test files and committed benchmark results
#: (not ``REV:path``, a file in the history that ``git show`` prints).
QUOTED_PATH = re.compile(r"(?<!:)\b(?:tests|benchmarks/results)/[\w/.-]*\w"
                         r"\.(?:py|md|jsonl)(?:\.gz)?\b")


def test_quoted_tests_and_results_exist():
    # a test moved to its stage's folder, or a result replaced by a newer run, must not
    # leave the pages (or a script's usage, a comment, a test) pointing at nothing
    texts = [ROOT / "README.md", ROOT / ".ci" / "run", ROOT / "pyproject.toml",
             *DOCS.rglob("*.md"), *DOCS.rglob("*.py"), *(ROOT / "benchmarks").glob("*.py"),
             *(ROOT / "src").rglob("*.py"), *(ROOT / "tests").rglob("*.py")]
    missing = sorted({f"{path.relative_to(ROOT)}: {quoted}" for path in texts
                      for quoted in QUOTED_PATH.findall(path.read_text(encoding="utf-8"))
                      if not (ROOT / quoted).exists()})
    assert not missing, "quoted paths that do not exist:\n" + "\n".join(missing)


def test_certificates_page_quotes_the_convex_benchmark():
    # docs/certificates.md quotes benchmarks/results/certify_convex.md's portfolio rows
    page = (ROOT / "docs" / "certificates.md").read_text()
    rows = [line.split("|")[1:-1] for line in
            (ROOT / "benchmarks" / "results" / "certify_convex.md").read_text().splitlines()
            if re.match(r"\| \d+ \|", line)]
    assert [r[0].strip() for r in rows] == ["10", "30"]
    for assets, secs, _f, _b, gap, boxes, convex, scip, *_ in rows:
        assert boxes.strip() == "1" and convex.strip() == "True"
        quoted = f"{assets.strip()}\n  assets to" if assets.strip() == "30" else assets.strip()
        assert quoted in page
        assert f"to gap {gap.strip()} in {secs.strip()} s" in page or \
            f"to {gap.strip()} in {secs.strip()} s" in page
        assert f"{scip.strip()} s" in page


#: Columns of benchmarks/results/certify_lp.md that docs/certificates.md quotes.
_LP_COLS = (0, 1, 4, 5, 7, 8, 13, 14, 16, 19, 20)


def _table_rows(text: str) -> list:
    return [[c.strip() for c in line.split("|")[1:-1]] for line in text.splitlines()
            if line.startswith("| ") and not line.startswith("| problem")]


def test_certificates_page_quotes_the_lp_benchmark():
    # the LP relaxations section quotes columns of benchmarks/results/certify_lp.md
    page = (ROOT / "docs" / "certificates.md").read_text()
    sec = page[page.index("### LP relaxations"):page.index("## Options")]
    quoted = _table_rows(sec)
    results = {r[0]: r for r in _table_rows(
        (ROOT / "benchmarks" / "results" / "certify_lp.md").read_text())}
    assert len(quoted) >= 8
    for row in quoted:
        assert row == [results[row[0]][k] for k in _LP_COLS], row[0]
    summary = [line for line in (ROOT / "benchmarks" / "results" / "certify_lp.md")
               .read_text().splitlines() if line.startswith("Gap at most 1e-6")]
    assert summary and summary[0] in sec


def test_cli_page_quotes_the_parse_error_it_gets(tmp_path, monkeypatch):
    # docs/cli.md quotes the ParseError of an unknown name: the same text, wrapped
    from constropt import ParseError
    from constropt.files import load_problem

    page = (DOCS / "cli.md").read_text()
    block = re.search(r"```text\n(problem\.toml: constraints\[1\].*?)```", page, re.S)
    assert block is not None
    (tmp_path / "problem.toml").write_text(
        'objective = "x + y + z"\nconstraints = ["x <= 1", "x + foo >= 1"]\n'
        "[variables]\nx = [0, 1]\ny = [0, 1]\nz = [0, 1]\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ParseError) as err:
        load_problem("problem.toml")
    assert _flat(block.group(1)) == _flat(str(err.value))


def _summary_rows(text: str, label: str) -> list:
    """The summary table of section ``## label`` of benchmarks/results/certify_scip.md."""
    block = text[text.index(f"## {label}\n"):].splitlines()[1:]
    rows = []
    for line in block:
        if line.startswith("| set |"):
            break
        if line.startswith("| ") and not line.startswith("| |"):
            rows.append(line)
    return rows


def test_certificates_page_quotes_the_scip_comparison():
    # the SCIP section quotes the summary rows of benchmarks/results/certify_scip.md
    page = (ROOT / "docs" / "certificates.md").read_text()
    sec = page[page.index("### Side by side with SCIP"):page.index("## Options")]
    text = (ROOT / "benchmarks" / "results" / "certify_scip.md").read_text()
    rows = _summary_rows(text, "after")
    assert len(rows) >= 8
    for row in rows:
        assert row in sec, row
