"""Classic bilinear and pooling problems, for certificates side by side with SCIP
(issue 27: ``benchmarks/certify_scip.py``).

The models (``benchmarks/_pooling_data.py``) are the GAMS models of GLOBALLib and of
MINLPLib 2 as lanl-ansi/MINLPLib.jl states them; every variable is bounded by the
model itself.  The problems and where they were first published:

* **Haverly 1, 2, 3** (Haverly, C. A. (1978), Studies of the behavior of recursion for
  the pooling problem, ACM SIGMAP Bulletin 25, 19-28; Haverly (1979), Behavior of
  recursion model - more studies, SIGMAP Bulletin 26, 22-28): in the p-formulation of
  Floudas et al. (1999), ``ex5_2_2_case1..3`` (GLOBALLib), and in the pq-formulation,
  ``pooling_haverly1pq..3pq`` (MINLPLib 2).
* **Ben-Tal 4, 5** (Ben-Tal, A., Eiger, G. and Gershovitz, V. (1994), Global
  minimization by reducing the duality gap, Math. Programming 63, 193-212):
  ``pooling_bental4pq``, ``pooling_bental5pq``; Ben-Tal 5 also in the p-formulation of
  Floudas et al., ``ex5_2_5``.
* **Foulds 2** (Foulds, L. R., Haugland, D. and Jornsten, K. (1992), A bilinear approach
  to the pooling problem, Optimization 24, 165-180): ``pooling_foulds2pq``.
* **Adhya 1-4** (Adhya, N., Tawarmalani, M. and Sahinidis, N. V. (1999), A Lagrangian
  approach to the pooling problem, Ind. Eng. Chem. Res. 38, 1956-1972):
  ``pooling_adhya1pq..4pq``.
* **RT2** (Audet, C., Brimberg, J., Hansen, P., Le Digabel, S. and Mladenovic, N.
  (2004), Pooling problem: alternate formulations and solution methods, Management
  Science 50, 761-776): ``pooling_rt2pq``.
* Floudas et al. (1999), *Handbook of test problems in local and global optimization*,
  chapter 5 (pooling and blending, bilinear): ``ex5_3_2`` (a three-pool blending
  problem), ``ex5_4_3``, ``ex5_4_4`` (heat-exchanger network design, bilinear);
  ``st_bpv1``, ``st_bpv2``, the bilinear programs of Tawarmalani and Sahinidis'
  test set (GLOBALLib).

``f_star``: the best known value that GLOBALLib / MINLPLib lists (:data:`F_STAR`, to
the digits given there), checked with SCIP 10 here on these very models with exact
equalities (``python benchmarks/pooling_problems.py``: 30 s each, gap limit 1e-9): SCIP
proved 18 of the 20 optimal at the listed value (to its feasibility tolerance 1e-6);
on ex5_4_4 its primal bound 10077.77529 matches the listing with a gap of 1e-7 left,
and on ex5_2_5 its primal bound -3500.00004 matches the listing (dual bound not closed
in 30 s).  Where the listing gives four decimals and SCIP proved the optimum, the record
carries SCIP's optimum to full digits (:data:`FULL_DIGITS`, its source says so); for
pooling_adhya3pq the value recorded in :data:`F_STAR` (-561.0453) lies below the optimum
SCIP proved (-561.0446939), so it cannot be a feasible value, and SCIP's optimum is
used.  Equalities are held to 1e-6
(``eq_tol``), as in benchmarks/unseen_problems.py.  Records are
:class:`constropt.benchmarks.BenchmarkProblem`.
"""

from __future__ import annotations

import functools

import sympy as sp
from _pooling_data import MODELS

from constropt.benchmarks import BenchmarkProblem

LIB = ("best known value as listed by GLOBALLib (GAMS World) and MINLPLib "
       "(www.minlplib.org)")
