"""``constropt solve FILE --distributed``: the command line's island run (every rank
solves, rank 0 prints)."""

from __future__ import annotations

import os
import sys
import warnings

from .._errors import ConstroptError
from ._islands import DistributedError, solve_islands

__all__ = ["cli_solve"]


def cli_solve(path, device, seed, max_evals, time_limit, pop_size, checkpoint, resume,
              emit) -> int:
    """``constropt solve FILE --distributed``: every rank solves, rank 0 prints.

    Returns the exit code (the same on every rank for a completed run).
    """
    import click

    from ..cli import EXIT_BAD_INPUT, EXIT_FAILED, _exit_code
    from ..files import load_problem

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
                         ("pop_size", pop_size)):
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
