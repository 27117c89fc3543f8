"""Bounds of a Problem: box bounds extracted from single-variable linear constraints,
merged with the user's ``bounds=``, defaults for open sides, integer rounding.

Sides that stay open (no bound given, extracted or inferred) and given sides beyond
:data:`HUGE_BOUND` are *soft*: the search starts in a box of the problem's own scale
(:func:`default_box`) and ``solve`` expands a soft side while the best point presses on
it (``constropt.solver._expand``), up to the side's hard limit (``inf`` for an open side,
the given value for a huge one).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import sympy as sp

from .._errors import ProblemError
from ..backend._bulk import bulk
from ._constraints import Leaf
from ._domain import domain_constraints
from ._fbbt import InfeasibilityProof, propagate

__all__ = ["BoundsWarning", "make_bounds", "is_integer", "default_box", "problem_scale",
           "with_box", "SoftSides", "HUGE_BOUND", "IMPLIED_LIMIT", "DEFAULT_BOUND",
           "parameter_box", "parameter_bound_constraints", "domain_constraints"]


#: The largest half-width of the automatic default box (``default_bound=None``).
DEFAULT_BOUND = 1000.0

#: A given bound beyond this magnitude (a lower bound below ``-HUGE_BOUND``, an upper one
#: above ``+HUGE_BOUND``) is searched like an open side: from a box of the problem's
#: scale, expanding toward it.  A population spread uniformly over +-1e300 overflows
#: ``x**2`` everywhere and cannot rank anything.
HUGE_BOUND = 1e6

#: A huge side that bound propagation moved inward is implied by the constraints (G22's
#: ``x7 = 5e7 - 1e5 x9`` gives ``x7 <= 3.3e7``): it is where the feasible set ends, the
#: problem's own scale, and stays hard up to this magnitude.  Searched as soft, such a
#: side would start in a box of the default scale, far from an optimum near the side,
#: with no feasible point to expand from.
IMPLIED_LIMIT = 1e12


@dataclass(frozen=True)
class SoftSides:
    """Which sides of the search box are soft and how far each may expand.

    Attributes
    ----------
    lower, upper : ndarray of bool, shape (n,)
        Soft lower / upper side of each gene.
    hard_lower, hard_upper : ndarray, shape (n,)
        The limit of each side: ``-inf``/``+inf`` for an open side, the given value for a
        huge one, the box itself for a hard side.
    """

    lower: np.ndarray
    upper: np.ndarray
    hard_lower: np.ndarray
    hard_upper: np.ndarray

    @property
    def any(self) -> bool:
        return bool(self.lower.any() or self.upper.any())


def problem_scale(exprs, finite_bounds) -> float:
    """The magnitude of the problem's numbers: its numeric constants and its finite,
    non-huge bounds, clipped to [1, 100].  ``default_box`` uses ten times it."""
    vals = [1.0]
    for e in exprs:
        for a in e.atoms(sp.Number):
            try:
                v = abs(float(a))
            except (TypeError, ValueError):  # pragma: no cover - zoo, nan
                continue
            if math.isfinite(v) and v <= HUGE_BOUND:
                vals.append(v)
    vals += [abs(b) for b in finite_bounds if math.isfinite(b) and abs(b) <= HUGE_BOUND]
    return min(max(vals), 100.0)


def default_box(lo: float, hi: float, half: float) -> tuple[float, float]:
    """The initial search interval for a variable with open (infinite) sides.

    Runs only for sides still infinite after the given, extracted (and, later, inferred)
    bounds.  Both open: ``[-half, half]``.  One open: the other side plus or minus
    ``max(half, |other side|)``, so the interval reaches past the origin's scale.
    """
    if not math.isfinite(lo) and not math.isfinite(hi):
        return -half, half
    if math.isfinite(lo) and not math.isfinite(hi):
        return lo, lo + max(half, abs(lo))
    if math.isfinite(hi) and not math.isfinite(lo):
        return hi - max(half, abs(hi)), hi
    return lo, hi


def with_box(problem, lower: np.ndarray, upper: np.ndarray):
    """A copy of ``problem`` searching the box ``[lower, upper]`` (same generated code);
    integer genes rounded inward.

    A shallow copy of the instance's attributes: ``copy.copy`` would go through
    ``Problem.__reduce__`` (pickling), which rebuilds and lowers the problem again, a
    cost every re-boxing (the piece moves box a problem several times) would pay."""
    lower, upper = np.array(lower, dtype=np.float64), np.array(upper, dtype=np.float64)
    integer = problem._integer
    lower[integer], upper[integer] = np.ceil(lower[integer]), np.floor(upper[integer])
    out = object.__new__(type(problem))
    out.__dict__.update(problem.__dict__)
    out._lower, out._upper = lower, upper
    out._box = {b.symbol: (float(lower[b.offset:b.offset + b.size].min()),
                           float(upper[b.offset:b.offset + b.size].max()))
                for b in problem.layout.blocks}
    return out


class BoundsWarning(UserWarning):
    """A variable had no finite bound on a side and got the default box."""


def is_integer(s) -> bool:
    """Whether a variable is declared ``integer=True``."""
    return bool(getattr(s, "is_integer", False))


def _linear_bound(leaf: Leaf, scalars: set):
    """``(symbol, side, value, strict)`` if ``leaf`` is ``a*v + b (op) 0``, else None."""
    free = leaf.expr.free_symbols
    if len(free) != 1 or not free <= scalars or leaf.expr.atoms(sp.Indexed):
        return None
    (v,) = free
    ab = _affine(leaf.expr, v)
    if ab is None:
        a = sp.diff(leaf.expr, v)
        if not a.is_number or a == 0:
            return None
        b = sp.expand(leaf.expr - a * v)
        if b.free_symbols:
            return None
    else:
        a, b = ab
    val, fa = float(-b / a), float(a)
    if leaf.kind == "eq":
        return v, "eq", val, False
    return v, ("hi" if fa > 0 else "lo"), val, leaf.kind == "lt"


def _affine(expr, v):
    """``(a, b)`` of ``expr = a*v + b`` written so (``v``, ``c*v``, plus one number), the
    numbers ``diff`` and ``expand`` give, without their cost (a box written as ``2 n``
    constraints has ``2 n`` such leaves); None for any other form."""
    terms = expr.args if expr.is_Add else (expr,)
    if len(terms) > 2:
        return None
    a, b = None, sp.S.Zero
    for t in terms:
        if t.is_Number:
            b = t
        elif t is v:
            a = sp.S.One
        elif t.is_Mul and len(t.args) == 2 and t.args[0].is_Number and t.args[1] is v:
            a = t.args[0]
        else:
            return None
    return None if a is None or a == 0 else (a, b)


def _contradiction(variables, constraints, lo, hi, strict_lo, strict_hi, scalars):
    """The proof of infeasibility when single-variable linear constraints leave some
    variable no value (``x >= 3`` and ``x <= 1``), else None.  Such a variable's search
    box becomes the hull of its contradicting sides (``[1, 3]``), so that the problem
    can still be built, evaluated and reported on; ``solve`` returns INFEASIBLE with the
    proof, as for any box that bound propagation empties."""
    bad = [v for v in variables
           if lo[v] > hi[v] or (lo[v] == hi[v] and (v in strict_lo or v in strict_hi))]
    if not bad:
        return None
    parts = [f"{v} >= {lo[v]:g} and {v} <= {hi[v]:g}" if lo[v] > hi[v] else
             f"{v} {'>' if v in strict_lo else '>='} {lo[v]:g} and "
             f"{v} {'<' if v in strict_hi else '<='} {hi[v]:g}" for v in bad]
    box = {v: (lo[v], hi[v]) for v in bad}
    used = tuple(c.relation for c in constraints
                 if c.relation.free_symbols & set(bad) and c.relation.free_symbols <= scalars
                 and len(c.relation.free_symbols) == 1)
    for v in bad:
        lo[v], hi[v] = min(lo[v], hi[v]), max(lo[v], hi[v])
        strict_lo.discard(v)
        strict_hi.discard(v)
    return InfeasibilityProof(
        "infeasible", box, used,
        f"the constraints on {', '.join(map(str, bad))} contradict each other: they "
        f"require {'; '.join(parts)}")


@bulk()
def make_bounds(variables, layout, constraints, bounds, default_bound, parameters,
                exprs=(), eq_tol: float = 1e-4):
    """``(lower, upper, integer, box, soft, param_bounds, proof)`` of the search (see the
    module docstring); ``proof`` is an :class:`~._fbbt.InfeasibilityProof` when
    propagation shows the constraints admit no point (the box is then left as it was
    before propagation).

    ``default_bound=None`` chooses the half-width of open sides from the problem
    (``10 * problem_scale``, at most :data:`DEFAULT_BOUND`); a number fixes it.
    """
    if default_bound is not None and not (
            isinstance(default_bound, (int, float)) and math.isfinite(default_bound)
            and default_bound > 0):
        raise ProblemError(f"default_bound must be a finite number > 0 or None, got "
                           f"{default_bound!r}")
    scalars = {b.symbol for b in layout.blocks if b.shape == ()}
    lo, hi, strict_lo, strict_hi = _extracted_bounds(variables, constraints, scalars)
    proof = _contradiction(variables, constraints, lo, hi, strict_lo, strict_hi, scalars)
    param_bounds = _given_bounds(bounds, variables, parameters, scalars, lo, hi)
    implied: set = set()  # (symbol, "lo"/"hi"): sides propagation moved inward
    if not param_bounds and proof is None:  # a box that follows parameters: not propagated
        lo, hi, strict_lo, strict_hi, proof, implied = _tighten(
            variables, layout, constraints, lo, hi, strict_lo, strict_hi, eq_tol)
        if proof is None and exprs:
            lo, hi, implied = _domain_sides(variables, layout, constraints, exprs[0], lo, hi,
                                            strict_lo, strict_hi, eq_tol, implied)
    half = default_bound if default_bound is not None else min(
        DEFAULT_BOUND, 10.0 * problem_scale(exprs, [*lo.values(), *hi.values()]))
    lower, upper, integer, box, soft, missing = _search_box(layout, lo, hi, strict_lo,
                                                            strict_hi, implied, half)
    if missing and proof is None:
        warnings.warn(f"no finite bound on some side of {', '.join(missing)}: searching a "
                      f"default box of the problem's scale, expanded while the best point "
                      f"presses on it (see Problem.bounds); pass bounds= to choose it",
                      BoundsWarning, stacklevel=4)
    return lower, upper, integer, box, soft, tuple(param_bounds), proof


def _extracted_bounds(variables, constraints, scalars):
    """``(lo, hi, strict_lo, strict_hi)``: the bounds single-variable linear constraints
    give (top-level leaves and the leaves of an ``And``), the tightest of each side, and
    the variables whose tightest side is strict."""
    lo = {v: -math.inf for v in variables}
    hi = {v: math.inf for v in variables}
    strict_lo, strict_hi = set(), set()
    for c in constraints:
        tree = c.tree
        kids = [tree] if isinstance(tree, Leaf) else (
            list(tree.children) if type(tree).__name__ == "AllOf" else [])
        for leaf in kids:
            if not isinstance(leaf, Leaf):
                continue
            got = _linear_bound(leaf, scalars)
            if got is None:
                continue
            v, side, val, strict = got
            if side in ("lo", "eq") and val >= lo[v]:
                if val > lo[v]:
                    strict_lo.discard(v)
                lo[v] = val
                if strict:
                    strict_lo.add(v)
            if side in ("hi", "eq") and val <= hi[v]:
                if val < hi[v]:
                    strict_hi.discard(v)
                hi[v] = val
                if strict:
                    strict_hi.add(v)
    return lo, hi, strict_lo, strict_hi


def _given_bounds(bounds, variables, parameters, scalars, lo, hi) -> list:
    """The user's ``bounds=`` over ``lo``/``hi`` (in place: a given side replaces the
    extracted one); returns the sides that depend on parameters, ``(symbol, "lower" |
    "upper", expression)``, set at the parameters' values here."""
    param_bounds = []
    if bounds is None:
        return param_bounds
    if not isinstance(bounds, dict):
        raise ProblemError(f"bounds must be a dict {{symbol: (lo, hi)}}, got {bounds!r}")
    for s, pair in bounds.items():
        if s not in lo:
            raise ProblemError(f"bounds given for {s}, which is not a variable of the "
                               f"problem (variables: {list(variables)})")
        try:
            blo, bhi = pair
        except (TypeError, ValueError):
            raise ProblemError(f"bounds for {s} must be a pair (lo, hi), got {pair!r}") \
                from None
        for name, val in (("lower", blo), ("upper", bhi)):
            if isinstance(val, sp.Basic) and val.free_symbols:
                stray = sorted(map(str, val.free_symbols - set(parameters)))
                if stray:
                    raise ProblemError(f"{name} bound of {s} ({val}) depends on "
                                       f"{', '.join(stray)}, which is not a parameter")
                if s not in scalars:
                    raise ProblemError(f"{name} bound of {s} depends on parameters: "
                                       "supported for scalar variables only")
                param_bounds.append((s, name, val))
                val = val.subs(parameters)
            if val is not None:
                try:
                    fv = float(val)
                except (TypeError, ValueError):
                    raise ProblemError(f"{name} bound of {s} is not a number: {val!r}") \
                        from None
                if math.isnan(fv):
                    raise ProblemError(f"{name} bound of {s} is NaN")
                if name == "lower":
                    lo[s] = fv
                else:
                    hi[s] = fv
        if lo[s] > hi[s]:
            raise ProblemError(f"lower bound of {s} ({lo[s]}) is above its upper bound "
                               f"({hi[s]})")
    return param_bounds


