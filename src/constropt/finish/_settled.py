"""The exact checks and status rules of many settled points at once (``solve_batch``'s
local answers).

:func:`judge_settled` gives, column by column, the :class:`._finish.Finished` that
:func:`._finish.finish` gives one instance whose point the batched local solves settled
(``polish=False``, its ``refined`` entry and its unboundedness verdict given, no
evaluation cap): the same point, objective, violations, evaluations, status and message.
What every instance shares is looked up once (the exact program, the leaf kinds, the soft
sides the ray probe looks beyond, whether the objective is a polynomial on a bounded
box).  The exact check stays one exact (Arb ball) evaluation per point
(:func:`certify_many`, :func:`._repair.certify_point`'s first precision), and an
instance that needs more than the common case (a repair, an undecided constraint, a ray
beyond a soft side, a pole probe, an objective past the unboundedness level) takes the
per-instance step for that part.  Problems with equality constraints (whose finishing
views and tolerances depend on the point) take :func:`._finish.finish` per instance.
"""

from __future__ import annotations

import time

import numpy as np

from ..engine._driver import Instance
from ..problem._rigorous import SATISFIED, UNDECIDED, program_for, verdict_of, working_precision
from ._budget import MAX_FINISH_GENES, Budget, Incumbent
from ._finish import Finished, finish
from ._poles import pole_status
from ._repair import Certified, certify_point
from ._result import Status
from ._status import _unbounded, bounded_in, constant_note
from ._verdict import UNBOUNDED_LEVEL, infeasible_status, objective_verdict
from ._verify import PRECISIONS, Verification, _combine, _fmpz, exact_genes, fun_error, overall

__all__ = ["certify_many", "judge_settled"]


def _plain(problem) -> bool:
    """Whether the batched steps apply: no equality leaves (so no finishing view, no
    projection onto them, no point-dependent tolerance)."""
    return not any(lf.kind == "eq" for lf in problem.leaves)


def certify_many(problem, X: np.ndarray, M: np.ndarray, F: np.ndarray, V: np.ndarray
                 ) -> list:
    """:func:`._repair.certify_point` (no evaluation cap) of every point ``X[:, b]``
    (objectives ``F``, violations ``V`` (m, B), parameters ``M``), see
    :class:`_Certifier`."""
    check = _Certifier(problem)
    return [check(X[:, b], M[:, b], F[b], V[:, b]) for b in range(X.shape[1])]


class _Certifier:
    """:func:`._repair.certify_point` (no evaluation cap) of one point after another of
    one problem, the exact program and the leaf kinds looked up once: a point whose first
    exact evaluation leaves a constraint undecided, or that float64 finds feasible and
    exact arithmetic does not certify (then a repair is tried), takes
    :func:`certify_point` itself; so does every point of a problem with equality
    constraints."""

    def __init__(self, problem):
        self.problem = problem
        self.plain = _plain(problem)
        self.prog = program_for(problem)
        self.kinds = [lf.kind for lf in problem.leaves]
        self.trees = [c.tree for c in problem.lowering.constraints]
        self.integer = bool(problem.integer.any())

    def __call__(self, x, pvec, f, V) -> Certified:
        from flint import arb

        t0 = time.perf_counter()
        problem, bits = self.problem, PRECISIONS[0]
        x = np.array(x, dtype=np.float64)  # its own copy, as the per-instance path's
        pvec = np.asarray(pvec, dtype=np.float64).reshape(-1)
        fun = float(f)
        if not self.plain:
            return certify_point(problem, x, pvec, fun, V)
        f64 = bool(np.all(V == 0))
        genes = exact_genes(problem, x) if self.integer else x.tolist()
        with working_precision(bits):
            xs = [arb(g) if isinstance(g, float) else arb(_fmpz(g)) for g in genes]
            ps = [arb(float(p)) for p in pvec]
            vals = self.prog.run(xs, ps)
            leaf = [verdict_of(k, v, None) for k, v in zip(self.kinds, vals[1:],
                                                           strict=True)]
        it = iter(leaf)
        cons = [_combine(t, it) for t in self.trees]
        if UNDECIDED in cons or (f64 and overall(cons) != SATISFIED):
            return certify_point(problem, x, pvec, fun, V)
        ver = Verification(feasible=overall(cons) == SATISFIED, verdicts=tuple(cons),
                           float64_feasible=f64, fun_error=fun_error(fun, vals[0]),
                           repaired=False, precision=bits,
                           seconds=time.perf_counter() - t0,
                           residuals={})  # no equality leaves (plain)
        return Certified(x, fun, np.array(V, dtype=np.float64), ver, genes, "", 0)


