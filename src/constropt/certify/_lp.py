"""LP bounds of boxes: the relaxations of :mod:`._relax` solved by HiGHS, made safe.

HiGHS (``highspy``, the optional extra ``lp``) solves each box's LP in floating point;
its objective value is never used.  :func:`safe_bound` takes the LP's row duals ``y``
(any ``y`` would do: optimality only makes the bound tight) and returns, in
outward-rounded arithmetic, ``y^T r + min over the column box of (c - A^T y)^T z``
(Neumaier and Shcherbina's safe dual bound), which is at most the LP's minimum in
exact arithmetic: for every LP-feasible ``z``, ``c^T z >= c^T z - y^T (A z - r)``
when each ``y_i`` has the sign of the side ``r_i`` it is paired with (``y_i > 0`` with a
finite lower side, ``y_i < 0`` with a finite upper side; other duals are set to 0).
Every column is bounded (:mod:`._relax` gives columns only to nodes with finite
enclosures), so the minimum over the column box is finite.  A box whose LP HiGHS
reports infeasible is proven empty when a dual ray passes the same test with ``c = 0``
(a bound above 0).
"""

from __future__ import annotations

import math
import os
import sys
import time

import numpy as np

from ..lowering._rt_interval import Iv
from ._nodes import forward_nodes
from ._relax import relax

__all__ = ["available", "safe_bound", "reduced_cost_bounds", "LPBounder"]

_EPS = np.finfo(np.float64).eps
_TINY = np.finfo(np.float64).tiny


def available() -> bool:
    """Whether HiGHS can be imported."""
    try:
        import highspy  # noqa: F401 - lazy: an optional extra
    except ImportError:
        return False
    return True


_QUIET: list = []

#: Whether each box's LP also tightens the variables' bounds by its reduced costs
#: (:func:`reduced_cost_bounds`).
REDUCED_COSTS = True
#: Which functions' alpha-BB cuts (:mod:`._alphabb`; tangent planes of convex ones) the
#: LPs get: ``"partial"``, the objective and constraints with some node that has no rows
#: of its own (``sin``, ...); ``"all"``, every nonlinear one; False, none.
ALPHA_BB: bool | str = False
#: Whether a box's LP starts the simplex from the previous LP's optimal basis (same
#: shape) instead of from scratch.
WARM = True


def _new_highs():
    """A silent HiGHS instance (its first construction in a process prints a banner on
    the C-level standard output, which is sent to /dev/null once)."""
    import highspy  # lazy: an optional extra
    if _QUIET:
        h = highspy.Highs()
    else:
        sys.stdout.flush()
        saved = os.dup(1)
        try:
            with open(os.devnull, "w") as null:
                os.dup2(null.fileno(), 1)
                h = highspy.Highs()
                import ctypes
                ctypes.CDLL(None).fflush(None)
        finally:
            os.dup2(saved, 1)
            os.close(saved)
        _QUIET.append(True)
    h.setOptionValue("output_flag", False)
    h.setOptionValue("presolve", "off")  # small LPs; an infeasible one then has a ray
    return highspy, h


#: Node kinds :mod:`._relax` ties to their operands by rows (``fn``: these functions).
_RULED = {"const", "param", "var", "add", "neg", "mul", "div", "powi", "recip", "powf"}
_RULED_FN = {"exp", "log", "sqrt"}


def _covered(key) -> bool:
    return key[0] in _RULED or (key[0] == "fn" and key[1] in _RULED_FN)


def _down(x):
    return np.nextafter(x, -np.inf)


def _up(x):
    return np.nextafter(x, np.inf)


def _sum_bounds(terms, groups, n):
    """Rigorous ``(lo, hi)`` of the exact sums of ``terms`` by group (``np.bincount``
    order): the float sum widened by ``(k + 2) eps sum |terms|`` (``k`` terms, a bound of
    recursive summation's error with room for the error of the bound) and one ulp."""
    s = np.bincount(groups, weights=terms, minlength=n)
    a = np.bincount(groups, weights=np.abs(terms), minlength=n)
    k = np.bincount(groups, minlength=n)
    err = _up(_up((k + 2) * _EPS) * a) + (k + 1) * _TINY
    return _down(s - err), _up(s + err)


