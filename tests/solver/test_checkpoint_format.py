"""Checkpoint files are data with a checksum: loading one never runs code, any changed
bit is refused, history is stored only as far as it was run, temporary files never
stay behind (issue 12, item 11)."""

from __future__ import annotations

import hashlib
import json
import os
import struct
import subprocess
import sys

import numpy as np
import pytest
import sympy as sp
import torch

import constropt
from constropt import CheckpointError
from constropt.solver import _checkpoint as ck

x, y = sp.symbols("x y", real=True)


def _small(path, **kw):
    """A short solve that writes a checkpoint at generation 10 and stops at 12."""
    opts = dict(seed=4, pop_size=16, checkpoint=path, checkpoint_every=10, progress=False,
                polish=False, max_generations=12)
    opts.update(kw)
    return constropt.solve((x - 1)**2 + (y + 0.5)**2, [x + y <= 1, x >= -2, x <= 2,
                                                       y >= -2, y <= 2], **opts)


def _rewrite(path, transform):
    """Re-serialise a checkpoint's header through ``transform`` with a valid checksum, as
    someone crafting a malicious file would."""
    raw = path.read_bytes()[:-32]
    start = len(ck.MAGIC) + 8
    (hlen,) = struct.unpack("<Q", raw[len(ck.MAGIC):start])
    header = json.loads(raw[start:start + hlen])
    header = transform(header)
    hb = json.dumps(header).encode()
    body = ck.MAGIC + struct.pack("<Q", len(hb)) + hb + raw[start + hlen:]
    path.write_bytes(body + hashlib.sha256(body).digest())


def test_checkpoint_is_not_a_pickle_and_resumes(tmp_path):
    ckpt = tmp_path / "a.ckpt"
    _small(ckpt)
    raw = ckpt.read_bytes()
    assert raw.startswith(ck.MAGIC) and b"\x80\x04" not in raw[:2]  # no pickle protocol
    data = ck.read_checkpoint(ckpt)
    assert isinstance(data["problem"], tuple)  # constructor arguments, as data
    assert data["loop"].g == 10
    res = constropt.resume(ckpt)
    assert res.nit == 12 and res.feasible


@pytest.mark.parametrize("where", range(12))
def test_every_flipped_bit_is_refused(tmp_path, where):
    ckpt = tmp_path / "b.ckpt"
    if where == 0:
        _small(ckpt)
    else:
        src = tmp_path.parent / "b_src.ckpt"
        if not src.exists():
            _small(src)
        ckpt.write_bytes(src.read_bytes())
    raw = bytearray(ckpt.read_bytes())
    # spread over the file: header, array bytes (population, history), checksum
    pos = int((len(raw) - 1) * (where + 0.5) / 12)
    raw[pos] ^= 1 << (where % 8)
    ckpt.write_bytes(bytes(raw))
    with pytest.raises(CheckpointError, match="corrupt|not a constropt"):
        constropt.resume(ckpt)


def test_old_pickle_checkpoints_are_refused_without_unpickling(tmp_path):
    marker = tmp_path / "MARKER"

    class Evil:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    bad = tmp_path / "evil.ckpt"
    torch.save({"format": "constropt-checkpoint", "version": 1, "x": Evil()}, bad)
    with pytest.raises(CheckpointError, match="not a constropt checkpoint"):
        constropt.resume(bad)
    assert not marker.exists()


