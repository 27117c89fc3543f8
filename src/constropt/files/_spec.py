"""Problem files: validation of the loaded data and the :class:`ProblemSpec` result."""

from __future__ import annotations

import keyword
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import sympy

from constropt._errors import ParseError
from constropt.problem._problem import Problem

from ._ast import build_constant, build_constraint, build_expression
from ._brief import brief
from ._builder import suggest
from ._names import RESERVED_NAMES
from ._numeric import MAX_NUMBER_BITS, SizeBudget
from ._readers import MAX_FILE_BYTES, read_toml, read_yaml

__all__ = ["ProblemSpec", "load_problem", "loads_problem", "UNTRUSTED_OPTIONS"]

_TOP_KEYS = ("name", "sense", "objective", "constraints", "variables", "parameters",
             "expressions", "options")
_VARIABLE_KEYS = ("lower", "upper", "integer")
_SENSES = {"minimize": False, "minimise": False, "min": False,
           "maximize": True, "maximise": True, "max": True}
#: Options a problem file may not set, with the reason: each has effects outside the
#: solve (writes files or runs code).  They remain available as command-line
#: flags and as keyword arguments of :func:`constropt.solve`.
UNTRUSTED_OPTIONS = {
    "checkpoint": "chooses a path to write",
    "checkpoint_every": "belongs with checkpoint, which chooses a path to write",
    "plot": "chooses a path to write",
    "callback": "would be code to run",
    "on_generation": "would be code to run",
}
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_FORMATS = {"toml": read_toml, "yaml": read_yaml, "yml": read_yaml}


@dataclass(frozen=True)
class ProblemSpec:
    """A problem read from a file: sympy objects plus solver options.

    Attributes
    ----------
    name : str
        ``name`` from the file, else the file's stem, else ``"problem"``.
    objective : sympy.Expr
        The objective, with ``[expressions]`` substituted; parameters stay symbols.
    constraints : tuple of sympy.logic.boolalg.Boolean
        One relational per comparison: a chained comparison such as
        ``"3 < y <= 7"`` contributes two entries, in file order.
    variables : tuple of sympy.Symbol
        In file order; ``integer=True`` symbols for integer variables and
        ``real=True`` symbols for the others.
    bounds : dict
        ``Symbol -> (lower, upper)`` with floats or ``None`` for "no bound", only
        for variables that have at least one finite bound.  A side whose text uses a
        parameter is a sympy expression in the parameter symbols, so it follows the
        parameter values given to ``solve``/``solve_batch``.
    parameters : dict
        ``Symbol -> float`` values, substituted at solve time.
    maximize : bool
        True when ``sense = "maximize"``.
    options : dict
        The ``[options]`` table, unchanged, for the solver's keyword arguments.
    path : str or None
        The file the problem came from.
    """

    name: str
    objective: sympy.Expr
    constraints: tuple = ()
    variables: tuple = ()
    bounds: dict = field(default_factory=dict, hash=False)
    parameters: dict = field(default_factory=dict, hash=False)
    maximize: bool = False
    options: dict = field(default_factory=dict, hash=False)
    path: str | None = None

    def to_problem(self):
        """Build a :class:`constropt.Problem` from this specification.

        Returns
        -------
        constropt.Problem
            ``Problem(objective, constraints, variables=..., bounds=...,
            maximize=..., parameters=...)``. ``options`` is not applied; pass it
            to the solver, e.g. ``constropt.solve(problem, **spec.options)``.
        """
        return Problem(self.objective, self.constraints, variables=self.variables,
                       bounds=self.bounds, maximize=self.maximize,
                       parameters=self.parameters or None)


def load_problem(path: str | os.PathLike) -> ProblemSpec:
    """Read a problem file (``.toml``, ``.yaml`` or ``.yml``).

    Parameters
    ----------
    path : str or os.PathLike
        The file. Its suffix selects the format.

    Returns
    -------
    ProblemSpec

    Raises
    ------
    constropt.ParseError
        For an unsupported suffix, an unreadable, too large (over 10 MiB) or
        non-UTF-8 file, a syntax error (with line and column) or any invalid
        content; messages start with the file name and the key at fault, e.g.
        ``problem.toml: constraints[2] "x + foo >= 1": unknown name 'foo' ...``.
    """
    file = Path(path)
    source = str(path)
    fmt = file.suffix.lower().lstrip(".")
    if fmt not in _FORMATS:
        raise ParseError(f"{source}: unsupported problem file type {file.suffix or '(none)'!r}; "
                         "use .toml, .yaml or .yml")
    try:
        with open(file, "rb") as handle:
            raw = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise ParseError(f"{source}: cannot read problem file: {exc.strerror or exc}") from exc
    if len(raw) > MAX_FILE_BYTES:
        raise ParseError(f"{source}: problem file larger than {MAX_FILE_BYTES} bytes")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ParseError(f"{source}: problem file is not valid UTF-8 ({exc.reason} "
                         f"at byte {exc.start})") from None
    return _build(_FORMATS[fmt](text, source), source=source, path=source, stem=file.stem)


