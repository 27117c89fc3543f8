"""Local solves across a batch: ``solve_batch(local_first=...)``.

Most parametric instances are smooth: their optimum moves continuously with the
parameters and keeps its active set between breakpoints.  So before any global search:

1. the instances are ordered by parameter proximity (lexicographic on the parameter
   columns, so a one-parameter sweep is sorted); every :data:`STRIDE`-th one, and the
   last, is an *anchor*;
2. each anchor is solved cold by a batched primal-dual interior-point method
   (:func:`interior_point`: Newton on the perturbed KKT conditions with slacks, exact
   gradients from the lowering, the Hessian of the Lagrangian by central differences of
   its exact gradient) from :data:`STARTS` starts (the box centre and seeded random
   points), every start of every anchor in one vectorized run;
3. every other instance is *warm-started* from the solutions of the anchors on either
   side of it, holding their active sets (:func:`._newton.polish_batch`);
4. each local answer is tested (:func:`kkt_test`): feasible in the float64 check, a KKT
   point (stationary, multipliers of the right sign, bound-held genes pushed the right
   way) with a reduced Hessian that is not negative (second order).  An anchor is
   answered when every start passes and all agree on the objective; another instance
   when both of its warm starts pass and agree.  On a problem proven convex for every
   instance (:func:`constropt.certify._convexity.prove_convex_for_all`: the parameters
   move the functions only by affine terms, so one proof covers the sweep) every KKT
   point is a global minimizer: an anchor's starts stop once one has converged, and
   that one passing the test answers it.

The instances left (answers that disagree, fail, or cannot be verified) go to the global
search; every answer then takes the exact check and the status rules of every mode
(``finish/_finish.py``).
"""

from __future__ import annotations

import numpy as np

from ..certify._convexity import prove_convex_for_all
from ..local._interior import _settle, interior_point, kkt_test
from ..local._newton import evals_per_iteration

__all__ = ["local_answers", "order_of", "STRIDE", "STARTS"]

#: Instances per anchor along the ordered sweep.
STRIDE = 16
#: Batches up to this size are all anchors.
SMALL = 32
#: Cold starts per anchor.
STARTS = 4
#: Relative agreement of two local answers' objectives.
AGREE = 1e-7


def order_of(M: np.ndarray) -> np.ndarray:
    """Instances ordered by parameter proximity: lexicographic on the parameter columns
    (the first parameter first), so a sweep of one parameter is sorted."""
    return np.lexsort(M[::-1]) if M.shape[0] else np.arange(M.shape[1])


