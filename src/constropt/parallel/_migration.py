"""The migration hook of an island run (the driver's ``on_generation``) and the consensus
on its stop decisions (the driver's ``consensus``): see :mod:`._islands`.

The populations are NumPy arrays or torch tensors (the search's backend); what travels
between ranks is always a CPU float64 torch tensor (``torch.distributed`` sends
tensors), converted at this boundary and nowhere else.  torch is imported inside the
functions: the package imports this module, and the NumPy path never loads torch."""

from __future__ import annotations

import numpy as np

from ..backend._arrays import is_torch
from ..engine._ga import replace_worst
from ..engine._ranking import order
from ._group import _Group

__all__ = []


def _like(t, ref):
    """The torch tensor ``t`` as an array of ``ref``'s backend, device and dtype."""
    if is_torch(ref):
        return t.to(device=ref.device, dtype=ref.dtype)
    return t.detach().cpu().numpy().astype(ref.dtype)


def _tensor(a):
    """A torch tensor of ``a`` (NumPy arrays shared on the CPU; tensors as they are)."""
    import torch

    return torch.as_tensor(a)


def _inject(algorithm, alg_state, Xm, fm, cvm):
    """Replace the worst ``m`` individuals of the (single-instance) population with the
    migrants ``Xm`` (N, m), ``fm``, ``cvm`` (m,) (torch tensors, as gathered, taken onto
    the population's backend first): :func:`~constropt.engine._ga.replace_worst`."""
    pop = algorithm.population(alg_state)
    return replace_worst(algorithm, alg_state, _like(Xm, pop.X), _like(fm, pop.f),
                         _like(cvm, pop.cv))


def _best_index(cv, f) -> int:
    """Index of the best ``(cv, f)`` row under feasibility rules (NaN as +inf), lowest
    index on ties."""
    cv = np.nan_to_num(np.asarray(cv, dtype=np.float64), nan=np.inf)
    f = np.nan_to_num(np.asarray(f, dtype=np.float64), nan=np.inf)
    return int(np.lexsort((np.arange(len(cv)), f, cv))[0])


class _Migration:
    """Migration (the driver's ``on_generation`` hook) and the consensus on the stop
    decisions (the driver's ``consensus``): the stop rules themselves are the driver's,
    applied on values every rank agrees on."""

    def __init__(self, grp: _Group, *, every, migrants, topology, user_hook):
        self.grp, self.every, self.m, self.topology = grp, every, migrants, topology
        self.user_hook = user_hook
        self.migrations = 0
        self.wants_stop = False   # the user's on_generation hook asked for a stop

    def __call__(self, st, algorithm) -> bool:
        import torch

        g = int(st.g)
        if self.user_hook is not None and self.user_hook(st, algorithm):
            self.wants_stop = True
        grp = self.grp
        if grp.world == 1 or g % self.every != 0:
            return False
        pop = algorithm.population(st.alg)
        X, f, cv = pop.X[:, 0], pop.f[0], pop.cv[0]
        n, dt = X.shape[0], torch.float64
        idx = order(f, cv)[: self.m]  # this rank's best m individuals, feasibility rules
        vec = torch.cat([_tensor(X[:, idx]).T.reshape(-1).to(dt), _tensor(f[idx]).to(dt),
                         _tensor(cv[idx]).to(dt)])
        G = grp.all_gather("migration (all_gather)", vec, generation=g)
        m, W, r = self.m, grp.world, grp.rank
        Xs = G[:, :n * m].reshape(W, m, n)
        fs, cvs = G[:, n * m:n * m + m], G[:, n * m + m:n * m + 2 * m]
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
        self.migrations += 1
        return False

    def agree(self, g, f, cv, time_up, stop):
        """The best ``(f, cv)`` over all ranks and whether any rank is past the time
        limit or asked to stop: identical on every rank, so every rank stops together."""
        import torch

        vec = torch.tensor([float(bool(time_up)), float(bool(stop) or self.wants_stop),
                            float(cv[0]), float(f[0])], dtype=torch.float64)
        G = self.grp.all_gather("synchronisation (all_gather)", vec, generation=g).numpy()
        j = _best_index(G[:, 2], G[:, 3])
        return (np.array([G[j, 3]]), np.array([G[j, 2]]), bool((G[:, 0] > 0).any()),
                bool((G[:, 1] > 0).any()))
