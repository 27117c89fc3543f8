"""What every finishing step carries: the instance's budget and its best point so far.

A finishing step (a polish, a restoration, an integer or piece move, a probe) is given
the problem, an :class:`Incumbent` (the best point, its float64 objective and
violations, the instance's parameters) and the instance's :class:`Budget` (the
evaluation cap, the evaluations spent so far, the deadline).  It returns the incumbent
it leaves, better or the same, and adds what it evaluated to the budget.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import NamedTuple

import numpy as np

from .._errors import OptionError

__all__ = ["Budget", "Incumbent", "RESERVE_PER_GENE", "KEEP_BACK", "MAX_FINISH_GENES"]

#: Polish evaluations kept from the search's budget per continuous gene (at least 300).
RESERVE_PER_GENE = 250

#: Evaluations a finishing step keeps back from what it passes to a restoration or a
#: polish, for the checks after it.
KEEP_BACK = 20

#: The polish, and the probes of the final point (their costs grow with the genes), run on
#: problems of at most this many genes.
MAX_FINISH_GENES = 2000


@dataclass
class Budget:
    """The evaluation budget ``max_evals`` of one instance, polish included, and its clock.

    ``total`` is the cap (None: none), ``used`` the evaluations spent so far (the
    finishing steps add theirs with :meth:`spend`), ``deadline`` a ``time.perf_counter()``
    value (None: none).

    The search may spend ``search`` evaluations; the rest (``reserve``: a tenth of the
    budget, at most :data:`RESERVE_PER_GENE` per continuous gene and at least 300 of
    that, when polishing) is kept for the polish and the unboundedness probe, which take
    what is left after the search (:meth:`left`).  Only a search that runs to its share
    notices: a wide-box problem whose polish starts far outside the feasible set needs
    its share per gene to get there.
    """

    total: int | None
    reserve: int = 0
    used: int = 0
    deadline: float | None = None

    @classmethod
    def plan(cls, max_evals, polish: bool, evals_per_step: int, genes: int = 0) -> Budget:
        # kept for the polish, and 1 for the float64 check of the final point
        cap = max(300, RESERVE_PER_GENE * genes)
        reserve = (min(max_evals // 10, cap) if polish and max_evals else 0) + \
            (1 if max_evals is not None else 0)
        if max_evals is not None and max_evals - reserve < evals_per_step:
            raise OptionError(f"max_evals={max_evals} is below one population "
                              f"(pop_size={evals_per_step}); raise max_evals or lower "
                              "pop_size")
        return cls(max_evals, reserve)

    @property
    def search(self) -> int | None:
        """Evaluations the search may spend (None: no cap)."""
        return None if self.total is None else self.total - self.reserve

    def after(self, used: int, deadline: float | None = None) -> Budget:
        """A copy of this budget that has spent ``used`` evaluations (the search's, of one
        instance), with ``deadline`` if given: the budget its finishing steps count on."""
        return replace(self, used=int(used),
                       deadline=self.deadline if deadline is None else deadline)

    def spend(self, n: int) -> None:
        """Count ``n`` more evaluations."""
        self.used += int(n)

    def left(self) -> int | None:
        """Evaluations left (negative once overspent; None: no cap)."""
        return None if self.total is None else self.total - self.used

    def room(self, n: int) -> bool:
        """Whether ``n`` more evaluations fit."""
        return self.total is None or self.used + n <= self.total

    def lend(self) -> int | None:
        """What a restoration or a polish may spend: what is left, :data:`KEEP_BACK` held
        back for the checks after it; never negative (None: no cap)."""
        return None if self.total is None else max(0, self.total - self.used - KEEP_BACK)

    def expired(self) -> bool:
        """Whether the deadline has passed."""
        return self.deadline is not None and time.perf_counter() >= self.deadline


class Incumbent(NamedTuple):
    """The best point of one instance so far: ``x`` (n,) float64, ``f`` its objective
    (user's sense) and ``V`` its violations (m,) from the float64 check, and ``pvec``
    (n_params,) the instance's parameter values."""

    x: np.ndarray
    f: float
    V: np.ndarray
    pvec: np.ndarray

    @property
    def feasible(self) -> bool:
        """Whether the float64 check found no violation."""
        return bool(np.all(self.V == 0))

    def at(self, x: np.ndarray, f: float, V: np.ndarray) -> Incumbent:
        """Another point of the same instance."""
        return Incumbent(x, f, V, self.pvec)
