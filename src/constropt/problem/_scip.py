"""A problem as a SCIP model (:meth:`constropt.Problem.to_scip`).

:func:`problem_to_scip` translates the sympy objective and constraints into a
``pyscipopt.Model``: polynomials, ``exp``, ``log``, ``sqrt`` and real powers, ``Abs``,
``sin`` and ``cos``; the problem's search box (after bound propagation) as variable
bounds; integer variables as SCIP integers.  A nonlinear objective becomes an epigraph
variable (SCIP's objective is linear).  The constraints every feasible point must
satisfy are translated by the rules of :mod:`._scipy`: ``c <= 0`` as is, ``c < 0`` as
``c <= -strict_margin``, ``h == 0`` as ``|h| <= eq_tol``.  Anything else (``Or``,
``Min``, ``floor``, vector variables, ...) raises
:class:`~constropt.UnsupportedExpressionError` naming it.

The model is built from plain picklable data (:func:`model_spec`), so that the
cross-check's SCIP run (:mod:`constropt.finish._scip`) can build it in a child process.
pyscipopt is an optional dependency (``pip install "constropt[scip]"``), imported only
when a model is built.
"""

from __future__ import annotations

import math
from numbers import Number

import numpy as np
import sympy as sp

from .._errors import OptionError, UnsupportedExpressionError
from ._scipy import STRICT_MARGIN, _disjunctive_constraints, conjunctive_leaves

__all__ = ["problem_to_scip", "model_spec", "build_model", "require_pyscipopt"]

_INSTALL = 'pip install pyscipopt (or pip install "constropt[scip]")'


def require_pyscipopt(what: str = "SCIP"):
    """The ``pyscipopt`` module, or an :class:`ImportError` saying how to install it."""
    try:
        import pyscipopt  # optional, and slow to import: only when a model is built
    except ImportError:
        raise ImportError(f"{what} needs pyscipopt, which is not installed: "
                          f"{_INSTALL}") from None
    return pyscipopt


class _Translator:
    """sympy expression -> pyscipopt expression, over the model's variables."""

    def __init__(self, scip, symbols: dict, params: dict, where: str = ""):
        self.scip = scip
        self.symbols = symbols
        self.params = params
        self.where = where

    def unsupported(self, node, why: str = "") -> UnsupportedExpressionError:
        name = node.func.__name__ if isinstance(node, sp.Basic) else type(node).__name__
        extra = f" ({why})" if why else ""
        return UnsupportedExpressionError(
            f"to_scip: SCIP has no counterpart of {name}{extra} in {self.where}: {node}; "
            "supported are polynomials, real powers, exp, log, sqrt, Abs, sin and cos")

    def __call__(self, e):
        s = self.scip
        if e in self.symbols:
            return self.symbols[e]
        if e in self.params:
            return self.params[e]
        if e.is_Number or e.is_NumberSymbol:
            v = float(e)
            if not math.isfinite(v):
                raise self.unsupported(e, "not a finite number")
            return v
        if isinstance(e, sp.Add):
            return sum((self(a) for a in e.args), 0.0)
        if isinstance(e, sp.Mul):
            out = 1.0
            for a in e.args:
                out = out * self(a)
            return out
        if isinstance(e, sp.Pow):
            return self._pow(e)
        if e.func in (sp.exp, sp.log, sp.sin, sp.cos, sp.Abs) and len(e.args) == 1:
            arg = self(e.args[0])
            if e.func is sp.Abs:
                return abs(arg)
            fn = {sp.exp: s.exp, sp.log: s.log, sp.sin: s.sin, sp.cos: s.cos}[e.func]
            return fn(arg)
        raise self.unsupported(e)

    def _pow(self, e):
        base, ex = e.args
        if ex.free_symbols & set(self.symbols):
            if base.is_Number and base > 0:  # a**x = exp(x log a)
                return self.scip.exp(self(ex) * math.log(float(base)))
            raise self.unsupported(e, "a power whose exponent depends on a variable")
        k = ex.xreplace({p: sp.Float(v) for p, v in self.params.items()})
        if not k.is_number:
            raise self.unsupported(e)
        b = self(base)
        if k == sp.Rational(1, 2):
            return self.scip.sqrt(b) if not isinstance(b, Number) else math.sqrt(b)
        if k.is_Integer:
            return b ** int(k)
        return b ** float(k)