def loads_problem(text: str, format: str = "toml", *, source: str = "<string>") -> ProblemSpec:
    """Read a problem from TOML or YAML text.

    Parameters
    ----------
    text : str
        The file contents.
    format : {"toml", "yaml"}, optional
        The format of ``text`` (``"yml"`` is accepted too).
    source : str, optional
        Name used at the start of error messages.

    Returns
    -------
    ProblemSpec
        With ``path=None``.

    Raises
    ------
    constropt.ParseError
        As for :func:`load_problem`.
    """
    reader = _FORMATS.get(str(format).lower())
    if reader is None:
        raise ParseError(f"unknown problem format {format!r}; use 'toml' or 'yaml'")
    if not isinstance(text, str):
        raise ParseError(f"{source}: expected the problem text as str, got {type(text).__name__}")
    return _build(reader(text, source), source=source, path=None, stem=None)


# -- validation ------------------------------------------------------------------

def _snippet(text: str) -> str:
    first = text.strip().splitlines()[0] if text.strip() else text
    more = len(first) > 60 or "\n" in text.strip()
    return '"' + first[:60] + (' ..."' if more else '"')


class _Checker:
    def __init__(self, source: str) -> None:
        self.source = source
        self.budget = SizeBudget()  # shared by every expression of the file
        self.raw_sides: tuple = (None, None)  # the texts of the last bounds() checked

    def fail(self, key: str, message: str) -> ParseError:
        if len(key) > 120:  # a key is echoed too: never a huge one
            key = key[:117] + "..."
        return ParseError(f"{self.source}: {key}: {message}")

    def wrap(self, key: str, text: str, err: ParseError) -> ParseError:
        detail = getattr(err, "detail", None) or str(err)
        return ParseError(f"{self.source}: {key} {_snippet(text)}: {detail}", text=err.text,
                          lineno=err.lineno, col_offset=err.col_offset)

    def name(self, kind: str, key: str, name: Any, taken: dict[str, str]) -> str:
        if not isinstance(name, str):
            raise self.fail(key, f"{kind} names must be strings, got {brief(name)}")
        if not _NAME.match(name) or keyword.iskeyword(name):
            raise self.fail(key, f"{kind} name {brief(name)} is not a valid identifier "
                                 "(ASCII letters, digits and '_', not a Python keyword)")
        if name in RESERVED_NAMES:
            raise self.fail(key, f"{kind} name {brief(name)} is reserved (a function or "
                                 "constant name)")
        if name in taken:
            raise self.fail(key, f"{brief(name)} is already declared as a {taken[name]}")
        taken[name] = kind
        return name

    def table(self, data: dict, key: str, kinds: tuple = (dict,)) -> Any:
        value = data.get(key)
        if value is not None and not isinstance(value, kinds):
            want = " or ".join("a table" if k is dict else "a list" for k in kinds)
            raise self.fail(key, f"expected {want}, got {type(value).__name__}")
        return value

    def number(self, key: str, value: Any, names: dict, *, allow_inf: bool) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise self.fail(key, f"expected a number or an expression string, got {brief(value)}")
        if isinstance(value, str):
            try:
                return build_constant(value, names, allow_inf=allow_inf, budget=self.budget)
            except ParseError as err:
                raise self.wrap(key, value, err) from None
        self.integer_size(key, value)
        try:
            result = float(value)
        except OverflowError:
            result = math.nan
        if math.isnan(result) or (math.isinf(result) and not allow_inf):
            raise self.fail(key, f"expected a finite number within the range of double "
                                 f"precision, got {brief(value)}")
        return result

    def integer_size(self, key: str, value: Any) -> None:
        """Refuse an integer beyond ``2**MAX_NUMBER_BITS``, as in expression texts."""
        if isinstance(value, int) and value.bit_length() > MAX_NUMBER_BITS:
            raise self.fail(key, f"integer too large (more than {MAX_NUMBER_BITS} bits)")

    def bounds(self, name: str, raw: Any, names: dict) -> tuple[float | None, float | None, bool]:
        key = f"variables.{name}"
        integer = False
        if raw is None:
            lower = upper = None
        elif isinstance(raw, (list, tuple)):
            if len(raw) != 2:
                raise self.fail(key, "a bounds pair needs exactly 2 values [lower, upper], "
                                     f"got {len(raw)}")
            lower, upper = raw
        elif isinstance(raw, dict):
            for k in raw:
                if k not in _VARIABLE_KEYS:
                    raise self.fail(key, f"unknown key {brief(k)}{suggest(k, _VARIABLE_KEYS)}; "
                                         "allowed keys are " + ", ".join(_VARIABLE_KEYS))
            lower, upper, integer = raw.get("lower"), raw.get("upper"), raw.get("integer", False)
            if not isinstance(integer, bool):
                raise self.fail(f"{key}.integer", f"expected true or false, got {brief(integer)}")
        else:
            raise self.fail(key, "expected a table like { lower = 0, upper = 1, integer = false }, "
                                 f"a [lower, upper] pair or {{}}, got {brief(raw)}")
        lo = None if lower is None else self.number(f"{key}.lower", lower, names, allow_inf=True)
        hi = None if upper is None else self.number(f"{key}.upper", upper, names, allow_inf=True)
        self.raw_sides = (lower, upper)
        if lo == math.inf:
            raise self.fail(f"{key}.lower", "the lower bound cannot be +inf")
        if hi == -math.inf:
            raise self.fail(f"{key}.upper", "the upper bound cannot be -inf")
        lo = None if lo == -math.inf else lo
        hi = None if hi == math.inf else hi
        if lo is not None and hi is not None:
            if lo > hi:
                raise self.fail(key, f"lower bound {lo!r} is greater than upper bound {hi!r}")
            if integer and math.ceil(lo) > math.floor(hi):
                raise self.fail(key, f"no integer lies between the bounds {lo!r} and {hi!r}")
        return lo, hi, integer


