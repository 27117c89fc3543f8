"""Plots: convergence of a run, and the feasible region of a two-variable problem.

matplotlib is an optional dependency (``pip install "constropt[plot]"``), imported only
inside these functions, never when constropt is imported.  A figure made to be written
to a file is a standalone :class:`matplotlib.figure.Figure` drawn by the Agg canvas: no
pyplot, no change of the global backend, nothing left open.  A figure made without a
``path`` comes from ``pyplot`` (so it shows in notebooks and with ``plt.show()``);
passing ``ax=`` draws into the caller's own axes.

Both plots are registered in :mod:`constropt._plotting`, where
:meth:`constropt.Problem.plot` and :meth:`constropt.Result.plot` find them: the core
never imports this module.
"""

from __future__ import annotations

import os

import numpy as np

from .._errors import OptionError, ProblemError
from .._plotting import register_plot

__all__ = ["plot_result", "plot_problem"]

_FEASIBLE = "#2a9d8f"
_INFEASIBLE = "#e76f51"
_OBJECTIVE = "#264653"
_VIOLATION = "#6d597a"


def _matplotlib():
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise ImportError("plotting needs matplotlib: pip install matplotlib (or "
                          "pip install \"constropt[plot]\")") from None
    import matplotlib.figure

    return matplotlib


def _new_figure(path, nrows: int, figsize):
    """A figure with ``nrows`` stacked axes: standalone Agg when writing a file."""
    _matplotlib()
    if path is not None:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        fig = Figure(figsize=figsize, layout="constrained")
        FigureCanvasAgg(fig)
    else:
        import matplotlib.pyplot as plt

        fig = plt.figure(figsize=figsize, layout="constrained")
    axes = fig.subplots(nrows, 1, sharex=True, squeeze=False)[:, 0]
    return fig, list(axes)


def _save(fig, path) -> None:
    if path is not None:
        fig.savefig(os.fspath(path), dpi=110, format="png")


def _outside_legend(ax, handles=None, labels=None, **kw):
    """The legend beside the axes (right of them), never over the data: inside, "best"
    placement still covered the result's star."""
    if handles is None:
        handles, labels = ax.get_legend_handles_labels()
    if not handles:
        return None
    return ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.02, 1.0),
                     borderaxespad=0.0, fontsize="small", **kw)


def contour_label(value: float, scale: float) -> str:
    """A contour label: three significant digits, and ``0`` for a level within rounding
    of zero on the plot's scale (a quantile of values around 0 gave ``-4.44e-16``)."""
    if not np.isfinite(value):
        return str(value)
    if abs(value) <= 1e-9 * max(scale, np.finfo(np.float64).tiny):
        return "0"
    text = f"{value:.3g}"
    return "0" if text in ("-0", "0") else text


