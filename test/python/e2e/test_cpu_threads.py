"""CPU kernels whose grid is split over worker threads (convert-loop-to-cpu, `mlc.cpu_programs`).

Random elementwise and reduction programs are compiled with every kernel made splittable
(`min-parallel-elements=1`) and run on 1, 2 and 3 threads: the programs of a grid are independent,
so every thread count must give the same bits, and those agree with the graph interpreter within
the derived error bound. Also: how programs are shared out, `MLC_NUM_THREADS` and `num_threads=`
checking, and that the default lowering keeps small kernels on one thread.
"""

from __future__ import annotations

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
from mlc.runtime.cpu import CpuLoadError, default_thread_count, program_shares
from mlc.transforms.pipelines import CPU_PIPELINE

ALWAYS_SPLIT = CPU_PIPELINE.replace("convert-loop-to-cpu", "convert-loop-to-cpu{min-parallel-elements=1}")


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
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
            np.testing.assert_array_equal(one, many)
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
