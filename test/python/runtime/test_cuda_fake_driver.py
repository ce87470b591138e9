"""mlc's CUDA layer and GPU HostProgram against a fake driver (fake_cuda_driver.py), on any machine.

These run every GPU code path of cuda.py and host.py without a GPU: the fake checks the calls'
arguments, context push/pop pairing, parameter blocks and frees, and emulates the test kernels
in numpy. The same scenarios run for real in test_cuda_gpu.py on a GPU.
"""

from __future__ import annotations

import collections
import gc
import re
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("cuda.bindings.driver")

import fake_cuda_driver  # noqa: E402
from ptx_kernels import (  # noqa: E402
    GPU_ARENA_MODULE,
    GPU_FAULT_MODULE,
    GPU_HOST_MODULE,
    GPU_TOO_MANY_THREADS_MODULE,
    POINTER_KERNELS_PTX,
    VECTOR_ADD_PTX,
    gpu_arena_reference,
    gpu_host_reference,
    parse,
)

from mlc.runtime import cuda, cuda_devices, cuda_driver  # noqa: E402
from mlc.runtime.cuda import CudaError, CudaModule, DeviceBuffer, KernelArguments, Stream  # noqa: E402
from mlc.runtime.host import HostProgram  # noqa: E402


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[fake_cuda_driver.FakeState]:
    state = fake_cuda_driver.install(monkeypatch)
    yield state
    assert state.context_stack() == [], "a context push was not popped"


def test_device_properties(fake: fake_cuda_driver.FakeState) -> None:
    device = cuda.get_device()
    assert (device.arch, device.name, device.properties.multiprocessor_count) == ("sm_90", "Fake H200", 132)
    assert device.properties.driver_version == 13000
    assert cuda.get_device(0) is device
    with pytest.raises(CudaError, match="there is no CUDA device 1: 1 device"):
        cuda.get_device(1)


def test_the_callers_context_is_restored(fake: fake_cuda_driver.FakeState) -> None:
    other = cuda.driver_module().CUcontext(0xAB)
    fake.context_stack().append(other)
    buffer = DeviceBuffer.from_numpy(np.arange(4, dtype=np.float32))
    np.testing.assert_array_equal(buffer.to_numpy(), np.arange(4))
    assert fake.context_stack() == [other]
    fake.context_stack().pop()


def test_device_buffers(fake: fake_cuda_driver.FakeState) -> None:
    array = np.random.default_rng(0).standard_normal((3, 7)).astype(np.float32)
    buffer = DeviceBuffer.from_numpy(array)
    pointer = buffer.pointer
    assert pointer % 256 == 0 and pointer in fake.allocations
    np.testing.assert_array_equal(buffer.to_numpy(), array)
    assert buffer.__cuda_array_interface__ == {
        "shape": (3, 7),
        "typestr": "<f4",
        "data": (pointer, False),
        "strides": None,
        "version": 3,
        "stream": 1,
    }
    buffer.fill_zero()
    np.testing.assert_array_equal(buffer.to_numpy(), np.zeros((3, 7)))
    buffer.close()
    buffer.close()
    assert fake.freed == [pointer]
    collected = DeviceBuffer.empty((16,), np.int64)
    collected_pointer = collected.pointer
    del collected
    gc.collect()
    assert fake.freed == [pointer, collected_pointer]  # freed when garbage collected
    empty = DeviceBuffer.empty((0,), np.float32)
    assert empty.pointer == 0 and empty.to_numpy().shape == (0,)


def test_modules_and_their_errors(fake: fake_cuda_driver.FakeState) -> None:
    module = CudaModule(VECTOR_ADD_PTX, name="vadd.ptx")
    assert module.function("vadd") is module.function("vadd")
    with pytest.raises(
        CudaError,
        match=r"looking up kernel 'vsub' in PTX module vadd.ptx failed: CUDA_ERROR_NOT_FOUND.*"
        r"\nthe PTX defines the kernels: vadd",
    ):
        module.function("vsub")
    broken = (
        ".version 7.0\n.target sm_100\n.address_size 64\n.visible .entry b()\n{\n\tnot_an_instruction;\n}\n"
    )
    with pytest.raises(CudaError) as caught:
        CudaModule(broken, name="broken.ptx")
    message = str(caught.value)
    assert (
        message.startswith("loading PTX module broken.ptx (")
        and ".target sm_100, .version 7.0) on Fake H200 (sm_90)" in message
    )
    assert "CUDA_ERROR_INVALID_PTX: fake description" in message
    assert "the PTX targets sm_100, newer than the device (sm_90); compile for sm_90" in message
    assert "driver version 13.0" in message
    assert (
        "JIT log:\n  ptxas application ptx input, line 6; error   : Not a name of any known instruction"
        in message
    )
    handle = int(module.handle)
    module.close()
    assert handle not in fake.modules


