"""Does where the buffers lie change a CPU kernel's speed? The tanh chain with placed buffers.

    python bench/cpu_placement.py [--threads 1,16] [--calls 30] [--variants 4096/4096,0/0] [--rounds 1]
                                  [--pages numpy|huge|small[/OUTPUT PAGES]] [--placements Y:OUT,...] [--json out.json]

tanh(x*y + x) on 4096x1024 f32 (`bench/cpu.py`'s case), with x, y and the output placed at chosen
byte offsets modulo 4096 (views into page-aligned allocations; the output through
`run_on_device(..., outputs=[out])`, so no call allocates or faults), every combination of
Y_OFFSETS for y and OUT_OFFSETS for the output, x at offset 0; best and median of `--calls` calls
after 3 warm-ups, each thread count with its own compiled program. `--variants` compiles the
kernel once per pair of prefetch distances LOADS/STORES (bytes, 0: none; `bench/cpu.py`'s
`prefetch_pipeline`) and times every placement with each (variants interleaved per placement);
after the table, one summary row per variant and thread count: the fastest, median and slowest
placement's median. `--rounds R` walks the placements R times, each round in another
(seeded, shuffled) order, so that a placement that is slow in every round is told apart from a
moment that was slow (other work on the machine). `--pages` says how the arrays are backed:
numpy's memory (`aligned_empty`, as mlc's inputs usually are), or an mmap of their own advised
MADV_HUGEPAGE (`huge`) or MADV_NOHUGEPAGE (`small`) before their first touch (`IN/OUT`: the
inputs one way, the outputs another); each array's share of transparent huge pages
(/proc/self/smaps) is printed. `--placements 0:0,2048:64` times only those (y, output) offsets,
x at 0; `--placements 16:16:64,...` places x too (X:Y:OUT: offsets off a 64-byte line, as numpy's
arrays from glibc lie at 16 bytes past one, split every 64-byte vector access over two lines).

Why. On the 16-CPU host the same kernel took 2.6 ms at one thread with some output arrays and
3.7 ms with others, without page faults, in one process; and 8.6 ms when glibc's heap placed every
array (BENCHMARKS.md, branch cpu12): the arrays' placement relative to each other is the suspect
(4 KiB aliasing of loads and stores, cache-set or prefetch conflicts), and this shows whether it is.
"""

from __future__ import annotations

import argparse
import json
import mmap
import sys
import time
from pathlib import Path

import numpy as np

import mlc

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cpu import huge_page_share, prefetch_pipeline, tanh_chain_case  # noqa: E402 - bench/cpu.py, beside this script
from mlc.runtime.host_memory import aligned_empty

ROWS, COLUMNS = 4096, 1024
Y_OFFSETS = (0, 1024, 2048)
OUT_OFFSETS = (0, 64, 256, 1024, 2048, 3072, 4032)


def placed(offset: int, pages: str = "numpy", keep: list[mmap.mmap] | None = None) -> np.ndarray:
    """A [ROWS, COLUMNS] f32 array starting `offset` bytes after a page boundary, in numpy's
    memory or (`pages` huge / small) in an mmap of its own, advised so, kept alive in `keep`."""
    size = ROWS * COLUMNS * 4 + 4096
    if pages == "numpy":
        raw = aligned_empty((size,), np.dtype(np.uint8), 4096)
    else:
        mapping = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)  # shared memory takes no THP
        mapping.madvise(mmap.MADV_HUGEPAGE if pages == "huge" else mmap.MADV_NOHUGEPAGE)
        assert keep is not None
        keep.append(mapping)
        raw = np.frombuffer(mapping, dtype=np.uint8)
    return raw[offset : offset + ROWS * COLUMNS * 4].view(np.float32).reshape(ROWS, COLUMNS)


