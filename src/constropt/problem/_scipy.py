"""The one bridge to scipy: a problem's objective, gradient and constraints as scipy wants them.

Every caller builds its scipy functions here, so they share one reading of the problem
and one strict-margin rule:

- the polish step (:mod:`._polish`, SLSQP over the free genes, integer genes fixed),
- the cross-check's references (:mod:`._crosscheck`: multistart SLSQP through the polish,
  ``differential_evolution`` with :class:`scipy.optimize.NonlinearConstraint`),
- :meth:`constropt.Problem.to_scipy` (:func:`problem_to_scipy`, a :class:`ScipyProblem`).

The functions are the generated NumPy ``leaves`` and ``derivatives`` (float64) of the
lowering, evaluated once per distinct point.  Constraint leaves every feasible point
must satisfy (those not under an ``Or``) are grouped by kind, as bounds on the raw leaf
value ``c(x)``:

- ``c <= 0``  ->  ``c(x) <= -tighten``
- ``c < 0``   ->  ``c(x) <= -max(strict_margin, tighten)``  (**the strict-margin rule**:
  a strict inequality is handed to scipy as a non-strict one, :data:`STRICT_MARGIN`
  inside the boundary, by every caller)
- ``h == 0``  ->  ``-max(eq_tol - tighten, 0) <= h(x) <= max(eq_tol - tighten, 0)``

``tighten`` (default 0) is a local solver's own safety distance: the polish retries with
a small one when SLSQP ends a hair outside an active constraint.  A NaN constraint value
reads as violated (``1e300``); a NaN or infinite objective as ``1e300``.

:func:`result_to_scipy` turns a :class:`~constropt.Result` into a
``scipy.optimize.OptimizeResult`` with scipy's field names and conventions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._errors import OptionError
from ._constraints import AllOf, AnyOf, Leaf
from ._evaluate import report_numpy

__all__ = ["ScipyProblem", "ScipyBridge", "problem_to_scipy", "result_to_scipy",
           "conjunctive_leaves", "SCIPY_STATUS", "STRICT_MARGIN"]

#: A strict inequality ``c(x) < 0`` is handed to scipy as ``c(x) <= -STRICT_MARGIN``
#: (by the polish, the cross-check and ``to_scipy`` alike).
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
    "NOT_CONFIRMED": 10,
}

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

    def user_fun(self, x: np.ndarray) -> float:
        """The objective in the user's sense at ``x`` (``-fun(x)`` for maximize problems)."""
        f = self.fun(x)
        return -f if self.maximize else f


_UNDEFINED = 1e300  # the objective where it is NaN; constraints: violated by this


def conjunctive_leaves(problem) -> list[int]:
    """Indices (into ``problem.leaves``) of leaves every feasible point must satisfy."""
    out, k = [], 0

    def walk(node, conj):
        nonlocal k
        if isinstance(node, Leaf):
            if conj:
                out.append(k)
            k += 1
            return
        for child in node.children:
            walk(child, conj and isinstance(node, AllOf))

    for c in problem._constraints:
        walk(c.tree, True)
    return out


def _disjunctive_constraints(problem) -> list[int]:
    """Indices of user constraints holding an ``Or`` (their leaves are not conjunctive)."""

    def has_or(node) -> bool:
        if isinstance(node, AnyOf):
            return True
        if isinstance(node, AllOf):
            return any(has_or(k) for k in node.children)
        return False

    return [k for k, c in enumerate(problem._constraints) if has_or(c.tree)]


class _Uncounted:
    """The counter of a bridge nobody counts: the polish passes its budgeted
    :class:`._polish.Counter`, the cross-check its own."""

    n, last = 0, None

    def add(self) -> None:
        pass


def _check_margin(name, val) -> float:
    if isinstance(val, bool) or not isinstance(val, (int, float)) or not (
            np.isfinite(val) and val >= 0):
        raise OptionError(f"{name} must be a finite number >= 0, got {val!r}")
    return float(val)


