"""Normalised constraints: every user constraint becomes a small tree of leaves.

A leaf is ``c(x) <= 0``, ``c(x) < 0`` or ``c(x) == 0``; ``And``/``Or`` of constraints
become ``AllOf``/``AnyOf`` nodes and ``Not`` is pushed down to the leaves.  The tree keeps
the user's constraint as one unit, so per-constraint violations line up with the list
the user wrote, while the lowering and the polish step see plain ``c(x)`` leaves.

Violation of a leaf (always >= 0, ``inf`` when ``c`` is NaN):

- ``c <= 0``: ``max(c, 0)``
- ``c < 0``: ``0`` if ``c < 0`` else ``max(c, tiny)`` (a boundary point violates)
- ``c == 0``: ``0`` if ``|c| <= eq_tol`` else ``|c|``

``AllOf`` sums its children's violations; ``AnyOf`` takes their minimum.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp
from sympy.logic.boolalg import BooleanFalse, BooleanTrue

from .._errors import ProblemError
from ..lowering._tree import EQ, LE, LT, AllOf, AnyOf, Leaf, Node, leaves

__all__ = ["Leaf", "AllOf", "AnyOf", "Node", "Constraint", "normalize_constraint", "leaves",
           "LE", "LT", "EQ"]

@dataclass(frozen=True)
class Constraint:
    """One user constraint: the sympy relational as written and its normalised tree."""

    relation: sp.Basic
    tree: Node

    def __str__(self) -> str:  # pragma: no cover - cosmetic
        return str(self.relation)


def _constant_leaf(leaf: Leaf, rel: sp.Basic, where: str) -> None:
    """A leaf whose ``c`` has no symbol is decided here, never lowered: a constraint that
    does not depend on the variables is refused whether it always or never holds, the
    same rule as for one sympy already evaluated to True/False (see _tree)."""
    value = leaf.expr
    if not (isinstance(value, sp.Expr) and value.is_number):
        return
    c = complex(value.evalf())
    if c.imag != 0 or c.real != c.real:
        holds = None
    elif leaf.kind == EQ:
        holds = c.real == 0
    else:
        holds = c.real <= 0 if leaf.kind == LE else c.real < 0
    verdict = {True: "always holds (remove it)",
               False: "never holds (the problem is infeasible)",
               None: "is undefined"}[holds]
    diff = sp.simplify(rel.lhs - rel.rhs)
    raise ProblemError(f"{where}: {rel} does not depend on the variables (lhs - rhs is the "
                       f"constant {diff}): it {verdict}; pass constraints on variables only")


def _leaf(rel: sp.Basic, negate: bool, where: str) -> Node:
    leaf = _leaf_of(rel, negate, where)
    _constant_leaf(leaf, rel, where)
    return leaf


def _leaf_of(rel: sp.Basic, negate: bool, where: str) -> Leaf:
    lhs, rhs = rel.lhs, rel.rhs
    op = type(rel)
    if negate:
        op = {sp.StrictLessThan: sp.GreaterThan, sp.LessThan: sp.StrictGreaterThan,
              sp.StrictGreaterThan: sp.LessThan, sp.GreaterThan: sp.StrictLessThan}.get(op)
        if op is None:
            raise ProblemError(f"{where}: Not({rel}) is a '!=' constraint, which has no "
                               "closed feasible set; write it as Or(lhs < rhs, lhs > rhs)")
    if op is sp.LessThan:
        return Leaf(lhs - rhs, LE, (lhs, "<=", rhs))
    if op is sp.StrictLessThan:
        return Leaf(lhs - rhs, LT, (lhs, "<", rhs))
    if op is sp.GreaterThan:
        return Leaf(rhs - lhs, LE, (lhs, ">=", rhs))
    if op is sp.StrictGreaterThan:
        return Leaf(rhs - lhs, LT, (lhs, ">", rhs))
    if op is sp.Equality:
        return Leaf(lhs - rhs, EQ)
    raise ProblemError(f"{where}: unsupported relation {rel!r} ({type(rel).__name__}); "
                       "use <, <=, >, >= or sympy.Eq")


def _tree(c: sp.Basic, negate: bool, where: str) -> Node:
    if isinstance(c, sp.Ne) and not negate:
        raise ProblemError(f"{where}: {c} is a '!=' (sympy.Ne) constraint, which has no "
                           "closed feasible set; write it as Or(lhs < rhs, lhs > rhs)")
    if isinstance(c, sp.Rel):
        return _leaf(c, negate, where)
    if isinstance(c, sp.Not):
        return _tree(c.args[0], not negate, where)
    if isinstance(c, (sp.And, sp.Or)):
        conj = isinstance(c, sp.And) != negate
        kids = tuple(_tree(a, negate, where) for a in c.args)
        return AllOf(kids) if conj else AnyOf(kids)
    if isinstance(c, (BooleanTrue, BooleanFalse)):
        raise ProblemError(f"{where}: the constraint evaluated to {c} before solving (it "
                           "contains no variables, or sympy decided it); pass constraints on "
                           "variables only")
    raise ProblemError(f"{where}: {c!r} inside a constraint is not a relational; use "
                       "<, <=, >, >=, sympy.Eq, And, Or or Not")


def normalize_constraint(c: object, index: int) -> Constraint:
    """Validate one user constraint and build its tree.

    Raises
    ------
    ProblemError
        For Python booleans, bare expressions, ``sympy.Ne`` and other non-relationals.
    """
    where = f"constraint {index}"
    if isinstance(c, bool):
        raise ProblemError(f"{where} is the Python bool {c}: a comparison of plain numbers "
                           "was evaluated before constropt saw it; compare sympy expressions")
    if not isinstance(c, sp.Basic):
        raise ProblemError(f"{where} is {c!r} of type {type(c).__name__}, not a sympy "
                           "relational such as x + y <= 3 or sympy.Eq(x, 1)")
    if isinstance(c, sp.Expr):
        raise ProblemError(f"{where} is the expression {c}, not a relational; did you mean "
                           f"{c} <= 0 or sympy.Eq({c}, 0)?")
    return Constraint(c, _tree(c, False, where))