@pytest.mark.parametrize("node", [
    {"$": "dataclass", "cls": "subprocess:Popen", "fields": {}},
    {"$": "namedtuple", "cls": "os:terminal_size", "items": [1, 2]},
    {"$": "dataclass", "cls": "constropt.solver._checkpoint:os.system", "fields": {}},
    {"$": "sympy", "srepr": "__import__('os').system('touch MARKER')"},
    {"$": "sympy", "srepr": "ImmutableMatrix([['x']])"},
    {"$": "ndarray", "dtype": "|O", "shape": [1], "at": 0, "nbytes": 8},
    {"$": "tensor", "dtype": "float64", "shape": [10**6], "at": 0, "nbytes": 8 * 10**6},
])
def test_crafted_entries_with_a_valid_checksum_are_refused(tmp_path, node, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ckpt = tmp_path / "c.ckpt"
    _small(ckpt)

    def inject(header):
        header["tree"]["items"].append([{"$": "float", "v": "1.0"}, node])
        return header

    _rewrite(ckpt, inject)
    with pytest.raises(CheckpointError):
        ck.read_checkpoint(ckpt)
    assert not (tmp_path / "MARKER").exists()


def test_history_is_stored_only_as_far_as_it_ran(tmp_path):
    ckpt = tmp_path / "long.ckpt"
    _small(ckpt, max_generations=100_000, callback=lambda s: s.generation >= 12,
           check_every=1)
    assert ckpt.stat().st_size < 20_000  # 100,001 history rows would be 2.4 MB
    data = ck.read_checkpoint(ckpt)
    loop = data["loop"]  # the driver's history grows as it fills (64 rows at first)
    assert int(loop.g) == 10 and int(loop.g) + 1 <= loop.hist_f.shape[0] <= 64
    assert loop.hist_cv.shape == loop.hist_f.shape and loop.hist_nfev.shape[0] == 64


def test_generic_state_round_trip():
    from constropt.engine._ga import Population

    state = {"pop": Population(torch.arange(6.0).reshape(2, 3), torch.zeros(3),
                               torch.tensor([0.0, 1.5, float("inf")])),
             "mixed": (1, 2.5, float("nan"), "s", None, True, [np.int64(7)],
                       np.arange(4, dtype=np.int64)),
             "dtype": torch.float32, "expr": sp.sin(x) + sp.Rational(1, 3),
             "b": torch.tensor([True, False]), "h": torch.tensor([1.0], dtype=torch.float16)}
    blob = [0]
    tree = json.loads(json.dumps(ck.encode(state, blob)))
    back = ck.decode(tree, memoryview(b"".join(blob[1:])))
    assert isinstance(back["pop"], Population)
    torch.testing.assert_close(back["pop"].X, state["pop"].X)
    assert back["pop"].cv[2] == float("inf") and back["b"].tolist() == [True, False]
    assert back["h"].dtype == torch.float16 and back["dtype"] is torch.float32
    m = back["mixed"]
    assert m[:2] == (1, 2.5) and np.isnan(m[2]) and m[3:6] == ("s", None, True)
    assert m[6] == [7] and m[7].tolist() == [0, 1, 2, 3] and back["expr"] == state["expr"]


def test_foreign_classes_do_not_round_trip():
    import dataclasses

    @dataclasses.dataclass
    class Foreign:
        a: int = 1

    blob = [0]
    tree = ck.encode(Foreign(), blob)
    with pytest.raises(CheckpointError, match="outside constropt"):
        ck.decode(tree, memoryview(b""))


def test_stale_temp_files_are_removed_and_failed_writes_leave_none(tmp_path, monkeypatch):
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True)
    dead = int(done.stdout)  # a process that has ended
    ckpt = tmp_path / "d.ckpt"
    stale = tmp_path / f".constropt-d.ckpt.{dead}.abc123.tmp"
    stale.write_bytes(b"half a checkpoint")
    ck.write_checkpoint(ckpt, {"fingerprint": "f", "problem": (), "settings": {},
                               "loop": None, "generator": torch.zeros(2, dtype=torch.uint8)})
    assert not stale.exists() and ckpt.exists()

    def broken(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken)
    with pytest.raises(OSError):
        ck.write_checkpoint(ckpt, {"fingerprint": "g", "problem": (), "settings": {},
                                   "loop": None, "generator": None})
    assert [p.name for p in tmp_path.iterdir()] == ["d.ckpt"]


def _problems():
    import warnings

    from constropt import benchmarks

    n = sp.Symbol("n", integer=True)
    a = sp.Symbol("a", real=True)
    g = sp.IndexedBase("g", shape=(5,))
    i = sp.Idx("i", 5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield benchmarks.get("G07").problem()
        yield benchmarks.get("blog_example2").problem()
        yield constropt.Problem((n - 2.6)**2 + x**2, [n >= 0, n <= 10, x >= -1, x <= 1])
        yield constropt.Problem((x - a)**2 + sp.Piecewise((y, y > 0), (-y / 3, True)),
                                [sp.Or(x <= -1, x >= 1), sp.Eq(x + y, 0.1)],
                                bounds={x: (-5, 5), y: (-5, 5)}, parameters={a: 0.7})
        yield constropt.Problem(sp.Sum(g[i]**2, (i, 0, 4)), bounds={g: (-1, 2)})


@pytest.mark.parametrize("k", range(5))
def test_problems_round_trip_as_data(k):
    p = list(_problems())[k]
    blob = [0]
    tree = json.loads(json.dumps(ck.encode(ck.problem_data(p), blob)))
    back = ck.problem_from_data(ck.decode(tree, memoryview(b"".join(blob[1:]))))
    assert ck.fingerprint(back) == ck.fingerprint(p)
    assert back.objective == p.objective and back.constraints == p.constraints