def test_launches_pass_pointers_and_scalars(fake: fake_cuda_driver.FakeState) -> None:
    function = CudaModule(VECTOR_ADD_PTX).function("vadd")
    a, b = np.arange(1000, dtype=np.float32), np.ones(1000, np.float32)
    da, db, dc = (
        DeviceBuffer.from_numpy(a),
        DeviceBuffer.from_numpy(b),
        DeviceBuffer.zeros((1000,), np.float32),
    )
    function.launch(4, 256, [da, db, dc, np.int32(1000)])
    assert fake.launches[-1] == ("vadd", (4, 1, 1), (256, 1, 1), (da.pointer, db.pointer, dc.pointer, 1000))
    np.testing.assert_array_equal(dc.to_numpy(), a + b)
    arguments = KernelArguments.from_values([dc, db, da, np.int32(10)])
    function.launch((1, 1), (32,), arguments)
    assert fake.launches[-1][3] == (dc.pointer, db.pointer, da.pointer, 10)


def test_a_bad_launch_names_the_kernel_configuration_and_limits(fake: fake_cuda_driver.FakeState) -> None:
    function = CudaModule(VECTOR_ADD_PTX).function("vadd")
    buffers = [DeviceBuffer.empty((8,), np.float32) for _ in range(3)]
    with pytest.raises(CudaError) as caught:
        function.launch(2, 2048, [*buffers, np.int32(8)])
    assert str(caught.value) == (
        "launching kernel 'vadd' with grid [2, 1, 1], block [2048, 1, 1] and 0 bytes of dynamic shared memory on "
        "Fake H200 (sm_90) failed: CUDA_ERROR_INVALID_VALUE: fake description of CUDA_ERROR_INVALID_VALUE\n"
        "the block has 2048 threads; the kernel allows at most 1024 (it uses 16 registers per thread)\n"
        "block size along x is 2048; the device allows at most 1024"
    )
    assert caught.value.error_name == "CUDA_ERROR_INVALID_VALUE"


def test_streams_and_events(fake: fake_cuda_driver.FakeState) -> None:
    stream = Stream.create()
    handle = int(stream.handle)
    assert handle in fake.streams and stream.exchange_value == handle
    stream.wait_for(None)
    stream.wait_for(handle)  # itself: nothing to do
    assert not fake.events
    stream.wait_for(7)  # another library's stream: an event recorded there, waited on here
    assert len(fake.events) == 1
    stream.synchronize()
    stream.close()
    assert handle not in fake.streams
    assert Stream.legacy_default().exchange_value == 1
    times = cuda.time_on_device(lambda: None, repetitions=3, warmup=1)
    assert len(times) == 3 and all(t > 0 for t in times)


@pytest.fixture
def program(fake: fake_cuda_driver.FakeState) -> HostProgram:
    return HostProgram.for_cuda(parse(GPU_HOST_MODULE), POINTER_KERNELS_PTX)


def test_host_program_runs_numpy_inputs(fake: fake_cuda_driver.FakeState, program: HostProgram) -> None:
    allocations_after_build = len(fake.allocations)
    assert allocations_after_build == 2  # the constant and the intermediate %sum
    for seed in range(3):
        generator = np.random.default_rng(seed)
        x, y = generator.standard_normal((2, 1024)).astype(np.float32)
        for result, reference in zip(program.run(x, y), gpu_host_reference(x, y)):
            np.testing.assert_array_equal(result, reference)
    assert [launch[0] for launch in fake.launches] == ["add3", "add3", "block_reverse"] * 3
    # Two staging buffers for the arguments and two kept results: allocated once, not per call.
    assert len(fake.allocations) == allocations_after_build + 4


