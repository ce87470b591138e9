"""Does where the buffers lie change a CPU kernel's speed? The tanh chain with placed buffers.

    python bench/cpu_placement.py [--threads 1,16] [--calls 30]

tanh(x*y + x) on 4096x1024 f32 (`bench/cpu.py`'s case), with x, y and the output placed at chosen
byte offsets modulo 4096 (views into page-aligned allocations; the output through
`run_on_device(..., outputs=[out])`, so no call allocates or faults), every combination of
Y_OFFSETS for y and OUT_OFFSETS for the output, x at offset 0; best and median of `--calls` calls
after 3 warm-ups, each thread count with its own compiled program.

Why. On the 16-CPU host the same kernel took 2.6 ms at one thread with some output arrays and
3.7 ms with others, without page faults, in one process; and 8.6 ms when glibc's heap placed every
array (BENCHMARKS.md, branch cpu12): the arrays' placement relative to each other is the suspect
(4 KiB aliasing of loads and stores, cache-set or prefetch conflicts), and this shows whether it is.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

import mlc

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cpu import tanh_chain_case  # noqa: E402 - bench/cpu.py, beside this script
from mlc.runtime.host import aligned_empty

ROWS, COLUMNS = 4096, 1024
Y_OFFSETS = (0, 1024, 2048)
OUT_OFFSETS = (0, 64, 256, 1024, 2048, 3072, 4032)


def placed(offset: int) -> np.ndarray:
    """A [ROWS, COLUMNS] f32 array starting `offset` bytes after a page boundary."""
    raw = aligned_empty((ROWS * COLUMNS * 4 + 4096,), np.dtype(np.uint8), 4096)
    return raw[offset : offset + ROWS * COLUMNS * 4].view(np.float32).reshape(ROWS, COLUMNS)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", default="1,16")
    parser.add_argument("--calls", type=int, default=30)
    arguments = parser.parse_args()
    source = tanh_chain_case(ROWS, COLUMNS).source
    generator = np.random.default_rng(0)
    x = placed(0)
    x[...] = generator.standard_normal((ROWS, COLUMNS))
    ys = {offset: placed(offset) for offset in Y_OFFSETS}
    for y in ys.values():
        y[...] = generator.standard_normal((ROWS, COLUMNS))
    outs = {offset: placed(offset) for offset in OUT_OFFSETS}
    for out in outs.values():
        out[...] = 0
    print("| threads | y offset | output offset | best ms | median ms |\n| ---: | ---: | ---: | ---: | ---: |")
    for threads in map(int, arguments.threads.split(",")):
        compiled = mlc.compile(source, device="cpu", num_threads=threads)
        for y_offset, y in ys.items():
            for out_offset, out in outs.items():
                times = []
                for call in range(arguments.calls + 3):
                    start = time.perf_counter()
                    compiled.run_on_device(x, y, outputs=[out])
                    if call >= 3:
                        times.append((time.perf_counter() - start) * 1e3)
                np.testing.assert_allclose(out, np.tanh(x * y + x), rtol=1e-5, atol=1e-6)
                print(f"| {threads} | {y_offset} | {out_offset} | {min(times):.3f} | {sorted(times)[len(times) // 2]:.3f} |", flush=True)


if __name__ == "__main__":
    main()
