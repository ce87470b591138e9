"""The on-disk artifact cache and the artifact format, without compiling anything.

Artifacts here are built by hand (a small host plan with a constant, PTX-like text or object-like
bytes): the format round trip, the keys, least-recently-used eviction, every kind of bad entry
(truncated, random bytes, a wrong checksum, another format version, a foreign entry, a missing
file) and directories that cannot be used. A bad entry or directory is a `CacheWarning`, never an
error: the caller compiles instead.
"""

from __future__ import annotations

import dataclasses
import os
import warnings
from pathlib import Path

import numpy as np
import pytest

from mlc.runtime import slots
from mlc.runtime.artifact_cache import ArtifactCache, CacheWarning, cache_key
from mlc.runtime.artifacts import MAGIC, Artifact, ArtifactError, decode, encode


def _plan(values: np.ndarray) -> slots.HostPlan:
    spec = slots.BufferSpec((4,), np.dtype(np.float32), "memref<4xf32>")
    return slots.HostPlan(
        function_name="f",
        arguments=(slots.ArgumentSlot(0, "argument #0 of @f", spec, 0, 16, "kernel 'k'"),),
        constants=(slots.ConstantSlot(1, "c", spec, values, 256),),
        allocations=(slots.AllocationSlot(2, spec, 256, True, "result #0 of @f"),),
        launches=(slots.KernelLaunch("k", slots.CPU_LAUNCH, (0, 1, 2), (spec, spec, spec), None, None, (16, 16, 16)),),
        results=(slots.ResultSlot(0, 2, spec, "allocation"),),
        slot_count=3,
        slot_alignments=((16, "kernel 'k'"), (256, ""), (256, "")),
    )


def _artifact(key: str = "", kernels: str | bytes = b"\x7fELF object", size: int = 4) -> Artifact:
    values = np.arange(size, dtype=np.float32)
    return Artifact("cpu", "f", "mlc-lower-to-cpu", kernels, _plan(values), "func.func @f() {}", {"device": "cpu"}, key)


@pytest.fixture
def cache(tmp_path: Path) -> ArtifactCache:
    return ArtifactCache(tmp_path / "cache")


def test_the_format_round_trips_plans_text_and_bytes():
    for kernels in (b"\x00\x01object", "// PTX text\n.entry k {}"):
        artifact = _artifact("k1", kernels)
        again = decode(encode(artifact))
        assert again.kernels == kernels and type(again.kernels) is type(kernels)
        assert again.plan.launches == artifact.plan.launches and again.plan.arguments == artifact.plan.arguments
        assert again.plan.slot_alignments == artifact.plan.slot_alignments
        constant = again.plan.constants[0].values
        np.testing.assert_array_equal(constant, artifact.plan.constants[0].values)
        assert not constant.flags.writeable and constant.dtype == np.float32
        assert (again.graph_source, again.target, again.key) == (artifact.graph_source, artifact.target, "k1")


def test_tensor_map_parameters_travel_with_their_launch():
    spec = slots.BufferSpec((64, 64), np.dtype(np.float16), "memref<64x64xf16>")
    tensor_map = slots.TensorMapParameter(source=0, box=(64, 32), swizzle=128)
    launch = slots.KernelLaunch("k", slots.GPU_LAUNCH, (0,), (spec,), (1, 1, 1), (128, 1, 1), (16,), tensor_maps=(tensor_map,))
    plan = dataclasses.replace(_plan(np.arange(4, dtype=np.float32)), launches=(launch,))
    artifact = dataclasses.replace(_artifact(), device="cuda", kernels="// PTX", plan=plan)
    again = decode(encode(artifact))
    assert again.plan.launches == (launch,)
    assert again.plan.launches[0].tensor_maps[0].box == (64, 32)


def test_bf16_buffers_and_constants_keep_their_dtype():
    """ml_dtypes' bf16 has numpy's anonymous `str` `<V2`: a cached bf16 TMA kernel once came back
    with raw-byte buffers, whose tensor maps had no element type."""
    bfloat16 = pytest.importorskip("ml_dtypes").bfloat16
    values = np.arange(4, dtype=np.float32).astype(bfloat16)
    spec = slots.BufferSpec((4,), np.dtype(bfloat16), "memref<4xbf16>")
    plan = dataclasses.replace(_plan(values), constants=(slots.ConstantSlot(1, "c", spec, values, 256),))
    again = decode(encode(dataclasses.replace(_artifact(), plan=plan)))
    constant = again.plan.constants[0]
    assert constant.spec.dtype == np.dtype(bfloat16) and constant.values.dtype == np.dtype(bfloat16)
    assert np.array_equal(constant.values.astype(np.float32), values.astype(np.float32))