def safe_bound(rows, cols, vals, row_lo, row_hi, col_lo, col_hi, cost, y,
               reduced: bool = False):
    """A rigorous lower bound of ``min cost^T z`` subject to ``row_lo <= A z <= row_hi``,
    ``col_lo <= z <= col_hi`` (exact arithmetic), from any row multipliers ``y``;
    ``-inf`` when rounding or an infinite side leaves nothing.  With ``reduced``:
    ``(bound, dlo, dhi)``, ``[dlo, dhi]`` enclosing the reduced costs ``c - A^T y``
    (shape ``(ncol,)``) of the multipliers actually used."""
    y = np.where((y > 0) & np.isfinite(row_lo), y, np.where((y < 0) & np.isfinite(row_hi),
                                                             y, 0.0))
    r = np.where(y > 0, row_lo, np.where(y < 0, row_hi, 0.0))
    ncol = len(col_lo)
    with np.errstate(all="ignore"):
        p = vals * y[rows]
        plo, phi = _down(p), _up(p)
        # d = cost - A^T y: group the terms -p (and the cost) by column
        g = np.concatenate([cols, np.arange(ncol)])
        dlo, _ = _sum_bounds(np.concatenate([-phi, cost]), g, ncol)
        _, dhi = _sum_bounds(np.concatenate([-plo, cost]), g, ncol)
        corners = np.stack([dlo * col_lo, dlo * col_hi, dhi * col_lo, dhi * col_hi])
        box = _down(np.min(corners, axis=0))
        yr = _down(y * r)
        terms = np.concatenate([box, yr])
        if not np.all(np.isfinite(terms)):
            return (-math.inf, dlo, dhi) if reduced else -math.inf
        lo, _ = _sum_bounds(terms, np.zeros(len(terms), dtype=np.int64), 1)
    v = float(lo[0])
    v = v if math.isfinite(v) else -math.inf
    return (v, dlo, dhi) if reduced else v


def reduced_cost_bounds(L: float, U: float, col_lo, col_hi, dlo, dhi):
    """Column bounds implied by a safe LP bound ``L`` (of ``min cost^T z``) and a cutoff
    ``cost^T z <= U``: ``(lo, hi)``, shape ``(ncol,)``, ``nan`` where not tightened.

    For every LP-feasible ``z`` with ``cost^T z <= U`` and the exact reduced costs
    ``d`` (in ``[dlo, dhi]``) of the multipliers behind ``L``: ``U >= y^T r + d^T z``
    and ``d_k z_k >= min(d_k lo_k, d_k hi_k)`` for every ``k``, so
    ``d_j (z_j - lo_j) <= U - L`` for each ``j``; with ``dlo_j > 0`` that is
    ``z_j <= lo_j + (U - L) / dlo_j``, with ``dhi_j < 0``
    ``z_j >= hi_j - (U - L) / |dhi_j|``, each computed rounding outward (an operation
    rounded to nearest, then one ulp outward)."""
    n = len(col_lo)
    lo, hi = np.full(n, np.nan), np.full(n, np.nan)
    if not (math.isfinite(L) and math.isfinite(U)):
        return lo, hi
    slack = float(_up(np.float64(U) - np.float64(L)))
    if slack < 0:  # the bound is above the cutoff: the caller drops the box
        return lo, hi
    with np.errstate(all="ignore"):
        pos = np.isfinite(dlo) & (dlo > 0)
        neg = np.isfinite(dhi) & (dhi < 0)
        up_ = _up(col_lo + _up(slack / np.where(pos, dlo, 1.0)))
        dn_ = _down(col_hi - _up(slack / np.where(neg, -dhi, 1.0)))
    hi = np.where(pos & np.isfinite(up_), up_, np.nan)
    lo = np.where(neg & np.isfinite(dn_), dn_, np.nan)
    return lo, hi