class ScipyBridge:
    """Objective, gradient and constraints of ``problem`` over its free genes, for scipy.

    Parameters
    ----------
    problem : Problem
    pvec : ndarray, shape (n_params,)
    free : ndarray of int, optional
        Indices of the genes scipy moves (default: all); the others keep ``x_fixed``.
    x_fixed : ndarray, shape (n,), optional
        The full point the free genes are written into (needed with ``free``).
    counter : object with ``add()`` and ``last``, optional
        Called before every evaluation of a generated function (the polish's
        :class:`._polish.Counter` counts and caps them); ``last`` receives the last
        point whose values were evaluated.
    eq_tol, strict_margin, tighten : float
        The constraint bounds, see the module docstring (``eq_tol`` default: the
        problem's).
    """

    def __init__(self, problem, pvec, *, free=None, x_fixed=None, counter=None,
                 eq_tol=None, strict_margin=STRICT_MARGIN, tighten=0.0):
        self.problem = problem
        self.n = problem.n
        self.free = None if free is None else np.asarray(free, dtype=int)
        self.x_fixed = None if x_fixed is None else np.asarray(x_fixed, dtype=np.float64)
        self.counter = counter if counter is not None else _Uncounted()
        self.P = np.asarray(pvec, dtype=np.float64).reshape(-1, 1)
        self.sign = -1.0 if problem.maximize else 1.0
        self.eq_tol = _check_margin("eq_tol", problem.eq_tol if eq_tol is None else eq_tol)
        self.strict_margin = _check_margin("strict_margin", strict_margin)
        self.tighten = _check_margin("tighten", tighten)
        self._leaves = problem.lowering.functions("numpy")["leaves"]
        try:
            self._deriv = problem.lowering.derivatives("numpy")
        except Exception:  # vector variables or a derivative sympy cannot lower
            self._deriv = None
        self.exact = self._deriv is not None
        self._vkey = self._dkey = None

    # -- the generated functions at one point, cached ---------------------------------
    def full(self, z) -> np.ndarray:
        """The full point (n,) for free genes ``z``."""
        if self.free is None:
            return np.asarray(z, dtype=np.float64).reshape(self.n)
        x = self.x_fixed.copy()
        x[self.free] = z
        return x

    def values(self, z):
        """``(f, C)``: objective (user's sense) and every leaf value ``c(x)``, shape (L,)."""
        z = np.asarray(z, dtype=np.float64)
        key = z.tobytes()
        if key != self._vkey:
            self.counter.add()
            with np.errstate(all="ignore"):
                f, C = self._leaves(self.full(z).reshape(-1, 1), self.P)
            self.counter.last = z.copy()
            self._v = (float(np.asarray(f, dtype=np.float64).reshape(-1)[0]),
                       np.asarray(C, dtype=np.float64).reshape(-1))
            self._vkey = key
        return self._v

    def derivatives(self, z):
        """``(g, J)``: exact gradient (n_free,) and leaf Jacobian (L, n_free)."""
        z = np.asarray(z, dtype=np.float64)
        key = z.tobytes()
        if key != self._dkey:
            self.counter.add()
            with np.errstate(all="ignore"):
                g, J = self._deriv(self.full(z).reshape(-1, 1), self.P)
            g = np.asarray(g, dtype=np.float64).reshape(-1)
            J = np.asarray(J, dtype=np.float64)
            J = J.reshape(J.shape[0], self.n) if J.size else np.zeros((0, self.n))
            if self.free is not None:
                g, J = g[self.free], J[:, self.free]
            self._d = (g, J)
            self._dkey = key
        return self._d

    # -- scipy's pieces ---------------------------------------------------------------
    def fun(self, z) -> float:
        """The objective in minimization sense; ``1e300`` where it is NaN or infinite."""
        f = self.sign * self.values(z)[0]
        return f if np.isfinite(f) else _UNDEFINED

    def jac(self, z) -> np.ndarray:
        return self.sign * self.derivatives(z)[0]

    def groups(self) -> list:
        """``(leaf indices, lb, ub)`` per kind (``eq``, ``le``, ``lt``), bounds on ``c(x)``."""
        leaves = self.problem.leaves
        conj = conjunctive_leaves(self.problem)
        band = max(self.eq_tol - self.tighten, 0.0)
        bounds = {"eq": (-band, band), "le": (-np.inf, -self.tighten),
                  "lt": (-np.inf, -max(self.strict_margin, self.tighten))}
        out = []
        for kind in ("eq", "le", "lt"):
            idx = np.array([k for k in conj if leaves[k].kind == kind], dtype=int)
            if idx.size:
                out.append((idx, *bounds[kind]))
        return out

    def _cfun(self, idx, s=1.0):
        def cfun(z):
            c = s * self.values(z)[1][idx]
            # NaN reads as violated: beyond the bound on the side scipy checks
            return np.where(np.isnan(c), s * _UNDEFINED, c)
        return cfun

    def _cjac(self, idx, s=1.0):
        return lambda z: s * self.derivatives(z)[1][idx]

    def nonlinear_constraints(self, disjunctive: bool = True) -> tuple:
        """The constraints as :class:`scipy.optimize.NonlinearConstraint` objects:
        ``-c(x) >= -ub`` for inequalities (``c <= 0`` reads ``-c(x) >= 0``), ``lb <= h(x)
        <= ub`` for equalities; with ``disjunctive``, user constraints holding an ``Or``
        as one more, on their violation (finite differences)."""
        from scipy.optimize import NonlinearConstraint

        out = []
        for idx, lb, ub in self.groups():
            s = 1.0 if np.isfinite(lb) else -1.0
            lo, hi = (lb, ub) if s > 0 else (-ub, np.inf)
            out.append(NonlinearConstraint(self._cfun(idx, s), lo, hi,
                                           jac=self._cjac(idx, s) if self.exact else "2-point"))
        orc = _disjunctive_constraints(self.problem) if disjunctive else []
        if orc:
            rows = np.array(orc, dtype=int)

            def vfun(z):
                self.counter.add()
                _, V = report_numpy(self.problem, self.full(z).reshape(self.n, 1),
                                    self.P.reshape(-1))
                v = V[rows, 0]
                return np.where(np.isfinite(v), v, _UNDEFINED)

            out.append(NonlinearConstraint(vfun, -np.inf, 0.0, jac="2-point"))
        return tuple(out)

    def slsqp_constraints(self) -> list:
        """The same constraints as SLSQP's ``{"type": "ineq", "fun", "jac"}`` dicts
        (``ub - c >= 0``, then ``c - lb >= 0`` where ``lb`` is finite)."""
        out = []
        for idx, lb, ub in self.groups():
            cfun, cjac = self._cfun(idx), self._cjac(idx)
            d = {"type": "ineq", "fun": lambda z, cfun=cfun, ub=ub: ub - cfun(z)}
            if self.exact:
                d["jac"] = lambda z, cjac=cjac: -cjac(z)
            out.append(d)
            if np.isfinite(lb):
                d = {"type": "ineq", "fun": lambda z, cfun=cfun, lb=lb: cfun(z) - lb}
                if self.exact:
                    d["jac"] = cjac
                out.append(d)
        return out


def problem_to_scipy(problem, parameters=None, *, eq_tol: float | None = None,
                     strict_margin: float = STRICT_MARGIN) -> ScipyProblem:
    """Build the :class:`ScipyProblem` of ``problem``; see :meth:`constropt.Problem.to_scipy`."""
    from scipy.optimize import Bounds

    pvec = problem.parameter_vector(parameters)
    bridge = ScipyBridge(problem, pvec, eq_tol=eq_tol, strict_margin=strict_margin)
    x0 = (problem.lower + problem.upper) / 2
    integer = problem.integer
    x0 = np.where(integer, np.clip(np.round(x0), problem.lower, problem.upper), x0)
    x0.setflags(write=False)
    integer.setflags(write=False)
    return ScipyProblem(fun=bridge.fun, jac=bridge.jac if bridge.exact else "2-point",
                        constraints=bridge.nonlinear_constraints(),
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
