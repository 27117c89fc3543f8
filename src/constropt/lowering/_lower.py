"""Lower a whole problem (objective, constraints, derivatives) to generated functions.

Generated entry points (all take the variable-major population ``X`` of shape
``(N, *batch)`` and the parameter vector ``P`` of shape ``(n_params, *batch_or_1)``;
``P.dtype`` is the working dtype, whatever ``X`` is stored in):

``fitness(X, P, eq_tol) -> (fmin, cv)``
    objective in minimization sense (NaN -> +inf) and total violation, shape ``batch``.
``death(X, P, eq_tol) -> fitness``
    the original experiment's fitness: ``fmin`` where every constraint holds, else inf.
``report(X, P, eq_tol) -> (f, V)``
    objective in the user's sense and per-constraint violations ``V``, shape ``(m, *batch)``.
``leaves(X, P) -> (f, C)``
    objective and the raw value of every constraint leaf ``c(x)`` (``c <= 0``, ``c < 0``
    or ``c == 0``), shape ``(L, *batch)``.
``derivatives(X, P) -> (grad, jac)``
    exact gradient ``(N, *batch)`` and leaf Jacobian ``(L, N, *batch)`` (built on first
    use). Scalar-variable problems: derived symbolically with sympy (real dummies),
    lowered like the values, only the entries that can be nonzero (an expression by the
    symbols it contains, a sum by its terms that contain the symbol; both arrays are
    zeros filled from them, so the source follows the nonzeros); piecewise-constant
    functions (``floor``, ``ceiling``, ``frac``, ``sign``, ``Heaviside``, the quotient
    in ``Mod``) have derivative 0 away from their jumps. Problems with vector variables
    (or a derivative sympy leaves unevaluated, a ``Min``/``Max`` of more than eight
    arguments, or an expression too deep for sympy's ``diff``): reverse-mode autograd
    through the generated torch ``leaves`` function on the torch backend, forward mode
    through the generated NumPy ``leaves`` function in float64 on the ``"numpy"``
    backend (:mod:`._forward`, no torch import), exact to rounding like the symbolic
    route;
    :attr:`Lowering.derivative_method` says which is used.
"""

from __future__ import annotations

import threading

from .._errors import UnsupportedExpressionError
from . import _leafblocks, _liketerms, _rt_numpy, _sums  # noqa: F401 - they register the Sum and Add rules
from ._codegen import compile_source, emit_function, table_name
from ._derivatives import SymbolicDerivative, autograd_derivatives, gradient_runtime
from ._forward import forward_derivatives
from ._graph import Graph, Layout
from ._tree import AllOf, Leaf, leaves

__all__ = ["Lowering"]

_ARGS = "X, P, eq_tol"


#: Derivative source (or the error building it) by the values' source and the shape of
#: the layout, process-wide.  The values' source alone is not enough: a variable that no
#: expression uses adds a gradient row but no code.
_DERIVATIVE_SOURCES: dict = {}


def _positions(rows: list, tables: dict) -> str:
    """Rows of an output as ``(start, stop, step)`` when a progression, else a table."""
    if not rows:
        return "(0, 0, 1)"
    step = rows[1] - rows[0] if len(rows) > 1 else 1
    if step > 0 and all(b - a == step for a, b in zip(rows, rows[1:])):
        return f"({rows[0]}, {rows[-1] + 1}, {step})"
    return table_name(tables, "i", (len(rows),), tuple(rows))


def _rt_torch_lazy():
    """The torch runtime, imported on first use (importing torch takes about a second)."""
    from . import _rt_torch

    return _rt_torch


