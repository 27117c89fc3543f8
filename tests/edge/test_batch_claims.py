"""docs/benchmarks.md's batch section quotes benchmarks/results/batch.md (written by
benchmarks/batch.py): the same ratios, errors and two-rank figures, not numbers pasted
from another run."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results" / "batch.md"
PAGE = ROOT / "docs" / "benchmarks.md"


def _rows(text: str, header_start: str) -> list[list[str]]:
    """The body cells of the first table whose header starts with ``header_start``."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"| {header_start}"))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip("|").split("|")])
    return rows


def _section(text: str, heading: str) -> str:
    start = text.index(heading)
    end = text.find("\n## ", start + len(heading))
    return text[start:] if end < 0 else text[start:end]


def test_benchmarks_page_quotes_the_batch_results():
    results = RESULTS.read_text()
    page = _section(PAGE.read_text(), "## Many instances at once")
    got = _rows(results, "B | solve_batch (s) | loop of SLSQP")
    quoted = _rows(page, "instances | solve_batch")
    assert [r[0] for r in quoted] == [r[0] for r in got]            # the batch sizes
    for q, g in zip(quoted, got):
        assert q[1] == f"{float(g[1]):.3g} s" and q[2] == f"{float(g[2]):.3g} s"
        assert q[3].split()[0] == g[3]                                # loop / batch
        assert q[4] == f"{float(g[4]):.1e}"                           # max error
    scale = re.search(r"solve_batch x(\d+(?:\.\d+)?), the SLSQP loop x(\d+(?:\.\d+)?)", results)
    assert f"costs {scale[1]}x (the loop {scale[2]}x)" in " ".join(page.split())
    blog = [r[3] for r in _rows(results, "B | solve_batch (s) | multistart")]
    assert f"{', '.join(blog)} at 10, 100 and 1,000 instances" in " ".join(page.split())
    share = {m[1]: m[2] for m in re.finditer(
        r"- B = ([\d,]+):.*?status rules [\d.]+ s \((\d+%)\)", results)}
    assert f"{share['10']} of the batch's time at 10 instances, {share['1,000']} at 1,000, " \
        f"{share['10,000']} at 10,000" in " ".join(page.split())
    two = re.search(r"Two ranks / one process, wall: ([\d.]+x).*?the slower rank's whole "
                    r"call ([\d.]+) s against the one process's ([\d.]+) s.*?about "
                    r"([\d.]+x) one", results, re.S)
    flat = " ".join(page.split())
    assert f"wall {two[1]}" in flat and f"{two[2]} s against {two[3]} s" in flat
    assert f"about {two[4]}" in flat
    read = re.search(r"Other work kept ([\d.]+) cores.*?With the first read of every Result: "
                     r"([\d.]+x)", results, re.S)
    assert f"Other work kept {read[1]} cores" in flat
    assert f"with the first read of every Result, {read[2]}" in flat
