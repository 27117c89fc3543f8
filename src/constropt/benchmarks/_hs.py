"""Classic nonlinear programming test problems of Hock and Schittkowski (1981).

Problems that the CEC 2006 set does not already contain (HS083 is G04, HS100 G09,
HS106 G10, HS108 G18, HS113 G07, HS063 close to G15, ...): HS035, HS043, HS044,
HS062, HS064, HS065, HS066, HS071, HS073, HS076 and HS104. Inequalities are stated
as ``g(x) <= 0`` (the book writes ``c(x) >= 0``; ``g = -c``), equalities as
``Eq(h(x), 0)``, in the book's order. The book allows unbounded variables; a
finite box is needed here, and each record's ``source`` says which bounds come from
the book, which are implied by the constraints and which were added (always wide
enough not to change the optimum). ``f_star`` and ``x_star`` are the book's, given
to the digits it prints and, where the active set determines it, recomputed at 40
digits. Equalities are held to ``|h| <= 1e-6`` (``eq_tol``).
"""

from __future__ import annotations

import sympy as sp

from ._base import BenchmarkProblem, register
from ._cec2020_base import variables

BOOK = (
    "Hock, W. and Schittkowski, K. (1981). Test Examples for Nonlinear Programming "
    "Codes. Lecture Notes in Economics and Mathematical Systems 187, Springer"
)
HS_EQ_TOL = 1e-6


def hs(number, objective, constraints, x, ranges, f_star, x_star, *, boxes, how="",
       kind="nonlinear", x_star_tol=1e-6) -> BenchmarkProblem:
    """Assemble the record of Hock-Schittkowski problem `number`.

    Parameters
    ----------
    number : int
        The problem's number in the book.
    objective, constraints, x
        As in :class:`BenchmarkProblem`.
    ranges : sequence of tuple
        ``(lo, hi)`` per variable.
    f_star : float
        The book's optimal value.
    x_star : sequence of float
        The book's solution.
    boxes : str
        Where the bounds come from.
    how : str, optional
        How `x_star` was refined.
    kind : str, optional
        The objective's kind tag.
    x_star_tol : float, optional
        See :class:`BenchmarkProblem`.

    Returns
    -------
    BenchmarkProblem
        The record.
    """
    constraints = tuple(constraints)
    name = f"HS{number:03d}"
    tags = ["hock-schittkowski", kind]
    if any(isinstance(c, sp.Equality) for c in constraints):
        tags.append("equality")
    if any(not isinstance(c, sp.Equality) for c in constraints):
        tags.append("inequality")
    text = (f"{BOOK}, problem {number}: definition, f(x*) and x*. Bounds: {boxes}")
    if how:
        text += f" x*: {how}"
    return BenchmarkProblem(
        name=name, objective=objective, constraints=constraints, variables=tuple(x),
        bounds={v: r for v, r in zip(x, ranges)}, f_star=float(f_star),
        x_star=tuple(float(v) for v in x_star), source=text, tags=tuple(tags),
        eq_tol=HS_EQ_TOL, x_star_tol=x_star_tol)


@register("HS035")
def hs035() -> BenchmarkProblem:
    """HS035: a convex quadratic in 3 variables with one linear inequality."""
    x = variables(3)
    x1, x2, x3 = x
    f = (9 - 8 * x1 - 6 * x2 - 4 * x3 + 2 * x1**2 + 2 * x2**2 + x3**2 + 2 * x1 * x2
         + 2 * x1 * x3)
    g = [x1 + x2 + 2 * x3 - 3 <= 0]
    return hs(35, f, g, x, [(0, 3), (0, 3), (0, 1.5)], 1 / 9,
              [4 / 3, 7 / 9, 4 / 9], kind="quadratic",
              boxes="x >= 0 from the book; the upper bounds are implied by g1.",
              how="exactly (4/3, 7/9, 4/9), f* = 1/9.")


