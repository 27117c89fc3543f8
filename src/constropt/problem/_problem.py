"""``Problem``: a validated, immutable constrained optimization problem.

Construction does all the checking (objective, constraints, variables, bounds,
parameters), extracts the box from single-variable linear constraints and lowers the
problem to generated code once.  Everything after that (evaluation, search, polish,
cross-check) reads the frozen problem.
"""

from __future__ import annotations

import math
import re
import warnings
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np
import sympy as sp

from .._errors import ProblemError
from ..lowering import Block, Layout, Lowering
from ._bounds import BoundsWarning, make_bounds
from ._constraints import Constraint, Leaf, normalize_constraint

__all__ = ["Problem", "Evaluation", "BoundsWarning", "DEFAULT_BOUND"]

#: Half-width of the box used for a variable side that has no finite bound.
DEFAULT_BOUND = 1000.0

_VECTOR_TYPES = (sp.IndexedBase, sp.MatrixSymbol)


@dataclass(frozen=True)
class Evaluation:
    """Objective and constraint status of a batch of points.

    Attributes
    ----------
    fun : array or Tensor, shape (S,)
        Objective in the user's sense (NaN where it is undefined).
    violation : array or Tensor, shape (S, m)
        Violation of each constraint, ``>= 0``; ``inf`` where a constraint is NaN.
    feasible : array or Tensor of bool, shape (S,)
        Every constraint holds (strict ones strictly, equalities within ``eq_tol``).
    """

    fun: Any
    violation: Any
    feasible: Any


def _natural_key(sym) -> tuple:
    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", str(sym)))


def _is_vector(s) -> bool:
    return isinstance(s, _VECTOR_TYPES)


def _shape_of(s) -> tuple:
    if isinstance(s, sp.MatrixSymbol):
        shape = tuple(int(d) for d in s.shape)
    else:
        if s.shape is None:
            raise ProblemError(f"vector variable {s} needs a shape: IndexedBase('{s}', "
                               "shape=(n,))")
        shape = tuple(int(d) for d in s.shape)
    if not shape or any(d <= 0 for d in shape):
        raise ProblemError(f"vector variable {s} has an invalid shape {shape}")
    return shape


def _collect_symbols(exprs) -> set:
    """Scalar symbols and vector bases used by ``exprs`` (summation indices excluded)."""
    found: set = set()
    for e in exprs:
        bound = set()
        for s in sp.preorder_traversal(e):
            if isinstance(s, (sp.Sum, sp.Product)):
                bound.update(lim[0] for lim in s.limits)
        for s in e.atoms(sp.Symbol, sp.IndexedBase, sp.MatrixSymbol):
            if s in bound or isinstance(s, sp.Dummy) and s in bound:
                continue
            found.add(s)
        for ix in e.atoms(sp.Indexed):
            found.discard(ix.base.label)
            found.add(ix.base)
        for idx in e.atoms(sp.Idx):
            found.discard(idx.label)
    return found