def test_a_shared_library_travels_with_the_object_and_old_files_have_none():
    import dataclasses
    import hashlib
    import json
    import struct

    library = b"\x7fELF shared library" * 50
    again = decode(encode(dataclasses.replace(_artifact("k1"), shared_library=library)))
    assert again.shared_library == library and again.kernels == b"\x7fELF object"
    np.testing.assert_array_equal(again.plan.constants[0].values, np.arange(4, dtype=np.float32))
    # A file written before the field existed (no "shared_library" in its header) reads as None.
    data = encode(_artifact("k1"))
    (size,) = struct.unpack_from("<Q", data, len(MAGIC) + 32)
    start = len(MAGIC) + 40
    header = json.loads(data[start : start + size])
    del header["shared_library"]
    header_bytes = json.dumps(header, separators=(",", ":")).encode()
    payload = struct.pack("<Q", len(header_bytes)) + header_bytes + data[start + size :]
    old = decode(MAGIC + hashlib.sha256(payload).digest() + payload)
    assert old.shared_library is None and old.kernels == b"\x7fELF object"


def test_keys_separate_their_parts():
    assert cache_key("ab", "c") != cache_key("a", "bc")
    assert cache_key("x") == cache_key("x") and len(cache_key("x")) == 64


def test_store_then_load(cache: ArtifactCache):
    key = cache_key("program")
    assert cache.load(key) is None
    cache.store(key, _artifact(key))
    loaded = cache.load(key)
    assert loaded is not None and loaded.key == key
    assert cache.info().entries == 1
    assert not list(cache.path_of(key).parent.glob("*.tmp"))  # the temporary file was renamed


def test_least_recently_used_entries_are_evicted(tmp_path: Path):
    entry_size = len(encode(_artifact(cache_key("0"))))
    cache = ArtifactCache(tmp_path, max_bytes=3 * entry_size)
    keys = [cache_key(str(i)) for i in range(4)]
    for age, key in enumerate(keys[:3]):
        cache.store(key, _artifact(key))
        os.utime(cache.path_of(key), ns=(age * 10**9, age * 10**9))  # stored in order, seconds apart
    assert cache.load(keys[0]) is not None  # a hit makes the oldest the most recently used
    cache.store(keys[3], _artifact(keys[3]))
    present = [key for key in keys if cache.path_of(key).exists()]
    assert present == [keys[0], keys[2], keys[3]]
    assert cache.info().total_bytes <= cache.max_bytes


