"""CEC 2006 constrained suite, problems G01 to G12.

Transcribed from the technical report of the CEC 2006 special session (see
:data:`REPORT`) and cross-checked against the organizers' C code, as
redistributed in PaGMO's ``cec2006`` problem: every objective value and
constraint is checked at the report's x* by the test-suite. Problems G13 to
G24 are in :mod:`constropt.benchmarks._cec2006_g13_g24`.

Conventions shared by both modules: the variables are real sympy symbols
``x1 ... xn``; inequalities are ``g(x) <= 0`` and equalities
``Eq(h(x), 0)``, in the report's order and sign; decimal constants are the
report's, as Python floats; every problem is a minimization, as the report
states it (problems that the original sources maximize are negated there).
"""

from __future__ import annotations

import sympy as sp

from ._base import BenchmarkProblem, register

REPORT = (
    "Liang, J. J., Runarsson, T. P., Mezura-Montes, E., Clerc, M., Suganthan, P. N., "
    "Coello Coello, C. A. and Deb, K. (2006). Problem Definitions and Evaluation "
    "Criteria for the CEC 2006 Special Session on Constrained Real-Parameter "
    "Optimization. Technical report, Nanyang Technological University, Singapore "
    "(https://github.com/P-N-Suganthan/CEC2006, technical_report.pdf)"
)

# the report's originals, as it cites them
FLOUDAS_PARDALOS = (
    "Floudas, C. A. and Pardalos, P. M. (1990). A Collection of Test Problems for "
    "Constrained Global Optimization Algorithms. LNCS 455, Springer"
)
HOCK_SCHITTKOWSKI = (
    "Hock, W. and Schittkowski, K. (1981). Test Examples for Nonlinear Programming "
    "Codes. Lecture Notes in Economics and Mathematical Systems 187, Springer"
)
KOZIEL_MICHALEWICZ = (
    "Koziel, S. and Michalewicz, Z. (1999). Evolutionary algorithms, homomorphous "
    "mappings, and constrained parameter optimization. Evolutionary Computation 7(1): 19-44"
)
HIMMELBLAU = "Himmelblau, D. M. (1972). Applied Nonlinear Programming. McGraw-Hill"

# the equality tolerance of the report: |h(x)| <= 1e-4 counts as satisfied
CEC_EQ_TOL = 1e-4


def xs(n: int) -> tuple:
    """Real symbols ``x1 ... xn``.

    Parameters
    ----------
    n : int
        Number of variables.

    Returns
    -------
    tuple of sympy.Symbol
        The symbols, in order.
    """
    return sp.symbols(f"x1:{n + 1}", real=True)


def box(variables, ranges) -> dict:
    """The bounds dict of `variables`, from one ``(lo, hi)`` pair per variable.

    Parameters
    ----------
    variables : tuple of sympy.Symbol
        The problem's variables.
    ranges : sequence of tuple
        ``(lo, hi)`` per variable, in the same order.

    Returns
    -------
    dict
        ``{symbol: (lo, hi)}``.
    """
    ranges = list(ranges)
    if len(ranges) != len(variables):
        raise ValueError("one range per variable is needed")
    return {v: (lo, hi) for v, (lo, hi) in zip(variables, ranges)}


def source(problem: str, where: str, original: str, note: str = "") -> str:
    """The citation of a CEC 2006 problem.

    Parameters
    ----------
    problem : str
        The report's name, e.g. ``"g01"``.
    where : str
        Pages of the report that define the problem and print x*.
    original : str
        The original source that the report cites.
    note : str, optional
        Errata or remarks.

    Returns
    -------
    str
        The citation.
    """
    text = (
        f"{REPORT}, problem {problem} ({where}): definition, bounds, f(x*) and x*. "
        f"Original: {original}."
    )
    return f"{text} {note}" if note else text


