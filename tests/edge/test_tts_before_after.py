"""The report of ``benchmarks/tts_before_after.py`` (no solver runs here): medians over
rounds and seeds, evaluations and reached counts from the first round, ratios."""

from __future__ import annotations

import os
import sys

BENCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "benchmarks")
sys.path.insert(0, BENCH)

import tts_before_after as tba  # noqa: E402


def _runs(seconds, nfev, ok):
    out = []
    for k, secs in enumerate(seconds):  # one list per round
        for s, t in enumerate(secs):
            for name in tba.PROBLEMS:
                for engine, _ in tba.ENGINES:
                    out.append(dict(problem=name, engine=engine, seed=s, seconds=t,
                                    nfev=nfev[s], ok=ok[s], round=k))
    return out


def test_report_rows_ratios_and_counts():
    runs = {"before": _runs([[1.0, 3.0], [2.0, 9.0]], [100, 300], [True, True]),
            "after": _runs([[0.5, 0.5], [1.0, 1.0]], [150, 250], [True, False])}
    fresh = {"before": [(6.0, 5.0, -1.0), (8.0, 6.0, -1.0), (7.0, 5.5, -1.0)],
             "after": [(3.0, 2.0, -1.0), (2.0, 1.0, -1.0), (4.0, 3.0, -1.0)]}
    text = tba.report("aaa", "bbb", runs, fresh, [0, 1], 2, "load", 12.0)
    rows = [ln for ln in text.splitlines() if ln.startswith("| G06 |")]
    assert len(rows) == len(tba.ENGINES)
    # medians: before over {1, 3, 2, 9} = 2.5, after over {0.5, 0.5, 1, 1} = 0.75
    cells = [c.strip() for c in rows[0].strip("|").split("|")]
    assert cells[2:] == ["2.5", "0.75", "0.30", "200", "200", "2/2", "1/2"]
    assert "before wall 6.00, 8.00, 7.00 s (median 7.00 s; inside the script 5.50 s" in text
    assert "after/before 0.43" in text
    assert "`aaa`" in text and "`bbb`" in text


def test_report_without_fresh_runs():
    runs = {v: _runs([[1.0]], [10], [True]) for v in ("before", "after")}
    text = tba.report("aaa", "bbb", runs, {"before": [], "after": []}, [0], 1, "load", 1.0)
    assert "Whole process" not in text and "| 1.00 |" in text
