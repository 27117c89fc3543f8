"""Many constraint leaves of one shape -> one vector block.

A problem with hundreds of constraints written one by one (the bounds ``x_k <= 5`` as
constraints, ``x_i - x_j <= c``, rows ``a_k . x <= b_k``, the same nonlinear template
over different variables) would otherwise be lowered into code unrolled per leaf: its
size, and the cost of compiling it (torch inductor above all), grow with the number of
leaves.  Where a problem has at least :data:`MIN_LEAVES` leaves, the values' graph
groups the leaves that are whole constraints by *shape*:

- affine leaves ``sum_t a_t x_(r_t) + b`` by their kind and number of terms ``T``
  (those that also agree on the coefficients first, so that bounds of one sign keep a
  scalar coefficient and a slice of rows): leaves over the same ``T >= 3`` variables are
  one matrix-vector product with a constant matrix (``matvec``), the others ``T``
  gathered vector terms;
- other leaves by their template: the leaf's graph with its variables numbered in the
  order met and its numeric constants abstracted (as :mod:`._liketerms` does for the
  terms of one sum, here with any number of variables); the template is applied once
  to gathered rows of ``X``.

A group of at least :data:`MIN_LEAVES` leaves becomes one node on the leaves' axis 0
(shape ``(k, *batch)``): its violations are one elementwise ``viol_*`` and one sum, its
feasibility one comparison and one ``all`` (``rall``), and the per-constraint outputs
are assembled in the constraints' order (``assemble``).  Values agree with the unrolled
code up to floating-point reassociation (a matrix product sums in its own order); the
comparisons of a block's feasibility use ``c <= 0`` (``c < 0``, ``|c| <= eq_tol``),
which for the single-variable templates is the comparison of the sides as written.
Large constant vectors and matrices are module-level tables of the generated source
(:func:`tables_source`), exact to the last bit (``repr`` of every float).
"""

from __future__ import annotations

from dataclasses import dataclass

from ._graph import Graph
from ._liketerms import _rows_node

__all__ = ["MIN_LEAVES", "LeafGroup", "group_leaves", "tables_source"]

#: The fewest leaves of one shape that become one vector block.  Below it the unrolled
#: code compiles in seconds anyway (benchmarks/results/stages.md, m = 10), and no
#: problem of the collection reaches it, so their generated code stays what it was.
MIN_LEAVES = 64

_MAX_NODES = 64  # the largest template considered (nodes visited per leaf)
_DENSE_TERMS = 3  # the fewest shared variables of a group written as one matrix product
_VECTOR = ("slice", "grid", "index", "bsum", "sum", "prod", "cvec", "gather", "matvec",
           "ctab", "all")
_EXACT = ("nan", "true", "false", "param")


class _NoShape(Exception):
    pass


@dataclass(frozen=True)
class LeafGroup:
    """Leaves ``members`` (indices into the leaves) of one ``kind``; ``node`` holds their
    values on axis 0 in that order."""

    kind: str
    members: tuple
    node: int


# -- shapes ---------------------------------------------------------------------------
def affine(g: Graph, n: int):
    """``({row: coefficient}, constant)`` of an affine node, or None."""
    terms: dict = {}
    const = [0.0]
    seen = [0]

    def walk(m: int, scale: float) -> None:
        seen[0] += 1
        if seen[0] > _MAX_NODES:
            raise _NoShape
        key = g.nodes[m]
        op = key[0]
        if op == "var":
            terms[key[1]] = terms.get(key[1], 0.0) + scale
        elif op == "const":
            const[0] += scale * key[1]
        elif op == "neg":
            walk(key[1], -scale)
        elif op == "add":
            for a in key[1:]:
                walk(a, scale)
        elif op == "mul" and len(key) == 3 and g.nodes[key[1]][0] == "const":
            walk(key[2], scale * g.nodes[key[1]][1])
        else:
            raise _NoShape

    try:
        walk(n, 1.0)
    except _NoShape:
        return None
    if any(c == 0.0 for c in terms.values()):
        return None
    return terms, const[0]


def _exact_affine(g: Graph, n: int, terms: dict, const: float) -> bool:
    """Whether the node is literally ``sum c_t * x_t + b`` with every variable once and
    the coefficients as written (so no coefficient was folded from two terms)."""
    key = g.nodes[n]
    parts = key[1:] if key[0] == "add" else (n,)
    rows = []
    for p in parts:
        k = g.nodes[p]
        if k[0] == "const":
            continue
        if k[0] == "neg":
            k = g.nodes[k[1]]
        elif k[0] == "mul":
            k = g.nodes[k[2]]
        if k[0] != "var":
            return False
        rows.append(k[1])
    return len(rows) == len(set(rows)) == len(terms)


def template(g: Graph, n: int):
    """``(signature, rows, constants)`` of leaf node ``n``, or None.

    The signature is the node's graph with its ``k``-th variable met as ``("V", k)`` and
    every numeric constant as ``"C"``; ``rows`` are the variables' rows in that order.
    """
    rows: list = []
    index: dict = {}
    consts: list = []
    seen = [0]

    def walk(m: int):
        seen[0] += 1
        if seen[0] > _MAX_NODES:
            raise _NoShape
        key = g.nodes[m]
        op = key[0]
        if op == "var":
            k = index.get(key[1])
            if k is None:
                k = index[key[1]] = len(rows)
                rows.append(key[1])
            return ("V", k)
        if op == "const":
            consts.append(key[1])
            return "C"
        if op in _EXACT:
            return key
        if op in _VECTOR:
            raise _NoShape
        fields = list(key)
        for p in Graph.operand_positions(key):
            fields[p] = walk(key[p])
        return tuple(fields)

    try:
        sig = walk(n)
    except _NoShape:
        return None
    return (sig, tuple(rows), tuple(consts)) if rows else None


