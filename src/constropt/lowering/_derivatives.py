"""Exact derivatives: sympy for scalar variables, torch autograd otherwise.

Symbolic route (:class:`SymbolicDerivative`): the expression is differentiated with
respect to a real ``Dummy`` (so ``Abs`` differentiates to ``sign``, not to complex
parts).  Piecewise-constant functions have derivative 0 away from their jumps:
``floor`` and ``ceiling`` are differentiated as such, ``frac(u)`` as ``u - floor(u)``,
``Mod(a, b)`` as ``a - b*floor(a/b)``, and the ``DiracDelta`` terms of ``sign`` and
``Heaviside`` are dropped.  What sympy still leaves unevaluated raises
:class:`~constropt.UnsupportedExpressionError` when lowered.

Autograd route (:func:`autograd_derivatives`): reverse mode through the generated torch
``leaves`` function, one backward pass per output (the objective and each constraint
leaf); every point of the batch is independent, so the gradient of the batch sum is the
per-point gradient.  The runtime's double-``where`` guards keep the gradients of dead
branches finite, so they never poison live lanes.
"""

from __future__ import annotations

import numpy as np
import sympy as sp

from .._errors import UnsupportedExpressionError

__all__ = ["SymbolicDerivative", "autograd_derivatives", "gradient_runtime"]


class _Flat(sp.Function):
    """A piecewise-constant function: derivative 0 (``floor``/``ceiling`` stand-in)."""

    def fdiff(self, argindex=1):
        return sp.S.Zero


class _Floor(_Flat):
    pass


class _Ceiling(_Flat):
    pass


def _step_form(expr):
    """``expr`` with floor/ceiling/frac/Mod written with derivative-0 step functions."""
    if not expr.has(sp.frac, sp.Mod, sp.floor, sp.ceiling):
        return expr  # one traversal instead of four rebuilding ones
    expr = expr.replace(sp.frac, lambda u: u - _Floor(u))
    expr = expr.replace(sp.Mod, lambda a, b: a - b * _Floor(a / b))
    expr = expr.replace(sp.floor, _Floor)
    return expr.replace(sp.ceiling, _Ceiling)


#: Most arguments of a ``Min``/``Max`` differentiated symbolically: sympy writes the
#: derivative of each argument with a ``Min`` of all the others (quadratic in size and
#: time), where autograd costs one backward pass.
MAX_MINMAX_ARGS = 8


def _check_size(expr) -> None:
    big = [e for e in expr.atoms(sp.Min, sp.Max) if len(e.args) > MAX_MINMAX_ARGS]
    if big:
        raise UnsupportedExpressionError(
            f"a {type(big[0]).__name__} of {len(big[0].args)} arguments is differentiated "
            f"by autograd (symbolic derivatives take at most {MAX_MINMAX_ARGS})")


