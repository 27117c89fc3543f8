"""CEC 2006 constrained suite, problems G13 to G24 (G20 left out).

Same report, conventions and cross-checks as
:mod:`constropt.benchmarks._cec2006`. G20 is left out: its published x* is
infeasible and no feasible point is known (see the package docstring).
"""

from __future__ import annotations

import sympy as sp

from ._base import BenchmarkProblem, exclude, register
from ._cec2006 import HIMMELBLAU, HOCK_SCHITTKOWSKI, cec, total, xs

EPPERLY = (
    "Epperly, T. G. W. Global optimization test problems with solutions "
    "(the report's reference for g21 and g22)"
)

exclude(
    "G20",
    "CEC 2006 g20 has no known feasible solution; the report's x* (f = 0.2049794002) "
    "violates its inequalities, so it cannot serve as a verified optimum.",
)


@register("G13")
def g13() -> BenchmarkProblem:
    """G13: an exponential of a product of 5 variables, 3 nonlinear equalities."""
    x = xs(5)
    x1, x2, x3, x4, x5 = x
    f = sp.exp(x1 * x2 * x3 * x4 * x5)
    h = [
        sp.Eq(x1**2 + x2**2 + x3**2 + x4**2 + x5**2 - 10, 0),
        sp.Eq(x2 * x3 - 5 * x4 * x5, 0),
        sp.Eq(x1**3 + x2**3 + 1, 0),
    ]
    ranges = [(-2.3, 2.3), (-2.3, 2.3), (-3.2, 3.2), (-3.2, 3.2), (-3.2, 3.2)]
    x_star = [-1.71714224003, 1.59572124049468, 1.8272502406271,
              -0.763659881912867, -0.76365986736498]
    return cec("G13", f, h, x, ranges, 0.053941514041898, x_star,
               where="pp. 6-7", original=HOCK_SCHITTKOWSKI, kind="nonlinear",
               note="Best known; x* meets the equalities within the tolerance 1e-4.")


@register("G14")
def g14() -> BenchmarkProblem:
    """G14: a chemical-equilibrium free energy in 10 variables, 3 linear equalities."""
    x = xs(10)
    x1, x2, x3, x4, x5, x6, x7, x8, x9, x10 = x
    c = [-6.089, -17.164, -34.054, -5.914, -24.721, -14.986, -24.1, -10.708, -26.662,
         -22.179]
    s = total(x)
    f = total(v * (ci + sp.log(v / s)) for v, ci in zip(x, c))
    h = [
        sp.Eq(x1 + 2 * x2 + 2 * x3 + x6 + x10 - 2, 0),
        sp.Eq(x4 + 2 * x5 + x6 + x7 - 1, 0),
        sp.Eq(x3 + x7 + x8 + 2 * x9 + x10 - 1, 0),
    ]
    x_star = [0.0406684113216282, 0.147721240492452, 0.783205732104114,
              0.00141433931889084, 0.485293636780388, 0.000693183051556082,
              0.0274052040687766, 0.0179509660214818, 0.0373268186859717,
              0.0968844604336845]
    return cec("G14", f, h, x, [(1e-12, 10)] * 10, -47.7648884594915, x_star,
               where="p. 7", original=HIMMELBLAU, kind="nonlinear",
               note="Best known. The report's bounds are 0 < xi <= 10, open at 0 "
                    "where the logarithm is undefined; the box here closes them at "
                    "1e-12.")


@register("G15")
def g15() -> BenchmarkProblem:
    """G15: a quadratic in 3 variables on a sphere and a plane (2 equalities)."""
    x = xs(3)
    x1, x2, x3 = x
    f = 1000 - x1**2 - 2 * x2**2 - x3**2 - x1 * x2 - x1 * x3
    h = [
        sp.Eq(x1**2 + x2**2 + x3**2 - 25, 0),
        sp.Eq(8 * x1 + 14 * x2 + 7 * x3 - 56, 0),
    ]
    x_star = [3.51212812611795133, 0.216987510429556135, 3.55217854929179921]
    return cec("G15", f, h, x, [(0, 10)] * 3, 961.715022289961, x_star,
               where="p. 7", original=HIMMELBLAU, kind="quadratic",
               note="Best known; x* meets the equalities within the tolerance 1e-4.")