MODELS_FROM = "model: lanl-ansi/MINLPLib.jl, instances/{path}.jl"
EQ_TOL = 1e-6
CITE = {
    "ex5_2_2_case1": "Haverly 1 (Haverly (1978), ACM SIGMAP Bulletin 25, 19-28), "
                     "p-formulation of Floudas et al. (1999), section 5.2.2",
    "ex5_2_2_case2": "Haverly 2 (Haverly (1979), ACM SIGMAP Bulletin 26, 22-28), "
                     "p-formulation of Floudas et al. (1999), section 5.2.2",
    "ex5_2_2_case3": "Haverly 3 (Haverly (1979), ACM SIGMAP Bulletin 26, 22-28), "
                     "p-formulation of Floudas et al. (1999), section 5.2.2",
    "pooling_haverly1pq": "Haverly 1 (Haverly (1978)), pq-formulation (MINLPLib 2)",
    "pooling_haverly2pq": "Haverly 2 (Haverly (1979)), pq-formulation (MINLPLib 2)",
    "pooling_haverly3pq": "Haverly 3 (Haverly (1979)), pq-formulation (MINLPLib 2)",
    "pooling_bental4pq": "Ben-Tal 4 (Ben-Tal, Eiger and Gershovitz (1994), Math. "
                         "Programming 63, 193-212), pq-formulation (MINLPLib 2)",
    "pooling_bental5pq": "Ben-Tal 5 (Ben-Tal, Eiger and Gershovitz (1994)), "
                         "pq-formulation (MINLPLib 2)",
    "ex5_2_5": "Ben-Tal 5 (Ben-Tal, Eiger and Gershovitz (1994)), p-formulation of "
               "Floudas et al. (1999), section 5.2.5",
    "pooling_foulds2pq": "Foulds 2 (Foulds, Haugland and Jornsten (1992), Optimization "
                         "24, 165-180), pq-formulation (MINLPLib 2)",
    "pooling_adhya1pq": "Adhya 1 (Adhya, Tawarmalani and Sahinidis (1999), Ind. Eng. "
                        "Chem. Res. 38, 1956-1972), pq-formulation (MINLPLib 2)",
    "pooling_adhya2pq": "Adhya 2 (Adhya, Tawarmalani and Sahinidis (1999)), "
                        "pq-formulation (MINLPLib 2)",
    "pooling_adhya3pq": "Adhya 3 (Adhya, Tawarmalani and Sahinidis (1999)), "
                        "pq-formulation (MINLPLib 2)",
    "pooling_adhya4pq": "Adhya 4 (Adhya, Tawarmalani and Sahinidis (1999)), "
                        "pq-formulation (MINLPLib 2)",
    "pooling_rt2pq": "RT2 (Audet, Brimberg, Hansen, Le Digabel and Mladenovic (2004), "
                     "Management Science 50, 761-776), pq-formulation (MINLPLib 2)",
    "ex5_3_2": "Floudas et al. (1999), section 5.3.2 (blending with three pools)",
    "ex5_4_3": "Floudas et al. (1999), section 5.4.3 (heat-exchanger network, bilinear)",
    "ex5_4_4": "Floudas et al. (1999), section 5.4.4 (heat-exchanger network, bilinear)",
    "st_bpv1": "bilinear program (Tawarmalani and Sahinidis' test set, GLOBALLib st_bpv1)",
    "st_bpv2": "bilinear program (Tawarmalani and Sahinidis' test set, GLOBALLib st_bpv2)",
}
F_STAR = {
    "ex5_2_2_case1": -400, "ex5_2_2_case2": -600, "ex5_2_2_case3": -750,
    "pooling_haverly1pq": -400, "pooling_haverly2pq": -600, "pooling_haverly3pq": -750,
    "pooling_bental4pq": -450, "pooling_bental5pq": -3500, "ex5_2_5": -3500,
    "pooling_foulds2pq": -1100, "pooling_adhya1pq": -549.8031,
    "pooling_adhya2pq": -549.8031, "pooling_adhya3pq": -561.0453,
    "pooling_adhya4pq": -877.6457, "pooling_rt2pq": -4391.8258,
    "ex5_3_2": 1.8642, "ex5_4_3": 4845.4620, "ex5_4_4": 10077.7754,
    "st_bpv1": 10, "st_bpv2": -8,
}
# name -> SCIP's optimum, where the listing prints too few digits (filled in from
# ``python benchmarks/pooling_problems.py``)
FULL_DIGITS: dict[str, float] = {
    "pooling_adhya1pq": -549.803061332706, "pooling_adhya2pq": -549.8030646592632,
    "pooling_adhya3pq": -561.0446939409177, "pooling_adhya4pq": -877.6457405257593,
    "pooling_rt2pq": -4391.826091953861, "ex5_3_2": 1.8641594519919815,
    "ex5_4_3": 4845.461985002299,
}


def names() -> tuple[str, ...]:
    """The set's problem names."""
    return tuple(MODELS)


@functools.cache
def get(name: str) -> BenchmarkProblem:
    """The record of problem ``name``."""
    if name not in MODELS:
        raise KeyError(f"unknown pooling problem {name!r}; known: {', '.join(names())}")
    key, names_, bounds, objective, constraints = MODELS[name]
    names_ = names_.split()
    x = [sp.Symbol(s, real=True) for s in names_]
    loc = dict(zip(names_, x), Eq=sp.Eq)
    parse = functools.partial(sp.sympify, locals=loc)
    f_star = float(F_STAR[name])
    source = f"{CITE[name]}; f*: {LIB}. {MODELS_FROM.format(path=key)}."
    if name in FULL_DIGITS:
        source += (f" The listing prints f* = {f_star:.10g}; SCIP's optimum "
                   f"{FULL_DIGITS[name]!r} is used here.")
        f_star = FULL_DIGITS[name]
    return BenchmarkProblem(
        name=name, objective=parse(objective), constraints=tuple(parse(c) for c in constraints),
        variables=tuple(x), bounds=dict(zip(x, bounds)), f_star=f_star, x_star=(), source=source,
        tags=("pooling" if "pool" in key or name.startswith("ex5_2") else "bilinear",),
        eq_tol=EQ_TOL)


def _confirm(limit: float = 30.0) -> None:
    """SCIP on every model, gap 1e-9: its optimum against the listed f*."""
    import numpy as np
    from _suite_solvers import final_check

    for name in names():
        p = get(name).problem()
        m = p.to_scip(eq_tol=0.0)
        m.hideOutput()
        m.setParam("limits/time", limit)
        m.setParam("limits/gap", 1e-9)
        m.optimize()
        x = np.array([m.getVal(v) for v in m.data["variables"]])
        _, f, feas, mcv = final_check(p, p.parameter_vector(None), x)
        print(f"{name:20s} listed {F_STAR[name]!r:>12} SCIP {m.getStatus():9s} primal "
              f"{m.getPrimalbound()!r} dual {m.getDualbound()!r} at its point f={f!r} "
              f"feasible={feas} maxcv={mcv:.1e}", flush=True)


if __name__ == "__main__":
    _confirm()