@register_plot("result")
def plot_result(result, path=None, ax=None):
    """Convergence of a run; see :meth:`constropt.Result.plot`."""
    _matplotlib()
    h = result.history
    nfev = np.asarray(h.nfev, dtype=np.float64)
    fun = np.asarray(h.fun, dtype=np.float64)
    cv = np.asarray(h.cv, dtype=np.float64)
    if ax is None:
        fig, (ax_f, ax_v) = _new_figure(path, 2, (8.6, 5.6))
    else:
        fig = ax.figure
        ax_f, ax_v = ax, ax.twinx()

    # objective: solid where the best point is feasible, dashed while it is not
    feas = cv == 0
    finite = np.isfinite(fun)
    # the dashed stretch runs on to the first feasible point, so the two lines join
    dashed = ~feas | np.concatenate([[False], ~feas[:-1]])[:feas.size]
    # a line (and its legend entry) only where it has a point to draw
    infeasible_part = np.where(finite & dashed, fun, np.nan)
    if np.any(finite & ~feas):
        ax_f.plot(nfev, infeasible_part, color=_INFEASIBLE, ls="--", lw=1.2,
                  label="best objective (infeasible point)")
    if np.any(finite & feas):
        ax_f.plot(nfev, np.where(finite & feas, fun, np.nan), color=_OBJECTIVE, lw=1.6,
                  label="best objective (feasible point)")
    if np.isfinite(result.fun):
        ax_f.plot([result.nfev], [result.fun], marker="*", ms=12, ls="none",
                  color=_FEASIBLE if result.feasible else _INFEASIBLE,
                  label=f"result {result.fun:.8g}" + ("" if result.feasible else " (infeasible)"))
    sense = "max" if getattr(result.problem, "maximize", False) else "min"
    ax_f.set_ylabel(f"best objective ({sense}imize)")
    ax_f.grid(True, alpha=0.3)

    # violation: log scale over its positive part; zero cannot sit on a log axis
    pos = cv > 0
    if pos.any():
        ax_v.semilogy(nfev, np.where(pos, cv, np.nan), color=_VIOLATION, lw=1.4,
                      marker="." if pos.sum() < 20 else None,  # a few points stay visible
                      label="violation of the best point")
        if feas.any():
            first = nfev[np.argmax(feas)]
            ax_v.axvline(first, color=_FEASIBLE, ls=":", lw=1.2,
                         label=f"feasible from {int(first)} evaluations")
    elif cv.size and result.feasible:  # said in the legend: a text over the curves
        ax_v.plot(nfev, cv, color=_FEASIBLE, lw=1.4,
                  label="violation 0: best point feasible throughout")
        ax_v.set_yticks([0.0])
    elif cv.size:  # the search's band saw no violation; the result's exact check did
        ax_v.plot(nfev, cv, color=_VIOLATION, lw=1.4,
                  label="violation 0 in the search (the result's check: infeasible)")
        ax_v.set_yticks([0.0])
    if not cv.size:  # no search ran (an infeasibility proof): the result's point alone
        total = float(np.sum(result.violations))
        if total > 0:
            ax_v.semilogy([result.nfev], [total], marker="*", ms=12, ls="none",
                          color=_INFEASIBLE,
                          label=f"violation of the result {total:.3g} (no search run)")
        else:
            ax_v.plot([result.nfev], [0.0], marker="*", ms=12, ls="none",
                      color=_FEASIBLE, label="violation of the result 0 (no search run)")
            ax_v.set_yticks([0.0])
    ax_v.set_ylabel("total violation")
    if ax is None:
        ax_v.set_xlabel("evaluations")
        ax_v.grid(True, alpha=0.3)
        ax_f.set_title(f"convergence: {result.status.name}, nit {result.nit}, "
                       f"nfev {result.nfev}", fontsize="medium")
        _outside_legend(ax_f)
        _outside_legend(ax_v)
    else:  # twin axes: one legend for both
        ax_f.set_xlabel("evaluations")
        h_f, l_f = ax_f.get_legend_handles_labels()
        h_v, l_v = ax_v.get_legend_handles_labels()
        _outside_legend(ax_f, h_f + h_v, l_f + l_v)
    _save(fig, path)
    return fig


def _window(problem, limits):
    box = dict(problem.bounds)
    if limits is not None:
        if not isinstance(limits, dict):
            raise OptionError(f"limits must be a dict {{symbol: (lo, hi)}}, got {limits!r}")
        for s, pair in limits.items():
            if s not in box:
                raise OptionError(f"limits given for {s}, which is not a variable of the "
                                  f"problem (variables: {list(problem.variables)})")
            try:
                lo, hi = (float(v) for v in pair)
            except (TypeError, ValueError):
                raise OptionError(f"limits for {s} must be a pair of numbers, got "
                                  f"{pair!r}") from None
            if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
                raise OptionError(f"limits for {s} must be finite with lo < hi, got {pair!r}")
            box[s] = (lo, hi)
    return [box[v] for v in problem.variables]


def _levels(F: np.ndarray, count: int = 15):
    """Contour levels at quantiles of the finite objective values (even spread of lines)."""
    vals = F[np.isfinite(F)]
    if vals.size < 2:
        return None
    levels = np.unique(np.quantile(vals, np.linspace(0.02, 0.98, count)))
    return levels if levels.size >= 2 else None


