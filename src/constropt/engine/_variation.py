"""Variation operators of the GA, vectorized over a variable-major population.

All operators take their random numbers as arrays (drawn by the caller from a seeded
generator), so they are pure, deterministic and ``torch.compile``-friendly, and work on
NumPy arrays and torch tensors alike (the namespace of their inputs,
:mod:`constropt.backend._arrays`).
Arrays are shaped ``(N, K)``: genes along dim 0, individuals along dim 1; bounds are
``(N, 1)``.
"""

from __future__ import annotations

from ..backend._arrays import namespace, take

__all__ = ["sbx", "polynomial_mutation", "repair"]


def sbx(p1, p2, lower, upper, u, do_gene, swap, eta: float):
    """Simulated binary crossover, bounded variant (Deb and Agrawal 1995).

    Parameters
    ----------
    p1, p2 : array, shape (N, K)
        Parent pairs.
    lower, upper : array, shape (N, 1)
    u : array, shape (N, K)
        Uniform(0, 1) numbers for the spread factor.
    do_gene : array of bool, shape (N, K)
        Which genes cross (already combined with the per-pair crossover probability).
    swap : array of bool, shape (N, K)
        Which genes exchange children.
    eta : float
        Distribution index (larger: children closer to parents).

    Returns
    -------
    (array, array), shapes (N, K)
    """
    xp = namespace(p1)
    y1, y2 = xp.minimum(p1, p2), xp.maximum(p1, p2)
    span = y2 - y1
    ok = do_gene & (span > 1e-14)
    safe = xp.where(ok, span, xp.ones_like(span))
    e1 = 1.0 / (eta + 1.0)

    def child(beta):
        alpha = 2.0 - xp.clip(beta, min=1.0) ** (-(eta + 1.0))
        ua = u * alpha
        # one power of the selected branch (same values as powering both branches)
        t = xp.where(u <= 1.0 / alpha, xp.clip(ua, min=0.0),
                     1.0 / xp.clip(2.0 - ua, min=1e-30))
        return t ** e1

    bq1 = child(1.0 + 2.0 * (y1 - lower) / safe)
    bq2 = child(1.0 + 2.0 * (upper - y2) / safe)
    c1 = 0.5 * ((y1 + y2) - bq1 * span)
    c2 = 0.5 * ((y1 + y2) + bq2 * span)
    c1 = xp.minimum(xp.maximum(c1, lower), upper)
    c2 = xp.minimum(xp.maximum(c2, lower), upper)
    c1, c2 = xp.where(swap, c2, c1), xp.where(swap, c1, c2)
    return xp.where(ok, c1, p1), xp.where(ok, c2, p2)


def polynomial_mutation(y, lower, upper, u, do_gene, eta: float):
    """Polynomial mutation, bounded variant (Deb and Goyal 1996).

    ``y`` (N, K); ``u`` uniform numbers (N, K); ``do_gene`` which genes mutate.
    """
    xp = namespace(y)
    width = xp.clip(upper - lower, min=1e-300)
    d1 = (y - lower) / width
    d2 = (upper - y) / width
    p = 1.0 / (eta + 1.0)
    lo_branch = u < 0.5
    xy = xp.clip(xp.where(lo_branch, 1.0 - d1, 1.0 - d2), min=0.0)
    xe = xy ** (eta + 1.0)
    val_lo = 2.0 * u + (1.0 - 2.0 * u) * xe
    val_hi = 2.0 * (1.0 - u) + 2.0 * (u - 0.5) * xe
    r = xp.clip(xp.where(lo_branch, val_lo, val_hi), min=0.0) ** p  # one power
    dq = xp.where(lo_branch, r - 1.0, 1.0 - r)
    out = y + dq * width
    out = xp.minimum(xp.maximum(out, lower), upper)
    return xp.where(do_gene, out, y)


def repair(X, lower, upper, integer):
    """Clip to the box and round integer genes (``integer`` is a bool (N, 1) mask)."""
    xp = namespace(X)
    X = xp.minimum(xp.maximum(X, lower), upper)
    return xp.where(integer, xp.round(X), X)


def snap(X, values):
    """Genes moved to the nearest of their allowed values.

    Parameters
    ----------
    X : array, shape (N, S)
        Population, variable-major.
    values : array, shape (N, K)
        Allowed values per gene, padded with ``inf``; a row of ``inf`` leaves that gene
        unchanged.

    Returns
    -------
    array, shape (N, S)
    """
    xp = namespace(X)
    d = xp.abs(X[:, None, :] - values[:, :, None])  # (N, K, S); inf for padding
    k = xp.argmin(d, axis=1)                        # (N, S)
    near = take(values, k)                          # values[i, k[i, s]]
    has = xp.any(xp.isfinite(values), axis=1, keepdims=True)
    return xp.where(has, near, X)
