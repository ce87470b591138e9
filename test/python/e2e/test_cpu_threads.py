"""CPU kernels whose grid is split over worker threads (convert-loop-to-cpu, `mlc.cpu_programs`).

Random elementwise and reduction programs are compiled with every kernel made splittable
(`min-parallel-elements=1`) and run on 1, 2 and 3 threads: the programs of a grid are independent,
so every thread count must give the same bits, and those agree with the graph interpreter within
the derived error bound. Also: how programs are shared out, `MLC_NUM_THREADS` and `num_threads=`
checking, and that the default lowering keeps small kernels on one thread.
"""

from __future__ import annotations

import ctypes
import gc
import os
import signal
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from programs import (
    assert_within_bounds,
    elementwise_programs,
    random_inputs,
    reduction_programs,
)

import mlc
from mlc.errors import ArgumentError
from mlc.runtime import HostProgram
from mlc.runtime import native_pool
from mlc.runtime.cpu import CpuLoadError, default_thread_count, program_shares
from mlc.runtime.native_pool import POOL_VARIABLE, NativeProgramPool, native_pool_library
from mlc.transforms.pipelines import CPU_PIPELINE

ALWAYS_SPLIT = CPU_PIPELINE.replace("convert-loop-to-cpu", "convert-loop-to-cpu{min-parallel-elements=1}")


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    program=st.one_of(elementwise_programs(max_ops=4), reduction_programs()),
    seed=st.integers(0, 2**32 - 1),
)
def test_every_thread_count_gives_the_same_bits(program: str, seed: int):
    inputs = random_inputs(program, seed)
    compiled = mlc.compile(program, device="cpu", pipeline=ALWAYS_SPLIT, num_threads=1)
    results = {1: compiled.program.run(*inputs)}
    for threads in (2, 3):  # the same plan and object code, run on more threads
        results[threads] = HostProgram.for_cpu_plan(compiled.program.plan, compiled.kernels, threads).run(*inputs)
        for one, many in zip(results[1], results[threads], strict=True):
            # Bits, not values: NaNs must match too (bf16's NaNs do not compare equal as values).
            assert one.shape == many.shape and one.dtype == many.dtype
            np.testing.assert_array_equal(np.ascontiguousarray(one).view(np.uint8), np.ascontiguousarray(many).view(np.uint8))
    assert_within_bounds(program, inputs, results[2])


def test_large_kernels_are_split_and_small_ones_are_not():
    program = """func.func @main(%x: tensor<512x256xf32>, %y: tensor<4x4xf32>) -> (tensor<512x256xf32>, tensor<4x4xf32>) {
  %0 = graph.tanh %x : tensor<512x256xf32>
  %1 = graph.tanh %y : tensor<4x4xf32>
  func.return %0, %1 : tensor<512x256xf32>, tensor<4x4xf32>
}"""
    compiled = mlc.compile(program, device="cpu", num_threads=2)
    programs = sorted(launch.programs or 0 for launch in compiled.program.plan.launches)
    assert programs[0] == 0 and programs[1] >= 2
    inputs = random_inputs(program, 0)
    assert_within_bounds(program, inputs, compiled(*inputs))


def test_a_matmul_is_shared_out_tile_by_tile():
    """The 2-D grid of a matmul's 128x128 tiles (2 x 3 here) is split over threads as 6
    programs, not as its 2 rows of tiles; every thread count gives the same bits."""
    program = """func.func @main(%a: tensor<256x128xf32>, %b: tensor<128x384xf32>) -> tensor<256x384xf32> {
  %0 = graph.matmul %a, %b : (tensor<256x128xf32>, tensor<128x384xf32>) -> tensor<256x384xf32>
  func.return %0 : tensor<256x384xf32>
}"""
    compiled = mlc.compile(program, device="cpu", num_threads=1)
    assert [launch.programs for launch in compiled.program.plan.launches] == [6]
    inputs = random_inputs(program, 3)
    expected = compiled.program.run(*inputs)
    for threads in (2, 4, 7):
        result = HostProgram.for_cpu_plan(compiled.program.plan, compiled.kernels, threads).run(*inputs)
        np.testing.assert_array_equal(result[0], expected[0])
    assert_within_bounds(program, inputs, expected)