@register_plot("problem")
def plot_problem(problem, result=None, path=None, resolution: int = 200, *, ax=None,
                 limits=None, parameters=None):
    """Feasible region and objective contours; see :meth:`constropt.Problem.plot`."""
    if problem.n != 2 or problem.has_vector_variables:
        raise ProblemError(f"problem.plot needs exactly 2 scalar variables, this problem has "
                           f"{problem.n} values in variables {list(problem.variables)}")
    if isinstance(resolution, bool) or not isinstance(resolution, (int, np.integer)) or not (
            2 <= resolution <= 4000):
        raise OptionError(f"resolution must be an integer in [2, 4000], got {resolution!r}")
    if result is not None and np.asarray(result.x_array).shape != (2,):
        raise OptionError("result is not a result of this two-variable problem (its x_array "
                          f"has shape {np.asarray(result.x_array).shape})")
    _matplotlib()
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    (x_lo, x_hi), (y_lo, y_hi) = _window(problem, limits)
    xs = np.linspace(x_lo, x_hi, int(resolution))
    ys = np.linspace(y_lo, y_hi, int(resolution))
    XX, YY = np.meshgrid(xs, ys)
    pts = np.column_stack([XX.ravel(), YY.ravel()])
    ev = problem.evaluate(pts, parameters=parameters)
    F = np.asarray(ev.fun, dtype=np.float64).reshape(XX.shape)
    feasible = np.asarray(ev.feasible, dtype=bool).reshape(XX.shape)

    if ax is None:
        fig, (ax,) = _new_figure(path, 1, (8.6, 5.4))
    else:
        fig = ax.figure
    handles = []
    if feasible.any():
        ax.contourf(XX, YY, feasible.astype(float), levels=[0.5, 1.5], colors=[_FEASIBLE],
                    alpha=0.25)
        handles.append(Patch(facecolor=_FEASIBLE, alpha=0.25, label="feasible region"))
    elif not any(lf.kind == "eq" for lf in problem.leaves):
        # said in the legend (a text on the axes sat on the contour labels)
        handles.append(Patch(facecolor="none", edgecolor=_INFEASIBLE,
                             label="no feasible grid point in this window"))
    levels = _levels(F)
    if levels is not None:
        with np.errstate(invalid="ignore"):
            cs = ax.contour(XX, YY, np.ma.masked_invalid(F), levels=levels, cmap="viridis",
                            linewidths=0.9)
        scale = float(np.max(np.abs(levels)))
        ax.clabel(cs, inline=True, fontsize=7, fmt=lambda v: contour_label(v, scale))
        handles.append(Line2D([], [], color="#440154", lw=0.9, label="objective contours"))
    _draw_boundaries(ax, problem, pts, parameters, XX, YY, handles)
    px, py, label, marker_color = _marker(problem, result, feasible, F, XX, YY)
    if px is not None:
        ax.plot([px], [py], marker="*", ms=15, color=marker_color, mec="white", mew=0.8,
                ls="none")
        handles.append(Line2D([], [], marker="*", ms=12, color=marker_color, ls="none",
                              label=label))
    u, v = problem.variables
    ax.set_xlabel(str(u))
    ax.set_ylabel(str(v))
    ax.set_xlim(x_lo, x_hi)
    ax.set_ylim(y_lo, y_hi)
    sense = "maximize" if problem.maximize else "minimize"
    ax.set_title(f"{sense} {problem.objective}", fontsize="medium")
    _outside_legend(ax, handles, [h.get_label() for h in handles], framealpha=0.85)
    _save(fig, path)
    return fig


def _draw_boundaries(ax, problem, pts, parameters, XX, YY, handles) -> None:
    """Each constraint leaf's boundary ``c(x) = 0`` that crosses the window (legend
    entries appended to ``handles``); an equality's feasible set is too thin for the
    grid, so its curve ``h(x) = 0`` is drawn in the feasible colour instead."""
    from matplotlib.lines import Line2D

    pvec = problem.parameter_vector(parameters)
    if not problem.leaves:
        return
    with np.errstate(all="ignore"):
        _, C = problem.lowering.functions("numpy")["leaves"](
            np.ascontiguousarray(pts.T), pvec.reshape(-1, 1))
    C = np.asarray(C, dtype=np.float64).reshape(-1, *XX.shape)
    drawn = set()
    for leaf, c in zip(problem.leaves, C, strict=True):
        ok = np.isfinite(c)
        if not (ok.any() and c[ok].min() < 0 < c[ok].max()):
            continue
        eq = leaf.kind == "eq"
        ax.contour(XX, YY, np.ma.masked_invalid(c), levels=[0.0],
                   colors=_FEASIBLE if eq else "0.35", linewidths=2.0 if eq else 0.8,
                   linestyles="-" if eq else "--")
        drawn.add(eq)
    if False in drawn:
        handles.append(Line2D([], [], color="0.35", lw=0.8, ls="--",
                              label="constraint boundaries"))
    if True in drawn:
        handles.append(Line2D([], [], color=_FEASIBLE, lw=2.0,
                              label="equality constraints h(x) = 0"))


def _marker(problem, result, feasible, F, XX, YY):
    """``(x, y, label, colour)`` of the star: ``result``'s point or, without a result,
    the best feasible grid point (``x, y`` None when there is none)."""
    if result is not None:
        px, py = (float(v) for v in result.x_array)
        label = f"result: f = {result.fun:.8g}" + ("" if result.feasible else " (infeasible)")
        return px, py, label, "#d62828" if result.feasible else _INFEASIBLE
    sense = -1.0 if problem.maximize else 1.0
    key = np.where(feasible & np.isfinite(F), sense * F, np.inf)
    k = int(np.argmin(key))
    if np.isfinite(key.ravel()[k]):
        return (float(XX.ravel()[k]), float(YY.ravel()[k]),
                f"best grid point: f = {F.ravel()[k]:.6g}", "#d62828")
    return None, None, None, "#d62828"
