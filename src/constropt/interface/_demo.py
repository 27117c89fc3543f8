"""``constropt demo``: the original experiment's two constrained examples, end to end."""

from __future__ import annotations

import time
import warnings

from .. import benchmarks
from ..solver._solve import solve

__all__ = ["run_demo"]


def run_demo(device: str = "cpu", seed: int = 0, echo=print,
             names=("blog_example2", "blog_example3")) -> bool:
    """Solve blog examples 2 and 3 (or ``names``) with the cross-check; print everything.

    Returns True when both runs succeed, agree with scipy and match the known optima.
    """
    ok = True
    for name in names:
        bench = benchmarks.get(name)
        sense = "maximize" if bench.maximize else "minimize"
        echo(f"== {name}: {sense} {bench.objective}")
        echo("   subject to " + ", ".join(str(c) for c in bench.constraints))
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = solve(bench.problem(), device=device, seed=seed, cross_check=True)
        wall = time.perf_counter() - t0
        echo(repr(res))
        err = abs(res.fun - bench.f_star)
        echo(f"   known optimum {bench.f_star:.10g}; |error| {err:.2e}; wall time {wall:.3f} s")
        echo(f"   sympy at res.x: {float(bench.objective.subs(res.x)):.10g}")
        echo(res.cross_check.table())
        echo("")
        ok &= res.success and res.cross_check.agrees and err <= 1e-4 * max(1, abs(bench.f_star))
    return bool(ok)
