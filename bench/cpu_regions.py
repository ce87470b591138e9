"""Does where an array lies in (guest-)physical memory decide -x's speed at 16 threads?

    python bench/cpu_regions.py [--gib 48] [--pairs 16] [--threads 16] [--passes 2] [--churn-only]

Fills `--gib` GiB with 16 MiB blocks, each a mapping of its own on huge pages (touched by one
ctypes `memset` per block from 16 threads, so that the kernel spreads them over physical memory),
reads where each block lies (the median physical address of its pages, /proc/self/pagemap: root
only), then picks `--pairs` (x, output) pairs of blocks from low to high addresses (neighbours,
and some crossed: x low and the output high, x high and the output low) and times, on each pair,
mlc's -x of 4096x1024 f32 at `--threads` and at one thread (`run_on_device(x, outputs=[out])`) and
`torch.neg(x, out=o)` at `--threads`, best of 50 calls and 50 ms after `wait_until_quiet`,
`--passes` passes (every other one in reverse). Prints the guest's RAM ranges (/proc/iomem) first.

`--churn-only` only fills the memory and exits: a process run before others so that their
arrays come from memory another process used and freed (as after a test suite in the same call).

Why. In session 15's slow process (`bench/cpu.py --threads 16 --only negate`, 0.44 ms against
0.07-0.10 in others) x's pages lay at 16.0 GiB and the result's at 11.9 GiB; in every fast process
recorded on a fresh machine both lay at 6-8 GiB (BENCHMARKS.md, host17).
"""

from __future__ import annotations

import argparse
import ctypes
import mmap
import statistics
import sys
import threading
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import cpu as bench  # noqa: E402
import cpu_modes  # noqa: E402

BLOCK = 16 << 20


def ram_ranges() -> list[str]:
    try:
        lines = Path("/proc/iomem").read_text().splitlines()
    except OSError:
        return []
    return [line.strip() for line in lines if "System RAM" in line and not line.startswith(" ")]


def balloon(gib: int, threads: int, keep: list[mmap.mmap]) -> list[np.ndarray]:
    blocks = [cpu_modes.huge_block(BLOCK, keep) for _ in range(gib * 1024 // 16)]

    def touch(part: list[np.ndarray]) -> None:
        for block in part:
            ctypes.memset(block.ctypes.data, 1, BLOCK)  # a foreign call: runs without the GIL

    workers = [threading.Thread(target=touch, args=(blocks[index::threads],)) for index in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return blocks


def median_gib(block: np.ndarray) -> float:
    frames = [frame for frame in cpu_modes.frames(block)[::64] if frame]  # one 4 KiB page in each 256 KiB
    return statistics.median(frames) * 4096 / 2**30 if frames else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gib", type=int, default=48)
    parser.add_argument("--pairs", type=int, default=16)
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument("--passes", type=int, default=2)
    parser.add_argument("--churn-only", action="store_true")
    arguments = parser.parse_args()
    keep: list[mmap.mmap] = []
    blocks = balloon(arguments.gib, arguments.threads, keep)
    if arguments.churn_only:
        print(f"churn: {len(blocks)} blocks of 16 MiB touched, medians {median_gib(blocks[0]):.1f} .. {median_gib(blocks[-1]):.1f} GiB")
        return
    import mlc

    try:
        import torch

        torch.set_num_threads(arguments.threads)
    except ImportError:
        torch = None
    print("guest RAM:", "; ".join(ram_ranges()))
    placed = sorted((median_gib(block), index) for index, block in enumerate(blocks))
    placed = [(gib, index) for gib, index in placed if gib == gib]
    if not placed:
        raise SystemExit("physical addresses are hidden (run as root)")
    print(f"{len(blocks)} blocks, physical medians {placed[0][0]:.1f} .. {placed[-1][0]:.1f} GiB")
    count = arguments.pairs
    step = max(1, (len(placed) - 2) // max(1, count - 1))
    pairs = [(placed[k * step][1], placed[k * step + 1][1]) for k in range(count) if k * step + 1 < len(placed)]
    low, high = placed[min(step + 2, len(placed) - 1)][1], placed[max(0, len(placed) - 3)][1]
    pairs += [(low, high), (high, low)]  # crossed: which of the two arrays carries the effect
    source = np.random.default_rng(0).standard_normal((cpu_modes.ROWS, cpu_modes.COLUMNS), dtype=np.float32)
    many = mlc.compile(bench.negate_case(cpu_modes.ROWS, cpu_modes.COLUMNS).source, device="cpu", num_threads=arguments.threads)
    one = mlc.compile(bench.negate_case(cpu_modes.ROWS, cpu_modes.COLUMNS).source, device="cpu", num_threads=1)
    gib = {index: g for g, index in placed}
    rows: dict[tuple[int, int], list[list[float]]] = {pair: [] for pair in pairs}
    for pass_ in range(arguments.passes):
        for pair in pairs if pass_ % 2 == 0 else list(reversed(pairs)):
            x, out = (cpu_modes.as_matrix(blocks[index]) for index in pair)
            x[...] = source
            many.run_on_device(x, outputs=[out])
            assert np.array_equal(out, -source)
            times = [cpu_modes.measure(lambda: many.run_on_device(x, outputs=[out]), 50)["ms"],
                     cpu_modes.measure(lambda: one.run_on_device(x, outputs=[out]), 5)["ms"]]
            if torch is not None:
                tx, to = torch.from_numpy(x), torch.from_numpy(out)
                times.append(cpu_modes.measure(lambda: torch.neg(tx, out=to), 50)["ms"])
            rows[pair].append(times)
    print(f"| x GiB | output GiB | mlc {arguments.threads} threads ms, each pass | mlc 1 thread | torch.neg out= {arguments.threads} threads |")
    print("| ---: | ---: | --- | --- | --- |")
    for pair in pairs:
        cells = [" / ".join(f"{times[k]:.3f}" for times in rows[pair]) for k in range(len(rows[pair][0]))]
        print(f"| {gib[pair[0]]:.1f} | {gib[pair[1]]:.1f} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
