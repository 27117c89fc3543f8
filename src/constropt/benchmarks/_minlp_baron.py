"""MINLPLib instances from the BARON book and Gupta and Ravindran's set.

st_e27, st_e38, st_e40 (Tawarmalani and Sahinidis 2002, instances misc/e27, e38, e40)
and nvs01, nvs03, nvs21 (Gupta and Ravindran 1985, as MINLPLib's ``nvs`` instances),
transcribed like the Floudas instances of :mod:`._minlp`.  Decimal coefficients are
kept exactly as the models print them (``sp.Rational("0.14142135")``, not a rounded
double, and not the constant they approximate: st_e40's ``1.4142135`` is not
``sqrt(2)``, so its optimum is 30.4142135, not 30.41421356...).
"""

from __future__ import annotations

import sympy as sp

from ._base import BenchmarkProblem, register
from ._cec2020_base import variables
from ._minlp import minlp

BARON_BOOK = (
    "Tawarmalani, M. and Sahinidis, N. V. (2002). Convexification and Global "
    "Optimization in Continuous and Mixed-Integer Nonlinear Programming. Kluwer"
)
GUPTA_1985 = (
    "Gupta, O. K. and Ravindran, A. (1985). Branch and bound experiments in convex "
    "nonlinear integer programming. Management Science 31(12): 1533-1546"
)

#: st_e40's allowed member areas: each integer is a root of a degree-7 product.
TRUSS_AREAS = (1, 2, 3, 5, 8, 10, 12)


def _d(text: str) -> sp.Rational:
    """A decimal coefficient of a model, exactly."""
    return sp.Rational(text)


@register("st_e27")
def st_e27() -> BenchmarkProblem:
    """st_e27: 2 binaries switching 2 continuous variables, a concave objective."""
    x = variables(4, integer=(1, 2))
    b1, b2, x3, x4 = x
    c = [
        -x3 + 3 * x4 - 5 <= 0,
        2 * x3 - x4 - 5 <= 0,
        -2 * x3 + x4 <= 0,
        x3 - 3 * x4 <= 0,
        -6 * b1 + x3 <= 0,
        -5 * b2 + x4 <= 0,
    ]
    f = 4 * x3 - x3**2 - x4**2 + 2 * x4 + 2 * b1 + 2 * b2 + 2
    return minlp("st_e27", f, c, x, [(0, 1), (0, 1), (0, 6), (0, 5)], 2.0, [0, 0, 0, 0],
                 how="the objective is concave, so its minimum over each binary choice "
                     "is at a vertex of the polytope; the origin (b = 0) gives 2.",
                 origin=BARON_BOOK + ", instance misc/e27", kind="polynomial")


@register("st_e38")
def st_e38() -> BenchmarkProblem:
    """st_e38: Sandgren's pressure vessel with whole sixteenth-inch plates."""
    x = variables(4, integer=(1, 2))
    i1, i2, x3, x4 = x
    pi = _d("3.1415927")
    c = [
        -_d("0.0625") * i1 + _d("0.0193") * x3 <= 0,
        -_d("0.0625") * i2 + _d("0.00954") * x3 <= 0,
        1296000 - pi * (x3**2 * x4 + _d("1.33333333333333") * x3**3) <= 0,
    ]
    f = (_d("0.0389") * i1 * x3 * x4 + _d("0.1111312") * i2 * x3**2
         + _d("0.012348046875") * i1**2 * x4 + _d("0.0775") * i1**2 * x3)
    ranges = [(18, 100), (10, 100), (40, 80), (20, 60)]
    x_star = [18, 10, 58.29015544041451, 43.6926544452135]
    return minlp("st_e38", f, c, x, ranges, 7197.72714852434, x_star,
                 how="enumeration of the plate thicknesses i1, i2 (sixteenths of an inch) "
                     "with a one-dimensional minimization over the radius x3, the length "
                     "x4 following from the volume constraint (g3 active): i = (18, 10), "
                     "x3 = 11250/193 (g1 active).",
                 note="MINLPLib prints 7197.727149. This is Sandgren's original form "
                      "(Sandgren, E. (1990), J. Mech. Design 112: 223-229); "
                      "'pressure_vessel' is the Kannan and Kramer form.",
                 origin=BARON_BOOK + ", instance misc/e38", kind="polynomial")