def _build(data: Any, *, source: str, path: str | None, stem: str | None) -> ProblemSpec:
    """The checked problem of a file's data, checked in the order of its sections (the
    first error is reported): top-level keys, name and sense, variables and parameters,
    expressions, the objective, the constraints, the options."""
    check = _Checker(source)
    name, sense = _top(check, data, stem)
    taken: dict[str, str] = {}
    variables, bounds, parameters = _declarations(check, data, taken)
    names: dict[str, sympy.Basic] = {s.name: s for s in variables}
    names.update({s.name: s for s in parameters})
    for ename, text in (check.table(data, "expressions") or {}).items():
        check.name("expression", f"expressions.{ename}", ename, taken)
        names[ename] = _expression(check, f"expressions.{ename}", text, names)
    if "objective" not in data:
        raise check.fail("objective", "missing; give the objective as a string, "
                                      "e.g. objective = \"x**2 + y**2\"")
    objective = _expression(check, "objective", data["objective"], names)
    constraints = _constraints(check, data, names, set(variables))
    options = _options(check, data)
    return ProblemSpec(name=name, objective=objective, constraints=tuple(constraints),
                       variables=tuple(variables), bounds=bounds, parameters=parameters,
                       maximize=_SENSES[sense.strip().lower()], options=dict(options), path=path)


def _top(check: _Checker, data: Any, stem: str | None) -> tuple[str, str]:
    """The top-level keys checked; the problem's name and sense."""
    if not isinstance(data, dict) or not data:
        raise ParseError(f"{check.source}: expected a table of problem keys (objective, "
                         f"variables, ...), got "
                         f"{'nothing' if not data else type(data).__name__}")
    for key in data:
        if key not in _TOP_KEYS:
            raise check.fail(str(key), f"unknown top-level key{suggest(key, _TOP_KEYS)}; "
                                       "allowed keys are " + ", ".join(_TOP_KEYS))
    name = data.get("name", stem or "problem")
    if not isinstance(name, str):
        raise check.fail("name", f"expected a string, got {brief(name)}")
    sense = data.get("sense", "minimize")
    if not isinstance(sense, str) or sense.strip().lower() not in _SENSES:
        raise check.fail("sense", f"expected 'minimize' or 'maximize', got {brief(sense)}")
    return name, sense


