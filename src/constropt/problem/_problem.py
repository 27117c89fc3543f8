"""``Problem``: a validated, immutable constrained optimization problem.

Construction does all the checking (objective, constraints, variables, bounds,
parameters), extracts the box from single-variable linear constraints and lowers the
problem to generated code once.  Everything after that (evaluation, search, polish,
cross-check) reads the frozen problem.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

import numpy as np
import sympy as sp

from .._errors import ProblemError
from ..backend._bulk import bulk
from ..lowering import Layout, Lowering
from ._bounds import (
    DEFAULT_BOUND,
    BoundsWarning,
    make_bounds,
    parameter_bound_constraints,
)
from ._bounds_input import BoundsLike, bounds_dict
from ._constraints import Constraint, Leaf, normalize_constraint
from ._evaluate import Evaluation, evaluate_points
from ._fitness import Fitness
from ._interop import Interop
from ._validate import (
    _check_objective,
    _check_parameters,
    _make_layout,
    _order_variables,
)

__all__ = ["Problem", "Evaluation", "BoundsWarning", "DEFAULT_BOUND", "SEARCH_EQ_TOL"]

#: The equality band the search works in where equalities hold tightly (``eq_tol=None``):
#: sampling cannot land on a manifold, so the search needs a band; the finishing steps
#: then drive each equality onto the tight tolerance.
SEARCH_EQ_TOL = 1e-4


class Problem(Interop):
    """A constrained optimization problem declared with sympy.

    Parameters
    ----------
    objective : sympy.Expr
        The function to minimize (or maximize with ``maximize=True``).
    constraints : sequence of sympy relationals, optional
        ``<``, ``<=``, ``>``, ``>=``, ``sympy.Eq``, or ``And``/``Or``/``Not`` of them.
        Strict inequalities are enforced strictly; equalities as tightly as the local
        solver reaches (see ``eq_tol``).
    variables : sequence of sympy Symbols (or IndexedBase/MatrixSymbol), optional
        The decision variables in the order of ``x_array``.  Default: every free symbol
        that is not a parameter, in natural name order (``x2`` before ``x10``).
    bounds : dict, sequence of pairs or scipy.optimize.Bounds, optional
        ``{symbol: (lo, hi)}``; either side may be ``None`` (or an infinity).  Overrides
        the bounds that constropt extracts from single-variable linear constraints.  As
        in scipy, also a sequence of ``(lo, hi)`` pairs, one per variable in the order of
        :attr:`variables` (``variables=`` when given, else natural name order; a vector
        variable takes one pair for all its elements), or a ``scipy.optimize.Bounds``
        (``lb``/``ub`` scalars or one value per variable; ``keep_feasible`` is ignored:
        the search never leaves the box).  A side may be a
        sympy expression in the parameters (``{x: (-r, r)}``): it is also added to the
        constraints (``x >= -r``, ``x <= r``), and each solve searches the box of the
        parameter values it is given (``solve_batch``: the hull over the instances).
    maximize : bool, optional
        Maximize instead of minimize.
    parameters : dict, optional
        ``{symbol: value}``.  Parameters are inputs of the generated code, so changing
        their values never regenerates or recompiles it.
    eq_tol : float or None, optional
        Tolerance for equality constraints.  ``None`` (the default): equalities hold
        *tightly*: a returned point satisfies every equality ``h(x) == 0`` to
        ``|h(x)| <= min(1e-9 * s(x), 1e-4)``, its scale ``s(x) = 1 + sum_k |t_k(x)|`` over
        the terms ``t_k`` of ``h = lhs - rhs`` (so rounding in large terms is allowed
        for), and the result reports the point as infeasible where the local solver
        cannot reach that; the search itself works with the band ``|h| <= 1e-4``
        (:data:`SEARCH_EQ_TOL`, what :attr:`eq_tol` then reports) and the finishing steps
        drive each equality onto the tight tolerance.  A number: ``|h(x)| <= eq_tol``
        counts as satisfied, in the search and in the result alike (``1e-4`` is the CEC
        convention, where an optimum may lean on the band).
    default_bound : float, optional
        Half-width of the initial search box on a side without a finite bound (a
        :class:`BoundsWarning` names the variable): ``[-d, d]`` when both sides are open,
        the other side ``+/- max(d, |other side|)`` when one is.  Default: ten times the
        magnitude of the problem's constants and bounds (clipped to [10, 1000],
        ``DEFAULT_BOUND``).  Such a side, and a given side beyond ``1e6`` in magnitude, is
        *soft*: :func:`solve` expands it tenfold (up to 4 times, then to a huge given
        side's value) while the best point presses on it with the objective improving
        outward, and reports ``UNBOUNDED`` if an open side is still pressed after that.

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

    @bulk()
    def __init__(self, objective: sp.Expr, constraints: Iterable[Any] | sp.Basic = (), *,
                 variables: Sequence[sp.Basic] | None = None, bounds: BoundsLike = None,
                 maximize: bool = False, parameters: Mapping[sp.Symbol, float] | None = None,
                 eq_tol: float | None = None, default_bound: float | None = None) -> None:
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
        given_constraints = tuple(c.relation for c in self._constraints)
        if not isinstance(maximize, (bool, np.bool_)):
            raise ProblemError(f"maximize must be True or False, got {maximize!r}")
        self._maximize = bool(maximize)
        if eq_tol is not None and not (isinstance(eq_tol, (int, float)) and
                                       math.isfinite(eq_tol) and eq_tol >= 0):
            raise ProblemError(f"eq_tol must be None (tight equalities) or a finite number "
                               f">= 0, got {eq_tol!r}")
        self._tight = eq_tol is None
        self._eq_tol = SEARCH_EQ_TOL if eq_tol is None else float(eq_tol)
        self._parameters = _check_parameters(parameters)
        exprs = [self._objective] + [c.relation for c in self._constraints]
        for k, e in enumerate(exprs):
            if e.has(sp.I) or any(a.is_number and a.is_real is False
                                  for a in sp.preorder_traversal(e) if isinstance(a, sp.Expr)):
                what = "the objective" if k == 0 else f"constraint {k - 1}"
                raise ProblemError(f"{what} is complex-valued ({e}): constropt works over the "
                                   "reals; sympy.I may not appear")
        self._variables = _order_variables(exprs, variables, self._parameters)
        if not self._variables:
            raise ProblemError("the problem has no decision variables: neither the objective "
                               "nor the constraints contain a symbol that is not a parameter; "
                               "pass variables=[...] or use a symbol in the objective")
        self._layout = _make_layout(self._variables, tuple(self._parameters))
        bounds = bounds_dict(bounds, self._variables)
        (self._lower, self._upper, self._integer, self._box, self._soft,
         self._param_bounds, self._proof) = make_bounds(
            self._variables, self._layout, self._constraints, bounds, default_bound,
            self._parameters, exprs, eq_tol=self._eq_tol)
        extra = parameter_bound_constraints(self._param_bounds)
        self._constraints += tuple(normalize_constraint(c, len(self._constraints) + i)
                                   for i, c in enumerate(extra))
        self._lowering = Lowering(self._objective, self._constraints, self._layout,
                                  self._maximize)
        # what rebuilds this problem exactly (pickling, checkpoints): the arguments as
        # given, not the derived box (propagation run again on a propagated box would
        # tighten it further)
        self._args = (self._objective, given_constraints, self._variables,
                      None if bounds is None else dict(bounds), self._maximize,
                      dict(self._parameters), None if self._tight else self._eq_tol,
                      default_bound)

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
        """The equality band ``|h| <= eq_tol`` of the search (and of bound propagation
        and certificates, which relax the feasible set by it): the given ``eq_tol``, or
        :data:`SEARCH_EQ_TOL` with tight equalities (:attr:`tight_equalities`)."""
        return self._eq_tol

    @property
    def tight_equalities(self) -> bool:
        """Whether equalities hold tightly (``eq_tol=None``, the default): the result
        holds them to ``1e-9`` times their scale, not to the band :attr:`eq_tol`."""
        return self._tight

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

    def parameter_vector(self, values: Mapping[sp.Symbol, float] | None = None) -> np.ndarray:
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
    def evaluate(self, points: Any, *, parameters: Mapping[sp.Symbol, float] | None = None,
                 compile: bool | str = "auto") -> Evaluation:
        """Evaluate objective and constraints at a batch of points.

        Parameters
        ----------
        points : array_like or Tensor, shape (S, n) or (n,)
            Points in ``variables`` order (sample-major, as users hold them).  A NumPy
            input is evaluated in float64 with the NumPy backend; a torch tensor with the
            torch backend on its device and dtype.
        parameters : dict, optional
            Parameter values overriding the problem's own.
        compile : {"auto", True, False}
            Torch input only: evaluate with the compiled kernel (``"auto"``: from
            100,000 points on; the first such call compiles, later sizes reuse it).

        Returns
        -------
        Evaluation
            ``fun`` (S,), ``violation`` (S, m), ``feasible`` (S,), same kind as ``points``.
        """
        return evaluate_points(self, points, parameters, compile)

    def fitness(self, kind: str = "death", *, layout: str = "rows", device: Any = None,
                dtype: Any = None, compile: bool | str = "auto", penalty: float = 1e6,
                parameters: Mapping[sp.Symbol, float] | None = None) -> Fitness:
        """A branch-free fitness function for your own GA loop, fast at every size.

        Parameters
        ----------
        kind : {"death", "penalty", "split", "constraints"}
            ``"death"``: the minimization-sense objective (``-f`` when maximizing) where
            every constraint holds, ``+inf`` elsewhere; ``"penalty"``: that objective
            plus ``penalty`` times the total violation; ``"split"``: the pair
            ``(objective, total violation)`` for feasibility-rule ranking;
            ``"constraints"``: one signed value per constraint, ``<= 0`` where it holds
            (shape (S, m) for rows).
        layout : {"rows", "columns"}
            Population of shape (S, n) or (n, S).
        device, dtype
            The device populations live on and the working (accumulation) dtype,
            float32 or float64 (default: the population's own; float32 for integer
            genes, exact for integer sums below 2**24).
        compile : {"auto", True, False}
            ``"auto"``: the generated NumPy code for CPU calls below 300,000 numbers
            (individuals x genes), the compiled torch kernel from there on (compiled once,
            dynamic in the population size; a :class:`~constropt.problem._fitness.CompileWarning`
            first); ``True``: always compiled; ``False``: never (NumPy on the CPU, eager
            torch elsewhere).
        penalty : float
            Weight of the total violation for ``kind="penalty"``.
        parameters : dict, optional
            Parameter values overriding the problem's own.

        Returns
        -------
        Fitness
            ``fit(population)`` -> (S,) (``"split"``: two (S,) arrays), NumPy for NumPy
            input, torch for torch input; see :class:`constropt.Fitness`.
        """
        return Fitness(self, kind, layout=layout, device=device, dtype=dtype,
                       compile=compile, penalty=penalty, parameters=parameters)

    def __repr__(self) -> str:
        sense = "maximize" if self._maximize else "minimize"
        return (f"Problem({sense} {self._objective}, {len(self._constraints)} constraints, "
                f"variables={list(self._variables)})")

    def __reduce__(self):
        return (_rebuild, self._args)


def _rebuild(objective, constraints, variables, bounds, maximize, parameters, eq_tol,
             default_bound=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BoundsWarning)
        return Problem(objective, constraints, variables=variables, bounds=bounds,
                       maximize=maximize, parameters=parameters or None, eq_tol=eq_tol,
                       default_bound=default_bound)