@register("G16")
def g16() -> BenchmarkProblem:
    """G16: a process design model in 5 variables through 17 intermediate quantities."""
    x = xs(5)
    x1, x2, x3, x4, x5 = x
    y, c = {}, {}  # the report's y1..y17 and c1..c17, 1-indexed
    y[1] = x2 + x3 + 41.6
    c[1] = 0.024 * x4 - 4.62
    y[2] = 12.5 / c[1] + 12
    c[2] = 0.0003535 * x1**2 + 0.5311 * x1 + 0.08705 * y[2] * x1
    c[3] = 0.052 * x1 + 78 + 0.002377 * y[2] * x1
    y[3] = c[2] / c[3]
    y[4] = 19 * y[3]
    c[4] = 0.04782 * (x1 - y[3]) + 0.1956 * (x1 - y[3]) ** 2 / x2 + 0.6376 * y[4] + 1.594 * y[3]
    c[5] = 100 * x2
    c[6] = x1 - y[3] - y[4]
    c[7] = 0.950 - c[4] / c[5]
    y[5] = c[6] * c[7]
    y[6] = x1 - y[5] - y[4] - y[3]
    c[8] = (y[5] + y[4]) * 0.995
    y[7] = c[8] / y[1]
    y[8] = c[8] / 3798
    c[9] = y[7] - 0.0663 * y[7] / y[8] - 0.3153
    y[9] = 96.82 / c[9] + 0.321 * y[1]
    y[10] = 1.29 * y[5] + 1.258 * y[4] + 2.29 * y[3] + 1.71 * y[6]
    y[11] = 1.71 * x1 - 0.452 * y[4] + 0.580 * y[3]
    c[10] = 12.3 / 752.3
    c[11] = (1.75 * y[2]) * (0.995 * x1)
    c[12] = 0.995 * y[10] + 1998
    y[12] = c[10] * x1 + c[11] / c[12]
    y[13] = c[12] - 1.75 * y[2]
    y[14] = 3623 + 64.4 * x2 + 58.4 * x3 + 146312 / (y[9] + x5)
    c[13] = 0.995 * y[10] + 60.8 * x2 + 48 * x4 - 0.1121 * y[14] - 5095
    y[15] = y[13] / c[13]
    y[16] = 148000 - 331000 * y[15] + 40 * y[13] - 61 * y[15] * y[13]
    c[14] = 2324 * y[10] - 28740000 * y[2]
    y[17] = 14130000 - 1328 * y[10] - 531 * y[11] + c[14] / c[12]
    c[15] = y[13] / y[15] - y[13] / 0.52
    c[16] = 1.104 - 0.72 * y[15]
    c[17] = y[9] + x5
    f = (0.000117 * y[14] + 0.1365 + 0.00002358 * y[13] + 0.000001502 * y[16]
         + 0.0321 * y[12] + 0.004324 * y[5] + 0.0001 * c[15] / c[16]
         + 37.48 * y[2] / c[12] - 0.0000005843 * y[17])
    g = [
        -y[4] + 0.28 / 0.72 * y[5] <= 0,
        x3 - 1.5 * x2 <= 0,
        3496 * y[2] / c[12] - 21 <= 0,
        110.6 + y[1] - 62212 / c[17] <= 0,
    ]
    # g5..g38: lower and upper limits of y1..y17, the report's order
    limits = [
        (213.1, 405.23), (17.505, 1053.6667), (11.275, 35.03), (214.228, 665.585),
        (7.458, 584.463), (0.961, 265.916), (1.612, 7.046), (0.146, 0.222),
        (107.99, 273.366), (922.693, 1286.105), (926.832, 1444.046), (18.766, 537.141),
        (1072.163, 3247.039), (8961.448, 26844.086), (0.063, 0.386), (71084.33, 140000),
        (2802713, 12146108),
    ]
    for i, (lo, hi) in enumerate(limits, start=1):
        g.append(lo - y[i] <= 0)
        g.append(y[i] - hi <= 0)
    ranges = [(704.4148, 906.3855), (68.6, 288.88), (0, 134.75), (193, 287.0966),
              (25, 84.1988)]
    x_star = [705.174537070090537, 68.5999999999999943, 102.899999999999991,
              282.324931593660324, 37.5841164258054832]
    return cec("G16", f, g, x, ranges, -1.90515525853479, x_star,
               where="pp. 7-10", original=HIMMELBLAU, kind="nonlinear",
               note="Best known. The objective and constraints are written in x "
                    "by substituting the report's chain y1..y17, c1..c17. x2* is "
                    "printed 5.7e-15 below its lower bound 68.6 (double rounding).")