def _no_rays(problem, X: np.ndarray) -> np.ndarray:
    """(B,) bool: no ray beyond a soft side starts at ``X[:, b]`` (what
    :func:`._rays._rays` finds empty, so :func:`._rays.ray_probe` evaluates nothing)."""
    soft = problem._soft
    lo_ok = soft.lower[:, None] & (X > soft.hard_lower[:, None])
    hi_ok = soft.upper[:, None] & (X < soft.hard_upper[:, None])
    return ~(lo_ok | hi_ok).any(axis=0)


def judge_settled(problem, X: np.ndarray, F: np.ndarray, V: np.ndarray, M: np.ndarray,
                  used: np.ndarray, *, reason: Status = Status.CONVERGED,
                  unbounded=None) -> list:
    """Per column ``b``, what :func:`._finish.finish` returns for the settled point
    ``X[:, b]`` (float64 check ``F[b]``, ``V[:, b]``, ``used[b]`` evaluations, parameters
    ``M[:, b]``) of an instance whose search ended for ``reason`` (``CONVERGED``, or
    ``INTERRUPTED``): ``polish=False``, no evaluation cap, ``unbounded`` the probe's
    ``(verdict (B,), evaluations (B,))`` or None.  A Ctrl-C during instance ``b``: it and
    the instances after it are finished one by one as ``INTERRUPTED`` (as the loop of
    :func:`finish` does)."""
    B = X.shape[1]
    out: list = []
    try:
        if not _plain(problem):
            raise _PerInstance
        no_rays = _no_rays(problem, X)
        bounded = bounded_in(problem, problem)
        sign = -1.0 if problem.maximize else 1.0
        check = _Certifier(problem)
        for b in range(B):
            c = check(X[:, b], M[:, b], F[b], V[:, b])
            budget = Budget(None, used=int(used[b]) + 1 + c.evaluations)
            inc = Incumbent(c.x, c.fun, c.violations, M[:, b])
            unb = None if unbounded is None else (bool(unbounded[0][b]), int(unbounded[1][b]))
            if reason is Status.INTERRUPTED:
                status, message = reason, reason.value + c.note
            elif not c.feasible:
                status, message = infeasible_status(reason, c.note)
            elif objective_verdict(problem, c.fun) is not None:
                status, message = objective_verdict(problem, c.fun)
            elif (not c.verification.repaired and no_rays[b] and
                  sign * c.fun > -UNBOUNDED_LEVEL and reason is not Status.TARGET and
                  problem.n <= MAX_FINISH_GENES and
                  (bounded if unb is None else not unb[0])):
                # the common case: nothing diverges, nothing to probe beyond the box
                budget.spend(0 if unb is None else unb[1])
                status, message = reason, reason.value
                if not bounded:
                    status, message = pole_status(problem, problem, inc, reason, budget,
                                                  status, message)
            else:
                status, message = _unbounded(problem, inc, reason, budget, unb, problem)
            out.append(Finished(c.x, c.fun, c.violations, budget.used, status,
                                message + constant_note(problem, c), c))
    except (KeyboardInterrupt, _PerInstance) as stop:
        late = isinstance(stop, KeyboardInterrupt)
        out += _one_by_one(problem, X, F, V, M, used, range(len(out), B),
                           Status.INTERRUPTED if late else reason,
                           None if late else unbounded)
    return out


class _PerInstance(Exception):
    """The batched steps do not apply: :func:`finish` per instance."""


def _one_by_one(problem, X, F, V, M, used, cols, reason, unbounded) -> list:
    """:func:`finish` of the settled points ``cols``, in turn; after a Ctrl-C the rest
    end ``INTERRUPTED``."""
    sgn = -1.0 if problem.maximize else 1.0
    out = []
    for b in cols:
        xb, fb = X[:, b].copy(), float(F[b])
        inst = Instance(xb, sgn * fb, 0.0, 0, 0, reason, 0, np.array([int(used[b])]),
                        np.array([sgn * fb]), np.array([0.0]), xb[:, None])
        fin = finish(problem, inst, M[:, b], Budget(None), polish=False,
                     unbounded=None if unbounded is None or reason is Status.INTERRUPTED
                     else (bool(unbounded[0][b]), int(unbounded[1][b])),
                     refined=(xb, int(used[b]), True, fb, V[:, b].copy()))
        if fin.status is Status.INTERRUPTED:
            reason = Status.INTERRUPTED
        out.append(fin)
    return out
