"""scipy interop: a problem in ``scipy.optimize``'s own form, a result as ``OptimizeResult``.

:func:`problem_to_scipy` hands a :class:`~constropt.Problem` to scipy's solvers: the
objective in minimization sense with its exact gradient, every constraint as a
``NonlinearConstraint`` with its exact Jacobian, the search box as ``Bounds``, the box
centre as a start and the integrality mask, all over the flat ``x_array`` layout.  The
functions are the generated NumPy ``leaves`` and ``derivatives`` (float64), the code
the polish step runs; the constraints are grouped by leaf kind, not in the polish
step's SLSQP form, because scipy's ``NonlinearConstraint`` states bounds directly.

:func:`result_to_scipy` turns a :class:`~constropt.Result` into a
``scipy.optimize.OptimizeResult`` with scipy's field names and conventions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._errors import OptionError

__all__ = ["ScipyProblem", "problem_to_scipy", "result_to_scipy", "SCIPY_STATUS",
           "STRICT_MARGIN"]

#: A strict inequality ``c(x) < 0`` is handed to scipy as ``c(x) <= -STRICT_MARGIN``.
STRICT_MARGIN = 1e-9

#: ``OptimizeResult.status`` for each :class:`~constropt.Status` (0 is a normal end).
SCIPY_STATUS = {
    "CONVERGED": 0,
    "MAX_GENERATIONS": 1,
    "MAX_EVALS": 2,
    "TIME_LIMIT": 3,
    "TARGET": 4,
    "CALLBACK": 5,
    "INFEASIBLE": 6,
    "UNBOUNDED": 7,
    "INTERRUPTED": 8,
    "UNDEFINED": 9,
}

_UNDEFINED = 1e300  # the objective where it is NaN; constraints: violated by this


@dataclass(frozen=True, eq=False)
class ScipyProblem:
    """A :class:`~constropt.Problem` in ``scipy.optimize``'s form.

    Every callable takes ``x`` of shape ``(n,)`` in ``Problem.variables`` order (the
    layout of ``Result.x_array``), so the fields go straight into scipy::

        sp_ = problem.to_scipy()
        minimize(sp_.fun, sp_.x0, jac=sp_.jac, bounds=sp_.bounds,
                 constraints=sp_.constraints, method="trust-constr")
        differential_evolution(sp_.fun, sp_.bounds, constraints=sp_.constraints,
                               integrality=sp_.integrality)

    Attributes
    ----------
    fun : callable
        ``fun(x) -> float``: the objective in **minimization** sense (negated for a
        maximize problem); ``1e300`` where it is undefined (NaN).
    jac : callable or str
        ``jac(x) -> ndarray, shape (n,)``: the exact gradient of ``fun`` (derived
        symbolically, or by autograd through the generated code for vector variables);
        ``"2-point"`` (finite differences) where constropt cannot build derivatives.
    constraints : tuple of scipy.optimize.NonlinearConstraint
        The problem's constraints in scipy's ``lb <= c(x) <= ub`` form, with exact
        Jacobians.  Empty for an unconstrained problem.
    bounds : scipy.optimize.Bounds
        The search box (``Problem.lower``, ``Problem.upper``).
    x0 : ndarray, shape (n,)
        The centre of the box (integer variables rounded), a start for local solvers.
    integrality : ndarray of bool, shape (n,)
        Which entries are integer variables (``differential_evolution``'s
        ``integrality``; gradient solvers ignore it).
    variables : tuple
        The problem's variables, the order of ``x``.
    maximize : bool
        Whether ``fun`` is the negated user objective.
    """

    fun: Any
    jac: Any
    constraints: tuple
    bounds: Any
    x0: np.ndarray
    integrality: np.ndarray
    variables: tuple
    maximize: bool

    def user_fun(self, x) -> float:
        """The objective in the user's sense at ``x`` (``-fun(x)`` for maximize problems)."""
        f = self.fun(x)
        return -f if self.maximize else f


def _disjunctive_constraints(problem) -> list[int]:
    """Indices of user constraints holding an ``Or`` (their leaves are not conjunctive)."""
    from ..problem._constraints import AllOf, AnyOf

    def has_or(node) -> bool:
        if isinstance(node, AnyOf):
            return True
        if isinstance(node, AllOf):
            return any(has_or(k) for k in node.children)
        return False

    return [k for k, c in enumerate(problem._constraints) if has_or(c.tree)]


