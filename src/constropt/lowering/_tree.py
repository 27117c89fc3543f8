"""The constraint tree the lowering compiles: leaves ``c(x) <= 0``, ``< 0``, ``== 0``
under ``AllOf``/``AnyOf`` nodes.

:mod:`constropt.problem._constraints` builds these trees from the user's sympy
relationals (validation, ``Not`` pushed to the leaves); the lowering, the bounds
extraction and the scipy bridge read them.  They live here, below both, so that the
lowering never imports the problem stage.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import sympy as sp

__all__ = ["Leaf", "AllOf", "AnyOf", "Node", "leaves", "LE", "LT", "EQ"]

LE, LT, EQ = "le", "lt", "eq"


@dataclass(frozen=True)
class Leaf:
    """``expr (kind) 0`` with kind one of ``"le"``, ``"lt"``, ``"eq"``.

    ``rel`` is the same condition as the user wrote it, ``(lhs, op, rhs)`` with ``op`` one
    of ``"<=", "<", ">=", ">"``: the feasibility mask compares those sides directly
    (``x >= 1`` costs one comparison, ``1 - x <= 0`` two operations more).
    """

    expr: sp.Expr
    kind: str
    rel: tuple | None = field(default=None, compare=False)

    @property
    def strict(self) -> bool:
        return self.kind == LT


@dataclass(frozen=True)
class AllOf:
    """Conjunction of constraint trees (violation: sum)."""

    children: tuple


@dataclass(frozen=True)
class AnyOf:
    """Disjunction of constraint trees (violation: minimum)."""

    children: tuple


Node = Leaf | AllOf | AnyOf


def leaves(node: Node) -> list[Leaf]:
    """All leaves of a constraint tree, left to right."""
    if isinstance(node, Leaf):
        return [node]
    out: list[Leaf] = []
    for k in node.children:
        out.extend(leaves(k))
    return out
