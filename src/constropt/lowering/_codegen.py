"""Graph -> Python source text, and source text -> callable.

One source text serves both backends: it only calls the helpers of
:mod:`._rt_torch` / :mod:`._rt_numpy` (same names, same semantics) and indexes ``X``
and ``P``; the backend is chosen by the namespace the text is executed in.  The text is
registered in :mod:`linecache` under a stable file name, so tracebacks through generated
code show its lines.
"""

from __future__ import annotations

import hashlib
import keyword
import linecache
import re

from ._graph import Graph

__all__ = ["emit_function", "compile_source"]

_ATOM, _UNARY, _MUL, _ADD = 100, 80, 60, 50
_CALLS = {"atan2": "atan2", "mod": "mod", "min": "minimum", "max": "maximum",
          "heaviside": "heaviside", "where": "where", "div": "div", "pow": "pow",
          "viol_le": "viol_le", "viol_lt": "viol_lt", "recip": "recip", "sum": "rsum",
          "minkey": "minimize_key"}
_LONG = 88


def _fmt_const(v: float) -> tuple[str, int]:
    if v == float("inf"):
        return "inf", _ATOM
    if v == float("-inf"):
        return "-inf", _UNARY
    text = repr(float(v))
    return text, (_UNARY if text.startswith("-") else _ATOM)


def _ident(name: str, taken: set) -> str:
    base = re.sub(r"\W", "_", name)
    if not base or base[0].isdigit() or keyword.iskeyword(base) or base in _RESERVED:
        base = "v_" + base
    out, k = base, 1
    while out in taken:
        out, k = f"{base}_{k}", k + 1
    taken.add(out)
    return out


_RESERVED = {"X", "P", "eq_tol", "dtype", "inf", "nan", "where", "sqrt", "log", "exp", "sin",
             "cos", "tan", "atan", "sinh", "cosh", "tanh", "asinh", "abs", "floor", "ceil",
             "isnan", "cast", "powi", "recip", "div", "rsqrt", "powf", "pow", "asin", "acos",
             "acosh", "atanh", "atan2", "mod", "sign", "heaviside", "minimum", "maximum",
             "rsum", "bsum", "index", "viol_le", "viol_lt", "viol_eq", "out", "stack",
             "minimize_key", "stack_rows", "True", "False"}


class _Emitter:
    def __init__(self, graph: Graph, var_names: dict, param_names: dict):
        self.g = graph
        self.var_names = var_names
        self.param_names = param_names
        self.lines: list[str] = []
        self.text: dict[int, tuple[str, int]] = {}
        self.uses: dict[int, int] = {}
        self.prelude: dict[str, str] = {}
        self.taken = set(_RESERVED) | set(var_names.values()) | set(param_names.values())
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

    def get(self, n: int, min_prec: int = 0) -> str:
        if n not in self.text:
            txt, prec = self.render(n)
            simple = self.g.nodes[n][0] in ("const", "nan") or (
                prec == _ATOM and re.fullmatch(r"[\w.]+", txt))
            if not simple and (self.uses.get(n, 0) > 1 or len(txt) > _LONG):
                name = f"t{self.ntemp}"
                self.ntemp += 1
                self.taken.add(name)
                self.lines.append(f"{name} = {txt}")
                txt, prec = name, _ATOM
            self.text[n] = (txt, prec)
        txt, prec = self.text[n]
        return f"({txt})" if prec < min_prec else txt

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
            name = self.var_names[key[1]]
            self.prelude[name] = f"cast(X[{key[1]}], dtype)"
            return name, _ATOM
        if op == "param":
            name = self.param_names[key[1]]
            self.prelude[name] = f"P[{key[1]}]"
            return name, _ATOM
        if op in ("block", "bsum"):
            a, b, s = key[1:]
            sl = f"X[{a}:{b}]" if s == 1 else f"X[{a}:{b}:{s}]"
            return (f"cast({sl}, dtype)" if op == "block" else f"bsum({sl}, dtype)"), _ATOM
        if op == "index":
            return f"index({key[1]}, {key[2]}, X, dtype)", _ATOM
        if op == "add":
            parts = [self.get(a, _ADD) for a in key[1:]]
            txt = parts[0]
            for p in parts[1:]:
                txt += f" - {p[1:]}" if p.startswith("-") else f" + {p}"
            return txt, _ADD
        if op == "mul":
            return " * ".join(self.get(a, _MUL + 1) for a in key[1:]), _MUL
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
        if op in ("and", "or"):
            sym = " & " if op == "and" else " | "
            return "(" + sym.join(self.get(a, _ATOM) for a in key[1:]) + ")", _ATOM
        if op == "not":
            return "~" + self.get(key[1], _ATOM), _ATOM
        if op == "viol_eq":
            return f"viol_eq({self.get(key[1])}, eq_tol)", _ATOM
        if op == "feas_eq":
            return f"(abs({self.get(key[1])}) <= eq_tol)", _ATOM
        if op in _CALLS:
            return f"{_CALLS[op]}(" + ", ".join(self.get(a) for a in key[1:]) + ")", _ATOM
        raise AssertionError(f"no emitter for node {op}")  # pragma: no cover


def emit_function(graph: Graph, name: str, args: str, outputs: list, returns: str,
                  var_names: dict, param_names: dict, doc: str = "") -> str:
    """Emit ``def name(args):`` computing ``outputs`` (``[(target, node_id)]``).

    ``returns`` is the return expression over the targets (e.g. ``"f, out(cv, X, dtype)"``).
    Output nodes are always given their target names.
    """
    em = _Emitter(graph, var_names, param_names)
    em.count([nid for _, nid in outputs])
    body: list[str] = []
    for target, nid in outputs:
        if nid in em.text:
            txt = em.get(nid)
        else:
            txt, prec = em.render(nid)
            if not (prec == _ATOM and re.fullmatch(r"\w+", txt)):
                em.text[nid] = (target, _ATOM)
        body.extend(em.lines)
        em.lines.clear()
        body.append(f"{target} = {txt}")
    head = [f"def {name}({args}):"]
    if doc:
        head.append(f'    """{doc}"""')
    head.append("    dtype = P.dtype")
    head += [f"    {v} = {src}" for v, src in em.prelude.items()]
    return "\n".join(head + [f"    {line}" for line in body] + [f"    return {returns}", ""])


def compile_source(source: str, namespace: dict, tag: str) -> dict:
    """Execute generated source in ``namespace``; registered in linecache for tracebacks."""
    digest = hashlib.sha1(source.encode()).hexdigest()[:12]
    filename = f"<constropt-generated-{tag}-{digest}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    code = compile(source, filename, "exec")
    ns = dict(namespace)
    exec(code, ns)  # noqa: S102 - our own generated code, never user text
    return ns