def _corrupt(path: Path, kind: str) -> None:
    data = bytearray(path.read_bytes())
    if kind == "truncated":
        path.write_bytes(bytes(data[: len(data) // 2]))
    elif kind == "random bytes":
        path.write_bytes(np.random.default_rng(0).integers(0, 256, len(data), dtype=np.uint8).tobytes())
    elif kind == "flipped byte":
        data[-3] ^= 0xFF
        path.write_bytes(bytes(data))
    elif kind == "wrong checksum":
        data[len(MAGIC)] ^= 0x01
        path.write_bytes(bytes(data))
    elif kind == "other format version":
        data[len(MAGIC) - 1] = 0x7F
        path.write_bytes(bytes(data))
    elif kind == "empty":
        path.write_bytes(b"")


@pytest.mark.parametrize("kind", ["truncated", "random bytes", "flipped byte", "wrong checksum", "other format version", "empty"])
def test_a_bad_entry_is_reported_once_removed_and_replaced(cache: ArtifactCache, kind: str):
    key = cache_key("program")
    cache.store(key, _artifact(key))
    _corrupt(cache.path_of(key), kind)
    with pytest.warns(CacheWarning, match="compiling again") as caught:
        assert cache.load(key) is None
    assert len(caught) == 1 and str(cache.path_of(key)) in str(caught[0].message)
    assert not cache.path_of(key).exists()
    cache.store(key, _artifact(key))  # what the compiler does next
    assert cache.load(key) is not None


def test_decode_names_what_is_wrong():
    data = encode(_artifact())
    with pytest.raises(ArtifactError, match="truncated"):
        decode(data[:10])
    with pytest.raises(ArtifactError, match="wrong magic"):
        decode(b"#!/bin/sh" + data)
    with pytest.raises(ArtifactError, match="checksum mismatch"):
        decode(data[:-1])


def test_a_foreign_entry_is_not_served(cache: ArtifactCache):
    key, other = cache_key("program"), cache_key("another program")
    cache.store(other, _artifact(other))
    cache.path_of(key).parent.mkdir(parents=True, exist_ok=True)
    os.replace(cache.path_of(other), cache.path_of(key))  # an entry filed under the wrong name
    with pytest.warns(CacheWarning, match="is foreign"):
        assert cache.load(key) is None


def test_the_same_bad_entry_is_reported_once_per_process(cache: ArtifactCache, monkeypatch: pytest.MonkeyPatch):
    key = cache_key("program")
    cache.store(key, _artifact(key))
    _corrupt(cache.path_of(key), "truncated")
    monkeypatch.setattr(Path, "unlink", lambda self, missing_ok=False: None)  # cannot be removed
    with pytest.warns(CacheWarning):
        assert cache.load(key) is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cache.load(key) is None


def test_a_missing_entry_is_a_plain_miss(cache: ArtifactCache):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cache.load(cache_key("never stored")) is None


def test_a_directory_that_cannot_be_created_turns_the_cache_off(tmp_path: Path):
    blocker = tmp_path / "a file"
    blocker.write_text("not a directory")
    cache = ArtifactCache(blocker / "cache")
    key = cache_key("program")
    with pytest.warns(CacheWarning, match="off for this process") as caught:
        assert cache.load(key) is None
        cache.store(key, _artifact(key))
        assert cache.load(key) is None
    assert len(caught) == 1


def test_a_directory_that_refuses_writes_turns_the_cache_off(cache: ArtifactCache, monkeypatch: pytest.MonkeyPatch):
    import tempfile

    def read_only_file_system(*args, **kwargs):
        raise OSError(30, "Read-only file system")

    key = cache_key("program")
    monkeypatch.setattr(tempfile, "mkstemp", read_only_file_system)
    with pytest.warns(CacheWarning, match="Read-only file system"):
        cache.store(key, _artifact(key))
    assert cache.load(key) is None  # off from now on, without another warning


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root reads and writes any directory")
def test_a_read_only_directory_turns_the_cache_off(tmp_path: Path):
    directory = tmp_path / "read-only"
    directory.mkdir()
    directory.chmod(0o555)
    try:
        cache = ArtifactCache(directory)
        with pytest.warns(CacheWarning, match="off for this process"):
            cache.store(cache_key("program"), _artifact())
    finally:
        directory.chmod(0o755)


def test_clear_and_info(cache: ArtifactCache):
    for name in ("a", "b"):
        cache.store(cache_key(name), _artifact(cache_key(name)))
    info = cache.info()
    assert info.entries == 2 and info.total_bytes > 0 and str(cache.directory) in str(info)
    assert cache.clear() == 2
    assert cache.info().entries == 0


def test_the_environment_chooses_directory_limit_and_switch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("MLC_CACHE", "1")
    monkeypatch.setenv("MLC_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("MLC_CACHE_MAX_BYTES", "12345")
    cache = ArtifactCache.from_environment()
    assert cache is not None and cache.directory == tmp_path and cache.max_bytes == 12345
    for off in ("0", "false", "OFF"):
        monkeypatch.setenv("MLC_CACHE", off)
        assert ArtifactCache.from_environment() is None
    monkeypatch.setenv("MLC_CACHE", "1")
    monkeypatch.delenv("MLC_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    default = ArtifactCache.from_environment()
    assert default is not None and default.directory == tmp_path / "xdg" / "mlc"


def test_the_public_names_of_bundle_and_cache_faults():
    import mlc
    from mlc.caching import BundleError

    assert mlc.BundleError is BundleError and mlc.CacheWarning is CacheWarning
    assert issubclass(mlc.BundleError, mlc.MlcError) and issubclass(mlc.CacheWarning, UserWarning)


def test_digest_without_hashlib_is_sha256():
    import hashlib

    from mlc.runtime.digests import sha256

    for data in (b"", b"abc", bytes(range(256)) * 70):
        assert sha256(data).hexdigest() == hashlib.sha256(data).hexdigest()
    chunked = sha256()
    chunked.update(b"ab")
    chunked.update(b"c")
    assert chunked.digest() == hashlib.sha256(b"abc").digest()
