"""Example 3 of the original experiment: a trigonometric objective.

    minimize  sin(x) + x^2 - 2cos(y) + y^2 + z^2
    s.t.      x >= 0,  0 <= y <= pi,  z <= 5,  x + z >= 1,  cos(y) + z >= 0.5

True optimum: -1.1277249018 at (0.2582932, 0, 0.7417068).
Run:  python examples/blog_example3.py
"""

import sympy as sp

import constropt

x, y, z = sp.symbols("x y z")
f = sp.sin(x) + x**2 - 2 * sp.cos(y) + y**2 + z**2
constraints = [x >= 0, y >= 0, y <= sp.pi, z <= 5, x + z >= 1, sp.cos(y) + z >= 0.5]

if __name__ == "__main__":
    res = constropt.solve(f, constraints, device="cpu", seed=0,
                          bounds={x: (None, 25), z: (-25, None)}, cross_check=True)
    print(res)
    print()
    print("f at res.x, evaluated by sympy:", f.subs(res.x))
    print()
    print(res.cross_check.table())
