"""Search engine: population state, pure operators, constraint handling, the loop.

Modules: ``_ranking`` (feasibility rules), ``_selection`` (tournament), ``_variation``
(SBX, polynomial mutation, repair), ``_ga`` (one generation), ``_loop`` (termination).
"""

from ._ga import GAConfig, Population, make_step
from ._loop import Outcome, Termination, run
from ._ranking import better, order

__all__ = ["GAConfig", "Population", "make_step", "Outcome", "Termination", "run",
           "better", "order"]
