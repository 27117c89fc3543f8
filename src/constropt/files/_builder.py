"""The tree walker that checks a parsed ``ast`` and turns it into sympy objects.

:class:`Builder` works in two passes over a tree from ``ast.parse(..., mode="eval")``:
:meth:`Builder.validate` checks every node iteratively against the allow-list
(node types, operators, literal types, names, functions of :mod:`._names`, arity,
nesting depth);
:meth:`Builder.build` then constructs sympy objects from the checked tree, with
the size guards of :mod:`._numeric` around every operation.
"""

from __future__ import annotations

import ast
import difflib
import math
from collections.abc import Mapping
from typing import NoReturn

import sympy

from constropt._errors import ParseError

from . import _numeric
from ._names import CONSTANTS, FUNCTIONS, INF
from ._numeric import NumberTooLarge

__all__ = ["Builder", "MAX_DEPTH", "make_error", "suggest"]

MAX_DEPTH = 100

_RELATIONS = {ast.Lt: sympy.Lt, ast.LtE: sympy.Le, ast.Gt: sympy.Gt, ast.GtE: sympy.Ge,
              ast.Eq: sympy.Eq}
_ARITH_OPS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow, ast.Mod, ast.FloorDiv)
_OP_TEXT = {ast.BitXor: "^", ast.BitAnd: "&", ast.BitOr: "|", ast.LShift: "<<",
            ast.RShift: ">>", ast.MatMult: "@", ast.Invert: "~", ast.NotEq: "!=",
            ast.Is: "is", ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in"}
_OP_HINT = {ast.BitXor: " (use '**' for powers)", ast.BitAnd: " (use 'and')",
            ast.BitOr: " (use 'or')", ast.Invert: " (use 'not')",
            ast.NotEq: " (a constraint cannot be 'not equal')"}
_FORBIDDEN = {  # node type -> (what, hint)
    ast.Attribute: ("attribute access", ""), ast.Subscript: ("subscript / indexing 'a[...]'", ""),
    ast.Lambda: ("a lambda expression", ""), ast.ListComp: ("a list comprehension", ""),
    ast.SetComp: ("a set comprehension", ""), ast.DictComp: ("a dict comprehension", ""),
    ast.GeneratorExp: ("a generator expression", ""), ast.JoinedStr: ("an f-string", ""),
    ast.FormattedValue: ("an f-string", ""), ast.NamedExpr: ("an assignment expression ':='", ""),
    ast.IfExp: ("a conditional expression 'a if c else b'", " (use where(c, a, b))"),
    ast.List: ("a list '[...]'", ""), ast.Tuple: ("a tuple (comma-separated values)", ""),
    ast.Set: ("a set '{...}'", ""), ast.Dict: ("a dict '{...}'", ""),
    ast.Starred: ("'*' unpacking", ""), ast.Await: ("'await'", ""), ast.Yield: ("'yield'", ""),
    ast.YieldFrom: ("'yield from'", ""), ast.Slice: ("a slice", ""),
}


def make_error(message: str, text: str, lineno: int | None = None,
           col: int | None = None) -> ParseError:
    err = ParseError(message, text=text, lineno=lineno, col_offset=col)
    err.detail = message  # the message without the position, for re-wrapping
    return err


def suggest(word: str, choices) -> str:
    """`` (did you mean 'x'?)`` for the closest of ``choices``, or an empty string."""
    hint = difflib.get_close_matches(str(word), list(choices), n=1)
    return f" (did you mean {hint[0]!r}?)" if hint else ""


def _is_boolean_node(node: ast.AST) -> bool:
    return isinstance(node, (ast.Compare, ast.BoolOp)) or (
        isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not))


def _family(op: ast.operator) -> str | None:
    if isinstance(op, (ast.Add, ast.Sub)):
        return "add"
    if isinstance(op, (ast.Mult, ast.Div)):
        return "mul"
    return None


