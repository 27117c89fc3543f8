"""alpha-BB cuts (certify/_alphabb.py): every cut lies below its function at thousands of
sampled points of its box (the function enclosed at each point by the interval program
on NumPy and on torch, the cut's left side in outward-rounded arithmetic), convex
functions get their exact tangent planes, and the LP bounds with the cuts stay below
sampled values while they improve on the node-by-node rows where those miss a node
(``sin``, ``cos``)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp

import constropt
from constropt.certify import _lp
from constropt.certify._alphabb import AlphaCuts
from constropt.lowering import _rt_interval as ri
from constropt.lowering._rt_interval import Iv
from constropt.problem._fbbt import problem_model

torch = pytest.importorskip("torch")
highspy = pytest.importorskip("highspy")

x, y, z = sp.symbols("x y z", real=True)

FUNCS = {
    "sin product": sp.sin(x) * y + sp.cos(x * z),
    "exp bilinear": sp.exp(x * y) - z**2,
    "cubic": x**3 - 3 * x * y + y**2 * z,
    "log": sp.log(1 + x**2 + y**2) * z,
    "convex": x**2 + y**2 + sp.exp(z),
    "quotient": x / (y**2 + 1) + z,
}


def _setup(expr, cons=()):
    p = constropt.Problem(expr, list(cons), variables=[x, y, z],
                          bounds={x: (-3, 3), y: (-3, 3), z: (-3, 3)})
    return p, problem_model(p, gradient=False)


def _boxes(rng, m):
    lo = rng.uniform(-3, 2.5, (3, m))
    hi = np.minimum(lo + 10.0 ** rng.uniform(-4, 0.7, (3, m)), 3.0)
    return lo, hi


def _below(model, node, S, rhs, X, backend):
    """Whether ``g(X) - S^T X >= rhs`` can hold at the points ``X`` (shape (3, m)):
    the upper end of its enclosure is at least ``rhs`` (or the box has no cut)."""
    m = X.shape[1]
    if backend == "torch":
        Xt = torch.as_tensor(X)
        v = model.program.forward(Xt, Xt, torch.zeros(0, dtype=torch.float64),
                                  only=[node])[node]
        glo, ghi = (np.broadcast_to(t.numpy(), (m,)) for t in (v.lo, v.hi))
    else:
        v = model.program.forward(X, X, np.zeros(0), only=[node])[node]
        glo, ghi = np.broadcast_to(v.lo, (m,)), np.broadcast_to(v.hi, (m,))
    no = np.zeros(m, dtype=bool)
    acc = Iv(glo, ghi, no)
    for k in range(3):
        acc = ri.sub(acc, ri.mul2(Iv(S[k], S[k], no), Iv(X[k], X[k], no)))
    return ~np.isfinite(rhs) | (acc.hi >= rhs)


@pytest.mark.parametrize("backend", ["numpy", "torch"])
@pytest.mark.parametrize("name", list(FUNCS))
def test_every_cut_lies_below_its_function(name, backend):
    """200 random boxes (widths 1e-4 to 5), 25 points in each, corners and faces among
    them: 5,000 points per function and backend, on each of its three cuts."""
    p, model = _setup(FUNCS[name], [x * y - z <= 1])
    A = AlphaCuts(model, 3, 100000)
    assert len(A.funcs) == 2  # the objective and the nonlinear constraint
    rng = np.random.default_rng(abs(hash(name)) % 2**32)
    m = 200
    lo, hi = _boxes(rng, m)
    cuts = A(torch.as_tensor(lo), torch.as_tensor(hi), torch.zeros(0, dtype=torch.float64))
    assert len(cuts) == 6
    assert np.mean([np.isfinite(r).mean() for _, _, r in cuts]) > 0.9
    for _ in range(25):
        t = rng.random(lo.shape)
        t[rng.random(lo.shape) < 0.2] = 0.0
        t[rng.random(lo.shape) < 0.2] = 1.0
        X = np.clip(lo + t * (hi - lo), lo, hi)
        for node, S, rhs in cuts:
            ok = _below(model, node, S, rhs, X, backend)
            assert ok.all(), (name, node, np.flatnonzero(~ok)[:3])


def test_convex_function_gets_its_tangent_plane():
    """``x^2 + y^2 + exp(z)``: alpha is 0, so the cut at the centre ``c`` is the tangent
    plane there, tight at ``c`` up to rounding (1e-9 relative)."""
    expr = FUNCS["convex"]
    p, model = _setup(expr)
    A = AlphaCuts(model, 3, 100000)
    rng = np.random.default_rng(5)
    lo, hi = _boxes(rng, 50)
    node, S, rhs = A(torch.as_tensor(lo), torch.as_tensor(hi),
                     torch.zeros(0, dtype=torch.float64))[0]
    c = lo + 0.5 * (hi - lo)
    f = sp.lambdify((x, y, z), expr, "numpy")
    fc = f(*c)
    assert np.allclose(S[0], 2 * c[0]) and np.allclose(S[1], 2 * c[1])
    assert np.allclose(S[2], np.exp(c[2]))
    tight = fc - (S * c).sum(0) - rhs
    assert np.all(tight >= 0)
    assert np.all(tight <= 1e-9 * (1 + np.abs(fc) + (np.abs(S * c)).sum(0)))


def test_linear_functions_get_no_cut_and_a_nan_box_none():
    """A linear objective has exact rows already (no cut); a box where ``log`` may be
    undefined (``x <= 0`` in it) gets no cut there."""
    p, model = _setup(2 * x - y + z)
    assert AlphaCuts(model, 3, 100000).funcs == []
    p, model = _setup(sp.log(x) * y)
    A = AlphaCuts(model, 3, 100000)
    lo = np.array([[-1.0, 0.5], [0.0, 0.0], [0.0, 0.0]])
    hi = np.array([[1.0, 1.0], [1.0, 1.0], [1.0, 1.0]])
    cuts = A(torch.as_tensor(lo), torch.as_tensor(hi), torch.zeros(0, dtype=torch.float64))
    for _, _, rhs in cuts:
        assert rhs[0] == -math.inf and np.isfinite(rhs[1])


@pytest.mark.parametrize("name", ["sin product", "log", "exp bilinear"])
def test_lp_bounds_with_cuts_stay_below_sampled_values(name, monkeypatch):
    """Safe LP bounds of 100 boxes with the cuts are below the objective at 200 points
    of each box, and never below the bound without them (a margin of 1e-6 for the safe
    bounds' rounding); with ``sin``/``cos`` (no rows of their own) the cuts raise the
    bound of a third of these boxes (the small ones are bounded well already), more than
    a fifth asserted."""
    expr = FUNCS[name]
    p = constropt.Problem(expr, [], variables=[x, y, z],
                          bounds={x: (-3, 3), y: (-3, 3), z: (-3, 3)})
    rng = np.random.default_rng(11)
    lo, hi = _boxes(rng, 100)
    P = torch.zeros(0, dtype=torch.float64)
    got = {}
    for on in (False, True):
        monkeypatch.setattr(_lp, "ALPHA_BB", "all" if on else False)
        model = problem_model(p, gradient=False)
        B = _lp.LPBounder(model, model.leaf_targets(p.eq_tol), model.n_params)
        assert (B.alpha is not None) == on
        got[on] = B.box_bounds(torch.as_tensor(lo), torch.as_tensor(hi), P, {})
    f = sp.lambdify((x, y, z), expr, "numpy")
    X = lo + rng.random((200, 3, 100)) * (hi - lo)
    with np.errstate(all="ignore"):
        vals = np.where(np.isfinite(v := f(X[:, 0], X[:, 1], X[:, 2])), v, np.inf).min(0)
    assert np.all(got[True] <= vals)
    assert np.all(np.nan_to_num(got[True], neginf=-1e300) >=
                  np.nan_to_num(got[False], neginf=-1e300) - 1e-6 * (1 + np.abs(vals)))
    if name == "sin product":
        assert np.mean(got[True] > got[False] + 1e-6) > 0.2


@pytest.mark.parametrize("mode, want", [("partial", 1), ("all", 2), (False, 0)])
def test_alpha_bb_modes_choose_their_functions(mode, want, monkeypatch):
    """``"partial"``: only functions with a node that has no rows (``sin``); ``"all"``:
    every nonlinear one; False: none (the default)."""
    monkeypatch.setattr(_lp, "ALPHA_BB", mode)
    p = constropt.Problem(sp.sin(x) * y + z, [x * y - z <= 1], variables=[x, y, z],
                          bounds={x: (-3, 3), y: (-3, 3), z: (-3, 3)})
    model = problem_model(p, gradient=False)
    B = _lp.LPBounder(model, model.leaf_targets(p.eq_tol), model.n_params)
    assert (len(B.alpha.funcs) if B.alpha is not None else 0) == want