class LPBounder:
    """Builds and solves the LPs of boxes for one branch-and-bound (one HiGHS instance,
    reused); counts the LPs in ``lps``."""

    def __init__(self, model, targets, n_params: int):
        self.hs, self.h = _new_highs()
        self.model = model
        self.graph = model.program.graph
        roots = [model.f, *model.leaf_nodes]
        self.order = model.program.order_for(roots)
        self.n_params = n_params
        self.n_vars = sum(b.size for b in model.program.graph.layout.blocks)
        # whether every node has rules (no interval fallback): the LP then sees the
        # whole problem, and its bounds and gaps are worth more of the time
        self.covered = all(_covered(self.graph.nodes[n]) for n in self.order)
        self.alpha = None
        if ALPHA_BB:
            from ._alphabb import AlphaCuts
            from ._exclusion import heavy
            prog = model.program

            def partial(node):  # some node of the function has no rows of its own
                return ALPHA_BB == "all" or not all(
                    _covered(self.graph.nodes[k]) for k in prog.order_for([node]))
            self.alpha = AlphaCuts(model, self.n_vars, heavy(model), only=partial)
            if not self.alpha.funcs:
                self.alpha = None
        self.set_targets(targets)
        self.lps = 0
        self.iterations = 0  # simplex iterations, all LPs together
        self.run_s = 0.0  # seconds inside HiGHS's solves
        self.z = None  # the last LP's primal solution
        self.gaps = None
        self.tight = None  # reduced-cost bounds of the variables, see bounds()
        self.basis = None  # the last optimal basis, and its LP's shape (warm starts)
        self.warm = WARM
        self.d = None  # (dlo, dhi): the last safe bound's reduced costs
        self.first = {}  # {variable: value} of the first box's LP solution, see bounds()
        self._shape = None

    def set_targets(self, targets) -> None:
        """The constraint targets and the cut ``f <= U`` (a better incumbent lowers it)."""
        self.targets = [(n, float(a), float(b)) for n, a, b in targets]
        # the cutoff f <= U (the objective's target): reduced-cost tightening uses it
        self.cutoff = min((b for n, _, b in self.targets if n == self.model.f),
                          default=math.inf)

    def box_bounds(self, lo, hi, P, domains: dict) -> np.ndarray:
        """Safe LP bounds of the boxes ``[lo, hi]`` (tensors of shape ``(N, m)``) with
        their node domains (shape ``(m,)`` each)."""
        return self.bounds(*self.ranges(lo, hi, P, domains), lo.shape[1],
                           cuts=self.cuts(lo, hi, P))

    def cuts(self, lo, hi, P) -> list:
        """The alpha-BB cuts of the boxes ``[lo, hi]`` (tensors of shape ``(n, m)``;
        :class:`~._alphabb.AlphaCuts`), empty without ``ALPHA_BB``."""
        return self.alpha(lo, hi, P) if self.alpha is not None else []

    def ranges(self, lo, hi, P, domains: dict):
        """``(ranges, consts)`` of :func:`~._relax.relax` for the boxes ``[lo, hi]``."""
        m = lo.shape[1]
        roots = [self.model.f, *self.model.leaf_nodes]
        vals = forward_nodes(self.model.program, lo, hi, P, roots, domains)
        Pn = P.detach().cpu().double().numpy()
        ranges, consts = {}, {}
        for n in self.order:
            key = self.graph.nodes[n]
            if key[0] == "const":
                consts[n] = float(key[1])
                continue
            if key[0] == "param":
                consts[n] = float(Pn[key[1]])
                continue
            v = vals.get(n)
            if not isinstance(v, Iv):
                continue
            a = np.broadcast_to(v.lo.detach().cpu().double().numpy(), (m,))
            b = np.broadcast_to(v.hi.detach().cpu().double().numpy(), (m,))
            nan = np.broadcast_to(np.asarray(v.nan.detach().cpu().numpy()
                                             if hasattr(v.nan, "detach") else v.nan), (m,))
            use = np.isfinite(a) & np.isfinite(b) & (a <= b) & ~nan
            ranges[n] = (np.where(use, a, 0.0), np.where(use, b, 0.0), use)
        return ranges, consts

    def bounds(self, ranges: dict, consts: dict, m: int, cuts=()) -> np.ndarray:
        """Safe LP bounds of ``m`` boxes (``-inf`` where none, ``+inf`` where the LP
        proves a box empty) from node ranges ``{node: (lo, hi, usable)}``; ``gaps``
        (shape ``(n_vars, m)``) is left with each variable's share of the McCormick gaps
        ``|w - u v|`` at the LP's solution (the products with that variable as a factor),
        and ``tight`` (a pair of arrays of that shape, ``nan`` where none) with the
        variables' bounds that reduced costs prove for the points with ``f <= cutoff``
        (:func:`reduced_cost_bounds`; where ``REDUCED_COSTS``), and ``first`` with the
        variables' values at the first box's LP solution (a start for local solves)."""
        out = np.full(m, -math.inf)
        self.first = {}
        self.gaps = np.zeros((self.n_vars, m))
        self.tight = (np.full((self.n_vars, m), np.nan), np.full((self.n_vars, m), np.nan))
        R = relax(self.graph, self.order, ranges, consts, self.model.f, self.targets, m,
                  cuts)
        if R is None:
            return out
        cost = np.zeros(R.ncol)
        cost[R.obj] = 1.0
        var_of = {j: k for k, j in R.var_cols.items()}
        vk = np.array(sorted(R.var_cols), dtype=np.int64)
        vj = np.array([R.var_cols[k] for k in vk], dtype=np.int64)
        for k in np.flatnonzero(R.ok):
            args = self._pass(R, k)
            out[k] = self._solve(args, cost)
            if REDUCED_COSTS and self.d is not None and math.isfinite(out[k]) and len(vk):
                tl, th = reduced_cost_bounds(out[k], self.cutoff, args[5], args[6], *self.d)
                self.tight[0][vk, k], self.tight[1][vk, k] = tl[vj], th[vj]
            if self.z is not None and math.isfinite(out[k]) and k == 0:
                self.first = {int(v): float(self.z[j]) for v, j in R.var_cols.items()}
            if self.z is not None and math.isfinite(out[k]):
                for w, u, v in R.products:
                    g = abs(self.z[w] - self.z[u] * self.z[v])
                    for c in (u, v):
                        if c in var_of:
                            self.gaps[var_of[c], k] += g
        return out

    def tighten(self, ranges: dict, consts: dict, n: int, cuts=()):
        """Optimization-based bound tightening of one box: ``(lo, hi)`` of each variable
        (shape ``(n,)``, ``nan`` where not tightened) from the safe bounds of ``min x_k``
        and ``min -x_k`` over its LP relaxation; None when the LP proves the box holds no
        feasible point."""
        lo, hi = np.full(n, np.nan), np.full(n, np.nan)
        R = relax(self.graph, self.order, ranges, consts, self.model.f, self.targets, 1,
                  cuts)
        if R is None:
            return lo, hi
        args = self._pass(R, 0)
        if args is None:
            return None
        for k, j in sorted(R.var_cols.items()):
            for sgn in (1.0, -1.0):
                cost = np.zeros(R.ncol)
                cost[j] = sgn
                b = self._solve(args, cost)
                if b == math.inf:
                    return None
                if sgn > 0:
                    lo[k] = b
                else:
                    hi[k] = -b
        return lo, hi

    def _pass(self, R, k):
        """Pass box ``k``'s LP to HiGHS; the safe bound's arguments (None when a column's
        bounds are empty: a leaf's range misses its target, no feasible point)."""
        hs, h = self.hs, self.h
        order = np.lexsort((R.rows, R.cols))
        rows, cols = R.rows[order], R.cols[order]
        start = np.searchsorted(cols, np.arange(R.ncol + 1)).astype(np.int32)
        args = (R.rows, R.cols, R.vals[:, k], R.row_lo[:, k], R.row_hi[:, k],
                R.col_lo[:, k], R.col_hi[:, k])
        row_lo, row_hi, col_lo, col_hi = args[3:]
        if np.any(col_lo > col_hi):
            return None
        lp = hs.HighsLp()
        lp.num_col_, lp.num_row_ = len(col_lo), len(row_lo)
        lp.col_lower_, lp.col_upper_ = col_lo, col_hi
        lp.row_lower_, lp.row_upper_ = row_lo, row_hi
        lp.a_matrix_.format_ = hs.MatrixFormat.kColwise
        lp.a_matrix_.start_ = start
        lp.a_matrix_.index_ = rows.astype(np.int32)
        lp.a_matrix_.value_ = R.vals[order, k]
        lp.col_cost_ = np.zeros(R.ncol)
        h.clearModel()
        h.passModel(lp)
        shape = (len(col_lo), len(row_lo))
        if self.warm and self.basis is not None and self.basis[1] == shape:
            # the previous LP's optimal basis (the same sparsity pattern, another box):
            # a start for the simplex only, the bound never depends on it
            h.setBasis(self.basis[0])
        self._shape = shape
        return args

    def _solve(self, args, cost) -> float:
        """The safe bound of ``min cost^T z`` over the passed LP (``args`` None: an
        empty box, ``+inf``)."""
        hs, h = self.hs, self.h
        self.z = self.d = None
        if args is None:
            return math.inf
        h.changeColsCost(len(cost), np.arange(len(cost), dtype=np.int32), cost)
        t0 = time.perf_counter()
        h.run()
        self.run_s += time.perf_counter() - t0
        self.lps += 1
        self.iterations += int(h.getInfo().simplex_iteration_count)
        status = h.getModelStatus()
        if status == hs.HighsModelStatus.kOptimal:
            sol = h.getSolution()
            y = np.asarray(sol.row_dual, dtype=np.float64)
            self.z = np.asarray(sol.col_value, dtype=np.float64)
            if y.shape != args[3].shape:
                return -math.inf
            if self.warm:
                self.basis = (h.getBasis(), self._shape)
            v, dlo, dhi = safe_bound(*args, cost, y, reduced=True)
            self.d = (dlo, dhi)
            return v
        if status == hs.HighsModelStatus.kInfeasible:
            return self._ray(args)
        return -math.inf

    def _ray(self, args) -> float:
        """``+inf`` when a dual ray proves the LP infeasible (else ``-inf``)."""
        got = self.h.getDualRay()  # (status, has a ray, ray)
        has, ray = got[-2], got[-1]
        if not has:
            return -math.inf
        ray = np.asarray(ray, dtype=np.float64)
        zero = np.zeros(len(args[5]))
        for sgn in (1.0, -1.0):
            if ray.shape == args[3].shape and safe_bound(*args, zero, sgn * ray) > 0:
                return math.inf
        return -math.inf
