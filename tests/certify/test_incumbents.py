"""Incumbents from the local solver inside the certificate's branch-and-bound
(certify/_branch.py ``improve``, certify/_result.py ``local_incumbents``): a certificate
started without an incumbent, or from a local optimum, closes with the point a local
solve finds; that point passes the float64 and exact checks of a returned point, and
the bound stays below the known optimum."""

from __future__ import annotations

import math
import time
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest
import sympy as sp

import constropt
from _pooling import haverly
from constropt.certify import _bnb
from constropt.certify._result import certify_result, local_incumbents
from constropt.finish._verdict import check_point

torch = pytest.importorskip("torch")

x = sp.symbols("x", real=True)

# x**4 - 3 x**2 + x on [-2, 2]: the global minimum near x = -1.30, a local one near 1.13
QUARTIC = x**4 - 3 * x**2 + x


def _quartic():
    p = constropt.Problem(QUARTIC, [], variables=[x], bounds={x: (-2, 2)})
    crit = [float(r) for r in sp.Poly(sp.diff(QUARTIC, x), x).nroots(n=30)
            if abs(sp.im(r)) < 1e-20]
    vals = sorted((float(QUARTIC.subs(x, c).evalf(30)), c) for c in crit)
    return p, vals[0], vals[1]  # (f*, x*), then the local minimum


def _haverly():
    # an explicit band: the certificate is then about the problem the incumbent is
    # checked on (tight equalities are certified in the search's wider band)
    return haverly(eq_tol=1e-8)


def _feasible_at(p, cert):
    """The point the branch-and-bound found passes the checks of a returned point."""
    got = cert.found
    assert got is not None and got.feasible
    f, V = check_point(p, np.asarray(got.x), p.parameter_vector())
    assert np.all(V == 0)
    assert f == pytest.approx(cert.incumbent, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("make", ["quartic", "haverly"])
def test_no_incumbent_closes_only_with_local_solves(make):
    if make == "quartic":
        p, (opt, _), _ = _quartic()
    else:
        p, opt = _haverly()
    P = p.parameter_vector()
    sign = -1.0 if p.maximize else 1.0
    tol = 1e-6 * max(1.0, abs(opt))
    # without an incumbent the gap stays infinite: nothing to close it against
    plain = _bnb.certify(p, P, math.nan, None, time_limit=1.0)
    assert not plain.certified and plain.gap == math.inf and plain.found is None
    cert = _bnb.certify(p, P, math.nan, None, time_limit=20.0,
                        improve=local_incumbents(p, P))
    assert cert.certified
    assert sign * cert.lower_bound <= sign * opt + tol     # never above the optimum
    assert cert.incumbent == pytest.approx(opt, abs=tol)  # the local solve found it
    _feasible_at(p, cert)
    assert cert.timings["incumbent"] > 0
    assert sum(cert.timings.values()) == pytest.approx(cert.seconds, rel=1e-6, abs=1e-6)


def test_a_local_optimum_is_replaced_by_a_better_incumbent():
    p, (opt, _), (f_loc, x_loc) = _quartic()
    P = p.parameter_vector()
    cert = _bnb.certify(p, P, f_loc, np.array([x_loc]), time_limit=20.0,
                        improve=local_incumbents(p, P))
    assert cert.certified
    assert cert.lower_bound <= opt + 1e-6
    assert cert.incumbent == pytest.approx(opt, abs=1e-6) and cert.incumbent < f_loc - 1
    _feasible_at(p, cert)


def test_certify_result_adopts_the_better_point():
    p, (opt, x_opt), (f_loc, x_loc) = _quartic()
    P = p.parameter_vector()
    res = constropt.solve(p, seed=0)
    # the run as if the search had stopped at the local minimum
    xl = np.array([x_loc])
    f, V = check_point(p, xl, P)
    stuck = replace(res, x_array=xl, x={x: x_loc}, fun=f, violations=V)
    opts = SimpleNamespace(certify=True, certify_time=20.0)
    out = certify_result(stuck, p, P, opts, "cpu", time.perf_counter())
    assert out.fun == pytest.approx(opt, abs=1e-6)
    assert out.x_array[0] == pytest.approx(x_opt, abs=1e-4)
    assert out.feasible and out.success
    assert "improved by a local solve" in out.message
    assert out.lower_bound <= opt + 1e-6 and out.certificate.certified
    assert check_point(p, out.x_array, P)[0] == out.fun


def test_improve_rejects_points_that_are_not_better_or_infeasible():
    p, opt = _haverly()
    P = p.parameter_vector()
    improve = local_incumbents(p, P)
    centre = 0.5 * (p.lower + p.upper)
    assert improve(centre, -math.inf) is None  # nothing beats -inf
    got = improve(centre, math.inf)
    if got is not None:  # a feasible end: checked, in minimization sense
        f, V = check_point(p, np.asarray(got[1]), P)
        assert np.all(V == 0) and got[0] == pytest.approx(-f, rel=1e-12)
        assert got[0] >= -opt - 1e-6 * opt  # never better than the optimum
