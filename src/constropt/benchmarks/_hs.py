"""Classic nonlinear programming test problems of Hock and Schittkowski (1981).

Problems that the CEC 2006 set does not already contain (HS083 is G04, HS100 G09,
HS106 G10, HS108 G18, HS112 G14, HS113 G07, HS063 close to G15, ...): HS035, HS040,
HS043, HS044, HS062, HS064, HS065, HS066, HS071, HS073, HS076, HS104, HS107 and HS111
(HS040, HS107 and HS111: equality systems of 3, 6 and 3 equations). Inequalities are stated
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


@register("HS040")
def hs040() -> BenchmarkProblem:
    """HS040: -x1 x2 x3 x4 on 3 polynomial equalities, 4 variables."""
    x = variables(4)
    x1, x2, x3, x4 = x
    h = [sp.Eq(x1**3 + x2**2 - 1, 0), sp.Eq(x1**2 * x4 - x3, 0), sp.Eq(x4**2 - x2, 0)]
    x_star = [2 ** (-1 / 3), 2 ** (-1 / 2), 2 ** (-11 / 12), 2 ** (-1 / 4)]
    return hs(40, -x1 * x2 * x3 * x4, h, x, [(-10, 10)] * 4, -0.25, x_star,
              kind="polynomial",
              boxes="none in the book; [-10, 10] added (on the equalities f = -(1 - t) t "
                    "with t = x4**4, so -1/4 is the global minimum in any box holding x*).",
              how="exactly (2**(-1/3), 2**(-1/2), 2**(-11/12), 2**(-1/4)), f* = -1/4; "
                  "x = 0 except x1 = 1 is a stationary point with f = 0.")


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


@register("HS107")
def hs107() -> BenchmarkProblem:
    """HS107: static power scheduling, 9 variables, 6 trigonometric equalities."""
    x = variables(9)
    x1, x2, x3, x4, x5, x6, x7, x8, x9 = x
    a = sp.Rational(484, 10) / sp.Rational(50176, 1000)
    c, d = a * sp.sin(sp.Rational(1, 4)), a * sp.cos(sp.Rational(1, 4))
    y1, y2, y3, y4 = sp.sin(x8), sp.cos(x8), sp.sin(x9), sp.cos(x9)
    y5, y6 = sp.sin(x8 - x9), sp.cos(x8 - x9)
    f = 3000 * x1 + 1000 * x1**3 + 2000 * x2 + sp.Rational(666667, 1000) * x2**3
    h = [
        sp.Rational(2, 5) - x1 + 2 * c * x5**2 - x5 * x6 * (d * y1 + c * y2)
        - x5 * x7 * (d * y3 + c * y4),
        sp.Rational(2, 5) - x2 + 2 * c * x6**2 + x5 * x6 * (d * y1 - c * y2)
        + x6 * x7 * (d * y5 - c * y6),
        sp.Rational(4, 5) + 2 * c * x7**2 + x5 * x7 * (d * y3 - c * y4)
        - x6 * x7 * (d * y5 + c * y6),
        sp.Rational(1, 5) - x3 + 2 * d * x5**2 + x5 * x6 * (c * y1 - d * y2)
        + x5 * x7 * (c * y3 - d * y4),
        sp.Rational(1, 5) - x4 + 2 * d * x6**2 - x5 * x6 * (c * y1 + d * y2)
        - x6 * x7 * (c * y5 + d * y6),
        -sp.Rational(337, 1000) + 2 * d * x7**2 - x5 * x7 * (c * y3 + d * y4)
        + x6 * x7 * (c * y5 - d * y6),
    ]
    v = (0.90909, 1.0909)
    x_star = [0.66701276231532787, 1.0223847170508323, 0.22828714466751984,
              0.18482175612975046, 1.0909, 1.0909, 1.0690360031428222,
              0.10661062240656406, -0.33878761906990654]
    return hs(107, f, [sp.Eq(e, 0) for e in h], x,
              [(0, 10), (0, 10), (-10, 10), (-10, 10), v, v, v, (-10, 10), (-10, 10)],
              5055.0118035438, x_star,
              boxes="x1, x2 >= 0 and 0.90909 <= x5, x6, x7 <= 1.0909 from the book; "
                    "x1, x2 <= 10 and |x3|, |x4| <= 10 added (the equalities give "
                    "|x1|, ..., |x4| < 5 on the box of x5, x6, x7); the angles x8, x9 "
                    "are free in the book, [-10, 10] added (f and h are 2 pi-periodic "
                    "in them).",
              how="the book's (f* = 5055.01180339, with the coefficient 666.667 as "
                  "printed), refined by Newton's method on the KKT system at 50 "
                  "digits with x5 = x6 = 1.0909 active.")


@register("HS111")
def hs111() -> BenchmarkProblem:
    """HS111: chemical equilibrium in exponential variables, 10 variables, 3 equalities."""
    x = variables(10)
    cc = ["-6.089", "-17.164", "-34.054", "-5.914", "-24.721", "-14.986", "-24.1",
          "-10.708", "-26.662", "-22.179"]
    e = [sp.exp(v) for v in x]
    total = sp.log(sum(e))
    f = sum(ej * (sp.Rational(cj) + xj - total) for ej, cj, xj in zip(e, cc, x))
    h = [
        sp.Eq(e[0] + 2 * e[1] + 2 * e[2] + e[5] + e[9] - 2, 0),
        sp.Eq(e[3] + 2 * e[4] + e[5] + e[6] - 1, 0),
        sp.Eq(e[2] + e[6] + e[7] + 2 * e[8] + e[9] - 1, 0),
    ]
    x_star = [-3.2023115885512144, -1.9123665970809809, -0.24442674775038383,
              -6.5611772716583763, -0.72309796329530466, -7.2742322801881428,
              -3.5972374223277792, -4.0203167306908509, -3.2883768813602538,
              -2.3343717392206173]
    return hs(111, f, h, x, [(-100, 100)] * 10, -47.761090859365864, x_star,
              boxes="the book's.",
              how="the book's (f* = -47.76109086), refined by Newton's method on the "
                  "KKT system at 50 digits. CEC 2006's G14 is the same problem in the "
                  "variables exp(x).")
