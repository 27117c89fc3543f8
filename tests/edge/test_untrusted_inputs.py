"""Problem files and command-line inputs from an untrusted source: a file cannot choose
paths to write, cannot blow up memory through YAML aliases or huge echoed values, and
every bad input is one ``error:`` line with exit code 2 (issue 12, items 8-10)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import sympy as sp

import constropt
from constropt import CheckpointError, OptionError, ParseError
from constropt.files import loads_problem

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
BASE = 'objective = "(x - 1)**2"\n[variables]\nx = [-3, 3]\n'


def cli(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "constropt.cli", *map(str, args)], env=ENV,
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT)


def one_error_line(out):
    lines = out.stderr.strip().splitlines()
    assert "Traceback" not in out.stderr, out.stderr
    assert lines and lines[-1].startswith("error:") or "Error:" in out.stderr, out.stderr
    return out.stderr


# -- (8) a file must not choose paths to write or code to run ---------------------------

@pytest.mark.parametrize("key, value", [("checkpoint", '"victim.txt"'),
                                        ("checkpoint_every", "1"),
                                        ("plot", '"victim.png"'),
                                        ("callback", '"print"'),
                                        ("on_generation", '"x"')])
def test_effectful_options_in_a_file_are_refused(key, value):
    with pytest.raises(ParseError, match=rf"options\.{key}: not allowed in a problem file"):
        loads_problem(BASE + f"[options]\n{key} = {value}\n")


def test_harmless_options_in_a_file_still_work():
    spec = loads_problem(BASE + "[options]\nseed = 0\npop_size = 20\nmax_evals = 4000\n")
    assert spec.options == {"seed": 0, "pop_size": 20, "max_evals": 4000}


def test_cli_never_overwrites_a_path_named_by_a_file(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    f = tmp_path / "evil.toml"
    f.write_text(BASE + f'[options]\ncheckpoint = "{victim}"\ncheckpoint_every = 1\n')
    out = cli("solve", f, "--seed", "0")
    assert out.returncode == 2
    assert "options.checkpoint" in one_error_line(out)
    assert victim.read_text() == "precious"


# -- (9) YAML aliases and huge values -----------------------------------------------------

LAUGHS = "\n".join(
    ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    + [f"{c}: &{c} [" + ",".join([f"*{p}"] * 9) + "]" for p, c in zip("abcdefgh", "bcdefghi")]
    + ["objective: *i", "variables: {x: [0, 1]}"])


def test_billion_laughs_yaml_is_refused_quickly():
    pytest.importorskip("yaml")
    assert len(LAUGHS.encode()) < 600  # 9**9 strings once expanded
    t0 = time.perf_counter()
    with pytest.raises(ParseError, match="aliases are not allowed") as err:
        loads_problem(LAUGHS, "yaml")
    assert len(str(err.value)) < 300
    # generous: the point is seconds instead of minutes and gigabytes
    assert time.perf_counter() - t0 < 30


@pytest.mark.parametrize("text", [
    "name = [" + ", ".join(["1"] * 200_000) + "]\n" + BASE,
    BASE.replace("x = [-3, 3]", "x = " + "[" * 50 + "1" + "]" * 50),
    BASE.replace("x = [-3, 3]", 'x = {lower = "' + "1" * 5000 + '"}'),
    BASE + "[parameters]\n" + "a" * 200_000 + "-b = 1\n",
])
def test_echoed_values_are_capped(text):
    with pytest.raises(ParseError) as err:
        loads_problem(text)
    assert len(str(err.value)) < 1000


def test_cli_error_lines_are_capped(tmp_path):
    f = tmp_path / "big.toml"
    f.write_text(BASE + "[options]\npop_size = [" + ", ".join(["7"] * 100_000) + "]\n")
    out = cli("solve", f)
    assert out.returncode == 2
    assert len(one_error_line(out)) < 2100


# -- (10) exit codes and early path checks -----------------------------------------------

@pytest.mark.parametrize("args", [["--checkpoint", "/nonexistent/x"],
                                  ["--plot", "/nonexistent/p.png"],
                                  ["--seed", str(2**64)],
                                  ["--seed", "-1"]])
def test_bad_paths_and_seeds_are_one_line_exit_2(tmp_path, args):
    f = tmp_path / "p.toml"
    f.write_text(BASE)
    out = cli("solve", f, *args)
    assert out.returncode == 2, out.stderr
    one_error_line(out)


def test_throw_in_a_file_keeps_the_infeasible_exit_code(tmp_path):
    f = tmp_path / "nope.toml"
    f.write_text('objective = "x**2 + y**2"\nconstraints = ["x + y >= 3", "x + y <= 1"]\n'
                 "[variables]\nx = [-5, 5]\ny = [-5, 5]\n[options]\nthrow = true\n"
                 "max_evals = 3000\n")
    out = cli("solve", f, "--seed", "0")
    assert out.returncode == 3, out.stderr
    assert "Result(success=False" in out.stdout


def test_api_checks_the_checkpoint_folder_before_searching(tmp_path):
    x = sp.Symbol("x")
    calls = []
    with pytest.raises(CheckpointError, match="does not exist"):
        constropt.solve((x - 1)**2, [x >= -3, x <= 3], seed=0, progress=False,
                        checkpoint=tmp_path / "missing" / "run.ckpt",
                        callback=lambda s: calls.append(s.generation))
    assert calls == []  # refused before the first generation
    with pytest.raises(CheckpointError, match="is a folder"):
        constropt.solve((x - 1)**2, [x >= -3, x <= 3], seed=0, checkpoint=tmp_path)


def test_api_refuses_a_seed_beyond_64_bits():
    x = sp.Symbol("x")
    with pytest.raises(OptionError, match="seed"):
        constropt.solve((x - 1)**2, [x >= -3, x <= 3], seed=2**64)