# -- blocks ---------------------------------------------------------------------------
def _constants(g: Graph, vals) -> int:
    """One constant where the leaves agree on it, else their constant table."""
    vals = tuple(float(v) for v in vals)
    if all(v == vals[0] for v in vals):
        return g.const(vals[0])
    return g.node("ctab", vals, axes=frozenset((0,)))


def _rows(g: Graph, rows) -> int:
    return _rows_node(g, list(rows))


def _scaled(g: Graph, coeffs, vec: int) -> int:
    if all(c == 1.0 for c in coeffs):
        return vec
    if all(c == -1.0 for c in coeffs):
        return g.node("neg", vec)
    return g.node("mul", _constants(g, coeffs), vec)


def _affine_block(g: Graph, members: list) -> int:
    """``members``: ``(leaf, rows, coefficients, constant)`` with ``T`` terms each."""
    T = len(members[0][1])
    same = all(m[1] == members[0][1] for m in members)
    consts = [m[3] for m in members]
    if same and T >= _DENSE_TERMS:
        matrix = tuple(tuple(m[2]) for m in members)
        body = g.node("matvec", matrix, _rows(g, members[0][1]), axes=frozenset((0,)))
        terms = [body]
    else:
        terms = [_scaled(g, [m[2][t] for m in members], _rows(g, [m[1][t] for m in members]))
                 for t in range(T)]
    b = _constants(g, consts)
    if not (g.is_const(b) and g.value(b) == 0.0):
        terms.append(b)
    return terms[0] if len(terms) == 1 else g.node("add", *terms)


def _template_block(g: Graph, sig, members: list) -> int:
    """``members``: ``(leaf, rows, constants)`` of one signature."""
    nvar = len(members[0][1])
    vecs = [_rows(g, [m[1][k] for m in members]) for k in range(nvar)]
    columns = iter([tuple(m[2][c] for m in members) for c in range(len(members[0][2]))])

    def build(s):
        if s == "C":
            return _constants(g, next(columns))
        if isinstance(s, tuple) and s[0] == "V" and len(s) == 2 and isinstance(s[1], int):
            return vecs[s[1]]
        if s[0] in _EXACT:
            return g.node(*s)
        fields = list(s)
        for p in Graph.operand_positions(s):
            fields[p] = build(s[p])
        return g.node(*fields)

    return build(sig)


def group_leaves(g: Graph, leaves: list) -> list:
    """Groups of at least :data:`MIN_LEAVES` like leaves (``leaves``: ``(index, node,
    kind)`` of the leaves that may be grouped), each as a :class:`LeafGroup`."""
    exact: dict = {}
    by_terms: dict = {}
    shaped: dict = {}
    for i, n, kind in leaves:
        if g.is_const(n):
            continue
        aff = affine(g, n)
        if aff is not None and _exact_affine(g, n, *aff):
            terms, const = aff
            rows = tuple(sorted(terms))
            coeffs = tuple(terms[r] for r in rows)
            item = (i, rows, coeffs, const)
            exact.setdefault((kind, len(rows), coeffs), []).append(item)
            continue
        tpl = template(g, n)
        if tpl is not None:
            shaped.setdefault((kind, tpl[0]), []).append((i,) + tpl[1:])
    groups = []
    for (kind, T, _), items in exact.items():
        if len(items) >= MIN_LEAVES:
            groups.append((kind, "affine", items))
        else:
            by_terms.setdefault((kind, T), []).extend(items)
    for (kind, _), items in by_terms.items():
        if len(items) >= MIN_LEAVES:
            groups.append((kind, "affine", sorted(items)))
    for (kind, sig), items in shaped.items():
        if len(items) >= MIN_LEAVES:
            groups.append((kind, sig, items))
    out = []
    for kind, how, items in groups:
        node = _affine_block(g, items) if how == "affine" else _template_block(g, how, items)
        out.append(LeafGroup(kind, tuple(m[0] for m in items), node))
    return sorted(out, key=lambda grp: grp.members[0])


# -- tables ---------------------------------------------------------------------------
def table_text(values) -> str:
    """Floats (or ints) as one string of exact ``repr`` words."""
    return " ".join(repr(v) for v in values)


def tables_source(tables: dict) -> str:
    """Module-level definitions of the generated code's constant tables
    (``tables``: ``(kind, shape, values) -> name``)."""
    lines = []
    for (kind, shape, values), name in tables.items():
        words = table_text(values).split(" ")
        chunks, line = [], ""
        for w in words:
            if line and len(line) + len(w) > 80:
                chunks.append(line)
                line = ""
            line += w + " "
        chunks.append(line.rstrip())
        body = "\n".join(f"    {c!r}" for c in chunks)
        lines.append(f"{name} = table({kind!r}, {shape!r},\n{body})")
    return "\n".join(lines)
