"""The benchmark record and the registry behind :mod:`constropt.benchmarks`.

Each problem module registers a *builder* (a function without arguments that
returns a :class:`BenchmarkProblem`) under the problem's name. Builders run on
first use and their result is cached, so importing the package stays cheap
even though some problems (G16's chain of intermediate quantities, say) take a
moment to assemble in sympy.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterable

import sympy

from constropt._errors import ProblemError
from constropt.problem._problem import Problem

__all__ = ["BenchmarkProblem", "names", "get", "collection"]


@dataclasses.dataclass(frozen=True)
class BenchmarkProblem:
    """A published constrained optimization problem with its best known solution.

    Parameters
    ----------
    name : str
        Short, unique name, e.g. ``"G01"`` or ``"welded_beam"``.
    objective : sympy.Expr
        Objective function as published. It is minimized unless `maximize`
        is true.
    constraints : tuple
        Sympy relationals in the published form: inequalities as
        ``g(x) <= 0`` and equalities as ``sympy.Eq(h(x), 0)``.
    variables : tuple of sympy.Symbol
        Decision variables in the published order (``x1 ... xn`` for the CEC
        2006 problems). Integer variables are ``integer=True`` symbols,
        the others ``real=True``.
    bounds : dict
        ``{symbol: (lo, hi)}``, the finite box given by the publication.
    f_star : float
        Published optimal (or best known) objective value.
    x_star : tuple
        Published optimal (or best known) point, in `variables` order.
    maximize : bool, optional
        Whether the objective is to be maximized. False for every problem of
        the collection, as the publications state them as minimizations.
    source : str, optional
        Citation of the definition, of `f_star` and of `x_star`, with any
        erratum found while checking them.
    tags : tuple of str, optional
        Labels used by :func:`collection`, e.g. ``"cec2006"``,
        ``"engineering"``, ``"equality"``, ``"mixed-integer"``,
        ``"nonsmooth"``.
    eq_tol : float, optional
        Tolerance on ``|h(x)|`` under which the publication counts an
        equality as satisfied (1e-4 in CEC 2006).
    x_star_tol : float, optional
        Relative tolerance on the inequalities at `x_star`, which accounts
        for the precision to which `x_star` is printed: ``g(x_star)`` may
        exceed 0 by at most ``x_star_tol`` times the largest magnitude of the
        additive terms of ``g`` at `x_star` (at least 1).

    Notes
    -----
    `bounds` is a dict and so is left out of the hash; two records compare
    equal when all their fields do.
    """

    name: str
    objective: sympy.Expr
    constraints: tuple
    variables: tuple
    bounds: dict = dataclasses.field(hash=False)
    f_star: float
    x_star: tuple
    maximize: bool = False
    source: str = ""
    tags: tuple = ()
    eq_tol: float = 1e-4
    x_star_tol: float = 1e-6

    def problem(self, **kwargs):
        """Build a :class:`constropt.Problem` for this benchmark.

        Parameters
        ----------
        **kwargs
            Passed on to :class:`constropt.Problem`. ``eq_tol`` defaults to
            the benchmark's own `eq_tol`.

        Returns
        -------
        constropt.Problem
            The problem with this record's objective, constraints, variables,
            bounds and sense.
        """
        kwargs.setdefault("eq_tol", self.eq_tol)
        return Problem(
            self.objective,
            self.constraints,
            variables=self.variables,
            bounds=self.bounds,
            maximize=self.maximize,
            **kwargs,
        )


# name -> builder, in registration order (the order of names())
_BUILDERS: dict[str, Callable[[], BenchmarkProblem]] = {}

# names of published problems deliberately left out, with the reason
_EXCLUDED: dict[str, str] = {}


def register(name: str) -> Callable:
    """Register a builder of a benchmark under `name` (a decorator).

    Parameters
    ----------
    name : str
        The benchmark's name; the builder's result must carry the same one.

    Returns
    -------
    callable
        Decorator that records the builder and returns it cached.
    """

    def decorator(builder: Callable[[], BenchmarkProblem]) -> Callable[[], BenchmarkProblem]:
        if name.lower() in (n.lower() for n in _BUILDERS):
            raise ValueError(f"benchmark {name!r} is registered twice")
        cached = functools.lru_cache(maxsize=None)(builder)
        _BUILDERS[name] = cached
        return cached

    return decorator


def exclude(name: str, reason: str) -> None:
    """Record a published problem that the collection leaves out.

    Parameters
    ----------
    name : str
        The problem's name, e.g. ``"G20"``.
    reason : str
        Why it is left out; :func:`get` quotes it.
    """
    _EXCLUDED[name] = reason


def names() -> tuple[str, ...]:
    """Names of all benchmark problems, in a stable order.

    Returns
    -------
    tuple of str
        The CEC 2006 problems in numeric order, then the engineering
        problems.
    """
    return tuple(_BUILDERS)


def get(name: str) -> BenchmarkProblem:
    """Look up a benchmark problem by name, ignoring case.

    Parameters
    ----------
    name : str
        A name from :func:`names`, e.g. ``"g07"`` or ``"Welded_Beam"``.

    Returns
    -------
    BenchmarkProblem
        The problem's record.

    Raises
    ------
    ProblemError
        If no problem has that name; the message lists the valid names.
    """
    if isinstance(name, str):
        wanted = name.strip().lower()
        for known, builder in _BUILDERS.items():
            if known.lower() == wanted:
                return builder()
        for known, reason in _EXCLUDED.items():
            if known.lower() == wanted:
                raise ProblemError(
                    f"benchmark {name!r} is not in the collection: {reason} "
                    f"Valid names: {', '.join(_BUILDERS)}"
                )
    raise ProblemError(
        f"unknown benchmark {name!r}; valid names: {', '.join(_BUILDERS)}"
    )


def collection(tags: str | Iterable[str] | None = None) -> tuple[BenchmarkProblem, ...]:
    """All benchmark problems, or those carrying every given tag.

    Parameters
    ----------
    tags : str or iterable of str, optional
        A tag or tags, e.g. ``"cec2006"`` or ``("engineering",
        "mixed-integer")``. A problem is kept when it has all of them. None
        (the default) keeps every problem.

    Returns
    -------
    tuple of BenchmarkProblem
        The problems, in the order of :func:`names`.
    """
    problems = tuple(builder() for builder in _BUILDERS.values())
    if tags is None:
        return problems
    wanted = {tags} if isinstance(tags, str) else set(tags)
    return tuple(p for p in problems if wanted.issubset(p.tags))