def cec(name, objective, constraints, variables, ranges, f_star, x_star, *, where,
        original, kind, note="", extra_tags=(), x_star_tol=1e-6) -> BenchmarkProblem:
    """Assemble the record of a CEC 2006 problem, tagging it from its constraints.

    Parameters
    ----------
    name : str
        ``"G01"`` ... ``"G24"``.
    objective, constraints, variables
        As in :class:`BenchmarkProblem`.
    ranges : sequence of tuple
        ``(lo, hi)`` per variable.
    f_star : float
        The report's f(x*).
    x_star : sequence of float
        The report's x*.
    where, original, note : str
        Passed to :func:`source`.
    kind : str
        The objective's kind: ``"linear"``, ``"quadratic"``, ``"polynomial"``
        or ``"nonlinear"``.
    extra_tags : tuple of str, optional
        Further tags, e.g. ``("nonsmooth",)``.
    x_star_tol : float, optional
        See :class:`BenchmarkProblem`.

    Returns
    -------
    BenchmarkProblem
        The record.
    """
    constraints = tuple(constraints)
    if len(x_star) != len(variables):
        raise ValueError(f"{name}: x* has {len(x_star)} entries for {len(variables)} variables")
    tags = ["cec2006", kind]
    if any(isinstance(c, sp.Equality) for c in constraints):
        tags.append("equality")
    if any(not isinstance(c, sp.Equality) for c in constraints):
        tags.append("inequality")
    tags.extend(extra_tags)
    return BenchmarkProblem(
        name=name,
        objective=objective,
        constraints=constraints,
        variables=tuple(variables),
        bounds=box(variables, ranges),
        f_star=float(f_star),
        x_star=tuple(float(v) for v in x_star),
        source=source(name.lower(), where, original, note),
        tags=tuple(tags),
        eq_tol=CEC_EQ_TOL,
        x_star_tol=x_star_tol,
    )


def total(terms) -> sp.Expr:
    """Sum of sympy terms (a thin wrapper over ``sympy.Add``)."""
    return sp.Add(*terms)


def product(factors) -> sp.Expr:
    """Product of sympy factors (a thin wrapper over ``sympy.Mul``)."""
    return sp.Mul(*factors)


@register("G01")
def g01() -> BenchmarkProblem:
    """G01: a quadratic in 13 variables with 9 linear inequalities."""
    x = xs(13)
    x1, x2, x3, x4, x5, x6, x7, x8, x9, x10, x11, x12, x13 = x
    f = 5 * total(x[:4]) - 5 * total(v**2 for v in x[:4]) - total(x[4:])
    g = [
        2 * x1 + 2 * x2 + x10 + x11 - 10 <= 0,
        2 * x1 + 2 * x3 + x10 + x12 - 10 <= 0,
        2 * x2 + 2 * x3 + x11 + x12 - 10 <= 0,
        -8 * x1 + x10 <= 0,
        -8 * x2 + x11 <= 0,
        -8 * x3 + x12 <= 0,
        -2 * x4 - x5 + x10 <= 0,
        -2 * x6 - x7 + x11 <= 0,
        -2 * x8 - x9 + x12 <= 0,
    ]
    ranges = [(0, 1)] * 9 + [(0, 100)] * 3 + [(0, 1)]
    return cec("G01", f, g, x, ranges, -15.0, [1] * 9 + [3, 3, 3, 1],
               where="p. 3", original=FLOUDAS_PARDALOS, kind="quadratic",
               note="Global minimum, with g1, g2, g3, g7, g8, g9 active.")


@register("G02")
def g02() -> BenchmarkProblem:
    """G02: Keane's bump function in 20 variables (negated), 2 inequalities."""
    n = 20
    x = xs(n)
    numerator = total(sp.cos(v) ** 4 for v in x) - 2 * product(sp.cos(v) ** 2 for v in x)
    denominator = sp.sqrt(total(i * v**2 for i, v in enumerate(x, start=1)))
    f = -sp.Abs(numerator / denominator)
    g = [
        sp.Rational(3, 4) - product(x) <= 0,
        total(x) - sp.Rational(15, 2) * n <= 0,
    ]
    x_star = [
        3.16246061572185, 3.12833142812967, 3.09479212988791, 3.06145059523469,
        3.02792915885555, 2.99382606701730, 2.95866871765285, 2.92184227312450,
        0.49482511456933, 0.48835711005490, 0.48231642711865, 0.47664475092742,
        0.47129550835493, 0.46623099264167, 0.46142004984199, 0.45683664767217,
        0.45245876903267, 0.44826762241853, 0.44424700958760, 0.44038285956317,
    ]
    return cec("G02", f, g, x, [(0, 10)] * n, -0.80361910412559, x_star,
               where="p. 3", original=KOZIEL_MICHALEWICZ, kind="nonlinear",
               extra_tags=("nonsmooth", "multimodal"),
               note="Best known, not proven optimal. The report's bounds are "
                    "0 < xi <= 10; the objective is undefined only at the origin, "
                    "which g1 excludes. x* is printed to 14 decimals, and g1 is "
                    "active there up to that rounding.")