class Problem:
    """A constrained optimization problem declared with sympy.

    Parameters
    ----------
    objective : sympy.Expr
        The function to minimize (or maximize with ``maximize=True``).
    constraints : sequence of sympy relationals, optional
        ``<``, ``<=``, ``>``, ``>=``, ``sympy.Eq``, or ``And``/``Or``/``Not`` of them.
        Strict inequalities are enforced strictly; equalities within ``eq_tol``.
    variables : sequence of sympy Symbols (or IndexedBase/MatrixSymbol), optional
        The decision variables in the order of ``x_array``.  Default: every free symbol
        that is not a parameter, in natural name order (``x2`` before ``x10``).
    bounds : dict, optional
        ``{symbol: (lo, hi)}``; either side may be ``None``.  Overrides the bounds that
        constropt extracts from single-variable linear constraints.
    maximize : bool, optional
        Maximize instead of minimize.
    parameters : dict, optional
        ``{symbol: value}``.  Parameters are inputs of the generated code, so changing
        their values never regenerates or recompiles it.
    eq_tol : float, optional
        Tolerance for equality constraints: ``|h(x)| <= eq_tol`` counts as satisfied.
    default_bound : float, optional
        A side without a finite bound is placed at ``-default_bound``/``+default_bound``
        (moved out to the other side ``-/+ default_bound`` if that is beyond), with a
        :class:`BoundsWarning` naming the variable.

    Attributes
    ----------
    variables : tuple
        Decision variables in population order.
    bounds : mapping
        The search box actually used, ``{symbol: (lo, hi)}``.
    constraints : tuple of sympy Boolean
        The constraints as given.
    source : str
        The generated code (readable Python).
    """

    def __init__(self, objective, constraints=(), *, variables=None, bounds=None,
                 maximize: bool = False, parameters=None, eq_tol: float = 1e-4,
                 default_bound: float = DEFAULT_BOUND):
        self._objective = _check_objective(objective)
        if isinstance(constraints, (sp.Basic, bool)):
            constraints = [constraints]
        try:
            constraints = list(constraints)
        except TypeError:
            raise ProblemError(f"constraints must be a sequence of sympy relationals, got "
                               f"{constraints!r}") from None
        self._constraints: tuple[Constraint, ...] = tuple(
            normalize_constraint(c, i) for i, c in enumerate(constraints))
        if not isinstance(maximize, (bool, np.bool_)):
            raise ProblemError(f"maximize must be True or False, got {maximize!r}")
        self._maximize = bool(maximize)
        if not (isinstance(eq_tol, (int, float)) and math.isfinite(eq_tol) and eq_tol >= 0):
            raise ProblemError(f"eq_tol must be a finite number >= 0, got {eq_tol!r}")
        self._eq_tol = float(eq_tol)
        self._parameters = _check_parameters(parameters)
        exprs = [self._objective] + [c.relation for c in self._constraints]
        for k, e in enumerate(exprs):
            if e.has(sp.I) or any(a.is_number and a.is_real is False
                                  for a in sp.preorder_traversal(e) if isinstance(a, sp.Expr)):
                what = "the objective" if k == 0 else f"constraint {k - 1}"
                raise ProblemError(f"{what} is complex-valued ({e}): constropt works over the "
                                   "reals; sympy.I may not appear")
        self._variables = _order_variables(exprs, variables, self._parameters)
        self._layout = _make_layout(self._variables, tuple(self._parameters))
        self._lower, self._upper, self._integer, self._box, self._proof = make_bounds(
            self._variables, self._layout, self._constraints, bounds, float(default_bound),
            self._parameters, eq_tol=self._eq_tol)
        self._lowering = Lowering(self._objective, self._constraints, self._layout,
                                  self._maximize)

    # -- read-only views ------------------------------------------------------------
    @property
    def objective(self) -> sp.Expr:
        """The objective expression as given."""
        return self._objective

    @property
    def constraints(self) -> tuple:
        """The constraints as given (sympy Booleans)."""
        return tuple(c.relation for c in self._constraints)

    @property
    def variables(self) -> tuple:
        """Decision variables in population order."""
        return self._variables

    @property
    def parameters(self) -> MappingProxyType:
        """Parameter values ``{symbol: float}`` (read-only)."""
        return MappingProxyType(dict(self._parameters))

    @property
    def bounds(self) -> MappingProxyType:
        """The search box ``{symbol: (lo, hi)}`` actually used (read-only)."""
        return MappingProxyType(dict(self._box))

    @property
    def infeasibility_proof(self):
        """An :class:`~constropt.problem._fbbt.InfeasibilityProof` when bound propagation
        showed that no point satisfies the constraints (for every parameter value); else
        None.  ``solve`` then returns status ``INFEASIBLE`` without searching."""
        return self._proof

    @property
    def maximize(self) -> bool:
        """Whether the objective is maximized."""
        return self._maximize

    @property
    def eq_tol(self) -> float:
        """Tolerance of equality constraints."""
        return self._eq_tol

    @property
    def n(self) -> int:
        """Number of scalar decision values (genes); vector variables count each element."""
        return int(self._lower.size)

    @property
    def lower(self) -> np.ndarray:
        """Lower bounds of the box, shape (n,), float64 (a copy)."""
        return self._lower.copy()

    @property
    def upper(self) -> np.ndarray:
        """Upper bounds of the box, shape (n,), float64 (a copy)."""
        return self._upper.copy()

    @property
    def integer(self) -> np.ndarray:
        """Which genes are integer, shape (n,), bool (a copy)."""
        return self._integer.copy()

    @property
    def layout(self) -> Layout:
        """Where each variable lives in the population (rows of the variable-major array)."""
        return self._layout

    @property
    def leaves(self) -> tuple[Leaf, ...]:
        """Normalised constraint leaves ``c(x) <= 0``, ``< 0`` or ``== 0``."""
        return self._lowering.leaves

    @property
    def lowering(self) -> Lowering:
        """The generated code and its entry points (see :mod:`constropt.lowering`)."""
        return self._lowering

    @property
    def source(self) -> str:
        """The generated code, as readable Python source."""
        return self._lowering.source

    @property
    def has_vector_variables(self) -> bool:
        """Whether any variable is an IndexedBase or MatrixSymbol."""
        return any(b.shape != () for b in self._layout.blocks)

    def parameter_vector(self, values=None) -> np.ndarray:
        """Parameter values in layout order, shape (n_params,), float64.

        ``values`` (a dict ``{symbol: value}``) overrides the problem's own values.
        """
        merged = dict(self._parameters)
        if values:
            extra = _check_parameters(values)
            unknown = [s for s in extra if s not in merged]
            if unknown:
                raise ProblemError(f"{unknown[0]} is not a parameter of this problem "
                                   f"(parameters: {list(merged)})")
            merged.update(extra)
        return np.array([merged[p] for p in self._layout.parameters], dtype=np.float64)

    # -- evaluation --------------------------------------------------------------------
    def evaluate(self, points, *, parameters=None) -> Evaluation:
        """Evaluate objective and constraints at a batch of points.

        Parameters
        ----------
        points : array_like or Tensor, shape (S, n) or (n,)
            Points in ``variables`` order (sample-major, as users hold them).  A NumPy
            input is evaluated in float64 with the NumPy backend; a torch tensor with the
            torch backend on its device and dtype.
        parameters : dict, optional
            Parameter values overriding the problem's own.

        Returns
        -------
        Evaluation
            ``fun`` (S,), ``violation`` (S, m), ``feasible`` (S,), same kind as ``points``.
        """
        from ._evaluate import evaluate_points

        return evaluate_points(self, points, parameters)

    # -- plots and scipy interop (implemented in _plot.py and _interop.py) ---------------
    def plot(self, result=None, path=None, resolution: int = 200, *, ax=None, limits=None,
             parameters=None):
        """Plot a two-variable problem: feasible region, objective contours, optimum.

        Evaluates the problem on a ``resolution`` x ``resolution`` grid over the box
        (``problem.evaluate``, float64), shades the feasible points, draws objective
        contours and the boundary ``c(x) = 0`` of every constraint, and marks
        ``result``'s point (or, without a result, the best feasible grid point).
        Needs matplotlib (``pip install "constropt[plot]"``).

        Parameters
        ----------
        result : Result, optional
            A result of this problem; its point is marked with a star.
        path : str or os.PathLike, optional
            Write the figure to this PNG file (drawn with the Agg canvas; the global
            matplotlib backend is left alone).
        resolution : int
            Grid points per axis, 2 to 4000.
        ax : matplotlib.axes.Axes, optional
            Draw into these axes instead of a new figure.
        limits : dict, optional
            ``{symbol: (lo, hi)}``: the plotted window, overriding the box per variable
            (useful when a side got the default bound of +/-1000).
        parameters : dict, optional
            Parameter values overriding the problem's own.

        Returns
        -------
        matplotlib.figure.Figure

        Raises
        ------
        ProblemError
            When the problem does not have exactly 2 scalar variables.
        """
        from ..interface._plot import plot_problem

        return plot_problem(self, result, path, resolution, ax=ax, limits=limits,
                            parameters=parameters)

    def to_scipy(self, parameters=None, *, eq_tol=None, strict_margin: float = 1e-9):
        """The problem in ``scipy.optimize``'s own form (a :class:`ScipyProblem`).

        ``fun`` (minimization sense: negated when ``maximize=True``) and its exact
        gradient ``jac``; ``constraints``, a tuple of ``NonlinearConstraint`` with exact
        Jacobians; ``bounds`` (the box); ``x0`` (the box centre); ``integrality``.
        They go straight into ``scipy.optimize.minimize(fun, x0, jac=jac,
        bounds=bounds, constraints=constraints)`` and
        ``differential_evolution(fun, bounds, constraints=constraints)``.

        Parameters
        ----------
        parameters : dict, optional
            Parameter values overriding the problem's own (fixed in the functions).
        eq_tol : float, optional
            An equality ``h(x) == 0`` becomes ``-eq_tol <= h(x) <= eq_tol``; default the
            problem's ``eq_tol``, the tolerance constropt itself accepts.  Pass ``0`` for
            exact equalities.
        strict_margin : float
            A strict inequality ``c(x) < 0`` becomes ``c(x) <= -strict_margin`` (scipy
            has only closed constraints).

        Returns
        -------
        ScipyProblem
        """
        from ..solver._scipy import problem_to_scipy

        return problem_to_scipy(self, parameters, eq_tol=eq_tol, strict_margin=strict_margin)

    def __repr__(self) -> str:
        sense = "maximize" if self._maximize else "minimize"
        return (f"Problem({sense} {self._objective}, {len(self._constraints)} constraints, "
                f"variables={list(self._variables)})")

    def __reduce__(self):
        return (_rebuild, (self._objective, self.constraints, self._variables,
                           dict(self._box), self._maximize, dict(self._parameters),
                           self._eq_tol))


