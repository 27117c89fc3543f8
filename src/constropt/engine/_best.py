"""The best point of each instance, tracked under feasibility rules with ``gather`` (no
data-dependent indexing, so a generation never waits for the device): the best point
ever seen, and the best *defined* one (objective a number) the finish falls back to.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

from ..backend._arrays import namespace, take
from ._ga import Population
from ._ranking import better, defined_only

__all__ = ["Best", "raw_best", "merge", "defined_pop", "merge_defined"]


class Best(NamedTuple):
    """Best point ever seen per row under feasibility rules: ``x`` (N, R), ``f``, ``cv``
    (R,)."""

    x: Any
    f: Any
    cv: Any


def raw_best(pop: Population, first: bool = False) -> Best:
    """Each row's best individual under feasibility rules, by ``gather`` (no sync).

    ``first``: the population is sorted best-first under feasibility rules (DE and GA
    with a handler whose keys are the raw pair), so the best is column 0: the same point
    as the search below finds (its first occurrence), without the search.
    """
    if first:
        return Best(pop.X[..., 0], pop.f[:, 0], pop.cv[:, 0])
    xp = namespace(pop.f)
    cvmin = xp.min(pop.cv, axis=-1, keepdims=True)
    masked = xp.where(pop.cv == cvmin, pop.f, xp.full_like(pop.f, math.inf))
    i = xp.argmin(masked, axis=-1, keepdims=True)
    return Best(take(pop.X, i)[..., 0], take(pop.f, i)[:, 0], take(pop.cv, i)[:, 0])


def merge(best: Best, pop: Population, first: bool = False) -> Best:
    """The better of the stored best and the population's best, per row (``first``: as
    in :func:`raw_best`)."""
    x, f, cv = raw_best(pop, first)
    win = better(f, cv, best.f, best.cv)
    xp = namespace(f)
    return Best(xp.where(win, x, best.x), xp.where(win, f, best.f),
                xp.where(win, cv, best.cv))


def defined_pop(pop: Population) -> Population:
    """``pop`` ranked as :func:`merge` ranks it among its *defined* points only (those
    whose objective key is below ``+inf``: not NaN); the others get ``cv = inf``."""
    return Population(pop.X, *defined_only(pop.f, pop.cv))


def merge_defined(best: Best, pop: Population) -> Best:
    """:func:`merge` over the defined points of ``pop``: the best point seen whose
    objective is a number (``f = inf`` while there is none).  A point outside the
    objective's domain can be the search's best (a feasible NaN beats every infeasible
    point); this one is what the finish falls back to (see
    :func:`constropt.finish._finish.defined_fallback`)."""
    return merge(best, defined_pop(pop))
