"""The on-disk cache of compiled programs: compile once, load in milliseconds afterwards.

Where and how much (read from the environment when a compile starts):

* `MLC_CACHE_DIR`: the directory; default `$XDG_CACHE_HOME/mlc` or `~/.cache/mlc` (the user's
  cache directory as platformdirs names it on Linux; `%LOCALAPPDATA%\\mlc\\Cache` on Windows,
  `~/Library/Caches/mlc` on macOS).
* `MLC_CACHE=0` (or `false`, `off`, `no`): no cache at all, nothing read or written.
* `MLC_CACHE_MAX_BYTES`: the size limit (default 1 GiB); when a new entry takes the cache past
  it, the least recently used entries are removed until it fits again.

Entries. One file per key, `<dir>/<key[:2]>/<key>.mlca`, in the `artifacts.py` format; the key
(`cache_key`) is a SHA-256 of everything that decides the compiled code: the source text, the
entry and pipeline, the target (GPU architecture and driver, or CPU triple, name and features),
mlc's build (its version and a fingerprint of its source files, so editing mlc invalidates
entries) and the versions of xDSL and llvmlite. A hit touches the file's modification time,
which is what least-recently-used means here.

Faults. Writes go to a temporary file in the entry's directory, then `os.replace` it over the
entry: readers see the old entry or the new one, never part of one, and two processes that
compile the same program at once both succeed, leaving one whole entry (the last rename wins;
both wrote the same thing). An entry that is truncated, corrupted (checksum), of another format
or filed under another key (foreign) is reported with a `CacheWarning` once per entry and
process, removed, and the program is compiled again (and stored again). A directory that cannot
be created, read or written makes the cache a no-op for this process, with one `CacheWarning`:
compiling never fails because of the cache.

Limits: eviction lists the directory when an entry is added (cheap next to the compile that
precedes it); the size limit is approximate when several processes add entries at once.
"""

from __future__ import annotations

import functools
import os
import sys
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from mlc.errors import format_bytes
from mlc.runtime.artifacts import Artifact, ArtifactError, decode, encode
from mlc.runtime.digests import sha256

DEFAULT_MAX_BYTES = 1 << 30
SUFFIX = ".mlca"
_FALSE = ("0", "false", "off", "no")


class CacheWarning(UserWarning):
    """The cache could not be used as it is (a bad entry, an unusable directory); compiling goes on."""


def default_directory() -> Path:
    """The user's cache directory for mlc (see the module docstring)."""
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
        return Path(base) / "mlc" / "Cache"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "mlc"
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "mlc"


def cache_enabled() -> bool:
    return os.environ.get("MLC_CACHE", "1").strip().lower() not in _FALSE


def cache_key(*parts: str) -> str:
    """The SHA-256 of `parts`, each length-prefixed (so no two lists of parts collide)."""
    digest = sha256()
    for part in parts:
        data = part.encode()
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    return digest.hexdigest()


@dataclass(frozen=True)
class CacheInfo:
    """What `mlc-cache info` reports: where the cache is, its entries and their size, the limit."""

    directory: Path
    entries: int
    total_bytes: int
    max_bytes: int

    def __str__(self) -> str:
        return (
            f"directory: {self.directory}\nentries: {self.entries}\n"
            f"size: {format_bytes(self.total_bytes)} of {format_bytes(self.max_bytes)}"
        )


@functools.lru_cache(maxsize=16)
def _shared_cache(cls: type[ArtifactCache], directory: Path, max_bytes: int) -> ArtifactCache:
    """One cache object per directory and limit in a process, so that its warnings (an unusable
    directory, a bad entry) are given once, not at every compile."""
    return cls(directory, max_bytes)