def _declarations(check: _Checker, data: Any, taken: dict):
    """``(variables, bounds, parameters)``: the variables' names checked first, then the
    parameters (their values), then each variable's bounds (which may use them)."""
    raw_vars = check.table(data, "variables", (dict, list))
    if not raw_vars:
        raise check.fail("variables", "declare at least one variable")
    if isinstance(raw_vars, dict):
        entries = list(raw_vars.items())
    else:
        entries = [(v, None) for v in raw_vars]
    for var_name, _ in entries:
        check.name("variable", f"variables.{var_name}", var_name, taken)
    param_values: dict[str, sympy.Basic] = {}
    parameters: dict[sympy.Symbol, float] = {}
    for pname, raw in (check.table(data, "parameters") or {}).items():
        check.name("parameter", f"parameters.{pname}", pname, taken)
        value = check.number(f"parameters.{pname}", raw, param_values, allow_inf=False)
        param_values[pname] = sympy.Float(value)
        parameters[sympy.Symbol(pname, real=True)] = value
    variables, bounds = [], {}
    param_symbols = {s.name: s for s in parameters}
    for var_name, raw in entries:
        lo, hi, integer = check.bounds(var_name, raw, param_values)
        # a side that uses a parameter stays an expression in it: it follows the parameter
        # values of each solve (and each instance of solve_batch), not the file's value
        lo, hi = (_parametric_side(check, side, value, param_symbols)
                  for side, value in zip(check.raw_sides, (lo, hi)))
        kind = {"integer": True} if integer else {"real": True}
        symbol = sympy.Symbol(var_name, **kind)
        variables.append(symbol)
        if lo is not None or hi is not None:
            bounds[symbol] = (lo, hi)
    return variables, bounds, parameters


def _constraints(check: _Checker, data: Any, names: dict, var_set: set) -> list:
    """The constraints, each a string that involves a variable."""
    constraints = []
    for i, text in enumerate(check.table(data, "constraints", (list,)) or ()):
        key = f"constraints[{i}]"
        if not isinstance(text, str):
            raise check.fail(key, f"expected a string such as \"x + y <= 1\", got {brief(text)}")
        try:
            parts = build_constraint(text, names, budget=check.budget)
        except ParseError as err:
            raise check.wrap(key, text, err) from None
        for part in parts:
            if not part.free_symbols & var_set:
                raise check.fail(f"{key} {_snippet(text)}",
                                 f"'{part}' does not involve any variable")
        constraints.extend(parts)
    return constraints


def _options(check: _Checker, data: Any) -> dict:
    """The file's options: names as strings, none of the options a file may not set."""
    options = check.table(data, "options") or {}
    for key in options:
        if not isinstance(key, str):
            raise check.fail("options", f"option names must be strings, got {brief(key)}")
        if key in UNTRUSTED_OPTIONS:
            raise check.fail(f"options.{key}", f"not allowed in a problem file: {key} "
                                               f"{UNTRUSTED_OPTIONS[key]}; a file may come from "
                                               "an untrusted source, so pass it on the command "
                                               "line or as a keyword argument of solve()")
    return options


def _parametric_side(check: _Checker, text: Any, value, param_symbols: dict):
    """The bound ``value`` (already checked as a number at the file's parameter values),
    or, when its text uses a parameter, the expression in the parameter symbols."""
    if value is None or not isinstance(text, str) or not param_symbols:
        return value
    try:
        expr = build_expression(text, param_symbols, budget=check.budget)
    except ParseError:  # e.g. "-inf": only a constant
        return value
    return expr if expr.free_symbols else value


def _expression(check: _Checker, key: str, text: Any, names: dict) -> sympy.Expr:
    if isinstance(text, bool) or not isinstance(text, (str, int, float)):
        raise check.fail(key, f"expected an expression string, got {brief(text)}")
    if not isinstance(text, str):
        if isinstance(text, int):
            check.integer_size(key, text)
            return sympy.Integer(text)
        return sympy.Float(check.number(key, text, {}, allow_inf=False))
    try:
        return build_expression(text, names, budget=check.budget)
    except ParseError as err:
        raise check.wrap(key, text, err) from None
