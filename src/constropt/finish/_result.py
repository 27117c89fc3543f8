"""Typed, immutable results: ``Status``, ``History`` and ``Result``."""

from __future__ import annotations

import html
import os
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._errors import SolveFailedError
from .._plotting import plotter
from ..engine._status import Status
from ..problem._scipy import result_to_scipy

__all__ = ["Status", "History", "Result", "FrozenDict", "add_up", "run_timings", "Stopwatch",
           "raise_if_failed"]


class FrozenDict(Mapping):
    """A read-only mapping that prints like the dict it holds (``{x: 1.0}``, not
    ``mappingproxy(...)``).  Compares equal to a dict with the same items; ``dict(m)``
    gives a plain, writable copy."""

    __slots__ = ("_data",)
    _data: dict

    def __init__(self, data=()) -> None:
        # another FrozenDict: copy its dict (the Mapping protocol is ten times slower)
        object.__setattr__(self, "_data", dict(data._data if type(data) is FrozenDict
                                               else data))

    def __getitem__(self, key):
        return self._data[key]

    def __iter__(self) -> Iterator:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return repr(self._data)

    def __setattr__(self, name, value):
        raise AttributeError("FrozenDict is read-only")

    def __eq__(self, other) -> bool:
        if isinstance(other, Mapping):
            return self._data == dict(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # unhashable, like dict

    def __reduce__(self):
        return (FrozenDict, (self._data,))

    def copy(self) -> dict:
        """A plain dict of the items."""
        return dict(self._data)


def add_up(timings, t_start: float) -> dict:
    """``timings`` (seconds by part) closed at this moment: ``total`` the wall time since
    ``t_start`` (a ``time.perf_counter()`` value), and ``setup`` whatever no other part
    measured (options, device, code generation, building the search), so that the
    parts add up to ``total``."""
    out = {k: float(v) for k, v in dict(timings).items() if k not in ("setup", "total")}
    total = time.perf_counter() - t_start
    rest = max(0.0, total - sum(out.values()))
    return {"import": out.pop("import", 0.0), "lowering": out.pop("lowering", 0.0),
            "setup": rest, **out, "total": total}


def run_timings(watch: Stopwatch, t_start: float, *, import_s: float, lowering: float,
                compile_s: float, search: float) -> dict:
    """The timings of a run, by part (``polish`` and ``check`` from ``watch``), closed at
    this moment by :func:`add_up`: the one block every mode builds its timings with."""
    return add_up({"import": import_s, "lowering": lowering, "compile": compile_s,
                   "search": search, **watch.parts}, t_start)


class Stopwatch:
    """Seconds spent in the finishing steps, by part: ``polish`` (the defined fallback,
    the polish and its moves, the batched Newton polish) and ``check`` (the float64
    check of the search's end, the exact check, the unboundedness probes), added up over
    the instances and rounds of a run."""

    def __init__(self):
        self.parts = {"polish": 0.0, "check": 0.0}

    @contextmanager
    def part(self, name: str):
        """Time the ``with`` block as part ``name``."""
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.parts[name] += time.perf_counter() - t0


@dataclass(frozen=True)
class History:
    """Best point per generation.

    Attributes
    ----------
    nfev : ndarray of int, shape (G,)
        Evaluations used at the end of each generation.
    fun : ndarray, shape (G,)
        Objective of the best point (user's sense).
    cv : ndarray, shape (G,)
        Total constraint violation of the best point (0 when feasible).
    """

    nfev: np.ndarray
    fun: np.ndarray
    cv: np.ndarray

    def __len__(self) -> int:
        return len(self.nfev)


def _fmt(v: float) -> str:
    return f"{v:.10g}"


@dataclass(frozen=True)
class Result:
    """The outcome of :func:`constropt.solve`.

    Attributes
    ----------
    x : mapping
        ``{symbol: value}`` (float; int for integer symbols; an ndarray for a vector
        variable), so ``objective.subs(result.x)`` works for scalar problems.  Read-only
        (a :class:`FrozenDict`, printed as a dict; ``dict(result.x)`` copies it).
    x_array : ndarray, shape (n,)
        The point in ``variables`` order (float64).
    variables : tuple
        The problem's variables.
    fun : float
        Objective at ``x`` in the user's sense, evaluated in float64.
    feasible : bool
        Every constraint provably holds at ``x`` (strict ones strictly, equalities
        within ``eq_tol``): checked in float64, then with exact arithmetic (Arb balls)
        at the exact point, and both must agree; see ``verification``.  A point
        float64 finds feasible but exact arithmetic cannot certify is reported
        infeasible (status ``INFEASIBLE``, the message says "feasibility could not be
        certified").
    maxcv : float
        Largest constraint violation at ``x`` (0 when feasible).
    violations : ndarray, shape (m,)
        Violation of each constraint at ``x``.
    success : bool
        ``feasible`` and the run ended normally; never True for an infeasible point.
    status : Status
    message : str
    nit : int
        Generations run.
    nfev : int
        Every point evaluated: search, restarts, polish, the float64 checks of candidate
        points and the unboundedness probe (not the compile warm-up on a throwaway
        population).
    seed : int
        The seed used (drawn at random when ``seed=None``), to reproduce the run.
    device : str
    timings : mapping
        Seconds by part: ``import`` (torch, on a process's first solve), ``lowering``
        (building the Problem), ``setup`` (options, device, code generation, building the
        search), ``compile``, ``search`` (this call's: a resumed run counts from the
        resume), ``polish``, ``check`` (float64 check, unboundedness probe),
        ``cross_check`` and ``certify`` (when asked); the parts add up to ``total``, the
        wall time of the call.
    history : History
    cross_check : CrossCheck or None
    lower_bound : float or None
        With ``certify=``: the proven bound on the optimum over the search box, in the
        user's sense (no feasible point has a smaller objective; a larger one when
        maximizing).  None when nothing was certified.
    gap : float or None
        With ``certify=``: the relative gap ``|fun - lower_bound| / max(|fun|, 1e-9)``
        that is proven (``inf`` without a feasible point).
    certificate : Certificate or InfeasibilityProof or None
        What was proven and how (see the Certificates page of the docs): the
        branch-and-bound's :class:`~constropt.certify._bnb.Certificate`, or the
        :class:`~constropt.problem._fbbt.InfeasibilityProof` of a problem whose
        constraints admit no point (status ``INFEASIBLE``, no search run).
    problem : Problem
    verification : Verification or None
        The rigorous check of ``x``: per-constraint verdicts (``"satisfied"``,
        ``"violated"``, ``"undecided"``), what float64 said, ``fun_error`` (a proven
        bound on ``|fun - f(x)|``), whether the point was nudged to certify it.
    backend : str or None
        The array library the search ran on: ``"numpy"`` or ``"torch"`` (see the
        ``backend`` option); None when no search ran (an infeasibility proof).
    equality_residuals : mapping
        ``{equality: |h(x)|}``: how far each equality constraint is from exact at ``x``
        (the float64 value of ``h = lhs - rhs``; an equality under ``And``/``Or`` keyed
        as ``Eq(h, 0)``), empty without equalities.  With tight equalities (the default
        ``eq_tol=None``) a feasible result has each at most ``1e-9`` times the
        equality's scale ``1 + sum_k |t_k(x)|`` (the terms of ``h``).
    """

    x: Any
    x_array: np.ndarray
    variables: tuple
    fun: float
    feasible: bool
    maxcv: float
    violations: np.ndarray
    success: bool
    status: Status
    message: str
    nit: int
    nfev: int
    seed: int
    device: str
    timings: Any
    history: History
    cross_check: Any = None
    lower_bound: float | None = None
    gap: float | None = None
    certificate: Any = None
    problem: Any = field(default=None, repr=False, compare=False)
    verification: Any = None
    backend: str | None = None
    equality_residuals: Any = None

    def __post_init__(self):
        object.__setattr__(self, "x", FrozenDict(self.x))
        object.__setattr__(self, "equality_residuals",
                           FrozenDict(self.equality_residuals or {}))
        object.__setattr__(self, "timings", FrozenDict(self.timings))
        for name in ("x_array", "violations"):
            arr = np.array(getattr(self, name), dtype=np.float64)
            arr.setflags(write=False)
            object.__setattr__(self, name, arr)

    def __repr__(self) -> str:
        lines = [f"Result(success={self.success}, status={self.status.name})",
                 f"  message: {self.message}",
                 f"  fun:     {_fmt(self.fun)}",
                 f"  feasible: {self.feasible} (maxcv {self.maxcv:.3g})"]
        if len(self.x_array) <= 12:
            for s, v in self.x.items():
                shown = v if isinstance(v, int) or np.ndim(v) else _fmt(float(v))
                lines.append(f"  {s} = {shown}")
        else:
            lines.append(f"  x: {len(self.x_array)} values, x_array[:5] = {self.x_array[:5]}")
        t = ", ".join(f"{k} {v:.3f}s" for k, v in self.timings.items())
        lines.append(f"  nit {self.nit}, nfev {self.nfev}, seed {self.seed}, device {self.device}")
        lines.append(f"  timings: {t}")
        if self.equality_residuals:
            res = list(self.equality_residuals.values())
            lines.append(f"  equalities: {len(res)}, largest |h| {max(res):.3g}")
        if self.cross_check is not None:
            lines.append(f"  cross_check: {self.cross_check.verdict}")
        if self.lower_bound is not None:
            cert = self.certificate
            word = "certified" if getattr(cert, "certified", True) else "bound (not certified)"
            if not getattr(cert, "complete", True):
                word += ", incomplete"
            lines.append(f"  {word}: bound {_fmt(self.lower_bound)}, gap {self.gap:.3g}")
        elif self.certificate is not None:
            lines.append(f"  certificate: {self.certificate.kind}")
        return "\n".join(lines)

    __str__ = __repr__

    def _repr_html_(self) -> str:
        """A compact table for Jupyter: status, success, fun, x, maxcv, nfev, time."""
        if len(self.x_array) <= 12:
            shown = ", ".join(f"{s} = {v if isinstance(v, int) or np.ndim(v) else _fmt(float(v))}"
                              for s, v in self.x.items())
        else:
            shown = f"{len(self.x_array)} values, x_array[:5] = {self.x_array[:5]}"
        total = self.timings.get("total")
        rows = [("status", f"{self.status.name}: {self.message}"),
                ("success", str(self.success)), ("fun", _fmt(self.fun)), ("x", shown),
                ("maxcv", f"{self.maxcv:.3g}"), ("nfev", str(self.nfev)),
                ("time", "" if total is None else f"{total:.3f} s")]
        body = "".join(f"<tr><th style='text-align:left'>{k}</th>"
                       f"<td style='text-align:left'>{html.escape(v)}</td></tr>"
                       for k, v in rows)
        return f"<table><caption>constropt Result</caption>{body}</table>"

    def plot(self, path: str | os.PathLike | None = None, ax: Any = None) -> Any:
        """Plot convergence: best objective and best violation against evaluations.

        Two stacked panels sharing the evaluation axis (or, with ``ax``, the objective on
        ``ax`` and the violation on a twin axis): the best objective per generation
        (dashed while the best point is still infeasible) with the final result marked,
        and the total violation of the best point on a log scale while it is positive.
        Needs matplotlib (``pip install "constropt[plot]"``).

        Parameters
        ----------
        path : str or os.PathLike, optional
            Write the figure to this PNG file (drawn with the Agg canvas; the global
            matplotlib backend is left alone).
        ax : matplotlib.axes.Axes, optional
            Draw into these axes instead of a new figure.

        Returns
        -------
        matplotlib.figure.Figure
        """
        return plotter("result")(self, path, ax)

    def to_scipy(self) -> Any:
        """This result as a ``scipy.optimize.OptimizeResult``.

        Fields follow scipy's convention: ``x`` (``x_array``), ``fun`` (the value that
        was minimized: ``-result.fun`` for a maximize problem), ``user_fun``
        (``result.fun``, the user's sense), ``success``, ``status`` (an int, 0 for a
        normal convergence; see ``constropt.problem._scipy.SCIPY_STATUS``), ``message``,
        ``nit``, ``nfev``, ``maxcv``; also ``feasible``, ``violations`` and
        ``constropt_status`` (the :class:`Status`).

        Returns
        -------
        scipy.optimize.OptimizeResult
        """
        return result_to_scipy(self)

    def to_dict(self) -> dict:
        """A JSON-ready dict of every field (symbols as strings, arrays as lists)."""

        def value(v):
            return np.asarray(v).tolist() if np.ndim(v) else v

        cc = None
        if self.cross_check is not None:
            c = self.cross_check
            cc = {"verdict": c.verdict.name.lower(), "message": c.verdict.value,
                  "rtol": c.rtol, "reference_fun": c.reference_fun, "difference": c.difference,
                  "runs": [{"method": r.method, "fun": r.fun, "feasible": r.feasible,
                            "maxcv": r.maxcv, "nfev": r.nfev, "seconds": r.seconds,
                            "note": r.note, "x": np.asarray(r.x).tolist()} for r in c.runs]}
        return {
            "x": {str(k): value(v) for k, v in self.x.items()},
            "x_array": self.x_array.tolist(), "variables": [str(v) for v in self.variables],
            "fun": self.fun, "feasible": self.feasible, "maxcv": self.maxcv,
            "violations": self.violations.tolist(), "success": self.success,
            "status": self.status.name.lower(), "message": self.message, "nit": self.nit,
            "nfev": self.nfev, "seed": self.seed, "device": self.device,
            "backend": self.backend, "timings": dict(self.timings),
            "history": {"nfev": self.history.nfev.tolist(), "fun": self.history.fun.tolist(),
                        "cv": self.history.cv.tolist()},
            "cross_check": cc,
            "equality_residuals": {str(k): v for k, v in self.equality_residuals.items()},
            "verification": None if self.verification is None else {
                "feasible": self.verification.feasible,
                "verdicts": list(self.verification.verdicts),
                "float64_feasible": self.verification.float64_feasible,
                "fun_error": self.verification.fun_error,
                "repaired": self.verification.repaired},
            "lower_bound": self.lower_bound, "gap": self.gap,
            "certificate": None if self.certificate is None else {
                "kind": self.certificate.kind, "statement": self.certificate.statement},
        }


def raise_if_failed(result: Result, throw: bool = True) -> Result:
    """``result``; with ``throw``, :class:`SolveFailedError` carrying it when it failed
    (``success`` False): the ``throw=`` rule of every mode."""
    if throw and not result.success:
        raise SolveFailedError(f"solve failed: {result.message}", result)
    return result