@register("st_e40")
def st_e40() -> BenchmarkProblem:
    """st_e40: a three-bar truss with areas from a discrete set (product equalities)."""
    x = variables(4, integer=(1, 2, 3))
    i1, i2, i3, x4 = x

    def member(v):
        return sp.Eq(sp.Mul(*[v - a for a in TRUSS_AREAS]), 0)

    c = [
        sp.Eq(-_d("0.15") * i1 * i2 - _d("0.14142135") * i2 * i3 - _d("0.1319") * i1 * i3
              + x4, 0),
        _d("1.7317") * i2 + _d("1.03366") * i3 - x4 <= 0,
        _d("0.634") * i1 + _d("2.828") * i3 - x4 <= 0,
        _d("0.5") * i1 - 2 * i2 - x4 <= 0,
        -_d("0.5") * i1 + 2 * i2 - x4 <= 0,
        member(i1), member(i2), member(i3),
    ]
    f = 2 * i1 + i2 + _d("1.4142135") * i3
    ranges = [(1, 12), (1, 12), (1, 12), (0, 61)]
    return minlp("st_e40", f, c, x, ranges, 30.4142135, [12, 5, 1, 11.28990675],
                 how="enumeration of the 343 triples of allowed areas {1, 2, 3, 5, 8, 10, "
                     "12} with x4 from e1 (52 are feasible): i = (12, 5, 1), x4 = "
                     "11.28990675.",
                 note="The model leaves x4 free; e1 gives 0.42 <= x4 <= 60.96 on the "
                      "integer box, hence [0, 61]. Shin, D. K., Gurdal, Z. and Griffin, "
                      "O. H. (1990), Eng. Optim. 16: 29-42.",
                 origin=BARON_BOOK + ", instance misc/e40", kind="polynomial")


@register("nvs01")
def nvs01() -> BenchmarkProblem:
    """nvs01: 2 integers and 1 continuous variable, a square-root equality."""
    x = variables(3, integer=(1, 2))
    i1, i2, x3 = x
    root = sp.sqrt(900 + i1**2)
    c = [
        sp.Eq(_d("420.169404664517") * root - x3 * i1 * i2, 0),
        x3 - _d("296087.631843") * (_d("0.01") + _d("0.0625") * i2**2) / (7200 + i1**2)
        <= 0,
    ]
    return minlp("nvs01", _d("0.04712385") * i2 * root, c, x,
                 [(0, 200), (0, 200), (0, 100)], 12.469668821568208, [23, 7, 98.65399204250414],
                 how="enumeration of i1, i2 in [1, 200] with x3 from the equality: "
                     "i = (23, 7), x3 = 420.169404664517 * sqrt(1429) / 161.",
                 origin=GUPTA_1985)


@register("nvs03")
def nvs03() -> BenchmarkProblem:
    """nvs03: a pure integer quadratic with a parabolic constraint."""
    x = variables(2, integer=(1, 2))
    i1, i2 = x
    c = [
        _d("0.1") * i1**2 - i2 <= 0,
        _d("0.333333333333333") * i1 + i2 - _d("4.5") <= 0,
    ]
    return minlp("nvs03", (i1 - 8) ** 2 + (i2 - 2) ** 2, c, x, [(0, 200), (0, 200)], 16.0,
                 [4, 2], how="enumeration of the integer box.", origin=GUPTA_1985,
                 kind="polynomial")


@register("nvs21")
def nvs21() -> BenchmarkProblem:
    """nvs21: 2 integers and 1 continuous variable, both constraints active."""
    x = variables(3, integer=(1, 2))
    i1, i2, x3 = x
    c = [
        i1**2 * i2 - 675 <= 0,
        _d("0.1") * i1**2 * x3**2 - _d("0.419") <= 0,
    ]
    return minlp("nvs21", -_d("0.00201") * i1**4 * i2 * x3**2, c, x,
                 [(0, 200), (0, 200), (0, 0.2)], -5.6847825,
                 [15, 3, 0.1364632632697248],
                 how="enumeration of i1, i2 with x3 as large as g2 and its bound allow: "
                     "i = (15, 3) (g1 active: 675 = 15^2 * 3), x3 = sqrt(4.19)/15 "
                     "(g2 active).",
                 origin=GUPTA_1985, kind="polynomial")
