"""The host policy of the CPU row kernels' streams: how far ahead they prefetch, how they store.

Prefetch. Every row kernel streams its rows through memory once: the first column loop of a
row that reads an operand brings it from memory (later loops of the row re-read it from L1/L2),
and the stores write the output once. Those whole-chunk loads (the first loop to read each
operand, when the operand varies with the row: not a [1, C] row such as a layer norm's scale, which
stays in L1) and every whole-chunk store carry `mlc.cpu_prefetch_bytes` (the host's distance, `host_prefetch_distances`),
which convert-vector-to-llvm turns into a prefetch of the line that far ahead (prefetchw for the
output: its read-for-ownership starts before the store waits on it); the re-reads prefetch
nothing (the first loop already fetched the next rows' lines). Elementwise kernels (gelu10) and,
since cpu11, kernels with reductions: a layer norm of 4096x1024 on two dev-machine threads 0.80
-> 0.66 ms, a softmax of 64x65536 1.10 -> 0.97 ms, of 1024x1024 0.275 -> 0.235 ms. The loads'
and the stores' distances are separate options (`PrefetchDistances`). On the 16-CPU host (cpu13)
no distance (0, 256, 1024, 4096, 8192 bytes, loads or stores alone) changed which placements of
the arrays were slow; on 4 KiB pages the prefetches a page ahead take the one-thread tanh chain
from 4.74 to 3.57 ms (huge pages: 2.80 and 2.77).

Store kind. A row kernel whose streams (every parameter's bytes: inputs and results) exceed
`NONTEMPORAL_CACHE_MULTIPLE` times the host's last-level cache cannot keep its results in cache,
so an ordinary store's read-for-ownership of each output line is wasted traffic: such a kernel
stores `nontemporal` (`mlc.cpu_store_kind`, `store_kind`), x86 hosts only. host17's C probe (-x,
BENCHMARKS.md): 1.44-1.63x faster at 256 MiB on the 16-CPU Intel host (L3 300 MiB), ~1.5x at
64-256 MiB on the 2-core AMD dev machine (L3 32 MiB), but 1.3-3x slower where the data stays
cached (4-16 MiB), hence a threshold above the cache, not at it.

Used by `convert-tile-rows-to-cpu` (the default of its `prefetch-bytes` / `store-prefetch-bytes`
options, its `nontemporal-stores` option) and `cpu_vector_kernels.CpuVectorLowering._prefetch_streams`
(which marks the accesses).
"""

from __future__ import annotations

import platform
from dataclasses import dataclass

from llvmlite import binding

from mlc.host_caches import host_last_level_cache_bytes

STREAMING_PREFETCH_BYTES = 4096
"""How far ahead a row kernel's streaming whole-chunk loads and stores prefetch (`mlc.cpu_prefetch_bytes`;
see Prefetch in the module docstring): each row is read from and written to memory once, and a prefetchw of the output line
a page ahead starts its read-for-ownership before the store waits on it (a 4096x1024 exact GELU
on one dev-machine thread: 1.15-1.19 ms against 1.21-1.31 without, where -x takes 1.15-1.19)."""


@dataclass(frozen=True)
class PrefetchDistances:
    """How far ahead (bytes) a row kernel's streaming loads and its stores prefetch (0: no
    prefetch); the pass's options, which a tile kernel's `mlc.cpu_prefetch_bytes` /
    `mlc.cpu_store_prefetch_bytes` override."""

    loads: int = STREAMING_PREFETCH_BYTES
    stores: int = STREAMING_PREFETCH_BYTES


UNPREFETCHED_CPU_PREFIXES = ("znver",)
"""LLVM names of the host cores whose elementwise row kernels (no reduction) prefetch nothing by
default (`host_prefetch_distances`): AMD's Zen cores. On the 2-core Zen 4 EPYC dev machine a
4096x1024 -x takes 0.71-0.75 ms at one thread without the prefetches against 0.98-1.33 with them,
0.36-0.40 against 0.47-0.52 at two (cpu15, `bench/cpu.py --prefetch`, two alternating processes
each): one load stream and one store stream, which the core's own prefetchers follow, so the
prefetch / prefetchw instructions only cost issue slots; the tanh chain and the exact GELU move
within noise. Kernels with reductions keep them there: a row is read by several column loops,
the later ones from L1, and the prefetch a page ahead brings the next rows meanwhile (layer norm
at two threads 0.56-0.59 ms with, 0.71-0.75 without; softmax 64x65536 0.89-1.19 with, 1.12-1.16
without). On the 16-CPU Intel Xeon host (Emerald Rapids) every row kernel
keeps them: a one-thread tanh chain on 4 KiB pages takes 3.57 ms with, 4.74 without (cpu13)."""


def host_prefetch_distances(reduces: bool, cpu_name: str | None = None) -> PrefetchDistances:
    """The default prefetch distances of a row kernel (`reduces`: whether it has a reduction) on
    the host core (`cpu_name`: LLVM's name of it, by default llvmlite's `get_host_cpu_name()`):
    none for an elementwise kernel on the cores `UNPREFETCHED_CPU_PREFIXES` names,
    `STREAMING_PREFETCH_BYTES` for loads and stores otherwise. The one place the per-host choice
    is made; compiled code is cached per host CPU already (`caching.host_cpu_fingerprint`)."""
    if reduces:
        return PrefetchDistances()
    if cpu_name is None:
        cpu_name = binding.get_host_cpu_name()
    if cpu_name.startswith(UNPREFETCHED_CPU_PREFIXES):
        return PrefetchDistances(0, 0)
    return PrefetchDistances()


NONTEMPORAL_CACHE_MULTIPLE = 1.5
"""How many times the host's last-level cache a row kernel's streamed bytes must exceed for it
to store non-temporally by default (see Store kind): -x of 256 MiB streams 512 MiB, 1.7x the
Intel host's 300 MiB L3, where non-temporal stores won 1.44-1.63x; 16 MiB (32 MiB streamed, 1x
the dev machine's L3) was a tie there and a loss on the Intel host."""

STORE_KINDS = ("auto", "on", "off")
"""The values of convert-tile-rows-to-cpu's `nontemporal-stores` option."""

def is_x86_host() -> bool:
    """Whether the host is x86-64, whose streaming stores (and `sfence`) the backend emits."""
    return platform.machine().lower() in ("x86_64", "amd64")


def store_kind(option: str, streamed_bytes: int, cache_bytes: int | None = None, x86: bool | None = None) -> str:
    """"nontemporal" or "ordinary" for a row kernel streaming `streamed_bytes` (inputs and
    results): `option` "on" / "off" forces it; "auto" stores non-temporally on an x86 host whose
    last-level cache (`cache_bytes`, by default `host_last_level_cache_bytes()`) the streams exceed
    `NONTEMPORAL_CACHE_MULTIPLE` times."""
    if option not in STORE_KINDS:
        raise ValueError(f"nontemporal-stores must be one of {', '.join(STORE_KINDS)}, got {option!r}")
    if option != "auto":
        return "nontemporal" if option == "on" else "ordinary"
    if not (is_x86_host() if x86 is None else x86):
        return "ordinary"
    if cache_bytes is None:
        cache_bytes = host_last_level_cache_bytes()
    if cache_bytes is None or streamed_bytes <= NONTEMPORAL_CACHE_MULTIPLE * cache_bytes:
        return "ordinary"
    return "nontemporal"
