"""Proven bounds: interval branch-and-bound after the search (``solve(..., certify=...)``).

Boxes of the search box are processed thousands at a time (torch, CPU or CUDA):

1. take the ``batch`` boxes with the smallest lower bound (best first) or, when the
   buffer is nearly full, the smallest boxes (depth first, which drains it);
2. bisect each along the variable with the largest score (:mod:`._certify_bounds`:
   the objective's smear ``|df/dx_k| * width_k``, and with equalities the relative
   smears of the objective and the constraints summed; integers split between two
   integers);
3. contract the children with the constraints and the objective cut ``f <= U`` (``U``
   the search's best feasible value) by forward-backward propagation, keeping the
   ranges of intermediate nodes (:mod:`._certify_nodes`); a child that empties holds
   no feasible point better than ``U``;
4. bound the objective below on each child (:mod:`._certify_bounds`: natural interval
   extension through the node ranges, mean-value forms of ``f`` and of the
   Lagrangian; :mod:`._certify_exclusion`: the second-order Taylor form of the
   Lagrangian around the incumbent, and an exclusion box around it) and drop the
   children whose bound is within the target gap of ``U``, keeping the smallest such
   bound.

The proven lower bound is the minimum of ``U``, the bounds of the boxes still in the
buffer and of every box dropped without a proof of infeasibility.  One host
synchronisation per step (the gap test), none per box.  A Ctrl-C stops the
branch-and-bound with the bound of the last completed step (``complete=False``).
:mod:`._certify_result` turns the certificate into ``Result`` fields.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np

from .._errors import OptionError

__all__ = ["Certificate", "certify", "certify_option"]

_LOG = logging.getLogger("constropt")
SECOND_ORDER = True
#: ``certify=True`` and ``"auto"`` aim for this relative gap.
DEFAULT_GAP = 1e-6
#: ``certify="auto"`` runs only on problems with at most this many scalar variables.
AUTO_MAX_VARS = 4
#: ... and for at most this many seconds.
AUTO_SECONDS = 2.0


@dataclass(frozen=True)
class Certificate:
    """What the interval branch-and-bound proved about a solve.

    Attributes
    ----------
    kind : str
        ``"bound"`` (a bound on the optimum), or ``"infeasible"`` (no box of the search
        box holds a feasible point).
    lower_bound : float
        Bound on the optimum in the user's sense: no feasible point of the search box has
        a smaller objective (a larger one when maximizing).  ``nan`` when ``kind`` is
        ``"infeasible"``.
    gap : float
        ``(U - L) / max(|U|, 1e-9)`` in minimization sense, ``U`` the incumbent and ``L``
        the bound; ``inf`` without a feasible incumbent.
    target_gap : float
        The gap the run aimed for.
    certified : bool
        ``gap <= target_gap`` (or infeasibility proven).
    incumbent : float
        The objective value (user's sense) the bound is compared with.
    boxes : int
        Boxes processed.
    seconds : float
        Wall time of the branch-and-bound, set-up included (``Result.timings["certify"]``).
    mean_value : bool
        Whether the mean-value form was used (a smooth objective with exact gradient).
    box : dict
        ``{symbol: (lo, hi)}``: the search box the statement is about.
    statement : str
        What is proven, in words.
    complete : bool
        False when Ctrl-C stopped the branch-and-bound: ``lower_bound`` is the bound of
        the last step it completed (still proven; ``-inf``, ``+inf`` when maximizing,
        if it stopped before the first), and the solve's status is ``INTERRUPTED``.
    lps : int
        Linear programs solved (0: the bounds come from interval forms, no LP
        relaxation yet).
    timings : mapping
        Where the time went, in seconds: ``setup`` (the interval model, multipliers,
        exclusion box), ``contract`` (propagation of the constraints), ``bound`` (the
        lower bounds of the boxes), ``branch`` (choosing and splitting boxes, the gap
        test); they add up to ``seconds``.
    """

    kind: str
    lower_bound: float
    gap: float
    target_gap: float
    certified: bool
    incumbent: float
    boxes: int
    seconds: float
    mean_value: bool
    box: dict
    statement: str
    complete: bool = True
    lps: int = 0
    timings: dict = field(default_factory=dict)

    def __post_init__(self):
        object.__setattr__(self, "timings", MappingProxyType(dict(self.timings)))


def certify_option(value):
    """``(target_gap, seconds or None, auto)`` for ``certify=``; None when off."""
    if value is False or value is None:
        return None
    if value is True:
        return DEFAULT_GAP, None, False
    if value == "auto":
        return DEFAULT_GAP, AUTO_SECONDS, True
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < 1:
        return float(value), None, False
    raise OptionError(f"certify must be False, True, 'auto' or a target gap in (0, 1), "
                      f"got {value!r}")


def _gap(U: float, L: float) -> float:
    if not math.isfinite(U):
        return math.inf
    return max(0.0, (U - L) / max(abs(U), 1e-9))


def certify(problem, pvec, incumbent: float, x=None, *, gap: float = DEFAULT_GAP,
            time_limit: float = 60.0, device="cpu", dtype=None, batch: int | None = None,
            max_boxes: int = 1 << 19, target_time: dict | None = None) -> Certificate:
    """Interval branch-and-bound over the search box of ``problem``.

    Parameters
    ----------
    problem : Problem
    pvec : array, shape (n_params,)
        Parameter values.
    incumbent : float
        Best known feasible objective (user's sense); ``nan`` or ``inf`` when none.
    x : array, shape (n,), optional
        The incumbent point: Lagrange multipliers estimated there (non-negative least
        squares on the active constraints) give the Lagrangian lower bound.
    gap : float
        Target relative gap.
    time_limit : float
        Seconds; the bound reached by then is returned.
    device : str or torch.device
    dtype : torch.dtype, optional
        float64 (default) or float32.
    batch : int, optional
        Boxes split per step (default 1024 on CPU, 16384 on CUDA).
    max_boxes : int
        Buffer capacity; beyond it the buffer drains depth first, and as a last resort
        boxes leave it with their lower bound folded into the result.
    target_time : dict, optional
        Filled with ``{gap: seconds}`` when the gap first falls to 1e-4 and 1e-6.

    Returns
    -------
    Certificate
        ``complete=False`` when a Ctrl-C stopped it: the bound of the last completed
        step (a KeyboardInterrupt is not raised).
    """
    t0 = time.perf_counter()
    sign = -1.0 if problem.maximize else 1.0
    U = sign * incumbent if incumbent is not None and math.isfinite(incumbent) else math.inf
    spent = {"setup": 0.0, "contract": 0.0, "bound": 0.0, "branch": 0.0}
    box = {s: (float(a), float(z)) for s, a, z in zip(problem.variables, problem.lower,
                                                       problem.upper)} \
        if not problem.has_vector_variables else {}
    progress = {"L": -math.inf, "boxes": 0, "mean_value": False}
    try:
        return _branch_and_bound(problem, pvec, U, sign, x, gap, time_limit, device, dtype,
                                 batch, max_boxes, target_time, t0, spent, box, progress)
    except KeyboardInterrupt:
        L = progress["L"]
        seconds = time.perf_counter() - t0
        spent["branch"] = max(0.0, seconds - spent["setup"] - spent["contract"] -
                              spent["bound"])
        g = _gap(U, L)
        sense = "smaller" if not problem.maximize else "larger"
        statement = (f"interrupted (Ctrl-C) after {progress['boxes']} boxes: no point of "
                     f"the search box that satisfies the constraints (exact real "
                     f"arithmetic; equalities as |h(x)| <= {problem.eq_tol:g}) has an "
                     f"objective {sense} than {sign * L!r}")
        return Certificate("bound", sign * L, g, gap, g <= gap,
                           sign * U if math.isfinite(U) else math.nan, progress["boxes"],
                           seconds, progress["mean_value"], box, statement, complete=False,
                           timings=spent)


def _branch_and_bound(problem, pvec, U, sign, x, gap, time_limit, device, dtype, batch,
                      max_boxes, target_time, t0, spent, box, progress):
    """The body of :func:`certify`; ``spent`` gathers the seconds per part and
    ``progress`` the last proven bound ``L`` (minimization sense) and the boxes so far,
    which a Ctrl-C leaves behind."""
    import torch

    from ..problem._fbbt import problem_model
    from ._bounds import _light, bound_boxes
    from ._exclusion import exclusion_box, second_order_bound
    from ._nodes import contract_nodes

    if not isinstance(device, torch.device):  # "auto" from solve: the search's device
        from ..backend._devices import resolve_device

        device = resolve_device(device)
    dev = torch.device(device)
    dtype = dtype or torch.float64
    if batch is None:
        batch = 16384 if dev.type == "cuda" else 1024
    model = problem_model(problem, gradient=True)
    mean_value = bool(model.grad is not None and model.smooth(model.f))
    progress["mean_value"] = mean_value
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
    use_lag = bool(np.any(lam != 0))
    integer = torch.as_tensor(problem.integer, device=dev)
    targets = model.leaf_targets(problem.eq_tol)
    if math.isfinite(U):
        targets = targets + [(model.f, -math.inf, U)]
    lo = torch.as_tensor(problem.lower, dtype=dtype, device=dev).reshape(-1, 1)
    hi = torch.as_tensor(problem.upper, dtype=dtype, device=dev).reshape(-1, 1)
    w0 = (hi - lo)[:, 0].clamp(min=1e-300)
    eps_abs = 0.5 * gap * max(abs(U), 1e-9) if math.isfinite(U) else 0.0
    floor = torch.tensor(math.inf, dtype=torch.float64, device=dev)
    excl = None
    xt = None if x is None or not SECOND_ORDER else torch.as_tensor(
        np.array(x, dtype=np.float64), device=dev)
    if math.isfinite(U) and x is not None:
        excl = exclusion_box(model, problem, P.cpu(), np.asarray(x, dtype=np.float64),
                             U - eps_abs, eq_slack)
    if excl is not None:
        e_lo, e_hi = (t.to(dev).reshape(-1, 1) for t in excl[:2])
        e_bound = excl[2]
        _LOG.debug("certify: exclusion box %s", excl)
    boxes = 0
    spent["setup"] = time.perf_counter() - t0

    def evaluate(lo, hi):
        """Contract, bound, prune: the surviving boxes and their bounds."""
        nonlocal floor
        t_c = time.perf_counter()
        lo, hi, empty, domains = contract_nodes(model.program, lo, hi, P, targets, integer)
        t_b = time.perf_counter()
        spent["contract"] += t_b - t_c
        lower, score, bad = bound_boxes(model, lo, hi, P, domains, eq_slack, problem.eq_tol,
                                        use_lag)
        lower = lower.double()
        if xt is not None:
            so = second_order_bound(model, lo, hi, P, xt, eq_slack)
            if so is not None:
                lower = torch.maximum(lower, so.double())
        if excl is not None:  # boxes inside the exclusion box around the incumbent
            inside = ((lo.double() >= e_lo) & (hi.double() <= e_hi)).all(0)
            lower = torch.where(inside, torch.clamp(lower, min=e_bound), lower)
        empty = empty | bad
        dead = empty | (lower > U - eps_abs) | torch.isnan(lower)
        near = ~empty & (lower > U - eps_abs) & (lower <= U)
        floor = torch.minimum(floor, torch.where(near, lower, math.inf).min())
        # boxes too small to split (every side at rounding level) leave with their bound
        tiny = ((hi - lo) <= 4 * torch.finfo(dtype).eps * torch.maximum(
            lo.abs(), hi.abs()).clamp(min=1e-300)).all(0)
        gone = ~dead & tiny
        floor = torch.minimum(floor, torch.where(gone, lower, math.inf).min())
        keep = ~(dead | gone)
        out = lo[:, keep], hi[:, keep], lower[keep], score[:, keep]
        spent["bound"] += time.perf_counter() - t_b
        return out

    lo, hi, lb, score = evaluate(lo, hi)
    boxes += 1
    times = target_time if target_time is not None else {}
    L = U
    while True:
        n = lb.numel()
        L = min(U, float(torch.minimum(floor, lb.min() if n else floor)))
        progress["L"], progress["boxes"] = L, boxes  # proven: every box is accounted for
        g = _gap(U, L)
        elapsed = time.perf_counter() - t0
        for t in (1e-4, 1e-6):
            if g <= t and t not in times:
                times[t] = elapsed
        _LOG.debug("certify: step n=%d L=%r gap=%.3g t=%.2f", n, L, g, elapsed)
        if n == 0 or g <= gap or elapsed > time_limit:
            break
        k = min(batch, n)
        if n + 2 * k > max_boxes:  # depth first: the smallest boxes
            size = ((hi - lo) / w0.reshape(-1, 1)).amax(0)
            idx = torch.topk(-size, k).indices
        else:
            idx = torch.topk(-lb, k).indices
        take = torch.zeros(n, dtype=torch.bool, device=dev)
        take[idx] = True
        slo, shi, ss = lo[:, take], hi[:, take], score[:, take]
        lo, hi, lb, score = lo[:, ~take], hi[:, ~take], lb[~take], score[:, ~take]
        # bisect along the largest score, several times when the buffer is small (fewer
        # steps: each costs the same fixed overhead of a few thousand tensor operations)
        reps = max(1, min(3, int(math.log2(max(batch // k, 1)))))
        for _ in range(reps):
            slo, shi, ss = _bisect(slo, shi, ss, integer)
        clo, chi, clb, cs = evaluate(slo, shi)
        boxes += slo.shape[1]
        lo, hi = torch.cat([lo, clo], 1), torch.cat([hi, chi], 1)
        lb, score = torch.cat([lb, clb]), torch.cat([score, cs], 1)
        if lb.numel() > max_boxes:  # last resort: fold the worst boxes into the bound
            over = lb.numel() - max_boxes
            worst = torch.topk(lb, over).indices
            m = torch.ones(lb.numel(), dtype=torch.bool, device=dev)
            m[worst] = False
            floor = torch.minimum(floor, lb[worst].min())
            lo, hi, lb, score = lo[:, m], hi[:, m], lb[m], score[:, m]
    if _LOG.isEnabledFor(logging.DEBUG) and lb.numel():
        for j in torch.argsort(lb)[:5].tolist():
            _LOG.debug("certify: worst box %r %s %s", float(lb[j]), lo[:, j].tolist(),
                       hi[:, j].tolist())
    seconds = time.perf_counter() - t0
    spent["branch"] = max(0.0, seconds - spent["setup"] - spent["contract"] - spent["bound"])
    if not math.isfinite(U) and lb.numel() == 0 and not math.isfinite(float(floor)):
        return Certificate("infeasible", math.nan, math.inf, gap, True, math.nan, boxes,
                           seconds, mean_value, box,
                           "no point of the search box satisfies the constraints (interval "
                           "branch-and-bound in exact real arithmetic, equalities as "
                           f"|h(x)| <= {problem.eq_tol:g})", timings=spent)
    g = _gap(U, L)
    bound = sign * L
    sense = "smaller" if not problem.maximize else "larger"
    statement = (f"no point of the search box that satisfies the constraints (exact real "
                 f"arithmetic; equalities as |h(x)| <= {problem.eq_tol:g}) has an objective "
                 f"{sense} than {bound!r}")
    return Certificate("bound", bound, g, gap, g <= gap, sign * U if math.isfinite(U)
                       else math.nan, boxes, seconds, mean_value, box, statement,
                       timings=spent)


def multipliers(model, problem, pvec, x) -> np.ndarray:
    """Lagrange multipliers of the model's smooth leaves at ``x`` (minimization sense):
    non-negative least squares of ``grad f + sum_i lam_i grad c_i = 0`` over the active
    inequalities (``lam_i >= 0``), the equalities (either sign) and the active box
    sides (whose multipliers are dropped: the box itself enforces them).  Gradients are
    the model's exact ones, evaluated at the point (midpoints of point enclosures)."""
    import torch
    from scipy.optimize import nnls

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


def _bisect(lo, hi, score, integer):
    """Split every box in two along its largest ``score`` (integers between two
    integers); the children's score on that side is halved."""
    import torch

    k = lo.shape[1]
    dim = torch.argmax(score, 0)
    cols = torch.arange(k, device=lo.device)
    a, b = lo[dim, cols], hi[dim, cols]
    mid = a + 0.5 * (b - a)
    mid = torch.where(torch.isfinite(mid), mid, torch.where(torch.isfinite(a), a + 1.0, b - 1.0))
    is_int = integer[dim]
    left_hi = torch.where(is_int, torch.floor(mid), mid)
    right_lo = torch.where(is_int, torch.floor(mid) + 1, mid)
    lhi, rlo = hi.clone(), lo.clone()
    lhi[dim, cols] = left_hi
    rlo[dim, cols] = right_lo
    s2 = score.clone()
    s2[dim, cols] = score[dim, cols] / 2
    return torch.cat([lo, rlo], 1), torch.cat([lhi, hi], 1), torch.cat([s2, s2], 1)
