"""The ``constropt`` command line.

Commands: ``solve FILE`` (a TOML/YAML problem file), ``check FILE`` (solve plus the
scipy cross-check), ``demo`` (the original experiment's examples) and ``bench`` (the
quick benchmark table).

Exit codes: 0 solved; 3 no feasible point found (``INFEASIBLE``); 4 another failure
(unbounded, interrupted, a budget such as ``--time-limit`` that ended the run before a
feasible point was found); 2 bad input (a problem file or option constropt rejects, an output path
that cannot be written, or a usage error), reported as one ``error:`` line on stderr.
"""

from __future__ import annotations

import json
import math
import os
import sys
import warnings

import click

from . import __version__
from ._errors import ConstroptError, SolveFailedError
from .files import load_problem
from .finish._result import Status
from .interface._demo import run_demo
from .interface._quickbench import quick_table
from .parallel._group import DistributedError
from .parallel._islands import solve_islands
from .solver._solve import resume as resume_run
from .solver._solve import solve

EXIT_OK, EXIT_BAD_INPUT, EXIT_INFEASIBLE, EXIT_FAILED = 0, 2, 3, 4

#: An error message longer than this is cut (messages may echo input values).
MAX_MESSAGE = 2000

__all__ = ["main", "EXIT_OK", "EXIT_BAD_INPUT", "EXIT_INFEASIBLE", "EXIT_FAILED"]


def _clean(obj):
    """Non-finite floats -> None, so the JSON output is strict JSON."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    return obj


def _exit_code(result) -> int:
    if result.success:
        return EXIT_OK
    return EXIT_INFEASIBLE if result.status is Status.INFEASIBLE else EXIT_FAILED


def _check_output_path(path, what: str) -> None:
    """Fail before any work when ``path`` cannot be written (missing or read-only folder,
    or a folder in its place): a usage error, exit code 2."""
    if path is None:
        return
    folder = os.path.dirname(os.path.abspath(path)) or "."
    if os.path.isdir(path):
        raise click.BadParameter(f"{path!r} is a folder, not a file", param_hint=what)
    if not os.path.isdir(folder):
        raise click.BadParameter(f"folder {folder!r} does not exist", param_hint=what)
    if not os.access(folder, os.W_OK):
        raise click.BadParameter(f"folder {folder!r} is not writable", param_hint=what)


def _emit(result, as_json: bool, plot: str | None, history: bool = False) -> None:
    if as_json:
        data = result.to_dict()
        if not history:
            del data["history"]
        click.echo(json.dumps(_clean(data), indent=2))
    else:
        click.echo(repr(result))
        if result.cross_check is not None:
            click.echo("")
            click.echo(result.cross_check.table())
    if plot:
        result.plot(plot)
        problem = result.problem
        if problem is not None and problem.n == 2 and not problem.has_vector_variables:
            root, dot, ext = plot.rpartition(".")
            region = f"{root}-problem.{ext}" if dot else f"{plot}-problem.png"
            problem.plot(result, path=region)


_common = [
    click.option("--device", default="auto", show_default=True,
                 help="'auto', 'cpu', 'cuda' or 'cuda:K'."),
    click.option("--backend", type=click.Choice(["auto", "numpy", "torch"]), default=None,
                 help="Array library of the search: 'numpy' (small problems on the CPU, "
                      "no torch import), 'torch' (large problems, CUDA, compiled steps) or "
                      "'auto' (NumPy for small CPU work; the default unless the file's "
                      "[options] say otherwise)."),
    click.option("--seed", type=click.IntRange(0, 2**64 - 1), default=None,
                 help="Random seed (reproducible runs), 0 to 2**64 - 1."),
    click.option("--max-evals", type=int, default=None, help="Evaluation budget."),
    click.option("--time-limit", type=float, default=None,
                 help="Seconds for the whole solve, counted from the call: setup, "
                      "search and polish (the final check and the cross-check of "
                      "`check` come after it)."),
    click.option("--pop-size", type=int, default=None, help="Population size."),
    click.option("--json", "as_json", is_flag=True,
                 help="Print the result as JSON (without the per-generation history)."),
    click.option("--history", is_flag=True,
                 help="With --json: include the per-generation history (nfev, fun, cv)."),
    click.option("--plot", type=click.Path(dir_okay=False), default=None,
                 help="Write a convergence plot (PNG) to this file; for two-variable "
                      "problems also FILE-problem.png (feasible region, contours, optimum)."),
]


def _with_common(f):
    for opt in reversed(_common):
        f = opt(f)
    return f


def _solve_file(path, cross, device, backend, seed, max_evals, time_limit, pop_size,
                ckpt=None, ckpt_every=None, resume=False):
    """Load, solve; warnings (a default box, say) go to stderr as one line each.

    A failed solve is a result with an exit code here, never an exception, even if the
    file's options ask for ``throw``.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            res = _solve_file_quiet(path, cross, device, backend, seed, max_evals,
                                    time_limit, pop_size, ckpt, ckpt_every, resume)
        except SolveFailedError as exc:
            res = exc.result
    for w in caught:
        click.echo(f"warning: {w.message}", err=True)
    return res