@register("G17")
def g17() -> BenchmarkProblem:
    """G17: a piecewise linear cost in 6 variables with 4 nonlinear equalities."""
    x = xs(6)
    x1, x2, x3, x4, x5, x6 = x
    f1 = sp.Piecewise((30 * x1, x1 < 300), (31 * x1, True))
    f2 = sp.Piecewise((28 * x2, x2 < 100), (29 * x2, x2 < 200), (30 * x2, True))
    f = f1 + f2
    a, b = 1.48477, 1.47588
    h = [
        sp.Eq(-x1 + 300 - x3 * x4 * sp.cos(a - x6) / 131.078
              + 0.90798 * x3**2 * sp.cos(b) / 131.078, 0),
        sp.Eq(-x2 - x3 * x4 * sp.cos(a + x6) / 131.078
              + 0.90798 * x4**2 * sp.cos(b) / 131.078, 0),
        sp.Eq(-x5 - x3 * x4 * sp.sin(a + x6) / 131.078
              + 0.90798 * x4**2 * sp.sin(b) / 131.078, 0),
        sp.Eq(200 - x3 * x4 * sp.sin(a - x6) / 131.078
              + 0.90798 * x3**2 * sp.sin(b) / 131.078, 0),
    ]
    ranges = [(0, 400), (0, 1000), (340, 420), (340, 420), (-1000, 1000), (0, 0.5236)]
    x_star = [201.784467214523659, 99.9999999999999005, 383.071034852773266, 420,
              -10.9076584514292652, 0.0731482312084287128]
    return cec("G17", f, h, x, ranges, 8853.53967480648, x_star,
               where="p. 10", original=HIMMELBLAU, kind="nonlinear",
               extra_tags=("nonsmooth", "discontinuous"),
               note="Best known. f1 = 30 x1 for 0 <= x1 < 300 and 31 x1 for 300 <= x1 "
                    "<= 400; f2 = 28 x2 below 100, 29 x2 below 200, 30 x2 up to 1000 "
                    "(the report writes the last pieces with a strict upper end; the "
                    "bounds include it). Erratum: the report's f(x*) = 8853.53967480648 "
                    "is the value of the organizers' code, which evaluates f1, f2 at the "
                    "right-hand sides of h1, h2; the report's x* gives 8853.5340164 with "
                    "the published f (relative difference 6.4e-7), and later papers "
                    "quote 8853.5338748065.")


@register("G18")
def g18() -> BenchmarkProblem:
    """G18: the area of a hexagon of diameter 1 (negated), 13 inequalities."""
    x = xs(9)
    x1, x2, x3, x4, x5, x6, x7, x8, x9 = x
    f = -sp.Rational(1, 2) * (x1 * x4 - x2 * x3 + x3 * x9 - x5 * x9 + x5 * x8 - x6 * x7)
    g = [
        x3**2 + x4**2 - 1 <= 0,
        x9**2 - 1 <= 0,
        x5**2 + x6**2 - 1 <= 0,
        x1**2 + (x2 - x9) ** 2 - 1 <= 0,
        (x1 - x5) ** 2 + (x2 - x6) ** 2 - 1 <= 0,
        (x1 - x7) ** 2 + (x2 - x8) ** 2 - 1 <= 0,
        (x3 - x5) ** 2 + (x4 - x6) ** 2 - 1 <= 0,
        (x3 - x7) ** 2 + (x4 - x8) ** 2 - 1 <= 0,
        x7**2 + (x8 - x9) ** 2 - 1 <= 0,
        x2 * x3 - x1 * x4 <= 0,
        -x3 * x9 <= 0,
        x5 * x9 <= 0,
        x6 * x7 - x5 * x8 <= 0,
    ]
    ranges = [(-10, 10)] * 8 + [(0, 20)]
    x_star = [-0.657776192427943163, -0.153418773482438542, 0.323413871675240938,
              -0.946257611651304398, -0.657776194376798906, -0.753213434632691414,
              0.323413874123576972, -0.346462947962331735, 0.59979466285217542]
    return cec("G18", f, g, x, ranges, -0.866025403784439, x_star,
               where="p. 11", original=HIMMELBLAU, kind="quadratic",
               note="Best known (-sqrt(3)/2 to the digits printed).")


