"""The search algorithms by name: what the solver builds each from, and the interface the
driver steps.

An algorithm is two pieces.  The object the driver steps (:class:`~._de.DE`,
:class:`~._ga.GA`) holds one run; populations carry an instance axis: ``X`` (N, B, S),
``f`` and ``cv`` (B, S).

- ``start(X0)`` evaluates initial populations and returns the algorithm's state;
- ``advance(state)`` runs one generation of every instance;
- ``population(state)`` is the current :class:`Population` (best first per instance);
- ``with_population(state, pop)`` the state with its population replaced (migration);
- ``keys(f, cv, state)`` the comparison keys the population is sorted by;
- ``settled(since)`` whether stagnation may be declared after ``since`` generations
  since the (re)start (host array per instance);
- ``restart(state, rows, X1, keep)`` the rows ``rows`` started afresh from ``X1``
  (N, k, S) with the best points ``keep`` (N, k) injected;
- ``compact(state, rows) -> (algorithm, state)`` only the rows ``rows`` (finished
  instances drop out of the work).

``evals_per_step`` is what one ``advance`` costs each instance in point evaluations;
``sorted_raw`` whether the population's column 0 is always its best point under
feasibility rules on the raw ``(f, cv)`` (true with a handler whose keys are the raw
pair, :attr:`~._handling.Handler.raw_keys`: the driver then reads the best point without
searching for it).

The other piece is an :class:`Algorithm`, registered by name (``algorithm=name``): the
defaults it brings (population size, generation cap, restarts on small problems, the
handler ``constraint_handling="auto"`` picks), its state class, its frozen config and
generation step, and how to make the object above.  The solver asks these and never
compares names.  A new algorithm is its module (state, step, the stepped object) plus an
:class:`Algorithm` subclass decorated with :func:`register_algorithm`.
"""

from __future__ import annotations

from typing import Any, ClassVar

from .._errors import OptionError
from . import _de, _ga
from ._de import DE, DEState
from ._ga import GA, GAState, Population
from ._handling import Handler

__all__ = ["Algorithm", "DifferentialEvolution", "GeneticAlgorithm", "register_algorithm",
           "algorithm_names", "get_algorithm", "ALGORITHMS", "DE", "DEState", "GA", "GAState",
           "Population"]

#: The registered algorithms, by name (filled by :func:`register_algorithm`).
_REGISTRY: dict[str, Algorithm] = {}


def register_algorithm(cls: type[Algorithm]) -> type[Algorithm]:
    """Make the :class:`Algorithm` subclass ``cls`` selectable as ``algorithm=cls.name``
    (a class decorator; returns ``cls``)."""
    if not (isinstance(cls, type) and issubclass(cls, Algorithm)):
        raise TypeError(f"register_algorithm takes an Algorithm subclass, got {cls!r}")
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not name:
        raise ValueError(f"{cls.__name__}.name must be a non-empty name, got {name!r}")
    if name in _REGISTRY and type(_REGISTRY[name]) is not cls:
        raise ValueError(f"an algorithm named {name!r} is already registered "
                         f"({type(_REGISTRY[name]).__name__})")
    _REGISTRY[name] = cls()
    return cls


def algorithm_names() -> tuple[str, ...]:
    """The names ``algorithm`` accepts, in registration order."""
    return tuple(_REGISTRY)


def get_algorithm(name: str) -> Algorithm:
    """The algorithm registered as ``name`` (one of :func:`algorithm_names`)."""
    alg = _REGISTRY.get(name) if isinstance(name, str) else None
    if alg is None:
        raise OptionError(f"unknown algorithm {name!r}; choose one of "
                          f"{', '.join(_REGISTRY)}")
    return alg