def _solve_file_quiet(path, cross, device, backend, seed, max_evals, time_limit, pop_size,
                      ckpt=None, ckpt_every=None, resume=False):
    spec = load_problem(path)
    if resume:
        if not ckpt:
            raise click.UsageError("--resume needs --checkpoint FILE")
        return resume_run(ckpt, problem=spec.to_problem())
    options = dict(spec.options)
    for key, val in (("max_evals", max_evals), ("time_limit", time_limit),
                     ("pop_size", pop_size), ("backend", backend)):
        if val is not None:
            options[key] = val
    if seed is not None:
        options["seed"] = seed
    options.setdefault("device", device)
    if ckpt:
        options["checkpoint"] = ckpt
    if ckpt_every:
        options["checkpoint_every"] = ckpt_every
    options["cross_check"] = cross or options.get("cross_check", False)
    return solve(spec.to_problem(), **options)


def _solve_distributed(path, device, backend, seed, max_evals, time_limit, pop_size,
                       checkpoint, resume, emit) -> int:
    """``constropt solve FILE --distributed``: every rank solves, rank 0 prints.

    Returns the exit code (the same on every rank for a completed run).
    """
    rank = int(os.environ.get("RANK", "0") or 0)
    if checkpoint or resume:
        if rank == 0:
            click.echo("error: --distributed does not support --checkpoint or --resume",
                       err=True)
        return EXIT_BAD_INPUT
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            spec = load_problem(path)
            options = dict(spec.options)
            for k, v in (("max_evals", max_evals), ("time_limit", time_limit),
                         ("pop_size", pop_size), ("backend", backend)):
                if v is not None:
                    options[k] = v
            if seed is not None:
                options["seed"] = seed
            options.setdefault("device", device)
            options.pop("checkpoint", None)
            res = solve_islands(spec.to_problem(), **options)
    except DistributedError as exc:
        click.echo(f"error: {exc}", err=True)
        return EXIT_FAILED
    except ConstroptError as exc:  # the same bad input on every rank: say it once
        if rank == 0:
            click.echo(f"error: {exc}", err=True)
        return EXIT_BAD_INPUT
    if rank == 0:
        for w in caught:
            click.echo(f"warning: {w.message}", err=True)
        emit(res)
        sys.stdout.flush()
    return _exit_code(res)


class _Group(click.Group):
    """Maps constropt's own errors to a one-line message and exit code 2."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except ConstroptError as exc:
            text = " ".join(str(exc).split("\n"))
            if len(text) > MAX_MESSAGE:
                text = text[:MAX_MESSAGE - 3] + "..."
            click.echo(f"error: {text}", err=True)
            ctx.exit(EXIT_BAD_INPUT)


@click.group(cls=_Group)
@click.version_option(version=__version__, prog_name="constropt")
def main() -> None:
    """constropt: constrained optimization declared in sympy, solved on CPU or CUDA."""


@main.command("solve")
@click.argument("problem_file", type=click.Path(exists=True, dir_okay=False))
@_with_common
@click.option("--checkpoint", type=click.Path(dir_okay=False), default=None,
              help="Write the engine state to this file every --checkpoint-every generations.")
@click.option("--checkpoint-every", type=click.IntRange(1), default=None,
              help="Generations between checkpoints.")
@click.option("--resume", is_flag=True,
              help="Continue from --checkpoint (refused if it belongs to another problem).")
@click.option("--distributed", is_flag=True,
              help="Run as one island of an island model launched by torchrun "
                   "(constropt.solve_islands); only rank 0 prints the result.")
def solve_cmd(problem_file, device, backend, seed, max_evals, time_limit, pop_size, as_json,
              history, plot, checkpoint, checkpoint_every, resume, distributed):
    """Solve the problem described in PROBLEM_FILE (.toml, .yaml)."""
    _check_output_path(plot, "'--plot'")
    if not resume:  # --resume reads the checkpoint: resume() reports a missing one
        _check_output_path(checkpoint, "'--checkpoint'")
    if distributed:
        sys.exit(_solve_distributed(problem_file, device, backend, seed, max_evals,
                                    time_limit, pop_size, checkpoint, resume,
                                    lambda res: _emit(res, as_json, plot, history)))
    res = _solve_file(problem_file, False, device, backend, seed, max_evals, time_limit,
                      pop_size, checkpoint, checkpoint_every, resume)
    _emit(res, as_json, plot, history)
    sys.exit(_exit_code(res))


@main.command("check")
@click.argument("problem_file", type=click.Path(exists=True, dir_okay=False))
@_with_common
def check_cmd(problem_file, device, backend, seed, max_evals, time_limit, pop_size, as_json,
              history, plot):
    """Solve PROBLEM_FILE and cross-check the answer against scipy."""
    _check_output_path(plot, "'--plot'")
    res = _solve_file(problem_file, True, device, backend, seed, max_evals, time_limit,
                      pop_size)
    _emit(res, as_json, plot, history)
    code = _exit_code(res)
    if code == EXIT_OK and not res.cross_check.agrees:
        code = EXIT_FAILED
    sys.exit(code)


@main.command("demo")
@click.option("--device", default="cpu", show_default=True, help="'cpu', 'cuda' or 'auto'.")
@click.option("--seed", type=int, default=0, show_default=True)
def demo_cmd(device, seed):
    """Solve the original experiment's two constrained examples, with the cross-check."""
    ok = run_demo(device=device, seed=seed, echo=click.echo)
    sys.exit(EXIT_OK if ok else EXIT_FAILED)


@main.command("bench")
@click.option("--device", default="cpu", show_default=True)
@click.option("--repeats", type=int, default=5, show_default=True)
@click.option("--population", type=int, default=900_000, show_default=True)
def bench_cmd(device, repeats, population):
    """The quick benchmark table: evaluator speed on the blog's examples."""
    click.echo(quick_table(device=device, repeats=repeats, population=population))


if __name__ == "__main__":  # pragma: no cover
    main()
