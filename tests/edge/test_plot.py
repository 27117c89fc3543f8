"""Plots: ``Result.plot`` and ``Problem.plot`` write real PNG images with the Agg canvas."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import sympy as sp

import constropt

matplotlib = pytest.importorskip("matplotlib")
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.image import imread  # noqa: E402

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
x, y = sp.symbols("x y")


@pytest.fixture(scope="module")
def problem():
    return constropt.Problem((x - 1) ** 2 + (y - 2) ** 2, [x + y <= 2, x**2 - y <= 1],
                             bounds={x: (-3, 3), y: (-3, 3)})


@pytest.fixture(scope="module")
def result(problem):
    return constropt.solve(problem, seed=0, device="cpu")


def check_png(path: Path, min_side: int = 200) -> np.ndarray:
    """A real, non-blank PNG: magic bytes, a sensible size, more than one colour."""
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC
    assert len(data) > 5_000
    img = imread(path)
    assert img.ndim == 3 and img.shape[2] in (3, 4)
    assert min(img.shape[:2]) >= min_side
    assert np.unique(img.reshape(-1, img.shape[2]), axis=0).shape[0] > 20
    return img


def test_result_plot_writes_png(result, tmp_path):
    assert result.success and result.fun == pytest.approx(0.5, abs=1e-7)
    out = tmp_path / "convergence.png"
    fig = result.plot(out)
    assert isinstance(fig, Figure)
    img = check_png(out)
    assert img.shape[0] > img.shape[1] * 0.6  # two stacked panels
    axes = fig.get_axes()
    assert len(axes) == 2
    assert axes[1].get_xlabel() == "evaluations"
    assert "objective" in axes[0].get_ylabel()


def test_result_plot_log_scale_while_infeasible(tmp_path):
    # an equality the search approaches from outside: violation stays positive a while
    res = constropt.solve(x * y, [sp.Eq(x**2 + y**2, 4)], bounds={x: (-3, 3), y: (-3, 3)},
                          seed=0, device="cpu")
    assert (res.history.cv > 0).any()
    fig = res.plot(tmp_path / "eq.png")
    check_png(tmp_path / "eq.png")
    assert fig.get_axes()[1].get_yscale() == "log"


def test_problem_plot_writes_png(problem, result, tmp_path):
    out = tmp_path / "region.png"
    fig = problem.plot(result, out, resolution=80)
    assert isinstance(fig, Figure)
    check_png(out)
    (ax,) = fig.get_axes()
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("x", "y")
    # the window is the search box (bound propagation tightens x to [-2, 2] here)
    assert ax.get_xlim() == pytest.approx(problem.bounds[x])
    # the optimum is marked at the result's point
    stars = [ln for ln in ax.get_lines() if ln.get_marker() == "*"]
    assert len(stars) == 1
    np.testing.assert_allclose(np.ravel(stars[0].get_xydata()), result.x_array)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "feasible region" in labels and any(t.startswith("result") for t in labels)


def test_problem_plot_without_result_marks_best_grid_point(problem, tmp_path):
    fig = problem.plot(path=str(tmp_path / "grid.png"), resolution=61,
                       limits={x: (-1, 2), y: (0, 2.5)})
    check_png(tmp_path / "grid.png")
    (ax,) = fig.get_axes()
    assert ax.get_xlim() == (-1.0, 2.0) and ax.get_ylim() == (0.0, 2.5)
    (star,) = [ln for ln in ax.get_lines() if ln.get_marker() == "*"]
    px, py = np.ravel(star.get_xydata())
    assert px + py <= 2 + 1e-12 and abs(px - 0.5) < 0.1 and abs(py - 1.5) < 0.1


def test_plots_draw_into_given_axes(problem, result, tmp_path):
    fig = Figure(figsize=(10, 4))
    ax1, ax2 = fig.subplots(1, 2)
    assert result.plot(ax=ax1) is fig
    assert problem.plot(result, ax=ax2, resolution=40) is fig
    assert len(fig.get_axes()) == 3  # result.plot adds a twin axis for the violation
    fig.savefig(tmp_path / "both.png")
    check_png(tmp_path / "both.png")


def test_problem_plot_needs_two_scalar_variables():
    z = sp.Symbol("z")
    p3 = constropt.Problem(x + y + z, [x + y + z >= 1], bounds={x: (0, 1), y: (0, 1),
                                                                z: (0, 1)})
    with pytest.raises(constropt.ProblemError, match="exactly 2 scalar variables"):
        p3.plot()
    p1 = constropt.Problem(x**2, [x >= 1], bounds={x: (None, 4)})
    with pytest.raises(constropt.ProblemError, match="exactly 2 scalar variables"):
        p1.plot()


def test_problem_plot_bad_options(problem):
    with pytest.raises(constropt.OptionError, match="resolution"):
        problem.plot(resolution=1)
    with pytest.raises(constropt.OptionError, match="limits"):
        problem.plot(limits={x: (2, 1)})
    with pytest.raises(constropt.OptionError, match="limits"):
        problem.plot(limits={sp.Symbol("w"): (0, 1)})


def test_matplotlib_stays_lazy_and_backend_untouched(tmp_path):
    """Importing constropt loads no matplotlib; writing files loads no pyplot."""
    code = (
        "import sys, sympy as sp, constropt\n"
        "assert 'matplotlib' not in sys.modules, 'matplotlib imported with constropt'\n"
        "x, y = sp.symbols('x y')\n"
        "p = constropt.Problem(x + y, [x*y >= 1], bounds={x: (0.1, 3), y: (0.1, 3)})\n"
        "r = constropt.solve(p, seed=0, device='cpu', max_generations=20)\n"
        f"r.plot({str(tmp_path / 'a.png')!r}); p.plot(r, {str(tmp_path / 'b.png')!r}, 30)\n"
        "assert 'matplotlib.pyplot' not in sys.modules, 'pyplot imported to write a file'\n"
        "print('ok')\n")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(Path(constropt.__file__).parents[1]), env.get("PYTHONPATH", "")])
    env.pop("MPLBACKEND", None)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
    check_png(tmp_path / "a.png")
    check_png(tmp_path / "b.png")


def _bbox(artist, fig):
    return artist.get_window_extent(fig.canvas.get_renderer())


def test_legend_does_not_cover_the_result_star(problem, result, tmp_path):
    # the optimum (0.5, 1.5) sits in the upper left, where "best" placement put the legend
    fig = problem.plot(result, tmp_path / "star.png", resolution=60)
    (ax,) = fig.get_axes()
    (star,) = [ln for ln in ax.get_lines() if ln.get_marker() == "*"]
    px, py = ax.transData.transform(star.get_xydata()[0])
    legend = _bbox(ax.get_legend(), fig)
    assert not legend.contains(px, py)
    assert not legend.overlaps(_bbox(ax.patch, fig))  # beside the axes, not over them
    # the convergence plot: the same for its result star
    fig = result.plot(tmp_path / "conv.png")
    ax_f = fig.get_axes()[0]
    (star,) = [ln for ln in ax_f.get_lines() if ln.get_marker() == "*"]
    px, py = ax_f.transData.transform(star.get_xydata()[0])
    assert not _bbox(ax_f.get_legend(), fig).contains(px, py)


def _legend_labels(ax):
    return [t.get_text() for t in ax.get_legend().get_texts()]


def test_convergence_legend_names_only_drawn_lines(tmp_path):
    # x + y with a box inside the feasible set: the best point is feasible from the start
    p = constropt.Problem(x + y, [x + y >= -10], bounds={x: (0, 1), y: (0, 1)})
    res = constropt.solve(p, seed=0, device="cpu", max_generations=10)
    assert (res.history.cv == 0).all()
    fig = res.plot(tmp_path / "feasible.png")
    ax_f, ax_v = fig.get_axes()
    labels = _legend_labels(ax_f)
    assert "best objective (infeasible point)" not in labels
    drawn = {ln.get_label() for ln in ax_f.get_lines()
             if np.isfinite(np.asarray(ln.get_ydata(), dtype=float)).any()}
    assert set(labels) == drawn
    # no free text over the curves: the feasibility note is a legend entry
    assert len(ax_v.texts) == 0 and any("feasible throughout" in t for t in _legend_labels(ax_v))
    # twin axes (ax=): one legend, the same rule
    fig2 = Figure()
    ax = fig2.subplots()
    res.plot(ax=ax)
    assert "best objective (infeasible point)" not in _legend_labels(ax)


def test_convergence_legend_while_infeasible_throughout(tmp_path):
    # x**4 + y**4 <= 1 on the unit circle: never feasible (propagation cannot prove
    # it), so the search runs and stays infeasible
    p = constropt.Problem(x + y, [sp.Eq(x**2 + y**2, 1), x**4 + y**4 >= 1.5],
                          bounds={x: (-2, 2), y: (-2, 2)})
    assert p.infeasibility_proof is None
    res = constropt.solve(p, seed=0, device="cpu", max_generations=5, polish=False)
    assert not res.feasible and (res.history.cv > 0).all()
    fig = res.plot(tmp_path / "inf.png")
    labels = _legend_labels(fig.get_axes()[0])
    assert "best objective (feasible point)" not in labels


def test_convergence_plot_of_a_proven_infeasible_problem_shows_its_violation(tmp_path):
    # a disc and a far half-plane: interval propagation proves it infeasible, no search
    # runs (an empty history); the plot said "best point feasible throughout"
    p = constropt.Problem(x + y, [x**2 + y**2 <= 1, x + y >= 3],
                          bounds={x: (-4, 4), y: (-4, 4)})
    res = constropt.solve(p, seed=0, device="cpu")
    assert not res.feasible and res.history.nfev.size == 0
    want = 3 - np.sqrt(2)  # the least violation, at (1, 1) / sqrt(2)
    assert np.sum(res.violations) == pytest.approx(want, abs=1e-6)
    fig = res.plot(tmp_path / "proven.png")
    ax_v = fig.get_axes()[1]
    labels = _legend_labels(ax_v)
    assert not any("feasible throughout" in t for t in labels), labels
    (star,) = [ln for ln in ax_v.get_lines() if ln.get_marker() == "*"]
    assert star.get_ydata()[0] == pytest.approx(want, abs=1e-6)
    assert any("no search run" in t for t in labels)


def test_contour_labels_round_tiny_levels_to_zero(tmp_path):
    from constropt.interface._plot import contour_label

    assert contour_label(-4.440892098500626e-16, 2.0) == "0"
    assert contour_label(0.0, 2.0) == "0" and contour_label(-1e-4, 1e-4) == "-0.0001"
    assert contour_label(1.23456, 2.0) == "1.23" and contour_label(-3e7, 3e7) == "-3e+07"
    # x - y on a symmetric box: the middle level is 0 up to rounding
    p = constropt.Problem(x - y, [x + y <= 1], bounds={x: (-1, 1), y: (-1, 1)})
    fig = p.plot(path=tmp_path / "zero.png", resolution=41)
    (ax,) = fig.get_axes()
    texts = [t.get_text() for t in ax.texts]
    assert texts and not any("e-1" in t for t in texts)
    for t in texts:
        float(t)  # every label a plain number