def test_host_program_device_results_and_outputs(
    fake: fake_cuda_driver.FakeState, program: HostProgram
) -> None:
    x, y = np.ones(1024, np.float32), np.arange(1024, dtype=np.float32)
    results = program.run_on_device(x, y)
    assert all(isinstance(r, DeviceBuffer) for r in results)
    for result, reference in zip(results, gpu_host_reference(x, y)):
        np.testing.assert_array_equal(result.to_numpy(), reference)
    assert program.run_on_device(x, y)[0].pointer != results[0].pointer  # fresh each call
    outputs = (DeviceBuffer.empty((1024,), np.float32), DeviceBuffer.empty((4, 256), np.float32))
    assert (
        program.run_on_device(DeviceBuffer.from_numpy(x), DeviceBuffer.from_numpy(y), outputs=outputs)
        == outputs
    )
    assert fake.launches[-1][3] == (outputs[0].pointer, outputs[1].pointer)
    for output, reference in zip(outputs, gpu_host_reference(x, y)):
        np.testing.assert_array_equal(output.to_numpy(), reference)
    with pytest.raises(TypeError, match="outputs of a GPU program must be device arrays"):
        program.run_on_device(x, y, outputs=(np.empty(1024, np.float32), outputs[1]))


class ArrayInterface:
    """A foreign device array over `buffer`'s memory, `offset` bytes in."""

    def __init__(self, buffer: DeviceBuffer, count: int, offset: int = 0, stream: int | None = None):
        self.buffer = buffer
        self.__cuda_array_interface__ = {
            "shape": (count,),
            "typestr": "<f4",
            "data": (buffer.pointer + offset, False),
            "strides": None,
            "version": 3,
            "stream": stream,
        }


def test_host_program_uses_foreign_arrays_in_place(
    fake: fake_cuda_driver.FakeState, program: HostProgram
) -> None:
    x = DeviceBuffer.from_numpy(np.arange(1024, dtype=np.float32))
    y = DeviceBuffer.from_numpy(np.ones(1024, np.float32))
    foreign_x, foreign_y = ArrayInterface(x, 1024), ArrayInterface(y, 1024, stream=5)
    biased, reversed_ = program.run(foreign_x, foreign_y)
    np.testing.assert_array_equal(biased, np.arange(1024) + 1.5)
    assert fake.launches[0][3][:2] == (x.pointer, y.pointer)  # no copies
    assert len(fake.events) == 1  # ordered after the producer's stream 5


def test_host_program_checks_foreign_arrays(fake: fake_cuda_driver.FakeState, program: HostProgram) -> None:
    memory = DeviceBuffer.empty((1025,), np.float32)
    y = ArrayInterface(DeviceBuffer.empty((1024,), np.float32), 1024)
    with pytest.raises(
        ValueError,
        match=r"argument #0 \(%x\) of @main: its address 0x[0-9a-f]+ is not aligned to 16 bytes "
        r"\(offset 4\), which parameter #0 of kernel 'add3' \(grid \[4, 1, 1\], block "
        r"\[256, 1, 1\]\) \(mlc.arg_alignment\) needs",
    ):
        program.run(ArrayInterface(memory, 1024, offset=4), y)
    with pytest.raises(ValueError, match=r"argument #0 \(%x\) of @main: expected shape \(1024,\)"):
        program.run(ArrayInterface(memory, 1025), y)
    outside = ArrayInterface(memory, 1024)
    outside.__cuda_array_interface__["data"] = (8, False)
    with pytest.raises(
        ValueError,
        match=r"argument #0 \(%x\) of @main: its __cuda_array_interface__ pointer 0x8 is not "
        r"memory CUDA knows \(CUDA_ERROR_INVALID_VALUE",
    ):
        program.run(outside, y)
    assert fake.launches == []


def test_host_program_checks_the_block_size_when_built(fake: fake_cuda_driver.FakeState) -> None:
    with pytest.raises(
        CudaError,
        match=r"kernel 'add3_small' \(grid \[4, 1, 1\], block \[256, 1, 1\]\) cannot be launched "
        r"on Fake H200 \(sm_90\): its block has 256 threads and the compiled kernel allows "
        r"at most 128 \(it uses 16 registers per thread\)",
    ):
        HostProgram.for_cuda(parse(GPU_TOO_MANY_THREADS_MODULE), POINTER_KERNELS_PTX)


