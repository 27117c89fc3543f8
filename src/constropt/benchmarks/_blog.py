"""The two constrained examples of the original experiment (see the project's
BASELINES): a quadratic maximized over a nonconvex set and a trigonometric objective.

Both use the experiment's search box ``[-25, 25]`` for every variable and state their
constraints as the experiment wrote them (``x >= 1``, ``3 < y``), not in the
collection's ``g(x) <= 0`` form; their optima
were computed for this project and confirmed by multistart local search.
"""

from __future__ import annotations

import sympy as sp

from ._base import BenchmarkProblem, register

_SOURCE = ("Example from a 2023 blog post on compiling NumPy genetic-algorithm fitness "
           "functions with torch.compile; optimum computed by multistart SLSQP and "
           "confirmed by constropt's cross-check.")


@register("blog_example2")
def blog_example2() -> BenchmarkProblem:
    """Maximize x^2 + 2y^2 + 3z^2 + 4xy - 5yz; x >= 1, 3 < y <= 7, z < 0, x + y + z >= 3,
    x^2 + z^2 <= 10 (strict inequalities enforced strictly)."""
    x, y, z = sp.symbols("x y z", real=True)
    box = (-25, 25)
    return BenchmarkProblem(
        name="blog_example2",
        objective=x**2 + 2 * y**2 + 3 * z**2 + 4 * x * y - 5 * y * z,
        constraints=(x >= 1, y > 3, y <= 7, z < 0, x + y + z >= 3, x**2 + z**2 <= 10),
        variables=(x, y, z), bounds={x: box, y: box, z: box},
        f_star=263.1739479256, x_star=(1.6496678, 7.0, -2.6978874),
        maximize=True, source=_SOURCE, tags=("blog", "nonconvex", "strict"), x_star_tol=1e-6)


@register("blog_example3")
def blog_example3() -> BenchmarkProblem:
    """Minimize sin(x) + x^2 - 2cos(y) + y^2 + z^2; x >= 0, 0 <= y <= pi, z <= 5,
    x + z >= 1, cos(y) + z >= 0.5."""
    x, y, z = sp.symbols("x y z", real=True)
    box = (-25, 25)
    return BenchmarkProblem(
        name="blog_example3",
        objective=sp.sin(x) + x**2 - 2 * sp.cos(y) + y**2 + z**2,
        constraints=(x >= 0, y >= 0, y <= sp.pi, z <= 5, x + z >= 1,
                     sp.cos(y) + z >= sp.Rational(1, 2)),
        variables=(x, y, z), bounds={x: box, y: box, z: box},
        f_star=-1.1277249018, x_star=(0.2582932, 0.0, 0.7417068),
        source=_SOURCE, tags=("blog", "trigonometric"), x_star_tol=1e-6)
