"""Search engine: population state, pure operators, constraint handling, the driver.

Modules: ``_ranking`` (feasibility rules), ``_selection`` (tournament), ``_variation``
(SBX, polynomial mutation, repair), ``_ga`` and ``_de`` (one generation),
``_algorithms`` (the interface the driver steps), ``_driver`` (the one generation loop
over B >= 1 instances, and the termination rule).
"""

from ._driver import Driver, Outcome, Termination, check
from ._ga import GAConfig, Population, make_step
from ._ranking import better, order

__all__ = ["GAConfig", "Population", "make_step", "Driver", "Outcome", "Termination",
           "check", "better", "order"]
