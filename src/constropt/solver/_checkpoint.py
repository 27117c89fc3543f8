"""Checkpoints: the whole engine state written atomically, and ``resume``.

A checkpoint holds the problem, the solve's settings (seed, device, dtype, options),
the loop state (population, best point, counters, history, the algorithm's own state)
and the random generator's state, so a resumed run on CPU ends in exactly the result of
an uninterrupted run with the same seed.

The file is data, never a pickle: loading one cannot run code.  Layout::

    MAGIC | header length (8 bytes, little endian) | header (JSON) | array bytes | sha256

The JSON header describes the state as a tree of numbers, strings, None, lists,
tuples, dicts, dataclasses and NamedTuples (of ``constropt`` classes only, named by a
stable tag of :data:`TAGS` or by ``module:qualname``, rebuilt field by field), torch
dtypes, sympy objects (as ``srepr`` text, read back by the allow-list reader of
:mod:`constropt.problem._srepr`) and arrays (dtype, shape, offset into the array bytes).
The sha256 covers everything before it; any mismatch, truncation or malformed part is
refused with :class:`CheckpointError`.  The checksum detects corruption, not forgery: it
is not a signature, so :func:`._resume_check.check_resume` checks a loaded state against the problem
and the settings before ``resume`` continues (every error names the field).

Files are written to a uniquely named temporary file in the same folder and renamed
over the target, so a crash mid-write never leaves a truncated checkpoint; a temporary
file left by a killed process is removed by the next write (or read) of that
checkpoint (:mod:`._checkpoint_folder`).  The problem a checkpoint belongs to, and how
it is stored: :mod:`._checkpoint_problem`.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import importlib
import json
import math
import os
import re
import struct
import sys
import tempfile
import typing

import numpy as np
import sympy

from .._errors import CheckpointError, ParseError
from ..problem._srepr import read_srepr
from ._checkpoint_folder import clean_stale_temps, temp_prefix
from ._checkpoint_problem import fingerprint, problem_data, problem_from_data  # its API too

__all__ = ["fingerprint", "write_checkpoint", "read_checkpoint",
           "encode", "decode", "problem_data", "problem_from_data", "FORMAT", "VERSION",
           "TAGS"]

FORMAT = "constropt-checkpoint"
VERSION = 2
MAGIC = b"CONSTROPT-CHECKPOINT\n"
_HASH = 32
_NUMPY_KINDS = set("biuf")  # bool, integers, floats: never object arrays


# -- the tree encoding -------------------------------------------------------------------

#: Stable public names of the state classes checkpoints hold: a checkpoint names a class
#: by its tag, so moving a class to another module keeps checkpoints readable (add the
#: old ``module:qualname`` to ``_ALIASES`` when a class is renamed).
TAGS = {
    "DriverState": "constropt.engine._driver:DriverState",
    "Best": "constropt.engine._best:Best",
    "DEState": "constropt.engine._de:DEState",
    "GAState": "constropt.engine._ga:GAState",
    "Population": "constropt.engine._ga:Population",
    "Memory": "constropt.engine._de:Memory",
}
_TAG_OF = {path: tag for tag, path in TAGS.items()}
#: Names older checkpoints used -> tag (checkpoints before tags named every class by its
#: ``module:qualname``, which still resolves while the class stays where it was).
_ALIASES: dict[str, str] = {
    # the state classes lived beside the stepped algorithms until each algorithm had its
    # own module
    "constropt.engine._algorithms:DEState": "DEState",
    "constropt.engine._algorithms:GAState": "GAState",
    # the best point's record lived in the driver's module
    "constropt.engine._driver:Best": "Best",
}


def _class_name(cls) -> str:
    path = f"{cls.__module__}:{cls.__qualname__}"
    return _TAG_OF.get(path, path)


def _resolve(name):
    """A constropt dataclass, NamedTuple or Enum class named in a checkpoint (by tag, or by
    ``module:qualname`` inside constropt)."""
    if isinstance(name, str):
        name = TAGS.get(_ALIASES.get(name, name), name)
    if not isinstance(name, str) or not re.fullmatch(r"constropt(\.\w+)*:[\w.]+", name):
        raise CheckpointError(f"checkpoint names a class outside constropt: {name!r:.80}")
    module, qual = name.split(":")
    try:
        obj = importlib.import_module(module)
        for part in qual.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError):
        raise CheckpointError(f"checkpoint names an unknown class {name!r}; it was "
                              "written by another version of constropt") from None
    ok = isinstance(obj, type) and (dataclasses.is_dataclass(obj) or issubclass(obj, enum.Enum)
                                    or (issubclass(obj, tuple) and hasattr(obj, "_fields")))
    if not ok:
        raise CheckpointError(f"checkpoint names {name!r}, which is not a state class")
    return obj


def encode(obj, blob: list) -> object:
    """``obj`` as JSON-ready data; array bytes are appended to ``blob`` (a list of bytes)."""
    torch = sys.modules.get("torch")  # a NumPy search's state holds no tensors

    def add(raw: bytes) -> int:
        at = blob[0]
        blob.append(raw)
        blob[0] += len(raw)
        return at

    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, (int, float)) and not isinstance(obj, enum.Enum):
        return {"$": "float", "v": repr(float(obj))} if isinstance(obj, float) else int(obj)
    if isinstance(obj, np.generic):
        return encode(obj.item(), blob)
    if torch is not None and isinstance(obj, torch.Tensor):
        t = obj.detach().cpu().contiguous()
        raw = t.reshape(-1).view(torch.uint8).numpy().tobytes()
        return {"$": "tensor", "dtype": str(t.dtype).removeprefix("torch."),
                "shape": list(t.shape), "at": add(raw), "nbytes": len(raw)}
    if isinstance(obj, np.ndarray):
        if obj.dtype.kind not in _NUMPY_KINDS:
            raise CheckpointError(f"cannot store an array of dtype {obj.dtype}")
        raw = np.ascontiguousarray(obj).tobytes()
        return {"$": "ndarray", "dtype": obj.dtype.str, "shape": list(obj.shape),
                "at": add(raw), "nbytes": len(raw)}
    if torch is not None and isinstance(obj, torch.dtype):
        return {"$": "torch.dtype", "name": str(obj).removeprefix("torch.")}
    if torch is not None and isinstance(obj, torch.device):
        return {"$": "torch.device", "name": str(obj)}
    if isinstance(obj, np.dtype):
        return {"$": "numpy.dtype", "name": obj.str}
    if isinstance(obj, sympy.Basic):
        return {"$": "sympy", "srepr": sympy.srepr(obj)}
    if isinstance(obj, enum.Enum):
        return {"$": "enum", "cls": _class_name(type(obj)), "name": obj.name}
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return {"$": "namedtuple", "cls": _class_name(type(obj)),
                "items": [encode(v, blob) for v in obj]}
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {"$": "dataclass", "cls": _class_name(type(obj)),
                "fields": {f.name: encode(getattr(obj, f.name), blob)
                           for f in dataclasses.fields(obj)}}
    if isinstance(obj, (tuple, list)):
        return {"$": type(obj).__name__, "items": [encode(v, blob) for v in obj]}
    if isinstance(obj, dict):
        return {"$": "dict", "items": [[encode(k, blob), encode(v, blob)]
                                       for k, v in obj.items()]}
    raise CheckpointError(f"cannot store a {type(obj).__name__} in a checkpoint")


def _child(path: str, key) -> str:
    if isinstance(key, str) and key.isidentifier() and len(key) <= 40:
        return f"{path}.{key}" if path else key
    return f"{path}[{key!r:.40}]"


def _field_types(cls) -> dict:
    """The fields of ``cls`` annotated with a state class (what they must hold)."""
    try:
        hints = typing.get_type_hints(cls)
    except Exception:  # an annotation that does not resolve: nothing to check
        return {}
    return {k: t for k, t in hints.items() if isinstance(t, type) and (
        dataclasses.is_dataclass(t) or (issubclass(t, tuple) and hasattr(t, "_fields")))}


def decode(data, blob: memoryview, path: str = ""):
    """Inverse of :func:`encode`; anything malformed raises :class:`CheckpointError`
    naming the field (``path``) at fault."""
    try:
        return _decode(data, blob, path)
    except CheckpointError:
        raise
    except (ValueError, KeyError, TypeError, AttributeError, IndexError, OverflowError) as exc:
        raise CheckpointError(f"malformed field {path or '(top)'} "
                              f"({type(exc).__name__})") from None


def _decode(data, blob: memoryview, path: str):
    if data is None or isinstance(data, (bool, str, int)):
        return data
    if isinstance(data, list) or not isinstance(data, dict):
        raise _failure(path, f"malformed entry {data!r:.80}")
    kind = data.get("$")
    read = _READERS.get(kind) if isinstance(kind, str) else None
    if read is None:
        raise _failure(path, f"unknown entry kind {kind!r:.40}")
    return read(data, blob, path)


def _failure(path: str, why: str) -> CheckpointError:
    return CheckpointError(f"field {path or '(top)'}: {why}")


def _read_float(data, blob, path):
    return float(data["v"])


def _read_array(data, blob, path):
    at, nbytes, shape = data["at"], data["nbytes"], data["shape"]
    if not (isinstance(at, int) and isinstance(nbytes, int) and 0 <= at
            and at + nbytes <= len(blob) and isinstance(shape, list)
            and all(isinstance(s, int) and s >= 0 for s in shape)):
        raise _failure(path, "malformed array entry")
    raw = blob[at:at + nbytes]
    if data["$"] == "ndarray":
        dt = np.dtype(data["dtype"]) if isinstance(data["dtype"], str) else None
        if dt is None or dt.kind not in _NUMPY_KINDS:
            raise _failure(path, f"array of dtype {data['dtype']!r:.40}")
        if math.prod(shape) * dt.itemsize != nbytes:
            raise _failure(path, f"array of shape {shape} does not hold {nbytes} bytes")
        return np.frombuffer(raw, dtype=dt).reshape(shape).copy()
    import torch  # a tensor entry: a torch search wrote it (the NumPy path never gets here)

    dt = getattr(torch, str(data["dtype"]), None)
    if not isinstance(dt, torch.dtype):
        raise _failure(path, f"tensor of dtype {data['dtype']!r:.40}")
    if math.prod(shape) * dt.itemsize != nbytes:
        raise _failure(path, f"tensor of shape {shape} does not hold {nbytes} bytes")
    t = torch.frombuffer(bytearray(raw), dtype=torch.uint8) if nbytes else \
        torch.empty(0, dtype=torch.uint8)
    return t.view(dt).reshape(shape).clone()


def _read_numpy_dtype(data, blob, path):
    try:
        dt = np.dtype(str(data["name"]))
    except TypeError:
        dt = None
    if dt is None or dt.kind not in _NUMPY_KINDS:
        raise _failure(path, f"unknown numpy dtype {data['name']!r:.40}")
    return dt


def _read_torch_dtype(data, blob, path):
    import torch  # a torch entry: a torch search wrote it (the NumPy path never gets here)

    dt = getattr(torch, str(data["name"]), None)
    if not isinstance(dt, torch.dtype):
        raise _failure(path, f"unknown torch dtype {data['name']!r:.40}")
    return dt


def _read_torch_device(data, blob, path):
    import torch  # a torch entry: a torch search wrote it (the NumPy path never gets here)

    try:
        return torch.device(str(data["name"])[:100])
    except RuntimeError:
        raise _failure(path, f"unknown torch device {data['name']!r:.40}") from None


def _read_sympy(data, blob, path):
    try:
        return read_srepr(data["srepr"])
    except ParseError as exc:
        raise _failure(path, f"an unreadable expression ({exc})") from None


def _read_enum(data, blob, path):
    cls = _resolve(data["cls"])
    if not issubclass(cls, enum.Enum) or not isinstance(data["name"], str) \
            or data["name"] not in cls.__members__:
        raise _failure(path, f"{data['name']!r:.40} is not a member of {data['cls']}")
    return cls[data["name"]]


def _read_namedtuple(data, blob, path):
    cls = _resolve(data["cls"])
    if not (issubclass(cls, tuple) and hasattr(cls, "_fields")):
        raise _failure(path, f"{data['cls']} is not a named tuple")
    items = data["items"]
    if not isinstance(items, list) or len(items) != len(cls._fields):
        raise _failure(path, f"state {data['cls']} has {len(items)} fields; this constropt "
                             f"has {len(cls._fields)}")
    return cls(*[decode(v, blob, _child(path, k)) for k, v in zip(cls._fields, items)])


def _read_dataclass(data, blob, path):
    cls = _resolve(data["cls"])
    if not dataclasses.is_dataclass(cls):
        raise _failure(path, f"{data['cls']} is not a dataclass")
    names = {f.name for f in dataclasses.fields(cls)}
    if not isinstance(data["fields"], dict) or set(data["fields"]) != names:
        raise _failure(path, f"state {data['cls']} has other fields than this constropt's; "
                             "it was written by another version")
    obj = cls.__new__(cls)
    types = _field_types(cls)
    for k, v in data["fields"].items():
        value = decode(v, blob, _child(path, k))
        want = types.get(k)
        if want is not None and not isinstance(value, want):
            raise CheckpointError(f"field {_child(path, k)}: holds a "
                                  f"{type(value).__name__}, expected a {want.__name__}")
        object.__setattr__(obj, k, value)
    return obj


def _read_sequence(data, blob, path):
    items = [decode(v, blob, _child(path, i)) for i, v in enumerate(data["items"])]
    return tuple(items) if data["$"] == "tuple" else items


def _read_dict(data, blob, path):
    out = {}
    for pair in data["items"]:
        if not isinstance(pair, list) or len(pair) != 2:
            raise _failure(path, "malformed dict entry")
        key = decode(pair[0], blob, path)
        try:
            out[key] = decode(pair[1], blob, _child(path, key))
        except TypeError:  # an unhashable key
            raise _failure(path, f"a dict key of type {type(key).__name__}") from None
    return out


#: How each entry kind of the tree is read back (the inverse of :func:`encode`'s cases).
_READERS = {
    "float": _read_float, "tensor": _read_array, "ndarray": _read_array,
    "numpy.dtype": _read_numpy_dtype, "torch.dtype": _read_torch_dtype,
    "torch.device": _read_torch_device, "sympy": _read_sympy, "enum": _read_enum,
    "namedtuple": _read_namedtuple, "dataclass": _read_dataclass, "tuple": _read_sequence,
    "list": _read_sequence, "dict": _read_dict,
}


# -- files -------------------------------------------------------------------------------

def _serialize(payload: dict) -> bytes:
    blob: list = [0]
    tree = encode({"format": FORMAT, "version": VERSION, **payload}, blob)
    body = b"".join(blob[1:])
    header = json.dumps({"format": FORMAT, "version": VERSION, "tree": tree,
                         "blob_bytes": len(body)}, separators=(",", ":")).encode()
    data = MAGIC + struct.pack("<Q", len(header)) + header + body
    return data + hashlib.sha256(data).digest()


def write_checkpoint(path, payload: dict) -> None:
    """Write ``payload`` to ``path`` atomically (temporary file, then rename)."""
    path = os.fspath(path)
    data = _serialize(payload)  # fails (CheckpointError) before any file is touched
    folder = os.path.dirname(os.path.abspath(path))
    clean_stale_temps(path)
    fd, tmp = tempfile.mkstemp(prefix=f"{temp_prefix(path)}{os.getpid()}.", suffix=".tmp",
                               dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def read_checkpoint(path) -> dict:
    """Load a checkpoint; :class:`CheckpointError` if it is missing, corrupt or foreign."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise CheckpointError(f"checkpoint {path!r} does not exist")
    clean_stale_temps(path)
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        raise CheckpointError(f"cannot read checkpoint {path!r}: {exc.strerror}") from None
    if not raw.startswith(MAGIC):
        raise CheckpointError(f"{path!r} is corrupt or not a constropt checkpoint (no "
                              "constropt checkpoint header)")
    body, digest = raw[:-_HASH], raw[-_HASH:]
    if len(raw) < len(MAGIC) + 8 + _HASH or hashlib.sha256(body).digest() != digest:
        raise CheckpointError(f"checkpoint {path!r} is corrupt: its sha256 checksum does not "
                              "match its contents (truncated or modified)")
    (hlen,) = struct.unpack("<Q", body[len(MAGIC):len(MAGIC) + 8])
    start = len(MAGIC) + 8
    try:
        header = json.loads(body[start:start + hlen].decode())
        blob = memoryview(body)[start + hlen:]
        if header.get("format") != FORMAT:
            raise CheckpointError(f"{path!r} is not a constropt checkpoint")
        if header.get("version") != VERSION:
            raise CheckpointError(f"checkpoint {path!r} has version {header.get('version')}; "
                                  f"this constropt reads version {VERSION}")
        if header.get("blob_bytes") != len(blob):
            raise CheckpointError(f"checkpoint {path!r} is corrupt (array bytes)")
        data = decode(header["tree"], blob)
    except CheckpointError as exc:
        raise CheckpointError(f"checkpoint {path!r}: {exc}" if path not in str(exc)
                              else str(exc)) from None
    except (ValueError, KeyError, TypeError, RecursionError, AttributeError, IndexError,
            OverflowError) as exc:
        raise CheckpointError(f"checkpoint {path!r} is corrupt or not a constropt "
                              f"checkpoint ({type(exc).__name__})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise CheckpointError(f"{path!r} is not a constropt checkpoint")
    missing = {"fingerprint", "problem", "settings", "loop", "generator"} - set(data)
    if missing:
        raise CheckpointError(f"checkpoint {path!r} is incomplete (missing "
                              f"{', '.join(sorted(missing))})")
    return data
