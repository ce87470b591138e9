"""Does where the buffers lie change a CPU kernel's speed? The tanh chain with placed buffers.

    python bench/cpu_placement.py [--threads 1,16] [--calls 30] [--variants 4096/4096,0/0] [--json out.json]

tanh(x*y + x) on 4096x1024 f32 (`bench/cpu.py`'s case), with x, y and the output placed at chosen
byte offsets modulo 4096 (views into page-aligned allocations; the output through
`run_on_device(..., outputs=[out])`, so no call allocates or faults), every combination of
Y_OFFSETS for y and OUT_OFFSETS for the output, x at offset 0; best and median of `--calls` calls
after 3 warm-ups, each thread count with its own compiled program. `--variants` compiles the
kernel once per pair of prefetch distances LOADS/STORES (bytes, 0: none; `bench/cpu.py`'s
`prefetch_pipeline`) and times every placement with each (variants interleaved per placement);
after the table, one summary row per variant and thread count: the fastest, median and slowest
placement's median.

Why. On the 16-CPU host the same kernel took 2.6 ms at one thread with some output arrays and
3.7 ms with others, without page faults, in one process; and 8.6 ms when glibc's heap placed every
array (BENCHMARKS.md, branch cpu12): the arrays' placement relative to each other is the suspect
(4 KiB aliasing of loads and stores, cache-set or prefetch conflicts), and this shows whether it is.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

import mlc

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cpu import prefetch_pipeline, tanh_chain_case  # noqa: E402 - bench/cpu.py, beside this script
from mlc.runtime.host import aligned_empty

ROWS, COLUMNS = 4096, 1024
Y_OFFSETS = (0, 1024, 2048)
OUT_OFFSETS = (0, 64, 256, 1024, 2048, 3072, 4032)


def placed(offset: int) -> np.ndarray:
    """A [ROWS, COLUMNS] f32 array starting `offset` bytes after a page boundary."""
    raw = aligned_empty((ROWS * COLUMNS * 4 + 4096,), np.dtype(np.uint8), 4096)
    return raw[offset : offset + ROWS * COLUMNS * 4].view(np.float32).reshape(ROWS, COLUMNS)


def timed_calls(compiled: object, x: np.ndarray, y: np.ndarray, out: np.ndarray, calls: int) -> list[float]:
    """Milliseconds of `calls` calls into `out` after 3 warm-ups; the result checked."""
    times = []
    for call in range(calls + 3):
        start = time.perf_counter()
        compiled.run_on_device(x, y, outputs=[out])  # type: ignore[attr-defined]
        if call >= 3:
            times.append((time.perf_counter() - start) * 1e3)
    np.testing.assert_allclose(out, np.tanh(x * y + x), rtol=1e-5, atol=1e-6)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", default="1,16")
    parser.add_argument("--calls", type=int, default=30)
    parser.add_argument("--variants", default=None, help="prefetch distances LOADS/STORES, separated by commas (default: mlc's)")
    parser.add_argument("--json", type=Path, default=None)
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
    variants = arguments.variants.split(",") if arguments.variants else [None]
    rows = []
    print("| threads | prefetch | y offset | output offset | best ms | median ms |\n| ---: | --- | ---: | ---: | ---: | ---: |")
    for threads in map(int, arguments.threads.split(",")):
        compiled = {variant: mlc.compile(source, device="cpu", num_threads=threads, pipeline=prefetch_pipeline(variant)) for variant in variants}
        for y_offset, y in ys.items():
            for out_offset, out in outs.items():
                for variant in variants:
                    times = sorted(timed_calls(compiled[variant], x, y, out, arguments.calls))
                    row = {"threads": threads, "prefetch": variant or "default", "y": y_offset, "out": out_offset,
                           "best_ms": round(times[0], 4), "median_ms": round(times[len(times) // 2], 4)}
                    rows.append(row)
                    print(f"| {threads} | {row['prefetch']} | {y_offset} | {out_offset} | {row['best_ms']:.3f} | {row['median_ms']:.3f} |", flush=True)
    print("\n| threads | prefetch | fastest placement ms | median placement ms | slowest placement ms |\n| ---: | --- | ---: | ---: | ---: |")
    for threads in map(int, arguments.threads.split(",")):
        for variant in variants:
            medians = sorted(r["median_ms"] for r in rows if r["threads"] == threads and r["prefetch"] == (variant or "default"))
            print(f"| {threads} | {variant or 'default'} | {medians[0]:.3f} | {medians[len(medians) // 2]:.3f} | {medians[-1]:.3f} |")
    if arguments.json is not None:
        arguments.json.write_text(json.dumps(rows, indent=0))


if __name__ == "__main__":
    main()