@register("G19")
def g19() -> BenchmarkProblem:
    """G19: a cubic in 15 variables with 5 nonlinear inequalities (Table 1 data)."""
    x = xs(15)
    # the report's Table 1 (e, c, d, a) and the vector b printed with eq. (40)
    e = [-15, -27, -36, -18, -12]
    cm = [
        [30, -20, -10, 32, -10],
        [-20, 39, -6, -31, 32],
        [-10, -6, 10, -6, -10],
        [32, -31, -6, 39, -20],
        [-10, 32, -10, -20, 30],
    ]
    d = [4, 8, 10, 6, 2]
    a = [
        [-16, 2, 0, 1, 0],
        [0, -2, 0, sp.Rational(2, 5), 2],
        [-sp.Rational(7, 2), 0, 2, 0, 0],
        [0, -2, 0, -4, -1],
        [0, -9, -2, 1, -sp.Rational(14, 5)],
        [2, 0, -4, 0, 0],
        [-1, -1, -1, -1, -1],
        [-1, -2, -3, -2, -1],
        [1, 2, 3, 4, 5],
        [1, 1, 1, 1, 1],
    ]
    b = [-40, -2, -sp.Rational(1, 4), -4, -4, -1, -40, -60, 5, 1]
    u = x[10:]  # x11..x15
    f = (total(cm[i][j] * u[i] * u[j] for i in range(5) for j in range(5))
         + 2 * total(d[j] * u[j] ** 3 for j in range(5))
         - total(b[i] * x[i] for i in range(10)))
    g = [
        -2 * total(cm[i][j] * u[i] for i in range(5)) - 3 * d[j] * u[j] ** 2 - e[j]
        + total(a[i][j] * x[i] for i in range(10)) <= 0
        for j in range(5)
    ]
    x_star = [1.66991341326291344e-17, 3.95378229282456509e-16, 3.94599045143233784,
              1.06036597479721211e-16, 3.2831773458454161, 9.99999999999999822,
              1.12829414671605333e-17, 1.2026194599794709e-17, 2.50706276000769697e-15,
              2.24624122987970677e-15, 0.370764847417013987, 0.278456024942955571,
              0.523838487672241171, 0.388620152510322781, 0.298156764974678579]
    return cec("G19", f, g, x, [(0, 10)] * 15, 32.6555929502463, x_star,
               where="pp. 11-12, Table 1", original=HIMMELBLAU, kind="nonlinear",
               note="Best known; all five constraints are active at x*.")


@register("G21")
def g21() -> BenchmarkProblem:
    """G21: a linear objective in 7 variables, 1 inequality and 5 equalities."""
    x = xs(7)
    x1, x2, x3, x4, x5, x6, x7 = x
    p = sp.Rational(3, 5)
    constraints = [
        -x1 + 35 * x2**p + 35 * x3**p <= 0,
        sp.Eq(-300 * x3 + 7500 * x5 - 7500 * x6 - 25 * x4 * x5 + 25 * x4 * x6 + x3 * x4, 0),
        sp.Eq(100 * x2 + 155.365 * x4 + 2500 * x7 - x2 * x4 - 25 * x4 * x7 - 15536.5, 0),
        sp.Eq(-x5 + sp.log(-x4 + 900), 0),
        sp.Eq(-x6 + sp.log(x4 + 300), 0),
        sp.Eq(-x7 + sp.log(-2 * x4 + 700), 0),
    ]
    ranges = [(0, 1000), (0, 40), (0, 40), (100, 300), (6.3, 6.7), (5.9, 6.4), (4.5, 6.25)]
    x_star = [193.724510070034967, 5.56944131553368433e-27, 17.3191887294084914,
              100.047897801386839, 6.68445185362377892, 5.99168428444264833,
              6.21451648886070451]
    return cec("G21", x1, constraints, x, ranges, 193.724510070035, x_star,
               where="p. 13", original=EPPERLY,
               kind="linear",
               note="Best known; g1 active and the equalities met within 1e-4.")


