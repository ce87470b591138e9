"""The CPU runtime's worker pool: the fixed cost of one parallel call, and 1 against 2 threads.

    python bench/cpu_pool.py

First `ProgramPool.run` of a kernel that does nothing (libc's `getpid` called through the
kernels' ctypes prototype: two int64 arguments it ignores) over 64 programs, for 1, 2, 4, 8 and
16 threads: best and median of 300 calls each, in microseconds, the cost that every parallel
kernel call pays before any work. Then softmax, layer norm and the 1024^3 and 2048^3 matmuls of
`bench/cpu.py` at 1 and 2 threads (mlc `num_threads`, `torch.set_num_threads`), two rounds, wall
clock, best of 5 (mlc and PyTorch only).
"""

from __future__ import annotations

import ctypes
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import cpu as bench  # noqa: E402
import mlc  # noqa: E402
from mlc.runtime.cpu import ProgramPool  # noqa: E402

POOL_THREADS = (1, 2, 4, 8, 16)
CASES = ("softmax 1024x1024", "layer norm", "matmul 1024", "matmul 2048")


def pool_overhead() -> None:
    libc = ctypes.CDLL(None)
    address = ctypes.cast(libc.getpid, ctypes.c_void_p).value
    noop = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_int64)(address)
    for threads in POOL_THREADS:
        pool = ProgramPool(threads)
        pool.run(noop, [], 64)
        times = []
        for _ in range(300):
            start = time.perf_counter()
            pool.run(noop, [], 64)
            times.append(time.perf_counter() - start)
        pool.close()
        print(f"pool run of a no-op kernel, {threads} threads: best {min(times) * 1e6:.1f} us, median {np.median(times) * 1e6:.1f} us", flush=True)


def best_ms(function: Callable[[], object], repeats: int = 5) -> float:
    return bench.best_seconds(function, repeats) * 1e3


def one_against_two_threads() -> None:
    import torch

    for round_index in range(2):
        for case in [c for c in bench.CASES if any(name in c.name for name in CASES)]:
            generator = np.random.default_rng(0)
            inputs = [generator.standard_normal(shape).astype(np.float32) for shape in case.shapes]
            tensors = [torch.from_numpy(x) for x in inputs]
            for threads in (1, 2):
                compiled = mlc.compile(case.source, device="cpu", num_threads=threads)
                torch.set_num_threads(threads)
                mlc_ms = best_ms(lambda: compiled(*inputs))
                torch_ms = best_ms(lambda: case.torch_function(torch, *tensors))
                print(f"round {round_index} {case.name} threads {threads}: mlc {mlc_ms:.3f} ms, PyTorch {torch_ms:.3f} ms", flush=True)


if __name__ == "__main__":
    pool_overhead()
    one_against_two_threads()
