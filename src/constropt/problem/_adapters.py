"""Per-constraint values for other libraries: ``kind="constraints"`` and ``Problem.to_pymoo``.

Each constraint of a problem (one entry of ``problem.constraints``) becomes one signed
value ``g(x)`` with **``g <= 0`` exactly where the constraint holds**, the convention of
pymoo's ``G`` and of most GA libraries' constraint hooks:

- ``c(x) <= 0``: ``c``;
- ``c(x) < 0``: ``c`` where ``c < 0``, else ``max(c, 1e-30)`` (the boundary is violated);
- ``h(x) == 0``: ``|h| - eq_tol``;
- a conjunction (``And``): the largest of its parts, a disjunction (``Or``): the smallest;
- NaN (an undefined constraint): ``+inf``.

The values come from the generated ``leaves`` function (the raw value of every leaf), so
the NumPy and torch paths, compiled or not, compute the same thing.  pymoo is an optional
dependency, imported only by :func:`problem_to_pymoo`.
"""

from __future__ import annotations

import math

import numpy as np

from .._errors import OptionError
from ..lowering._tree import EQ, LT, AllOf, AnyOf, Leaf

__all__ = ["constraint_plan", "signed_constraints", "problem_to_pymoo", "TINY"]

#: The smallest violation of a strict inequality on its boundary (as ``viol_lt``).
TINY = 1e-30


def constraint_plan(problem) -> tuple:
    """One nested tuple per constraint, leaves numbered as in ``problem.leaves``:
    ``("leaf", index, kind)``, ``("all", children)``, ``("any", children)``."""
    counter = iter(range(len(problem.leaves)))

    def walk(node):
        if isinstance(node, Leaf):
            return ("leaf", next(counter), node.kind)
        kids = tuple(walk(k) for k in node.children)
        if isinstance(node, AllOf):
            return ("all", kids)
        assert isinstance(node, AnyOf)
        return ("any", kids)

    return tuple(walk(c.tree) for c in problem._constraints)


def _ops(xp):
    """``(where, maximum, minimum, clamp_tiny)`` of NumPy or torch."""
    if xp is np:
        return np.where, np.maximum, np.minimum, lambda c: np.maximum(c, TINY)
    return xp.where, xp.maximum, xp.minimum, lambda c: xp.clamp(c, min=TINY)


def signed_constraints(C, plan: tuple, eq_tol, xp, axis: int = 0):
    """The signed value of every constraint from the leaf values ``C`` (L, S): stacked
    along ``axis`` (0: (m, S); -1: (S, m))."""
    where, maximum, minimum, tiny = _ops(xp)
    inf = math.inf

    def value(node):
        if node[0] == "leaf":
            c = C[node[1]]
            if node[2] == EQ:
                a = abs(c) - eq_tol
                return where(a != a, inf, a)
            if node[2] == LT:
                return where(c < 0, c, where(c >= 0, tiny(c), inf))
            return where(c != c, inf, c)
        kids = [value(k) for k in node[1]]
        acc = kids[0]
        for k in kids[1:]:
            acc = maximum(acc, k) if node[0] == "all" else minimum(acc, k)
        return acc

    cols = [value(node) for node in plan]
    S = C.shape[1:]
    if not cols:
        shape = (0,) + tuple(S) if axis == 0 else tuple(S) + (0,)
        return np.zeros(shape, dtype=C.dtype) if xp is np else \
            xp.zeros(shape, dtype=C.dtype, device=C.device)
    return xp.stack(cols, axis) if xp is np else xp.stack(cols, dim=axis)


def problem_to_pymoo(problem, parameters=None):
    """A ``pymoo.core.problem.Problem`` of ``problem`` (see :meth:`Problem.to_pymoo`)."""
    try:
        from pymoo.core.problem import Problem as PymooProblem
    except ImportError:  # pragma: no cover - the test extra installs pymoo
        raise OptionError("Problem.to_pymoo needs pymoo: pip install pymoo") from None
    plan = constraint_plan(problem)
    eq_cols = [k for k, node in enumerate(plan) if node[0] == "leaf" and node[2] == EQ]
    ieq_cols = [k for k in range(len(plan)) if k not in eq_cols]
    eq_leaves = [plan[k][1] for k in eq_cols]
    ieq_plan = tuple(plan[k] for k in ieq_cols)
    P = problem.parameter_vector(parameters).reshape(-1, 1)
    leaves_fn = problem.lowering.functions("numpy")["leaves"]
    sign = -1.0 if problem.maximize else 1.0
    tol = problem.eq_tol

    class ConstroptPymooProblem(PymooProblem):
        """constropt's problem for pymoo: ``F`` the objective in minimization sense,
        ``G`` one column per inequality-type constraint, ``H`` one per equality."""

        def __init__(self):
            super().__init__(n_var=problem.n, n_obj=1, n_ieq_constr=len(ieq_cols),
                             n_eq_constr=len(eq_cols), xl=problem.lower,
                             xu=problem.upper, vtype=float)
            self.constropt_problem = problem

        def _evaluate(self, x, out, *args, **kwargs):
            X = np.ascontiguousarray(np.asarray(x, dtype=np.float64).T)
            with np.errstate(all="ignore"):
                f, C = leaves_fn(X, P)
                F = sign * np.asarray(f, dtype=np.float64)
                out["F"] = np.where(np.isnan(F), math.inf, F).reshape(-1, 1)
                if ieq_cols:
                    out["G"] = signed_constraints(C, ieq_plan, tol, np, axis=-1)
                if eq_cols:
                    H = np.stack([C[i] for i in eq_leaves], axis=-1)
                    out["H"] = np.where(np.isnan(H), math.inf, H)

    return ConstroptPymooProblem()
