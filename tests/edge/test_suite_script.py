"""The bookkeeping of ``benchmarks/suite.py``: seed ranges, problem selectors, resume
records, before/after counts and issue 14's acceptance lines (no solver runs here)."""

from __future__ import annotations

import json
import os
import sys
import types

import pytest

BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "benchmarks")
sys.path.insert(0, BENCH)

import _suite_report  # noqa: E402
import suite  # noqa: E402


def _rec(solver, problem, seed, ok, **extra):
    rec = dict(solver=solver, problem=problem, seed=seed, budget=500_000, ok_abs=ok,
               ok_rel=ok, nfev=1000, hit=500 if ok else None, seconds=0.5, fun=1.0,
               feasible=True, err=0.0 if ok else 1.0, maxcv=0.0, status="CONVERGED",
               message="", error=None, x=[0.0])
    rec.update(extra)
    return rec


@pytest.mark.parametrize("text, seeds", [("0-4", [0, 1, 2, 3, 4]), ("3,7", [3, 7]),
                                         ("0-2,5", [0, 1, 2, 5]), ("2,2,1", [1, 2])])
def test_parse_seeds(text, seeds):
    assert suite.parse_seeds(text) == seeds


@pytest.mark.parametrize("bad", ["", "-1", ","])
def test_parse_seeds_rejects_empty_or_negative(bad):
    with pytest.raises((SystemExit, ValueError)):
        suite.parse_seeds(bad)


def test_select_problems_by_name_and_tag_in_collection_order(monkeypatch):
    from constropt import benchmarks

    # collection() builds every problem in sympy (a minute on a loaded 2-core machine):
    # the tag lookup is answered from the names instead
    def by_tag(tag):
        return tuple(types.SimpleNamespace(name=n) for n in benchmarks.names()
                     if tag == "minlplib" and n.startswith("ex"))

    monkeypatch.setattr(benchmarks, "collection", by_tag)
    args = suite.parse_args(["--problems", "HS035,tag:minlplib,g01"])
    assert suite.select_problems(args) == ["G01", "ex1221", "ex1223b", "ex1224", "ex1225",
                                           "ex1226", "HS035"]
    with pytest.raises(SystemExit, match="no-such-tag"):
        suite.select_problems(suite.parse_args(["--problems", "tag:no-such-tag"]))


def test_latest_keeps_one_record_per_seed_and_counts_crashes_as_failures():
    records = [_rec("constropt", "G01", 0, False), _rec("constropt", "G01", 0, True),
               _rec("constropt", "G01", 1, True),
               _rec("constropt-ga", "G01", 2, False, error="OptionError(...)")]
    by = _suite_report.latest(records)
    assert [r["seed"] for r in by[("constropt", "G01")]] == [0, 1]
    assert _suite_report.rate(by[("constropt", "G01")]) == "2/2"
    assert _suite_report.rate(by[("constropt-ga", "G01")]) == "0/1"


def test_report_prints_before_counts_and_acceptance():
    records = ([_rec("constropt", "G01", s, True) for s in range(4)]
               + [_rec("constropt", "G01", 4, False)]
               + [_rec("scipy", "G01", s, True) for s in range(2)]
               + [_rec("constropt-ga", "G01", s, s < 3, status="ERROR") for s in range(5)])
    baseline = [_rec("constropt", "G01", s, s < 2) for s in range(5)]
    seeds = {"constropt": list(range(5)), "constropt-ga": list(range(5)),
             "scipy": [0, 1]}
    text = _suite_report.report(records, ["G01"], ["constropt", "constropt-ga", "scipy"],
                                seeds, 500_000, [], {"jobs": 2}, baseline=baseline,
                                baseline_path="x/suite_before_raw.jsonl")
    row = next(line for line in text.splitlines() if line.startswith("| G01 |"))
    assert "| 4/5 (2/5) |" in row  # constropt now 4/5, before 2/5
    assert "- constropt: 80.0% of 5 runs succeed (abs) (goal >= 98%: NOT met)" in text
    assert "- constropt-ga: 60.0% of 5 runs succeed (abs) (goal >= 90%: NOT met)" in text
    # scipy 2/2 against constropt's 4/5: a problem where scipy does better
    assert ("more often than constropt's defaults (of the 1 where scipy ran): "
            "G01 (2/2 vs 4/5)") in text
    assert "more often than constropt's GA (of the 1 where scipy ran): G01 (2/2 vs 3/5)" \
        in text
    assert "seeds 0..4" in text and "`suite_before_raw.jsonl`" in text
    # how the failures failed: the GA's two are feasible local optima, f - f* = 1
    assert "| G01 | constropt-ga | 2/5 | - | - | 2 (1) |" in text
    assert "| G01 | constropt | 1/5 | - | - | 1 (1) |" in text


def test_raw_runs_go_to_the_ignored_folder_unless_given():
    args = suite.parse_args(["--out", "benchmarks/results/suite.md"])
    assert suite.raw_path(args) == os.path.join(suite.RAW_DIR, "suite.jsonl")
    assert os.path.realpath(os.path.dirname(suite.RAW_DIR)) == os.path.realpath(BENCH)
    # the folder is git-ignored: raw runs are regenerated, the reports are committed
    with open(os.path.join(BENCH, "..", ".gitignore")) as fh:
        ignored = fh.read().split()
    assert "/benchmarks/raw/" in ignored
    assert suite.raw_path(suite.parse_args(["--out", "r.md", "--raw", "x.jsonl"])) == "x.jsonl"
    assert suite.raw_path(suite.parse_args([])) == ""  # no report, no record


def test_report_only_rebuilds_the_report_from_a_raw_file_the_user_made(tmp_path):
    raw = tmp_path / "mine.jsonl"
    raw.write_text("".join(json.dumps(_rec("constropt", "G01", s, s != 1)) + "\n"
                           for s in range(3)))
    out = tmp_path / "report.md"
    assert suite.main(["--report-only", "--raw", str(raw), "--out", str(out),
                       "--problems", "G01", "--solvers", "constropt", "--seeds", "0-2"]) == 0
    row = next(line for line in out.read_text().splitlines() if line.startswith("| G01 |"))
    assert "| 2/3 |" in row
    with pytest.raises(SystemExit, match="no runs at"):
        suite.main(["--report-only", "--raw", str(tmp_path / "absent.jsonl"),
                    "--problems", "G01", "--solvers", "constropt"])
