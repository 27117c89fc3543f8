"""Proven bounds: interval branch-and-bound after the search (``solve(..., certify=...)``).

Boxes of the search box are processed thousands at a time (torch, CPU or CUDA):

1. take the ``batch`` boxes with the smallest lower bound (best first) or, when the
   buffer is nearly full, the smallest boxes (depth first, which drains it);
2. bisect each along the variable with the largest score (:mod:`._bounds`:
   the objective's smear ``|df/dx_k| * width_k``, and with equalities the relative
   smears of the objective and the constraints summed; integers split between two
   integers);
3. contract the children with the constraints and the objective cut ``f <= U`` (``U``
   the search's best feasible value) by forward-backward propagation, keeping the
   ranges of intermediate nodes (:mod:`._nodes`); a child that empties holds
   no feasible point better than ``U``;
4. bound the objective below on each child (:mod:`._bounds`: natural interval
   extension through the node ranges, mean-value forms of ``f`` and of the
   Lagrangian; :mod:`._exclusion`: the second-order Taylor form of the
   Lagrangian around the incumbent, and an exclusion box around it) and drop the
   children whose bound is within the target gap of ``U``, keeping the smallest such
   bound.

The proven lower bound is the minimum of ``U``, the bounds of the boxes still in the
buffer and of every box dropped without a proof of infeasibility.  One host
synchronisation per step (the gap test), none per box.  A Ctrl-C stops the
branch-and-bound with the bound of the last completed step (``complete=False``).
The loop is :mod:`._branch` (torch); this module is its entry point, which imports torch
only when a branch-and-bound runs.  :mod:`._result` turns the certificate into
``Result`` fields.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from types import MappingProxyType

from .._errors import OptionError

__all__ = ["Certificate", "certify", "certify_option"]

#: Whether the second-order Taylor form of the Lagrangian bounds the boxes too.
SECOND_ORDER = True
#: Whether the boxes with the smallest bounds also get the safe bound of their LP
#: relaxation (:mod:`._lp`, when HiGHS is installed: the optional extra ``lp``).
LP = True
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
        ``gap <= target_gap``, or ``U - L <= target_gap`` (an absolute gap, for optima
        near 0), or infeasibility proven.
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
    convex : bool
        Whether the Lagrangian was proven convex on the whole search box, so that one
        tangent-plane bound covers the box (a convex QP: certified by one bound, no
        branching; see :mod:`._convex`).
    lps : int
        Linear programs solved (LP relaxations of boxes, :mod:`._lp`); 0 when the bounds
        came from interval forms alone (HiGHS not installed, or ``LP`` off).
    timings : mapping
        Where the time went, in seconds: ``setup`` (the interval model, multipliers,
        exclusion box), ``contract`` (propagation of the constraints), ``bound`` (the
        interval lower bounds of the boxes), ``lp`` (building and solving the LP
        relaxations and their safe bounds), ``incumbent`` (local solves for a better
        incumbent and their checks), ``branch`` (choosing and splitting boxes, the gap
        test); they add up to ``seconds``.
    found : object
        What the ``improve`` of :func:`certify` returned for the incumbent the
        branch-and-bound found itself (better than the one it was given), else None.
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
    convex: bool = False
    lps: int = 0
    timings: dict = field(default_factory=dict)
    found: object = field(default=None, repr=False, compare=False)

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


def certify(problem, pvec, incumbent: float, x=None, *, gap: float = DEFAULT_GAP,
            time_limit: float = 60.0, device="cpu", dtype=None, batch: int | None = None,
            max_boxes: int = 1 << 19, target_time: dict | None = None,
            improve=None) -> Certificate:
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
    improve : callable, optional
        A local solver for incumbents, ``improve(x0, U) -> (f, x, payload) or None``
        (minimization sense; ``x`` a feasible point checked as reported points are,
        ``f < U``), run from LP points of boxes with small bounds (see
        :func:`._branch.branch_and_bound`); the incumbent and ``found`` of the
        certificate are then its best.

    Returns
    -------
    Certificate
        ``complete=False`` when a Ctrl-C stopped it: the bound of the last completed
        step (a KeyboardInterrupt is not raised).
    """
    t0 = time.perf_counter()
    from ._branch import branch_and_bound, closed, relative_gap  # lazy: imports torch

    sign = -1.0 if problem.maximize else 1.0
    U = sign * incumbent if incumbent is not None and math.isfinite(incumbent) else math.inf
    spent = {"setup": 0.0, "contract": 0.0, "bound": 0.0, "lp": 0.0, "incumbent": 0.0,
             "branch": 0.0}
    box = {s: (float(a), float(z)) for s, a, z in zip(problem.variables, problem.lower,
                                                       problem.upper)} \
        if not problem.has_vector_variables else {}
    progress = {"L": -math.inf, "boxes": 0, "mean_value": False, "convex": False}
    try:
        infeasible = branch_and_bound(problem, pvec, U, x, gap, time_limit, device, dtype,
                                      batch, max_boxes, target_time, t0, spent, progress,
                                      second_order=SECOND_ORDER, lp=LP, improve=improve)
    except KeyboardInterrupt:
        infeasible = None  # the bound of the last completed step stands
    U = progress.get("U", U)  # the local solves' incumbent, where they found one
    found = progress.get("found")
    seconds = time.perf_counter() - t0
    spent["branch"] = max(0.0, seconds - sum(v for k, v in spent.items() if k != "branch"))
    boxes, mean_value = progress["boxes"], progress["mean_value"]
    lps = progress["lp"].lps if progress.get("lp") is not None else 0
    how = (f"interval forms and {lps} LP relaxations (HiGHS, safe dual bounds)" if lps
           else "interval forms")
    if infeasible:
        return Certificate("infeasible", math.nan, math.inf, gap, True, math.nan, boxes,
                           seconds, mean_value, box,
                           "no point of the search box satisfies the constraints (interval "
                           "branch-and-bound in exact real arithmetic, equalities as "
                           f"|h(x)| <= {problem.eq_tol:g}; bounds from {how})", lps=lps,
                           timings=spent, found=found)
    L = progress["L"]
    g = relative_gap(U, L)
    sense = "smaller" if not problem.maximize else "larger"
    statement = (f"no point of the search box that satisfies the constraints (exact real "
                 f"arithmetic; equalities as |h(x)| <= {problem.eq_tol:g}) has an objective "
                 f"{sense} than {sign * L!r} (bounds from {how})")
    if progress["convex"]:
        statement += ("; the Lagrangian is proven convex on the search box, so its tangent "
                      "plane at the incumbent bounds the whole box")
    if infeasible is None:
        statement = f"interrupted (Ctrl-C) after {boxes} boxes: {statement}"
    return Certificate("bound", sign * L, g, gap, closed(U, L, gap),
                       sign * U if math.isfinite(U) else math.nan, boxes, seconds, mean_value,
                       box, statement, complete=infeasible is not None,
                       convex=progress["convex"], lps=lps, timings=spent, found=found)