def _rebuild(objective, constraints, variables, bounds, maximize, parameters, eq_tol):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BoundsWarning)
        p = Problem(objective, constraints, variables=variables, bounds=bounds,
                    maximize=maximize, parameters=parameters or None, eq_tol=eq_tol)
    # the stored box is final: bound propagation started from it may shrink it a little
    # more, which would change the problem (its checkpoint fingerprint); keep it as stored
    for b in p._layout.blocks:
        if b.symbol in bounds:
            lo, hi = bounds[b.symbol]
            p._lower[b.offset:b.offset + b.size] = lo
            p._upper[b.offset:b.offset + b.size] = hi
            p._box[b.symbol] = (lo, hi)
    return p


# -- validation helpers ------------------------------------------------------------------
def _check_objective(obj) -> sp.Expr:
    if isinstance(obj, sp.Expr) and not isinstance(obj, sp.Rel):
        return obj  # (a Symbol is also a sympy Boolean: test Expr first)
    if isinstance(obj, bool) or isinstance(obj, (sp.logic.boolalg.Boolean, sp.Rel)):
        raise ProblemError(f"the objective must be a sympy expression, got the relational or "
                           f"boolean {obj!r}; constraints go in the second argument")
    if isinstance(obj, (int, float)) and not isinstance(obj, bool):
        return sp.Float(obj) if isinstance(obj, float) else sp.Integer(obj)
    if not isinstance(obj, sp.Expr):
        raise ProblemError(f"the objective must be a sympy expression, got {obj!r} of type "
                           f"{type(obj).__name__}")
    return obj


