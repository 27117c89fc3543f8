"""The problem stage: a validated, immutable :class:`Problem` (constraints normalised,
bounds given or defaulted) and point evaluation."""

from ._problem import DEFAULT_BOUND, BoundsWarning, Evaluation, Problem

__all__ = ["Problem", "Evaluation", "BoundsWarning", "DEFAULT_BOUND"]