def _search_box(layout, lo, hi, strict_lo, strict_hi, implied, half):
    """``(lower, upper, integer, box, soft, missing)``: the search box per gene (open and
    huge sides searched from :func:`default_box` and marked soft, unless the constraints
    imply them; integer genes rounded inward, strict sides stepped past), and the
    variables with an open side."""
    missing = []
    box = {}
    n = sum(b.size for b in layout.blocks)
    lower, upper = np.empty(n), np.empty(n)
    integer = np.zeros(n, dtype=bool)
    soft_lo, soft_hi = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
    hard_lo, hard_hi = np.empty(n), np.empty(n)
    for b in layout.blocks:
        v = b.symbol
        a, z = lo[v], hi[v]
        if not math.isfinite(a) or not math.isfinite(z):
            missing.append(str(v))
        sl = slice(b.offset, b.offset + b.size)
        # open or huge: expandable, unless the constraints imply the side (see IMPLIED_LIMIT)
        soft_a = a < -HUGE_BOUND and not ((v, "lo") in implied and a >= -IMPLIED_LIMIT)
        soft_z = z > HUGE_BOUND and not ((v, "hi") in implied and z <= IMPLIED_LIMIT)
        hard_lo[sl], hard_hi[sl] = a, z
        soft_lo[sl], soft_hi[sl] = soft_a, soft_z
        a0, z0 = default_box(-math.inf if soft_a else a, math.inf if soft_z else z, half)
        a, z = max(a0, a), min(z0, z)
        if is_integer(v):
            a, z = float(math.ceil(a)), float(math.floor(z))
            if v in strict_lo and a == lo[v]:
                a += 1
            if v in strict_hi and z == hi[v]:
                z -= 1
            if a > z:
                raise ProblemError(f"integer variable {v} has no integer value in its bounds "
                                   f"[{lo[v]}, {hi[v]}]")
        lower[sl], upper[sl] = a, z
        integer[sl] = is_integer(v)
        box[v] = (a, z)
    soft = SoftSides(soft_lo & (lower > hard_lo), soft_hi & (upper < hard_hi), hard_lo,
                     hard_hi)
    return lower, upper, integer, box, soft, missing


