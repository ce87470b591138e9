"""The CPU runtime's worker pools: the fixed cost of one parallel call, and what it does to kernels.

    python bench/cpu_pool.py [--threads 1,2,4,8,16] [--kernel-threads 1,2,8,16] [--repeats 20]

First the cost of one parallel call of a kernel that does nothing (libc's `getpid` called as a
`<kernel>__programs`: it ignores the (first, last) it is given) over 64 programs, for each
thread count, through the Python `ProgramPool` (queues and Python threads, one ctypes call per
share) and the native pool (`mlc/runtime/native_pool.py`: one ctypes call for the whole grid):
best and median of 300 calls, in microseconds, what every parallel kernel call pays before any
work. Then softmax (1024x1024, 64x65536), layer norm and the tanh chain of `bench/cpu.py` at each
of `--kernel-threads`: mlc with the native pool, mlc with the Python pool (`MLC_CPU_POOL=python` while it
compiles and loads) and PyTorch (`torch.set_num_threads`), wall clock, best of `--repeats` after
two warm-up calls, every mlc result checked against PyTorch's first (same bits from both pools).
"""

from __future__ import annotations

import argparse
import ctypes
import os
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
from mlc.runtime.native_pool import POOL_VARIABLE, NativeProgramPool, native_pool_library  # noqa: E402

CASES = ("softmax 1024x1024", "softmax 64x65536", "layer norm", "tanh")


def _microseconds(run: Callable[[], None], calls: int = 300) -> tuple[float, float]:
    run()
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times) * 1e6, float(np.median(times)) * 1e6


def pool_overhead(thread_counts: list[int]) -> None:
    libc = ctypes.CDLL(None)
    address = ctypes.cast(libc.getpid, ctypes.c_void_p).value
    assert address is not None
    noop = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_int64)(address)
    library = native_pool_library()
    print(f"native pool: {'built' if library is not None else 'unavailable (no C compiler driver?)'}", flush=True)
    print("| threads | Python pool best / median us | native pool best / median us |")
    print("| ---: | ---: | ---: |")
    for threads in thread_counts:
        python_pool = ProgramPool(threads)
        python_cost = _microseconds(lambda: python_pool.run(noop, [], 64))
        python_pool.close()
        native_cost = "-"
        if library is not None:
            native = NativeProgramPool(library, threads)
            no_pointers = (ctypes.c_void_p * 0)()
            best, median = _microseconds(lambda: native.run(address, no_pointers, 64))
            native.close()
            native_cost = f"{best:.1f} / {median:.1f}"
        print(f"| {threads} | {python_cost[0]:.1f} / {python_cost[1]:.1f} | {native_cost} |", flush=True)


def _compile(source: str, threads: int, pool: str) -> mlc.CompiledProgram:
    previous = os.environ.get(POOL_VARIABLE)
    os.environ[POOL_VARIABLE] = pool
    try:
        return mlc.compile(source, device="cpu", num_threads=threads)
    finally:
        if previous is None:
            del os.environ[POOL_VARIABLE]
        else:
            os.environ[POOL_VARIABLE] = previous


def kernels(thread_counts: list[int], repeats: int) -> None:
    import torch

    print("| case | threads | mlc native pool ms | mlc Python pool ms | PyTorch ms | native vs PyTorch |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for case in [c for c in bench.CASES if any(name in c.name for name in CASES)]:
        generator = np.random.default_rng(0)
        inputs = [generator.standard_normal(shape).astype(np.float32) for shape in case.shapes]
        tensors = [torch.from_numpy(x) for x in inputs]
        for threads in thread_counts:
            torch.set_num_threads(threads)
            native = _compile(case.source, threads, "native")
            python = _compile(case.source, threads, "python")
            expected = case.torch_function(torch, *tensors).numpy()
            native_result, python_result = native(*inputs), python(*inputs)
            np.testing.assert_array_equal(native_result, python_result)
            np.testing.assert_allclose(native_result, expected, rtol=1e-4, atol=1e-5)
            native_ms = bench.best_seconds(lambda: native(*inputs), repeats) * 1e3
            python_ms = bench.best_seconds(lambda: python(*inputs), repeats) * 1e3
            torch_ms = bench.best_seconds(lambda: case.torch_function(torch, *tensors), repeats) * 1e3
            print(f"| {case.name} | {threads} | {native_ms:.3f} | {python_ms:.3f} | {torch_ms:.3f} | {torch_ms / native_ms:.2f}x |", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", default="1,2,4,8,16")
    parser.add_argument("--kernel-threads", default="1,2,8,16")
    parser.add_argument("--repeats", type=int, default=20)
    arguments = parser.parse_args()
    pool_overhead([int(text) for text in arguments.threads.split(",")])
    kernels([int(text) for text in arguments.kernel_threads.split(",")], arguments.repeats)