def test_a_kernel_fault_is_reported_with_the_calls_launches(fake: fake_cuda_driver.FakeState) -> None:
    program = HostProgram.for_cuda(parse(GPU_FAULT_MODULE), POINTER_KERNELS_PTX)
    try:
        (result,) = program.run_on_device(np.zeros(256, np.float32))  # enqueued: no error yet
        with pytest.raises(CudaError) as caught:
            program.synchronize()
        message = str(caught.value)
        assert "CUDA_ERROR_ILLEGAL_ADDRESS" in message
        assert "the last call of @main launched 'fault' (grid [1, 1, 1], block [32, 1, 1])" in message
        assert "CUDA_LAUNCH_BLOCKING=1" in message
        # The context stays broken: the next call fails already at its upload, and says why.
        with pytest.raises(
            CudaError, match="(?s)copying 1024 bytes from the host.*the last call of @main launched 'fault'"
        ):
            program.run(np.zeros(256, np.float32))
        del result
        gc.collect()  # releasing memory of a lost context is quiet
    finally:
        fake.sticky_error = None


def test_host_program_from_another_thread(fake: fake_cuda_driver.FakeState, program: HostProgram) -> None:
    x = np.arange(1024, dtype=np.float32)
    outcome: list[object] = []
    thread = threading.Thread(target=lambda: outcome.append(program.run(x, x)))
    thread.start()
    thread.join()
    assert len(outcome) == 1
    np.testing.assert_array_equal(outcome[0][0], 2 * x + 0.5)  # type: ignore[index]


def test_host_program_views_of_an_arena(fake: fake_cuda_driver.FakeState) -> None:
    program = HostProgram.for_cuda(parse(GPU_ARENA_MODULE), POINTER_KERNELS_PTX)
    assert len(fake.allocations) == 2  # the constant and the arena: the views take no memory
    (arena,) = [start for start, (_, size) in fake.allocations.items() if size == 8192]
    for seed in range(3):
        generator = np.random.default_rng(seed)
        x, y = generator.standard_normal((2, 1024)).astype(np.float32)
        for result, reference in zip(program.run(x, y), gpu_arena_reference(x, y)):
            np.testing.assert_array_equal(result, reference)
    # Pointer + offset: %sum and %twice at the arena's start, %biased 4096 bytes in.
    sum_, biased, twice = (launch[3][2] for launch in fake.launches[:3])
    assert (sum_, biased, twice) == (arena, arena + 4096, arena)
    assert fake.launches[3][3][0] == arena
    results = program.run_on_device(np.ones(1024, np.float32), np.ones(1024, np.float32))
    assert all(result.pointer not in (arena, arena + 4096) for result in results)  # the caller's own buffers
    np.testing.assert_array_equal(results[1].to_numpy(), np.full(1024, 2.5, np.float32))


ADD_GRAPH = """func.func @f(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = graph.add %x, %y : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %0 : tensor<4x8xf32>
}"""