@register("HS043")
def hs043() -> BenchmarkProblem:
    """HS043: the Rosen-Suzuki problem, 4 variables, 3 quadratic inequalities."""
    x = variables(4)
    x1, x2, x3, x4 = x
    f = x1**2 + x2**2 + 2 * x3**2 + x4**2 - 5 * x1 - 5 * x2 - 21 * x3 + 7 * x4
    g = [
        x1**2 + x2**2 + x3**2 + x4**2 + x1 - x2 + x3 - x4 - 8 <= 0,
        x1**2 + 2 * x2**2 + x3**2 + 2 * x4**2 - x1 - x4 - 10 <= 0,
        2 * x1**2 + x2**2 + x3**2 + 2 * x1 - x2 - x4 - 5 <= 0,
    ]
    return hs(43, f, g, x, [(-10, 10)] * 4, -44.0, [0, 1, 2, -1], kind="quadratic",
              boxes="none in the book; [-10, 10] added (g1 confines x to a ball of "
                    "radius 3.5).",
              how="exactly (0, 1, 2, -1), f* = -44.")


@register("HS044")
def hs044() -> BenchmarkProblem:
    """HS044: an indefinite quadratic in 4 variables with 6 linear inequalities."""
    x = variables(4)
    x1, x2, x3, x4 = x
    f = x1 - x2 - x3 - x1 * x3 + x1 * x4 + x2 * x3 - x2 * x4
    g = [
        x1 + 2 * x2 - 8 <= 0,
        4 * x1 + x2 - 12 <= 0,
        3 * x1 + 4 * x2 - 12 <= 0,
        2 * x3 + x4 - 8 <= 0,
        x3 + 2 * x4 - 8 <= 0,
        x3 + x4 - 5 <= 0,
    ]
    return hs(44, f, g, x, [(0, 3), (0, 3), (0, 4), (0, 4)], -15.0, [0, 3, 0, 4],
              kind="quadratic",
              boxes="x >= 0 from the book; the upper bounds are implied by g2, g3, g4, "
                    "g5.",
              how="exactly (0, 3, 0, 4), a vertex; the problem has several local minima.")


@register("HS062")
def hs062() -> BenchmarkProblem:
    """HS062: a logarithmic objective on the simplex in 3 variables."""
    x = variables(3)
    x1, x2, x3 = x
    c = sp.Rational(3, 100)
    f = -32.174 * (255 * sp.log((x1 + x2 + x3 + c) / (0.09 * x1 + x2 + x3 + c))
                   + 280 * sp.log((x2 + x3 + c) / (0.07 * x2 + x3 + c))
                   + 290 * sp.log((x3 + c) / (0.13 * x3 + c)))
    h = [sp.Eq(x1 + x2 + x3 - 1, 0)]
    return hs(62, f, h, x, [(0, 1)] * 3, -26272.51448, [0.6178127129300979, 0.3282022092926905,
                                                       0.0539850777772115],
              boxes="the book's.", how="the book's, refined by a local solve.")


@register("HS064")
def hs064() -> BenchmarkProblem:
    """HS064: a posynomial cost in 3 variables with one inequality."""
    x = variables(3)
    x1, x2, x3 = x
    f = 5 * x1 + 50000 / x1 + 20 * x2 + 72000 / x2 + 10 * x3 + 144000 / x3
    g = [4 / x1 + 32 / x2 + 120 / x3 - 1 <= 0]
    return hs(64, f, g, x, [(1e-5, 1000)] * 3, 6299.842428,
              [108.73470777510707, 85.12620827581023, 204.3246032121239],
              boxes="x >= 1e-5 from the book; x <= 1000 added (f > 6299.85 wherever a "
                    "coordinate exceeds 650).",
              how="the book's, refined by a local solve.")


@register("HS065")
def hs065() -> BenchmarkProblem:
    """HS065: a quadratic in 3 variables inside a ball."""
    x = variables(3)
    x1, x2, x3 = x
    f = (x1 - x2) ** 2 + (x1 + x2 - 10) ** 2 / 9 + (x3 - 5) ** 2
    g = [x1**2 + x2**2 + x3**2 - 48 <= 0]
    return hs(65, f, g, x, [(-4.5, 4.5), (-4.5, 4.5), (-5, 5)], 0.9535288567,
              [3.6504617298113335, 3.6504617298113335, 4.620417548054038], kind="quadratic",
              boxes="the book's.", how="the book's, refined by a local solve.")


@register("HS066")
def hs066() -> BenchmarkProblem:
    """HS066: a linear objective under two exponential inequalities."""
    x = variables(3)
    x1, x2, x3 = x
    g = [sp.exp(x1) - x2 <= 0, sp.exp(x2) - x3 <= 0]
    return hs(66, sp.Rational(1, 5) * x3 - sp.Rational(4, 5) * x1, g, x,
              [(0, 100), (0, 100), (0, 10)], 0.5181632741,
              [0.1841264795609298, 1.2021678631446138, 3.327322289151424],
              boxes="the book's.", how="the book's, refined by a local solve.")


