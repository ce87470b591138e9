"""Compiled functions called from many threads, and many times: right answers, no growing memory.

A program keeps state between calls (intermediate and staging buffers, kernel parameter cells,
the GPU's result buffers), which its lock guards (mlc/runtime/host.py, "Thread safety"). These
tests call one compiled function from 8 threads at once, 50 calls each, on distinct random inputs
(some non-contiguous, so that the argument staging buffer is used), and check every result
against the graph interpreter and numpy, within the error bound `error_bounds.result_bounds`
derives from the program and each call's inputs (`programs.assert_compiled_matches`), and against
the same call made alone (bitwise: the kernels are deterministic). The
program has an intermediate buffer between two kernels, which unguarded calls would share.

Memory: after 500 calls of warm-up (Python's free lists and ctypes' caches fill up, then stay),
2,000 more CPU calls may not leave more Python-tracked memory (numpy arrays included) than four
calls allocate (a leak of even one small object per call leaves more); on the GPU (marked `gpu`), 10,000 calls may not leave more
device memory in use (cuMemGetInfo) than one call's results, rounded up to the driver's 2 MiB
allocation granularity.
"""

from __future__ import annotations

import gc
import os
import threading
import tracemalloc
from collections.abc import Callable

import numpy as np
import pytest

import mlc
from programs import assert_compiled_matches

THREADS = 8
CALLS_PER_THREAD = 50
WARM_UP_CALLS = 500
LEAK_BOUND_CALLS = 4
ROWS, DEPTH, COLUMNS = 16, 64, 48

# Two kernels (a matmul, then a softmax with its elementwise consumer) and the intermediate between them.
PROGRAM = f"""func.func @main(%x: tensor<{ROWS}x{DEPTH}xf32>, %w: tensor<{DEPTH}x{COLUMNS}xf32>, %b: tensor<{COLUMNS}xf32>) -> tensor<{ROWS}x{COLUMNS}xf32> {{
  %h = graph.matmul %x, %w : (tensor<{ROWS}x{DEPTH}xf32>, tensor<{DEPTH}x{COLUMNS}xf32>) -> tensor<{ROWS}x{COLUMNS}xf32>
  %s = graph.softmax %h axis 1 : tensor<{ROWS}x{COLUMNS}xf32>
  %y = graph.add %s, %b : (tensor<{ROWS}x{COLUMNS}xf32>, tensor<{COLUMNS}xf32>) -> tensor<{ROWS}x{COLUMNS}xf32>
  func.return %y : tensor<{ROWS}x{COLUMNS}xf32>
}}
"""


