"""The polish on badly scaled equality systems (issue 14, G22): SLSQP over the box scaled
to [0, 1] with its rows scaled, and a restoration whose steps are measured in box units
and never pushed into a side of the box."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

import constropt
from _moves import polish as _polish_from
from constropt.benchmarks import get
from constropt.finish._budget import Budget
from constropt.finish._verdict import check_point
from constropt.local._newton import restore

# where seed 1's search ended on G22 (defaults, 500,000 evaluations): infeasible, total
# violation 5.1e4; genes from 1 to 2e7, equality rows with coefficients 1e5 and 1
G22_SEARCH_END = [
    67.93548718521583, 29575.467212619125, 37092.86527096244, 42064.65367215204,
    9398951.544452433, 8036244.968676893, 22593481.433205467, 193.87990586891675,
    274.20140820886587, 235.97447208747596, 359.7053806346764, 434.01949121632083,
    2.648266110897848, 2.7100227071963823, 13.428118865084826, 165.70041829375754,
    159.83958080025542, 5.29739998621755, -4.595992435111883, 5.422360931097586,
    -4.605015046519062, 5.95943739504209]


def _polish_end(name, end, budget):
    """``polish_from`` on benchmark ``name`` from the search end ``end`` (also the
    incumbent).  Returns ``(bench, f0, V0, x, f, V, stop)``: the end's check, then the
    polish's result."""
    bench = get(name)
    p = bench.problem()
    pv = p.parameter_vector(None)
    x0 = np.array(end)
    f0, V0 = check_point(p, x0, pv)
    x, f, V, _, stop = _polish_from(p, x0, pv, x0, f0, V0, budget, 0)
    return bench, f0, V0, x, f, V, stop


def test_g22_polished_from_the_search_end_to_the_best_known_value():
    # before the scaling the same call ended where it started (infeasible): SLSQP ran
    # its 200 iterations and the restoration's least-norm steps were eaten by the box
    bench, _, V0, x, f, V, stop = _polish_end("G22", G22_SEARCH_END, 20_000)
    assert V0.sum() > 1e4
    assert not stop and np.all(V == 0)
    # the band |h| <= 1e-4 admits values below the best known 236.4309755 (236.3132 is
    # reached); the CEC rule asks f - f* <= 1e-4
    assert f <= bench.f_star + 1e-4
    assert f >= 236.3  # the band cannot give more than this (x* moves by ~1e-3 relative)


def test_restore_moves_the_free_gene_when_the_heavy_one_sits_on_its_bound():
    # x + 1e5 y = 3.3e7 with y on its upper bound 300: the least-norm step in raw units
    # is almost all y, which the box clips away; in box units with y held, x moves
    x, y = sp.symbols("x y", real=True)
    p = constropt.Problem(x, [sp.Eq(x + 100000 * y - 33000000, 0)],
                          bounds={x: (0, 4e7), y: (100, 300)})
    start = np.array([2.9e6, 300.0])   # h = -1e5: violated, y on its side
    xr, used = restore(p, start, p.parameter_vector(None))
    _, V = check_point(p, xr, p.parameter_vector(None))
    assert np.all(V == 0)
    assert xr[1] == pytest.approx(300.0, abs=1e-9)  # held on its side (a clip at most)
    # restore aims at the edge of the band |h| <= 1e-4 (99.9% of it)
    assert xr[0] == pytest.approx(3e6, abs=1e-4)


def test_moves_polish_in_scaled_form_where_the_box_widths_span_far(monkeypatch):
    # the moves after the polish (bound flips, integer moves) use the same form as the
    # polish: unscaled, each of G22's 37 bound flips ran SLSQP to its iteration limit
    from constropt.finish import _intsearch
    from constropt.finish._intsearch import try_move
    from constropt.local._polish import wide_spread

    seen = []
    real = _intsearch.polish

    def spy(*args, **kwargs):
        seen.append(kwargs.get("scaled", False))
        return real(*args, **kwargs)

    monkeypatch.setattr(_intsearch, "polish", spy)
    g22 = get("G22").problem()
    assert wide_spread(g22)
    x0 = np.array(G22_SEARCH_END)
    try_move(g22, x0, g22.parameter_vector(None), Budget(2_000))
    assert seen and all(seen)

    x, y = sp.symbols("x y")
    narrow = constropt.Problem(x**2 + y**2, [x + y >= 1], variables=[x, y],
                               bounds={x: (-5, 5), y: (-5, 5)})
    assert not wide_spread(narrow)
    seen.clear()
    try_move(narrow, np.array([1.0, 1.0]), narrow.parameter_vector(None), Budget(2_000))
    assert seen and not any(seen)


