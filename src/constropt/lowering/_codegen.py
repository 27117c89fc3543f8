"""Graph -> Python source text, and source text -> callable.

One source text serves both backends: it only calls the helpers of
:mod:`._rt_torch` / :mod:`._rt_numpy` (same names, same semantics) and indexes ``X``
and ``P``; the backend is chosen by the namespace the text is executed in.  The text is
registered in :mod:`linecache` under a stable file name, so tracebacks through generated
code show its lines.

Generated names never come from the user: variable ``k`` (row ``k`` of ``X``) is ``x<k>``
and parameter ``k`` is ``p<k>``, whatever the sympy symbols are called.  User names only
appear in comments (escaped, shortened), so two symbols whose names Python would fold to
one identifier (``x`` and fullwidth ``ｘ``, NFKC) stay two variables, and a name that is
not an identifier (``x²``, ``a b``) cannot break the source.
"""

from __future__ import annotations

import hashlib
import linecache
import re

from . import _rt_numpy
from ._graph import MULTI, Graph

__all__ = ["emit_function", "compile_source", "table_name"]

_ATOM, _UNARY, _MUL, _ADD = 100, 80, 60, 50
_LABEL_CHARS = 40  # the longest user name echoed in a comment
_CALLS = {"div": "div", "pow": "pow", "viol_le": "viol_le", "viol_lt": "viol_lt",
          "recip": "recip", "minkey": "minimize_key",
          **{op: f.runtime_name for op, f in MULTI.items()}}
_INFIX = {"and": " & ", "or": " | ", "xor": " ^ "}
_LONG = 88
_CHUNK = 32  # most terms of one n-ary operation in one generated expression


def _fmt_const(v: float) -> tuple[str, int]:
    if v == float("inf"):
        return "inf", _ATOM
    if v == float("-inf"):
        return "-inf", _UNARY
    text = repr(float(v))
    return text, (_UNARY if text.startswith("-") else _ATOM)


def var_name(offset: int) -> str:
    """Python name of variable row ``offset`` of ``X`` in generated code."""
    return f"x{offset}"


def param_name(k: int) -> str:
    """Python name of parameter ``k`` (row ``k`` of ``P``) in generated code."""
    return f"p{k}"


def comment_label(text: str) -> str:
    """A user's name made safe for a ``#`` comment: ASCII only (non-ASCII and control
    characters escaped, so no line break or look-alike character gets through), at most
    :data:`_LABEL_CHARS` characters."""
    safe = text.encode("unicode_escape").decode("ascii")
    return safe if len(safe) <= _LABEL_CHARS else safe[:_LABEL_CHARS - 3] + "..."


_RESERVED = ({"X", "P", "eq_tol", "dtype", "True", "False", "None"}
             | {k for k in dir(_rt_numpy) if not k.startswith("_")})


