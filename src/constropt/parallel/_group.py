"""The process group of an island run: set-up from torchrun's environment, collectives
under a timeout, and :class:`DistributedError` for every failure.

:func:`constropt.solve_islands` (``_islands.py``) creates one :class:`_Group` per call;
the migration hook (``_migration.py``) talks to the other ranks only through it.  torch
is imported inside the functions: the package imports this module, and the NumPy path
never loads torch.
"""

from __future__ import annotations

import atexit
import datetime
import os

from .._errors import ConstroptError
from ..backend._devices import resolve_device

__all__ = ["DistributedError"]


class DistributedError(ConstroptError, RuntimeError):
    """A collective operation of :func:`solve_islands` failed or timed out.

    Raised on a rank when another rank crashed, was killed, stopped answering within
    the timeout, or runs different settings; the message names the rank that raised and
    the likely cause.

    Attributes
    ----------
    rank : int or None
        The rank that raised (None when the process group could not be set up).
    """

    def __init__(self, message: str, rank: int | None = None) -> None:
        super().__init__(message)
        self.rank = rank


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".strip()


class _Group:
    """The process group this module runs its collectives on: a group of all ranks
    created for one call (with the call's timeout and backend), its rank and size, the
    device its tensors live on, and whether the default group is this call's own (a
    single process without torchrun) and must go when the call ends."""

    def __init__(self, group, rank, world, comm, timeout, own_default, alone):
        self.group, self.rank, self.world, self.comm = group, rank, world, comm
        self.timeout, self.own_default, self.alone = timeout, own_default, alone

    def call(self, what: str, fn, *args, generation=None, **kwargs):
        """Run one collective; any failure becomes a DistributedError naming this rank."""
        try:
            return fn(*args, **kwargs)
        except DistributedError:
            raise
        except Exception as exc:
            at = f" at generation {generation}" if generation is not None else ""
            raise DistributedError(
                f"island rank {self.rank} of {self.world}: {what}{at} failed "
                f"({_first_line(exc)}). Another rank most likely crashed, was killed or "
                "stopped answering: a peer that disconnects fails the collective at once, "
                f"one that hangs after timeout={self.timeout:g}s. Look at the other ranks' "
                "output for the first error; if ranks legitimately run apart for longer "
                "(compilation, a slow polish or cross-check), raise timeout.",
                rank=self.rank) from exc

    def all_gather(self, what, vec, generation=None):
        """``(world, L)`` CPU float64 tensor of every rank's ``vec`` (L,)."""
        import torch
        import torch.distributed as dist

        vec = vec.to(device=self.comm, dtype=torch.float64).contiguous()
        out = [torch.empty_like(vec) for _ in range(self.world)]
        self.call(what, dist.all_gather, out, vec, group=self.group, generation=generation)
        return torch.stack(out).cpu()

    def broadcast_object(self, what, obj, src: int):
        import torch.distributed as dist

        box = [obj if self.rank == src else None]
        self.call(what, dist.broadcast_object_list, box, src=src, group=self.group,
                  device=self.comm)
        return box[0]

    def all_gather_object(self, what, obj):
        """Every rank's picklable ``obj``, in rank order."""
        import torch.distributed as dist

        out = [None] * self.world
        self.call(what, dist.all_gather_object, out, obj, group=self.group)
        return out

    def close(self) -> None:
        """Destroy this call's group (and the default group if it is this call's own);
        errors are ignored: a broken group may refuse."""
        import torch.distributed as dist

        try:
            if self.own_default:
                _destroy_default()
            elif self.group is not None and dist.is_initialized():
                dist.destroy_process_group(self.group)
        except Exception:  # pragma: no cover
            pass


def _destroy_default() -> None:  # pragma: no cover - runs at interpreter exit
    import torch.distributed as dist

    try:
        if dist.is_initialized():
            dist.destroy_process_group()
    except Exception:
        pass


def _island_device(device):
    """``"auto"``/None: ``cuda:LOCAL_RANK`` when CUDA is available, else CPU; ``"cuda"``
    without an index also maps to the local rank's GPU; anything else as given."""
    import torch

    local = int(os.environ.get("LOCAL_RANK", "0") or 0)
    if device is None or (isinstance(device, str) and device == "auto"):
        if torch.cuda.is_available():
            return torch.device("cuda", local % torch.cuda.device_count())
        return torch.device("cpu")
    dev = resolve_device(device)
    if dev.type == "cuda" and dev.index is None:
        return torch.device("cuda", local % torch.cuda.device_count())
    return dev


def _init_group(backend, dev, timeout: float) -> _Group:
    """The group of all ranks this call communicates on.

    The default process group is used when it is initialized; otherwise it is created
    from torchrun's environment (``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR``,
    ``MASTER_PORT``) and kept for later calls (destroyed at exit), or, without that
    environment, as a group of this one process (destroyed when the call ends).  On top
    of it, each call makes its own group of all ranks with ``timeout`` and ``backend``.
    """
    import torch
    import torch.distributed as dist

    if not dist.is_available():
        raise DistributedError("this torch build has no torch.distributed support")
    launched = "RANK" in os.environ and "WORLD_SIZE" in os.environ
    rank_env = int(os.environ.get("RANK", "0") or 0)
    if dev.type == "cuda":
        torch.cuda.set_device(dev)
    own_default = False
    td = datetime.timedelta(seconds=timeout)
    if not dist.is_initialized():
        default_backend = backend or ("nccl" if dev.type == "cuda" else "gloo")
        try:
            if launched:
                if default_backend == "nccl":  # collectives raise on timeout, not abort
                    os.environ.setdefault("TORCH_NCCL_BLOCKING_WAIT", "1")
                dist.init_process_group(default_backend, init_method="env://", timeout=td)
                atexit.register(_destroy_default)
            else:
                dist.init_process_group(default_backend, store=dist.HashStore(), rank=0,
                                        world_size=1, timeout=td)
                own_default = True
        except Exception as exc:
            where = os.environ.get("MASTER_ADDR", "?") + ":" + os.environ.get("MASTER_PORT", "?")
            raise DistributedError(
                f"island rank {rank_env}: could not set up the {default_backend!r} process "
                f"group (rendezvous at {where}): {_first_line(exc)}. Launch every rank with "
                "torchrun and the same --nnodes, --nproc_per_node and rendezvous endpoint "
                "(NCCL needs one GPU per rank; use backend='gloo' or device='cpu' "
                "otherwise).", rank=rank_env) from exc
    rank, world = dist.get_rank(), dist.get_world_size()
    grp = _Group(None, rank, world, torch.device("cpu"), timeout, own_default,
                 own_default and not launched)
    try:
        grp.group = grp.call("creating the island group (new_group)", dist.new_group,
                             timeout=td, backend=backend)
    except BaseException:
        if own_default:
            _destroy_default()
        raise
    if str(dist.get_backend(grp.group)) == "nccl":
        grp.comm = torch.device("cuda", torch.cuda.current_device())
    return grp