def parameter_bound_constraints(param_bounds) -> list:
    """``x >= lo(p)`` / ``x <= hi(p)`` for each bound that depends on parameters: added
    to the problem's constraints, so that each parameter value (each instance of a batch)
    gets its own bounds while the search box covers them all."""
    return [(s >= v) if side == "lower" else (s <= v) for s, side, v in param_bounds]


def parameter_box(problem, P: np.ndarray):
    """``problem`` searching the box its parameter-dependent bounds give for the parameter
    values ``P``, shape (n_params,) or (n_params, B) (the hull over the B instances);
    ``problem`` itself when no bound depends on a parameter."""
    if not problem._param_bounds:
        return problem
    P = np.asarray(P, dtype=np.float64).reshape(len(problem.layout.parameters), -1)
    lower, upper = problem.lower, problem.upper
    params = problem.layout.parameters
    for s, side, expr in problem._param_bounds:
        fn = sp.lambdify(params, expr, "numpy")
        vals = np.broadcast_to(np.asarray(fn(*P), dtype=np.float64), (P.shape[1],))
        if not np.all(np.isfinite(vals)):
            raise ProblemError(f"the {side} bound of {s} ({expr}) is not finite for the "
                               "given parameter values")
        off = problem.layout.block_of(s).offset
        if side == "lower":
            lower[off] = vals.min()
        else:
            upper[off] = vals.max()
    bad = [str(b.symbol) for b in problem.layout.blocks if lower[b.offset] > upper[b.offset]]
    if bad:
        raise ProblemError(f"the bounds of {', '.join(bad)} are empty (lower above upper) for "
                           "the given parameter values")
    return with_box(problem, lower, upper)


