"""Shared by the CEC 2020 modules (and the MINLPLib and Hock-Schittkowski ones): the
paper's citation, the symbols ``x1 ... xn`` with integer ones, and the record builder."""

from __future__ import annotations

import sympy as sp

from ._base import BenchmarkProblem

PAPER = (
    "Kumar, A., Wu, G., Ali, M. Z., Mallipeddi, R., Suganthan, P. N. and Das, S. "
    "(2020). A test-suite of non-convex constrained optimization problems from the "
    "real-world and some baseline results. Swarm and Evolutionary Computation 56: "
    "100693 (https://github.com/P-N-Suganthan/2020-RW-Constrained-Optimisation: "
    "cec20_func.m, Cal_par.m)"
)
FLOUDAS_1995 = (
    "Floudas, C. A. (1995). Nonlinear and Mixed-Integer Optimization: Fundamentals "
    "and Applications. Oxford University Press"
)
FLOUDAS_HANDBOOK = (
    "Floudas, C. A. et al. (1999). Handbook of Test Problems in Local and Global "
    "Optimization. Kluwer"
)

# the suite's tolerance on equalities
CEC2020_EQ_TOL = 1e-4


def variables(n: int, integer=()) -> tuple:
    """Symbols ``x1 ... xn``; those whose 1-based index is in `integer` are integers.

    Parameters
    ----------
    n : int
        Number of variables.
    integer : iterable of int, optional
        1-based indices of the integer variables.

    Returns
    -------
    tuple of sympy.Symbol
        The symbols, in order.
    """
    integer = set(integer)
    return tuple(sp.Symbol(f"x{i}", integer=True) if i in integer
                 else sp.Symbol(f"x{i}", real=True) for i in range(1, n + 1))


def rc(name, objective, constraints, x, ranges, f_star, x_star, *, title, table,
       how, original="", kind="nonlinear", note="", extra_tags=(), x_star_tol=1e-6,
       suite="cec2020") -> BenchmarkProblem:
    """Assemble the record of a CEC 2020 problem, tagging it from its constraints.

    Parameters
    ----------
    name : str
        ``"RC01"`` ... ``"RC31"``.
    objective, constraints, x
        As in :class:`BenchmarkProblem`.
    ranges : sequence of tuple
        ``(lo, hi)`` per variable.
    f_star : float
        The best known value.
    x_star : sequence of float
        A point that reaches it.
    title : str
        The problem's name in the paper.
    table : str
        The paper's best known value as printed (Table 3), e.g. ``"1.8931162966E+02"``.
    how : str
        How `x_star` was obtained.
    original, note : str, optional
        The problem's original source; remarks and errata.
    kind : str, optional
        ``"linear"``, ``"quadratic"``, ``"polynomial"`` or ``"nonlinear"``.
    extra_tags : tuple of str, optional
        Further tags.
    x_star_tol : float, optional
        See :class:`BenchmarkProblem`.
    suite : str, optional
        The collection tag, ``"cec2020"`` (or e.g. ``"engineering"``).

    Returns
    -------
    BenchmarkProblem
        The record.
    """
    constraints = tuple(constraints)
    if len(x_star) != len(x) or len(ranges) != len(x):
        raise ValueError(f"{name}: one value of x* and one range per variable are needed")
    tags = [suite, kind]
    if any(isinstance(c, sp.Equality) for c in constraints):
        tags.append("equality")
    if any(not isinstance(c, sp.Equality) for c in constraints):
        tags.append("inequality")
    if any(v.is_integer for v in x):
        tags.append("mixed-integer")
    tags.extend(extra_tags)
    text = (f"{PAPER}, problem {name} ({title}): definition, bounds and best known value "
            f"{table} (Table 3).")
    if original:
        text += f" Original: {original}."
    text += f" x*: {how}"
    if note:
        text += f" {note}"
    return BenchmarkProblem(
        name=name, objective=objective, constraints=constraints, variables=tuple(x),
        bounds={v: r for v, r in zip(x, ranges)}, f_star=float(f_star),
        x_star=tuple(int(v) if s.is_integer else float(v) for s, v in zip(x, x_star)),
        source=text, tags=tuple(tags), eq_tol=CEC2020_EQ_TOL, x_star_tol=x_star_tol)
