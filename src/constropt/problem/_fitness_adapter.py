"""The layout adapters of the public fitness: the generated code of one kind in a body
that takes the population in its layout.

:func:`adapter` returns the function of ``(population, P, eq_tol, weight)`` that
:class:`constropt.problem._fitness.Fitness` runs (NumPy) or compiles (torch): the layout
view (``(S, n)`` rows through a static-stride ``reshape(-1, n)``, which inductor
vectorizes; ``(n, S)`` columns as they are) and the generated ``death``, ``fitness`` or
``leaves`` function of :mod:`constropt.lowering._lower` in one body.  The body holds no
array in its closure, so one compiled adapter serves every problem with the same
generated source; adapters are cached per source, kind, layout, size, backend, working
dtype and (for ``kind="constraints"``) constraint plan.
"""

from __future__ import annotations

import math

import numpy as np

from ._adapters import constraint_plan, signed_constraints
from ._fitness_numpy import numpy_functions

__all__ = ["adapter", "ADAPTERS"]

#: (source, kind, layout, n, backend, dtype, plan) -> adapter
ADAPTERS: dict = {}


def adapter(problem, kind: str, layout: str, backend: str, dtype: str | None = None):
    """The function of ``(population, P, eq_tol, weight)`` for ``backend`` ("numpy", for
    the working ``dtype``, or "torch"): the layout view and the generated code in one
    body, with no array in its closure (so one compiled adapter serves every problem with
    this generated source)."""
    n, plan = problem.n, constraint_plan(problem) if kind == "constraints" else None
    key = (problem.source, kind, layout, n, backend, dtype, plan)
    hit = ADAPTERS.get(key)
    if hit is not None:
        return hit
    fns = numpy_functions(problem, dtype) if backend == "numpy" else \
        problem.lowering.functions(backend)
    death, fitness, leaves = fns["death"], fns["fitness"], fns["leaves"]
    rows = layout == "rows"
    if backend == "numpy":
        xp, inf = np, math.inf

        def view(pop):
            return pop.T if rows else pop

        def no_nan(r):
            return np.fmin(r, inf)  # NaN -> inf in one pass
    else:
        import torch as xp

        def view(pop):  # a static stride n: inductor vectorizes the strided reads
            return pop.reshape(-1, n).T if rows else pop.reshape(n, -1)

        def no_nan(r):
            return r.nan_to_num(nan=math.inf, posinf=math.inf)

    if kind == "death" and backend == "numpy" and rows:  # the common small call: lean
        def run(pop, P, tol, weight):
            return death(pop.T, P, tol)
    elif kind == "death" and backend == "torch":
        def run(pop, P, tol, weight):
            if P.dtype == xp.float64:
                # inductor's float64 code converts every AND of two masks to int32 and
                # back: select on "total violation == 0" instead, the same feasibility
                # in one mask
                f, cv = fitness(view(pop), P, tol)
                return xp.where(cv == 0, f, math.inf)
            return death(view(pop), P, tol)
    elif kind == "death":
        def run(pop, P, tol, weight):
            return death(view(pop), P, tol)
    elif kind == "penalty":
        def run(pop, P, tol, weight):
            f, cv = fitness(view(pop), P, tol)
            return no_nan(f + weight * cv)  # inf - inf: still inf
    elif kind == "split":
        def run(pop, P, tol, weight):
            return fitness(view(pop), P, tol)
    else:
        def run(pop, P, tol, weight):
            _, C = leaves(view(pop), P)
            return signed_constraints(C, plan, tol, xp, axis=-1 if rows else 0)

    run.__name__ = run.__qualname__ = f"{kind}_{layout}"
    ADAPTERS[key] = run
    return run
