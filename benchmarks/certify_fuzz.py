"""Certificates on random problems whose optimum is known exactly (issue 27: "zero bounds
above the best known optimum ... over a 1,000-problem fuzz with exactly known optima").

Problem ``k`` is drawn from ``numpy.random.default_rng(k)``; all data are small
rationals, and the optimum ``f*`` is computed exactly (``fractions.Fraction``; the one
transcendental family to 40 digits with mpmath), never by a solver.  Six families, in
turn (``k mod 6``), n = 1 to 4 variables:

separable
    ``sum_i s_i(x_i)`` on a box, each piece a convex parabola ``a (x - c)^2`` (minimum at
    ``c`` clipped to the side), a concave one ``-a (x - c)^2`` (minimum at the farther
    side) or a linear term; f* the sum of the pieces' minima.
multilinear
    random monomials of degree 1 to 3 in distinct variables (``x1 x3``, ``x1 x2 x4``)
    plus a constant, on a box that straddles zero: multilinear, so the minimum lies at
    a vertex; f* the least of the 2^n vertices, enumerated exactly.
bilinear_eq
    ``min sum_i q_i x_i y_i`` (indefinite) subject to ``x_i + y_i == s_i`` on a box:
    each term is a concave parabola of ``x_i`` on the interval the box and the equality
    leave, so its minimum lies at one end; f* exact.  (The equalities are held to
    ``eq_tol = 1e-6``: points in the band may lie below f*, so the optimum over the band
    is at most f*; a bound above f* is still wrong.)
ball_lp
    a linear objective over the intersection of two to three balls, with a planted
    point ``x*`` on the boundary of each: ``c = -sum_k lam_k grad g_k(x*)``, ``lam > 0``,
    makes ``x*`` a KKT point of a convex problem, hence its global minimum; f* = c x*.
simplex_qp
    ``sum_i a_i (x_i - c_i)^2`` subject to ``sum x_i >= b`` with ``b > sum c_i``: the
    constraint is active, ``x_i = c_i + lam / (2 a_i)`` with ``lam`` from the sum, inside
    a box chosen wide enough; f* exact (a convex QP with a planted multiplier).
exp_pieces
    separable pieces ``w exp(t x)`` and ``w log(1 + x)`` (``w`` of either sign, x >= 0):
    monotone pieces, minimum at one side each; f* to 40 digits (mpmath).

Each is solved by ``constropt.solve(..., certify=True, seed=0, time_limit=T,
certify_time=T)``; the check: the certificate's lower bound ``L`` (minimization) is at
most f*, compared exactly (``Fraction(L) <= f*``); a certificate of infeasibility is
wrong too (every problem here is feasible).  Also counted: how many closed the gap
``U - L <= 1e-6 max(1, |U|)``.

Usage::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 PYTHONPATH=src python benchmarks/certify_fuzz.py \\
        --count 1000 --limit 2 --out benchmarks/results/certify_fuzz.md
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import sys
import time
import warnings
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import sympy as sp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

FAMILIES = ("separable", "multilinear", "bilinear_eq", "ball_lp", "simplex_qp", "exp_pieces")


@dataclass(frozen=True)
class Known:
    """A problem with its exact optimum (minimization)."""

    index: int
    family: str
    objective: sp.Expr
    constraints: tuple
    bounds: dict
    f_star: object  # Fraction, or an mpmath mpf (exp_pieces)
    f_float: float
    x_star: tuple  # a point where f* is attained (Fractions), in ``bounds`` order

    def problem(self):
        import constropt

        return constropt.Problem(self.objective, list(self.constraints),
                                 variables=list(self.bounds), bounds=self.bounds)


def _q(rng, lo: int, hi: int, den: int = 4) -> Fraction:
    """A random rational ``k / den`` with ``lo <= k / den <= hi``."""
    return Fraction(int(rng.integers(lo * den, hi * den + 1)), den)


def _R(v: Fraction) -> sp.Rational:
    return sp.Rational(v.numerator, v.denominator)


def _symbols(n: int):
    return sp.symbols(f"x1:{n + 1}", real=True)


def _box(rng, x, lo=(-4, 0), width=(1, 6)):
    b = {}
    for v in x:
        a = _q(rng, *lo)
        b[v] = (a, a + _q(rng, *width) + Fraction(1, 4))
    return b


def separable(k, rng) -> Known:
    n = int(rng.integers(1, 5))
    x = _symbols(n)
    box = _box(rng, x)
    f, fstar, xs = sp.Integer(0), Fraction(0), []
    for v in x:
        lo, hi = box[v]
        kind = int(rng.integers(0, 3))
        a, c = _q(rng, 1, 5), _q(rng, -5, 5)
        if kind == 0:  # convex parabola: its minimum at c clipped to the side
            f += _R(a) * (v - _R(c)) ** 2
            z = min(max(c, lo), hi)
        elif kind == 1:  # concave parabola: the farther side
            f += -_R(a) * (v - _R(c)) ** 2
            z = lo if (lo - c) ** 2 >= (hi - c) ** 2 else hi
        else:
            f += _R(c) * v
            z = lo if c >= 0 else hi
        fstar += (a * (z - c) ** 2 if kind == 0 else -a * (z - c) ** 2 if kind == 1
                  else c * z)
        xs.append(z)
    return Known(k, "separable", f, (), _sp_box(box), fstar, float(fstar), tuple(xs))


def multilinear(k, rng) -> Known:
    n = int(rng.integers(2, 5))
    x = _symbols(n)
    box = _box(rng, x, lo=(-3, -1), width=(2, 5))
    terms = []
    for _ in range(int(rng.integers(2, 6))):
        deg = int(rng.integers(1, min(3, n) + 1))
        idx = tuple(sorted(rng.choice(n, size=deg, replace=False).tolist()))
        terms.append((_q(rng, -4, 4, 2), idx))
    const = _q(rng, -3, 3)
    f = _R(const) + sum(_R(c) * sp.Mul(*[x[i] for i in idx]) for c, idx in terms)
    best, arg = None, None
    for vert in itertools.product(*[box[v] for v in x]):
        val = const
        for c, idx in terms:
            p = c
            for i in idx:
                p *= vert[i]
            val += p
        if best is None or val < best:
            best, arg = val, vert
    return Known(k, "multilinear", f, (), _sp_box(box), best, float(best), tuple(arg))


def bilinear_eq(k, rng) -> Known:
    m = int(rng.integers(1, 3))
    x = _symbols(2 * m)
    box, cons, xs = {}, [], []
    f, fstar = sp.Integer(0), Fraction(0)
    for i in range(m):
        xv, yv = x[2 * i], x[2 * i + 1]
        s = _q(rng, 1, 6)
        q = _q(rng, -3, 3, 2) or Fraction(1)
        box[xv] = (Fraction(0), _q(rng, 1, 6))
        box[yv] = (Fraction(0), _q(rng, 1, 6))
        # feasible x: 0 <= x <= ux and 0 <= s - x <= uy
        lo, hi = max(Fraction(0), s - box[yv][1]), min(box[xv][1], s)
        if lo > hi:  # no feasible pair: widen y's side to make one
            box[yv] = (Fraction(0), s)
            lo, hi = max(Fraction(0), s - box[yv][1]), min(box[xv][1], s)
        f += _R(q) * xv * yv
        cons.append(sp.Eq(xv + yv, _R(s)))
        # q x (s - x): a parabola of x; its minimum over [lo, hi] at an end (q > 0:
        # concave) or at the vertex s / 2 clipped (q < 0: convex)
        cands = [lo, hi]
        if q < 0:
            cands.append(min(max(s / 2, lo), hi))
        z = min(cands, key=lambda z: q * z * (s - z))
        fstar += q * z * (s - z)
        xs += [z, s - z]
    return Known(k, "bilinear_eq", f, tuple(cons), _sp_box(box), fstar, float(fstar),
                 tuple(xs))


def ball_lp(k, rng) -> Known:
    n = int(rng.integers(2, 5))
    x = _symbols(n)
    xs = [_q(rng, -2, 2) for _ in range(n)]
    cons, grads = [], []
    for _ in range(int(rng.integers(2, 4))):
        d = [_q(rng, -2, 2) for _ in range(n)]
        if all(v == 0 for v in d):
            d[0] = Fraction(1)
        p = [a + b for a, b in zip(xs, d)]  # the centre; x* lies on the sphere
        r2 = sum(v * v for v in d)
        cons.append(sum((v - _R(c)) ** 2 for v, c in zip(x, p)) - _R(r2) <= 0)
        grads.append([2 * (a - c) for a, c in zip(xs, p)])
    lam = [_q(rng, 1, 4) for _ in grads]
    c = [-sum(lk * g[i] for lk, g in zip(lam, grads)) for i in range(n)]
    f = sum(_R(ci) * v for ci, v in zip(c, x))
    fstar = sum(ci * xi for ci, xi in zip(c, xs))
    box = {v: (xi - 6, xi + 6) for v, xi in zip(x, xs)}
    return Known(k, "ball_lp", f, tuple(cons), _sp_box(box), fstar, float(fstar),
                 tuple(xs))


def simplex_qp(k, rng) -> Known:
    n = int(rng.integers(2, 5))
    x = _symbols(n)
    a = [_q(rng, 1, 4) for _ in range(n)]
    c = [_q(rng, -2, 2) for _ in range(n)]
    b = sum(c) + _q(rng, 1, 4)
    lam = (b - sum(c)) / sum(1 / (2 * ai) for ai in a)
    xs = [ci + lam / (2 * ai) for ai, ci in zip(a, c)]
    f = sum(_R(ai) * (v - _R(ci)) ** 2 for ai, ci, v in zip(a, c, x))
    fstar = sum(ai * (xi - ci) ** 2 for ai, ci, xi in zip(a, c, xs))
    box = {v: (min(ci, xi) - _q(rng, 1, 3), max(ci, xi) + _q(rng, 1, 3))
           for v, ci, xi in zip(x, c, xs)}
    return Known(k, "simplex_qp", f, (sum(x) >= _R(b),), _sp_box(box), fstar,
                 float(fstar), tuple(xs))


def exp_pieces(k, rng) -> Known:
    import mpmath

    mpmath.mp.dps = 40
    n = int(rng.integers(1, 4))
    x = _symbols(n)
    box = {v: (Fraction(0), _q(rng, 1, 3)) for v in x}
    f, fstar, xs = sp.Integer(0), mpmath.mpf(0), []
    for v in x:
        lo, hi = box[v]
        w = _q(rng, -3, 3, 2) or Fraction(1)
        if rng.integers(0, 2):
            t = _q(rng, -2, 2, 2) or Fraction(1, 2)
            f += _R(w) * sp.exp(_R(t) * v)
            vals = [mpmath.mpf(w.numerator) / w.denominator
                    * mpmath.exp(mpmath.mpf(t.numerator) / t.denominator
                                 * mpmath.mpf(z.numerator) / z.denominator) for z in (lo, hi)]
        else:
            f += _R(w) * sp.log(1 + v)
            vals = [mpmath.mpf(w.numerator) / w.denominator
                    * mpmath.log(1 + mpmath.mpf(z.numerator) / z.denominator) for z in (lo, hi)]
        fstar += min(vals)
        xs.append(lo if vals[0] <= vals[1] else hi)
    return Known(k, "exp_pieces", f, (), _sp_box(box), fstar, float(fstar), tuple(xs))


def _sp_box(box):
    return {v: (_R(lo), _R(hi)) for v, (lo, hi) in box.items()}


MAKERS = (separable, multilinear, bilinear_eq, ball_lp, simplex_qp, exp_pieces)


def known(k: int) -> Known:
    """Problem ``k`` of the fuzz (family ``k mod 6``, data from ``default_rng(k)``)."""
    return MAKERS[k % len(MAKERS)](k, np.random.default_rng(k))


def above(L: float, f_star) -> bool:
    """Is the float ``L`` above the exact optimum ``f_star``?  Exact comparison."""
    if math.isnan(L):
        return True  # no number is no bound: counted against it
    if math.isinf(L):
        return L > 0
    if isinstance(f_star, Fraction):
        return Fraction(L) > f_star
    import mpmath

    mpmath.mp.dps = 40
    return mpmath.mpf(L) > f_star


def run(k: int, limit: float) -> dict:
    """Solve problem ``k`` with ``certify=True``; its bound against f*."""
    import constropt

    pk = known(k)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = constropt.solve(pk.problem(), certify=True, seed=0, time_limit=limit,
                              certify_time=limit)
    wall = time.perf_counter() - t0
    c = res.certificate
    if c is None:
        L, kind = -math.inf, "none"
    elif c.kind == "infeasible":
        L, kind = math.inf, "infeasible"
    else:
        L, kind = c.lower_bound, "bound"
    U = res.fun if res.feasible else math.inf
    closed = kind == "bound" and math.isfinite(U) and U - L <= 1e-6 * max(1.0, abs(U))
    return dict(index=k, family=pk.family, n=len(pk.bounds), f_star=pk.f_float, L=L, U=U,
                kind=kind, wrong=above(L, pk.f_star), closed=bool(closed), wall=wall)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--limit", type=float, default=2.0, help="time_limit and certify_time")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    from _machine import LoadMonitor, emit, header

    import constropt  # noqa: F401  (imported before the clock of the first run)

    load = LoadMonitor()
    t0 = time.perf_counter()
    recs = []
    for k in range(args.start, args.start + args.count):
        r = run(k, args.limit)
        recs.append(r)
        if r["wrong"] or k % 50 == 0:
            print(f"[{k}] {r['family']:12s} n={r['n']} f*={r['f_star']:.10g} L={r['L']!r} "
                  f"U={r['U']!r} {'WRONG' if r['wrong'] else 'ok'} {r['wall']:.2f}s",
                  flush=True)
    total = time.perf_counter() - t0
    lines = [header("Certificates on problems with exactly known optima (fuzz)"), "",
             f"`benchmarks/certify_fuzz.py --count {args.count} --start {args.start} "
             f"--limit {args.limit:g}`: problems {args.start} to "
             f"{args.start + args.count - 1}, `solve(certify=True, seed=0, "
             f"time_limit={args.limit:g}, certify_time={args.limit:g})`, f* exact (the "
             f"families and their closed forms are in the script's docstring); a bound "
             f"is wrong when it lies above f* (exact comparison).  {total:.0f} s in all. "
             f"{load.line()}", "",
             "| family | problems | wrong bounds | gap closed (1e-6 max(1, abs(U))) | "
             "no bound (-inf) | median s |", "|---|---:|---:|---:|---:|---:|"]
    for fam in FAMILIES + ("all",):
        rs = [r for r in recs if fam in ("all", r["family"])]
        if not rs:
            continue
        lines.append(f"| {fam} | {len(rs)} | {sum(r['wrong'] for r in rs)} | "
                     f"{sum(r['closed'] for r in rs)} | "
                     f"{sum(r['L'] == -math.inf for r in rs)} | "
                     f"{float(np.median([r['wall'] for r in rs])):.2f} |")
    wrong = [r for r in recs if r["wrong"]]
    lines += ["", "Wrong bounds: " + (", ".join(
        f"problem {r['index']} ({r['family']}: L = {r['L']!r} > f* = {r['f_star']!r})"
        for r in wrong) or "none") + "."]
    emit("\n".join(lines), args.out)
    return 1 if wrong else 0


if __name__ == "__main__":
    raise SystemExit(main())