class SymbolicDerivative:
    """``d(expr, symbol)``: the derivative with every symbol of ``symbols`` taken real.

    Each expression is prepared (real dummies, step functions) once, however many
    symbols it is differentiated by.  :meth:`nonzeros` gives the derivatives that can
    be nonzero, each computed from the terms of a sum that contain its symbol: sympy
    differentiates a sum term by term (``Add(*[a.diff(s) for a in args])``) and drops
    the zeros, so the result is the same expression as the whole sum's derivative at a
    cost that follows the terms containing the symbol, not the whole sum.
    """

    def __init__(self, symbols):
        self.symbols = tuple(symbols)
        self.real = {s: sp.Dummy(str(s), real=True) for s in self.symbols}
        self.back = {v: k for k, v in self.real.items()}
        self._index = {v: k for k, v in enumerate(self.symbols)}
        self._prepared: dict = {}

    def _prepare(self, expr):
        e = self._prepared.get(expr)
        if e is None:
            _check_size(expr)
            e = self._prepared[expr] = _step_form(expr.xreplace(self.real))
        return e

    def _finish(self, d):
        if d.is_Number:
            return d
        if d.has(sp.DiracDelta, _Floor, _Ceiling):
            d = self._steps_back(d)
        return d.xreplace(self.back)

    @staticmethod
    def _steps_back(d):
        d = d.replace(sp.DiracDelta, lambda *a: sp.S.Zero)
        return d.replace(_Floor, sp.floor).replace(_Ceiling, sp.ceiling)

    def __call__(self, expr, symbol):
        return self._finish(sp.diff(self._prepare(expr), self.real[symbol]))

    def nonzeros(self, expr) -> list:
        """``[(k, d expr / d symbols[k])]`` for every symbol ``expr`` contains whose
        derivative is not identically 0, in the order of ``symbols``."""
        for direct in (self._linear, self._polynomial):
            out = direct(expr)
            if out is not None:
                return out
        _check_size(expr)
        terms: dict = {}
        for t in (expr.args if isinstance(expr, sp.Add) else (expr,)):
            for s in t.free_symbols:
                k = self._index.get(s)
                if k is not None:
                    terms.setdefault(k, []).append(t)
        out = []
        for k in sorted(terms):
            s = self.symbols[k]
            memo: dict = {}  # subexpressions the terms share are differentiated once
            d = sp.Add(*[_term_derivative(t, s, memo, self._by_diff) for t in terms[k]])
            if d != 0:
                out.append((k, d))
        return out

    def _by_diff(self, e, s):
        """``sp.diff``'s derivative of the subexpression ``e`` by the user's symbol ``s``,
        taken where the chain rule has no rule of its own (:func:`_chain`): on the
        prepared form (real dummies, step functions) and back.  Only these pieces make the
        round trip through the dummies, not the whole expression."""
        return self._finish(sp.diff(self._prepare(e), self.real[s]))


    def _linear(self, expr):
        """``nonzeros`` of an affine ``expr`` (terms ``c``, ``s``, ``c*s`` with numbers
        ``c``: bounds and linear rows), read from its terms; None for any other.  The
        same numbers the derivative computes (a real dummy changes nothing there),
        without preparing the expression."""
        out = []
        for t in (expr.args if isinstance(expr, sp.Add) else (expr,)):
            if t.is_Number:
                continue
            s = t if t.is_Symbol else t.args[1] if (
                t.is_Mul and len(t.args) == 2 and t.args[0].is_Number) else None
            k = self._index.get(s)
            if k is None:
                return None
            out.append((k, sp.S.One if s is t else t.args[0]))
        out.sort(key=lambda kc: kc[0])
        return [(k, c) for k, c in out if c != 0]


    def _polynomial(self, expr):
        """``nonzeros`` of a sum whose every term is a number, ``s``, ``c*s`` or an
        integer power of ``s``, ``c*s`` or ``c*s + a`` (numbers ``c``, ``a``; one variable
        per term: separable QPs and polynomials), differentiated on the user's symbols
        with the power rule :func:`_term_derivative` applies; None for any other.  The
        same expressions as through real dummies: no assumption enters these rules (an
        integer power of an affine base), so neither the dummies nor their replacement
        back are needed, and 1,000 such terms cost a few sympy operations each."""
        terms: dict = {}
        for t in (expr.args if isinstance(expr, sp.Add) else (expr,)):
            if t.is_Number:
                continue
            base = t.base if t.is_Pow and t.exp.is_Integer else t
            if base.is_Add and len(base.args) == 2 and base.args[0].is_Number:
                base = base.args[1]
            s = base if base.is_Symbol else base.args[1] if (
                base.is_Mul and len(base.args) == 2 and base.args[0].is_Number) else None
            k = self._index.get(s)
            if k is None:
                return None
            terms.setdefault(k, []).append(_power_rule(t, s))
        out = []
        for k in sorted(terms):
            d = sp.Add(*terms[k])
            if d != 0:
                out.append((k, d))
        return out


