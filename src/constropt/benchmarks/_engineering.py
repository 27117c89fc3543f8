"""Classic engineering design problems: welded beam, pressure vessel, spring, speed reducer.

Each formulation is the one most often used to compare constrained
optimizers, cited in the record's ``source``. The design variables are
positive sympy symbols with descriptive names; the discrete ones
(the pressure vessel's plate counts, the speed reducer's number of teeth) are
``integer=True`` symbols. The best known points are given to full double
precision: they are the vertices (or KKT points) of the active constraints at
the published optima, recomputed at 40 significant digits, and agree with the
designs printed in the literature to the digits printed there.
"""

from __future__ import annotations

import sympy as sp

from ._base import BenchmarkProblem, register

COELLO_2000 = (
    "Coello Coello, C. A. (2000). Use of a self-adaptive penalty approach for "
    "engineering optimization problems. Computers in Industry 41(2): 113-127"
)
CAGNINA_2008 = (
    "Cagnina, L. C., Esquivel, S. C. and Coello Coello, C. A. (2008). Solving "
    "engineering optimization problems with the simple constrained particle swarm "
    "optimizer. Informatica 32: 319-326"
)


def _positive(names: str) -> tuple:
    return sp.symbols(names, positive=True)


@register("welded_beam")
def welded_beam() -> BenchmarkProblem:
    """The welded beam: the cheapest welded bracket under stress, buckling and deflection limits."""
    h, l, t, b = _positive("h l t b")  # weld thickness and length, bar height and thickness (in)
    load, length = 6000, 14  # P (lb) at L (in) from the support
    young, shear = 30 * 10**6, 12 * 10**6  # E and G (psi)
    tau_max, sigma_max, delta_max = 13600, 30000, sp.Rational(1, 4)

    tau_1 = load / (sp.sqrt(2) * h * l)
    moment = load * (length + l / 2)
    radius = sp.sqrt(l**2 / 4 + ((h + t) / 2) ** 2)
    polar = 2 * (sp.sqrt(2) * h * l * (l**2 / 12 + ((h + t) / 2) ** 2))
    tau_2 = moment * radius / polar
    tau = sp.sqrt(tau_1**2 + 2 * tau_1 * tau_2 * l / (2 * radius) + tau_2**2)
    sigma = 6 * load * length / (b * t**2)
    delta = 4 * load * length**3 / (young * t**3 * b)
    p_c = (4.013 * young * sp.sqrt(t**2 * b**6 / 36) / length**2
           * (1 - t / (2 * length) * sp.sqrt(sp.Rational(young, 4 * shear))))

    objective = 1.10471 * h**2 * l + 0.04811 * t * b * (14 + l)
    constraints = (
        tau - tau_max <= 0,
        sigma - sigma_max <= 0,
        h - b <= 0,
        0.10471 * h**2 + 0.04811 * t * b * (14 + l) - 5 <= 0,
        sp.Rational(1, 8) - h <= 0,
        delta - delta_max <= 0,
        load - p_c <= 0,
    )
    return BenchmarkProblem(
        name="welded_beam",
        objective=objective,
        constraints=constraints,
        variables=(h, l, t, b),
        bounds={h: (0.1, 2.0), l: (0.1, 10.0), t: (0.1, 10.0), b: (0.1, 2.0)},
        f_star=1.7248523085973650,
        x_star=(0.20572963978607946, 3.4704886656280020, 9.0366239103576337,
                0.20572963978607946),
        source=(
            f"Formulation (seven constraints, after Rao, S. S. (1996), Engineering "
            f"Optimization, 3rd ed., Wiley): {COELLO_2000}, section 6.2. Best known "
            f"f* = 1.724852: {CAGNINA_2008}, whose design (0.205730, 3.470489, "
            f"9.036624, 0.205729) is printed to 6 digits. x* here is the vertex of the "
            f"active constraints g1 (shear), g2 (bending), g3 (h = b) and g7 "
            f"(buckling), solved at 40 digits; it matches the 15-digit point of "
            f"DIRECTGOLib (Stripinis, L. and Paulavicius, R., 'Welded_Beam'). Not the "
            f"five-constraint form of Ragsdell and Phillips (1976) used by Deb (2000), "
            f"whose optimum is about 2.3811."
        ),
        tags=("engineering", "inequality", "nonlinear"),
    )


