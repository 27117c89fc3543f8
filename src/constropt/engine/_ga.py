"""The genetic algorithm's generation: tournament, SBX, mutation, repair, evaluation,
(mu + lambda) survival under feasibility rules.

``draw`` takes every random number a generation needs from a seeded generator;
``step`` is then a pure function of tensors (no host synchronisation, no
data-dependent shapes), which ``torch.compile`` can fuse whole.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import torch

from ._ranking import order
from ._selection import tournament
from ._variation import polynomial_mutation, repair, sbx

__all__ = ["GAConfig", "Population", "GARandoms", "draw", "make_step", "initial", "survive"]


@dataclass(frozen=True)
class GAConfig:
    """Shape-fixing GA settings (changing one changes the compiled step).

    Attributes
    ----------
    pop_size : int
        Individuals ``S`` (even).
    eta_c, eta_m : float
        SBX and polynomial-mutation distribution indices.
    p_cross : float
        Probability that a pair crosses over (then each gene crosses with probability 1/2).
    p_mut : float
        Per-gene mutation probability.
    """

    pop_size: int
    eta_c: float = 15.0
    eta_m: float = 20.0
    p_cross: float = 0.9
    p_mut: float = 0.1


class Population(NamedTuple):
    """Variable-major population, sorted best-first.

    ``X`` (N, S); ``f`` (S,) minimization key; ``cv`` (S,) total violation.
    """

    X: torch.Tensor
    f: torch.Tensor
    cv: torch.Tensor


class GARandoms(NamedTuple):
    """Random numbers for one generation (see :func:`draw`)."""

    tour: torch.Tensor      # (2, S) int64 contestants
    u_x: torch.Tensor       # (N, S/2) SBX spread
    do_x: torch.Tensor      # (N, S/2) bool: gene crosses
    swap: torch.Tensor      # (N, S/2) bool
    u_m: torch.Tensor       # (N, S) mutation
    do_m: torch.Tensor      # (N, S) bool: gene mutates


def draw(gen: torch.Generator, cfg: GAConfig, n: int, device, dtype) -> GARandoms:
    S, H = cfg.pop_size, cfg.pop_size // 2
    tour = torch.randint(0, S, (2, S), generator=gen, device=device)
    r = torch.rand((5, n, S), generator=gen, device=device, dtype=dtype)
    pair = torch.rand((1, H), generator=gen, device=device, dtype=dtype) < cfg.p_cross
    return GARandoms(tour, r[0, :, :H], (r[1, :, :H] < 0.5) & pair, r[2, :, :H] < 0.5,
                     r[3], r[4] < cfg.p_mut)


def initial(gen: torch.Generator, S: int, lower, upper, integer, dtype):
    """Uniform random population in the box, shape (N, S); integer genes uniform on
    their integers."""
    n = lower.shape[0]
    u = torch.rand((n, S), generator=gen, device=lower.device, dtype=dtype)
    lo_i = torch.where(integer, lower - 0.5, lower)
    hi_i = torch.where(integer, upper + 0.5, upper)
    X = lo_i + u * (hi_i - lo_i)
    return repair(X, lower, upper, integer)


def survive(X, f, cv, S: int) -> Population:
    """Keep the best ``S`` of a merged population, sorted best-first."""
    idx = order(f, cv)[:S]
    return Population(X[:, idx], f[idx], cv[idx])


def make_step(fitness, eta_c: float, eta_m: float):
    """Build the generation step around a generated ``fitness(X, P, eq_tol)``.

    The returned ``step(pop, rnd, lower, upper, integer, P, eq_tol)`` takes every size
    from its tensors' shapes, so one compiled step serves every population size.
    """

    def ga_step(pop: Population, rnd: GARandoms, lower, upper, integer, P, eq_tol):
        S = pop.f.shape[0]
        H = S // 2
        w = tournament(pop.f, pop.cv, rnd.tour)
        p1 = pop.X[:, w[:H]]
        p2 = pop.X[:, w[H:]]
        c1, c2 = sbx(p1, p2, lower, upper, rnd.u_x, rnd.do_x, rnd.swap, eta_c)
        kids = torch.cat([c1, c2], dim=1)
        kids = polynomial_mutation(kids, lower, upper, rnd.u_m, rnd.do_m, eta_m)
        kids = repair(kids, lower, upper, integer)
        fk, cvk = fitness(kids, P, eq_tol)
        return survive(torch.cat([pop.X, kids], dim=1), torch.cat([pop.f, fk]),
                       torch.cat([pop.cv, cvk]), S)

    return ga_step
