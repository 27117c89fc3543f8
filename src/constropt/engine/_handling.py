"""Constraint handling: how objective ``f`` and violation ``cv`` become comparison keys.

Every handler is a small class, registered by name (``constraint_handling=name``):
``keys(f, cv, level) -> (kf, kcv)`` maps the raw pair to the pair that selection and
survival compare lexicographically (lower ``kcv`` first, then lower ``kf``), and
``initial_level`` / ``next_level`` compute the handler's per-generation number (the
epsilon level, the penalty weight) as an array, so changing it never recompiles
anything.  What the algorithms need to know of a handler beyond its keys is a class
attribute or a method here (:attr:`Handler.raw_keys`, :attr:`Handler.decays`,
:meth:`Handler.settled`), never its name.

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

A new handler is a subclass with a ``name`` and its ``keys`` (and levels, if it has
any), decorated with :func:`register_handler`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from .._errors import OptionError
from ..backend._arrays import median_low, namespace

__all__ = ["Handler", "FeasibilityRules", "Epsilon", "Penalty", "Death", "HANDLERS",
           "register_handler", "handler_names", "make_handler"]

#: The registered handlers, by name (filled by :func:`register_handler`).
_REGISTRY: dict[str, type[Handler]] = {}


def register_handler(cls: type[Handler]) -> type[Handler]:
    """Make the :class:`Handler` subclass ``cls`` selectable as
    ``constraint_handling=cls.name`` (a class decorator; returns ``cls``)."""
    if not (isinstance(cls, type) and issubclass(cls, Handler)):
        raise TypeError(f"register_handler takes a Handler subclass, got {cls!r}")
    name = cls.name
    if not isinstance(name, str) or not name or name == "auto":
        raise ValueError(f"{cls.__name__}.name must be a non-empty name other than 'auto' "
                         f"(the option's own choice), got {name!r}")
    if name in _REGISTRY and _REGISTRY[name] is not cls:
        raise ValueError(f"a constraint handler named {name!r} is already registered "
                         f"({_REGISTRY[name].__name__})")
    _REGISTRY[name] = cls
    return cls


def handler_names() -> tuple[str, ...]:
    """The names ``constraint_handling`` accepts besides ``"auto"``, in registration
    order."""
    return tuple(_REGISTRY)


def make_handler(name: str) -> Handler:
    """The handler registered as ``name`` (one of :func:`handler_names`)."""
    cls = _REGISTRY.get(name) if isinstance(name, str) else None
    if cls is None:
        raise OptionError(f"unknown constraint_handling {name!r}; choose one of "
                          f"{', '.join(_REGISTRY)}")
    return cls()


@dataclass(frozen=True)
class Handler:
    """A constraint-handling rule (frozen and hashable: it keys the compile cache).

    Class attributes, what the algorithms ask of a handler:

    - ``name``: what ``constraint_handling`` calls it;
    - ``raw_keys``: its keys are the raw ``(f, cv)`` pair, so a population sorted by them
      has its best point under feasibility rules first (the driver then reads it there);
    - ``decays``: its level is ``level0`` times a factor of the schedule's clock alone
      (:meth:`next_level` with ``level = level0 = 1`` gives the factor), and
      :meth:`settled` holds off stagnation until the schedule has run out;
    - ``batches``: ``solve_batch`` offers it.
    """

    name: ClassVar[str] = ""
    raw_keys: ClassVar[bool] = False
    decays: ClassVar[bool] = False
    batches: ClassVar[bool] = True

    def keys(self, f, cv, level):
        """Comparison keys ``(kf, kcv)`` for raw ``f`` (min sense) and ``cv``, at the
        handler's ``level`` (a 0-d array, or one per instance).  NumPy arrays or torch
        tensors."""
        raise NotImplementedError

    def initial_level(self, f, cv):
        """The level at generation 0 from the initial population (array, no sync),
        computed along the last (population) axis: one level per instance of a batch.
        Without a level of its own, zeros."""
        xp = namespace(f)
        return xp.zeros(f.shape[:-1], dtype=f.dtype, device=getattr(f, "device", None))

    def next_level(self, level, level0, progress: float, best_cv):
        """The level for the next generation.

        ``progress`` is the schedule's clock (a Python float from host counters, no
        device value); ``best_cv`` the best point's violation (array).
        """
        return level

    def settled(self, since, horizon: int):
        """Whether stagnation may be declared ``since`` generations after the (re)start
        (host array per instance), for a schedule of ``horizon`` generations: always,
        unless the level still decays (then the raw best point may legitimately stall
        while the search moves towards the feasible set)."""
        since = np.asarray(since)
        if not self.decays:
            return np.ones(since.shape, dtype=bool)
        return since >= horizon


@register_handler
@dataclass(frozen=True)
class FeasibilityRules(Handler):
    """Deb's rules: the keys are the raw pair."""

    name: ClassVar[str] = "feasibility"
    raw_keys: ClassVar[bool] = True

    def keys(self, f, cv, level):
        return f, cv