@register("G22")
def g22() -> BenchmarkProblem:
    """G22: a linear objective in 22 variables, 1 inequality and 19 equalities."""
    x = xs(22)
    (x1, x2, x3, x4, x5, x6, x7, x8, x9, x10, x11, x12, x13, x14, x15, x16, x17,
     x18, x19, x20, x21, x22) = x
    p = sp.Rational(3, 5)
    constraints = [
        -x1 + x2**p + x3**p + x4**p <= 0,
        sp.Eq(x5 - 100000 * x8 + 10000000, 0),
        sp.Eq(x6 + 100000 * x8 - 100000 * x9, 0),
        sp.Eq(x7 + 100000 * x9 - 50000000, 0),
        sp.Eq(x5 + 100000 * x10 - 33000000, 0),
        sp.Eq(x6 + 100000 * x11 - 44000000, 0),
        sp.Eq(x7 + 100000 * x12 - 66000000, 0),
        sp.Eq(x5 - 120 * x2 * x13, 0),
        sp.Eq(x6 - 80 * x3 * x14, 0),
        sp.Eq(x7 - 40 * x4 * x15, 0),
        sp.Eq(x8 - x11 + x16, 0),
        sp.Eq(x9 - x12 + x17, 0),
        sp.Eq(-x18 + sp.log(x10 - 100), 0),
        sp.Eq(-x19 + sp.log(-x8 + 300), 0),
        sp.Eq(-x20 + sp.log(x16), 0),
        sp.Eq(-x21 + sp.log(-x9 + 400), 0),
        sp.Eq(-x22 + sp.log(x17), 0),
        sp.Eq(-x8 - x10 + x13 * x18 - x13 * x19 + 400, 0),
        sp.Eq(x8 - x9 - x11 + x14 * x20 - x14 * x21 + 400, 0),
        sp.Eq(x9 - x12 - 4.60517 * x15 + x15 * x22 + 100, 0),
    ]
    ranges = ([(0, 20000)] + [(0, 1e6)] * 3 + [(0, 4e7)] * 3
              + [(100, 299.99), (100, 399.99), (100.01, 300), (100, 400), (100, 600)]
              + [(0, 500)] * 3 + [(0.01, 300), (0.01, 400)] + [(-4.7, 6.25)] * 5)
    x_star = [236.430975504001054, 135.82847151732463, 204.818152544824585,
              6446.54654059436416, 3007540.83940215595, 4074188.65771341929,
              32918270.5028952882, 130.075408394314167, 170.817294970528621,
              299.924591605478554, 399.258113423595205, 330.817294971142758,
              184.51831230897065, 248.64670239647424, 127.658546694545862,
              269.182627528746707, 160.000016724090955, 5.29788288102680571,
              5.13529735903945728, 5.59531526444068827, 5.43444479314453499,
              5.07517453535834395]
    return cec("G22", x1, constraints, x, ranges, 236.430975504001, x_star,
               where="pp. 13-14",
               original=EPPERLY, kind="linear",
               note="Best known (from Takahama and Sakai's epsilon-DE, CEC 2006), not "
                    "optimal: the equalities leave freedom that allows lower values. "
                    "x* meets the equalities within 1e-4 and g1 (nearly active).")


@register("G23")
def g23() -> BenchmarkProblem:
    """G23: a linear pooling problem in 9 variables, 2 inequalities and 4 equalities."""
    x = xs(9)
    x1, x2, x3, x4, x5, x6, x7, x8, x9 = x
    f = -9 * x5 - 15 * x8 + 6 * x1 + 16 * x2 + 10 * (x6 + x7)
    constraints = [
        x9 * x3 + 0.02 * x6 - 0.025 * x5 <= 0,
        x9 * x4 + 0.02 * x7 - 0.015 * x8 <= 0,
        sp.Eq(x1 + x2 - x3 - x4, 0),
        sp.Eq(0.03 * x1 + 0.01 * x2 - x9 * (x3 + x4), 0),
        sp.Eq(x3 + x6 - x5, 0),
        sp.Eq(x4 + x7 - x8, 0),
    ]
    ranges = [(0, 300), (0, 300), (0, 100), (0, 200), (0, 100), (0, 300), (0, 100),
              (0, 200), (0.01, 0.03)]
    x_star = [0.00510000000000259465, 99.9947000000000514, 9.01920162996045897e-18,
              99.9999000000000535, 0.000100000000027086086, 2.75700683389584542e-14,
              99.9999999999999574, 200, 0.0100000100000100008]
    return cec("G23", f, constraints, x, ranges, -400.055099999999584, x_star,
               where="pp. 14-15", original="Xia, Q. Global optimization test problems "
               "(the report's reference for g23)", kind="linear",
               note="Best known. The report prints x* with a comma missing "
                    "('2000.0100000100000100008'): x8 = 200, x9 = 0.0100000100000100008.")


@register("G24")
def g24() -> BenchmarkProblem:
    """G24: a linear objective in 2 variables under 2 quartic inequalities."""
    x = xs(2)
    x1, x2 = x
    f = -x1 - x2
    g = [
        -2 * x1**4 + 8 * x1**3 - 8 * x1**2 + x2 - 2 <= 0,
        -4 * x1**4 + 32 * x1**3 - 88 * x1**2 + 96 * x1 + x2 - 36 <= 0,
    ]
    return cec("G24", f, g, x, [(0, 3), (0, 4)], -5.50801327159536,
               [2.32952019747762, 3.17849307411774],
               where="p. 15", original="Floudas, C. A. et al. (1999). Handbook of Test "
               "Problems in Local and Global Optimization. Kluwer", kind="linear",
               extra_tags=("disconnected",),
               note="Global minimum, both constraints active. The report prints x* "
                    "with a comma missing ('2.329520197477623.17849307411774').")
