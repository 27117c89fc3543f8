"""The names a problem-file expression may use: the functions and the constants.

The functions are the parser names of constropt's function table
(:mod:`constropt.lowering._functions`), and ``where``, the syntax of a ``Piecewise``
(its condition is a comparison); :func:`function_list` writes them for the package's
docstring.
"""

from __future__ import annotations

import textwrap

import sympy

from constropt.lowering._functions import FUNCTIONS as _TABLE

__all__ = ["FUNCTIONS", "CONSTANTS", "RESERVED_NAMES", "INF", "function_list"]

CONSTANTS = {"pi": sympy.pi, "E": sympy.E, "e": sympy.E}
#: The name of an infinite bound.
INF = "inf"


def _where(cond, a, b):
    return sympy.Piecewise((a, cond), (b, True))


def _call_class(cls):
    return lambda p, *args: cls(*args)


#: name -> (builder ``build(parser, *args)``, min args, max args or None for "any
#: number").
FUNCTIONS = {
    **{n.name: (n.build or _call_class(f.sympy[0]), n.lo, n.hi)
       for f in _TABLE for n in f.parse},
    "where": (lambda p, c, a, b: _where(c, a, b), 3, 3),
}


def function_list() -> str:
    """The function names of :data:`FUNCTIONS` as the module docstring lists them: the
    spellings of one function joined by ``/``, with their number of arguments where it
    is not one; wrapped for the docstring's indented list."""
    parts = []
    for f in _TABLE:
        groups: dict = {}
        for n in f.parse:
            groups.setdefault((n.build, n.lo, n.hi), []).append(f"``{n.name}``")
        for (_, lo, hi), names in groups.items():
            count = "" if lo == hi == 1 else (
                " (any number of arguments)" if hi is None else
                f" ({lo} arguments)" if lo == hi else f" ({lo} or {hi} arguments)")
            parts.append("/".join(names) + count)
    return textwrap.fill(", ".join(parts), 84, subsequent_indent="  ",
                         break_on_hyphens=False)


#: Names a problem file may not use for its own variables, parameters or expressions.
RESERVED_NAMES = frozenset(FUNCTIONS) | frozenset(CONSTANTS) | {INF}
