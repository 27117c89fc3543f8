"""The genetic algorithm's generation: tournament, SBX, mutation, repair, evaluation,
(mu + lambda) survival.

Tournaments and survival compare the constraint handler's keys (see
:mod:`._handling`): feasibility rules by default, or the epsilon, penalty or death keys
at the handler's per-generation ``level``.  The population keeps the raw objective and
violation; only comparisons see the keys.

``draw`` takes every random number a generation needs from a seeded generator;
``step`` is then a pure function of tensors (no host synchronisation, no
data-dependent shapes), which ``torch.compile`` can fuse whole.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import torch

from ._ranking import select
from ._selection import tournament
from ._variation import line_sbx, local_mutation, polynomial_mutation, repair, sbx

__all__ = ["GAConfig", "Population", "GARandoms", "draw", "make_step", "initial", "survive",
           "merge", "around"]


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
    """Variable-major population, the best individual first (column 0).

    ``X`` (N, S); ``f`` (S,) minimization key; ``cv`` (S,) total violation.  Only the
    first individual's place is meaningful: the others come in no particular order.
    """

    X: torch.Tensor
    f: torch.Tensor
    cv: torch.Tensor


class GARandoms(NamedTuple):
    """Random numbers for one generation (see :func:`draw`).

    Few, packed draws: the generator is the slowest part of a large generation, so the
    per-gene decisions and uniforms are bit fields of raw random integers, unpacked
    inside the (compiled) step where they fuse into the operators that use them.
    """

    tour: torch.Tensor      # (2, S) int32 contestants
    cross: torch.Tensor     # (N, S/2) int32, 31 random bits: bit 0 gene crosses,
    #                         bit 1 swap, bit 2 (row 0) line pair, bits 7-30 SBX spread u
    pair: torch.Tensor      # (1, S/2) bool: pair crosses over (p_cross)
    mut: torch.Tensor       # (N, S) int64, 63 random bits: bits 0-23 mutation u,
    #                         bit 24 local scale, bits 39-62 compared with mut_thr
    mut_thr: torch.Tensor   # () int64: a gene mutates when bits 39-62 < round(p_mut 2^24)


_U24 = 2.0 ** -24
_M24 = 0xFFFFFF
_THR: dict = {}


def _threshold(p: float, device) -> torch.Tensor:
    """The cached 0-d tensor ``round(p * 2^24)`` (a tensor, so p_mut never recompiles)."""
    key = (float(p), str(device))
    t = _THR.get(key)
    if t is None:
        t = _THR[key] = torch.full((), round(p * 2**24), dtype=torch.int64, device=device)
    return t


def draw(gen: torch.Generator, cfg: GAConfig, n: int, device, dtype) -> GARandoms:
    """Every random number of one generation, from ``gen`` (eager, seeded)."""
    S, H = cfg.pop_size, cfg.pop_size // 2
    tour = torch.randint(0, S, (2, S), generator=gen, device=device, dtype=torch.int32)
    cross = torch.empty((n, H), dtype=torch.int32, device=device).random_(generator=gen)
    pair = torch.rand((1, H), generator=gen, device=device) < cfg.p_cross
    mut = torch.empty((n, S), dtype=torch.int64, device=device).random_(generator=gen)
    return GARandoms(tour, cross, pair, mut, _threshold(cfg.p_mut, device))


def unpack_cross(rnd: GARandoms, dtype):
    """``(u, do_gene, swap)`` of SBX from the packed bits, shapes (N, S/2)."""
    c = rnd.cross  # 31 random bits
    return (c >> 7).to(dtype) * _U24, ((c & 1) != 0) & rnd.pair, (c & 2) != 0


def unpack_mut(rnd: GARandoms, dtype):
    """``(u, do_gene)`` of polynomial mutation from the packed bits, shapes (N, S)."""
    m = rnd.mut  # 63 random bits
    return (m & _M24).to(dtype) * _U24, (m >> 39) < rnd.mut_thr


def crossover(p1, p2, rnd: GARandoms, lower, upper, eta_c: float):
    """Children of the pairs ``(p1, p2)`` (N, S/2): half of the crossing pairs by
    gene-wise SBX, the other half by SBX along the line through the parents
    (:func:`._variation.line_sbx`: one spread factor per pair)."""
    u_x, do_x, swap = unpack_cross(rnd, p1.dtype)
    c1, c2 = sbx(p1, p2, lower, upper, u_x, do_x, swap, eta_c)
    line = ((rnd.cross[:1] & 4) != 0) & rnd.pair  # (1, S/2)
    l1, l2 = line_sbx(p1, p2, lower, upper, u_x[:1], eta_c)
    return torch.where(line, l1, c1), torch.where(line, l2, c2)


#: Local mutation: steps of up to ``LOCAL_WIDTH`` times the population's spread per
#: gene, polynomial with index ``LOCAL_ETA`` (a typical step is a fifth of the width).
#: A smaller width or a larger index (the box-scale operator's 20) lets the population
#: contract faster than it moves: on G06 the search then stalls 0.4-4 above f*, with
#: these it reaches 2e-5 (3 seeds, measured without the polish).
LOCAL_WIDTH = 2.0
LOCAL_ETA = 2.0


def mutate(kids, pop_X, rnd: GARandoms, lower, upper, integer, eta_m: float):
    """Polynomial mutation of the children ``kids`` (N, S), half of the mutated genes
    on the box's scale (exploration) and half on the parents' spread (``pop_X``'s range
    per gene: refinement, see :func:`._variation.local_mutation`); integer genes always
    on the box's scale."""
    u_m, do_m = unpack_mut(rnd, kids.dtype)
    spread = pop_X.amax(1, keepdim=True) - pop_X.amin(1, keepdim=True)
    local = (((rnd.mut >> 24) & 1) != 0) & ~integer
    wide = polynomial_mutation(kids, lower, upper, u_m, do_m & ~local, eta_m)
    return local_mutation(wide, lower, upper, u_m, do_m & local, LOCAL_WIDTH * spread,
                          LOCAL_ETA)


