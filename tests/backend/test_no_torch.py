"""Small problems do not pay for torch: declaring, bounding (FBBT), evaluating on NumPy
and differentiating with the NumPy backend never import it.

The checks run in a fresh interpreter whose import system refuses ``torch``: a
meta-path finder placed first raises on any ``torch`` module, so an import anywhere
(even a lazy one inside a function) fails the script.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(r'''
    import sys

    class NoTorch:
        def find_spec(self, name, path=None, target=None):
            if name == "torch" or name.startswith("torch."):
                raise ImportError(f"torch imported: {name}")
            return None

    sys.meta_path.insert(0, NoTorch())

    import math
    import warnings

    import numpy as np
    import sympy as sp

    import constropt
    from constropt import benchmarks

    warnings.simplefilter("ignore")
    x, y, z = sp.symbols("x y z")
    g = sp.IndexedBase("g", shape=(1000,), integer=True)
    i = sp.Idx("i", 1000)
    n, m = sp.symbols("n m", integer=True)
    r = sp.Symbol("r")
    problems = {
        "blog1": constropt.Problem(sp.Sum(g[i], (i, 0, 999)), bounds={g: (1, 24)},
                                   maximize=True),
        "blog2": constropt.Problem(
            x**2 + 2 * y**2 + 3 * z**2 + 4 * x * y - 5 * y * z,
            [x >= 1, y > 3, y <= 7, z < 0, x + y + z >= 3, x**2 + z**2 <= 10],
            maximize=True),
        "blog3": constropt.Problem(
            sp.sin(x) + x**2 - 2 * sp.cos(y) + y**2 + z**2,
            [x >= 0, y >= 0, y <= sp.pi, z <= 5, x + z >= 1, sp.cos(y) + z >= 0.5],
            bounds={x: (-25, 25), y: (-25, 25), z: (-25, 25)}),
        "integers": constropt.Problem(n + m, [n**2 + m**2 <= 10.5, n >= -10, m >= -10]),
        "parametric": constropt.Problem(x + 2 * y, [(x - 1)**2 + (y + 1)**2 <= r**2],
                                        parameters={r: 2.0}),
    }
    for name in ("G03", "G05", "G13", "HS043", "pressure_vessel"):
        problems[name] = benchmarks.get(name).problem()

    # bound propagation ran at construction: finite boxes where constraints imply them
    assert problems["blog2"].bounds[x][1] <= math.sqrt(10) * (1 + 1e-14)
    assert problems["integers"].bounds[n] == (-3.0, 3.0)
    # ... and proves infeasibility without a search
    bad = constropt.Problem(x + y, [x**2 + y**2 <= 1, x + y >= 3])
    assert bad.infeasibility_proof is not None

    rng = np.random.default_rng(0)
    for name, p in problems.items():
        lo = np.where(np.isfinite(p.lower), p.lower, -10.0)
        hi = np.where(np.isfinite(p.upper), p.upper, 10.0)
        pts = lo + rng.uniform(0, 1, (7, p.n)) * (hi - lo)
        ev = p.evaluate(pts)
        assert ev.fun.shape == (7,) and isinstance(ev.fun, np.ndarray), name
        P = p.parameter_vector().reshape(-1, 1)
        grad, jac = p.lowering.derivatives("numpy")(pts.T.copy(), P)
        assert np.shape(grad) == (p.n, 7) and isinstance(grad, np.ndarray), name
    assert "torch" not in sys.modules
    print("OK", len(problems))
''')

def test_no_torch_import_on_the_numpy_path():
    env = dict(os.environ)
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "src")
    env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().splitlines()[-1] == "OK 10"
