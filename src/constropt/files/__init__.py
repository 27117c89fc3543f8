"""Problem files: optimization problems written in TOML or YAML, parsed safely.

A problem file states the objective and the constraints as strings in ordinary
math syntax. The strings are **never executed**: they are parsed with Python's
``ast`` module and every node is checked against an allow-list before sympy
objects are built from it, so a problem file from an untrusted source cannot run
code (no ``eval``, ``exec``, ``compile`` or ``sympify`` of the text).

File format
-----------
TOML (``examples/problems/blog_example2.toml``)::

    name = "blog example 2"
    sense = "maximize"            # or "minimize" (the default); also "max"/"min"
    objective = "x**2 + 2*y**2 + 3*z**2 + 4*x*y - 5*y*z"
    constraints = ["x >= 1", "3 < y <= 7", "z < 0", "x + y + z >= 3", "x**2 + z**2 <= 10"]

    [variables]                    # the order here is the variable order
    x = {}                         # no bounds: the solver picks a default box
    y = { lower = -25, upper = 25 }
    z = [-25, 25]                  # the same as { lower = -25, upper = 25 }
    n = { lower = 0, upper = 10, integer = true }

    [parameters]                   # optional; constants substituted at solve time
    r = 3.1622776601683795
    r2 = "r**2 / 2"                # may use constants and earlier parameters

    [expressions]                  # optional; named sub-expressions, substituted
    dist = "sqrt(x**2 + y**2)"     # may use variables, parameters, earlier expressions

    [options]                      # optional; passed through as solver keywords
    seed = 0

Top-level keys (any other key is an error naming it):

``objective`` (required)
    An expression string (or a number).
``variables`` (required)
    A table ``name -> spec`` in variable order, or a list of names (no bounds).
    A spec is ``{}``, a ``[lower, upper]`` pair or a table with the keys
    ``lower``, ``upper`` and ``integer`` (true/false). A bound is a number or a
    string with a constant expression (``"pi/2"``, ``"2*r"`` using parameters);
    ``"inf"``/``"-inf"`` (or TOML's ``inf``), and a missing bound, mean no bound.
``constraints``
    A list of comparison strings. ``<``, ``<=``, ``>``, ``>=`` and ``==``;
    chained comparisons such as ``"3 < y <= 7"`` and a top-level ``and`` give
    one constraint per comparison; ``or`` and ``not`` combine comparisons into
    one constraint. A comparison that sympy finds always true or always false,
    or that involves no variable, is an error.
``options``
    Keyword options of :func:`constropt.solve`, except those with effects outside
    the solve, which a file from an untrusted source must not choose:
    ``checkpoint``, ``checkpoint_every`` and ``plot`` (paths to write),
    ``callback`` and ``on_generation`` (code to run) raise :class:`constropt.ParseError`
    naming the key; pass them on the command line or as keyword arguments.
``sense``, ``name``, ``parameters``, ``expressions``
    As above. Variable, parameter and expression names are ASCII identifiers
    that are not Python keywords, function names or ``pi``, ``E``, ``e``, ``inf``.

YAML files hold the same keys (``examples/problems/tension_spring.yaml``). They
are read with a safe loader that rejects duplicate keys and aliases (``*name``: nested
aliases let a few hundred bytes expand to billions of nodes) and reads ``1e-4`` as a
number; PyYAML is needed only for YAML files.  Values echoed in error messages are cut
to about 200 characters.

Expression syntax
-----------------
* numbers: integers (exact: ``1/3`` is the rational 1/3) and floats
  (``1e-4``); no complex literals;
* names: declared variables, parameters and expressions; the constants ``pi``,
  ``E`` and ``e``; ``inf`` only in bounds;
* operators: unary ``+``/``-``; ``+ - * / **``; ``%`` (``Mod``); ``//``
  (``floor(a/b)``); comparisons and ``and``/``or``/``not`` in constraints and in
  ``where`` conditions. ``^`` is rejected with a hint to use ``**``;
* functions, called by bare name with positional arguments (the parser names of
  constropt's function table; ``log(x, base)`` takes a base, ``heaviside(x, h0)``
  the value at 0):
  {FUNCTIONS};
  and ``where(cond, a, b)`` (``a`` where ``cond`` holds, else ``b``; a sympy
  ``Piecewise``);
* an expression may span several lines (e.g. a TOML ``\"\"\"...\"\"\"`` string) as
  long as its parentheses balance; ``#`` starts a comment.

Everything else is rejected with :class:`constropt.ParseError` naming the
construct and its line and column: attribute access, subscripts, strings,
lambdas, comprehensions, f-strings, keyword or ``*`` arguments, calls of
anything but an allowed function name, unknown names, ``:=``, ``a if c else b``
and so on. Texts over 100,000 characters, nesting deeper than 100 levels,
constants beyond ``2**4096`` (``10**10**10``) and named expressions that would
expand to more than 200,000 tree nodes in one text are rejected as well, so
parsing cannot hang.

Reading a file gives a :class:`ProblemSpec`: sympy objects (``real=True``
symbols, ``integer=True`` for integer variables) that
:meth:`ProblemSpec.to_problem` turns into a :class:`constropt.Problem`. Error
messages start with the file name and the key at fault, then the expression,
the reason and the position inside the expression, e.g.::

    problem.toml: constraints[1] "x + foo >= 1": unknown name 'foo'; declared
    names are x, y, z; constants are pi, E, e (line 1, column 5)
"""

from ._ast import parse_constant, parse_constraint, parse_expression
from ._names import function_list
from ._spec import ProblemSpec, load_problem, loads_problem

# the list of functions comes from the function table
__doc__ = __doc__.replace("{FUNCTIONS}", function_list())

__all__ = ["ProblemSpec", "load_problem", "loads_problem", "parse_expression",
           "parse_constraint", "parse_constant"]