@pytest.mark.parametrize(
    ("programs", "threads", "expected"),
    [
        (10, 3, [(0, 4), (4, 7), (7, 10)]),
        (2, 4, [(0, 1), (1, 2)]),
        (5, 1, [(0, 5)]),
        (1, 2, [(0, 1)]),
    ],
)
def test_program_shares(programs: int, threads: int, expected: list[tuple[int, int]]):
    assert program_shares(programs, threads) == expected


def test_thread_count_from_the_environment(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("MLC_NUM_THREADS", "3")
    assert default_thread_count() == 3
    monkeypatch.setenv("MLC_NUM_THREADS", "zero")
    with pytest.raises(CpuLoadError, match="MLC_NUM_THREADS must be a positive integer, got 'zero'"):
        default_thread_count()
    monkeypatch.delenv("MLC_NUM_THREADS")
    assert default_thread_count() >= 1


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_num_threads_is_checked(bad: object):
    with pytest.raises(ArgumentError, match="num_threads must be a positive integer or None"):
        mlc.compile("func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {\n  func.return %x : tensor<4xf32>\n}", device="cpu", num_threads=bad)  # type: ignore[arg-type]



SPLIT_TANH = """func.func @main(%x: tensor<64x256xf32>) -> tensor<64x256xf32> {
  %0 = graph.tanh %x : tensor<64x256xf32>
  func.return %0 : tensor<64x256xf32>
}"""


@pytest.fixture(scope="module")
def split_tanh() -> mlc.CompiledProgram:
    return mlc.compile(SPLIT_TANH, device="cpu", pipeline=ALWAYS_SPLIT, num_threads=1)


def _program_on(split_tanh: mlc.CompiledProgram, threads: int) -> HostProgram:
    return HostProgram.for_cpu_plan(split_tanh.program.plan, split_tanh.kernels, threads)


def _kernel_types(program: HostProgram) -> list[str]:
    return [type(kernel).__name__ for kernel in program._kernels]


def _native_worker_count() -> int:
    """The native pools' workers alive in this process (their threads are named `mlc-pool`)."""
    count = 0
    for task in os.listdir("/proc/self/task"):
        try:
            count += Path(f"/proc/self/task/{task}/comm").read_text().strip() == "mlc-pool"
        except OSError:  # the thread ended while the list was read
            pass
    return count


needs_native_pool = pytest.mark.skipif(native_pool_library() is None, reason="no C compiler driver to build the native pool")


@needs_native_pool
def test_the_native_and_the_python_pool_give_the_same_bits(split_tanh: mlc.CompiledProgram, monkeypatch: pytest.MonkeyPatch):
    inputs = random_inputs(SPLIT_TANH, 0)
    expected = split_tanh.program.run(*inputs)  # one thread: no pool
    native = _program_on(split_tanh, 3)
    assert _kernel_types(native) == ["_NativeParallelCpuKernel"]
    for _ in range(3):  # the workers reused, awake or asleep
        np.testing.assert_array_equal(native.run(*inputs)[0], expected[0])
    monkeypatch.setenv(POOL_VARIABLE, "python")
    python = _program_on(split_tanh, 3)
    assert _kernel_types(python) == ["_ParallelCpuKernel"]
    np.testing.assert_array_equal(python.run(*inputs)[0], expected[0])


@needs_native_pool
def test_kernels_with_more_pointers_than_the_native_pool_passes_use_the_python_pool(
    split_tanh: mlc.CompiledProgram, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(native_pool, "MAX_POINTERS", 1)  # the tanh kernel takes 2
    program = _program_on(split_tanh, 2)
    assert _kernel_types(program) == ["_ParallelCpuKernel"]
    inputs = random_inputs(SPLIT_TANH, 1)
    np.testing.assert_array_equal(program.run(*inputs)[0], split_tanh.program.run(*inputs)[0])


@needs_native_pool
def test_native_pool_threads_start_on_first_run_and_end_on_close():
    library = native_pool_library()
    assert library is not None
    gc.collect()  # the pools of earlier tests' programs: ended now, not while this test counts
    gc.disable()
    try:
        _start_and_end_a_pool(library)
    finally:
        gc.enable()


def _start_and_end_a_pool(library: ctypes.CDLL) -> None:
    before = _native_worker_count()
    pool = NativeProgramPool(library, 4)
    assert _native_worker_count() == before  # nothing starts before a kernel runs
    # a kernel that does nothing: libc's getpid, which ignores the (first, last) it is given
    getpid = ctypes.cast(ctypes.CDLL(None).getpid, ctypes.c_void_p).value
    assert getpid is not None
    for _ in range(3):
        pool.run(getpid, (ctypes.c_void_p * 0)(), 64)
    assert _native_worker_count() == before + 3
    pool.close()
    assert _native_worker_count() == before
    pool.run(getpid, (ctypes.c_void_p * 0)(), 64)  # closed, then used again: new workers
    assert _native_worker_count() == before + 3
    del pool  # garbage-collected: the workers are joined
    assert _native_worker_count() == before


def _ranges_run_by_the_native_pool(threads: int, programs: int, slow_first: int) -> list[tuple[int, int, int]]:
    """The (first, last, thread) of every call a native pool makes of a kernel (a Python
    callback: it takes the GIL, which `run` released) that is slow on the chunk from `slow_first`."""
    library = native_pool_library()
    assert library is not None
    ranges: list[tuple[int, int, int]] = []

    def kernel(first: int, last: int) -> None:
        if first == slow_first:
            time.sleep(0.05)
        ranges.append((first, last, threading.get_ident()))

    callback = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_int64)(kernel)
    pool = NativeProgramPool(library, threads)
    try:
        pool.run(ctypes.cast(callback, ctypes.c_void_p).value, (ctypes.c_void_p * 0)(), programs)
    finally:
        pool.close()
    return ranges


@needs_native_pool
@pytest.mark.parametrize(("threads", "programs"), [(4, 64), (4, 3), (3, 7)])
def test_the_native_pool_runs_every_program_once(threads: int, programs: int):
    ranges = _ranges_run_by_the_native_pool(threads, programs, slow_first=-1)
    assert sorted(p for first, last, _ in ranges for p in range(first, last)) == list(range(programs))


@needs_native_pool
def test_the_other_threads_take_over_the_rest_of_a_late_share():
    threads, programs = 4, 64
    late_share = program_shares(programs, threads)[1]
    ranges = _ranges_run_by_the_native_pool(threads, programs, slow_first=late_share[0])
    assert sorted(p for first, last, _ in ranges for p in range(first, last)) == list(range(programs))
    assert len({thread for first, _, thread in ranges if late_share[0] <= first < late_share[1]}) >= 2


@pytest.mark.parametrize("pool", [pytest.param("native", marks=needs_native_pool), "python"])
def test_a_forked_child_runs_parallel_kernels_with_its_own_workers(
    split_tanh: mlc.CompiledProgram, pool: str, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv(POOL_VARIABLE, pool)
    inputs = random_inputs(SPLIT_TANH, 2)
    program = _program_on(split_tanh, 3)
    expected = program.run(*inputs)[0]  # the parent's workers exist now
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads: what this checks
        child = os.fork()
    if child == 0:  # the child: exit code 0 when its run gives the parent's bits, never returns
        code = 1
        try:
            code = 0 if np.array_equal(program.run(*inputs)[0], expected) else 1
        finally:
            os._exit(code)
    deadline = 200  # x 0.1 s: a deadlocked child is killed and reported, never waited for
    while deadline:
        finished, status = os.waitpid(child, os.WNOHANG)
        if finished:
            break
        time.sleep(0.1)
        deadline -= 1
    else:
        os.kill(child, signal.SIGKILL)
        os.waitpid(child, 0)
        pytest.fail("the forked child did not finish its parallel kernel: deadlock")
    assert os.waitstatus_to_exitcode(status) == 0


def test_the_pool_can_be_turned_off_by_the_environment(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv(POOL_VARIABLE, "python")
    assert native_pool_library() is None


@needs_native_pool
def test_a_native_pool_that_cannot_start_is_an_error_at_its_first_run():
    library = native_pool_library()
    assert library is not None
    pool = NativeProgramPool(library, 0)  # mlc_pool_create refuses it, as it would a failed pthread_create
    with pytest.raises(CpuLoadError, match="the native CPU pool of 0 threads could not start its workers"):
        pool.run(0, (ctypes.c_void_p * 0)(), 4)
