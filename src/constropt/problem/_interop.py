"""What :class:`~constropt.Problem` offers other tools: its plot and its forms for scipy,
SCIP and pymoo.

Each method is a thin call: the plot is drawn by the edge's plotting module, found
through :mod:`constropt._plotting`; the conversions live in :mod:`._scipy`,
:mod:`._scip` and :mod:`._adapters`.  :class:`Problem` takes them from :class:`Interop`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import sympy as sp

from .._plotting import plotter
from ._adapters import problem_to_pymoo
from ._scip import problem_to_scip
from ._scipy import problem_to_scipy

__all__ = ["Interop"]


class Interop:
    """The plot and the conversions of a :class:`~constropt.Problem` (its base class)."""

    def to_pymoo(self, parameters: Mapping[sp.Symbol, float] | None = None) -> Any:
        """This problem as a ``pymoo`` problem (``pymoo.core.problem.Problem``).

        Vectorized: each evaluation runs the generated NumPy code (float64) on the whole
        population.  ``F`` is the objective in minimization sense (``-f`` when
        maximizing, NaN as ``inf``); ``G`` has one column per constraint that is not a
        plain equality, the signed value ``g(x) <= 0`` where it holds (strict
        inequalities count their boundary as violated, see ``fitness(kind=
        "constraints")``); ``H`` one column per equality ``h(x) == 0``, the raw ``h``
        (pymoo counts ``|h| <= 1e-4`` as satisfied, constropt's default ``eq_tol``).
        ``xl``/``xu`` are the box after bound propagation (:attr:`lower`,
        :attr:`upper`).  Needs pymoo (``pip install pymoo``).

        Parameters
        ----------
        parameters : dict, optional
            Parameter values overriding the problem's own.
        """
        return problem_to_pymoo(self, parameters)

    def plot(self, result: Any = None, path: str | os.PathLike | None = None,
             resolution: int = 200, *, ax: Any = None,
             limits: Mapping[sp.Symbol, tuple[float, float]] | None = None,
             parameters: Mapping[sp.Symbol, float] | None = None) -> Any:
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
            (useful when a side got a default bound).
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
        return plotter("problem")(self, result, path, resolution, ax=ax, limits=limits,
                                  parameters=parameters)

    def to_scipy(self, parameters: Mapping[sp.Symbol, float] | None = None, *,
                 eq_tol: float | None = None, strict_margin: float = 1e-9) -> Any:
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
        return problem_to_scipy(self, parameters, eq_tol=eq_tol, strict_margin=strict_margin)

    def to_scip(self, parameters: Mapping[sp.Symbol, float] | None = None, *,
                eq_tol: float | None = None, strict_margin: float = 1e-9) -> Any:
        """The problem as a SCIP model (a ``pyscipopt.Model``, not yet solved).

        The objective and the constraints every feasible point must satisfy, translated
        from sympy: polynomials, real powers, ``exp``, ``log``, ``sqrt``, ``Abs``,
        ``sin`` and ``cos``; the search box ``Problem.bounds`` (after bound propagation)
        as variable bounds; integer variables as SCIP integers.  A nonlinear objective
        becomes an epigraph variable named ``objective``.  ``model.data["variables"]``
        holds the SCIP variables in ``Problem.variables`` order::

            m = problem.to_scip()
            m.setParam("limits/time", 10)
            m.optimize()
            x = [m.getVal(v) for v in m.data["variables"]]

        SCIP's answer is checked by nobody here; ``solve(..., cross_check="scip")``
        checks it with constropt's own float64 and exact evaluations.  Needs pyscipopt
        (``pip install "constropt[scip]"``).

        Parameters
        ----------
        parameters : dict, optional
            Parameter values overriding the problem's own (fixed in the model).
        eq_tol : float, optional
            An equality ``h(x) == 0`` becomes ``-eq_tol <= h(x) <= eq_tol``; default the
            problem's ``eq_tol``.
        strict_margin : float
            A strict inequality ``c(x) < 0`` becomes ``c(x) <= -strict_margin``.

        Returns
        -------
        pyscipopt.Model

        Raises
        ------
        UnsupportedExpressionError
            For a function SCIP has no counterpart of (named in the message), an ``Or``
            constraint, or vector variables.
        ImportError
            When pyscipopt is not installed.
        """
        return problem_to_scip(self, parameters, eq_tol=eq_tol, strict_margin=strict_margin)
