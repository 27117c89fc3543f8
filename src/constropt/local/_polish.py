"""Polish: local refinement of the search's best point with scipy's SLSQP.

Objective, constraint leaves and their exact derivatives come from the one scipy bridge
(:class:`._scipy.ScipyBridge`: the generated NumPy code, float64), over the free genes;
integer genes are held fixed.  The bridge's rules apply: strict inequalities keep
:data:`._scipy.STRICT_MARGIN` inside their boundary, and an equality ``h == 0`` is the
band ``|h| <= eq_tol`` (the feasible set's own definition; polish uses 99.9% of it so
SLSQP's end point stays inside after rounding), or ``h = 0`` where the equalities hold
tightly (:func:`polish_band`).  ``margin`` tightens every inequality
and the band further (the caller retries with a small one when SLSQP ends a hair outside
an active constraint).  Leaves under an ``Or`` are left out (SLSQP needs a conjunction);
the caller accepts the polished point only if the full float64 check finds it feasible
and better.
"""

from __future__ import annotations

import time
import warnings

import numpy as np

from ..problem._scipy import STRICT_MARGIN, ScipyBridge, conjunctive_leaves

__all__ = ["conjunctive_leaves", "polish", "Counter", "STRICT_MARGIN", "PolishInterrupted",
           "singular_sides", "wide_spread", "hair_outside", "HAIR", "stationarity",
           "STATIONARY", "real_gain", "TIE", "rounding_scale", "polish_band"]


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


def polish_band(problem) -> float:
    """The band ``|h| <= band`` the local solvers aim equalities into: 99.9% of
    ``eq_tol`` (an optimum may lean on a band the user chose), or 0 on the finishing view
    of tight equalities (:func:`constropt.finish._tight.finishing_view`, which keeps the
    search band aside): there no objective value may profit from the tolerance, which
    only absorbs rounding."""
    if getattr(problem, "_eq_band", None) is not None:
        return 0.0
    return problem.eq_tol * (1.0 - 1e-3)


#: Box widths spanning more than this ratio: SLSQP runs in scaled form first.
SCALED_FIRST = 1e6


def wide_spread(problem) -> bool:
    """Whether the box's finite widths span more than :data:`SCALED_FIRST` (genes of
    width 1 beside genes of width 1e7).  SLSQP then runs in scaled form first, in the
    polish (:func:`constropt.finish._polishing.polish_from`) and in the moves of
    :mod:`constropt.finish._intsearch`."""
    width = problem.upper - problem.lower
    width = width[np.isfinite(width) & (width > 0)]
    return bool(width.size > 0 and width.max() > SCALED_FIRST * width.min())


#: SLSQP's iterations per free gene, beyond its 200 (:func:`slsqp_iterations`).
ITERATIONS_PER_GENE = 10


def slsqp_iterations(n: int) -> int:
    """SLSQP's iteration cap for ``n`` free genes: 200, or ``ITERATIONS_PER_GENE`` per
    gene where that is more.  A quasi-Newton method builds its curvature one direction
    per iteration: the chained Rosenbrock of 100 variables in a ball takes about 470
    iterations from a random start (scipy's SLSQP, exact gradients), and a cap of 200
    ended every local solve of the search short of a KKT point, wasting it."""
    return max(200, ITERATIONS_PER_GENE * int(n))


