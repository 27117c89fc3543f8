"""Search engine: population state, pure operators, constraint handling, the driver.

Modules (the array namespace they are written against is :mod:`constropt.backend._arrays`):
``_ranking`` (feasibility rules), ``_selection`` (tournament), ``_variation``
(SBX, polynomial mutation, repair), ``_handling`` (the constraint handlers, registered by
name), ``_ga`` and ``_de`` (each algorithm: its generation, state and the object the
driver steps), ``_algorithms`` (the algorithms registered by name, and the interface the
driver steps), ``_termination`` (the one stop rule), ``_driver`` (the one generation loop
over B >= 1 instances).
"""

from ._driver import Driver, Outcome, Termination, check
from ._ga import GAConfig, Population, make_step
from ._ranking import better, order

__all__ = ["GAConfig", "Population", "make_step", "Driver", "Outcome", "Termination",
           "check", "better", "order"]