def reference(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    h = x.astype(np.float64) @ w.astype(np.float64)
    e = np.exp(h - h.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True) + b


def random_inputs(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Inputs of one call; every third call passes x as a non-contiguous view."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-0.5, 0.5, (ROWS, DEPTH)).astype(np.float32)
    if seed % 3 == 0:
        x = np.ascontiguousarray(x.T).T
    w = rng.uniform(-0.5, 0.5, (DEPTH, COLUMNS)).astype(np.float32)
    b = rng.uniform(-1, 1, COLUMNS).astype(np.float32)
    return x, w, b


def call_from_threads(function: Callable[..., np.ndarray], to_host: Callable[[object], np.ndarray]) -> dict[int, np.ndarray]:
    """Results of THREADS x CALLS_PER_THREAD calls, started together, keyed by input seed."""
    start = threading.Barrier(THREADS)
    results: dict[int, np.ndarray] = {}
    failures: list[BaseException] = []

    def work(thread: int) -> None:
        try:
            start.wait()
            for call in range(CALLS_PER_THREAD):
                seed = thread * CALLS_PER_THREAD + call
                results[seed] = to_host(function(*random_inputs(seed)))
        except BaseException as error:  # reported by the main thread
            failures.append(error)

    threads = [threading.Thread(target=work, args=(index,)) for index in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        raise failures[0]
    assert len(results) == THREADS * CALLS_PER_THREAD
    return results


def check_results(function: Callable[..., np.ndarray], results: dict[int, np.ndarray], to_host: Callable[[object], np.ndarray]) -> None:
    for seed, result in sorted(results.items()):
        inputs = random_inputs(seed)
        assert_compiled_matches(PROGRAM, list(inputs), result, [reference(*inputs)])
        np.testing.assert_array_equal(result, to_host(function(*inputs)), err_msg=f"call with seed {seed}, alone")


@pytest.fixture(scope="module")
def cpu_function() -> mlc.CompiledFunction:
    function = mlc.compile(PROGRAM, device="cpu")
    assert len(function.program.plan.launches) >= 2, "the program must share an intermediate between kernels"
    return function


def test_cpu_calls_from_many_threads(cpu_function: mlc.CompiledFunction):
    results = call_from_threads(cpu_function, np.asarray)
    check_results(cpu_function, results, np.asarray)


def test_cpu_results_are_the_callers_own(cpu_function: mlc.CompiledFunction):
    first = cpu_function(*random_inputs(1))
    kept = first.copy()
    second = cpu_function(*random_inputs(2))
    assert not np.shares_memory(first, second)
    np.testing.assert_array_equal(first, kept)


def test_cpu_calls_do_not_accumulate_memory(cpu_function: mlc.CompiledFunction):
    inputs = random_inputs(7)
    tracemalloc.start()
    try:
        # Warm-up, traced: Python's free lists and ctypes' caches fill up over the first
        # hundreds of calls and then stay as they are; what they keep is no leak.
        for _ in range(WARM_UP_CALLS):
            cpu_function(*inputs)
        gc.collect()
        before, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        cpu_function(*inputs)
        _, one_call_peak = tracemalloc.get_traced_memory()
        one_call = one_call_peak - before
        assert one_call > 0, "tracemalloc saw no allocation: the bound below would be meaningless"
        for _ in range(2000):
            cpu_function(*inputs)
        gc.collect()
        after, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # A leak of one object per call (16 bytes at least) leaves 32 KB or more after 2,000 calls;
    # objects that are freed late (numpy's and ctypes' transient objects of the last calls) leave
    # a few KB, less than a few calls' allocations.
    assert after - before < LEAK_BOUND_CALLS * one_call, (
        f"2000 calls left {after - before} bytes allocated; one call allocates at most {one_call}"
    )


# --------------------------------------------------------------------------------------------
# The GPU (run on the GPU machine)
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def gpu_function() -> mlc.CompiledFunction:
    return mlc.compile(PROGRAM, device="cuda")


def device_to_host(value: object) -> np.ndarray:
    return value.copy_to_host() if hasattr(value, "copy_to_host") else np.asarray(value)


@pytest.mark.gpu
def test_gpu_calls_from_many_threads(gpu_function: mlc.CompiledFunction):
    results = call_from_threads(gpu_function, np.asarray)
    check_results(gpu_function, results, np.asarray)


@pytest.mark.gpu
def test_gpu_run_on_device_from_many_threads(gpu_function: mlc.CompiledFunction):
    """Results stay on the device and the calls return before the kernels finish."""

    def call(*arrays: np.ndarray) -> object:
        (result,) = gpu_function.run_on_device(*arrays)
        return result

    results = call_from_threads(call, device_to_host)
    check_results(call, results, device_to_host)


@pytest.mark.gpu
def test_gpu_call_restores_the_threads_context(gpu_function: mlc.CompiledFunction):
    """A thread that never used CUDA can call; afterwards its current context is what it was (none)."""
    from cuda.bindings import driver

    observed: list[object] = []

    def work() -> None:
        inputs = random_inputs(11)
        observed.append(gpu_function(*inputs))
        error, context = driver.cuCtxGetCurrent()
        observed.append((int(error), int(context)))

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    result, (error, context) = observed
    assert_compiled_matches(PROGRAM, list(random_inputs(11)), result, [reference(*random_inputs(11))])
    assert error == 0 and context == 0, f"the thread was left with context {context:#x} (error {error})"


def device_memory_in_use() -> int:
    from mlc.runtime import get_device

    device = get_device()
    device.synchronize()
    gc.collect()  # DeviceBuffers of dropped results are freed by their finalizers
    free, total = device.memory_info()
    return total - free


@pytest.mark.gpu
@pytest.mark.skipif(
    "PYTEST_XDIST_WORKER" in os.environ,
    reason="the device's free memory is shared by every process on it: other pytest-xdist workers' allocations read as leaks",
)
@pytest.mark.parametrize("kind", ["run", "run_on_device"])
def test_gpu_calls_do_not_leak_device_memory(gpu_function: mlc.CompiledFunction, kind: str):
    inputs = random_inputs(5)
    call = gpu_function if kind == "run" else gpu_function.run_on_device
    for _ in range(10):
        call(*inputs)
    before = device_memory_in_use()
    for _ in range(10_000):
        call(*inputs)
    after = device_memory_in_use()
    granularity = 2 * 1024 * 1024  # cuMemAlloc takes device memory in 2 MiB pages
    one_call = -(-ROWS * COLUMNS * 4 // granularity) * granularity
    assert after - before <= one_call, f"10,000 calls ({kind}) left {after - before} more bytes of device memory in use"
