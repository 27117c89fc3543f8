"""Polish: local refinement of the search's best point with scipy's SLSQP.

Objective, constraint leaves and their exact derivatives come from the generated code
(NumPy backend, float64).  Integer genes are held fixed.  An equality ``h == 0`` is the
band ``|h| <= eq_tol`` (the feasible set's own definition), so the polished point may use
the whole tolerance; pass a smaller ``eq_tol`` for tighter equalities.  Inequalities are tightened
by a small margin (SLSQP may end a hair outside an active constraint), so the polished
point satisfies them, strict ones strictly.  Leaves
under an ``Or`` are left out (SLSQP needs a conjunction); the caller accepts the polished
point only if the full float64 check finds it feasible and better.
"""

from __future__ import annotations

import time
import warnings

import numpy as np

from ..problem._constraints import AllOf, Leaf

__all__ = ["conjunctive_leaves", "polish", "Counter", "scipy_functions", "PolishInterrupted"]

STRICT_MARGIN = 1e-9


def conjunctive_leaves(problem) -> list[int]:
    """Indices (into ``problem.leaves``) of leaves every feasible point must satisfy."""
    out, k = [], 0

    def walk(node, conj):
        nonlocal k
        if isinstance(node, Leaf):
            if conj:
                out.append(k)
            k += 1
            return
        for child in node.children:
            walk(child, conj and isinstance(node, AllOf))

    for c in problem._constraints:
        walk(c.tree, True)
    return out


class Counter:
    """Counts point evaluations (objective/constraint values and derivatives).

    With a ``limit``, the evaluation that would exceed it raises :class:`BudgetSpent`
    instead, so a local solver can never overrun the budget; with a ``deadline`` (a
    ``time.perf_counter()`` value), so does the first evaluation after it.
    """

    def __init__(self, limit: int | None = None, deadline: float | None = None):
        self.n = 0
        self.limit = limit
        self.deadline = deadline
        self.timed_out = False
        self.last = None  # the last point whose values were evaluated

    def add(self) -> None:
        if self.limit is not None and self.n + 1 > self.limit:
            raise BudgetSpent
        if self.deadline is not None and time.perf_counter() >= self.deadline:
            self.timed_out = True
            raise BudgetSpent
        self.n += 1


class BudgetSpent(Exception):
    """The evaluation budget or time of a polish ran out (caught inside :func:`polish`)."""


class PolishInterrupted(KeyboardInterrupt):
    """Ctrl-C during a polish; carries what the polish had when it came.

    A subclass of ``KeyboardInterrupt``, so code that does not expect it stops as on
    any Ctrl-C.  Attributes: ``x`` (the last point evaluated, or the start) and
    ``nfev`` (evaluations spent).
    """

    def __init__(self, x, nfev: int):
        super().__init__("polish interrupted")
        self.x, self.nfev = x, nfev