class _Emitter:
    def __init__(self, graph: Graph, labels, tables: dict | None = None):
        self.g = graph
        self.labels = labels
        self.tables = tables
        self.lines: list[str] = []
        self.text: dict[int, tuple[str, int]] = {}
        self.uses: dict[int, int] = {}
        self.prelude: dict[str, str] = {}
        self.ntemp = 0

    def count(self, roots):
        stack = list(roots)
        seen = set()
        while stack:
            n = stack.pop()
            self.uses[n] = self.uses.get(n, 0) + 1
            if n in seen:
                continue
            seen.add(n)
            stack.extend(self.g.operands(self.g.nodes[n]))

    def simple(self, n: int, txt: str, prec: int) -> bool:
        """Constants, names and negated names: never worth a temporary."""
        return self.g.is_const(n) or bool(re.fullmatch(r"-?[\w.]+", txt)) and prec >= _UNARY

    def prepare(self, n: int) -> None:
        """Render every operand below ``n`` that has no text yet, deepest first.

        An explicit stack replaces the recursion ``get -> render -> get`` (a chain of a
        few hundred nodes exceeded Python's recursion limit); operands are visited in
        the order ``render`` asks for them, so temporaries keep their order.
        """
        stack = [(a, False) for a in reversed(self.g.operands(self.g.nodes[n]))]
        while stack:
            m, ready = stack.pop()
            if m in self.text:
                continue
            if ready:
                self.get(m)
                continue
            stack.append((m, True))
            stack.extend((a, False) for a in reversed(self.g.operands(self.g.nodes[m]))
                         if a not in self.text)

    def get(self, n: int, min_prec: int = 0) -> str:
        if n not in self.text:
            self.prepare(n)
            txt, prec = self.render(n)
            if not self.simple(n, txt, prec) and (self.uses.get(n, 0) > 1 or len(txt) > _LONG):
                name = f"t{self.ntemp}"
                self.ntemp += 1
                self.lines.append(f"{name} = {txt}")
                txt, prec = name, _ATOM
            self.text[n] = (txt, prec)
        txt, prec = self.text[n]
        return f"({txt})" if prec < min_prec else txt

    def table(self, kind: str, shape: tuple, values: tuple) -> str:
        """The name of a module-level constant table (see :mod:`._leafblocks`)."""
        if self.tables is None:
            raise AssertionError("a constant table needs emit_function(tables=...)")
        return table_name(self.tables, kind, shape, values)

    def _label(self, kind: str, k: int) -> str:
        text = self.labels(kind, k) if self.labels is not None else None
        return f"  # {comment_label(text)}" if text else ""

    @staticmethod
    def join_add(parts: list) -> str:
        txt = parts[0]
        for p in parts[1:]:
            txt += f" - {p[1:]}" if p.startswith("-") else f" + {p}"
        return txt

    def chunked(self, parts: list, join) -> list:
        """``parts`` of an n-ary operation, grouped into temporaries of ``_CHUNK`` terms.

        A chain of thousands of ``+`` in one expression makes Python's compiler recurse
        once per operator (its syntax tree is left-deep); chunks keep every expression
        at most ``_CHUNK`` operators deep, however many terms the sum has.
        """
        while len(parts) > _CHUNK:
            grouped = []
            for k in range(0, len(parts), _CHUNK):
                name = f"t{self.ntemp}"
                self.ntemp += 1
                self.lines.append(f"{name} = {join(parts[k:k + _CHUNK])}")
                grouped.append(name)
            parts = grouped
        return parts

    def render(self, n: int) -> tuple[str, int]:
        key = self.g.nodes[n]
        op = key[0]
        if op == "const":
            return _fmt_const(key[1])
        if op == "nan":
            return "nan", _ATOM
        if op in ("true", "false"):
            return ("True" if op == "true" else "False"), _ATOM
        if op == "var":
            name = var_name(key[1])
            self.prelude[name] = f"cast(X[{key[1]}], dtype)" + self._label("var", key[1])
            return name, _ATOM
        if op == "param":
            name = param_name(key[1])
            self.prelude[name] = f"P[{key[1]}]" + self._label("param", key[1])
            return name, _ATOM
        if op in ("slice", "bsum"):
            lo, hi, step = key[1:4]
            sl = f"X[{lo}:{hi}]" if step == 1 else f"X[{lo}:{hi}:{step}]"
            if op == "bsum":
                return f"bsum({sl}, dtype)", _ATOM
            d, D = key[4:]
            return (f"cast({sl}, dtype)" if D == 1 else f"lift({sl}, {d}, {D}, dtype)"), _ATOM
        if op == "grid":
            return f"grid(X, {key[1]}, {key[2]}, {key[3]}, dtype)", _ATOM
        if op in ("cvec", "gather"):
            return _vector_leaf(key), _ATOM
        if op == "ctab":
            return f"vtab({self.table('f', (len(key[1]),), key[1])}, X, dtype)", _ATOM
        if op == "matvec":
            matrix = key[1]
            name = self.table("f", (len(matrix), len(matrix[0])),
                              tuple(v for row in matrix for v in row))
            return f"matvec({name}, {self.get(key[2])})", _ATOM
        if op == "all":
            return f"rall({self.get(key[1])})", _ATOM
        if op == "index":
            return f"index({key[1]}, {key[2]}, {key[3]}, {key[4]}, X, dtype)", _ATOM
        if op in ("sum", "prod"):
            fn = "rsum" if op == "sum" else "rprod"
            body, axis, drop = self.get(key[1]), key[2], key[3]
            return (f"{fn}({body})" if axis == drop == 0
                    else f"{fn}({body}, {axis}, {drop})"), _ATOM
        if op == "where":
            c, a, b = (self.get(k) for k in key[1:])
            both = all(self.g.is_const(k) for k in key[2:])
            return f"where({c}, {a}, {b}" + (", dtype)" if both else ")"), _ATOM
        if op == "add":
            parts = self.chunked([self.get(a, _ADD) for a in key[1:]], self.join_add)
            return self.join_add(parts), _ADD
        if op == "mul":
            parts = self.chunked([self.get(a, _MUL + 1) for a in key[1:]], " * ".join)
            return " * ".join(parts), _MUL
        if op == "neg":
            return "-" + self.get(key[1], _MUL + 1), _UNARY
        if op == "powi":
            base, k = self.get(key[1]), key[2]
            if k <= 3 and self.text[key[1]][1] == _ATOM and re.fullmatch(r"\w+", base):
                return " * ".join([base] * k), _MUL
            return f"powi({base}, {k})", _ATOM
        if op == "powf":
            return f"powf({self.get(key[1])}, {key[2]!r})", _ATOM
        if op == "fn":
            return f"{key[1]}({self.get(key[2])})", _ATOM
        if op == "cmp":
            return f"({self.get(key[2], _ADD)} {key[1]} {self.get(key[3], _ADD)})", _ATOM
        if op in _INFIX:
            def join(parts):
                return "(" + _INFIX[op].join(parts) + ")"
            return join(self.chunked([self.get(a, _ATOM) for a in key[1:]], join)), _ATOM
        if op == "not":
            return "~" + self.get(key[1], _ATOM), _ATOM
        if op == "viol_eq":
            return f"viol_eq({self.get(key[1])}, eq_tol)", _ATOM
        if op == "feas_eq":
            return f"(abs({self.get(key[1])}) <= eq_tol)", _ATOM
        if op in _CALLS:
            return f"{_CALLS[op]}(" + ", ".join(self.get(a) for a in key[1:]) + ")", _ATOM
        raise AssertionError(f"no emitter for node {op}")  # pragma: no cover


