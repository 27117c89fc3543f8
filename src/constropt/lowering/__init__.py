"""Lowering: sympy problem -> hash-consed graph -> readable, NaN-safe Python source.

The same source runs on torch (eager or compiled, any device and float dtype) and on
NumPy; see :class:`Lowering` for the generated entry points.
"""

from ._graph import Block, Graph, Layout
from ._lower import Lowering

__all__ = ["Block", "Graph", "Layout", "Lowering"]
