"""Benchmark collection of published constrained optimization problems.

Every problem is declared in sympy and carries its published optimum (or best
known value), a best known point and its source, in a :class:`BenchmarkProblem`
record; :meth:`BenchmarkProblem.problem` turns it into a
:class:`constropt.Problem`.

The collection
--------------
CEC 2006 (``"G01"`` ... ``"G24"``, without ``"G20"``)
    The 24 problems of the CEC 2006 special session on constrained
    real-parameter optimization: Liang, J. J., Runarsson, T. P.,
    Mezura-Montes, E., Clerc, M., Suganthan, P. N., Coello Coello, C. A. and
    Deb, K. (2006). *Problem Definitions and Evaluation Criteria for the CEC
    2006 Special Session on Constrained Real-Parameter Optimization.*
    Technical report, Nanyang Technological University, Singapore. The
    definitions, bounds, f(x*) and x* are the report's, cross-checked against
    the organizers' C code. An equality counts as satisfied when
    ``|h(x)| <= 1e-4`` (``eq_tol``), as in the report: several published x*
    (G03, G05, G11, G13-G15, G17, G21-G23) rely on that tolerance, and so
    G03's and G11's f* lie slightly below their exact optima.

    G20 is left out: no feasible point of it is known, and the report's x*
    (f = 0.2049794002) violates its inequalities, so it cannot serve as a
    verified optimum. ``get("G20")`` raises :class:`~constropt.ProblemError`
    and says so. G22 is included: its x* (a best known value, not an
    optimum) meets every constraint within the report's tolerances.

Engineering design
    ``"welded_beam"``, ``"pressure_vessel"``, ``"tension_compression_spring"``
    and ``"speed_reducer"``: the welded beam in Coello Coello's (2000)
    seven-constraint form (f* = 1.7248523); the pressure vessel of Sandgren
    (1990) and Kannan and Kramer (1994) with whole plates of 0.0625 in
    (integer variables, f* = 6059.714335); the tension/compression spring of
    Belegundu (1982) (f* = 0.012665233); Golinski's (1973) speed reducer with
    an integer number of teeth (f* = 2994.4710661).

CEC 2020 real-world problems (``"RC01"`` ... ``"RC29"``, 20 of the 57)
    The closed-form problems of up to 30 variables of Kumar, A., Wu, G., Ali,
    M. Z., Mallipeddi, R., Suganthan, P. N. and Das, S. (2020). *A test-suite
    of non-convex constrained optimization problems from the real-world and
    some baseline results.* Swarm and Evolutionary Computation 56: 100693:
    industrial chemical processes (RC01-RC05, equality-heavy), process
    synthesis with binaries (RC08-RC14) and mechanical design (RC15, RC16,
    RC19-RC21, RC23, RC25, RC29), with the paper's best known values (Table 3)
    and points computed for this collection, tagged ``"cec2020"``. Definitions
    follow the suite's reference code where it differs from the paper; the
    integers it rounds from a continuous box are ``integer=True`` variables.
    RC17, RC18 and RC32 are the spring, the pressure vessel and G04 above; the
    modules list the others left out and why. ``"gear_train"`` is Sandgren's
    integer gear train (RC31 relaxes it to reals).

MINLPLib (``"ex1221"`` ... ``"ex1226"``, ``"st_e27"``, ``"st_e38"``, ``"st_e40"``,
``"nvs01"``, ``"nvs03"``, ``"nvs21"``)
    Small mixed-integer instances with proven optimal values, tagged
    ``"minlplib"``: five from Floudas (1995), three from the BARON book
    (st_e38 is Sandgren's pressure vessel in its original form, st_e40 a
    discrete truss whose areas are confined to a set by product equalities)
    and three of Gupta and Ravindran's (1985) ``nvs`` problems.

Hock and Schittkowski (``"HS035"`` ... ``"HS111"``, 14 problems)
    Classic nonlinear programming test problems not already in CEC 2006,
    tagged ``"hock-schittkowski"``.

The original experiment
    ``"blog_example2"`` and ``"blog_example3"``: the two constrained examples of the
    blog post constropt grew out of, in its search box ``[-25, 25]``.

Each record's ``source`` gives the full citation, the form used where the
literature has several, and any erratum found while checking the published
values. ``x_star`` satisfies every constraint: inequalities to within
``x_star_tol`` (relative to the size of their terms, for the digits to which
x* is printed) and equalities to within ``eq_tol`` (up to the rounding of the
printed digits); the objective at ``x_star`` matches ``f_star`` to at least
1e-4 relative (1e-9 for all but G17, see its ``source``).

Examples
--------
>>> from constropt import benchmarks
>>> benchmarks.names()[:3]
('blog_example2', 'blog_example3', 'G01')
>>> g07 = benchmarks.get("g07")
>>> g07.f_star
24.30620906818
>>> [p.name for p in benchmarks.collection(("engineering", "mixed-integer"))]
['pressure_vessel', 'speed_reducer', 'gear_train']
"""

from __future__ import annotations  # noqa: I001  (registration order, below, is not alphabetical)

from . import (  # noqa: F401  (registration order is the order of names())
    _blog,
    _cec2006,
    _cec2006_g13_g24,
    _engineering,
    _cec2020_process,
    _cec2020_design,
    _minlp,
    _minlp_baron,
    _hs,
)
from ._base import BenchmarkProblem, collection, get, names

__all__ = ["BenchmarkProblem", "names", "get", "collection"]
