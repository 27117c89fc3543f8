"""Fuzzing unboundedness: problems unbounded by construction never end in success.

Each random problem comes with a witness family: a ray (or an approach to a pole) on
which every point is feasible and the objective tends to -inf.  For every result, the
witness from the returned point gives a feasible point with a lower objective (checked
with sympy's own float evaluation), which proves any success claim wrong; the test
asserts that no result claims success.
"""

from __future__ import annotations

import math
import random
import warnings

import pytest
import sympy as sp

import constropt

x, y = sp.symbols("x y", real=True)
VARS = (x, y)


def _num(rng, lo, hi, digits=2):
    return sp.Rational(round(rng.uniform(lo, hi) * 10**digits), 10**digits)


def _case(k: int):
    """Problem ``k``: ``(objective, constraints, bounds, witness)``; ``witness(point, j)``
    is the ``j``-th point of the witness family from ``point`` (j = 1, 2, ...)."""
    if k >= 63:  # after the seven families: the interior poles
        return _pole_case(k - 63)
    rng = random.Random(k)
    family = k % 7
    if family == 0:  # linear objective, both variables open above
        c1, c2, l1, l2 = _num(rng, 0.5, 5), _num(rng, 0.1, 5), _num(rng, -5, 5), \
            _num(rng, -5, 5)
        return (-c1 * x - c2 * y, [x >= l1, y >= l2], None,
                lambda p, j: (p[0] + 10.0**j, p[1] + 10.0**j))
    if family == 1:  # a diagonal strip |x - y| <= w, open along (1, 1) and (-1, -1)
        w, c = _num(rng, 0.5, 3), _num(rng, 0.5, 3)
        s = rng.choice([-1, 1])
        return (s * c * (x + y), [x - y <= w, y - x <= w], None,
                lambda p, j: (p[0] - s * 10.0**j, p[1] - s * 10.0**j))
    if family == 2:  # log pole at a strict lower bound
        lo, w, c = _num(rng, -3, 3), _num(rng, 0.5, 4), _num(rng, 0.5, 3)
        return (c * sp.log(x - lo) + (y - 1) ** 2, [x > lo, x <= lo + w],
                {y: (-5, 5)}, _pole(lo))
    if family == 3:  # 1/x pole at a strict bound, from above or below
        lo, w, c = _num(rng, -3, 3), _num(rng, 0.5, 4), _num(rng, 0.5, 3)
        return (-c / (x - lo) + y**2, [x > lo, x <= lo + w], {y: (-5, 5)}, _pole(lo))
    if family == 4:  # a periodic constraint that holds on an unbounded set
        c, l0, c0 = _num(rng, 0.5, 5), _num(rng, -3, 3), _num(rng, 0.1, 0.6)
        g = rng.choice([sp.cos(x**2), sp.sin(3 * x), sp.cos(x) * sp.cos(2 * x)])
        return (-c * x + (y - 2) ** 2, [x >= l0, g < c0], {y: (-5, 5)},
                _periodic(g, c0))
    if family == 5:  # an interior local minimum of an objective unbounded farther out
        eps = sp.Rational(1, 10 ** rng.randint(3, 6))
        return (x**2 - eps * x**4 + (y + 1) ** 2, [], {y: (-5, 5)},
                lambda p, j: (p[0] + math.copysign(10.0 ** (j + 3), p[0] or 1.0), p[1]))
    # family 6: slow growth, -log of an open side
    lo, c = _num(rng, 1, 5), _num(rng, 0.5, 3)
    return (-c * sp.log(x) + (y - 1) ** 2, [x >= lo], {y: (-5, 5)},
            lambda p, j: (p[0] * 10.0 ** (3 * j), p[1]))


