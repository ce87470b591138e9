"""Do the physical pages under a CPU kernel's arrays decide its speed? The tanh chain on many array sets.

    python bench/cpu_physical.py [--sets 16] [--threads 1] [--calls 8] [--passes 2] [--memory numpy|huge|slab:START:SPACING]

Allocates `--sets` sets of (x, y, output), 4096x1024 f32 each (`bench/cpu.py`'s tanh chain), all
alive at once (so each set has pages of its own), fills them, then times tanh(x*y + x) into each
set's output (`run_on_device(..., outputs=[out])`: no allocation, no fault), best of `--calls`
after 2 warm-ups, set after set, `--passes` times (every other pass in reverse order: a set slow in
every pass is slow by its memory, a set slow in one pass was slow at a moment). With each set,
where its pages lie in (guest-)physical memory: the median and the range of the page frame
numbers of x, y and the output in GiB, from /proc/self/pagemap (frame numbers need
CAP_SYS_ADMIN: without it they read 0 and the columns say nan), and the share of each array's
pages that are parts of transparent huge pages (/proc/kpageflags, `physical_pages`). `--memory numpy` allocates as numpy does (glibc: the arrays of `bench/cpu.py`), `huge` in
mappings of their own advised MADV_HUGEPAGE (mlc's large results since cpu13), `slab:START:SPACING`
the three arrays of a set carved from one such mapping at chosen distances (`new_set`). Each set's
row also has the addresses of x, y and the output modulo 4096 and their distances.

Why. In whole `bench/cpu.py` runs (branches cpu12, cpu13) the tanh chain ran 9-10 ms at one thread
where other processes of the same call took 2.4-2.8 ms, steadily for a whole process, with its
results from glibc's heap: on a virtual machine, where guest memory lies on the host (another
socket's memory, another tier) is invisible to the guest's NUMA view, and this is what would show it.
"""

from __future__ import annotations

import argparse
import mmap
import os
import struct
import sys
import time
from pathlib import Path

import numpy as np

import mlc

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cpu import current_cpu, physical_pages, tanh_chain_case  # noqa: E402 - bench/cpu.py, beside this script

ROWS, COLUMNS = 4096, 1024
PAGE = 4096