# where seed 0 of the GA ended on RC29 (500,000 evaluations): feasible, f* + 385.7;
# objective 3e6 with partials up to 1e7
RC29_GA_END = [49.97608630096441, 1.1741620314794816, 24.727494851955130, 0.37855091660421064]


def test_rc29_the_scaled_form_runs_where_slsqp_as_given_stops_without_a_step():
    # as given, SLSQP reported success after five iterations and returned the start;
    # before, that ended the polish at f* + 385.7 (and at f* + 2.8e4 from seed 2's end)
    bench, f0, V0, x, f, V, stop = _polish_end("RC29", RC29_GA_END, 50_000)
    assert np.all(V0 == 0) and f0 - bench.f_star > 300
    assert not stop and np.all(V == 0)
    # the CEC rule: f - f* <= 1e-4 (1e-11 of f*); 8e-5 is reached here.  1e-3 leaves room
    # for another BLAS's last digits and still fails the old +385.7 by far
    assert f - bench.f_star <= 1e-3


def test_an_slsqp_end_outside_that_projects_back_does_not_settle_the_polish(monkeypatch):
    # only SLSQP's own feasible end (or one a hair outside) settles a form; an end
    # farther outside goes on to the next margin and form even where its projection is
    # feasible
    from constropt.finish import _polishing

    seen = []
    real = _polishing.polish

    def spy(problem, start, pvec, **kw):
        seen.append((kw["scaled"], kw["margin"], kw.get("info")))
        return real(problem, start, pvec, **kw)

    monkeypatch.setattr(_polishing, "polish", spy)
    ga_seed_1_end = [49.99999999651717, 1.2159384998800793, 23.538664541298157,
                     0.4785045961606251]  # f* + 1.35e4
    bench, _, _, x, f, V, _ = _polish_end("RC29", ga_seed_1_end, 50_000)
    assert [s for s, _, _ in seen][-1] is True  # the scaled form ran last
    assert seen[0][:2] == (False, 0.0)
    assert np.all(V == 0) and f - bench.f_star <= 1e-3


# where seed 0 of the GA ended on G21 (500,000 evaluations): infeasible (0.15), x2 near
# its lower bound 0, where x2**0.6 has an infinite derivative
G21_GA_END = [166.24968765257773, 4.679594868246597e-10, 11.616140532635065,
              100.0234477902884, 6.533048305286124, 6.068402688610067, 6.21459999210484]


def test_g21_a_gene_on_a_side_with_an_infinite_partial_is_held():
    # x2 on its lower side 0, where x2**0.6 has an infinite partial: SLSQP cannot move it
    # (a singular matrix at every margin and form, 6e-4 above the optimum); the polish
    # holds it there and reaches the optimum with the other genes.  The start is the GA
    # end with x2 put on its side: from the GA end itself (x2 = 4.7e-10) whether SLSQP
    # reaches the side depends on the BLAS (with two OpenBLAS threads it stopped at
    # x2 = 0.0027, f = 197.33), which is not what this test is about
    from constropt.local._polish import singular_sides

    start = list(G21_GA_END)
    start[1] = 0.0
    bench, _, _, x, f, V, stop = _polish_end("G21", start, 50_000)
    p = bench.problem()
    pv = p.parameter_vector(None)
    assert singular_sides(p, np.array(start), pv)[0].tolist() == [False, True] + [False] * 5
    assert not stop and np.all(V == 0)
    # held: x2 stays on its side (the tolerance only admits a rounding-level clip to
    # the box; a gene SLSQP moved would be ~1e-3 away)
    assert abs(x[1]) <= 1e-12
    assert singular_sides(p, x, pv)[0].tolist() == [False, True] + [False] * 5
    # f* is the best known value, within the band |h| <= 1e-4; the CEC rule is 1e-4
    assert f - bench.f_star <= 1e-4


def test_polish_holds_a_gene_whose_partial_is_infinite_on_its_side():
    x, y, z = sp.symbols("x y z", real=True)
    # y**0.6 at y = 0: infinite partial; the optimum keeps y = 0 and moves x and z
    p = constropt.Problem(y**sp.Rational(3, 5) + (x - 2) ** 2 + (z - x) ** 2,
                          [x + z <= 10], bounds={x: (-5, 5), y: (0, 5), z: (-5, 5)})
    pv = p.parameter_vector(None)
    from constropt.local._polish import polish

    xs, used = polish(p, np.array([0.0, 0.0, 0.0]), pv, margin=0.0)
    assert used > 1
    assert abs(xs[1]) <= 1e-12  # held on its side (rounding-level clip to the box at most)
    assert xs[[0, 2]] == pytest.approx([2.0, 2.0], abs=1e-6)