def _domain_sides(variables, layout, constraints, objective, lo, hi, strict_lo, strict_hi,
                  eq_tol, implied):
    """Sides still open after propagation that the objective's domain closes
    (:func:`domain_constraints`, propagated with the constraints): ``x*log(x)`` with
    ``x`` unbounded gets ``x >= 0``, and ``x + y == 1`` then ``x <= 1``.  Only open
    sides move (a given or propagated bound is kept as it was), and they become implied
    sides (see :data:`IMPLIED_LIMIT`).  Returns ``(lo, hi, implied)``."""
    open_side = any(not (math.isfinite(lo[v]) and math.isfinite(hi[v])) for v in variables)
    if not open_side:
        return lo, hi, implied
    extra = domain_constraints(objective)
    if not extra:
        return lo, hi, implied
    lo2, hi2, _, _, proof, moved = _tighten(variables, layout, (*constraints, *extra), lo, hi,
                                            strict_lo, strict_hi, eq_tol)
    if proof is not None:  # the constraints hold only where the objective is undefined:
        return lo, hi, implied  # the solve says so (UNDEFINED), no box from it
    lo, hi, implied = dict(lo), dict(hi), set(implied)
    for v, side in moved:
        if side == "lo" and not math.isfinite(lo[v]):
            lo[v] = lo2[v]
            implied.add((v, side))
        if side == "hi" and not math.isfinite(hi[v]):
            hi[v] = hi2[v]
            implied.add((v, side))
    return lo, hi, implied


