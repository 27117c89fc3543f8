"""Incumbents inside the certificate's branch-and-bound (:mod:`._branch`): what the
bounds read from the incumbent (Lagrange multipliers, the second-order point, the
exclusion box), and the local solves that look for a better one (``improve`` of
:func:`._branch.branch_and_bound`; the solver itself is
:func:`._result.local_incumbents`): when they run, from where, and what a better
point changes."""

from __future__ import annotations

import logging
import math
import time

import numpy as np
import torch
from scipy.optimize import nnls

from ._bounds import _light
from ._convex import convex_bound
from ._exclusion import exclusion_box

__all__ = ["INCUMBENT_SHARE", "INCUMBENT_MIN", "allowance", "at_incumbent", "improve_step",
           "multipliers", "start_point"]

_LOG = logging.getLogger("constropt")
#: Local solves for incumbents (``improve`` of :func:`branch_and_bound`): at most one per
#: step, from the LP point (else the midpoint) of the open box with the smallest bound,
#: each given the seconds that keep them all within this share of the time so far (at
#: least ``INCUMBENT_MIN`` seconds, and none while that is not left).
INCUMBENT_SHARE, INCUMBENT_MIN = 0.15, 0.05


def at_incumbent(model, problem, pvec, U, x, eps_abs, second_order, dev, progress):
    """What the bounds read from the incumbent ``x`` (objective ``U``, minimization
    sense; None: none): ``(lam, eq_slack, P, xt, excl)``, the Lagrange multipliers at
    ``x`` (any multipliers of the right signs give valid bounds), their equalities'
    slack, the parameters followed by them, ``x`` for the second-order bound and the
    exclusion box around ``x``; ``progress["convex"]`` says whether the Lagrangian is
    proven convex on the box."""
    leaves = model.leaves
    lam = np.zeros(len(leaves))
    if x is not None and math.isfinite(U) and model.lagrangian is not None \
            and _light(model):
        lam = multipliers(model, problem, np.asarray(pvec, dtype=np.float64),
                          np.asarray(x, dtype=np.float64))
    eq_slack = sum(abs(v) for v, lf in zip(lam, leaves) if lf.kind == "eq") * problem.eq_tol
    eq_slack = eq_slack * (1 + 1e-12)
    P = torch.as_tensor(np.concatenate([np.asarray(pvec, dtype=np.float64), lam]),
                        device=dev)
    xt = None if x is None or not second_order else torch.as_tensor(
        np.array(x, dtype=np.float64), device=dev)
    excl = None
    if math.isfinite(U) and x is not None:
        # a Lagrangian proven convex on the whole search box bounds it all at once: the
        # whole box is then the exclusion box (a convex QP needs no branching)
        whole = convex_bound(model, problem, pvec, lam, x, problem.eq_tol)
        progress["convex"] = bool(progress.get("convex")) or whole is not None
        if whole is not None:
            excl = (torch.as_tensor(problem.lower, dtype=torch.float64),
                    torch.as_tensor(problem.upper, dtype=torch.float64), whole)
        else:
            excl = exclusion_box(model, problem, P.cpu(), np.asarray(x, dtype=np.float64),
                                 U - eps_abs, eq_slack)
    if excl is not None:
        _LOG.debug("certify: exclusion box %s", excl)
        excl = (excl[0].to(dev).reshape(-1, 1), excl[1].to(dev).reshape(-1, 1), excl[2])
    return lam, eq_slack, P, xt, excl


def allowance(spent, t0) -> float:
    """Seconds the next local solve for an incumbent may take (0: none now): what keeps
    them within ``INCUMBENT_SHARE`` of the time so far, at least ``INCUMBENT_MIN``."""
    left = INCUMBENT_SHARE * (time.perf_counter() - t0) - spent.get("incumbent", 0.0)
    return max(left, INCUMBENT_MIN) if left > -INCUMBENT_MIN else 0.0


