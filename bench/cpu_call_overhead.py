"""The per-call cost of a CPU program: -x by its three call paths, against torch.neg.

One process, one compiled -x per (threads, rows): each turn times the call through the native call
(`NativeHostCall`, the default), through the Python fast path (`program._native = None`:
`HostProgram._run_fast`, arrays exactly as the kernels expect them), through the general path
(`program._fast_checks = None` as well: the binders), then torch.neg on the same array, at
16 x 1024 (the fixed cost alone), 256 x 1024 (1 MiB) and 4096 x 1024 (16 MiB). Prints the 10th
percentile and the median of each, in ms. Usage: `python bench/cpu_call_overhead.py [--threads
1,16]` (needs torch). Results: BENCHMARKS.md, "Session 14, merged main" and "The CPU call in one
native function".
"""
import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

import mlc

sys.path.insert(0, str(Path(__file__).parent))
import cpu as benchcpu  # noqa: E402


def percentiles(function: Callable[[], object], calls: int) -> tuple[float, float]:
    """(10th percentile, median) of `calls` calls of `function`, in ms."""
    seconds = []
    for _ in range(calls):
        start = time.perf_counter()
        function()
        seconds.append(time.perf_counter() - start)
    seconds.sort()
    return seconds[calls // 10] * 1e3, seconds[calls // 2] * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", default="1,16", help="thread counts, comma-separated")
    parser.add_argument("--calls", type=int, default=2000, help="calls per timing below 16 MiB (300 at 16 MiB)")
    options = parser.parse_args()
    for threads in (int(text) for text in options.threads.split(",")):
        torch.set_num_threads(threads)
        for rows in (16, 256, 4096):
            case = benchcpu.negate_case(rows, 1024)
            f = mlc.compile(case.source, device="cpu", num_threads=threads)
            x = np.random.default_rng(0).standard_normal((rows, 1024), dtype=np.float32)
            t = torch.from_numpy(x)
            assert np.array_equal(f(x), -x)
            native, checks = f.program._native, f.program._fast_checks
            calls = options.calls if rows < 4096 else 300
            for turn in range(3):
                f.program._native, f.program._fast_checks = native, checks
                through_native = percentiles(lambda: f(x), calls)
                f.program._native = None
                fast = percentiles(lambda: f(x), calls)
                f.program._fast_checks = None
                general = percentiles(lambda: f(x), calls)
                pytorch = percentiles(lambda: torch.neg(t), calls)
                print(
                    f"threads {threads} rows {rows:5d} turn {turn}: native {through_native[0]:.4f}/{through_native[1]:.4f} ms  "
                    f"fast {fast[0]:.4f}/{fast[1]:.4f}  general {general[0]:.4f}/{general[1]:.4f}  "
                    f"torch {pytorch[0]:.4f}/{pytorch[1]:.4f}  (p10/median; native {native is not None})",
                    flush=True,
                )


if __name__ == "__main__":
    main()