@register("G03")
def g03() -> BenchmarkProblem:
    """G03: the product of 10 variables on the unit sphere (negated)."""
    n = 10
    x = xs(n)
    f = -(sp.sqrt(n) ** n) * product(x)
    h = [sp.Eq(total(v**2 for v in x) - 1, 0)]
    x_star = [
        0.31624357647283069, 0.316243577414338339, 0.316243578012345927,
        0.316243575664017895, 0.316243578205526066, 0.31624357738855069,
        0.316243575472949512, 0.316243577164883938, 0.316243578155920302,
        0.316243576147374916,
    ]
    return cec("G03", f, h, x, [(0, 1)] * n, -1.00050010001000, x_star,
               where="pp. 3-4", original="Michalewicz, Z., Nazhiyath, G. and Michalewicz, M. "
               "(1996). A note on usefulness of geometrical crossover for numerical "
               "optimization problems. Proc. 5th Annual Conference on Evolutionary "
               "Programming: 305-312", kind="polynomial",
               note="The exact optimum is -1 at xi = 1/sqrt(n); the report's "
                    "-1.0005001 = -(1.0001)^5 uses the equality tolerance 1e-4 "
                    "(sum xi^2 = 1.0001 at x*).")


@register("G04")
def g04() -> BenchmarkProblem:
    """G04: Himmelblau's quadratic problem in 5 variables, 6 inequalities."""
    x = xs(5)
    x1, x2, x3, x4, x5 = x
    f = 5.3578547 * x3**2 + 0.8356891 * x1 * x5 + 37.293239 * x1 - 40792.141
    u = 85.334407 + 0.0056858 * x2 * x5 + 0.0006262 * x1 * x4 - 0.0022053 * x3 * x5
    v = 80.51249 + 0.0071317 * x2 * x5 + 0.0029955 * x1 * x2 + 0.0021813 * x3**2
    w = 9.300961 + 0.0047026 * x3 * x5 + 0.0012547 * x1 * x3 + 0.0019085 * x3 * x4
    g = [u - 92 <= 0, -u <= 0, v - 110 <= 0, -v + 90 <= 0, w - 25 <= 0, -w + 20 <= 0]
    ranges = [(78, 102), (33, 45), (27, 45), (27, 45), (27, 45)]
    x_star = [78, 33, 29.9952560256815985, 45, 36.7758129057882073]
    return cec("G04", f, g, x, ranges, -30665.53867178332, x_star,
               where="p. 4", original=HIMMELBLAU, kind="quadratic",
               note="g1 and g6 active. Some engineering papers use a variant with "
                    "0.00026 for 0.0006262 in g1; this is the CEC form.")


@register("G05")
def g05() -> BenchmarkProblem:
    """G05: a cubic in 4 variables with 2 linear inequalities and 3 equalities."""
    x = xs(4)
    x1, x2, x3, x4 = x
    f = 3 * x1 + sp.Rational(1, 10**6) * x1**3 + 2 * x2 + sp.Rational(2, 3 * 10**6) * x2**3
    constraints = [
        -x4 + x3 - 0.55 <= 0,
        -x3 + x4 - 0.55 <= 0,
        sp.Eq(1000 * sp.sin(-x3 - 0.25) + 1000 * sp.sin(-x4 - 0.25) + 894.8 - x1, 0),
        sp.Eq(1000 * sp.sin(x3 - 0.25) + 1000 * sp.sin(x3 - x4 - 0.25) + 894.8 - x2, 0),
        sp.Eq(1000 * sp.sin(x4 - 0.25) + 1000 * sp.sin(x4 - x3 - 0.25) + 1294.8, 0),
    ]
    ranges = [(0, 1200), (0, 1200), (-0.55, 0.55), (-0.55, 0.55)]
    x_star = [679.945148297028709, 1026.06697600004691, 0.118876369094410433,
              -0.39623348521517826]
    return cec("G05", f, constraints, x, ranges, 5126.4967140071, x_star,
               where="p. 4", original=HOCK_SCHITTKOWSKI, kind="polynomial",
               note="Best known; x* meets the equalities within the tolerance "
                    "1e-4 only. Some transcriptions print sin(x4 - 0.25) in h1 or "
                    "bounds 0 <= x1, x2 <= 1: both are errors.")


