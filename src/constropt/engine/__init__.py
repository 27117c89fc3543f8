"""Search engine: population state, pure operators, constraint handling, the driver.

Modules (the array namespace they are written against is :mod:`constropt.backend._arrays`):
``_ranking`` (feasibility rules), ``_selection`` (tournament), ``_variation``
(SBX, polynomial mutation, repair), ``_ga`` and ``_de`` (one generation),
``_algorithms`` (the interface the driver steps), ``_termination`` (the one stop rule),
``_driver`` (the one generation loop over B >= 1 instances).
"""


import importlib

#: Where each re-exported name lives.  Loaded on first use, so that ``import constropt``
#: does not import torch: a small problem searched on NumPy never needs it.
_HOME = {"Driver": "_driver", "Outcome": "_driver", "Termination": "_driver",
         "check": "_driver", "GAConfig": "_ga", "Population": "_ga", "make_step": "_ga",
         "better": "_ranking", "order": "_ranking"}

__all__ = ["GAConfig", "Population", "make_step", "Driver", "Outcome", "Termination",
           "check", "better", "order"]


def __getattr__(name):
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