def initial(gen: torch.Generator, S: int, lower, upper, integer, dtype):
    """Uniform random population in the box, shape (N, S); integer genes uniform on
    their integers."""
    n = lower.shape[0]
    u = torch.rand((n, S), generator=gen, device=lower.device, dtype=dtype)
    lo_i = torch.where(integer, lower - 0.5, lower)
    hi_i = torch.where(integer, upper + 0.5, upper)
    X = lo_i + u * (hi_i - lo_i)
    return repair(X, lower, upper, integer)


#: Restart populations: the share of individuals drawn in boxes around the best point
#: (the rest stay uniform over the whole box), and the smallest of those boxes.
AROUND_SHARE = 0.5
AROUND_MIN = 1e-4


def around(X, best, lower, upper, integer):
    """A restart population: the first ``AROUND_SHARE`` of ``X``'s individuals moved
    into boxes centred on ``best`` and shrunk by factors from 1 down to ``AROUND_MIN``
    (geometrically, one factor per individual); the others kept as they are.

    A GA whose population collapsed on a narrow region (a ridge, the tip of a
    feasible region) crawls along it slower than it contracts: restarting at several
    scales around the best point spreads it again where progress is, while the
    uniform part keeps exploring.  ``X`` (N, K, S) uniform over the box, ``best``
    (N, K); bounds (N, 1).  Each moved point is a convex combination of ``best`` and a
    point of the box, so it stays inside; integer genes are rounded.
    """
    S = X.shape[-1]
    m = int(AROUND_SHARE * S)
    if m == 0:
        return X
    r = torch.logspace(0.0, math.log10(AROUND_MIN), m, dtype=X.dtype, device=X.device)
    b = best[..., None]
    near = b + r * (X[..., :m] - b)
    lo, hi, it = (t[..., None] if X.dim() == 3 else t for t in (lower, upper, integer))
    near = repair(near, lo, hi, it)
    return torch.cat([near, X[..., m:]], dim=-1)


def _raw_keys(f, cv):
    return f, cv


def survive(X, f, cv, S: int, keys=_raw_keys) -> Population:
    """Keep the best ``S`` of a population under ``keys(f, cv) -> (kf, kcv)`` (default:
    feasibility rules on the raw pair), the best first (the rest unordered)."""
    idx = select(*keys(f, cv), S)
    return Population(X.index_select(1, idx), f[idx], cv[idx])


def merge(pop: Population, kids, fk, cvk, keys=_raw_keys) -> Population:
    """(mu + lambda) survival: the best ``S`` of parents and children under ``keys``,
    the best first."""
    S = pop.f.shape[0]
    f = torch.cat([pop.f, fk])
    cv = torch.cat([pop.cv, cvk])
    idx = select(*keys(f, cv), S)
    X = torch.cat([pop.X, kids], dim=1).index_select(1, idx)
    return Population(X, f[idx], cv[idx])


def make_step(fitness, eta_c: float, eta_m: float, handler=None):
    """Build the generation step around a generated ``fitness(X, P, eq_tol)``.

    The returned ``step(pop, rnd, lower, upper, integer, P, eq_tol, level=None)`` takes
    every size from its tensors' shapes, so one compiled step serves every population
    size.  ``handler`` (a :class:`~._handling.Handler`; default feasibility rules) maps
    ``(f, cv)`` to the keys tournaments and survival compare, at ``level`` (a 0-d
    tensor: the epsilon level or penalty weight of this generation).
    """

    def ga_step(pop: Population, rnd: GARandoms, lower, upper, integer, P, eq_tol,
                level=None):
        S = pop.f.shape[0]
        H = S // 2

        def keys(f, cv):
            return (f, cv) if handler is None else handler.keys(f, cv, level)

        w = tournament(*keys(pop.f, pop.cv), rnd.tour)
        p1 = pop.X.index_select(1, w[:H])
        p2 = pop.X.index_select(1, w[H:])
        c1, c2 = crossover(p1, p2, rnd, lower, upper, eta_c)
        kids = torch.cat([c1, c2], dim=1)
        kids = mutate(kids, pop.X, rnd, lower, upper, integer, eta_m)
        kids = repair(kids, lower, upper, integer)
        fk, cvk = fitness(kids, P, eq_tol)
        return merge(pop, kids, fk, cvk, keys)

    return ga_step