def frames_gib(array: np.ndarray) -> tuple[float, float, float]:
    """(lowest, median, highest) physical address of `array`'s pages in GiB, or NaNs where
    /proc/self/pagemap hides frame numbers (no CAP_SYS_ADMIN) or is absent."""
    first, count = array.ctypes.data // PAGE, -(-array.nbytes // PAGE)
    try:
        with open("/proc/self/pagemap", "rb") as pagemap:
            pagemap.seek(first * 8)
            data = pagemap.read(count * 8)
    except OSError:
        return (float("nan"),) * 3  # type: ignore[return-value]
    frames = [entry & ((1 << 55) - 1) for entry in struct.unpack(f"<{len(data) // 8}Q", data) if entry >> 63]
    if not frames or not any(frames):
        return (float("nan"),) * 3  # type: ignore[return-value]
    frames.sort()
    return tuple(frames[index] * PAGE / 2**30 for index in (0, len(frames) // 2, -1))  # type: ignore[return-value]


ARRAY_BYTES = ROWS * COLUMNS * 4
HUGE_PAGE = 2 << 20


def huge_block(nbytes: int, keep: list[mmap.mmap], huge: bool = True) -> np.ndarray:
    """`nbytes` of uint8 starting on a 2 MiB boundary, in a private mapping of its own (kept alive
    in `keep`), advised MADV_HUGEPAGE (`huge`) or MADV_NOHUGEPAGE before its first touch."""
    mapping = mmap.mmap(-1, nbytes + HUGE_PAGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    keep.append(mapping)
    raw = np.frombuffer(mapping, dtype=np.uint8)
    start = -raw.ctypes.data % HUGE_PAGE
    mapping.madvise(mmap.MADV_HUGEPAGE if huge else mmap.MADV_NOHUGEPAGE, start, nbytes)
    return raw[start : start + nbytes]


def new_set(memory: str, keep: list[mmap.mmap]) -> list[np.ndarray]:
    """x, y and the output: numpy's arrays, or each on huge pages of its own (`huge`), or
    `slab:START:SPACING`: carved from one huge-page mapping, x START bytes past a 2 MiB boundary,
    y SPACING bytes after x and the output SPACING after y (glibc's heap hands out consecutive
    16 MiB arrays 16 MiB + 16 bytes apart, 16 bytes past a 64-byte line: `slab:16:16777232`)."""
    if memory == "numpy":
        return [np.empty((ROWS, COLUMNS), np.float32) for _ in range(3)]
    if memory == "huge":
        return [huge_block(ARRAY_BYTES, keep).view(np.float32).reshape(ROWS, COLUMNS) for _ in range(3)]
    _, start, spacing = memory.split(":")
    first, step = int(start), int(spacing)
    assert first % 4 == 0 and step % 4 == 0 and step >= ARRAY_BYTES, memory
    block = huge_block(first + 2 * step + ARRAY_BYTES, keep)
    return [block[first + k * step : first + k * step + ARRAY_BYTES].view(np.float32).reshape(ROWS, COLUMNS) for k in range(3)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sets", type=int, default=16)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--calls", type=int, default=8)
    parser.add_argument("--passes", type=int, default=2)
    parser.add_argument("--memory", default="numpy", help="numpy, huge or slab:START:SPACING (see new_set)")
    arguments = parser.parse_args()
    keep: list[mmap.mmap] = []
    generator = np.random.default_rng(0)
    data = generator.standard_normal((2, ROWS, COLUMNS)).astype(np.float32)
    want = np.tanh(data[0] * data[1] + data[0])
    sets = []
    for _ in range(arguments.sets):
        x, y, out = new_set(arguments.memory, keep)
        x[...], y[...], out[...] = data[0], data[1], 0
        sets.append((x, y, out))
    compiled = mlc.compile(tanh_chain_case(ROWS, COLUMNS).source, device="cpu", num_threads=arguments.threads)
    times = [[0.0] * arguments.passes for _ in sets]
    for pass_ in range(arguments.passes):
        order = range(len(sets)) if pass_ % 2 == 0 else reversed(range(len(sets)))
        for index in order:
            x, y, out = sets[index]
            for _ in range(2):
                compiled.run_on_device(x, y, outputs=[out])
            best = float("inf")
            for _ in range(arguments.calls):
                start = time.perf_counter()
                compiled.run_on_device(x, y, outputs=[out])
                best = min(best, time.perf_counter() - start)
            times[index][pass_] = best * 1e3
    for x, y, out in sets:
        assert float(np.max(np.abs(out - want))) <= 1.1e-5
    print(f"memory {arguments.memory}, threads {arguments.threads}, pid {os.getpid()}, calling thread on CPU {current_cpu()}; "
          f"best of {arguments.calls} calls a pass")
    print("| set | ms in each pass | x: GiB low / median / high | y | output | huge-page share x, y, output | x, y, output mod 4096; y - x, output - y bytes |")
    print("| ---: | --- | --- | --- | --- | --- | --- |")
    for index, (x, y, out) in enumerate(sets):
        where = [" / ".join(f"{value:.1f}" for value in frames_gib(array)) for array in (x, y, out)]
        shares = ", ".join(f"{physical_pages(array)[0]:.2f}" for array in (x, y, out))
        addresses = [array.ctypes.data for array in (x, y, out)]
        layout = ", ".join(str(address % 4096) for address in addresses) + f"; {addresses[1] - addresses[0]}, {addresses[2] - addresses[1]}"
        print(f"| {index} | {' '.join(f'{value:.3f}' for value in times[index])} | {' | '.join(where)} | {shares} | {layout} |", flush=True)


if __name__ == "__main__":
    main()