def test_a_cached_gpu_program_costs_the_driver_only_its_loading(
    fake: fake_cuda_driver.FakeState, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A cache hit (its device retained afresh, as in a new process) makes the driver calls that
    loading the program needs: initialisation, the primary context, one module load, of the image
    the compile's JIT linker made (no JIT: no PTX load, no link); no copy, synchronisation or
    launch. The compile made the same calls, plus the link."""
    import mlc

    monkeypatch.setenv("MLC_CACHE", "1")
    monkeypatch.setenv("MLC_CACHE_DIR", str(tmp_path))
    driver = cuda.driver_module()
    calls: collections.Counter[str] = collections.Counter()

    def counted(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def call(*arguments: Any) -> Any:
            calls[name] += 1
            if name in ("cuModuleLoadDataEx", "cuLinkAddData"):  # the compiled kernels, known to the fake
                ptx = arguments[0] if name == "cuModuleLoadDataEx" else arguments[2]
                for kernel in re.findall(r"\.entry\s+(\w+)\s*\(", ptx[:-1].decode()):
                    monkeypatch.setitem(fake_cuda_driver.KERNELS, kernel, fake_cuda_driver.Kernel((), lambda *_: None))
            return function(*arguments)

        return call

    for name in [name for name in vars(driver) if name.startswith("cu")]:
        monkeypatch.setattr(driver, name, counted(name, getattr(driver, name)))
    import mlc.diagnostics

    passes: list[str] = []
    run_pass = mlc.diagnostics.run_pass
    monkeypatch.setattr(mlc.diagnostics, "run_pass", lambda p, *rest: (passes.append(p.name), run_pass(p, *rest))[1])
    first = mlc.compile(ADD_GRAPH, device="cuda")
    compiled, compiled_passes = dict(calls), len(passes)
    calls.clear()
    monkeypatch.setattr(cuda_devices, "_DEVICES", {})
    second = mlc.compile(ADD_GRAPH, device="cuda")
    assert second is not first
    assert compiled_passes > 10 and len(passes) == compiled_passes  # the second compile was a hit
    link = {"cuLinkCreate", "cuLinkAddData", "cuLinkComplete", "cuLinkDestroy"}
    assert dict(calls) == {name: count for name, count in compiled.items() if name not in link}
    assert all(compiled[name] == 1 for name in link)
    assert calls["cuModuleLoadData"] == 1 and calls["cuDevicePrimaryCtxRetain"] == 1
    assert "cuModuleLoadDataEx" not in calls
    assert not [name for name in calls if name.startswith(("cuMemcpy", "cuLaunch", "cuCtxSynchronize", "cuStream"))]


def test_without_a_driver_device_node_cuda_is_unavailable_before_cuda_python_loads(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import sys

    monkeypatch.setattr(cuda_driver, "DRIVER_DEVICE_NODES", (str(tmp_path / "nvidiactl"),))
    monkeypatch.delitem(sys.modules, "cuda.bindings.driver")
    monkeypatch.setattr(cuda_devices, "_DEVICES", {})
    monkeypatch.setattr(sys, "platform", "linux")
    with pytest.raises(CudaError, match="there is no NVIDIA GPU driver on this machine"):
        cuda.driver_module()
    assert not cuda.is_available() and "cuda.bindings.driver" not in sys.modules
    (tmp_path / "nvidiactl").touch()  # a node: cuda-python decides
    assert cuda.driver_module().cuInit is not None


def test_a_compiled_image_the_driver_refuses_falls_back_to_the_ptx(fake: fake_cuda_driver.FakeState) -> None:
    """A cubin from elsewhere (another GPU, a newer driver: here, bytes the fake refuses) is not
    an error: the PTX is loaded instead, and the module keeps no image; a good one loads as is."""
    refused = CudaModule(POINTER_KERNELS_PTX, cubin=b"\x7fELF from another GPU")
    assert refused.cubin is None and refused.function("add3") is not None
    linked = CudaModule(POINTER_KERNELS_PTX, keep_cubin=True)
    assert linked.cubin is not None and linked.cubin.startswith(fake_cuda_driver.FAKE_CUBIN)
    assert CudaModule(POINTER_KERNELS_PTX, cubin=linked.cubin).cubin == linked.cubin


def test_a_finalizers_call_inside_the_real_driver_check_does_not_enter_the_real_binding_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The hang seen in test_call_streams.py: an earlier test's module, unloaded by a finalizer
    while `real.cuInit` (in `_real_driver_is_missing`) held the binding's library lock, made a
    checked call that waited on that lock. Here the "real" binding refuses to be entered twice."""
    lock = threading.Lock()
    finalizers: list[Callable[[], Any]] = []
    nested: list[Any] = []
    entered_while_locked: list[tuple[Any, ...]] = []

    def real_binding(*arguments: Any) -> Any:
        if not lock.acquire(blocking=False):  # the real one would wait here for ever
            entered_while_locked.append(arguments)
            raise RuntimeError("driver library not found")
        try:
            while finalizers:
                nested.append(finalizers.pop()())
            raise RuntimeError("driver library not found")
        finally:
            lock.release()

    monkeypatch.setattr(fake_cuda_driver, "real", type("Real", (), {"cuInit": staticmethod(real_binding)}))
    checked = fake_cuda_driver._checked_by_real_binding("cuInit", lambda *arguments: "fake called")
    finalizers.append(lambda: checked(0))
    assert fake_cuda_driver._real_driver_is_missing()
    assert nested == ["fake called"]
    finalizers.append(lambda: checked(0))
    assert checked(0) == "fake called" and nested == ["fake called"] * 2
    assert entered_while_locked == []
