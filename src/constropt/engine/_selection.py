"""Tournament selection under feasibility rules."""

from __future__ import annotations

from ..backend._arrays import namespace
from ._ranking import better

__all__ = ["tournament"]


def tournament(f, cv, idx):
    """Binary tournaments.

    Parameters
    ----------
    f, cv : array, shape (S,)
        Minimization key and total violation of the population.
    idx : array of int32 or int64, shape (2, K)
        Random contestants (drawn outside, so the step stays pure).

    Returns
    -------
    array of idx's dtype, shape (K,)
        Index of each tournament's winner.
    """
    a, b = idx[0], idx[1]
    return namespace(idx).where(better(f[a], cv[a], f[b], cv[b]), a, b)
