"""Checkpoint and resume: exact continuation, atomic files, refusal of bad checkpoints."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest

import constropt
from constropt import CheckpointError, benchmarks

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "src")}


def _problem(name="G07"):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return benchmarks.get(name).problem()


_KILLED = textwrap.dedent("""
    import os, signal, sys, constropt
    from constropt import benchmarks
    p = benchmarks.get("G07").problem()
    def cb(state):
        if state.generation == 120:   # checkpoints were written at 50 and 100
            os.kill(os.getpid(), signal.SIGKILL)
    constropt.solve(p, seed=3, max_evals=200_000, checkpoint=sys.argv[1],
                    checkpoint_every=50, callback=cb)
    print("not killed")
""")


@pytest.mark.slow  # subprocesses / compiles: 30-170 s on a loaded 2-core CI box
def test_resume_after_kill_matches_an_uninterrupted_run(tmp_path):
    ckpt = tmp_path / "run.ckpt"
    proc = subprocess.run([sys.executable, "-c", _KILLED, str(ckpt)], env=ENV,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert ckpt.exists() and not list(tmp_path.glob(".constropt-*"))  # no temp files left
    resumed = constropt.resume(ckpt)
    # G07 is convex: a plain solve answers it by a local solve, while a run with a
    # checkpoint (and its resume) always searches, without the local search stage (its
    # record of minima is not checkpointed); compare with that search path
    full = constropt.solve(_problem(), seed=3, max_evals=200_000, local_first=False,
                           local_search=False)
    np.testing.assert_array_equal(resumed.x_array, full.x_array)
    assert resumed.fun == full.fun and resumed.nfev == full.nfev and resumed.nit == full.nit
    np.testing.assert_array_equal(resumed.history.fun, full.history.fun)
    assert resumed.success


def test_resume_in_process_after_interrupt(tmp_path):
    ckpt = tmp_path / "b.ckpt"
    p = _problem("G09")

    def stop(state):
        if state.generation == 60:
            raise KeyboardInterrupt

    part = constropt.solve(p, seed=1, checkpoint=ckpt, checkpoint_every=20, callback=stop)
    assert part.status is constropt.Status.INTERRUPTED and part.success is False
    resumed = constropt.resume(ckpt, problem=p)
    # a checkpointed run (and its resume) searches without the multistart stage
    full = constropt.solve(p, seed=1, local_search=False)
    assert resumed.fun == full.fun and resumed.nfev == full.nfev


def test_mismatched_problem_is_refused(tmp_path):
    ckpt = tmp_path / "c.ckpt"
    constropt.solve(_problem("G06"), seed=0, checkpoint=ckpt, checkpoint_every=10,
                    max_generations=25)
    with pytest.raises(CheckpointError, match="different problem"):
        constropt.resume(ckpt, problem=_problem("G08"))


def test_corrupt_and_foreign_files_are_refused(tmp_path):
    bad = tmp_path / "bad.ckpt"
    bad.write_bytes(b"\x00garbage" * 10)
    with pytest.raises(CheckpointError, match="corrupt"):
        constropt.resume(bad)
    with pytest.raises(CheckpointError, match="does not exist"):
        constropt.resume(tmp_path / "missing.ckpt")
    import torch
    other = tmp_path / "other.ckpt"
    torch.save({"weights": torch.zeros(3)}, other)
    with pytest.raises(CheckpointError, match="not a constropt checkpoint"):
        constropt.resume(other)


@pytest.mark.slow  # subprocesses / compiles: 30-170 s on a loaded 2-core CI box
def test_cli_resume(tmp_path):
    ckpt = tmp_path / "cli.ckpt"
    problem_file = ROOT / "examples" / "problems" / "blog_example3.toml"
    cli = [sys.executable, "-m", "constropt.cli", "solve", str(problem_file)]
    first = subprocess.run(cli + ["--seed", "0", "--checkpoint", str(ckpt),
                                  "--checkpoint-every", "10"],
                           env=ENV, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0 and ckpt.exists(), first.stderr
    again = subprocess.run(cli + ["--resume", "--checkpoint", str(ckpt), "--json"], env=ENV,
                           capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    other = ROOT / "examples" / "problems" / "blog_example2.toml"
    wrong = subprocess.run([sys.executable, "-m", "constropt.cli", "solve", str(other),
                            "--resume", "--checkpoint", str(ckpt)], env=ENV,
                           capture_output=True, text=True, timeout=300)
    assert wrong.returncode == 2 and "different problem" in wrong.stderr