class _PointFunctions:
    """The generated NumPy ``leaves`` and ``derivatives`` at one point, float64, cached.

    scipy asks for the objective, the constraints and their derivatives at the same
    ``x`` one after another; each generated function runs once per distinct ``x``.
    """

    def __init__(self, problem, pvec: np.ndarray):
        self.n = problem.n
        self.P = pvec.reshape(-1, 1)
        self.leaves_fn = problem.lowering.functions("numpy")["leaves"]
        try:
            self.deriv_fn = problem.lowering.derivatives("numpy")
        except Exception:  # no exact derivatives for this problem: finite differences
            self.deriv_fn = None
        self._vkey = self._dkey = None

    def _x(self, x) -> np.ndarray:
        return np.asarray(x, dtype=np.float64).reshape(self.n, 1)

    def values(self, x):
        """``(f, C)``: objective (user's sense) and every leaf value ``c(x)``, shape (L,)."""
        X = self._x(x)
        key = X.tobytes()
        if key != self._vkey:
            with np.errstate(all="ignore"):
                f, C = self.leaves_fn(X, self.P)
            self._v = (float(np.asarray(f, dtype=np.float64).reshape(-1)[0]),
                       np.asarray(C, dtype=np.float64).reshape(-1))
            self._vkey = key
        return self._v

    def derivatives(self, x):
        """``(g, J)``: gradient (n,) and leaf Jacobian (L, n), exact."""
        X = self._x(x)
        key = X.tobytes()
        if key != self._dkey:
            with np.errstate(all="ignore"):
                g, J = self.deriv_fn(X, self.P)
            J = np.asarray(J, dtype=np.float64)
            self._d = (np.asarray(g, dtype=np.float64).reshape(-1),
                       J.reshape(J.shape[0], self.n) if J.size else np.zeros((0, self.n)))
            self._dkey = key
        return self._d


def problem_to_scipy(problem, parameters=None, *, eq_tol: float | None = None,
                     strict_margin: float = STRICT_MARGIN) -> ScipyProblem:
    """Build the :class:`ScipyProblem` of ``problem``; see :meth:`constropt.Problem.to_scipy`."""
    from scipy.optimize import Bounds, NonlinearConstraint

    from ._polish import conjunctive_leaves

    if eq_tol is None:
        eq_tol = problem.eq_tol
    for name, val in (("eq_tol", eq_tol), ("strict_margin", strict_margin)):
        if isinstance(val, bool) or not isinstance(val, (int, float)) or not (
                np.isfinite(val) and val >= 0):
            raise OptionError(f"{name} must be a finite number >= 0, got {val!r}")
    pvec = problem.parameter_vector(parameters)
    n = problem.n
    pf = _PointFunctions(problem, pvec)
    sign = -1.0 if problem.maximize else 1.0
    exact = pf.deriv_fn is not None

    def fun(x):
        f = sign * pf.values(x)[0]
        return f if np.isfinite(f) else _UNDEFINED

    def jac(x):
        return sign * pf.derivatives(x)[0]

    # leaves every feasible point satisfies (those under an Or are handled below), one
    # constraint per kind: c <= 0 and c < 0 as -c >= 0 / -c >= strict_margin, h == 0 as
    # the band |h| <= eq_tol
    conj = conjunctive_leaves(problem)
    constraints = []
    for kind in ("eq", "le", "lt"):
        idx = np.array([k for k in conj if problem.leaves[k].kind == kind], dtype=int)
        if idx.size == 0:
            continue
        if kind == "eq":
            lb, ub, s = -float(eq_tol), float(eq_tol), 1.0
        else:
            lb, ub, s = (float(strict_margin) if kind == "lt" else 0.0), np.inf, -1.0

        def cfun(x, idx=idx, s=s):
            c = s * pf.values(x)[1][idx]
            # NaN reads as violated: far below lb for ">= lb", far outside the band
            return np.where(np.isnan(c), -_UNDEFINED if s < 0 else _UNDEFINED, c)

        def cjac(x, idx=idx, s=s):
            return s * pf.derivatives(x)[1][idx]

        constraints.append(NonlinearConstraint(cfun, lb, ub,
                                               jac=cjac if exact else "2-point"))

    orc = _disjunctive_constraints(problem)
    if orc:
        from ..problem._evaluate import report_numpy

        rows = np.array(orc, dtype=int)

        def vfun(x):
            _, V = report_numpy(problem, np.asarray(x, dtype=np.float64).reshape(n, 1), pvec)
            v = V[rows, 0]
            return np.where(np.isfinite(v), v, _UNDEFINED)

        constraints.append(NonlinearConstraint(vfun, -np.inf, 0.0, jac="2-point"))

    x0 = (problem.lower + problem.upper) / 2
    integer = problem.integer
    x0 = np.where(integer, np.clip(np.round(x0), problem.lower, problem.upper), x0)
    x0.setflags(write=False)
    integer.setflags(write=False)
    return ScipyProblem(fun=fun, jac=jac if exact else "2-point",
                        constraints=tuple(constraints),
                        bounds=Bounds(problem.lower, problem.upper), x0=x0,
                        integrality=integer, variables=problem.variables,
                        maximize=problem.maximize)


def result_to_scipy(result):
    """The ``OptimizeResult`` of ``result``; see :meth:`constropt.Result.to_scipy`."""
    from scipy.optimize import OptimizeResult

    problem = getattr(result, "problem", None)
    if problem is None:
        raise OptionError("to_scipy needs a Result returned by constropt.solve (it has no "
                          "problem attached, so the objective's sense is unknown)")
    sign = -1.0 if problem.maximize else 1.0
    return OptimizeResult(
        x=np.array(result.x_array, dtype=np.float64),
        fun=sign * float(result.fun),
        user_fun=float(result.fun),
        success=bool(result.success),
        status=SCIPY_STATUS.get(result.status.name, -1),
        message=result.message,
        nit=int(result.nit),
        nfev=int(result.nfev),
        maxcv=float(result.maxcv),
        feasible=bool(result.feasible),
        violations=np.array(result.violations, dtype=np.float64),
        constropt_status=result.status,
    )