def timed_calls(compiled: object, x: np.ndarray, y: np.ndarray, out: np.ndarray, want: np.ndarray, calls: int) -> list[float]:
    """Milliseconds of `calls` calls into `out` after 3 warm-ups; the result checked against `want`."""
    times = []
    for call in range(calls + 3):
        start = time.perf_counter()
        compiled.run_on_device(x, y, outputs=[out])  # type: ignore[attr-defined]
        if call >= 3:
            times.append((time.perf_counter() - start) * 1e3)
    error = float(np.max(np.abs(out - want)))
    assert error <= 1.1e-5, f"off by {error}"  # |tanh| <= 1: assert_allclose's rtol=1e-5, atol=1e-6, cheaper
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", default="1,16")
    parser.add_argument("--calls", type=int, default=30)
    parser.add_argument("--variants", default=None, help="prefetch distances LOADS/STORES, separated by commas (default: mlc's)")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--pages", default="numpy", help="numpy, huge or small; IN/OUT for the inputs and the outputs")
    parser.add_argument("--placements", default=None, help="[X:]Y:OUT offsets, separated by commas (default: x at 0, every Y_OFFSETS, OUT_OFFSETS pair)")
    parser.add_argument("--json", type=Path, default=None)
    arguments = parser.parse_args()
    keep: list[mmap.mmap] = []
    input_pages, _, output_pages = arguments.pages.partition("/")
    output_pages = output_pages or input_pages
    assert {input_pages, output_pages} <= {"numpy", "huge", "small"}, arguments.pages
    source = tanh_chain_case(ROWS, COLUMNS).source
    if arguments.placements:
        placements = [tuple(int(part) for part in ([0] + pair.split(":"))[-3:]) for pair in arguments.placements.split(",")]
    else:
        placements = [(0, y_offset, out_offset) for y_offset in Y_OFFSETS for out_offset in OUT_OFFSETS]
    generator = np.random.default_rng(0)
    xs = {offset: placed(offset, input_pages, keep) for offset in dict.fromkeys(x for x, _, _ in placements)}
    ys = {offset: placed(offset, input_pages, keep) for offset in dict.fromkeys(y for _, y, _ in placements)}
    data = generator.standard_normal((2, ROWS, COLUMNS)).astype(np.float32)
    for x in xs.values():
        x[...] = data[0]
    for y in ys.values():
        y[...] = data[1]
    want = np.tanh(data[0] * data[1] + data[0])
    outs = {offset: placed(offset, output_pages, keep) for offset in dict.fromkeys(out for _, _, out in placements)}
    for out in outs.values():
        out[...] = 0
    shares = [huge_page_share(array) for array in (*xs.values(), *ys.values(), *outs.values())]
    print(f"pages: {arguments.pages}; huge-page share of x, y, outputs: " + " ".join(f"{share:.2f}" for share in shares))
    variants = arguments.variants.split(",") if arguments.variants else [None]
    rows = []
    print("| threads | round | prefetch | x offset | y offset | output offset | best ms | median ms |\n| ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: |")
    for threads in map(int, arguments.threads.split(",")):
        compiled = {variant: mlc.compile(source, device="cpu", num_threads=threads, pipeline=prefetch_pipeline(variant)) for variant in variants}
        for round_ in range(arguments.rounds):
            order = np.random.default_rng(round_).permutation(len(placements)) if round_ else range(len(placements))
            for x_offset, y_offset, out_offset in (placements[index] for index in order):
                x, y, out = xs[x_offset], ys[y_offset], outs[out_offset]
                for variant in variants:
                    times = sorted(timed_calls(compiled[variant], x, y, out, want, arguments.calls))
                    row = {"threads": threads, "round": round_, "prefetch": variant or "default", "x": x_offset, "y": y_offset, "out": out_offset,
                           "pages": arguments.pages, "best_ms": round(times[0], 4), "median_ms": round(times[len(times) // 2], 4)}
                    rows.append(row)
                    print(f"| {threads} | {round_} | {row['prefetch']} | {x_offset} | {y_offset} | {out_offset} | {row['best_ms']:.3f} | {row['median_ms']:.3f} |", flush=True)
    print("\n| threads | prefetch | fastest placement ms | median placement ms | slowest placement ms |\n| ---: | --- | ---: | ---: | ---: |")
    for threads in map(int, arguments.threads.split(",")):
        for variant in variants:
            medians = sorted(r["median_ms"] for r in rows if r["threads"] == threads and r["prefetch"] == (variant or "default"))
            print(f"| {threads} | {variant or 'default'} | {medians[0]:.3f} | {medians[len(medians) // 2]:.3f} | {medians[-1]:.3f} |")
    if arguments.json is not None:
        arguments.json.write_text(json.dumps(rows, indent=0))


if __name__ == "__main__":
    main()