def _vector_leaf(key: tuple) -> str:
    """A constant vector or gathered rows of ``X`` on summation axis 0 (see
    :mod:`._liketerms`)."""
    if key[0] == "gather":
        return f"cast(X[[{', '.join(str(r) for r in key[1])}]], dtype)"
    return f"vconst(({', '.join(_fmt_const(v)[0] for v in key[1])},), X, dtype)"


def table_name(tables: dict, kind: str, shape: tuple, values: tuple) -> str:
    """The name of the table ``(kind, shape, values)`` in ``tables``, added if new."""
    key = (kind, tuple(shape), tuple(values))
    name = tables.get(key)
    if name is None:
        name = tables[key] = f"K{len(tables)}"
    return name


def emit_function(graph: Graph, name: str, args: str, outputs: list, returns: str,
                  labels=None, doc: str = "", tables: dict | None = None) -> str:
    """Emit ``def name(args):`` computing ``outputs`` (``[(target, node_id)]``).

    ``returns`` is the return expression over the targets (e.g. ``"f, out(cv, X, dtype)"``).
    Output nodes are always given their target names.  ``labels(kind, k)`` (``kind`` is
    ``"var"`` or ``"param"``) gives the user's name of variable row / parameter ``k`` for
    a comment beside its definition; it never becomes code.  Constant tables the
    function reads are named in ``tables`` (``(kind, shape, values) -> name``), which the
    caller emits once at module level (:func:`._leafblocks.tables_source`).
    """
    em = _Emitter(graph, labels, tables)
    em.count([nid for _, nid in outputs])
    body: list[str] = []
    for target, nid in outputs:
        if nid in em.text:
            txt = em.get(nid)
        else:
            txt, prec = em.render(nid)
            em.text[nid] = (txt, prec) if em.simple(nid, txt, prec) else (target, _ATOM)
        body.extend(em.lines)
        em.lines.clear()
        body.append(f"{target} = {txt}")
    head = [f"def {name}({args}):"]
    if doc:
        head.append(f'    """{doc}"""')
    head.append("    dtype = P.dtype")
    head += [f"    {v} = {src}" for v, src in em.prelude.items()]
    lines = [w for stmt in body + [f"return {returns}"] for w in _wrap(stmt)]
    return "\n".join(head + lines + [""])


_BREAKS = (" + ", " - ", " & ", " | ", " ^ ", " * ")


def _wrap(stmt: str, indent: str = "    ", width: int = 92) -> list[str]:
    """``stmt`` as indented lines of at most about ``width`` characters.

    Breaks go before a binary operator or after a comma; an expression that needs a
    break outside brackets is parenthesised first, so continuation lines are implicit.
    """
    if len(indent) + len(stmt) <= width:
        return [indent + stmt]
    if stmt.startswith("return "):
        head, rhs = "return ", stmt[7:]
    else:
        target, rhs = stmt.split(" = ", 1)
        head = target + " = "
    cuts, depth = [], 0
    for k, ch in enumerate(rhs):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and rhs[k + 1:k + 2] == " ":
            cuts.append((k + 2, depth))
        elif ch == " " and rhs[k:k + 3] in _BREAKS:
            cuts.append((k + 1, depth))
    if not cuts:
        return [indent + stmt]
    if any(d == 0 for _, d in cuts):
        rhs, cuts = "(" + rhs + ")", [(k + 1, d + 1) for k, d in cuts]
    lines, start, prefix, i = [], 0, indent + head, 0
    while len(prefix) + len(rhs) - start > width:
        # the cuts after ``start`` that fit on the line (else the first one): a window
        # that moves forward only, so wrapping is linear in the statement's length
        while i < len(cuts) and cuts[i][0] <= start:
            i += 1
        if i == len(cuts):
            break
        j = i + 1
        while j < len(cuts) and len(prefix) + cuts[j][0] - start <= width:
            j += 1
        fit = cuts[i:j]
        depth = min(d for _, d in fit)  # break at the outermost level that fits
        cut = max(k for k, d in fit if d == depth)
        lines.append((prefix + rhs[start:cut]).rstrip())
        start, prefix = cut, indent + "        "
    lines.append(prefix + rhs[start:])
    return lines


def compile_source(source: str, namespace: dict, tag: str) -> dict:
    """Execute generated source in ``namespace``; registered in linecache for tracebacks."""
    digest = hashlib.sha1(source.encode()).hexdigest()[:12]
    filename = f"<constropt-generated-{tag}-{digest}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    code = compile(source, filename, "exec")
    ns = dict(namespace)
    exec(code, ns)  # noqa: S102 - our own generated code, never user text
    return ns