def _tighten(variables, layout, constraints, lo, hi, strict_lo, strict_hi, eq_tol):
    """Bounds implied by the constraints (FBBT, see :mod:`._fbbt`) for scalar variables.

    A side moves only when propagation improves it by more than 1e-9 of the width (so
    rounding-level changes never perturb a given box).  Returns ``(lo, hi, strict_lo,
    strict_hi, proof, implied)``, ``implied`` the set of ``(symbol, "lo" | "hi")`` sides
    that moved.
    """
    n = sum(b.size for b in layout.blocks)
    if not constraints or n > 100_000:
        return lo, hi, strict_lo, strict_hi, None, set()
    a, z = np.empty(n), np.empty(n)
    integer = np.zeros(n, dtype=bool)
    for b in layout.blocks:
        sl = slice(b.offset, b.offset + b.size)
        a[sl], z[sl], integer[sl] = lo[b.symbol], hi[b.symbol], is_integer(b.symbol)
    res = propagate(layout, constraints, a, z, integer, eq_tol, None, variables)
    if res.proof is not None:
        return lo, hi, strict_lo, strict_hi, res.proof, set()
    lo, hi = dict(lo), dict(hi)
    implied = set()
    strict_lo, strict_hi = set(strict_lo), set(strict_hi)
    for b in layout.blocks:
        if b.shape != ():
            continue
        v, k = b.symbol, b.offset
        new_lo, new_hi = float(res.lo[k]), float(res.hi[k])
        w = min(hi[v] - lo[v], new_hi - new_lo)
        if new_lo > lo[v] and (not math.isfinite(lo[v]) or new_lo - lo[v] > 1e-9 * w):
            lo[v] = new_lo
            strict_lo.discard(v)
            implied.add((v, "lo"))
        if new_hi < hi[v] and (not math.isfinite(hi[v]) or hi[v] - new_hi > 1e-9 * w):
            hi[v] = new_hi
            strict_hi.discard(v)
            implied.add((v, "hi"))
    return lo, hi, strict_lo, strict_hi, None, implied