class Builder:
    """Checks a parsed tree against the allow-list, then builds sympy objects."""

    def __init__(self, text: str, source: str, line_offset: int,
                 names: Mapping[str, sympy.Basic], allow_inf: bool,
                 budget: _numeric.SizeBudget) -> None:
        self.text = text
        self.src_lines = source.split("\n")
        self.line_offset = line_offset
        self.names = names
        self.allow_inf = allow_inf
        self.budget = budget
        self.substituted = 0  # tree nodes brought in by named expressions

    # -- positions and errors -------------------------------------------------
    def _pos(self, lineno: int, byte_col: int) -> tuple[int, int]:
        line = self.src_lines[lineno - 1] if 0 < lineno <= len(self.src_lines) else ""
        col = len(line.encode("utf-8")[:byte_col].decode("utf-8", "ignore"))
        return max(lineno - self.line_offset, 1), col

    def fail(self, message: str, node: ast.AST | None = None,
             at: tuple[int, int] | None = None) -> NoReturn:
        if at is None and node is not None and hasattr(node, "lineno"):
            at = self._pos(node.lineno, node.col_offset)
        raise make_error(message, self.text, *(at or (None, None)))

    def _after(self, node: ast.AST) -> tuple[int, int]:
        """Text position of the first operator character after ``node``."""
        line_no, col = node.end_lineno, None
        start = self._pos(node.end_lineno, node.end_col_offset)[1]
        while line_no <= len(self.src_lines):
            line = self.src_lines[line_no - 1]
            for i in range(start, len(line)):
                if line[i] not in " \t)":
                    col = i
                    break
            if col is not None:
                return max(line_no - self.line_offset, 1), col
            line_no, start = line_no + 1, 0
        return self._pos(node.end_lineno, node.end_col_offset)

    # -- pass 1: the allow-list ------------------------------------------------
    def validate(self, root: ast.AST) -> None:
        stack = [(root, 1)]
        while stack:
            node, depth = stack.pop()
            if depth > MAX_DEPTH:
                self.fail(f"expression is nested too deeply (more than {MAX_DEPTH} levels)", node)
            children = self._check_node(node)
            for child in reversed(children):
                same_chain = (isinstance(node, ast.BinOp) and child is node.left
                              and isinstance(child, ast.BinOp)
                              and _family(child.op) is not None
                              and _family(child.op) == _family(node.op))
                stack.append((child, depth if same_chain else depth + 1))

    def _check_node(self, node: ast.AST) -> list[ast.AST]:
        if isinstance(node, ast.Constant):
            self._check_constant(node)
            return []
        if isinstance(node, ast.Name):
            self._lookup(node)
            return []
        if isinstance(node, ast.BinOp):
            if not isinstance(node.op, _ARITH_OPS):
                op = type(node.op)
                self.fail(f"operator '{_OP_TEXT.get(op, op.__name__)}' is not allowed"
                          f"{_OP_HINT.get(op, '')}", at=self._after(node.left))
            return [node.left, node.right]
        if isinstance(node, ast.UnaryOp):
            if isinstance(node.op, ast.Invert):
                self.fail("operator '~' is not allowed (use 'not')", node)
            return [node.operand]
        if isinstance(node, ast.BoolOp):
            return list(node.values)
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            for i, op in enumerate(node.ops):
                if type(op) not in _RELATIONS:
                    self.fail(f"comparison '{_OP_TEXT.get(type(op), type(op).__name__)}' is not "
                              f"allowed{_OP_HINT.get(type(op), '')}; use <, <=, >, >= or ==",
                              at=self._after(operands[i]))
            return operands
        if isinstance(node, ast.Call):
            self._check_call(node)
            return list(node.args)
        if isinstance(node, ast.Attribute):
            dot = self._pos(node.end_lineno, node.end_col_offset)
            self.fail(f"attribute access '.{node.attr}' is not allowed",
                      at=(dot[0], max(dot[1] - len(node.attr) - 1, 0)))
        what, hint = _FORBIDDEN.get(type(node), (f"a '{type(node).__name__}' node", ""))
        self.fail(f"{what} is not allowed{hint}", node)

    def _check_constant(self, node: ast.Constant) -> None:
        value = node.value
        if isinstance(value, bool) or value is None or value is Ellipsis:
            self.fail(f"the literal '{value!r}' is not allowed", node)
        if isinstance(value, complex):
            self.fail(f"complex number literal '{value!r}' is not allowed (only real numbers)",
                      node)
        if isinstance(value, (str, bytes)):
            kind = "string" if isinstance(value, str) else "bytes"
            self.fail(f"{kind} literals are not allowed (found {value!r:.40})", node)
        if isinstance(value, int):
            if value.bit_length() > _numeric.MAX_NUMBER_BITS:
                self.fail("integer literal too large "
                          f"(more than {_numeric.MAX_NUMBER_BITS} bits)", node)
        elif isinstance(value, float):
            if not math.isfinite(value):
                self.fail("float literal out of range (use 'inf' in bounds for no bound)", node)
        else:  # pragma: no cover - no other constant types exist in Python 3.11
            self.fail(f"literal of type {type(value).__name__} is not allowed", node)

    def _check_call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Attribute):
            self._check_node(func)  # reports the attribute access
        if not isinstance(func, ast.Name):
            self.fail("only functions called by their bare name are allowed, e.g. sqrt(x); "
                      "this call is of a computed value", node)
        name = func.id
        if name not in FUNCTIONS:
            if name in self.names or name in CONSTANTS:
                self.fail(f"'{name}' is not a function and cannot be called", func)
            self.fail(f"unknown function '{name}'{suggest(name, FUNCTIONS)}; allowed functions "
                      "are " + ", ".join(sorted(FUNCTIONS)), func)
        if node.keywords:
            kw = node.keywords[0]
            label = f"keyword argument '{kw.arg}='" if kw.arg else "'**' unpacking"
            self.fail(f"{label} is not allowed; pass arguments by position", kw)
        for arg in node.args:
            if isinstance(arg, ast.Starred):
                self.fail("'*' argument unpacking is not allowed", arg)
        _, lo, hi = FUNCTIONS[name]
        n = len(node.args)
        if n < lo or (hi is not None and n > hi):
            want = f"{lo}" if lo == hi else f"{lo} or {hi}" if hi is not None else f"at least {lo}"
            plural = "s" if (hi or 2) > 1 else ""
            self.fail(f"{name}() takes {want} argument{plural} ({n} given)", node)

    def _lookup(self, node: ast.Name) -> sympy.Basic:
        name = node.id
        if name in self.names:
            return self.names[name]
        if name in CONSTANTS:
            return CONSTANTS[name]
        if name == INF:
            if self.allow_inf:
                return sympy.oo
            self.fail("'inf' is only allowed in variable bounds", node)
        if name in FUNCTIONS:
            self.fail(f"'{name}' is a function; call it like {name}(...)", node)
        known = sorted(self.names)
        listing = ", ".join(known[:30]) + (", ..." if len(known) > 30 else "")
        self.fail(f"unknown name '{name}'{suggest(name, known + list(CONSTANTS))}; declared "
                  f"names are {listing or '(none)'}; constants are pi, E, e", node)

    # -- pass 2: building ------------------------------------------------------
    def _apply(self, node: ast.AST, fn, *args) -> sympy.Basic:
        try:
            value = fn(*args)
            if self.budget.is_constant(value):
                _numeric.check_number(value, allow_infinite=self.allow_inf)
        except NumberTooLarge as exc:
            self.fail(str(exc), node)
        except (TypeError, ValueError, ArithmeticError) as exc:
            self.fail(str(exc) or type(exc).__name__, node)
        except RecursionError:
            self.fail("expression is too complex to build", node)
        return value

    def build(self, node: ast.AST, want: str) -> sympy.Basic:
        """Build ``node``; ``want`` is "expr", "bool" or "any"."""
        if _is_boolean_node(node):
            if want == "expr":
                self.fail("a comparison or and/or/not is not allowed here (only in constraints "
                          "and in the condition of where())", node)
            return self._boolean(node)
        if want == "bool":
            self.fail("expected a comparison (<, <=, >, >=, ==), possibly combined with "
                      "and/or/not; got an arithmetic expression", node)
        return self._arith(node)

    def _arith(self, node: ast.AST) -> sympy.Expr:
        if isinstance(node, ast.Constant):
            v = node.value
            return sympy.Integer(v) if isinstance(v, int) else sympy.Float(v)
        if isinstance(node, ast.Name):
            return self._substitute(node)
        if isinstance(node, ast.UnaryOp):
            operand = self.build(node.operand, "expr")
            negate = isinstance(node.op, ast.USub)
            return self._apply(node, lambda: -operand if negate else +operand)
        if isinstance(node, ast.Call):
            return self._call(node)
        family = _family(node.op)
        if family is not None:
            return self._chain(node, family)
        left, right = self.build(node.left, "expr"), self.build(node.right, "expr")
        if isinstance(node.op, ast.Pow):
            return self._apply(node, self.power, left, right)
        if right == 0:
            self.fail("division by zero" if isinstance(node.op, ast.FloorDiv) else "modulo by zero",
                      at=self._after(node.left))
        if isinstance(node.op, ast.Mod):
            return self._apply(node, sympy.Mod, left, right)
        return self._apply(node, lambda: sympy.floor(left / right))

    def _substitute(self, node: ast.Name) -> sympy.Basic:
        value = self._lookup(node)
        if value.args:  # a named expression: count its tree against the budgets
            size = self.budget.tree_size(value)
            self.substituted += size
            self.budget.used += size
            if (self.substituted > _numeric.MAX_TREE_NODES
                    or self.budget.used > self.budget.total):
                self.fail("expression too large after substituting named expressions "
                          f"(more than {_numeric.MAX_TREE_NODES} nodes per expression or "
                          f"{self.budget.total} per problem)", node)
        return value

    def power(self, base: sympy.Expr, exponent: sympy.Expr) -> sympy.Expr:
        """``base ** exponent``, after the size guard."""
        _numeric.guard_power(base, exponent, self.budget.is_constant)
        return base ** exponent

    def exp(self, argument: sympy.Expr) -> sympy.Expr:
        """``exp(argument)``, after the size guard."""
        _numeric.guard_exp(argument, self.budget.is_constant)
        return sympy.exp(argument)

    def _chain(self, node: ast.BinOp, family: str) -> sympy.Expr:
        spine = []
        while isinstance(node, ast.BinOp) and _family(node.op) == family:
            spine.append(node)
            node = node.left
        value = self.build(node, "expr")
        if family == "add":
            terms = [value]
            for op_node in reversed(spine):
                term = self.build(op_node.right, "expr")
                terms.append(self._apply(op_node, lambda t=term: -t)
                             if isinstance(op_node.op, ast.Sub) else term)
            return self._apply(spine[0], lambda: sympy.Add(*terms))
        for op_node in reversed(spine):
            factor = self.build(op_node.right, "expr")
            if isinstance(op_node.op, ast.Div):
                if factor == 0:
                    self.fail("division by zero", at=self._after(op_node.left))
                factor = self._apply(op_node, self.power, factor, sympy.S.NegativeOne)
            value = self._apply(op_node, lambda a=value, b=factor: a * b)
        return value

    def _call(self, node: ast.Call) -> sympy.Expr:
        name = node.func.id
        fn = FUNCTIONS[name][0]
        if name == "where":
            args = [self.build(node.args[0], "bool"), self.build(node.args[1], "expr"),
                    self.build(node.args[2], "expr")]
        else:
            args = [self.build(arg, "expr") for arg in node.args]
        return self._apply(node, fn, self, *args)

    def _boolean(self, node: ast.AST) -> sympy.Basic:
        if isinstance(node, ast.UnaryOp):
            operand = self.build(node.operand, "bool")
            return self._apply(node, sympy.Not, operand)
        if isinstance(node, ast.BoolOp):
            values = [self.build(v, "bool") for v in node.values]
            op = sympy.And if isinstance(node.op, ast.And) else sympy.Or
            return self._apply(node, op, *values)
        relations = self.relations(node)
        return relations[0] if len(relations) == 1 else self._apply(node, sympy.And, *relations)

    def relations(self, node: ast.Compare) -> list[sympy.Basic]:
        """The relationals of a (possibly chained) comparison, in source order."""
        operands = [self.build(node.left, "expr")]
        operands += [self.build(c, "expr") for c in node.comparators]
        sources = [node.left, *node.comparators]
        return [self._apply(sources[i], _RELATIONS[type(op)], operands[i], operands[i + 1])
                for i, op in enumerate(node.ops)]

    def constraint_parts(self, node: ast.AST) -> list[tuple[ast.AST, sympy.Basic]]:
        """Split a top-level ``and`` / chained comparison into its parts, in source order."""
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
            return [part for v in node.values for part in self.constraint_parts(v)]
        if isinstance(node, ast.Compare):
            return list(zip([node.left, *node.comparators[:-1]],
                            self.relations(node), strict=True))
        return [(node, self.build(node, "bool"))]