def _check_margin(name, val) -> None:
    if val is not None and (isinstance(val, bool) or not isinstance(val, Number)
                            or not (math.isfinite(val) and val >= 0)):
        raise OptionError(f"{name} must be a finite number >= 0, got {val!r}")


def model_spec(problem, pvec, *, eq_tol=None, strict_margin: float = STRICT_MARGIN,
               inside: float = 0.0) -> dict:
    """What the SCIP model is built from, as plain picklable data: the objective and the
    conjunctive constraint leaves with the parameter values put in, the box, the
    integer flags and the rules of the constraints (see :func:`build_model`)."""
    if problem.has_vector_variables:
        raise UnsupportedExpressionError("to_scip supports scalar variables only; this "
                                         f"problem has vector variables {problem.variables}")
    orc = _disjunctive_constraints(problem)
    if orc:
        k = orc[0]
        raise UnsupportedExpressionError(
            f"to_scip: constraint {k} ({problem.constraints[k]}) holds an Or, which the "
            "SCIP model has no counterpart of")
    for name, val in (("eq_tol", eq_tol), ("strict_margin", strict_margin),
                      ("inside", inside)):
        _check_margin(name, val)
    values = {p: sp.Float(float(v)) for p, v in zip(
        problem.layout.parameters, np.asarray(pvec, dtype=np.float64).reshape(-1))}
    leaves = problem.leaves
    return {
        "symbols": tuple(problem.variables),
        "objective": problem.objective.xreplace(values),
        "leaves": tuple((k, leaves[k].expr.xreplace(values), leaves[k].kind)
                        for k in conjunctive_leaves(problem)),
        "lower": [float(v) for v in problem.lower], "upper": [float(v) for v in problem.upper],
        "integer": [bool(v) for v in problem.integer], "maximize": bool(problem.maximize),
        "eq_tol": float(problem.eq_tol if eq_tol is None else eq_tol),
        "strict_margin": float(strict_margin), "inside": float(inside),
    }


def build_model(scip, spec: dict):
    """The ``pyscipopt.Model`` of a :func:`model_spec`."""
    maximize = spec["maximize"]
    model = scip.Model(f"constropt: {'maximize' if maximize else 'minimize'} "
                       f"{spec['objective']}"[:200])
    symbols = {}
    for v, lo, hi, integer in zip(spec["symbols"], spec["lower"], spec["upper"],
                                  spec["integer"]):
        symbols[v] = model.addVar(str(v), vtype="I" if integer else "C",
                                  lb=lo if math.isfinite(lo) else None,
                                  ub=hi if math.isfinite(hi) else None)
    band, inside = spec["eq_tol"], spec["inside"]
    for k, expr, kind in spec["leaves"]:
        c = _Translator(scip, symbols, {}, f"constraint leaf {expr} ({kind} 0)")(expr)
        if isinstance(c, Number):  # a constant leaf: a fixed verdict, nothing to model
            continue
        if kind == "eq":
            model.addCons(c <= band, name=f"c{k}_hi")
            model.addCons(c >= -band, name=f"c{k}_lo")
        else:
            margin = max(spec["strict_margin"], inside) if kind == "lt" else inside
            model.addCons(c <= -margin, name=f"c{k}")
    f = _Translator(scip, symbols, {}, "the objective")(spec["objective"])
    sense = "maximize" if maximize else "minimize"
    epigraph = None
    if isinstance(f, scip.Expr) and f.degree() <= 1:
        model.setObjective(f, sense)
    elif isinstance(f, Number):  # a constant objective: any feasible point is optimal
        model.setObjective(0.0 * next(iter(symbols.values())) + f, sense)
    else:  # SCIP's objective is linear: t >= f (minimize t) or t <= f (maximize t)
        epigraph = model.addVar("objective", vtype="C", lb=None, ub=None)
        model.addCons(epigraph - f <= 0 if maximize else f - epigraph <= 0, name="objective")
        model.setObjective(epigraph, sense)
    model.data = {"variables": tuple(symbols[v] for v in spec["symbols"]),
                  "symbols": dict(symbols), "objective": epigraph}
    return model


def problem_to_scip(problem, parameters=None, *, eq_tol=None,
                    strict_margin: float = STRICT_MARGIN):
    """The ``pyscipopt.Model`` of ``problem``; see :meth:`constropt.Problem.to_scip`."""
    scip = require_pyscipopt("Problem.to_scip")
    spec = model_spec(problem, problem.parameter_vector(parameters), eq_tol=eq_tol,
                      strict_margin=strict_margin)
    return build_model(scip, spec)
