"""The size guards of :mod:`constropt.problem._numeric`, used by the expression builder.

They live in the problem layer so that the checkpoint reader (``problem._srepr``)
applies the same guards as the problem-file parser.
"""

from constropt.problem._numeric import (  # noqa: F401 - re-exported for the builder
    MAX_NUMBER_BITS,
    MAX_TOTAL_NODES,
    MAX_TREE_NODES,
    NumberTooLarge,
    SizeBudget,
    check_number,
    guard_exp,
    guard_power,
)

__all__ = ["MAX_NUMBER_BITS", "MAX_TREE_NODES", "MAX_TOTAL_NODES", "SizeBudget",
           "NumberTooLarge", "guard_power", "guard_exp", "check_number"]