def polish(problem, x0: np.ndarray, pvec: np.ndarray, *, maxiter: int | None = None,
           max_evals: int | None = None, margin: float = STRICT_MARGIN,
           deadline: float | None = None, info: dict | None = None, scaled: bool = False):
    """Refine ``x0`` with SLSQP; returns ``(x, nfev)`` (``x`` may be worse: caller checks).

    Ctrl-C raises :class:`PolishInterrupted` with the last point evaluated.

    Parameters
    ----------
    problem : Problem
    x0 : ndarray, shape (n,)
    pvec : ndarray, shape (n_params,)
    maxiter : int, optional
        SLSQP iterations; None: :func:`slsqp_iterations` of the free genes.
    max_evals : int, optional
        Evaluation budget left; polish is skipped when it is too small.
    margin : float
        Extra distance inside every inequality and the equality band (the bridge's
        ``tighten``); strict inequalities keep at least ``STRICT_MARGIN``.
    deadline : float, optional
        A ``time.perf_counter()`` value: the polish stops at its first evaluation after
        it and keeps its last point.
    info : dict, optional
        Filled with ``timed_out`` (bool): whether the deadline stopped the polish, and
        ``status``: SLSQP's exit status (0 converged, 8 line search failed, 9 iteration
        limit, ...), None where the budget, the deadline or an error ended it; and
        ``moved``: whether the end differs from the start.
    scaled : bool
        Run SLSQP in scaled form (:func:`_scaled`; needs exact derivatives).
    """
    free = np.flatnonzero(~problem.integer)
    if free.size == 0 or (max_evals is not None and max_evals < 10):
        return x0.copy(), 0
    lo, hi = problem.lower[free], problem.upper[free]
    x_fixed = x0.astype(np.float64).copy()
    counter = Counter(max_evals, deadline)
    bridge = ScipyBridge(problem, pvec, free=free, x_fixed=x_fixed, counter=counter,
                         eq_tol=polish_band(problem), tighten=margin)
    try:
        held = _singular_sides(bridge, np.clip(x_fixed[free], lo, hi), lo, hi)
    except BudgetSpent:  # the deadline passed
        if info is not None:
            info["timed_out"], info["status"], info["moved"] = counter.timed_out, None, False
        return x0.copy(), counter.n
    if held.any():  # hold them where they are: SLSQP cannot use a non-finite partial
        free, lo, hi = free[~held], lo[~held], hi[~held]
        if free.size == 0:
            return x0.copy(), counter.n
        bridge = ScipyBridge(problem, pvec, free=free, x_fixed=x_fixed, counter=counter,
                             eq_tol=polish_band(problem), tighten=margin)
    jac = bridge.jac if bridge.exact else None
    cons = _exact_rows(problem, bridge, bridge.slsqp_constraints())
    if maxiter is None:
        maxiter = slsqp_iterations(free.size)
    if max_evals is not None:
        maxiter = max(1, min(maxiter, max_evals // (3 if jac is not None else free.size + 2)))
    z0 = np.clip(x_fixed[free], lo, hi)
    z, status = _slsqp(bridge, jac, cons, z0, lo, hi, counter, scaled, maxiter, x_fixed, free)
    if info is not None:
        info["timed_out"] = counter.timed_out
        info["status"], info["moved"] = status, bool(np.any(z != z0))
    x = x_fixed.copy()
    x[free] = z
    return x, counter.n


def _slsqp(bridge, jac, cons, z0, lo, hi, counter, scaled, maxiter, x_fixed, free):
    """scipy's SLSQP from the free genes ``z0`` (in scaled form when ``scaled`` and the
    derivatives are exact): ``(z, SLSQP's status)``; the last point evaluated where the
    budget or the deadline ended it (status None), ``z0`` where it failed; Ctrl-C raises
    :class:`PolishInterrupted` with the last point."""
    from scipy.optimize import minimize  # scipy.optimize costs its import only when used

    status = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            try:
                if scaled and jac is not None:  # genes in box units, rows scaled
                    fun, jac, cons, u0, ub, to_z = _scaled(bridge, cons, z0, lo, hi)
                else:
                    fun, u0, ub, to_z = bridge.fun, z0, list(zip(lo, hi)), None
                res = minimize(fun, u0, jac=jac, bounds=ub, constraints=cons,
                               method="SLSQP", options={"maxiter": maxiter, "ftol": 1e-12})
                z = np.clip(res.x if to_z is None else to_z(res.x), lo, hi)
                status = int(res.status)
            except BudgetSpent:  # the budget ends the polish: keep its last point
                z = np.clip(counter.last, lo, hi) if counter.last is not None else z0
            except KeyboardInterrupt:
                z = np.clip(counter.last, lo, hi) if counter.last is not None else z0
                x = x_fixed.copy()
                x[free] = z
                raise PolishInterrupted(x, counter.n) from None
            except (ValueError, ArithmeticError, np.linalg.LinAlgError):
                z = z0
    return z, status


def _exact_rows(problem, bridge, cons: list) -> list:
    """On the finishing view of tight equalities (:func:`polish_band` 0), the equality
    group's two opposite rows ``0 - h >= 0``, ``h - 0 >= 0`` (the bridge's first two:
    it lists equalities first) as one SLSQP equality row ``h == 0``: the pair makes
    SLSQP's subproblem degenerate, and it stops short of the optimum on the manifold."""
    if polish_band(problem) != 0.0:
        return cons
    groups = bridge.groups()
    if not groups or problem.leaves[int(groups[0][0][0])].kind != "eq" or \
            not groups[0][1] == groups[0][2] == 0.0 or len(cons) < 2:
        return cons
    idx = groups[0][0]
    row = {"type": "eq", "fun": bridge._cfun(idx)}
    if bridge.exact:
        row["jac"] = bridge._cjac(idx)
    return [row, *cons[2:]]


def _singular_sides(bridge, z0: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Free genes on a side of the box where a partial derivative (of the objective or
    of a constraint) is not finite: ``x2**0.6`` at ``x2 = 0``.  SLSQP from such a point
    stops on a singular matrix at every margin and form; with ``x2`` held there it can
    reach an optimum on that side.  One derivative evaluation (none without exact
    derivatives)."""
    side = (z0 == lo) | (z0 == hi)
    if not bridge.exact or not side.any():
        return np.zeros(z0.shape, dtype=bool)
    g, J = bridge.derivatives(z0)
    bad = ~np.isfinite(g)
    if J.size:
        bad |= ~np.all(np.isfinite(J), axis=0)
    return side & bad


def singular_sides(problem, x: np.ndarray, pvec: np.ndarray):
    """:func:`_singular_sides` of the continuous genes of the full point ``x``: ``(mask
    (n,), evaluations)``, one derivative evaluation where a gene is on a side."""
    free = np.flatnonzero(~problem.integer)
    out = np.zeros(problem.n, dtype=bool)
    counter = Counter()
    if free.size:
        x = np.asarray(x, dtype=np.float64)
        bridge = ScipyBridge(problem, pvec, free=free, x_fixed=x, counter=counter)
        out[free] = _singular_sides(bridge, x[free], problem.lower[free],
                                    problem.upper[free])
    return out, counter.n


#: An objective gain of at most this times ``1 + |f|`` is rounding, not a better point.
TIE = 1e-12


def real_gain(problem, f: float, f_ref: float, tie: float = TIE) -> bool:
    """Whether ``f`` beats ``f_ref`` (in the problem's sense) by more than
    ``tie * (1 + |f_ref|)`` (default :data:`TIE`): a move worth taking, not rounding
    noise."""
    sign = -1.0 if problem.maximize else 1.0
    return bool(sign * f < sign * f_ref - tie * (1 + abs(f_ref)))


#: An end violating by at most this (relative to the point's size) is a hair outside.
HAIR = 1e-6


def hair_outside(V: np.ndarray, x: np.ndarray) -> bool:
    """Whether a point ``x`` with violations ``V`` (float64 check) lies outside the
    feasible set by at most :data:`HAIR` of its size: an SLSQP end that a projection or
    a margin cures, as opposed to a failed polish."""
    return bool(not np.all(V == 0) and np.max(V) <= HAIR * (1.0 + np.max(np.abs(x))))


#: The scaled polish's unit is the box width, at most this many times the start's
#: magnitude (at least 1).
SPAN = 1e6


def _row_scale(J: np.ndarray) -> np.ndarray:
    """Per-row divisors: each row's gradient norm, 1 where it is 0 or not finite."""
    nrm = np.sqrt(np.sum(np.atleast_2d(J) ** 2, axis=-1))
    return np.where(np.isfinite(nrm) & (nrm > 1e-300), nrm, 1.0)


def _scaled(bridge, cons, z0, lo, hi):
    """The SLSQP problem in scaled form: genes ``u = (z - z0) / w``, ``w`` the box width
    (at most :data:`SPAN` times the start's magnitude: a box of +-1e300 would leave no
    digits to a start near 1), the objective and every constraint row divided by its
    gradient norm at the start.

    SLSQP's quasi-Newton start (the identity) and its merit function weigh all genes and
    rows alike, which fails where genes of size 1e7 meet genes of size 1 and rows with
    coefficients 1e5 meet rows with coefficients 1.  A row ``ub - c >= 0`` divided by a
    positive number keeps its feasible set, so the constraints and the band are the
    same.

    Returns ``(fun, jac, constraints, u0, bounds, to_z)``.
    """
    w = np.where(hi > lo, np.minimum(hi - lo, SPAN * np.maximum(np.abs(z0), 1.0)), 1.0)

    def to_z(u):
        return z0 + w * u

    fs = float(_row_scale(bridge.jac(z0) * w)[0])
    out = []
    for d in cons:
        s = _row_scale(d["jac"](z0) * w)
        out.append({"type": d["type"],
                    "fun": lambda u, d=d, s=s: d["fun"](to_z(u)) / s,
                    "jac": lambda u, d=d, s=s: d["jac"](to_z(u)) * w / s[:, None]})
    return (lambda u: bridge.fun(to_z(u)) / fs, lambda u: bridge.jac(to_z(u)) * w / fs, out,
            np.zeros_like(z0), list(zip((lo - z0) / w, (hi - z0) / w)), to_z)


def rounding_scale(J: np.ndarray, x: np.ndarray, C: np.ndarray) -> np.ndarray:
    """Per leaf, the size of the terms its float64 value is rounded at:
    ``|J| max(|x|, 1) + |C| + 1`` for the Jacobian ``J`` (m, n), point ``x`` (n,) and
    leaf values ``C`` (m,).  A few ulps of it is how far inside a boundary a point must
    lie for rounding not to put it outside."""
    return np.abs(J) @ np.maximum(np.abs(x), 1.0) + np.abs(C) + 1.0


#: A settled polish end whose KKT residual (:func:`stationarity`) exceeds this did not
#: reach a stationary point.
STATIONARY = 1e-4
#: An inequality within this (relative to its rounding scale) of 0 counts as active.
ACTIVE = 1e-6
#: Evaluations :func:`stationarity` takes: the leaves and their derivatives.
STATIONARITY_EVALS = 2


def stationarity(problem, x: np.ndarray, pvec: np.ndarray):
    """How far a feasible ``x`` is from a KKT point: ``(residual, evaluations)``.

    The residual is ``min || D (grad f + sum_k l_k grad c_k) || / (1 + |f|)`` over the
    free genes, ``D = diag(max(|x_i|, 1))`` (derivatives per relative change of a gene),
    with multipliers ``l_k >= 0`` on the active inequalities (within :data:`ACTIVE` of
    their rounding scale) and the sides of the box, free signs on equalities and on the
    leaves under an ``Or``: 0 at a KKT point, about the objective's relative fall per
    relative step elsewhere.  SLSQP can report success short of one (on logarithms
    under an equality, say).  Returns ``(0.0, used)`` where the derivatives are
    missing or not finite (no verdict: a kink or a singular side).  One evaluation of
    the leaves and one of the derivatives.
    """
    from scipy.optimize import nnls  # scipy.optimize costs its import only when used

    free = ~problem.integer
    L = len(problem.leaves)
    if not free.any():
        return 0.0, 0
    try:
        deriv = problem.lowering.derivatives("numpy")
    except Exception:  # no exact derivatives: no verdict
        return 0.0, 0
    M = np.reshape(pvec, (-1, 1))
    x = np.asarray(x, dtype=np.float64)
    X = x[:, None]
    with np.errstate(all="ignore"):
        f, C = problem.lowering.functions("numpy")["leaves"](X, M)
        g, J = deriv(X, M)
    g = np.asarray(g, float).reshape(-1)[:problem.n]
    C = np.asarray(C, float).reshape(L)
    J = np.asarray(J, float).reshape(L, -1)[:, :problem.n] if L else np.zeros((0, problem.n))
    if problem.maximize:
        g = -g
    unit = np.maximum(np.abs(x[free]), 1.0)  # genes in relative units
    g = g[free] * unit
    gn = 1.0 + abs(float(np.reshape(f, -1)[0]))
    if not (np.all(np.isfinite(g)) and np.isfinite(gn)):
        return 0.0, STATIONARITY_EVALS
    cols = []
    plain = np.zeros(L, dtype=bool)
    plain[conjunctive_leaves(problem)] = True
    size = rounding_scale(J, x, C)
    for k, lf in enumerate(problem.leaves):
        row = J[k, free] * unit
        if not np.all(np.isfinite(row)):
            return 0.0, STATIONARITY_EVALS
        if lf.kind == "eq" or not plain[k]:
            cols += [row, -row]
        elif C[k] > -ACTIVE * size[k]:
            cols.append(row)
    lo, hi, xf = problem.lower[free], problem.upper[free], x[free]
    near = ACTIVE * np.maximum(np.minimum(hi - lo, unit), 1e-300)
    for i in np.flatnonzero(xf >= hi - near):
        cols.append(np.eye(len(xf))[i])
    for i in np.flatnonzero(xf <= lo + near):
        cols.append(-np.eye(len(xf))[i])
    if not cols:
        with np.errstate(over="ignore"):  # a huge gradient (near a pole): inf, not KKT
            return float(np.linalg.norm(g)) / gn, STATIONARITY_EVALS
    A = np.array(cols).T
    scale = np.max(np.abs(A), axis=0)
    A = A / np.where(scale > 0, scale, 1.0)
    try:
        with np.errstate(over="ignore", invalid="ignore"):
            _, res = nnls(A, -g, maxiter=50 * A.shape[1])
    except RuntimeError:  # no convergence: no verdict
        return 0.0, STATIONARITY_EVALS
    return float(res) / gn, STATIONARITY_EVALS