def scipy_functions(problem, pvec, free, x_fixed, counter: Counter, margin=STRICT_MARGIN):
    """Objective, its gradient and SLSQP constraint dicts over the free genes.

    Returns ``(fun, jac, constraints)`` for :func:`scipy.optimize.minimize`; values are
    in minimization sense, constraints in scipy's ``>= 0`` / ``== 0`` convention.
    """
    ns = problem.lowering.functions("numpy")
    leaves_fn = ns["leaves"]
    P = pvec.reshape(-1, 1)
    sign = -1.0 if problem.maximize else 1.0
    try:
        deriv = problem.lowering.derivatives("numpy")
    except Exception:  # vector variables or a derivative sympy cannot lower
        deriv = None
    cache: dict = {}

    def full(z):
        x = x_fixed.copy()
        x[free] = z
        return x

    def values(z):
        key = z.tobytes()
        if cache.get("vk") != key:
            counter.add()
            with np.errstate(all="ignore"):
                f, C = leaves_fn(full(z).reshape(-1, 1), P)
            counter.last = z.copy()
            cache["vk"], cache["v"] = key, (float(np.asarray(f).reshape(-1)[0]),
                                            np.asarray(C, dtype=float).reshape(-1))
        return cache["v"]

    def derivs(z):
        key = z.tobytes()
        if cache.get("dk") != key:
            counter.add()
            with np.errstate(all="ignore"):
                g, J = deriv(full(z).reshape(-1, 1), P)
            cache["dk"], cache["d"] = key, (np.asarray(g, float).reshape(-1)[free],
                                            np.asarray(J, float)[..., 0][:, free])
        return cache["d"]

    def fun(z):
        f = sign * values(z)[0]
        return f if np.isfinite(f) else 1e300

    jac = (lambda z: sign * derivs(z)[0]) if deriv is not None else None
    cons = []
    leaves = problem.leaves
    kinds = np.array([lf.kind for lf in leaves])
    conj = np.array(conjunctive_leaves(problem), dtype=int)
    band = max(0.0, problem.eq_tol * (1.0 - 1e-3) - margin)
    for kind in ("eq", "le", "lt"):
        idx = conj[kinds[conj] == kind] if conj.size else conj
        if idx.size == 0:
            continue
        if kind == "eq":  # |h| <= eq_tol, the feasible set's own definition, as two sides
            for side in (1.0, -1.0):
                d = {"type": "ineq",
                     "fun": lambda z, idx=idx, side=side: band - side * values(z)[1][idx]}
                if deriv is not None:
                    d["jac"] = lambda z, idx=idx, side=side: -side * derivs(z)[1][idx]
                cons.append(d)
            continue

        def cfun(z, idx=idx):
            return -values(z)[1][idx] - margin

        d = {"type": "ineq", "fun": cfun}
        if deriv is not None:
            d["jac"] = lambda z, idx=idx: -derivs(z)[1][idx]
        cons.append(d)
    return fun, jac, cons


def polish(problem, x0: np.ndarray, pvec: np.ndarray, *, maxiter: int = 200,
           max_evals: int | None = None, margin: float = STRICT_MARGIN,
           deadline: float | None = None, info: dict | None = None):
    """Refine ``x0`` with SLSQP; returns ``(x, nfev)`` (``x`` may be worse: caller checks).

    Ctrl-C raises :class:`PolishInterrupted` with the last point evaluated.

    Parameters
    ----------
    problem : Problem
    x0 : ndarray, shape (n,)
    pvec : ndarray, shape (n_params,)
    maxiter : int
        SLSQP iterations.
    max_evals : int, optional
        Evaluation budget left; polish is skipped when it is too small.
    deadline : float, optional
        A ``time.perf_counter()`` value: the polish stops at its first evaluation after
        it and keeps its last point.
    info : dict, optional
        Filled with ``timed_out`` (bool): whether the deadline stopped the polish.
    """
    from scipy.optimize import minimize

    free = np.flatnonzero(~problem.integer)
    if free.size == 0 or (max_evals is not None and max_evals < 10):
        return x0.copy(), 0
    lo, hi = problem.lower[free], problem.upper[free]
    x_fixed = x0.astype(np.float64).copy()
    counter = Counter(max_evals, deadline)
    fun, jac, cons = scipy_functions(problem, pvec, free, x_fixed, counter, margin)
    if max_evals is not None:
        maxiter = max(1, min(maxiter, max_evals // (3 if jac is not None else free.size + 2)))
    z0 = np.clip(x_fixed[free], lo, hi)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            try:
                res = minimize(fun, z0, jac=jac, bounds=list(zip(lo, hi)), constraints=cons,
                               method="SLSQP", options={"maxiter": maxiter, "ftol": 1e-12})
                z = np.clip(res.x, lo, hi)
            except BudgetSpent:  # the budget ends the polish: keep its last point
                z = np.clip(counter.last, lo, hi) if counter.last is not None else z0
            except KeyboardInterrupt:
                z = np.clip(counter.last, lo, hi) if counter.last is not None else z0
                x = x_fixed.copy()
                x[free] = z
                raise PolishInterrupted(x, counter.n) from None
            except (ValueError, ArithmeticError, np.linalg.LinAlgError):
                z = z0
    if info is not None:
        info["timed_out"] = counter.timed_out
    x = x_fixed.copy()
    x[free] = z
    return x, counter.n
