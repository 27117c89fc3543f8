"""Bounds from the constraints: forward-backward bound tightening (FBBT) before the search.

The constraints that must all hold (top-level leaves and the leaves of ``And``; an
``Or`` is skipped) are propagated through the interval backend of the lowering
(:meth:`constropt.lowering._interval.IntervalProgram.contract`): ``x**2 + z**2 <= 10``
bounds ``x`` and ``z`` by ``sqrt(10)`` (rounded outward), ``x >= 1`` with
``x + y + z >= 3`` and ``y <= 7`` bounds ``z`` from below, and so on, until the box stops
shrinking.  Integer variables are rounded inward.  Parameters are taken as unknown
reals when the box of a :class:`~constropt.Problem` is inferred (the box is reused for
any parameter values) and as their values when a solve asks for a proof.

A box that empties is a proof that no point satisfies the constraints (in exact real
arithmetic; equalities as ``|h(x)| <= eq_tol``): :class:`InfeasibilityProof`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._errors import OptionError
from ..lowering._interval_model import IntervalModel
from ..lowering._interval_ops import ops
from ._constraints import AllOf, Leaf

__all__ = ["InfeasibilityProof", "FbbtResult", "propagate", "required_leaves",
           "prove_infeasible", "problem_model"]

#: Sweeps of forward-backward propagation at most (it stops earlier once the box is
#: stable to a relative 1e-9 of its width).
MAX_ROUNDS = 40


@dataclass(frozen=True)
class InfeasibilityProof:
    """No point of the box satisfies the constraints: interval propagation emptied it.

    Attributes
    ----------
    kind : str
        ``"infeasible"``.
    box : dict
        ``{symbol: (lo, hi)}``: the box in which propagation started (given bounds and
        bounds from linear constraints; infinite sides allowed).
    constraints : tuple of sympy Boolean
        The constraints whose leaves were propagated (those that must all hold).
    statement : str
        What is proven, in words.
    """

    kind: str
    box: dict
    constraints: tuple
    statement: str


@dataclass(frozen=True)
class FbbtResult:
    """Tightened bounds ``lo``, ``hi`` (shape ``(n,)``, may be infinite) and the proof of
    infeasibility when the box emptied (else None); ``rounds`` sweeps were run."""

    lo: np.ndarray
    hi: np.ndarray
    proof: InfeasibilityProof | None
    rounds: int


def required_leaves(constraints) -> tuple[list, list]:
    """Leaves that every feasible point satisfies (``Or`` branches excluded), and the
    constraints they come from."""
    out, used = [], []
    for c in constraints:
        stack, mine = [c.tree], []
        while stack:
            node = stack.pop()
            if isinstance(node, Leaf):
                mine.append(node)
            elif isinstance(node, AllOf):
                stack.extend(reversed(node.children))
        if mine:
            out.extend(mine)
            used.append(c.relation)
    return out, used


def problem_model(problem, *, gradient: bool = False):
    """The interval model of ``problem``'s objective (minimized sense) and its required
    constraint leaves (:func:`required_leaves`), with the Lagrangian's gradient when
    ``gradient``; built once per problem and kind and kept on the problem (the integer
    search's screen and the certificate share it)."""
    cache = problem.__dict__.setdefault("_interval_models", {})
    key = "gradient" if gradient else "plain"
    if key not in cache:
        leaves, _ = required_leaves(problem._constraints)
        objective = -problem.objective if problem.maximize else problem.objective
        cache[key] = IntervalModel(objective, leaves, problem.layout, gradient=gradient)
    return cache[key]


def _model(objective_free_leaves, layout):
    return IntervalModel(None, objective_free_leaves, layout)


def propagate(layout, constraints, lo, hi, integer, eq_tol: float, pvec=None,
              symbols=None, rounds: int = MAX_ROUNDS, backend: str = "numpy") -> FbbtResult:
    """Tighten the box ``[lo, hi]`` (arrays of shape ``(n,)``, sides may be infinite).

    Parameters
    ----------
    layout : Layout
    constraints : sequence of Constraint
    lo, hi : array, shape (n,)
    integer : array of bool, shape (n,)
    eq_tol : float
    pvec : array, shape (n_params,), optional
        Parameter values; None: parameters are unknown reals.
    symbols : sequence, optional
        Variables for the proof's box (default: the layout's blocks).
    rounds : int
        Sweeps at most.
    backend : {"numpy", "torch"}
        Array library the interval runtime runs on (float64 either way).  NumPy, the
        default, keeps ``Problem`` construction free of torch; both give the same boxes
        up to the last bits of transcendental results (each encloses the exact one).

    Returns
    -------
    FbbtResult
    """
    lo = np.asarray(lo, dtype=np.float64)
    hi = np.asarray(hi, dtype=np.float64)
    leaves, used = required_leaves(constraints)
    if not leaves:
        return FbbtResult(lo.copy(), hi.copy(), None, 0)
    model = _model(leaves, layout)
    n_par = len(layout.parameters)
    if pvec is None:
        P = (np.full((n_par,), -math.inf), np.full((n_par,), math.inf))
    else:
        P = np.asarray(pvec, dtype=np.float64).reshape(-1)
    L = lo.copy().reshape(-1, 1)
    H = hi.copy().reshape(-1, 1)
    integ = np.asarray(integer, dtype=bool).reshape(-1)
    if backend == "torch":
        import torch  # lazy: Problem construction (the NumPy backend) never loads it

        P = tuple(map(torch.as_tensor, P)) if isinstance(P, tuple) else torch.as_tensor(P)
        L, H, integ = torch.as_tensor(L), torch.as_tensor(H), torch.as_tensor(integ)
    elif backend != "numpy":
        raise OptionError(f"propagate: backend must be 'numpy' or 'torch', not {backend!r}")
    xp = ops(L)
    targets = model.leaf_targets(eq_tol)
    done = 0
    empty = False
    with np.errstate(all="ignore"):  # overflow to inf and 0 * inf are enclosed by design
        for done in range(1, rounds + 1):  # noqa: B007 - reported in the result
            L2, H2, emp = model.program.contract(L, H, P, targets, integ, rounds=1)
            if bool(emp.any()):
                empty = True
                break
            width = xp.where(xp.isfinite(H - L), H - L, 1.0)
            moved = ((L2 - L) > 1e-9 * width) | ((H - H2) > 1e-9 * width) | \
                (~xp.isfinite(L) & xp.isfinite(L2)) | (~xp.isfinite(H) & xp.isfinite(H2))
            L, H = L2, H2
            if not bool(moved.any()):
                break
    if empty:
        syms = symbols if symbols is not None else [b.symbol for b in layout.blocks]
        box = {s: (float(lo[b.offset]), float(hi[b.offset]))
               for s, b in zip(syms, layout.blocks)}
        where = "for the given parameter values" if pvec is not None and n_par else \
            "for every parameter value" if n_par else ""
        how = ["interval propagation in exact real arithmetic"]
        if any(lf.kind == "eq" for lf in leaves):  # the band only where equalities are
            how.append(f"equalities as |h(x)| <= {eq_tol:g}")
        if where:
            how.append(where)
        statement = ("no point of the box satisfies all of these constraints ("
                     f"{', '.join(how)})")
        proof = InfeasibilityProof("infeasible", box, tuple(used), statement)
        return FbbtResult(lo.copy(), hi.copy(), proof, done)
    if backend == "torch":
        L, H = L.numpy(), H.numpy()
    return FbbtResult(np.array(L[:, 0], dtype=np.float64), np.array(H[:, 0], dtype=np.float64),
                      None, done)


def prove_infeasible(problem, pvec) -> InfeasibilityProof | None:
    """A proof that ``problem`` has no feasible point (for the parameter values ``pvec``),
    from propagation over its box; None when propagation cannot show it."""
    if problem.infeasibility_proof is not None:
        return problem.infeasibility_proof
    if not problem.layout.parameters:
        return None
    res = propagate(problem.layout, problem._constraints, problem.lower, problem.upper,
                    problem.integer, problem.eq_tol, pvec, problem.variables)
    return res.proof
