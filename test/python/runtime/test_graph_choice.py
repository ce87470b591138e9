"""The automatic CUDA-graph choice (mlc/runtime/graph_choice.py): the rule from the launch count
and the kernels' sizes, the capture guard, and a GPU program choosing graphs by default and giving
them up when its outputs move at every call (against the fake driver, on any machine)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import numpy as np
import pytest

from mlc.runtime.graph_choice import CAPTURES_BEFORE_JUDGING, CaptureGuard, graph_pays, is_small
from mlc.runtime.slots import GPU_LAUNCH, KernelLaunch

H100_MULTIPROCESSORS = 132


def launch(blocks: int, threads: int = 256) -> KernelLaunch:
    return KernelLaunch("k", GPU_LAUNCH, (), (), (blocks, 1, 1), (threads, 1, 1), ())


def test_small_kernels_are_single_waves():
    assert is_small(launch(1), H100_MULTIPROCESSORS) and is_small(launch(132), H100_MULTIPROCESSORS)
    assert not is_small(launch(133), H100_MULTIPROCESSORS)
    assert not is_small(replace(launch(1), grid=None), H100_MULTIPROCESSORS)


@pytest.mark.parametrize(
    ("blocks", "pays"),
    [
        ([4] * 12, True),  # the 12-kernel chain of 64x64 matmuls: launch-bound
        ([64, 64], True),
        ([4], False),  # one launch: a graph replays one launch
        ([512, 512], False),  # the fp16 MLP block's two matmuls: the device is the bound
        ([4, 512, 512], False),
        ([4, 4, 512, 512], True),  # half of the launches small
    ],
)
def test_the_rule(blocks: list[int], pays: bool):
    assert graph_pays([launch(b) for b in blocks], H100_MULTIPROCESSORS) is pays


def test_the_guard_keeps_graphs_replayed_and_gives_up_on_captures_at_every_call():
    steady = CaptureGuard()
    assert steady.keep_graphs(capturing=True)
    assert all(steady.keep_graphs(capturing=False) for _ in range(1000))
    cycling = CaptureGuard()  # eight buffer sets, in turn: eight captures, then replays
    assert all(cycling.keep_graphs(capturing=call < 8) for call in range(100))
    moving = CaptureGuard()
    kept = [moving.keep_graphs(capturing=True) for _ in range(CAPTURES_BEFORE_JUDGING)]
    assert kept == [True] * (CAPTURES_BEFORE_JUDGING - 1) + [False]


cuda = pytest.importorskip("cuda.bindings.driver")


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    import fake_cuda_driver

    state = fake_cuda_driver.install(monkeypatch)
    yield state
    assert state.context_stack() == [], "a context push was not popped"


def test_a_program_of_small_launches_uses_graphs_by_default_and_gives_them_up_when_outputs_move(fake) -> None:  # type: ignore[no-untyped-def]
    from ptx_kernels import GPU_HOST_MODULE, POINTER_KERNELS_PTX, gpu_host_reference, parse

    from mlc.runtime.cuda import DeviceBuffer
    from mlc.runtime.host import HostProgram
    from mlc.runtime.plan import plan_host_function

    plan = plan_host_function(parse(GPU_HOST_MODULE), None)  # three launches of 4 blocks
    assert not HostProgram.for_cuda_plan(plan, POINTER_KERNELS_PTX, cuda_graph=False).uses_cuda_graphs
    program = HostProgram.for_cuda_plan(plan, POINTER_KERNELS_PTX, cuda_graph=None)
    assert program.uses_cuda_graphs
    x, y = np.arange(1024, dtype=np.float32), np.ones(1024, dtype=np.float32)
    expected = gpu_host_reference(x, y)
    for _ in range(3):  # the same buffers: one capture, replayed
        for result, want in zip(program.run(x, y), expected):
            np.testing.assert_array_equal(result, want)
    assert len(fake.graph_launch_streams) == 3
    kept = []
    for _ in range(CAPTURES_BEFORE_JUDGING + 2):  # fresh outputs, all kept alive: a capture per call
        outputs = [DeviceBuffer(r.spec.shape, r.spec.dtype) for r in plan.results]
        kept.append(outputs)
        program.run_on_device(x, y, outputs=outputs)
        for output, want in zip(outputs, expected):
            np.testing.assert_array_equal(output.to_numpy(), want)
    assert not program.uses_cuda_graphs  # given up: plain launches from then on
    big = replace(plan, launches=tuple(replace(k, grid=(1000, 1, 1)) for k in plan.launches))
    assert not HostProgram.for_cuda_plan(big, POINTER_KERNELS_PTX, cuda_graph=None).uses_cuda_graphs