@register_handler
@dataclass(frozen=True)
class Epsilon(Handler):
    """Violations up to the level ``eps`` count as zero; ``eps`` decays to 0.

    Attributes
    ----------
    theta : float
        Quantile of the initial population's violations that sets ``eps0``.
    control : float
        Share of the schedule's clock (generations since the start or restart, over the
        algorithm's ``control_generations``) after which ``eps`` is 0.
    cp : float
        Decay exponent, ``eps = eps0 * (1 - t / Tc) ** cp``.
    """

    name: ClassVar[str] = "epsilon"
    decays: ClassVar[bool] = True
    theta: float = 0.2
    control: float = 1.0
    cp: float = 5.0

    def keys(self, f, cv, level):
        xp = namespace(f)
        return f, xp.where(cv <= level, xp.zeros_like(cv), cv)

    def initial_level(self, f, cv):
        xp = namespace(f)
        finite = xp.where(xp.isfinite(cv), cv, xp.zeros_like(cv))
        k = max(1, int(self.theta * cv.shape[-1]))
        return xp.sort(finite, axis=-1)[..., k - 1]

    def next_level(self, level, level0, progress: float, best_cv):
        if progress >= self.control:
            return namespace(level).zeros_like(level)
        return level0 * (1.0 - progress / self.control) ** self.cp


@register_handler
@dataclass(frozen=True)
class Penalty(Handler):
    """``f + w * cv`` with a weight ``w`` that grows while the best point is infeasible
    and shrinks while it is feasible (``solve_batch`` does not offer it)."""

    name: ClassVar[str] = "penalty"
    batches: ClassVar[bool] = False

    def keys(self, f, cv, level):
        xp = namespace(f)
        return xp.where(xp.isinf(cv), cv, f + level * cv), xp.zeros_like(cv)

    def initial_level(self, f, cv):
        xp = namespace(f)
        scale = xp.where(xp.isfinite(f), xp.abs(f), xp.zeros_like(f))
        return xp.clip(median_low(scale), min=1.0)

    def next_level(self, level, level0, progress: float, best_cv):
        xp = namespace(level)
        grow = xp.where(best_cv > 0, xp.full_like(level, 1.1),
                        xp.full_like(level, 1.0 / 1.05))
        return xp.clip(level * grow, min=1e-6, max=1e30)


@register_handler
@dataclass(frozen=True)
class Death(Handler):
    """``f`` where feasible, ``+inf`` elsewhere: no ranking among infeasible points."""

    name: ClassVar[str] = "death"

    def keys(self, f, cv, level):
        xp = namespace(f)
        inf = xp.full_like(f, math.inf)
        return xp.where(cv > 0, inf, f), xp.zeros_like(cv)


#: The handlers that ship with constropt (:func:`handler_names` also lists those
#: registered later).
HANDLERS = handler_names()