class Lowering:
    """All generated code for one problem structure.

    Parameters
    ----------
    objective : sympy.Expr
    constraints : tuple of Constraint
        Normalised constraints (see :mod:`constropt.problem._constraints`).
    layout : Layout
        Variable blocks and parameter order.
    maximize : bool
        Sense of the objective; ``fitness`` and ``death`` return the minimization key.
    """

    def __init__(self, objective, constraints, layout: Layout, maximize: bool):
        self.objective = objective
        self.constraints = tuple(constraints)
        self.layout = layout
        self.maximize = maximize
        self.leaves: tuple[Leaf, ...] = tuple(lf for c in self.constraints for lf in leaves(c.tree))
        self.source = self._values_source()
        self._namespaces: dict = {}
        self._deriv_source: str | None = None
        self._deriv_error: Exception | None = None
        self._lock = threading.Lock()

    # -- source -------------------------------------------------------------------
    def _emit(self, g: Graph, name, args, outputs, returns, doc, tables=None):
        return emit_function(g, name, args, outputs, returns, self._label, doc, tables)

    def _label(self, kind: str, k: int) -> str | None:
        """The user's name of variable row ``k`` (``x`` or ``x[1, 2]``) or parameter ``k``:
        shown in a comment of the generated code, never used as a name there."""
        if kind == "param":
            return str(self.layout.parameters[k])
        b = self._block_of().get(k)
        if b is None:
            return None
        if not b.shape:
            return str(b.symbol)
        flat, idx = k - b.offset, []
        for dim in reversed(b.shape):
            idx.append(flat % dim)
            flat //= dim
        return f"{b.symbol}[{', '.join(str(i) for i in reversed(idx))}]"

    def _block_of(self) -> dict:
        """Variable row -> its block (built once: a search per row is quadratic)."""
        rows = self.__dict__.get("_rows")
        if rows is None:
            rows = self._rows = {k: b for b in self.layout.blocks
                                 for k in range(b.offset, b.offset + b.size)}
        return rows

    def _values_source(self) -> str:
        g = Graph(self.layout)
        g.like_terms = _liketerms.MIN_TERMS  # long sums of like terms: one vector op
        f = g.lower(self.objective)
        fmin = g.node("neg", f) if self.maximize else f
        leaf_ids = {id(lf): g.lower(lf.expr) for lf in self.leaves}
        # many leaves of one shape: one vector block each (._leafblocks); a constraint
        # that is one leaf may join a block, its leaf index is its place in the leaves
        first, k = [], 0
        for c in self.constraints:
            first.append(k if isinstance(c.tree, Leaf) else None)
            k += len(leaves(c.tree))
        groups = []
        if len(self.leaves) >= _leafblocks.MIN_LEAVES:
            groups = _leafblocks.group_leaves(g, [
                (i, leaf_ids[id(self.leaves[i])], self.leaves[i].kind)
                for i in first if i is not None])
        grouped = {i for grp in groups for i in grp.members}
        constraint_of = {i: k for k, i in enumerate(first) if i is not None}
        loose = [k for k, i in enumerate(first) if i not in grouped or i is None]
        tables: dict = {}

        def viol(node):
            if isinstance(node, Leaf):
                c = leaf_ids[id(node)]
                return g.node("viol_" + node.kind, c)
            kids = [viol(k) for k in node.children]
            if isinstance(node, AllOf):
                return kids[0] if len(kids) == 1 else g.node("add", *kids)
            acc = kids[0]
            for k in kids[1:]:
                acc = g.node("min", acc, k)
            return acc

        def feas(node):
            if isinstance(node, Leaf):
                c = leaf_ids[id(node)]
                if node.kind == "eq":
                    return g.node("feas_eq", c)
                if node.rel is not None:  # the sides as written: fewer operations
                    lhs, op, rhs = node.rel
                    return g.node("cmp", op, g.lower(lhs), g.lower(rhs))
                return g.node("cmp", "<=" if node.kind == "le" else "<", c, g.const(0.0))
            kids = [feas(k) for k in node.children]
            return kids[0] if len(kids) == 1 else g.node(
                "and" if isinstance(node, AllOf) else "or", *kids)

        def block_feas(grp):
            if grp.kind == "eq":
                return g.node("feas_eq", grp.node)
            return g.node("cmp", "<=" if grp.kind == "le" else "<", grp.node, g.const(0.0))

        none = frozenset()
        bviol = [g.node("viol_" + grp.kind, grp.node) for grp in groups]
        vs = [viol(self.constraints[k].tree) for k in loose]
        vsum = vs + [g.node("sum", b, 0, 0, axes=none) for b in bviol]
        sense = "maximized" if self.maximize else "minimized"
        parts = ["# Generated by constropt from the problem's sympy expressions.\n"
                 "# Helpers (sqrt, div, viol_le, ...) are NaN-safe; see "
                 "constropt.lowering._rt_torch."]
        out_f = [("f", fmin)]
        cv_ret = "out(cv, X, dtype)" if vsum else "out(0.0, X, dtype)"
        cv_out = [("cv", vsum[0] if len(vsum) == 1 else g.node("add", *vsum))] if vsum else []
        funcs = [self._emit(
            g, "fitness", _ARGS, out_f + cv_out,
            "minimize_key(out(f, X, dtype)), " + cv_ret,
            f"Objective ({sense}; returned in minimization sense) and total violation.",
            tables)]
        if vsum:
            fe = [feas(self.constraints[k].tree) for k in loose]
            fe += [g.node("all", block_feas(grp), axes=none) for grp in groups]
            mask = fe[0] if len(fe) == 1 else g.node("and", *fe)
            # the NaN guard on the selected value, not inside the select: then inductor's
            # CPU code (row-major, scalar loop) skips the objective of infeasible points
            # as the experiment's where(mask, f, inf) does
            death = g.node("minkey", g.node("where", mask, fmin, g.const(float("inf"))))
        else:
            death = g.node("minkey", fmin)
        funcs.append(self._emit(g, "death", _ARGS, [("fitness", death)],
                                "out(fitness, X, dtype)",
                                "Death-penalty fitness: the objective where feasible, inf "
                                "elsewhere.", tables))
        targets = [(f"v{k}", v) for k, v in zip(loose, vs)]
        btargets = [(f"b{j}", v) for j, v in enumerate(bviol)]
        bsizes = [(f"b{j}", len(grp.members)) for j, grp in enumerate(groups)]
        order = loose + [k for grp in groups for k in (constraint_of[i] for i in grp.members)]
        funcs.append(self._emit(
            g, "report", _ARGS, [("f", f)] + targets + btargets,
            "out(f, X, dtype), " + self._row_stack(targets, bsizes, order, tables),
            "Objective in the user's sense and per-constraint violations.", tables))
        lt = [(f"c{k}", leaf_ids[id(lf)]) for k, lf in enumerate(self.leaves)
              if k not in grouped]
        blt = [(f"l{j}", grp.node) for j, grp in enumerate(groups)]
        lsizes = [(f"l{j}", len(grp.members)) for j, grp in enumerate(groups)]
        lorder = [k for k in range(len(self.leaves)) if k not in grouped]
        lorder += [i for grp in groups for i in grp.members]
        funcs.append(self._emit(
            g, "leaves", "X, P", [("f", f)] + lt + blt,
            "out(f, X, dtype), " + self._row_stack(lt, lsizes, lorder, tables),
            "Objective and the raw value of every constraint leaf.", tables))
        if tables:
            parts.append(_leafblocks.tables_source(tables))
        return "\n\n".join(parts + funcs)

    @staticmethod
    def _row_stack(singles: list, blocks: list, order: list, tables: dict) -> str:
        """The return expression of the rows ``singles`` (targets of one row each) and
        ``blocks`` (``(target, number of rows)``), which hold the rows ``order`` in turn:
        one ``stack`` where there are no blocks, else ``assemble`` of the parts at their
        rows (a range ``(start, stop, step)`` where they are a progression, else a table
        of rows)."""
        names = "[" + ", ".join(t for t, _ in singles) + "]"
        if not blocks:
            return f"stack({names}, X, dtype)"
        specs, start = [], 0
        for count in [len(singles)] + [k for _, k in blocks]:
            specs.append(_positions(order[start:start + count], tables))
            start += count
        return (f"assemble({names}, [{', '.join(t for t, _ in blocks)}], "
                f"({', '.join(specs)}), {len(order)}, X, dtype)")

    @property
    def derivative_method(self) -> str:
        """``"symbolic"`` (sympy, scalar variables) or ``"autograd"`` (otherwise: the
        generated code differentiated, by torch autograd on the torch backend and by
        forward mode on the NumPy backend)."""
        try:
            self.derivative_source()
        except UnsupportedExpressionError:
            return "autograd"
        return "symbolic"

    def derivative_source(self) -> str:
        """Source of ``derivatives(X, P)``, derived symbolically (built on first use).

        Raises
        ------
        UnsupportedExpressionError
            For vector variables, or when sympy leaves a derivative unevaluated (the
            ``derivatives`` entry point then uses autograd).
        """
        with self._lock:
            if self._deriv_source is None and self._deriv_error is None:
                # the values' source determines the derivatives: share them between
                # problems of the same structure (sympy's diff is the slow part)
                key = (self.source, self._shape_key())
                cached = _DERIVATIVE_SOURCES.get(key)
                if cached is not None:
                    self._deriv_source, self._deriv_error = cached
                else:
                    try:
                        self._deriv_source = self._build_derivatives()
                    except UnsupportedExpressionError as err:
                        self._deriv_error = err
                    except RecursionError:  # sympy's diff recurses per nesting level
                        self._deriv_error = UnsupportedExpressionError(
                            "the expression is nested too deeply for sympy's diff; "
                            "derivatives use autograd")
                    _DERIVATIVE_SOURCES[key] = (self._deriv_source, self._deriv_error)
            if self._deriv_error is not None:
                raise self._deriv_error
            return self._deriv_source

    def _shape_key(self) -> tuple:
        """Rows and shapes of the variables and the number of parameters (no names)."""
        return (tuple((b.offset, b.shape) for b in self.layout.blocks),
                len(self.layout.parameters))

    def _build_derivatives(self) -> str:
        blocks = self.layout.blocks
        if any(b.shape != () for b in blocks):
            raise UnsupportedExpressionError(
                "symbolic derivatives are built for scalar variables only; this problem "
                "has vector variables (derivatives() uses torch autograd)")
        syms = [b.symbol for b in blocks]
        g = Graph(self.layout)
        derivative = SymbolicDerivative(syms)
        outs: list = []
        grad = self._scatter(g, derivative.nonzeros(self.objective), "g{}", (len(syms),),
                             outs)
        entries = [(i * len(syms) + k, d) for i, lf in enumerate(self.leaves)
                   for k, d in derivative.nonzeros(lf.expr)]
        jac = self._scatter(g, entries, "j{}", (len(self.leaves), len(syms)), outs)
        return self._emit(g, "derivatives", "X, P", outs, f"{grad}, {jac}",
                          "Exact gradient of the objective and Jacobian of the constraint "
                          "leaves (nonzero entries only).")

    @staticmethod
    def _scatter(g: Graph, entries, name: str, shape: tuple, outs: list) -> str:
        """The return expression of an array of ``shape`` filled from its nonzero
        ``entries`` (``[(flat index, sympy expression)]``): constants in one literal,
        the others as outputs (appended to ``outs``), every other entry 0.  Its size
        follows the nonzeros, not the array's size."""
        index, targets, cindex, cvalues = [], [], [], []
        for flat, d in entries:
            node = g.lower(d)
            if g.is_const(node):
                cindex.append(str(flat))
                cvalues.append(repr(float(g.value(node))))
            else:
                index.append(str(flat))
                targets.append(name.format(flat))
                outs.append((targets[-1], node))

        def tup(items):
            return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"

        return (f"scatter({shape!r}, {tup(index)}, [{', '.join(targets)}], {tup(cindex)}, "
                f"{tup(cvalues)}, X, dtype)")

    # -- functions ----------------------------------------------------------------
    def functions(self, backend: str) -> dict:
        """Namespace holding the generated functions for ``backend`` ('torch' or 'numpy')."""
        ns = self._namespaces.get(backend)
        if ns is None:
            rt = _rt_torch_lazy() if backend == "torch" else _rt_numpy
            base = {k: getattr(rt, k) for k in dir(rt) if not k.startswith("_")}
            ns = compile_source(self.source, base, backend)
            self._namespaces[backend] = ns
        return ns

    def derivatives(self, backend: str):
        """The ``derivatives(X, P) -> (grad, jac)`` function for ``backend``.

        Symbolic (generated code) when :meth:`derivative_source` succeeds, else torch
        autograd (backend "torch") or NumPy forward mode (backend "numpy") through the
        generated ``leaves`` function (see the module docstring).
        """
        key = backend + ":d"
        fn = self._namespaces.get(key)
        if fn is None:
            rt = _rt_torch_lazy() if backend == "torch" else _rt_numpy
            try:
                src = self.derivative_source()
            except UnsupportedExpressionError:
                if backend != "torch":  # forward mode on NumPy: no torch import
                    fn = forward_derivatives(self.source)
                    self._namespaces[key] = fn
                    return fn
                grad_ns = self._namespaces.get("torch:grad")
                if grad_ns is None:
                    grad_ns = compile_source(self.source, gradient_runtime(_rt_torch_lazy()),
                                             "torch-grad")
                    self._namespaces["torch:grad"] = grad_ns
                fn = autograd_derivatives(self.functions("torch")["leaves"],
                                          grad_ns["leaves"], numpy=backend != "torch")
            else:
                base = {k: getattr(rt, k) for k in dir(rt) if not k.startswith("_")}
                fn = compile_source(src, base, backend + "-d")["derivatives"]
            self._namespaces[key] = fn
        return fn
