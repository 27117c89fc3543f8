"""Constraint handling: how objective ``f`` and violation ``cv`` become comparison keys.

Every handler is a small pure piece: ``keys(f, cv, level) -> (kf, kcv)`` maps the raw
pair to the pair that selection and survival compare lexicographically (lower ``kcv``
first, then lower ``kf``), and ``level(...)`` computes the handler's per-generation
number (the epsilon level, the penalty weight) as a tensor, so changing it never
recompiles anything.

- ``"feasibility"`` (Deb's rules): feasible beats infeasible, lower violation beats
  higher, then the objective.  Keys are the raw pair.
- ``"epsilon"`` (Takahama and Sakai's epsilon-constrained method): violations up to the
  level ``eps`` count as zero, so the objective steers the search while ``eps`` shrinks
  from the violation of a top fraction of the initial population to 0 over the first
  generations after each (re)start.  What works on equality-heavy problems.
- ``"penalty"`` (adaptive penalty): ``f + w * cv`` with a weight that grows while the
  best point is infeasible and shrinks while it is feasible.
- ``"death"`` (the original experiment): ``f`` where feasible, ``+inf`` elsewhere, and no
  ranking among infeasible points at all.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..backend._arrays import median_low, namespace

__all__ = ["Handler", "HANDLERS", "make_handler"]


@dataclass(frozen=True)
class Handler:
    """A constraint-handling rule.

    Attributes
    ----------
    name : str
    theta : float
        Epsilon: quantile of the initial population's violations that sets ``eps0``.
    control : float
        Epsilon: share of the schedule's clock (generations since the start or restart,
        over the algorithm's ``control_generations``) after which ``eps`` is 0.
    cp : float
        Epsilon: decay exponent, ``eps = eps0 * (1 - t / Tc) ** cp``.
    """

    name: str
    theta: float = 0.2
    control: float = 1.0
    cp: float = 5.0

    def keys(self, f, cv, level):
        """Comparison keys ``(kf, kcv)`` for raw ``f`` (min sense) and ``cv``.

        ``level`` is a 0-d array: epsilon for ``"epsilon"``, the weight for
        ``"penalty"``, ignored otherwise.  NumPy arrays or torch tensors.
        """
        if self.name == "feasibility":
            return f, cv
        xp = namespace(f)
        if self.name == "epsilon":
            return f, xp.where(cv <= level, xp.zeros_like(cv), cv)
        if self.name == "penalty":
            return xp.where(xp.isinf(cv), cv, f + level * cv), xp.zeros_like(cv)
        # death
        inf = xp.full_like(f, math.inf)
        return xp.where(cv > 0, inf, f), xp.zeros_like(cv)

    def initial_level(self, f, cv):
        """The level at generation 0 from the initial population (array, no sync).

        Computed along the last (population) axis: one level per instance of a batch.
        """
        xp = namespace(f)
        if self.name == "epsilon":
            finite = xp.where(xp.isfinite(cv), cv, xp.zeros_like(cv))
            k = max(1, int(self.theta * cv.shape[-1]))
            return xp.sort(finite, axis=-1)[..., k - 1]
        if self.name == "penalty":
            scale = xp.where(xp.isfinite(f), xp.abs(f), xp.zeros_like(f))
            return xp.clip(median_low(scale), min=1.0)
        return xp.zeros(f.shape[:-1], dtype=f.dtype, device=getattr(f, "device", None))

    def next_level(self, level, level0, progress: float, best_cv):
        """The level for the next generation.

        ``progress`` is the schedule's clock (a Python float from host counters, no
        device value); ``best_cv`` the best point's violation (array).
        """
        if self.name == "epsilon":
            if progress >= self.control:
                return namespace(level).zeros_like(level)
            return level0 * (1.0 - progress / self.control) ** self.cp
        if self.name == "penalty":
            xp = namespace(level)
            grow = xp.where(best_cv > 0, xp.full_like(level, 1.1),
                            xp.full_like(level, 1.0 / 1.05))
            return xp.clip(level * grow, min=1e-6, max=1e30)
        return level


HANDLERS = ("feasibility", "epsilon", "penalty", "death")


def make_handler(name: str) -> Handler:
    """The handler called ``name`` (one of :data:`HANDLERS`)."""
    from .._errors import OptionError

    if name not in HANDLERS:
        raise OptionError(f"unknown constraint_handling {name!r}; choose one of "
                          f"{', '.join(HANDLERS)}")
    return Handler(name)