@register("HS071")
def hs071() -> BenchmarkProblem:
    """HS071: a cubic in 4 variables with a product inequality and a sphere equality."""
    x = variables(4)
    x1, x2, x3, x4 = x
    f = x1 * x4 * (x1 + x2 + x3) + x3
    c = [25 - x1 * x2 * x3 * x4 <= 0, sp.Eq(x1**2 + x2**2 + x3**2 + x4**2 - 40, 0)]
    return hs(71, f, c, x, [(1, 5)] * 4, 17.0140173,
              [1.0, 4.742999662281026, 3.821149951500399, 1.379408297695748], kind="polynomial",
              boxes="the book's.", how="the book's, refined by a local solve.")


@register("HS073")
def hs073() -> BenchmarkProblem:
    """HS073: cattle feed, 4 variables with a chance constraint and a balance."""
    x = variables(4)
    x1, x2, x3, x4 = x
    f = 24.55 * x1 + 26.75 * x2 + 39 * x3 + 40.50 * x4
    c = [
        5 - 2.3 * x1 - 5.6 * x2 - 11.1 * x3 - 1.3 * x4 <= 0,
        21 + 1.645 * sp.sqrt(0.28 * x1**2 + 0.19 * x2**2 + 20.5 * x3**2 + 0.62 * x4**2)
        - 12 * x1 - 11.9 * x2 - 41.8 * x3 - 52.1 * x4 <= 0,
        sp.Eq(x1 + x2 + x3 + x4 - 1, 0),
    ]
    return hs(73, f, c, x, [(0, 1)] * 4, 29.894378, [0.6355215686352989, 0.0, 0.31270188075136546,
                                                 0.051776550613268996],
              boxes="x >= 0 from the book; x <= 1 implied by the equality.",
              how="the book's (x2 printed as -0.12e-11, here 0), refined by a local solve; f* "
                  "is printed to 8 digits.",
              kind="linear")


@register("HS076")
def hs076() -> BenchmarkProblem:
    """HS076: a convex quadratic in 4 variables with 3 linear inequalities."""
    x = variables(4)
    x1, x2, x3, x4 = x
    f = (x1**2 + x2**2 / 2 + x3**2 + x4**2 / 2 - x1 * x3 + x3 * x4 - x1 - 3 * x2 + x3
         - x4)
    g = [
        x1 + 2 * x2 + x3 + x4 - 5 <= 0,
        3 * x1 + x2 + 2 * x3 - x4 - 4 <= 0,
        sp.Rational(3, 2) - x2 - 4 * x3 <= 0,
    ]
    return hs(76, f, g, x, [(0, 5), (0, 2.5), (0, 2.5), (0, 5)], -4.6818181818181818,
              [3 / 11, 23 / 11, 0, 6 / 11], kind="quadratic",
              boxes="x >= 0 from the book; the upper bounds are implied by g1.",
              how="exactly (3/11, 23/11, 0, 6/11), f* = -103/22.")


@register("HS104")
def hs104() -> BenchmarkProblem:
    """HS104: a reactor design posynomial in 8 variables, 6 inequalities."""
    x = variables(8)
    x1, x2, x3, x4, x5, x6, x7, x8 = x
    e = 0.67
    f = 0.4 * x1**e * x7 ** (-e) + 0.4 * x2**e * x8 ** (-e) + 10 - x1 - x2
    g = [
        0.0588 * x5 * x7 + 0.1 * x1 - 1 <= 0,
        0.0588 * x6 * x8 + 0.1 * x1 + 0.1 * x2 - 1 <= 0,
        4 * x3 / x5 + 2 / (x3**0.71 * x5) + 0.0588 * x7 / x3**1.3 - 1 <= 0,
        4 * x4 / x6 + 2 / (x4**0.71 * x6) + 0.0588 * x8 / x4**1.3 - 1 <= 0,
        0.1 - f <= 0,
        f - 4.2 <= 0,
    ]
    x_star = [6.465113902172917, 2.232708787868453, 0.6673974906055924,
              0.5957564159031848, 5.932675699257311, 5.527234562293325, 1.0133220414321504,
              0.40066822510886146]
    return hs(104, f, g, x, [(0.1, 10)] * 8, 3.9511634396, x_star,
              boxes="the book's.", how="the book's, refined by a local solve.")