def improve_step(improve, U, lo, hi, lb, score, prune, s, spent, progress,
             problem, pvec, second_order: bool, t0: float):
    """One local solve for an incumbent (see :func:`branch_and_bound`): ``(U, (lo, hi,
    lb, score))``, the boxes that can no longer hold a point better than a new ``U``
    dropped (those within the target gap of it kept in ``prune.floor``)."""
    t_i = time.perf_counter()
    got = improve(start_point(lo, hi, lb, prune, s), U, allowance(spent, t0))
    spent["incumbent"] = spent.get("incumbent", 0.0) + time.perf_counter() - t_i
    # a gain within the prune threshold changes no box's fate: not worth the refresh
    if got is None or not got[0] < U - s.eps_abs:
        return U, (lo, hi, lb, score)
    U = float(got[0])
    prune.lower(U, np.asarray(got[1], dtype=np.float64), problem, pvec, second_order,
                progress)
    progress["U"], progress["found"] = U, got[2]
    _LOG.debug("certify: local incumbent %r", U)
    keep = lb <= U - s.eps_abs
    prune.floor = torch.minimum(prune.floor, torch.where(~keep & (lb <= U), lb,
                                                         math.inf).min())
    return U, (lo[:, keep], hi[:, keep], lb[keep], score[:, keep])


def start_point(lo, hi, lb, prune, s) -> np.ndarray:
    """A start for a local solve: the LP point of the last best box that had an LP
    (variables without a column at the box's midpoint), else the midpoint of the box
    with the smallest bound; integers rounded into their box."""
    if prune.point is not None:
        a, b, vals = prune.point
        prune.point = None  # each LP point starts one local solve
    else:
        j = int(torch.argmin(lb))
        a, b, vals = lo[:, j].double().cpu().numpy(), hi[:, j].double().cpu().numpy(), {}
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    x = np.where(np.isfinite(a) & np.isfinite(b), a + 0.5 * (b - a),
                 np.clip(0.0, a, b))
    for k, v in vals.items():
        if math.isfinite(v):
            x[k] = min(max(v, a[k]), b[k])
    ints = s.integer.cpu().numpy()
    x[ints] = np.clip(np.round(x[ints]), np.ceil(a[ints]), np.floor(b[ints]))
    return x


def multipliers(model, problem, pvec, x) -> np.ndarray:
    """Lagrange multipliers of the model's smooth leaves at ``x`` (minimization sense):
    non-negative least squares of ``grad f + sum_i lam_i grad c_i = 0`` over the active
    inequalities (``lam_i >= 0``), the equalities (either sign) and the active box
    sides (whose multipliers are dropped: the box itself enforces them).  Gradients are
    the model's exact ones, evaluated at the point (midpoints of point enclosures)."""
    lam = np.zeros(len(model.leaves))
    if not model.lag_leaves or model.grad is None:
        return lam
    X = torch.tensor(np.array(x, dtype=np.float64)).reshape(-1, 1)
    P = torch.as_tensor(np.concatenate([pvec, lam]), dtype=torch.float64)
    nodes = list(model.grad) + [model.leaf_nodes[i] for i in model.lag_leaves] + \
        [n for row in model.jac for n in row]
    vals = model.program.forward(X, X, P, only=nodes)

    def mid(n):
        iv = vals[n]
        return float(0.5 * (iv.lo.reshape(-1)[0] + iv.hi.reshape(-1)[0]))

    g = np.array([mid(n) for n in model.grad])
    cols, owner = [], []
    for i, row in zip(model.lag_leaves, model.jac):
        lf = model.leaves[i]
        ci = mid(model.leaf_nodes[i])
        Ji = np.array([mid(n) for n in row])
        if not (np.all(np.isfinite(Ji)) and math.isfinite(ci)):
            continue
        scale = 1e-6 * max(1.0, float(np.abs(Ji).max()) * max(1.0, float(np.abs(x).max())))
        if lf.kind == "eq":
            cols += [Ji, -Ji]
            owner += [(i, 1.0), (i, -1.0)]
        elif ci >= -scale:
            cols.append(Ji)
            owner.append((i, 1.0))
    w = np.maximum(problem.upper - problem.lower, 1e-300)
    for k in range(problem.n):
        if x[k] - problem.lower[k] <= 1e-9 * w[k]:
            cols.append(-np.eye(problem.n)[k])
            owner.append((None, 0.0))
        if problem.upper[k] - x[k] <= 1e-9 * w[k]:
            cols.append(np.eye(problem.n)[k])
            owner.append((None, 0.0))
    if not cols or not np.all(np.isfinite(g)):
        return lam
    sol, _ = nnls(np.array(cols).T, -g)
    for (i, sgn), v in zip(owner, sol):
        if i is not None:
            lam[i] += sgn * v
    return lam
