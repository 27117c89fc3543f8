"""Haverly's pooling problem 1, which several certificate tests solve: its exact optimum
is known (400 at x = 0, y = 200)."""

from __future__ import annotations

import sympy as sp

import constropt


def haverly(**options):
    """Haverly's pooling problem 1 (RC05's family): max 9x + 15y - 6A - 16B - 10(Cx+Cy),
    as a :class:`constropt.Problem` with ``options`` (``eq_tol``, say), and its exact
    optimum 400 (x = 0, y = 200)."""
    A, B, Cx, Cy, Px, Py, p = sp.symbols("A B Cx Cy Px Py p", real=True)
    obj = 9 * (Px + Cx) + 15 * (Py + Cy) - 6 * A - 16 * B - 10 * (Cx + Cy)
    cons = [sp.Eq(Px + Py - A - B, 0), sp.Eq(p * (Px + Py) - 3 * A - B, 0),
            p * Px + 2 * Cx - 2.5 * (Px + Cx) <= 0, p * Py + 2 * Cy - 1.5 * (Py + Cy) <= 0,
            Px + Cx <= 100, Py + Cy <= 200]
    bounds = {A: (0, 300), B: (0, 300), Cx: (0, 100), Cy: (0, 200), Px: (0, 100),
              Py: (0, 200), p: (1, 3)}
    return constropt.Problem(obj, cons, bounds=bounds, maximize=True, **options), 400.0