class ArtifactCache:
    """Compiled artifacts on disk, by key (see the module docstring)."""

    def __init__(self, directory: Path, max_bytes: int = DEFAULT_MAX_BYTES):
        self.directory = Path(directory)
        self.max_bytes = max_bytes
        self._usable: bool | None = None  # decided on first use
        self._reported: set[str] = set()  # entries already warned about, by path

    @classmethod
    def from_environment(cls) -> ArtifactCache | None:
        """The cache the environment asks for, or None when MLC_CACHE turns it off."""
        if not cache_enabled():
            return None
        directory = Path(os.environ["MLC_CACHE_DIR"]) if os.environ.get("MLC_CACHE_DIR") else default_directory()
        limit = os.environ.get("MLC_CACHE_MAX_BYTES", "")
        try:
            max_bytes = int(limit) if limit.strip() else DEFAULT_MAX_BYTES
        except ValueError:
            warnings.warn(f"MLC_CACHE_MAX_BYTES={limit!r} is not a number of bytes; using 1 GiB", CacheWarning, stacklevel=2)
            max_bytes = DEFAULT_MAX_BYTES
        return _shared_cache(cls, directory, max_bytes)

    def path_of(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}{SUFFIX}"

    # -- reading -------------------------------------------------------------------------------

    def load(self, key: str) -> Artifact | None:
        """The artifact stored under `key`, or None (absent, unusable: then warned and removed)."""
        if not self._check_usable():
            return None
        path = self.path_of(key)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as error:
            self._warn_entry(path, f"cannot be read ({error.strerror or error})")
            return None
        try:
            artifact = decode(data)
        except ArtifactError as error:
            self._discard(path, str(error))
            return None
        if artifact.key != key:
            self._discard(path, f"is foreign: it holds the entry of key {artifact.key[:16]}...")
            return None
        try:
            os.utime(path)  # most recently used
        except OSError:
            pass  # a read-only cache still serves hits; its order just does not change
        return artifact

    # -- writing -------------------------------------------------------------------------------

    def store(self, key: str, artifact: Artifact) -> None:
        """Stores `artifact` under `key` atomically, then evicts down to the size limit."""
        if not self._check_usable():
            return
        import tempfile  # here: a process that only reads the cache never needs it

        path = self.path_of(key)
        data = encode(artifact)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            descriptor, temporary = tempfile.mkstemp(prefix=f".{key[:16]}.", suffix=".tmp", dir=path.parent)
            try:
                with os.fdopen(descriptor, "wb") as file:
                    file.write(data)
                os.replace(temporary, path)
            except BaseException:
                Path(temporary).unlink(missing_ok=True)
                raise
        except OSError as error:
            self._give_up(f"cannot write to {self.directory} ({error.strerror or error})")
            return
        self.evict(keep=path)

    def evict(self, keep: Path | None = None) -> None:
        """Removes least recently used entries until the cache fits its size limit."""
        entries = sorted(self._entries(), key=lambda entry: entry[1].st_mtime_ns)
        total = sum(stat.st_size for _, stat in entries)
        for path, stat in entries:
            if total <= self.max_bytes:
                break
            if path == keep:
                continue
            try:
                path.unlink()
            except OSError:
                continue  # gone already (another process evicted it), or not ours to remove
            total -= stat.st_size

    def clear(self) -> int:
        """Removes every entry (and leftover temporary files); returns how many entries."""
        removed = 0
        for path, _ in self._entries(include_temporary=True):
            try:
                path.unlink()
                removed += path.suffix == SUFFIX
            except OSError:
                pass
        return removed

    def info(self) -> CacheInfo:
        entries = list(self._entries())
        return CacheInfo(self.directory, len(entries), sum(stat.st_size for _, stat in entries), self.max_bytes)

    # -- helpers -------------------------------------------------------------------------------

    def _entries(self, include_temporary: bool = False) -> Iterator[tuple[Path, os.stat_result]]:
        try:
            shards = [entry for entry in os.scandir(self.directory) if entry.is_dir()]
        except OSError:
            return
        for shard in shards:
            try:
                files = list(os.scandir(shard.path))
            except OSError:
                continue
            for file in files:
                if file.name.endswith(SUFFIX) or (include_temporary and file.name.endswith(".tmp")):
                    try:
                        yield Path(file.path), file.stat()
                    except OSError:
                        continue

    def _check_usable(self) -> bool:
        """Whether the directory exists (created if needed) and can be read and written."""
        if self._usable is None:
            try:
                self.directory.mkdir(parents=True, exist_ok=True)
                usable = os.access(self.directory, os.R_OK | os.W_OK | os.X_OK)
                reason = "it cannot be read and written"
            except OSError as error:
                usable, reason = False, f"it cannot be created ({error.strerror or error})"
            self._usable = True
            if not usable:
                self._give_up(f"{self.directory} is not usable: {reason}")
        return bool(self._usable)

    def _give_up(self, reason: str) -> None:
        if self._usable is not False:
            warnings.warn(f"mlc's compile cache is off for this process: {reason}", CacheWarning, stacklevel=4)
        self._usable = False

    def _warn_entry(self, path: Path, problem: str) -> None:
        if str(path) not in self._reported:
            self._reported.add(str(path))
            warnings.warn(f"mlc's compile cache: entry {path} {problem}; compiling again", CacheWarning, stacklevel=4)

    def _discard(self, path: Path, problem: str) -> None:
        self._warn_entry(path, problem if problem.startswith("is ") else f"is unusable: {problem}")
        try:
            path.unlink()
        except OSError:
            pass  # a read-only cache: the entry stays, and is reported once per process
