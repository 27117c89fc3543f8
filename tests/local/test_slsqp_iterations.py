"""SLSQP's iteration cap grows with the free genes (local._polish.slsqp_iterations)."""

import numpy as np
import sympy as sp

import constropt
from constropt.local._polish import STATIONARY, slsqp_iterations, stationarity
from constropt.solver._localsearch import local_solver


def test_cap_is_200_up_to_20_genes_then_10_per_gene():
    assert [slsqp_iterations(n) for n in (1, 20, 21, 100)] == [200, 200, 210, 1000]


def test_a_local_solve_of_a_100_variable_rosenbrock_reaches_a_kkt_point():
    # 200 iterations ended this solve at f = 39.6, stationarity 0.32 (about 470 needed)
    n = 100
    x = sp.symbols(f"x1:{n + 1}", real=True)
    f = sum(100 * (x[i + 1] - x[i] ** 2) ** 2 + (1 - x[i]) ** 2 for i in range(n - 1))
    p = constropt.Problem(f, [sum(v**2 for v in x) - n <= 0],
                          bounds={v: (-2, 2) for v in x})
    pv = p.parameter_vector()
    X = np.random.default_rng(0).uniform(-2, 2, (n, 1))
    ends, used, ok = local_solver(p, pv)(X, None)
    assert ok[0]
    assert stationarity(p, ends[:, 0], pv)[0] <= STATIONARY
    # a local minimum of the chained Rosenbrock: the global 0 or the known 3.9866
    val = float(f.subs(dict(zip(x, ends[:, 0]))))
    assert min(abs(val), abs(val - 3.98662385)) < 1e-6
