"""Two ranks on localhost under ``python -m torch.distributed.run`` (torchrun), gloo.

Shared by the island tests (``parallel/test_distributed.py``) and the sharded batches
(``solver/test_batch_scale.py``); each rank gets one thread, no CUDA device, and the
constropt of this checkout.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env():
    env = {k: v for k, v in os.environ.items()
           if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")}
    env.update(PYTHONPATH=str(ROOT / "src"), OMP_NUM_THREADS="1", CUDA_VISIBLE_DEVICES="")
    return env


def torchrun(args, *, timeout=90, monitor=None):
    """Two ranks on localhost; returns the CompletedProcess."""
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2",
           "--master_addr=127.0.0.1", f"--master_port={_free_port()}"]
    if monitor is not None:
        cmd.append(f"--monitor-interval={monitor}")
    return subprocess.run(cmd + [str(a) for a in args], env=_env(), cwd=ROOT, text=True,
                          capture_output=True, timeout=timeout)
