"""Problems proven infeasible before any search: the point returned is least-violating,
and constraints that contradict each other are an infeasible problem (status INFEASIBLE,
CLI exit code 3) while a box given upside down is bad input (ProblemError, exit 2)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import sympy as sp

import constropt
from constropt import ProblemError, Status

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
x, y = sp.symbols("x y")


def cli(*args):
    return subprocess.run([sys.executable, "-m", "constropt.cli", *map(str, args)], env=ENV,
                          capture_output=True, text=True, timeout=300, cwd=ROOT)


def test_disc_and_far_half_plane_returns_the_least_violating_point():
    # x**2 + y**2 <= 1 and x + y >= 3: the total violation (x**2 + y**2 - 1)+ +
    # (3 - x - y)+ is least at (1, 1)/sqrt(2), where it is 3 - sqrt(2) = 1.586; the box
    # centre (0, 0) violates by 3
    p = constropt.Problem(x + y, [x**2 + y**2 <= 1, x + y >= 3], bounds={x: (-5, 5),
                                                                        y: (-5, 5)})
    assert p.infeasibility_proof is not None
    res = constropt.solve(p, seed=0, device="cpu")
    assert res.status is Status.INFEASIBLE and not res.feasible and not res.success
    assert "no search run" in res.message and "total violation" in res.message
    # SLSQP's tolerance on the total violation
    assert float(np.sum(res.violations)) == pytest.approx(3 - math.sqrt(2), abs=1e-6)
    np.testing.assert_allclose(res.x_array, [1 / math.sqrt(2)] * 2, atol=1e-4)
    assert res.nfev > 1 and res.nit == 0
    # the proof names the equality band only where there are equalities, and the device
    # is where the least-violating point was computed (NumPy on the CPU), not "auto"
    assert "|h(x)|" not in res.message and res.device == "cpu"
    assert "device cpu" in repr(constropt.solve(p, seed=0))
    q = constropt.Problem(x + y, [sp.Eq(x**2 + y**2, 1), x + y >= 3],
                          bounds={x: (-5, 5), y: (-5, 5)}, eq_tol=1e-4)
    assert f"|h(x)| <= {1e-4:g}" in q.infeasibility_proof.statement


def test_least_violating_point_holds_integer_genes_and_stays_in_the_box():
    n = sp.Symbol("n", integer=True)
    p = constropt.Problem(x + n, [x**2 + n**2 <= 1, x + n >= 3], variables=[x, n],
                          bounds={x: (-4, 4), n: (-4, 4)})
    res = constropt.solve(p, seed=1, device="cpu")
    assert res.status is Status.INFEASIBLE
    assert isinstance(res.x[n], int) and -4 <= res.x_array[0] <= 4
    # the best over integer n: n = 1, x = 0 (0 + 2 = 2) or n = 0/1 with x near 1 -> 2;
    # anything at most a hair above 2, far below the centre's 3
    assert float(np.sum(res.violations)) <= 2 + 1e-6


def test_contradictory_constraints_are_infeasible_not_bad_input():
    p = constropt.Problem(x + y, [x >= 3, x <= 1, y >= 0, y <= 1])
    proof = p.infeasibility_proof
    assert proof is not None and proof.kind == "infeasible"
    assert "x >= 3 and x <= 1" in proof.statement
    res = constropt.solve(p, seed=0, device="cpu")
    assert res.status is Status.INFEASIBLE and res.certificate is proof
    assert float(np.sum(res.violations)) == pytest.approx(2.0, abs=1e-9)  # any x in [1, 3]
    # strict sides meeting at one value are contradictory too
    q = constropt.Problem(x**2, [x > 2, x <= 2])
    assert "x > 2 and x <= 2" in q.infeasibility_proof.statement
    # a box given upside down is bad input: the caller wrote it, it is not a constraint
    with pytest.raises(ProblemError, match="above its upper bound"):
        constropt.Problem(x**2, bounds={x: (3, 1)})


def test_cli_contradictory_constraints_exit_3_and_upside_down_bounds_exit_2(tmp_path):
    f = tmp_path / "contradict.toml"
    f.write_text('objective = "x + y"\nconstraints = ["x >= 3", "x <= 1"]\n'
                 "[variables]\ny = [0, 1]\nx = [-10, 10]\n")
    out = cli("solve", f, "--seed", "0", "--json")
    assert out.returncode == 3, out.stderr
    data = json.loads(out.stdout)
    assert data["status"] == "infeasible" and "contradict each other" in data["message"]
    g = tmp_path / "upside_down.toml"
    g.write_text('objective = "x + y"\n[variables]\nx = [3, 1]\ny = [0, 1]\n')
    out = cli("solve", g, "--seed", "0")
    assert out.returncode == 2
    assert out.stderr.startswith("error:") and "lower bound 3.0 is greater" in out.stderr


@pytest.mark.parametrize("max_evals", [1, 5, 40])
def test_least_violating_point_keeps_to_max_evals(max_evals):
    p = constropt.Problem(x + y, [x**2 + y**2 <= 1, x + y >= 3], bounds={x: (-5, 5),
                                                                        y: (-5, 5)})
    res = constropt.solve(p, seed=0, device="cpu", max_evals=max_evals)
    assert res.status is Status.INFEASIBLE and 1 <= res.nfev <= max(max_evals, 2)