@register("G06")
def g06() -> BenchmarkProblem:
    """G06: a cubic in 2 variables inside a thin crescent."""
    x = xs(2)
    x1, x2 = x
    f = (x1 - 10) ** 3 + (x2 - 20) ** 3
    g = [
        -((x1 - 5) ** 2) - (x2 - 5) ** 2 + 100 <= 0,
        (x1 - 6) ** 2 + (x2 - 5) ** 2 - 82.81 <= 0,
    ]
    return cec("G06", f, g, x, [(13, 100), (0, 100)], -6961.81387558015,
               [14.09500000000000064, 0.8429607892154795668],
               where="p. 4", original=FLOUDAS_PARDALOS, kind="polynomial",
               note="Global minimum where both circles meet (x1 = 14.095).")


@register("G07")
def g07() -> BenchmarkProblem:
    """G07: a convex quadratic in 10 variables, 3 linear and 5 nonlinear inequalities."""
    x = xs(10)
    x1, x2, x3, x4, x5, x6, x7, x8, x9, x10 = x
    f = (x1**2 + x2**2 + x1 * x2 - 14 * x1 - 16 * x2 + (x3 - 10) ** 2
         + 4 * (x4 - 5) ** 2 + (x5 - 3) ** 2 + 2 * (x6 - 1) ** 2 + 5 * x7**2
         + 7 * (x8 - 11) ** 2 + 2 * (x9 - 10) ** 2 + (x10 - 7) ** 2 + 45)
    g = [
        -105 + 4 * x1 + 5 * x2 - 3 * x7 + 9 * x8 <= 0,
        10 * x1 - 8 * x2 - 17 * x7 + 2 * x8 <= 0,
        -8 * x1 + 2 * x2 + 5 * x9 - 2 * x10 - 12 <= 0,
        3 * (x1 - 2) ** 2 + 4 * (x2 - 3) ** 2 + 2 * x3**2 - 7 * x4 - 120 <= 0,
        5 * x1**2 + 8 * x2 + (x3 - 6) ** 2 - 2 * x4 - 40 <= 0,
        x1**2 + 2 * (x2 - 2) ** 2 - 2 * x1 * x2 + 14 * x5 - 6 * x6 <= 0,
        sp.Rational(1, 2) * (x1 - 8) ** 2 + 2 * (x2 - 4) ** 2 + 3 * x5**2 - x6 - 30 <= 0,
        -3 * x1 + 6 * x2 + 12 * (x9 - 8) ** 2 - 7 * x10 <= 0,
    ]
    x_star = [2.17199634142692, 2.3636830416034, 8.77392573913157, 5.09598443745173,
              0.990654756560493, 1.43057392853463, 1.32164415364306, 9.82872576524495,
              8.2800915887356, 8.3759266477347]
    return cec("G07", f, g, x, [(-10, 10)] * 10, 24.30620906818, x_star,
               where="p. 5", original=HOCK_SCHITTKOWSKI, kind="quadratic",
               note="Convex problem; g1-g6 active at x*, which is printed to about "
                    "14 digits.")


@register("G08")
def g08() -> BenchmarkProblem:
    """G08: a trigonometric ratio in 2 variables (negated), 2 inequalities."""
    x = xs(2)
    x1, x2 = x
    f = -(sp.sin(2 * sp.pi * x1) ** 3 * sp.sin(2 * sp.pi * x2)) / (x1**3 * (x1 + x2))
    g = [x1**2 - x2 + 1 <= 0, 1 - x1 + (x2 - 4) ** 2 <= 0]
    return cec("G08", f, g, x, [(0, 10), (0, 10)], -0.0958250414180359,
               [1.22797135260752599, 4.24537336612274885],
               where="p. 5", original=KOZIEL_MICHALEWICZ, kind="nonlinear",
               extra_tags=("multimodal",),
               note="No constraint is active at x*. The objective is 0/0 at x1 = 0.")