def anchors_of(B: int) -> np.ndarray:
    """Positions (in the ordered sweep) of the anchors: every instance of a batch of at
    most :data:`SMALL` (the cold solves cost what one costs there: the work is
    vectorized), else every ``min(STRIDE, B // SMALL)``-th and the last."""
    stride = 1 if B <= SMALL else min(STRIDE, B // SMALL)
    return np.unique(np.append(np.arange(0, B, stride), B - 1))


def _agree(fa, fb):
    with np.errstate(invalid="ignore"):
        return np.abs(fa - fb) <= AGREE * (1.0 + np.abs(fa))


def solve_anchors(problem, M: np.ndarray, seed: int, convex: bool = False):
    """Cold local solves of the instances ``M`` (n_p, A) from :data:`STARTS` starts
    each (``convex``: the problem is proven convex for every instance, see
    :func:`_convex_anchors`).  Returns ``(ok (A,), x (N, A), f, V, active (L, A),
    used (A,))``."""
    N, A = problem.n, M.shape[1]
    lo, hi = problem.lower, problem.upper
    rng = np.random.default_rng(seed)
    starts = [0.5 * (lo + hi)] + [lo + (hi - lo) * rng.uniform(0.05, 0.95, N)
                                  for _ in range(STARTS - 1)]
    X0 = np.repeat(np.stack(starts, axis=1), A, axis=1)                         # (N, T A)
    MM = np.tile(M, (1, STARTS))
    cost = evals_per_iteration(problem)
    if convex:
        return _convex_anchors(problem, X0, MM, A, cost)
    x, _, its = interior_point(problem, X0, MM)
    x, f, V, feas, used = _settle(problem, x, MM, keep_feasible=True)
    ok, act = kkt_test(problem, x, MM)
    used = used + its * cost + 2 + cost
    ok &= feas
    sgn = -1.0 if problem.maximize else 1.0
    fm = np.where(ok, sgn * f, np.inf).reshape(STARTS, A)
    j = np.argmin(fm, axis=0)
    best = fm[j, np.arange(A)]
    agree = np.where(np.isfinite(fm), _agree(best[None], fm), True).all(axis=0)
    passed = np.isfinite(fm).sum(axis=0)
    # every start must pass and agree: a start that fails (it ran toward a pole, off
    # to a side, into a region where nothing converges) is a sign of what a local
    # answer cannot rule out, and the instance goes to the global search
    good = np.isfinite(best) & agree & (passed == STARTS)
    pick = j * A + np.arange(A)
    return (good, x[:, pick], f[pick], V[:, pick], act[:, pick],
            used.reshape(STARTS, A).sum(axis=0))


def _convex_anchors(problem, X0, MM, A, cost):
    """:func:`solve_anchors` on a problem proven convex for every instance
    (:func:`prove_convex_for_all`): every KKT point is a global minimizer, so an anchor's
    starts stop once one has converged, and that start (the box centre's where none
    did) is settled and tested alone; it answers the anchor if it passes."""
    x, conv, its = interior_point(problem, X0, MM, first_of=A)
    won = conv.reshape(STARTS, A)
    j = np.where(won.any(axis=0), np.argmax(won, axis=0), 0)
    pick = j * A + np.arange(A)
    x, f, V, feas, used = _settle(problem, x[:, pick], MM[:, pick], keep_feasible=True)
    ok, act = kkt_test(problem, x, MM[:, pick], second_order=False)  # convex: it holds
    used = used + its.reshape(STARTS, A).sum(axis=0) * cost + 2 + cost
    return ok & feas, x, f, V, act, used


def warm_solve(problem, M, X_left, act_left, X_right, act_right):
    """Newton from the solutions on either side (their active sets held), both tested.
    Returns ``(ok, x, f, V, used)`` for the instances ``M`` (n_p, k)."""
    k = M.shape[1]
    X0 = np.concatenate([X_left, X_right], axis=1)
    act = np.concatenate([act_left, act_right], axis=1)
    MM = np.concatenate([M, M], axis=1)
    x, f, V, feas, used = _settle(problem, X0, MM, active=act)
    ok, _ = kkt_test(problem, x, MM)
    ok &= feas
    used = used + 2 + evals_per_iteration(problem)
    sgn = -1.0 if problem.maximize else 1.0
    fa, fb = sgn * f[:k], sgn * f[k:]
    good = ok[:k] & ok[k:] & _agree(fa, fb)
    pick = np.where(fb < fa, np.arange(k) + k, np.arange(k))
    return good, x[:, pick], f[pick], V[:, pick], used[:k] + used[k:]


def local_answers(problem, M: np.ndarray, seed: int, solve_global):
    """The local stage over the instances ``M`` (n_p, B) as described in the module
    docstring.  ``solve_global(idx)`` solves the instances ``idx`` globally and returns
    ``(x (N, len), ok (len,))`` (its answers serve as warm starts).  Returns ``(answered
    (B,) bool, x, f, V, used, how)``; ``how`` says which local solve answered."""
    N, B = problem.n, M.shape[1]
    order = order_of(M)
    pos = anchors_of(B)
    anc = order[pos]
    convex = prove_convex_for_all(problem, M).convex
    ok_a, xa, fa, Va, acta, used_a = solve_anchors(problem, M[:, anc], seed, convex)
    answered = np.zeros(B, dtype=bool)
    x = np.zeros((N, B))
    f = np.full(B, np.nan)
    V = np.zeros((Va.shape[0], B))
    used = np.zeros(B, dtype=np.int64)
    how = np.empty(B, dtype=object)
    answered[anc[ok_a]] = True
    x[:, anc], f[anc], V[:, anc], used[anc] = xa, fa, Va, used_a
    how[anc] = ("an interior-point solve on a problem proven convex for every instance"
                if convex else
                "interior-point solves from several starts that agree")
    src_x, src_act, src_ok = xa.copy(), acta.copy(), ok_a.copy()
    if not ok_a.all():  # anchors the local solves could not answer: the global search
        bad = np.flatnonzero(~ok_a)
        gx, gok = solve_global(anc[bad])
        src_x[:, bad] = gx
        src_ok[bad] = gok
        if gok.any():
            _, act_g = kkt_test(problem, gx, M[:, anc[bad]])
            src_act[:, bad] = act_g
    rest = np.setdiff1d(np.arange(B), pos)
    if rest.size:
        right = np.searchsorted(pos, rest)          # the anchor after each position
        left = right - 1
        inst = order[rest]
        ok_w, xw, fw, Vw, used_w = warm_solve(problem, M[:, inst], src_x[:, left],
                                              src_act[:, left], src_x[:, right],
                                              src_act[:, right])
        ok_w &= src_ok[left] & src_ok[right]
        answered[inst[ok_w]] = True
        x[:, inst], f[inst], V[:, inst], used[inst] = xw, fw, Vw, used_w
        how[inst] = "Newton from the neighbouring solutions along the sweep, which agree"
    return answered, x, f, V, used, how, anc[~ok_a]
