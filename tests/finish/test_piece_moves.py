"""Piece moves (issue 14, G17): a variable cut by the conditions of a piecewise cost is
moved into its other pieces and polished there, where SLSQP alone cannot cross a jump."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

import constropt
from _moves import move as _move
from constropt.finish._pieces import EDGE, breakpoints, piece_moves
from constropt.finish._verdict import check_point

x, y, a = sp.symbols("x y a", real=True)


def _jump_problem():
    # piece y >= 1: y**2 + 5 + (x - y)**2, least 6 at y = 1 (its edge); piece y < 1:
    # (y + 2)**2 + (x - y)**2, least 0 at (-2, -2).  At y = 1 the lower piece is worth 9
    # from below, so y = 1 is a local optimum SLSQP cannot leave
    f = sp.Piecewise((y**2 + 5, y >= 1), ((y + 2) ** 2, True)) + (x - y) ** 2
    return constropt.Problem(f, [x + y >= -10], bounds={x: (-5, 5), y: (-5, 5)})


def test_breakpoints_of_conditions_on_one_variable():
    f = sp.Piecewise((30 * x, x < 300), (31 * x, True)) + \
        sp.Piecewise((28 * y, y < 100), (29 * y, (y >= 100) & (y < 200)), (30 * y, True))
    p = constropt.Problem(f, [x + y >= 50], bounds={x: (0, 400), y: (0, 1000)})
    cuts = breakpoints(p, p.parameter_vector(None))
    assert p.variables == (x, y)
    assert set(cuts) == {0, 1}
    assert cuts[0].tolist() == [300.0]
    assert cuts[1].tolist() == [100.0, 200.0]


def test_breakpoints_skip_joint_conditions_outside_and_integer_variables():
    n = sp.Symbol("n", integer=True)
    f = sp.Piecewise((x, x + y < 1), (2 * x, True)) + sp.Piecewise((y, y < 50), (0, True)) \
        + sp.Piecewise((n, n < 3), (2 * n, True)) + sp.Piecewise((x**2, 2 * x - a > 0), (0, True))
    p = constropt.Problem(f, [], bounds={x: (-5, 5), y: (0, 10), n: (0, 9)},
                          parameters={a: 4.0})
    cuts = breakpoints(p, p.parameter_vector(None))
    # x + y < 1 involves two variables; y < 50 lies outside y's box; n is an integer;
    # 2x - a > 0 cuts x at a / 2 with the parameter at its value
    i = p.variables.index(x)
    assert {k: v.tolist() for k, v in cuts.items()} == {i: [2.0]}
    assert breakpoints(p, p.parameter_vector({a: 6.0}))[i].tolist() == [3.0]


def test_the_move_leaves_a_local_optimum_on_the_edge_of_a_piece():
    p = _jump_problem()
    pv = p.parameter_vector(None)
    start = np.array([1.0, 1.0])
    f0, V0 = check_point(p, start, pv)
    assert f0 == pytest.approx(6.0)
    xb, fb, Vb, nfev, stop = _move(piece_moves, p, start, f0, V0, pv, 10_000, 0)
    assert not stop and np.all(Vb == 0) and nfev > 0
    assert fb == pytest.approx(0.0, abs=1e-8)  # atol: the optimum is 0
    assert xb == pytest.approx([-2.0, -2.0], abs=1e-4)


def test_a_strict_end_of_a_piece_is_respected():
    # -y below 100, 1000 - y from 100 on: the best is y just below 100 (f -> -100), which
    # the piece's box reaches up to EDGE; y = 100 itself is worth 900
    z = sp.Symbol("z", real=True)
    f = sp.Piecewise((-y, y < 100), (1000 - y, True)) + (z - 0.5) ** 2
    p = constropt.Problem(f, [y + z <= 300], bounds={y: (0, 200), z: (0, 1)})
    pv = p.parameter_vector(None)
    start = np.array([200.0, 0.5])  # the upper piece's best: 800
    f0, V0 = check_point(p, start, pv)
    assert f0 == pytest.approx(800.0)
    xb, fb, Vb, _, _ = _move(piece_moves, p, start, f0, V0, pv, 10_000, 0)
    assert np.all(Vb == 0)
    assert 100.0 - 2 * EDGE * 100 <= xb[0] < 100.0
    assert fb == pytest.approx(-100.0, rel=1e-9)


def test_no_piecewise_costs_nothing():
    p = constropt.Problem(x**2 + y**2, [x + y >= 1], bounds={x: (-5, 5), y: (-5, 5)})
    pv = p.parameter_vector(None)
    start = np.array([0.5, 0.5])
    f0, V0 = check_point(p, start, pv)
    out = _move(piece_moves, p, start, f0, V0, pv, 10_000, 7)
    assert out[3] == 7 and out[1] == f0


@pytest.mark.parametrize("algorithm", ["de", "ga"])
def test_solve_finds_the_lower_piece(algorithm):
    res = constropt.solve(_jump_problem(), seed=0, algorithm=algorithm, max_evals=20_000)
    assert res.success and res.feasible
    assert res.fun == pytest.approx(0.0, abs=1e-6)  # atol: the optimum is 0


def test_breakpoints_come_in_gene_order_whatever_the_hash_seed():
    # the moves run gene by gene in this order; an order taken from a set of sympy atoms
    # made the evaluation count of a solve depend on PYTHONHASHSEED (G17 with the GA)
    import os
    import subprocess
    import sys

    code = ("from constropt.benchmarks import get\n"
            "from constropt.finish._pieces import breakpoints\n"
            "p = get('G17').problem()\n"
            "print([(i, list(v)) for i, v in breakpoints(p, p.parameter_vector()).items()])\n")
    outs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True, env={**os.environ, "PYTHONHASHSEED": str(h)}).stdout
            for h in (0, 1, 2, 3)}
    assert len(outs) == 1
    genes = [i for i, _ in eval(outs.pop())]
    assert genes == sorted(genes) and len(genes) >= 2
