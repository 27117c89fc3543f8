"""The 10-asset portfolio QP of issue 27 in a fresh process, the first solve in the
process included: certified to a relative gap of 1e-6, and the certificate's time one of
the timings' parts, which add up to the total (imports and the first solve included).
The wall time itself (the issue asks for at most 5 s) is measured by
``benchmarks/certify.py --convex`` (benchmarks/results/certify_convex.md), not asserted
here: timings on a shared machine are no test."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "benchmarks"))

_CHILD = """
import json, time
t0 = time.perf_counter()
import constropt
{portfolio}
res = constropt.solve(f, cons, certify=True, seed=0)
wall = time.perf_counter() - t0
c = res.certificate
print(json.dumps(dict(wall=wall, certified=c.certified, gap=c.gap, convex=c.convex,
                      bound=c.lower_bound, fun=res.fun, timings=dict(res.timings))))
"""


@pytest.mark.slow
def test_portfolio_certified_in_a_fresh_process_first_solve_included():
    from certify import PORTFOLIO

    src = _CHILD.replace("{portfolio}", PORTFOLIO.replace("N", "10"))
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    out = subprocess.run([sys.executable, "-c", src], capture_output=True, text=True,
                         check=True, env=env, timeout=600)
    r = json.loads(out.stdout.strip().splitlines()[-1])
    assert r["certified"] and r["convex"] and r["gap"] <= 1e-6
    assert r["bound"] <= r["fun"]
    t = r["timings"]
    parts = sum(v for k, v in t.items() if k != "total")
    # the parts are rounded sums of perf_counter differences: 1e-6 s of slack
    assert abs(parts - t["total"]) <= 1e-6 + 1e-9 * t["total"]
    assert t["certify"] > 0 and t["total"] <= r["wall"]