def _check_parameters(parameters) -> dict:
    if parameters is None:
        return {}
    if not isinstance(parameters, dict):
        raise ProblemError(f"parameters must be a dict {{symbol: value}}, got {parameters!r}")
    out = {}
    for s, v in parameters.items():
        if not isinstance(s, sp.Symbol):
            raise ProblemError(f"parameter key {s!r} is not a sympy Symbol")
        if v is None:
            raise ProblemError(f"parameter {s} has no value")
        try:
            fv = float(v)
        except (TypeError, ValueError):
            raise ProblemError(f"parameter {s} has the non-numeric value {v!r}") from None
        if not math.isfinite(fv):
            raise ProblemError(f"parameter {s} has the non-finite value {v!r}")
        out[s] = fv
    return out


def _order_variables(exprs, variables, parameters) -> tuple:
    used = _collect_symbols(exprs)
    params = set(parameters)
    if variables is None:
        found = [s for s in used if s not in params]
        return tuple(sorted(found, key=_natural_key))
    if isinstance(variables, (sp.Basic, str)):
        variables = [variables]
    variables = tuple(variables)
    for v in variables:
        if not isinstance(v, (sp.Symbol,) + _VECTOR_TYPES):
            raise ProblemError(f"variable {v!r} is not a sympy Symbol, IndexedBase or "
                               "MatrixSymbol")
        if v in params:
            raise ProblemError(f"{v} is declared both as a variable and as a parameter")
    if len(set(variables)) != len(variables):
        dup = next(v for v in variables if variables.count(v) > 1)
        raise ProblemError(f"variable {dup} is listed twice in variables")
    stray = sorted((s for s in used if s not in set(variables) and s not in params),
                   key=_natural_key)
    if stray:
        raise ProblemError(f"symbol {stray[0]} appears in the problem but is neither a "
                           f"variable nor a parameter (variables: {list(variables)})")
    return variables


def _make_layout(variables, parameters) -> Layout:
    blocks, off = [], 0
    for v in variables:
        shape = _shape_of(v) if _is_vector(v) else ()
        blocks.append(Block(v, off, shape))
        off += math.prod(shape) if shape else 1
    return Layout(tuple(blocks), tuple(parameters))
