"""Small mixed-integer instances of MINLPLib.

From Floudas (1995): ex1221, ex1223b, ex1224, ex1225, ex1226.  From the BARON book
(Tawarmalani and Sahinidis 2002; :mod:`._minlp_baron`): st_e27, st_e38 (Sandgren's
pressure vessel), st_e40 (a discrete truss), and Gupta and Ravindran's nvs01, nvs03,
nvs21.

Transcribed from the instances' GAMS models (the ``objvar`` equation becomes the
objective; ``=L=``, ``=G=`` and ``=E=`` rows become ``g <= 0`` and ``Eq(h, 0)`` in the
models' order; binaries are ``integer=True`` symbols in ``{0, 1}``; integer variables
without a lower bound in the model get GAMS's default 0). Continuous variables without
an upper bound in the model get the finite one their constraints imply, which the
record's ``source`` states. The optimal values are MINLPLib's (proven: its primal and
dual bounds agree), and each was reproduced here by enumerating the integer vectors
with a local solve (or closed form) of the continuous variables.  Equalities are held
to ``|h| <= 1e-6`` (``eq_tol``): the points are exact optima, not points that lean on a
tolerance.
"""

from __future__ import annotations

import sympy as sp

from ._base import BenchmarkProblem, register
from ._cec2020_base import variables

MINLPLIB = (
    "MINLPLib (Bussieck, M. R., Drud, A. S. and Meeraus, A. (2003). MINLPLib - a "
    "collection of test models for mixed-integer nonlinear programming. INFORMS "
    "Journal on Computing 15(1): 114-119; https://www.minlplib.org)"
)
FLOUDAS_1995 = (
    "Floudas, C. A. (1995). Nonlinear and Mixed-Integer Optimization: Fundamentals "
    "and Applications. Oxford University Press"
)
MINLP_EQ_TOL = 1e-6


def minlp(name, objective, constraints, x, ranges, f_star, x_star, *, how, note="",
          kind="nonlinear", origin=FLOUDAS_1995) -> BenchmarkProblem:
    """Assemble the record of a MINLPLib instance.

    Parameters
    ----------
    name : str
        The instance's MINLPLib name, e.g. ``"ex1221"``.
    objective, constraints, x
        As in :class:`BenchmarkProblem`.
    ranges : sequence of tuple
        ``(lo, hi)`` per variable.
    f_star : float
        MINLPLib's optimal value.
    x_star : sequence
        An optimal point.
    how, note : str
        How `x_star` was obtained; remarks.
    kind : str, optional
        The problem's kind tag.
    origin : str, optional
        The publication MINLPLib took the instance from.

    Returns
    -------
    BenchmarkProblem
        The record.
    """
    constraints = tuple(constraints)
    tags = ["minlplib", kind, "mixed-integer"]
    if any(isinstance(c, sp.Equality) for c in constraints):
        tags.append("equality")
    if any(not isinstance(c, sp.Equality) for c in constraints):
        tags.append("inequality")
    text = (f"{MINLPLIB}, instance {name} (from {origin}): definition and optimal "
            f"value {f_star!r}. x*: {how}")
    if note:
        text += f" {note}"
    return BenchmarkProblem(
        name=name, objective=objective, constraints=constraints, variables=tuple(x),
        bounds={v: r for v, r in zip(x, ranges)}, f_star=float(f_star),
        x_star=tuple(int(v) if s.is_integer else float(v) for s, v in zip(x, x_star)),
        source=text, tags=tuple(tags), eq_tol=MINLP_EQ_TOL)


@register("ex1221")
def ex1221() -> BenchmarkProblem:
    """ex1221: 2 continuous and 3 binary variables, 2 nonlinear equalities."""
    x = variables(5, integer=(3, 4, 5))
    x1, x2, b3, b4, b5 = x
    f = 2 * x1 + 3 * x2 + sp.Rational(3, 2) * b3 + 2 * b4 - sp.Rational(1, 2) * b5
    c = [
        sp.Eq(x1**2 + b3 - sp.Rational(5, 4), 0),
        sp.Eq(x2 ** sp.Rational(3, 2) + sp.Rational(3, 2) * b4 - 3, 0),
        x1 + b3 - sp.Rational(8, 5) <= 0,
        sp.Rational(1333, 1000) * x2 + b4 - 3 <= 0,
        -b3 - b4 + b5 <= 0,
    ]
    x_star = [1.1180339887498949, 1.3103706971044482, 0, 1, 1]
    return minlp("ex1221", f, c, x, [(0, 10), (0, 10), (0, 1), (0, 1), (0, 1)],
                 7.667180068813135, x_star,
                 how="b = (0, 1, 1), x1 = sqrt(1.25), x2 = 1.5^(2/3).")