def _power_rule(t, s):
    """``d t / d s`` for ``t`` linear in ``s`` or an integer power of an affine base in
    ``s`` (:meth:`SymbolicDerivative._polynomial` has checked the form): ``k * db *
    base**(k - 1)``, the expression sympy's power rule gives once its product of powers
    has combined."""
    c = _linear_coefficient(t, s)
    if c is not None:
        return c
    base = t.base
    db = _linear_coefficient(base, s)
    if db is None:
        db = _linear_coefficient(base.args[1], s)
    return (db * t.exp) * base ** (t.exp - 1)


def _linear_coefficient(t, s):
    """``c`` where ``t`` is ``s`` (1) or ``c*s`` with a number ``c``, else None."""
    if t is s:
        return sp.S.One
    if t.is_Mul and len(t.args) == 2 and t.args[1] is s and t.args[0].is_Number:
        return t.args[0]
    return None


def _term_derivative(t, s, memo=None, by_diff=sp.diff):
    """``d t / d s``.  The terms that dominate large problems take the operations
    ``sp.diff`` performs on them (the same expression): ``s`` and ``c*s`` (the number
    ``c``), and a power with a number exponent of ``s`` or of ``s`` plus a number
    (``(s - a)**k``: sympy's power rule ``t * (dexp * log(base) + dbase * exp / base)``
    with ``dexp = 0``, the vanishing logarithm not built).  Any other term goes through
    :func:`_chain` (``memo``: its cache of subexpressions for this ``s``; ``by_diff``:
    what differentiates the pieces it has no rule for, ``sp.diff`` by default)."""
    c = _linear_coefficient(t, s)
    if c is not None:
        return c
    if t.is_Pow and t.exp.is_Number:
        base = t.base
        db = _linear_coefficient(base, s)
        if db is None and base.is_Add and len(base.args) == 2 and base.args[0].is_Number:
            db = _linear_coefficient(base.args[1], s)
        if db is not None:
            return t * (db * t.exp / base)
    return _chain(t, s, {} if memo is None else memo, by_diff)


#: One-argument functions whose derivative is their ``fdiff`` times the argument's
#: (what sympy's ``Function._eval_derivative`` builds for them).
_CHAIN_FUNCTIONS = (sp.exp, sp.log, sp.sin, sp.cos, sp.tan, sp.asin, sp.acos, sp.atan,
                    sp.sinh, sp.cosh, sp.tanh, sp.asinh, sp.acosh, sp.atanh)


def _chain(e, s, memo: dict, by_diff=sp.diff):
    """``d e / d s`` by the rules of sympy's ``_eval_derivative`` for sums, products and
    the functions of :data:`_CHAIN_FUNCTIONS`, built directly, each subexpression once
    (``memo``), without sympy's ``Derivative`` objects, whose construction and
    evaluation ask the assumptions system about every intermediate result (a 2-variable
    least-squares fit of 44 exponential terms took 1.9 s of ``sp.diff`` for 0.08 s here).
    A power with an exponent free of ``s`` is differentiated as ``exp * base**(exp - 1)
    * dbase`` (sympy writes ``t * exp * dbase / base`` and lets the product combine the
    powers, which asks the same questions; the value is the same, and at ``base = 0``
    with ``exp > 1`` this form is 0 where sympy's uncombined one is 0/0).  Anything else
    (``Abs``, ``Piecewise``, ``Min``/``Max``, steps, powers with ``s`` in the exponent,
    several-argument functions) is ``by_diff(e, s)``'s (default ``sp.diff``;
    :class:`SymbolicDerivative` passes its round trip through real dummies, so that
    ``Abs`` differentiates to ``sign`` and steps to 0).  No rule of the chain needs an
    assumption about ``s``: the user's symbols are differentiated as they are."""
    d = memo.get(e)
    if d is not None:
        return d
    if e is s:
        d = sp.S.One
    elif e.is_Number or s not in e.free_symbols:
        d = sp.S.Zero
    elif e.is_Add:
        d = sp.Add(*[_chain(a, s, memo, by_diff) for a in e.args])
    elif e.is_Mul:
        args = e.args
        parts = []
        for i, a in enumerate(args):
            da = _chain(a, s, memo, by_diff)
            if da != 0:
                parts.append(sp.Mul(*args[:i], da, *args[i + 1:]))
        d = sp.Add(*parts)
    elif e.is_Pow and s not in e.exp.free_symbols:
        d = sp.Mul(e.exp, e.base ** (e.exp - 1), _chain(e.base, s, memo, by_diff))
    elif isinstance(e, _CHAIN_FUNCTIONS) and len(e.args) == 1:
        d = sp.Mul(e.fdiff(1), _chain(e.args[0], s, memo, by_diff))
    else:
        d = by_diff(e, s)
    memo[e] = d
    return d