@register("pressure_vessel")
def pressure_vessel() -> BenchmarkProblem:
    """The pressure vessel: the cheapest cylindrical tank with hemispherical heads."""
    ks, kh = sp.symbols("ks kh", integer=True, positive=True)  # plates of 0.0625 in
    radius, length = _positive("R L")  # inner radius and cylinder length (in)
    plate = sp.Rational(1, 16)  # 0.0625 in
    ts, th = plate * ks, plate * kh  # shell and head thicknesses (in)

    objective = (0.6224 * ts * radius * length + 1.7781 * th * radius**2
                 + 3.1661 * ts**2 * length + 19.84 * ts**2 * radius)
    constraints = (
        -ts + 0.0193 * radius <= 0,
        -th + 0.00954 * radius <= 0,
        -sp.pi * radius**2 * length - sp.Rational(4, 3) * sp.pi * radius**3 + 1296000 <= 0,
        length - 240 <= 0,
    )
    return BenchmarkProblem(
        name="pressure_vessel",
        objective=objective,
        constraints=constraints,
        variables=(ks, kh, radius, length),
        bounds={ks: (1, 99), kh: (1, 99), radius: (10.0, 200.0), length: (10.0, 200.0)},
        f_star=6059.714335048436,
        x_star=(13, 7, 42.0984455958549, 176.6365958424394),
        source=(
            "Formulation: Sandgren, E. (1990). Nonlinear integer and discrete "
            "programming in mechanical design optimization. Journal of Mechanical "
            "Design 112(2): 223-229; Kannan, B. K. and Kramer, S. N. (1994), Journal of "
            f"Mechanical Design 116(2): 405-411; as restated in {COELLO_2000}. The "
            "thicknesses Ts = 0.0625 ks and Th = 0.0625 kh are whole plates, ks, kh "
            "integers in [1, 99] (Ts, Th in [0.0625, 6.1875]). Optimum f* = "
            "6059.714335048436 at Ts = 0.8125 (ks = 13), Th = 0.4375 (kh = 7), "
            "R = 0.8125/0.0193 = 42.0984455958549 (g1 active), L = 176.6365958424394 "
            "(volume g3 active), commonly printed as R = 42.0984456, L = 176.6365958 "
            f"(e.g. {CAGNINA_2008}: 6059.714335), shown globally optimal by Yang, X.-S., "
            "Huyck, C., Karamanoglu, M. and Khan, N. (2013), International Journal of "
            "Bio-Inspired Computation 5(6): 329-335. A scan of every (ks, kh) with a "
            "local solver for (R, L) confirms it."
        ),
        tags=("engineering", "inequality", "nonlinear", "mixed-integer"),
    )


@register("tension_compression_spring")
def tension_compression_spring() -> BenchmarkProblem:
    """The tension/compression spring: the lightest coil spring under deflection, stress
    and surge limits."""
    d, coil, n = sp.symbols("d D N", positive=True)  # wire and coil diameters, active coils

    objective = (n + 2) * coil * d**2
    constraints = (
        1 - coil**3 * n / (71785 * d**4) <= 0,
        (4 * coil**2 - d * coil) / (12566 * (coil * d**3 - d**4)) + 1 / (5108 * d**2) - 1 <= 0,
        1 - 140.45 * d / (coil**2 * n) <= 0,
        (coil + d) / sp.Rational(3, 2) - 1 <= 0,
    )
    return BenchmarkProblem(
        name="tension_compression_spring",
        objective=objective,
        constraints=constraints,
        variables=(d, coil, n),
        bounds={d: (0.05, 2.0), coil: (0.25, 1.3), n: (2.0, 15.0)},
        f_star=0.012665232788,
        x_star=(0.051689061082763456, 0.35671773979944084, 11.288965751613340),
        source=(
            "Formulation: Belegundu, A. D. (1982). A Study of Mathematical Programming "
            "Methods for Structural Optimization. PhD thesis, University of Iowa; "
            f"Arora, J. S. (1989). Introduction to Optimum Design. McGraw-Hill; as "
            f"restated in {COELLO_2000}, section 6.3 (N continuous). Best known f* = "
            "0.012665232788: Kumar, A., Wu, G., Ali, M. Z., Mallipeddi, R., Suganthan, "
            "P. N. and Das, S. (2020). A test-suite of non-convex constrained "
            "optimization problems from the real-world and some baseline results. "
            "Swarm and Evolutionary Computation 56: 100693 (problem RC17). x* is the "
            "KKT point with g1 and g2 active, solved at 40 digits; printed designs "
            "such as (0.051689, 0.356718, 11.288966) agree with it to their digits "
            f"({CAGNINA_2008} print (0.051690, 0.356750, 11.287126), f = 0.012665, "
            "which exceeds g2 by 2e-5)."
        ),
        tags=("engineering", "inequality", "nonlinear"),
    )


