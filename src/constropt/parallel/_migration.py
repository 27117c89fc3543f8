"""The island model's migration hook: synchronisation, migration and symmetric stops.

:class:`_Migration` is the ``on_generation`` hook that :func:`constropt.solve_islands`
passes to each rank's local :func:`constropt.solve`.  Every ``check_every`` and every
``migrate_every`` generations the ranks meet in one ``all_gather`` of a fixed-size
float64 vector (stop flags, the rank's best ``(cv, f)``, and on migration generations its
best ``migrants`` individuals); :func:`_inject` puts the received migrants in place of
the worst individuals.  Every stop decision reads only the gathered vector, identical on
all ranks, so all ranks stop at the same generation.
"""

from __future__ import annotations

import math
import time
from dataclasses import replace

import numpy as np

from ._group import _Group

__all__: list[str] = []


def _inject(algorithm, alg_state, Xm, fm, cvm):
    """Replace the worst ``m`` individuals of the population with the migrants
    ``Xm`` (N, m), ``fm``, ``cvm`` (m,); the population is re-sorted best-first under
    the algorithm's comparison keys (the handler's for DE, feasibility rules for GA),
    which keeps both algorithms' invariants.  Returns the new algorithm state."""
    import torch

    from ..engine._ga import Population
    from ..engine._ranking import order

    X, f, cv = algorithm.population(alg_state)
    handler = getattr(algorithm, "handler", None)
    level = getattr(alg_state, "level", None)

    def keys(f_, cv_):
        return handler.keys(f_, cv_, level) if handler is not None else (f_, cv_)

    m = Xm.shape[1]
    keep = order(*keys(f, cv))[: X.shape[1] - m]
    X2 = torch.cat([X[:, keep], Xm.to(device=X.device, dtype=X.dtype)], dim=1)
    f2 = torch.cat([f[keep], fm.to(device=f.device, dtype=f.dtype)])
    cv2 = torch.cat([cv[keep], cvm.to(device=cv.device, dtype=cv.dtype)])
    idx = order(*keys(f2, cv2))
    pop = Population(X2[:, idx], f2[idx], cv2[idx])
    if isinstance(alg_state, Population):
        return pop
    return replace(alg_state, pop=pop)


def _best_index(cv, f) -> int:
    """Index of the best ``(cv, f)`` row under feasibility rules (NaN as +inf), lowest
    index on ties."""
    cv = np.nan_to_num(np.asarray(cv, dtype=np.float64), nan=np.inf)
    f = np.nan_to_num(np.asarray(f, dtype=np.float64), nan=np.inf)
    return int(np.lexsort((np.arange(len(cv)), f, cv))[0])


class _Migration:
    """The ``on_generation`` hook: synchronisation, migration and symmetric stops."""

    def __init__(self, grp: _Group, *, every, migrants, topology, check_every, stagnation,
                 ftol, target, time_limit, user_hook, t0):
        self.grp, self.every, self.m, self.topology = grp, every, migrants, topology
        self.check_every, self.stagnation, self.ftol = check_every, stagnation, ftol
        self.target, self.time_limit, self.user_hook, self.t0 = target, time_limit, user_hook, t0
        self.migrations = 0
        self.stop = None          # the Status all ranks agreed to stop for
        self.wants_stop = False   # the user's callback or hook asked for a stop
        self.quiet = 0
        self.last = 0
        self.gbest = (math.inf, math.inf)  # (f, cv): best over all ranks at the last sync

    def user_callback(self, callback):
        """Wrap the user's progress callback: a stop request waits for the next sync."""
        if callback is None:
            return None

        def wrapped(progress):
            if callback(progress):
                self.wants_stop = True
            return False

        return wrapped

    def __call__(self, st, algorithm) -> bool:
        import torch

        from ..engine._loop import _improved, _merge
        from ..engine._ranking import order
        from ..engine._status import Status

        g = st.g
        if self.user_hook is not None and self.user_hook(st, algorithm):
            self.wants_stop = True
        grp = self.grp
        migrate = grp.world > 1 and g % self.every == 0
        if not migrate and g % self.check_every != 0:
            return False
        pop = algorithm.population(st.alg)
        late = self.time_limit is not None and time.perf_counter() - self.t0 >= self.time_limit
        bx, bf, bcv = st.best
        dev, dt = pop.f.device, torch.float64
        head = torch.stack([torch.tensor(float(late), device=dev, dtype=dt),
                            torch.tensor(float(self.wants_stop), device=dev, dtype=dt),
                            bcv.to(dt), bf.to(dt)])
        parts = [head]
        n = pop.X.shape[0]
        if migrate:  # this rank's best m individuals under feasibility rules
            idx = order(pop.f, pop.cv)[: self.m]
            parts += [pop.X[:, idx].T.reshape(-1).to(dt), pop.f[idx].to(dt),
                      pop.cv[idx].to(dt)]
        what = "migration (all_gather)" if migrate else "synchronisation (all_gather)"
        G = grp.all_gather(what, torch.cat(parts), generation=g)
        if migrate:
            m, W, r = self.m, grp.world, grp.rank
            Xs = G[:, 4:4 + n * m].reshape(W, m, n)
            fs = G[:, 4 + n * m:4 + n * m + m]
            cvs = G[:, 4 + n * m + m:4 + n * m + 2 * m]
            if self.topology == "ring":
                src = (r - 1) % W
                Xm, fm, cvm = Xs[src].T, fs[src], cvs[src]
            else:
                others = [q for q in range(W) if q != r]
                Xp = torch.cat([Xs[q].T for q in others], dim=1)
                fp, cvp = torch.cat([fs[q] for q in others]), torch.cat([cvs[q] for q in others])
                sel = order(fp, cvp)[:m]
                Xm, fm, cvm = Xp[:, sel], fp[sel], cvp[sel]
            st.alg = _inject(algorithm, st.alg, Xm, fm, cvm)
            st.best = _merge(st.best, algorithm.population(st.alg))
            self.migrations += 1
        # every decision below reads only G, identical on all ranks: symmetric by design
        j = _best_index(G[:, 2].numpy(), G[:, 3].numpy())
        gcv, gf = float(G[j, 2]), float(G[j, 3])
        if _improved(gf, gcv, self.gbest[0], self.gbest[1], self.ftol):
            self.quiet = 0
        else:
            self.quiet += g - self.last
        self.last, self.gbest = g, (gf, gcv)
        stop = None
        if gcv == 0 and gf == -math.inf:
            stop = Status.UNBOUNDED
        elif self.target is not None and gcv == 0 and gf <= self.target:
            stop = Status.TARGET
        elif bool((G[:, 0] > 0).any()):
            stop = Status.TIME_LIMIT
        elif bool((G[:, 1] > 0).any()):
            stop = Status.CALLBACK
        elif self.quiet >= self.stagnation:
            stop = Status.CONVERGED
        if stop is None:
            return False
        self.stop = stop
        # the loop records no history for the generation a hook stops; record it here
        st.hist[g, 0], st.hist[g, 1] = st.best[1], st.best[2]
        st.hist_nfev[g] = st.nfev
        return True
