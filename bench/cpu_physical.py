"""Do the physical pages under a CPU kernel's arrays decide its speed? The tanh chain on many array sets.

    python bench/cpu_physical.py [--sets 16] [--threads 1] [--calls 8] [--passes 2] [--memory numpy|huge]

Allocates `--sets` sets of (x, y, output), 4096x1024 f32 each (`bench/cpu.py`'s tanh chain), all
alive at once (so each set has pages of its own), fills them, then times tanh(x*y + x) into each
set's output (`run_on_device(..., outputs=[out])`: no allocation, no fault), best of `--calls`
after 2 warm-ups, set after set, `--passes` times (every other pass in reverse order: a set slow in
every pass is slow by its memory, a set slow in one pass was slow at a moment). With each set,
where its pages lie in (guest-)physical memory: the median and the range of the page frame
numbers of x, y and the output in GiB, from /proc/self/pagemap (frame numbers need
CAP_SYS_ADMIN: without it they read 0 and the columns say nan), and the share of each array's
pages that are parts of transparent huge pages (/proc/kpageflags, `physical_pages`). `--memory numpy` allocates as numpy does (glibc: the arrays of `bench/cpu.py`), `huge` in
mappings of their own advised MADV_HUGEPAGE (mlc's large results since cpu13).

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


def new_array(memory: str, keep: list[mmap.mmap]) -> np.ndarray:
    if memory == "numpy":
        return np.empty((ROWS, COLUMNS), np.float32)
    mapping = mmap.mmap(-1, ROWS * COLUMNS * 4 + (2 << 20), flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    keep.append(mapping)
    raw = np.frombuffer(mapping, dtype=np.uint8)
    start = -raw.ctypes.data % (2 << 20)
    mapping.madvise(mmap.MADV_HUGEPAGE, start, ROWS * COLUMNS * 4)
    return raw[start : start + ROWS * COLUMNS * 4].view(np.float32).reshape(ROWS, COLUMNS)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sets", type=int, default=16)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--calls", type=int, default=8)
    parser.add_argument("--passes", type=int, default=2)
    parser.add_argument("--memory", choices=("numpy", "huge"), default="numpy")
    arguments = parser.parse_args()
    keep: list[mmap.mmap] = []
    generator = np.random.default_rng(0)
    data = generator.standard_normal((2, ROWS, COLUMNS)).astype(np.float32)
    want = np.tanh(data[0] * data[1] + data[0])
    sets = []
    for _ in range(arguments.sets):
        x, y, out = (new_array(arguments.memory, keep) for _ in range(3))
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
    print("| set | ms in each pass | x: GiB low / median / high | y | output | huge-page share x, y, output |")
    print("| ---: | --- | --- | --- | --- | --- |")
    for index, (x, y, out) in enumerate(sets):
        where = [" / ".join(f"{value:.1f}" for value in frames_gib(array)) for array in (x, y, out)]
        shares = ", ".join(f"{physical_pages(array)[0]:.2f}" for array in (x, y, out))
        print(f"| {index} | {' '.join(f'{value:.3f}' for value in times[index])} | {' | '.join(where)} | {shares} |", flush=True)


if __name__ == "__main__":
    main()
