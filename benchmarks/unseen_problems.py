"""Published problems outside constropt's collection, for measuring it unseen (issue 28).

Nobody tuned constropt on these: they were chosen and written after the search's rules
were set, from families the collection does not contain (see benchmarks/results/unseen.md
for the protocol and the numbers).

* **Hock-Schittkowski** problems the collection does not hold (and none of those that
  are CEC 2006 problems in disguise: HS063, HS080/081, HS083, HS086, HS100, HS106,
  HS108, HS112, HS113, HS117).  Source of the definition: the Princeton library's GAMS
  models as transcribed in lanl-ansi/MINLPLib.jl; source of f*: Hock and Schittkowski
  (1981) (:data:`BOOK`), given exactly where the active set determines it.
* **GLOBALLib** problems from Floudas et al. (1999), *Handbook of test problems in local
  and global optimization* (chapters 2: concave and indefinite QPs, 3: quadratically
  constrained, 4: univariate / bivariate, 5: pooling (Ben-Tal's), 6: Gibbs free energy,
  8: small unconstrained-like, 14: min-max equation systems) and the ``st_*`` problems of
  Tawarmalani and Sahinidis; definitions as above, f* the best known values that
  GLOBALLib lists (:data:`GLOBALLIB`).
* **Scalable families** (n = 30 to 300): the Thomson problem (COPS ``elec``: N points on
  the unit sphere, minimum Coulomb energy; N = 10 and 20, n = 30 and 60, f* from the
  published table of Thomson minima), Rosenbrock's function in the ball
  ``sum x_i^2 <= n`` (the disk-constrained Rosenbrock of Simionescu's test set, scaled
  to n; f* = 0 at x = 1 on the ball's surface) and the Euclidean projection of a fixed
  point onto the simplex (a convex QP with one equality; f* from the exact sorting
  algorithm of Held, Wolfe and Crowder (1974), computed here).

A record's `f_star` is the published value; where the source prints only a few digits
and the exact optimum lies above the printed value, a run that reaches the optimum would
read as a failure under the 1e-6 rule, so the record carries the optimum the reference
runs reproduced, and its `source` says so (``FULL_DIGITS``).  Equalities are held to
1e-6 (``eq_tol``).

Checked and changed against the models: HS048's objective is the book's (the model's
has ``-x4 + x5`` for ``(x4 - x5)**2``: a point at -18 was feasible); ex8_1_7's rows
``a <= g <= a`` with 15-digit ``a`` are equalities with the exact ``a`` (no float64 point
met the pair); HS024 keeps the book's sqrt(3).  Dropped: st_e16, whose best known value
could not be confirmed here (the solvers agree on 12292.466).  Records are
:class:`constropt.benchmarks.BenchmarkProblem`.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import sympy as sp
from _unseen_data import MODELS

from constropt.benchmarks import BenchmarkProblem

BOOK = ("Hock, W. and Schittkowski, K. (1981). Test Examples for Nonlinear Programming "
        "Codes. Lecture Notes in Economics and Mathematical Systems 187, Springer")
GLOBALLIB = ("Floudas, C. A. et al. (1999). Handbook of Test Problems in Local and Global "
             "Optimization, Kluwer; best known value as listed by GLOBALLib "
             "(GAMS World, www.gamsworld.org/global/globallib)")
MODELS_FROM = "model: lanl-ansi/MINLPLib.jl, instances/{path}.jl"
EQ_TOL = 1e-6

R3, R2 = sp.sqrt(3), sp.sqrt(2)
# published optimum, and the published solution where it is known exactly
F_STAR = {
    "HS007": (-R3, (0, R3)), "HS010": (-1, (0, 1)), "HS011": (-8.498464223, None),
    "HS014": (9 - sp.Rational(23, 8) * sp.sqrt(7),
              ((sp.sqrt(7) - 1) / 2, (sp.sqrt(7) + 1) / 4)),
    "HS015": (306.5, (0.5, 2)), "HS018": (5, (sp.sqrt(250), sp.sqrt(2.5))),
    "HS019": (-6961.81381, None), "HS020": (sp.Rational(163, 2) - 25 * R3, (0.5, R3 / 2)),
    "HS024": (-1, (3, R3)), "HS029": (-16 * R2, (4, 2 * R2, 2)), "HS032": (1, (0, 0, 1)),
    "HS033": (R2 - 6, (0, R2, R2)),
    "HS034": (-sp.log(sp.log(10)), (sp.log(sp.log(10)), sp.log(10), 10)),
    "HS037": (-3456, (24, 12, 12)), "HS039": (-1, (1, 1, 0, 0)),
    "HS041": (sp.Rational(52, 27), (sp.Rational(2, 3), sp.Rational(1, 3), sp.Rational(1, 3), 2)),
    "HS042": (28 - 10 * R2, (2, 2, sp.Rational(3, 5) * R2, sp.Rational(4, 5) * R2)),
    "HS045": (1, (1, 2, 3, 4, 5)), "HS048": (0, (1, 1, 1, 1, 1)),
    "HS050": (0, (1, 1, 1, 1, 1)), "HS053": (sp.Rational(176, 43), None),
    "HS060": (0.0325682003, None), "HS061": (-143.6461422, None),
    "HS078": (-2.91970041, None), "HS084": (-5280335.133, None), "HS093": (135.075961, None),
    "HS095": (0.015619514, None), "HS097": (3.1358091, None), "HS114": (-1768.80696, None),
    "HS116": (97.5875096, None), "HS118": (664.8204500, None), "HS119": (244.899698, None),
    "ex2_1_1": (-17, (1, 1, 0, 1, 0)), "ex2_1_2": (-213, None), "ex2_1_3": (-15, None),
    "ex2_1_4": (-11, None), "ex2_1_5": (-268.0146, None), "ex2_1_6": (-39, None),
    "ex2_1_7": (-4150.4101, None), "ex2_1_8": (15639, None), "ex2_1_9": (-0.375, None),
    "ex2_1_10": (49318.018, None), "ex3_1_3": (-310, None), "ex3_1_4": (-4, None),
    "ex4_1_8": (-16.7389, None), "ex5_2_4": (-450, None), "ex6_1_2": (-0.0325, None),
    "ex6_1_4": (-0.2945, None), "ex8_1_7": (0.0293, None),
    "ex14_1_1": (0, None), "ex14_1_2": (0, None), "ex14_1_3": (0, None),
    "ex14_1_5": (0, None), "ex14_1_6": (0, None), "ex14_1_7": (0, None),
    "st_e02": (201.1593, None), "st_e11": (189.3116, None),
    "st_e17": (376.2919, None), "st_e19": (-118.7048, None),
}
# name -> the optimum the reference runs reproduced, where the source prints too few
# digits and rounds below the optimum (filled in from benchmarks/results/unseen.md)
FULL_DIGITS: dict[str, float] = {
    # Gibbs free energy problems whose f moves with the equalities' last digits: the
    # best end point of the 20 IPOPT starts, equalities exact (it rounds to the printed
    # value; points inside the 1e-6 band reach lower, and count as successes)
    "ex6_1_2": -0.03246375011345083, "ex6_1_4": -0.2945412877783227,
    # printed 0.0293; IPOPT's best end point, equalities exact
    "ex8_1_7": 0.029310830720959302,
}
# Thomson problem minima (published table: Wales and Ulker (2006), Phys. Rev. B 74)
THOMSON = {10: 32.716949460, 20: 150.881568334}


def record(name, objective, constraints, x, bounds, f_star, x_star, source, tags,
           full_digits=None, eq_tol=EQ_TOL) -> BenchmarkProblem:
    """The problem's record, f* replaced by the reproduced optimum where ``full_digits``
    (default: this set's :data:`FULL_DIGITS`) holds one; both held-out sets build theirs
    with it."""
    full_digits = FULL_DIGITS if full_digits is None else full_digits
    if name in full_digits:
        source += (f" The source prints f* = {float(f_star):.10g}; the optimum reproduced "
                   f"by the reference runs is {full_digits[name]!r}, used here.")
        f_star = full_digits[name]
    return BenchmarkProblem(
        name=name, objective=objective, constraints=tuple(constraints), variables=tuple(x),
        bounds=dict(zip(x, bounds)), f_star=float(f_star),
        x_star=tuple(float(v) for v in x_star) if x_star is not None else (),
        source=source, tags=tuple(tags), eq_tol=eq_tol)


def model_parser(names):
    """``(variables, parse)`` of a model's variable names (an int n: ``x1 .. xn``):
    real symbols, and sympify with them and the functions the models use."""
    names = [f"x{i}" for i in range(1, names + 1)] if isinstance(names, int) else names.split()
    x = [sp.Symbol(s, real=True) for s in names]
    loc = dict(zip(names, x), Eq=sp.Eq, log=sp.log, exp=sp.exp, sqrt=sp.sqrt)
    return x, functools.partial(sp.sympify, locals=loc)


def _from_model(name) -> BenchmarkProblem:
    key, names, bounds, objective, constraints = MODELS[name]
    x, parse = model_parser(names)
    f_star, x_star = F_STAR[name]
    hs = name.startswith("HS")
    lib = "prince" if hs else "global"
    family = "hock-schittkowski" if hs else "globallib"
    path = key if "/" in key else f"{lib}/{key}"
    source = f"{BOOK if hs else GLOBALLIB}: f*. {MODELS_FROM.format(path=path)}."
    return record(name, parse(objective), [parse(c) for c in constraints], x, bounds,
                   f_star, x_star, source, (family,))


def thomson(N: int) -> BenchmarkProblem:
    """N unit vectors with minimum Coulomb energy sum 1 / |p_i - p_j| (COPS ``elec``)."""
    p = [sp.symbols(f"x{i} y{i} z{i}", real=True) for i in range(1, N + 1)]
    energy = sum(1 / sp.sqrt(sum((a - b) ** 2 for a, b in zip(p[i], p[j])))
                 for i in range(N) for j in range(i + 1, N))
    cons = [sp.Eq(a**2 + b**2 + c**2 - 1, 0) for a, b, c in p]
    x = [v for q in p for v in q]
    source = ("Thomson problem (Dolan, More and Munson (2004), COPS 3.0, problem elec); "
              "f*: Wales, D. J. and Ulker, S. (2006), Phys. Rev. B 74, 212101, table of "
              "global minima")
    return record(f"thomson_{N}", energy, cons, x, [(-1, 1)] * len(x), THOMSON[N], None,
                   source, ("scalable",))


def rosenbrock_ball(n: int) -> BenchmarkProblem:
    """Chained Rosenbrock in the ball sum x_i^2 <= n: f* = 0 at x = (1, ..., 1)."""
    x = sp.symbols(f"x1:{n + 1}", real=True)
    f = sum(100 * (x[i + 1] - x[i] ** 2) ** 2 + (1 - x[i]) ** 2 for i in range(n - 1))
    cons = [sum(v**2 for v in x) - n <= 0]
    source = ("Rosenbrock's function constrained to a disk (Simionescu, P. A. (2014), "
              "Computer-aided graphing and simulation tools, CRC), scaled to n variables "
              "with the ball through x = 1; f* = 0 there (f >= 0 everywhere)")
    return record(f"rosenbrock_ball_{n}", f, cons, x, [(-2, 2)] * n, 0, [1] * n, source,
                   ("scalable",))


def _simplex_projection(c: np.ndarray) -> np.ndarray:
    """The Euclidean projection of c onto {x >= 0, sum x = 1} (Held, Wolfe, Crowder)."""
    u = np.sort(c)[::-1]
    cs = np.cumsum(u) - 1.0
    k = np.nonzero(u - cs / np.arange(1, c.size + 1) > 0)[0][-1]
    return np.maximum(c - cs[k] / (k + 1), 0.0)


def simplex_projection(n: int) -> BenchmarkProblem:
    """min sum (x_i - c_i)^2 over the simplex, c_i = cos(i) (a convex QP)."""
    x = sp.symbols(f"x1:{n + 1}", real=True)
    c = np.cos(np.arange(1, n + 1, dtype=float))
    f = sum((v - float(ci)) ** 2 for v, ci in zip(x, c))
    xs = _simplex_projection(c)
    f_star = math.fsum((xs - c) ** 2)
    source = ("projection onto the simplex, c_i = cos(i); f* from the exact algorithm of "
              "Held, M., Wolfe, P. and Crowder, H. (1974), Math. Programming 6, 62-88")
    return record(f"simplex_projection_{n}", f, [sp.Eq(sum(x) - 1, 0)], x,
                   [(0, 1)] * n, f_star, xs, source, ("scalable", "convex"))


SCALABLE = {"thomson_10": lambda: thomson(10), "thomson_20": lambda: thomson(20),
            "rosenbrock_ball_30": lambda: rosenbrock_ball(30),
            "rosenbrock_ball_100": lambda: rosenbrock_ball(100),
            "simplex_projection_30": lambda: simplex_projection(30),
            "simplex_projection_100": lambda: simplex_projection(100),
            "simplex_projection_300": lambda: simplex_projection(300)}


def names() -> tuple[str, ...]:
    """The set's problem names, models first, then the scalable families."""
    return tuple(MODELS) + tuple(SCALABLE)


@functools.cache
def get(name: str) -> BenchmarkProblem:
    """The record of problem `name`."""
    if name in SCALABLE:
        return SCALABLE[name]()
    if name in MODELS:
        return _from_model(name)
    raise KeyError(f"unknown unseen problem {name!r}; known: {', '.join(names())}")