@register("ex1223b")
def ex1223b() -> BenchmarkProblem:
    """ex1223b: 3 continuous and 4 binary variables, 9 inequalities."""
    x = variables(7, integer=(4, 5, 6, 7))
    x1, x2, x3, b4, b5, b6, b7 = x
    f = ((b4 - 1) ** 2 + (b5 - 2) ** 2 + (b6 - 1) ** 2 - sp.log(1 + b7) + (x1 - 1) ** 2
         + (x2 - 2) ** 2 + (x3 - 3) ** 2)
    c = [
        x1 + x2 + x3 + b4 + b5 + b6 - 5 <= 0,
        b6**2 + x1**2 + x2**2 + x3**2 - sp.Rational(11, 2) <= 0,
        x1 + b4 - sp.Rational(6, 5) <= 0,
        x2 + b5 - sp.Rational(9, 5) <= 0,
        x3 + b6 - sp.Rational(5, 2) <= 0,
        x1 + b7 - sp.Rational(6, 5) <= 0,
        b5**2 + x2**2 - sp.Rational(41, 25) <= 0,
        b6**2 + x3**2 - sp.Rational(17, 4) <= 0,
        b5**2 + x3**2 - sp.Rational(116, 25) <= 0,
    ]
    x_star = [0.2, 0.8, 1.9078784028338913, 1, 1, 0, 1]
    ranges = [(0, 10), (0, 10), (0, 10), (0, 1), (0, 1), (0, 1), (0, 1)]
    return minlp("ex1223b", f, c, x, ranges, 4.5795824024367067, x_star,
                 how="b = (1, 1, 0, 1), x1 = 0.2 (g3, g6 active), x2 = 0.8 (g4 active), "
                     "x3 = sqrt(3.64) (g9 active).")


@register("ex1224")
def ex1224() -> BenchmarkProblem:
    """ex1224: a reliability problem, 3 continuous and 8 binary variables."""
    x = variables(11, integer=range(4, 12))
    x1, x2, x3, b4, b5, b6, b7, b8, b9, b10, b11 = x
    c = [
        sp.Eq(-sp.log(1 - x1) - 2.30258509299405 * b4 - 1.6094379124341 * b5
              - 1.89711998488588 * b6, 0),
        sp.Eq(-sp.log(1 - x2) - 2.99573227355399 * b7 - 1.6094379124341 * b8
              - 1.89711998488588 * b9, 0),
        -sp.log(1 - x3) - 3.91202300542815 * b10 - 2.81341071676004 * b11 <= 0,
        1 - b4 - b5 - b6 <= 0,
        1 - b7 - b8 - b9 <= 0,
        1 - b10 - b11 <= 0,
        3 * b4 + b5 + 2 * b6 + 3 * b7 + 2 * b8 + b9 + 3 * b10 + 2 * b11 - 10 <= 0,
    ]
    ranges = [(0, 0.997), (0, 0.9985), (0, 0.9988)] + [(0, 1)] * 8
    x_star = [0.97, 0.9925, 0.98, 0, 1, 1, 1, 0, 1, 1, 0]
    return minlp("ex1224", -x1 * x2 * x3, c, x, ranges, -0.9434705, x_star,
                 how="enumeration of the binaries; x1, x2 follow from the equalities and "
                     "x3 from g3 (active).")


@register("ex1225")
def ex1225() -> BenchmarkProblem:
    """ex1225: two variables made integer by binary expansions, 6 binaries."""
    x = variables(8, integer=range(3, 9))
    x1, x2, b3, b4, b5, b6, b7, b8 = x
    c = [
        x1 ** sp.Rational(6, 5) * x2 ** sp.Rational(17, 10) - 7 * x1 - 9 * x2 + 24 <= 0,
        -x1 - 2 * x2 + 5 <= 0,
        -3 * x1 + x2 - 1 <= 0,
        4 * x1 - 3 * x2 - 11 <= 0,
        sp.Eq(x1 - b3 - 2 * b4 - 4 * b5 - 1, 0),
        sp.Eq(x2 - b6 - 2 * b7 - 4 * b8 - 1, 0),
        b3 + b5 - 1 <= 0,
        b6 + b8 - 1 <= 0,
        b4 + b5 - 1 <= 0,
        b7 + b8 - 1 <= 0,
    ]
    ranges = [(1, 5), (1, 5)] + [(0, 1)] * 6
    return minlp("ex1225", 7 * x1 + 10 * x2, c, x, ranges, 31.0, [3, 1, 0, 1, 0, 0, 0, 0],
                 how="x1 = 3, x2 = 1 (g2 active), found by enumeration.", kind="polynomial")


@register("ex1226")
def ex1226() -> BenchmarkProblem:
    """ex1226: one variable made integer by a binary expansion, 3 binaries."""
    x = variables(5, integer=(3, 4, 5))
    x1, x2, b3, b4, b5 = x
    c = [
        8 * x1 - 2 * sp.sqrt(x1) * x2**2 + 11 * x2 + 2 * x2**2 - 2 * sp.sqrt(x2) - 39 <= 0,
        x1 - x2 - 3 <= 0,
        3 * x1 + 2 * x2 - 24 <= 0,
        sp.Eq(x2 - b3 - 2 * b4 - 4 * b5 - 1, 0),
        b4 + b5 - 1 <= 0,
    ]
    ranges = [(1, 10), (1, 6), (0, 1), (0, 1), (0, 1)]
    return minlp("ex1226", -5 * x1 + 3 * x2, c, x, ranges, -17.0, [4, 1, 0, 0, 0],
                 how="x2 = 1 (all binaries 0), x1 = 4 (g1 and g2 active), found by "
                     "enumeration.")