@register("speed_reducer")
def speed_reducer() -> BenchmarkProblem:
    """Golinski's speed reducer: the lightest gearbox under gear and shaft constraints."""
    x1, x2 = _positive("x1 x2")  # face width, module of the teeth
    x3 = sp.Symbol("x3", integer=True, positive=True)  # number of teeth on the pinion
    x4, x5, x6, x7 = _positive("x4 x5 x6 x7")  # shaft lengths and diameters

    objective = (0.7854 * x1 * x2**2 * (3.3333 * x3**2 + 14.9334 * x3 - 43.0934)
                 - 1.508 * x1 * (x6**2 + x7**2) + 7.4777 * (x6**3 + x7**3)
                 + 0.7854 * (x4 * x6**2 + x5 * x7**2))
    constraints = (
        27 / (x1 * x2**2 * x3) - 1 <= 0,
        397.5 / (x1 * x2**2 * x3**2) - 1 <= 0,
        1.93 * x4**3 / (x2 * x3 * x6**4) - 1 <= 0,
        1.93 * x5**3 / (x2 * x3 * x7**4) - 1 <= 0,
        sp.sqrt((745 * x4 / (x2 * x3)) ** 2 + 16900000) / (110 * x6**3) - 1 <= 0,
        sp.sqrt((745 * x5 / (x2 * x3)) ** 2 + 157500000) / (85 * x7**3) - 1 <= 0,
        x2 * x3 / 40 - 1 <= 0,
        5 * x2 / x1 - 1 <= 0,
        x1 / (12 * x2) - 1 <= 0,
        (1.5 * x6 + 1.9) / x4 - 1 <= 0,
        (1.1 * x7 + 1.9) / x5 - 1 <= 0,
    )
    return BenchmarkProblem(
        name="speed_reducer",
        objective=objective,
        constraints=constraints,
        variables=(x1, x2, x3, x4, x5, x6, x7),
        bounds={x1: (2.6, 3.6), x2: (0.7, 0.8), x3: (17, 28), x4: (7.3, 8.3),
                x5: (7.3, 8.3), x6: (2.9, 3.9), x7: (5.0, 5.5)},
        f_star=2994.4710661,
        x_star=(3.5, 0.7, 17, 7.3, 7.7153199114782441, 3.3502146660964473,
                5.2866544649802219),
        source=(
            "Formulation: Golinski, J. (1973). An adaptive optimization system applied "
            "to machine synthesis. Mechanism and Machine Theory 8(4): 419-436, in the "
            "common 11-constraint form with 7.3 <= x5 <= 8.3 and the number of teeth "
            "x3 an integer in [17, 28]. Best known f* = 2994.4710661 (reported as "
            "2994.471 e.g. by Lin, M.-H., Tsai, J.-F., Hu, N.-Z. and Chang, S.-C. "
            "(2013), Mathematical Problems in Engineering 2013: 419043) at the design "
            "printed as (3.5, 0.7, 17, 7.3, 7.7153199, 3.3502147, 5.2866545). x* here "
            "is that design to full precision: x1 = 5 x2 (g8), x2, x3, x4 at their "
            "lower bounds, g5, g6 and g11 active, solved at 40 digits (f = "
            "2994.47106614682). With 7.8 <= x5, as in some restatements (e.g. "
            f"{CAGNINA_2008}), the optimum is 2996.348 instead."
        ),
        tags=("engineering", "inequality", "nonlinear", "mixed-integer"),
    )