def _pole_case(k: int):
    """Pole problem ``k``: a pole inside the box (not at an edge), or at a constraint
    boundary through it; the witness approaches it by ``10**(-8 j)`` (exact rationals,
    far beyond float64's reach, so a result at any float64 point near it is beaten)."""
    rng = random.Random(1000 + k)
    family = k % 5
    c, d = _num(rng, 0.5, 3), _num(rng, -0.5, 0.5)
    box = {x: (-2, 2), y: (-2, 2)}

    def toward(px, py, sx=1, sy=0):  # points (px, py) - 10**(-8 j) * (sx, sy)
        return lambda p, j: (px - sx * sp.Rational(1, 10 ** (8 * j)),
                             py - sy * sp.Rational(1, 10 ** (8 * j)))

    if family == 0:  # odd pole on the line x = y + d
        return (c / (x - y - d), [], box, toward(d, 0))
    if family == 1:  # even pole on the line x + y = d, a quadratic beside it
        return (-c / (x + y - d) ** 2 + (x - y) ** 2 / 10, [], box, toward(d, 0))
    if family == 2:  # log pole at the constraint boundary x - y - d >= 0
        return (c * sp.log(x - y - d) + y**2, [x - y - d >= 0], box, toward(d, 0, -1))
    if family == 3:  # pole on the circle x**2 + y**2 = r**2, from inside
        r = _num(rng, 0.5, 1.5)
        return (c / (x**2 + y**2 - r**2), [], box, toward(r, 0))
    # family 4: pole on the parabola x = y**2 + d, constrained to a half-plane through it
    return (c / (x - y**2 - d), [x + y <= 2, x >= -1], box, toward(d, 0))


def _pole(lo):
    """Exact points ``lo + (x - lo) / 10**j``: toward the pole at ``lo``."""
    return lambda p, j: (lo + (sp.Rational(p[0]) - lo) / 10**j, p[1])


def _periodic(g, c0):
    fn = sp.lambdify(x, g, "math")

    def witness(p, j):
        t = p[0] + 10.0**j
        for i in range(2000):  # the stripe where g < c0 nearest beyond t
            u = t + i * 1e-3 / (1 + abs(t))
            if fn(u) < float(c0) - 1e-9:
                return (u, p[1])
        return (t, p[1])
    return witness


def _value(expr, point):
    """``expr`` at ``point`` in 40-digit arithmetic, the point's floats taken exactly (a
    witness near a pole lies within an ulp of it)."""
    sub = {v: c if isinstance(c, sp.Rational) else sp.Rational(c) for v, c in
           zip(VARS, point)}
    v = sp.N(expr.subs(sub), 40)
    return float(v) if v.is_real and v.is_finite else math.nan


def _holds(rel, point):
    d = _value(rel.lhs - rel.rhs, point)
    if math.isnan(d):
        return False
    if isinstance(rel, sp.StrictLessThan):
        return d < 0
    if isinstance(rel, sp.StrictGreaterThan):
        return d > 0
    if isinstance(rel, sp.LessThan):
        return d <= 0
    return d >= 0


def _within(bounds, point):
    return all(bounds is None or v not in bounds or
               bounds[v][0] <= float(c) <= bounds[v][1] for v, c in zip(VARS, point))


CASES = range(73)  # nine of each of the seven families, then ten interior poles


@pytest.mark.slow
def test_unbounded_by_construction_never_succeeds():
    claims, witnessed = [], 0
    for k in CASES:
        f, cons, bounds, witness = _case(k)
        # the interior poles alternate backends: a float32 search (torch) ends nearer
        # or farther from a pole than a float64 one
        backend = "torch" if k >= 63 and k % 2 else "auto"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = constropt.solve(f, cons, bounds=bounds, variables=VARS, seed=k,
                                  pop_size=20, max_evals=4000, backend=backend)
        assert res.nfev <= 4000
        if res.success:
            claims.append((k, f, cons, res.status, res.fun, dict(res.x)))
        if not res.feasible or not math.isfinite(res.fun):
            continue  # UNBOUNDED at -inf itself, or no point to start a witness from
        start = (float(res.x[x]), float(res.x[y]))
        # the ray check: a feasible witness point with a lower objective than fun
        for j in range(1, 40):
            q = witness(start, j)
            if _within(bounds, q) and all(_holds(c, q) for c in cons):
                fq = _value(f, q)
                if math.isfinite(fq) and fq < res.fun - 1e-9 * max(1.0, abs(res.fun)):
                    witnessed += 1
                    break
        else:
            pytest.fail(f"case {k}: no witness beyond the result ({f}, {cons}, {res.x})")
    assert not claims, claims
    assert witnessed >= 58  # every feasible finite result was shown not optimal
