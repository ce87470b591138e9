"""A compiled program as bytes: the on-disk cache's entries and saved bundles share this format.

An `Artifact` is everything needed to run a compiled function without compiling it again: the
kernels (PTX text or a native object), the host plan (`slots.HostPlan`, constants included), the
entry's name, and what it was built for (`target`: the device and its architecture or CPU
features, mlc's build, the versions of the dependencies that shaped the code). It also keeps the
graph-level source as text, for `CompiledFunction.reference()` and for lowering again when
someone asks for the lowered IR, and, for the CPU, the kernels linked as a shared library when the
compiler could link one (`shared_library`: loading it needs no LLVM; absent in files written
before it existed, which read as None), and for the GPU the PTX as the driver compiled it
(`cubin`: loading it needs no JIT; None likewise when absent, and the PTX is loaded instead).

File layout (all integers little-endian):

    magic        8 bytes   b"MLCART\\x00\\x01" (format version 1)
    checksum    32 bytes   SHA-256 of everything after it
    header size  8 bytes
    header       JSON (UTF-8): the fields, the plan as tagged JSON, the blob table
    blobs        raw bytes: the kernels, the shared library and the cubin if any, and each constant's values,
                           at the offsets the table gives

Nothing is pickled: decoding builds only the plan's own classes, numpy arrays and plain values,
so reading a file never runs code it holds (a bundle from elsewhere is data, not a program).
Decoding checks the magic, the size and the checksum before anything else; any mismatch,
truncation or malformed header is an `ArtifactError` saying which, so the cache can discard the
entry and compile again, and `mlc.load` can say why a file cannot be used.

Encoding the plan: a dataclass of `slots.py` becomes `{"$": ClassName, field: value, ...}`, a
tuple `{"$tuple": [...]}`, a numpy dtype `{"$dtype": "<f4"}` (`"bfloat16"` for ml_dtypes' bf16,
whose `str` is numpy's anonymous `<V2`), an array `{"$array": blob, "dtype", "shape"}` (C order);
other values are JSON's own.
"""

from __future__ import annotations

import dataclasses
import json
import struct
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mlc.errors import MlcError
from mlc.runtime import slots
from mlc.runtime.digests import sha256

MAGIC = b"MLCART\x00\x01"
FORMAT_VERSION = 1
_PREFIX = len(MAGIC) + 32 + 8

BFLOAT16 = "bfloat16"
# Every dataclass of the host plan's module, so that a field added to the plan (a new dataclass
# such as TensorMapParameter) travels in artifacts without a second list to keep in step.
_PLAN_CLASSES: dict[str, type] = {
    cls.__name__: cls
    for cls in vars(slots).values()
    if isinstance(cls, type) and dataclasses.is_dataclass(cls) and cls.__module__ == slots.__name__
}


class ArtifactError(MlcError):
    """Bytes that are not a valid artifact (truncated, corrupted, another format); says which."""


@dataclass(frozen=True)
class Artifact:
    """A compiled entry function and what it was compiled for (see the module docstring)."""

    device: str  # "cuda" or "cpu"
    function_name: str
    pipeline: str
    kernels: str | bytes  # PTX text (cuda) or the native object file (cpu)
    plan: slots.HostPlan
    graph_source: str  # the graph-level module as MLIR text
    target: dict[str, str] = field(default_factory=dict)
    """What the code was built for and by: device, arch or CPU features, mlc's build, versions."""
    key: str = ""
    """The cache key it is stored under ('' in a bundle): an entry under another key is foreign."""
    shared_library: bytes | None = None
    """CPU: the kernels as a shared library, beside the object (see the module docstring)."""
    cubin: bytes | None = None
    """GPU: the PTX compiled by the driver for the target's GPU (see the module docstring)."""


def encode(artifact: Artifact) -> bytes:
    """The file's bytes for `artifact`."""
    blobs: list[bytes] = []
    kernels = artifact.kernels.encode() if isinstance(artifact.kernels, str) else bytes(artifact.kernels)
    blobs.append(kernels)
    if artifact.shared_library is not None:
        blobs.append(bytes(artifact.shared_library))
    cubin_blob = None
    if artifact.cubin is not None:
        cubin_blob = len(blobs)
        blobs.append(bytes(artifact.cubin))
    header = {
        "format": FORMAT_VERSION,
        "device": artifact.device,
        "function_name": artifact.function_name,
        "pipeline": artifact.pipeline,
        "kernels_are_text": isinstance(artifact.kernels, str),
        "graph_source": artifact.graph_source,
        "target": artifact.target,
        "key": artifact.key,
        "shared_library": 1 if artifact.shared_library is not None else None,
        "cubin": cubin_blob,
        "plan": _encode_value(artifact.plan, blobs),
    }
    table, offset = [], 0
    for blob in blobs:
        table.append([offset, len(blob)])
        offset += len(blob)
    header["blobs"] = table
    header_bytes = json.dumps(header, separators=(",", ":")).encode()
    payload = b"".join([struct.pack("<Q", len(header_bytes)), header_bytes, *blobs])
    return MAGIC + sha256(payload).digest() + payload


