"""Example 2 of the original experiment: a quadratic maximized over a nonconvex set.

    maximize  x^2 + 2y^2 + 3z^2 + 4xy - 5yz
    s.t.      x >= 1,  3 < y <= 7,  z < 0,  x + y + z >= 3,  x^2 + z^2 <= 10

True optimum: 263.1739479256 at (1.6496678, 7, -2.6978874).
Run:  python examples/blog_example2.py
"""

import sympy as sp

import constropt

x, y, z = sp.symbols("x y z")
f = x**2 + 2 * y**2 + 3 * z**2 + 4 * x * y - 5 * y * z
constraints = [x >= 1, y > 3, y <= 7, z < 0, x + y + z >= 3, x**2 + z**2 <= 10]

if __name__ == "__main__":
    # x and z have no bound on one side: constropt searches a default box and says so.
    res = constropt.solve(f, constraints, maximize=True, device="cpu", seed=0,
                          bounds={x: (None, 25), z: (-25, None)}, cross_check=True)
    print(res)
    print()
    print("f at res.x, evaluated by sympy:", f.subs(res.x))
    print()
    print(res.cross_check.table())
