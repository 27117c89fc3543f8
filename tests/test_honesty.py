"""Honest answers: no silent wrong result and no foreign exception for the inputs of the
honesty issue.  Each test names the promise it backs in docs/guarantees.md."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

import constropt

x, y = sp.symbols("x y")


# -- generated code never depends on user-chosen names -------------------------------------
def test_names_that_fold_to_one_identifier_stay_two_variables():
    wide = sp.Symbol("\uff58")  # fullwidth x: NFKC folds it to "x" in Python source
    p = constropt.Problem((x - 1) ** 2 + (wide + 1) ** 2, bounds={x: (-3, 3), wide: (-3, 3)})
    assert p.variables == (x, wide) or p.variables == (wide, x)
    pts = np.array([[1.0, -1.0], [-1.0, 1.0]]) if p.variables[0] == x else np.array(
        [[-1.0, 1.0], [1.0, -1.0]])
    np.testing.assert_allclose(p.evaluate(pts).fun, [0.0, 8.0])  # exact small integers


@pytest.mark.parametrize("name", ["x\u00b2", "a b", "lambda", "X", "P", "dtype", "where",
                                  "t0", "f", "cv", "x1", "a\nb", "1st", "x" * 300])
def test_any_symbol_name_lowers_and_evaluates(name):
    s = sp.Symbol(name)
    x0 = sp.Symbol("x0")  # the generated name of row 0: must not capture it
    p = constropt.Problem((s - 2) ** 2 + 10 * x0, [s + x0 <= 3], variables=[x0, s],
                          bounds={s: (-3, 3), x0: (0, 1)})
    ev = p.evaluate(np.array([[0.5, 2.0], [0.0, 3.0], [1.0, 2.5]]))
    np.testing.assert_allclose(ev.fun, [5.0, 1.0, 10.25])  # exact in binary floating point
    assert ev.feasible.tolist() == [True, True, False]
    compile(p.source, "<check>", "exec")  # the source is valid Python, whatever the name
    assert "\n" not in name or "a\\nb" in p.source  # echoed only escaped, in a comment