def decode(data: bytes) -> Artifact:
    """The artifact in `data`; ArtifactError when it is not one, or not intact."""
    if len(data) < _PREFIX:
        raise ArtifactError(f"truncated: {len(data)} bytes, shorter than the {_PREFIX}-byte prefix")
    if data[: len(MAGIC)] != MAGIC:
        if data[:6] == MAGIC[:6]:
            raise ArtifactError(f"written in another format version ({data[6:8].hex()}); this mlc reads {MAGIC[6:8].hex()}")
        raise ArtifactError("not an mlc artifact (wrong magic bytes)")
    view = memoryview(data)
    checksum, payload = bytes(view[len(MAGIC) : len(MAGIC) + 32]), view[len(MAGIC) + 32 :]
    if sha256(payload).digest() != checksum:
        raise ArtifactError("checksum mismatch: the file is truncated or corrupted")
    (header_size,) = struct.unpack_from("<Q", payload, 0)
    try:
        header = json.loads(bytes(payload[8 : 8 + header_size]))
        blob_base = 8 + header_size
        blobs = [bytes(payload[blob_base + start : blob_base + start + size]) for start, size in header["blobs"]]
        if header["format"] != FORMAT_VERSION:
            raise ArtifactError(f"format version {header['format']}; this mlc reads {FORMAT_VERSION}")
        kernels: str | bytes = blobs[0].decode() if header["kernels_are_text"] else blobs[0]
        plan = _decode_value(header["plan"], blobs)
        if not isinstance(plan, slots.HostPlan):
            raise ArtifactError("the header holds no host plan")
        return Artifact(
            device=header["device"],
            function_name=header["function_name"],
            pipeline=header["pipeline"],
            kernels=kernels,
            plan=plan,
            graph_source=header["graph_source"],
            target=dict(header["target"]),
            key=header["key"],
            shared_library=blobs[header["shared_library"]] if header.get("shared_library") is not None else None,
            cubin=blobs[header["cubin"]] if header.get("cubin") is not None else None,
        )
    except ArtifactError:
        raise
    except (ValueError, KeyError, TypeError, IndexError, UnicodeDecodeError) as error:
        # The checksum matched, so the writer itself wrote this: another mlc's idea of the format.
        raise ArtifactError(f"malformed header: {type(error).__name__}: {error}") from None


def _encode_value(value: Any, blobs: list[bytes]) -> Any:
    if dataclasses.is_dataclass(value) and type(value).__name__ in _PLAN_CLASSES:
        encoded = {"$": type(value).__name__}
        for item in dataclasses.fields(value):
            encoded[item.name] = _encode_value(getattr(value, item.name), blobs)
        return encoded
    if isinstance(value, tuple):
        return {"$tuple": [_encode_value(item, blobs) for item in value]}
    if isinstance(value, np.dtype):
        return {"$dtype": _dtype_text(value)}
    if isinstance(value, np.ndarray):
        blobs.append(np.ascontiguousarray(value).tobytes())
        return {"$array": len(blobs) - 1, "dtype": _dtype_text(value.dtype), "shape": list(value.shape)}
    if value is None or isinstance(value, bool | int | float | str):
        return value
    raise TypeError(f"cannot encode a {type(value).__name__} in an artifact")


def _dtype_text(dtype: np.dtype) -> str:
    """`dtype.str`, except bf16's name: its `str` (`<V2`) would decode as raw bytes."""
    return BFLOAT16 if dtype.name == BFLOAT16 else dtype.str


def _dtype_named(text: str) -> np.dtype:
    if text == BFLOAT16:
        from mlc.dialects.element_types import bfloat16_dtype

        return bfloat16_dtype()
    return np.dtype(text)


def _decode_value(value: Any, blobs: list[bytes]) -> Any:
    if isinstance(value, list):
        return [_decode_value(item, blobs) for item in value]
    if not isinstance(value, dict):
        return value
    if "$" in value:
        cls = _PLAN_CLASSES[value["$"]]
        return cls(**{name: _decode_value(item, blobs) for name, item in value.items() if name != "$"})
    if "$tuple" in value:
        return tuple(_decode_value(item, blobs) for item in value["$tuple"])
    if "$dtype" in value:
        return _dtype_named(value["$dtype"])
    if "$array" in value:
        array = np.frombuffer(blobs[value["$array"]], dtype=_dtype_named(value["dtype"])).reshape(value["shape"])
        array.flags.writeable = False  # frombuffer of bytes is read-only already; the plan says so
        return array
    raise ValueError(f"unknown tagged value {sorted(value)}")
