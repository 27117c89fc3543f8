"""Like terms of a long sum -> one vector operation and one reduction.

A sum written term by term over scalar variables (``sum((x_k - 1/2)**2 for k)``,
``sum(a_k * x_k)``) would otherwise be lowered into code unrolled per variable: its
size, and the cost of compiling it, grow with the number of terms.  Where
:attr:`Graph.like_terms <._graph.Graph>` is set, an ``Add`` of at least that many terms
groups its terms by *template*: the term's graph with its one scalar variable and its
numeric constants abstracted.  A group of at least ``like_terms`` terms becomes

- the template applied once to the variables' rows of ``X`` (a slice ``X[lo:hi:step]``
  where the rows are an arithmetic progression, else a gathered ``X[[r0, r1, ...]]``),
  each abstracted constant a scalar where the terms agree on it, else one constant
  vector (``vconst``), and
- one ``sum`` over the terms' axis (``bsum`` straight from storage for a plain sum of
  variables, as :mod:`._sums` does for ``Sum(x[i])``).

Terms of a group are summed in the order of their rows, in one reduction: the result is
the unrolled sum up to floating-point reassociation.  ``a*x``, ``-x`` and ``x`` share the
linear template ``c*x``.  Only the values' graph sets ``like_terms``; graphs read by the
interval and derivative code keep the unrolled form.
"""

from __future__ import annotations

import sympy as sp

from ._graph import RULES, Graph, add_terms

__all__ = ["lower_add", "MIN_TERMS", "template"]

#: The fewest like terms that become one vector operation (``Graph.like_terms`` of the
#: values' graph).  Below it the unrolled code is as fast on NumPy and the collection's
#: generated code stays what it was (benchmarks/results/compact.md).
MIN_TERMS = 64

_MAX_NODES = 48  # the largest template considered (nodes visited per term)
_VECTOR = ("slice", "grid", "index", "bsum", "sum", "prod", "cvec", "gather", "ctab",
           "matvec", "all")
_EXACT = ("nan", "true", "false", "param")


class _NoTemplate(Exception):
    pass


def template(g: Graph, t: int):
    """``(signature, row, constants)`` of term ``t``, or None where it has none.

    The signature is the term's graph with its one variable as ``"V"`` and every
    constant as ``"C"``; ``row`` is the variable's row of ``X``; ``constants`` the
    abstracted constants in the order the signature visits them.
    """
    key = g.nodes[t]
    if key[0] == "var":
        return ("mul", "C", "V"), key[1], [1.0]
    if key[0] == "neg" and g.nodes[key[1]][0] == "var":
        return ("mul", "C", "V"), g.nodes[key[1]][1], [-1.0]
    state = {"row": None, "seen": 0, "consts": []}
    try:
        sig = _walk(g, t, state)
    except _NoTemplate:
        return None
    if state["row"] is None:
        return None
    return sig, state["row"], state["consts"]


def _walk(g: Graph, n: int, state: dict):
    state["seen"] += 1
    if state["seen"] > _MAX_NODES:
        raise _NoTemplate
    key = g.nodes[n]
    op = key[0]
    if op == "var":
        if state["row"] not in (None, key[1]):
            raise _NoTemplate  # two variables: not a term of one variable
        state["row"] = key[1]
        return "V"
    if op == "const":
        state["consts"].append(key[1])
        return "C"
    if op in _EXACT:
        return key
    if op in _VECTOR:
        raise _NoTemplate
    fields = list(key)
    for p in Graph.operand_positions(key):
        fields[p] = _walk(g, key[p], state)
    return tuple(fields)


def _rebuild(g: Graph, n: int, vec: int, columns) -> int:
    """Term ``n``'s graph with its variable replaced by ``vec`` and its constants by the
    next of ``columns`` (the constants of every term of the group, one position each)."""
    key = g.nodes[n]
    op = key[0]
    if op == "var":
        return vec
    if op == "const":
        return _constants(g, next(columns))
    if op in _EXACT:
        return n
    fields = list(key)
    for p in Graph.operand_positions(key):
        fields[p] = _rebuild(g, key[p], vec, columns)
    return g.node(*fields)


def _rows_node(g: Graph, rows: list) -> int:
    """The rows of ``X`` as one node: a slice for an arithmetic progression, else a
    gather; on summation axis 0 of 1."""
    step = rows[1] - rows[0]
    axes = frozenset((0,))
    if step > 0 and all(b - a == step for a, b in zip(rows, rows[1:])):
        return g.node("slice", rows[0], rows[-1] + 1, step, 0, 1, axes=axes)
    return g.node("gather", tuple(rows), axes=axes)


def _group_sum(g: Graph, sig, members: list) -> int:
    """One node for the sum of ``members`` (``(row, term, constants)``, same template)."""
    members = sorted(members, key=lambda m: m[0])
    rows = [m[0] for m in members]
    vec = _rows_node(g, rows)
    columns = [tuple(m[2][k] for m in members) for k in range(len(members[0][2]))]
    if sig == ("mul", "C", "V"):  # linear (also ``x`` and ``-x``): a dot product
        coeff = columns[0]
        same = all(c == coeff[0] for c in coeff)
        if same and g.nodes[vec][0] == "slice":  # c * (sum of a slice): bsum from storage
            total = g.node("bsum", *g.nodes[vec][1:4], axes=frozenset())
            return total if coeff[0] == 1.0 else g.node("mul", g.const(coeff[0]), total)
        body = vec if same and coeff[0] == 1.0 else g.node(
            "mul", _constants(g, coeff), vec)
    else:
        body = _rebuild(g, members[0][1], vec, iter(columns))
    return g.node("sum", body, 0, 0, axes=frozenset())


def _constants(g: Graph, vals: tuple) -> int:
    """One constant where the terms agree on it, else their constant vector."""
    if all(v == vals[0] for v in vals):
        return g.const(vals[0])
    return g.node("cvec", tuple(vals), axes=frozenset((0,)))


def like_terms(g: Graph, terms: list) -> list:
    """``terms`` (node ids of one ``Add``) with every group of at least
    ``g.like_terms`` like terms replaced by one node, at the place of its first term."""
    groups: dict = {}
    info = []
    for t in terms:
        tpl = None if g.is_const(t) else template(g, t)
        info.append(tpl)
        if tpl is not None:
            groups.setdefault(tpl[0], []).append((tpl[1], t, tpl[2]))
    big = {sig: m for sig, m in groups.items() if len(m) >= g.like_terms
           and len({row for row, _, _ in m}) == len(m)}
    if not big:
        return terms
    out, done = [], set()
    for t, tpl in zip(terms, info):
        sig = None if tpl is None else tpl[0]
        if sig not in big:
            out.append(t)
        elif sig not in done:
            done.add(sig)
            out.append(_group_sum(g, sig, big[sig]))
    return out


def lower_add(g: Graph, e) -> int:
    """The ``Add`` rule: its terms, like terms grouped where ``g.like_terms`` says so."""
    terms = [g.lower(a) for a in e.args]
    if g.like_terms and not g.ctx and len(terms) >= g.like_terms:
        terms = like_terms(g, terms)
    return add_terms(g, terms)


RULES[sp.Add] = lower_add