@register("G09")
def g09() -> BenchmarkProblem:
    """G09: a polynomial in 7 variables with 4 nonlinear inequalities."""
    x = xs(7)
    x1, x2, x3, x4, x5, x6, x7 = x
    f = ((x1 - 10) ** 2 + 5 * (x2 - 12) ** 2 + x3**4 + 3 * (x4 - 11) ** 2
         + 10 * x5**6 + 7 * x6**2 + x7**4 - 4 * x6 * x7 - 10 * x6 - 8 * x7)
    g = [
        -127 + 2 * x1**2 + 3 * x2**4 + x3 + 4 * x4**2 + 5 * x5 <= 0,
        -282 + 7 * x1 + 3 * x2 + 10 * x3**2 + x4 - x5 <= 0,
        -196 + 23 * x1 + x2**2 + 6 * x6**2 - 8 * x7 <= 0,
        4 * x1**2 + x2**2 - 3 * x1 * x2 + 2 * x3**2 + 5 * x6 - 11 * x7 <= 0,
    ]
    x_star = [2.33049935147405174, 1.95137236847114592, -0.477541399510615805,
              4.36572624923625874, -0.624486959100388983, 1.03813099410962173,
              1.5942266780671519]
    return cec("G09", f, g, x, [(-10, 10)] * 7, 680.630057374402, x_star,
               where="pp. 5-6", original=HOCK_SCHITTKOWSKI, kind="polynomial",
               note="g1 and g4 active at x*.")


@register("G10")
def g10() -> BenchmarkProblem:
    """G10: a linear objective in 8 variables with 3 linear and 3 bilinear inequalities."""
    x = xs(8)
    x1, x2, x3, x4, x5, x6, x7, x8 = x
    f = x1 + x2 + x3
    g = [
        -1 + 0.0025 * (x4 + x6) <= 0,
        -1 + 0.0025 * (x5 + x7 - x4) <= 0,
        -1 + 0.01 * (x8 - x5) <= 0,
        -x1 * x6 + 833.33252 * x4 + 100 * x1 - 83333.333 <= 0,
        -x2 * x7 + 1250 * x5 + x2 * x4 - 1250 * x4 <= 0,
        -x3 * x8 + 1250000 + x3 * x5 - 2500 * x5 <= 0,
    ]
    ranges = [(100, 10000), (1000, 10000), (1000, 10000)] + [(10, 1000)] * 5
    x_star = [579.306685017979589, 1359.97067807935605, 5109.97065743133317,
              182.01769963061534, 295.601173702746792, 217.982300369384632,
              286.41652592786852, 395.601173702746735]
    return cec("G10", f, g, x, ranges, 7049.24802052867, x_star,
               where="p. 6", original=HOCK_SCHITTKOWSKI, kind="linear",
               note="All six constraints are active at x* (the report's text names "
                    "g1-g3).")


@register("G11")
def g11() -> BenchmarkProblem:
    """G11: a quadratic in 2 variables on a parabola (one equality)."""
    x = xs(2)
    x1, x2 = x
    f = x1**2 + (x2 - 1) ** 2
    h = [sp.Eq(x2 - x1**2, 0)]
    return cec("G11", f, h, x, [(-1, 1), (-1, 1)], 0.7499,
               [-0.707036070037170616, 0.500000004333606807],
               where="p. 6", original=KOZIEL_MICHALEWICZ, kind="quadratic",
               note="The exact optimum is 0.75 at (+-1/sqrt(2), 1/2); the report's "
                    "0.7499 uses the equality tolerance 1e-4.")


@register("G12")
def g12() -> BenchmarkProblem:
    """G12: a sphere's height (negated), feasible inside 729 disjoint balls."""
    x = xs(3)
    x1, x2, x3 = x
    f = -(100 - (x1 - 5) ** 2 - (x2 - 5) ** 2 - (x3 - 5) ** 2) / 100
    # The report's constraint holds when (x1-p)^2 + (x2-q)^2 + (x3-r)^2 - 0.0625 <= 0
    # for SOME p, q, r in 1..9, i.e. when the minimum over the 9^3 centres is <= 0.
    # The squared distance is separable, so that minimum is the sum over the three
    # coordinates of the minimum over 1..9: exact, and 27 terms instead of 729.
    nearest = total(sp.Min(*[(v - p) ** 2 for p in range(1, 10)]) for v in x)
    g = [nearest - sp.Rational(1, 16) <= 0]
    return cec("G12", f, g, x, [(0, 10)] * 3, -1.0, [5, 5, 5],
               where="p. 6", original=KOZIEL_MICHALEWICZ, kind="quadratic",
               extra_tags=("nonsmooth", "disconnected"),
               note="The disjunctive constraint (feasible inside any of 9^3 balls of "
                    "radius 0.25 centred on {1..9}^3) is written as one inequality "
                    "with sympy.Min, separately per coordinate, which is equivalent. "
                    "Global minimum, no constraint active.")
