"""The command line, through a real subprocess: commands, JSON output, exit codes, and
problem files that must be rejected without executing anything."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
EXAMPLES = ROOT / "examples" / "problems"


def cli(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "constropt.cli", *map(str, args)], env=ENV,
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT)


def test_solve_json_is_the_full_result():
    out = cli("solve", EXAMPLES / "blog_example2.toml", "--seed", "0", "--json", "--history")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["success"] is True and data["feasible"] is True
    assert abs(data["fun"] - 263.1739479) <= 1e-4 * 263.17
    assert set(data["x"]) == {"x", "y", "z"} and data["status"] == "converged"
    assert data["seed"] == 0 and data["nfev"] > 0 and len(data["history"]["fun"]) > 1
    # x**2 + z**2 <= 10 bounds x and z (bound propagation): no default-box warning
    assert "no finite bound" not in out.stderr


def test_json_leaves_out_the_history_unless_asked():
    out = cli("solve", EXAMPLES / "blog_example3.toml", "--seed", "0", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert "history" not in data and data["success"] is True
    assert len(out.stdout.splitlines()) < 80  # one solve, not one line per generation


def test_solve_table_output_and_yaml():
    out = cli("solve", EXAMPLES / "tension_spring.yaml", "--seed", "1", "--max-evals", "20000")
    assert out.returncode == 0, out.stderr
    assert "Result(success=True" in out.stdout and "fun:" in out.stdout


@pytest.mark.slow  # subprocesses / compiles: 30-170 s on a loaded 2-core CI box
def test_check_prints_the_cross_check_table():
    out = cli("check", EXAMPLES / "blog_example3.toml", "--seed", "0")
    assert out.returncode == 0, out.stderr
    assert "differential_evolution" in out.stdout and "verdict: agree" in out.stdout


def test_infeasible_problem_exit_code(tmp_path):
    f = tmp_path / "nope.toml"
    f.write_text('objective = "x**2 + y**2"\nconstraints = ["x + y >= 3", "x + y <= 1"]\n'
                 "[variables]\nx = [-5, 5]\ny = [-5, 5]\n")
    out = cli("solve", f, "--seed", "0", "--json")
    assert out.returncode == 3, out.stderr
    data = json.loads(out.stdout)
    assert data["feasible"] is False and data["status"] == "infeasible"


def test_syntax_error_is_bad_input(tmp_path):
    f = tmp_path / "bad.toml"
    f.write_text('objective = "x**2 +* 3"\n[variables]\nx = [0, 1]\n')
    out = cli("solve", f)
    assert out.returncode == 2
    assert "error:" in out.stderr and "objective" in out.stderr and "line 1" in out.stderr


@pytest.mark.parametrize("expr, what", [
    ("__import__('os').system('touch {marker}')", "not allowed"),
    ("x.__class__", "attribute"),
    ("(lambda: 0)()", "lambda"),
    ("[x for x in (1, 2)]", "comprehension"),
])
def test_forbidden_constructs_are_rejected_and_never_executed(tmp_path, expr, what):
    marker = tmp_path / "MARKER"
    f = tmp_path / "evil.toml"
    text = expr.format(marker=marker).replace('"', '\\"')
    f.write_text(f'objective = "{text}"\n[variables]\nx = [0, 1]\n')
    out = cli("solve", f)
    assert out.returncode == 2, out.stdout
    assert "error:" in out.stderr and what in out.stderr.lower()
    assert not marker.exists()


def test_unknown_option_in_file_is_bad_input(tmp_path):
    f = tmp_path / "opt.toml"
    f.write_text('objective = "x**2"\n[variables]\nx = [0, 1]\n[options]\npopsize = 10\n')
    out = cli("solve", f)
    assert out.returncode == 2 and "unknown option 'popsize'" in out.stderr


@pytest.mark.slow  # subprocesses / compiles: 30-170 s on a loaded 2-core CI box
def test_demo_runs_both_examples():
    out = cli("demo")
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("verdict: agree") == 2
    assert "blog_example2" in out.stdout and "blog_example3" in out.stdout


@pytest.mark.slow  # subprocesses / compiles: 30-170 s on a loaded 2-core CI box
@pytest.mark.compile
def test_bench_prints_a_table():
    out = cli("bench", "--population", "20000", "--repeats", "1", timeout=600)
    assert out.returncode == 0, out.stderr
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("| 2 ") or ln.startswith("| 3 ")]
    assert len(lines) == 2


def test_version_and_help():
    assert cli("--version").returncode == 0
    out = cli("--help")
    assert out.returncode == 0 and all(c in out.stdout for c in ("solve", "check", "demo", "bench"))


@pytest.mark.slow  # subprocesses / compiles: 30-170 s on a loaded 2-core CI box
def test_plot_option_writes_pngs(tmp_path):
    pytest.importorskip("matplotlib")
    f = tmp_path / "two.toml"
    f.write_text('objective = "(x - 1)**2 + (y - 2)**2"\nconstraints = ["x + y <= 2"]\n'
                 "[variables]\nx = [-3, 3]\ny = [-3, 3]\n")
    png = tmp_path / "run.png"
    out = cli("solve", f, "--seed", "0", "--plot", png)
    assert out.returncode == 0, out.stderr
    for p in (png, tmp_path / "run-problem.png"):
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and p.stat().st_size > 5000


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_backend_flag_picks_the_array_library(backend):
    out = cli("solve", EXAMPLES / "blog_example3.toml", "--seed", "0", "--json",
              "--backend", backend)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["backend"] == backend and data["success"] is True
    # the blog's example 3 optimum, -1.1277249018 (polished: far inside 1e-6)
    assert abs(data["fun"] - (-1.1277249018)) <= 1e-6


def test_backend_flag_refuses_bad_values_and_conflicts():
    out = cli("solve", EXAMPLES / "blog_example3.toml", "--backend", "jax")
    assert out.returncode == 2 and "'jax' is not one of" in out.stderr
    out = cli("solve", EXAMPLES / "blog_example3.toml", "--backend", "numpy",
              "--device", "cuda")
    assert out.returncode == 2, out.stderr
    assert out.stderr.startswith("error: backend='numpy' runs on the CPU")
    assert "Traceback" not in out.stderr
