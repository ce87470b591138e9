"""The host CPU's cache sizes, as Linux's sysfs describes them.

Two readers: the CPU lowering, which stores a row kernel's results non-temporally where its
streams exceed the last-level cache (`transforms/lowering/cpu_prefetch.store_kind`), and the
compile cache's key (`caching.cache_target`), so that a decision taken for one cache size is not
served to a host of the same CPU model with another. Standard library only: a cache hit imports
this module without importing the passes.
"""

from __future__ import annotations

from pathlib import Path

CPU_CACHES = Path("/sys/devices/system/cpu/cpu0/cache")


def host_last_level_cache_bytes(caches: Path = CPU_CACHES) -> int | None:
    """The size of the host's last-level data (or unified) cache, from Linux's sysfs description
    of the first CPU's caches; None where there is none to read."""
    best: tuple[int, int] | None = None
    for index in sorted(caches.glob("index*")):
        try:
            kind = (index / "type").read_text().strip()
            level = int((index / "level").read_text())
            size = (index / "size").read_text().strip()
        except (OSError, ValueError):
            continue
        if kind == "Instruction":
            continue
        scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(size[-1:], 1)
        try:
            size_bytes = int(size.rstrip("KMG")) * scale
        except ValueError:
            continue
        if best is None or level > best[0]:
            best = (level, size_bytes)
    return None if best is None else best[1]