class Algorithm:
    """What the solver builds a search algorithm from, and the defaults it brings.

    Class attributes:

    - ``name``: what ``algorithm`` calls it;
    - ``state``: the class of its state (checkpoints hold it; ``resume`` checks it);
    - ``batched``: its arrays carry the instance axis, so it runs ``B >= 1`` instances
      (``solve_batch``); otherwise one instance, on arrays without that axis;
    - ``max_generations``: the generation cap when ``max_generations`` is not given;
    - ``small_restarts``: ``restarts="auto"`` on a small continuous problem without
      equalities, and ``independent_small_restarts`` whether those leave the best point
      out of the fresh population;
    - ``equality_handler`` / ``plain_handler``: the handler ``constraint_handling="auto"``
      picks for a problem with / without equality constraints.
    """

    name: ClassVar[str] = ""
    state: ClassVar[type]
    batched: ClassVar[bool] = False
    max_generations: ClassVar[int] = 1000
    small_restarts: ClassVar[int] = 0
    independent_small_restarts: ClassVar[bool] = False
    equality_handler: ClassVar[str] = "epsilon"
    plain_handler: ClassVar[str] = "feasibility"

    def handler_for(self, equalities: bool) -> str:
        """The handler ``constraint_handling="auto"`` stands for."""
        return self.equality_handler if equalities else self.plain_handler

    def shape(self, n: int) -> tuple[int, ...]:
        """The shape of the per-gene bounds: ``(n, 1, 1)`` with the instance axis,
        ``(n, 1)`` without."""
        return (n, 1, 1) if self.batched else (n, 1)

    def args(self, P, tol) -> tuple:
        """The step's parameter arguments from ``P`` (n_p, B, 1) and the tolerance."""
        return (P, tol) if self.batched else (P[:, :, 0], tol)

    def pop_size(self, n: int) -> int:
        """Population size (per instance) when ``pop_size`` is not given."""
        raise NotImplementedError

    def config(self, opts, n: int, S: int) -> Any:
        """The frozen, shape-fixing config from the run's options ``opts`` (read by
        attribute), ``n`` variables and population ``S``."""
        raise NotImplementedError

    def make_step(self, fitness, cfg, handler: Handler, integers: bool):
        """The generation step around ``fitness`` (``integers``: some gene is integer)."""
        raise NotImplementedError

    def step_key(self, cfg, handler: Handler, integers: bool) -> tuple:
        """What the compiled step depends on besides the fitness (its cache key)."""
        raise NotImplementedError

    def create(self, *, fit, step_fn, cfg, handler: Handler, rng, bounds, args,
               pop_size: int, repair):
        """The object the driver steps."""
        raise NotImplementedError


@register_algorithm
class DifferentialEvolution(Algorithm):
    """SHADE-style DE (:mod:`._de`), the default: any number of instances."""

    name: ClassVar[str] = "de"
    state: ClassVar[type] = DEState
    batched: ClassVar[bool] = True
    max_generations: ClassVar[int] = 3000
    small_restarts: ClassVar[int] = 0  # one run and the polish solve those

    def pop_size(self, n: int) -> int:
        return int(min(300, max(40, 12 * n)))

    def config(self, opts, n: int, S: int) -> _de.DEConfig:
        return _de.DEConfig(strategy=opts.strategy)

    def make_step(self, fitness, cfg, handler, integers):
        return _de.make_step(fitness, handler, cfg, integers=integers)

    def step_key(self, cfg, handler, integers):
        return ("de_step", handler, cfg, integers)

    def create(self, *, fit, step_fn, cfg, handler, rng, bounds, args, pop_size, repair):
        return DE(fit, step_fn, cfg, handler, rng, bounds, args, pop_size, repair)


@register_algorithm
class GeneticAlgorithm(Algorithm):
    """Tournament, SBX and polynomial mutation (:mod:`._ga`): one instance."""

    name: ClassVar[str] = "ga"
    state: ClassVar[type] = GAState
    batched: ClassVar[bool] = False
    max_generations: ClassVar[int] = 1000
    # its population can close on a wrong basin early: one restart, a second look
    small_restarts: ClassVar[int] = 1
    independent_small_restarts: ClassVar[bool] = True

    def pop_size(self, n: int) -> int:
        return int(min(400, max(60, 20 * n)))

    def config(self, opts, n: int, S: int) -> _ga.GAConfig:
        p_mut = opts.p_mut if opts.p_mut is not None else min(0.5, max(0.05, 1.0 / n))
        return _ga.GAConfig(pop_size=S, eta_c=opts.eta_c, eta_m=opts.eta_m, p_mut=p_mut)

    def make_step(self, fitness, cfg, handler, integers):
        return _ga.make_step(fitness, cfg.eta_c, cfg.eta_m, handler)

    def step_key(self, cfg, handler, integers):
        return ("ga_step", cfg.eta_c, cfg.eta_m, handler)

    def create(self, *, fit, step_fn, cfg, handler, rng, bounds, args, pop_size, repair):
        return GA(fit, step_fn, cfg, rng, bounds, args, handler, repair)


#: The algorithms that ship with constropt (:func:`algorithm_names` also lists those
#: registered later).
ALGORITHMS = algorithm_names()
