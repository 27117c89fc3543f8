"""Results of a certified solve: the proof-of-infeasibility Result and the fields the
branch-and-bound adds (split from :mod:`._certify`)."""

from __future__ import annotations

import math
import sys
import time

import numpy as np

from ..engine._status import Status

__all__ = ["certify_result", "proof_result"]


def proof_result(problem, proof, pvec, seed: int, device: str, t_start: float,
                 t_lower: float):
    """The Result of a solve whose constraints were proven infeasible before any search:
    status INFEASIBLE, the box centre as ``x`` (not feasible), ``certificate=proof``."""
    from ._result import History, Result
    from ._verdict import check_point, point_dict

    x = np.where(np.isfinite(problem.lower + problem.upper),
                 0.5 * (problem.lower + problem.upper), 0.0)
    x = np.where(problem.integer, np.round(x), x)
    t_check = time.perf_counter()
    f, V = check_point(problem, x, pvec)
    total = time.perf_counter() - t_start
    check = time.perf_counter() - t_check
    empty = np.zeros(0)
    return Result(
        x=point_dict(problem, x), x_array=x, variables=problem.variables, fun=f,
        feasible=False, maxcv=float(V.max()) if V.size else 0.0, violations=V,
        success=False, status=Status.INFEASIBLE,
        message=f"{Status.INFEASIBLE.value} (proven: {proof.statement}; no search run)",
        nit=0, nfev=1, seed=seed, device=device,
        # the same parts as every Result (they add up to total); setup holds the proof
        timings={"import": 0.0, "lowering": t_lower,
                 "setup": max(0.0, total - t_lower - check), "compile": 0.0, "search": 0.0,
                 "polish": 0.0, "check": check, "total": total},
        history=History(empty.astype(np.int64), empty, empty), problem=problem,
        certificate=proof)


def certify_result(result, problem, pvec, opts, dev, t_start: float):
    """``result`` with ``lower_bound``, ``gap`` and ``certificate`` from :func:`certify`
    (unchanged when ``certify="auto"`` finds the problem too large).

    Its timings gain ``certify`` (the branch-and-bound, set-up included) and, on a
    process's first use of torch, its import in ``import``; they add up to ``total``.  A
    Ctrl-C during the branch-and-bound gives status ``INTERRUPTED`` with the bound proven
    so far (``certificate.complete`` False).  A certificate that proves no point of the
    search box feasible turns a search cut short by a budget into ``INFEASIBLE``.
    """
    from dataclasses import replace

    from ._certify import AUTO_MAX_VARS, certify, certify_option
    from ._result import add_up

    target, seconds, auto = certify_option(opts.certify)
    if auto and (problem.n > AUTO_MAX_VARS or problem.has_vector_variables):
        return result
    t0 = time.perf_counter()
    timings = dict(result.timings)
    if "torch" not in sys.modules:  # the branch-and-bound runs on torch
        import torch  # noqa: F401  (timed: the first use of torch in a process pays this)

        timings["import"] = timings.get("import", 0.0) + time.perf_counter() - t0
    t1 = time.perf_counter()
    inc = result.fun if result.feasible else math.nan
    cert = certify(problem, pvec, inc, result.x_array, gap=target,
                   time_limit=seconds if seconds is not None else opts.certify_time,
                   device=dev)
    timings["certify"] = time.perf_counter() - t1
    timings = add_up(timings, t_start)
    fields = {"certificate": cert, "timings": timings}
    if cert.kind == "infeasible":
        if not result.feasible and result.status is not Status.INFEASIBLE and \
                result.status is not Status.INTERRUPTED:
            fields.update(status=Status.INFEASIBLE, success=False, message=(
                f"{Status.INFEASIBLE.value} (proven by the branch-and-bound: "
                f"{cert.statement}; search ended: {result.status.value})"))
        return replace(result, **fields)
    fields.update(lower_bound=cert.lower_bound, gap=cert.gap)
    if not cert.complete:
        fields.update(status=Status.INTERRUPTED, success=False, message=(
            f"{Status.INTERRUPTED.value}: Ctrl-C stopped the certificate's branch-and-bound "
            f"after {cert.boxes} boxes; lower_bound is the bound proven so far (the run "
            f"had ended: {result.message})"))
    return replace(result, **fields)