#: Runtime names that are not elementwise math (kept as they are in gradient mode).
_STRUCTURAL = {"cast", "where", "out", "stack", "scatter", "minimize_key", "index", "lift",
               "grid", "rsum", "bsum", "isnan", "viol_le", "viol_lt", "viol_eq", "powi",
               "table", "vtab", "assemble", "rall"}


def gradient_runtime(rt) -> dict:
    """The torch runtime namespace in *gradient mode*.

    Every math helper returns 0 (with zero gradient) where its value is NaN or infinite,
    and the generated code's ``nan`` constant is 0.  A dead ``Piecewise`` branch then
    holds finite values, so the zero gradient ``where`` sends it can never turn into
    ``0 * nan`` on a live input (a product's backward multiplies by the other factor's
    value).  Only gradients come from this namespace; values come from the real one.
    """
    import torch  # lazy: the NumPy path never imports torch

    def finite(fn):
        def wrapped(*args):
            v = fn(*args)
            return torch.nan_to_num(v, nan=0.0, posinf=0.0, neginf=0.0) \
                if isinstance(v, torch.Tensor) and v.is_floating_point() else v
        return wrapped

    ns = {}
    for k in dir(rt):
        if k.startswith("_"):
            continue
        v = getattr(rt, k)
        ns[k] = finite(v) if callable(v) and k not in _STRUCTURAL else v
    ns["nan"] = 0.0
    return ns


def autograd_derivatives(leaves_fn, grad_leaves_fn, numpy: bool):
    """``derivatives(X, P) -> (grad, jac)`` by autograd through generated ``leaves``.

    ``leaves_fn`` is the torch ``leaves`` function, ``grad_leaves_fn`` the same code
    executed in :func:`gradient_runtime`; gradients come from the latter and are NaN
    where the value (from the former) is NaN.  With ``numpy=True`` the function takes
    and returns NumPy arrays and works in float64; otherwise it works on the tensors'
    device in ``P.dtype``.
    """
    import torch  # lazy: the NumPy path never imports torch

    def derivatives(X, P):
        if numpy:
            Xt = torch.as_tensor(np.asarray(X), dtype=torch.float64)
            Pt = torch.as_tensor(np.asarray(P), dtype=torch.float64)
        else:
            Xt, Pt = X.to(P.dtype), P
        with torch.no_grad():
            f0, C0 = leaves_fn(Xt, Pt)
        Xt = Xt.detach().clone().requires_grad_(True)
        with torch.enable_grad():
            f, C = grad_leaves_fn(Xt, Pt)
            outs = [f] + list(C.unbind(0))
            grads = []
            for k, o in enumerate(outs):
                g = None
                if o.requires_grad:
                    g, = torch.autograd.grad(o.sum(), Xt, retain_graph=k < len(outs) - 1,
                                             allow_unused=True)
                grads.append(torch.zeros_like(Xt) if g is None else g)
        grad = torch.where(torch.isnan(f0), torch.nan, grads[0])
        if len(grads) > 1:
            jac = torch.where(torch.isnan(C0).unsqueeze(1), torch.nan, torch.stack(grads[1:]))
        else:
            jac = Xt.new_zeros((0,) + Xt.shape)
        grad, jac = grad.detach(), jac.detach()
        return (grad.numpy(), jac.numpy()) if numpy else (grad, jac)

    return derivatives
