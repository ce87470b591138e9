"""The CUDA layer and HostProgram on a real GPU (all marked `gpu`; skipped without a device).

Kernels are hand-written PTX (ptx_kernels.py) or hand-written LLVM IR compiled here with
llvmlite's NVPTX backend, so these tests need neither mlc's backend nor ptxas. Every check is
against numpy on fresh random data. Assertion messages carry the device and the values involved,
so that a failure can be diagnosed from the test output alone.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from ptx_kernels import (
    BLOCK_REVERSE_LLVM_IR,
    GPU_ARENA_MODULE,
    GPU_FAULT_MODULE,
    GPU_HOST_MODULE,
    GPU_TOO_MANY_THREADS_MODULE,
    POINTER_KERNELS_PTX,
    VECTOR_ADD_PTX,
    gpu_arena_reference,
    gpu_host_reference,
    parse,
    ptx_from_llvm_ir,
)

import mlc
from mlc.runtime import cuda
from mlc.runtime.cuda import (
    CudaError,
    CudaModule,
    Device,
    DeviceBuffer,
    Event,
    KernelArguments,
    Stream,
    get_device,
    time_on_device,
)
from mlc.runtime.foreign_arrays import device_array_view
from mlc.runtime.cuda_executor import CudaExecutor
from mlc.runtime.host import HostProgram

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def device() -> Device:
    return get_device()


@pytest.fixture(scope="module")
def vector_add(device: Device) -> CudaModule:
    return CudaModule(VECTOR_ADD_PTX, device, name="vector_add.ptx")


@pytest.fixture(scope="module")
def pointer_kernels(device: Device) -> CudaModule:
    return CudaModule(POINTER_KERNELS_PTX, device, name="pointer_kernels.ptx")


def random_floats(count: int, seed: int | None = None) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(count).astype(np.float32)


def blocks_for(count: int, block: int) -> int:
    return (count + block - 1) // block


# -- device and memory ----------------------------------------------------------------------


def test_device_properties(device: Device) -> None:
    properties = device.properties
    summary = repr(properties)
    assert re.fullmatch(r"sm_\d+", device.arch), summary
    assert properties.name and properties.multiprocessor_count > 0, summary
    assert properties.max_threads_per_block >= 1024 and properties.warp_size == 32, summary
    assert properties.total_memory_bytes > 2**30, summary
    assert get_device(0) is device  # one primary context per device and process
    free, total = device.memory_info()
    assert 0 < free <= total, (free, total)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32, np.int64, np.bool_])
def test_device_buffer_round_trip(device: Device, dtype: type) -> None:
    generator = np.random.default_rng()
    array = (generator.standard_normal((37, 41)) * 100).astype(dtype)
    with DeviceBuffer.from_numpy(array, device) as buffer:
        assert buffer.pointer % DeviceBuffer.ALIGNMENT == 0, hex(buffer.pointer)
        np.testing.assert_array_equal(buffer.to_numpy(), array)
        interface = buffer.__cuda_array_interface__
        assert interface["shape"] == (37, 41) and interface["data"] == (buffer.pointer, False), interface
        assert np.dtype(interface["typestr"]) == np.dtype(dtype) and interface["version"] == 3, interface


def test_device_buffer_copies_and_lifetime(device: Device) -> None:
    source = DeviceBuffer.from_numpy(np.arange(1000, dtype=np.int32), device)
    copy = DeviceBuffer.empty((10, 100), np.int32, device)
    copy.copy_from_device(source.pointer, source.nbytes)
    out = np.empty((10, 100), np.int32)
    assert copy.copy_to_host(out) is out
    np.testing.assert_array_equal(out.ravel(), np.arange(1000))
    zeros = DeviceBuffer.zeros((5,), np.float64, device)
    np.testing.assert_array_equal(zeros.to_numpy(), np.zeros(5))
    empty = DeviceBuffer.empty((0, 3), np.float32, device)
    assert empty.to_numpy().shape == (0, 3)
    source.close()
    source.close()  # idempotent
    assert source.closed
    with pytest.raises(CudaError, match="was closed"):
        _ = source.pointer
    with pytest.raises(ValueError, match="cannot copy from a float32 array"):
        copy.copy_from_host(np.zeros(1000, np.float32))


# -- modules and launches -------------------------------------------------------------------


def test_vector_add_with_a_scalar_parameter(device: Device, vector_add: CudaModule) -> None:
    function = vector_add.function("vadd")
    count = 1_000_003  # not a multiple of the block: the kernel's bound check matters
    a, b = random_floats(count), random_floats(count)
    da, db = DeviceBuffer.from_numpy(a, device), DeviceBuffer.from_numpy(b, device)
    dc = DeviceBuffer.zeros((count,), np.float32, device)
    arguments = KernelArguments.from_values([da, db, dc, np.int32(count)])
    function.launch(blocks_for(count, 256), 256, arguments)
    np.testing.assert_array_equal(dc.to_numpy(), a + b)
    # The same parameter block, launched again on new data in the same buffers.
    a2 = random_floats(count)
    da.copy_from_host(a2)
    function.launch((blocks_for(count, 128), 1, 1), (128, 1, 1), arguments)
    np.testing.assert_array_equal(dc.to_numpy(), a2 + b)


def check_block_reverse(device: Device, module: CudaModule, name: str) -> None:
    blocks = 97
    x = random_floats(256 * blocks)
    source, result = (
        DeviceBuffer.from_numpy(x, device),
        DeviceBuffer.empty((blocks * 256,), np.float32, device),
    )
    module.function(name).launch(blocks, 256, [source, result])
    np.testing.assert_array_equal(result.to_numpy().reshape(blocks, 256), x.reshape(blocks, 256)[:, ::-1])


def test_block_reverse_through_shared_memory(device: Device, pointer_kernels: CudaModule) -> None:
    check_block_reverse(device, pointer_kernels, "block_reverse")


def test_block_reverse_from_llvm_ir_through_llvmlite(device: Device) -> None:
    pytest.importorskip("llvmlite")
    ptx = ptx_from_llvm_ir(BLOCK_REVERSE_LLVM_IR, device.arch)
    assert f".target {device.arch}" in ptx, ptx[:300]
    check_block_reverse(device, CudaModule(ptx, device, name="block_reverse_llvm.ptx"), "block_reverse_llvm")


def test_a_bad_launch_names_the_kernel_and_configuration(device: Device, vector_add: CudaModule) -> None:
    function = vector_add.function("vadd")
    buffers = [DeviceBuffer.zeros((4096,), np.float32, device) for _ in range(3)]
    arguments = KernelArguments.from_values([*buffers, np.int32(4096)])
    with pytest.raises(CudaError) as caught:
        function.launch(2, 2048, arguments)
    message = str(caught.value)
    for part in (
        "kernel 'vadd'",
        "grid [2, 1, 1]",
        "block [2048, 1, 1]",
        device.arch,
        "the block has 2048 threads; the kernel allows at most",
    ):
        assert part in message, message
    assert caught.value.error_name is not None and caught.value.error_name.startswith("CUDA_ERROR_"), message
    # A configuration error is not sticky: the context still works.
    function.launch(16, 256, arguments)
    device.synchronize()


def test_invalid_ptx_reports_the_jit_log(device: Device) -> None:
    broken = ".version 7.0\n.target sm_70\n.address_size 64\n.visible .entry broken()\n{\n\tnot_an_instruction;\n\tret;\n}\n"
    with pytest.raises(CudaError) as caught:
        CudaModule(broken, device, name="broken.ptx")
    message = str(caught.value)
    assert "loading PTX module broken.ptx" in message and ".target sm_70" in message, message
    assert "JIT log:" in message and "CUDA_ERROR_" in message, message


def test_a_missing_kernel_lists_the_kernels_there_are(vector_add: CudaModule) -> None:
    with pytest.raises(CudaError, match="(?s)looking up kernel 'vsub'.*the PTX defines the kernels: vadd"):
        vector_add.function("vsub")


def test_events_time_device_work(device: Device, vector_add: CudaModule) -> None:
    count = 1 << 22
    buffers = [DeviceBuffer.zeros((count,), np.float32, device) for _ in range(3)]
    arguments = KernelArguments.from_values([*buffers, np.int32(count)])
    function = vector_add.function("vadd")
    times = time_on_device(lambda: function.launch(count // 256, 256, arguments), repetitions=10, warmup=2)
    assert len(times) == 10 and all(0 < t < 1000 for t in times), times
    start, end = Event(device), Event(device)
    start.record()
    function.launch(count // 256, 256, arguments)
    end.record()
    assert 0 < end.elapsed_milliseconds_since(start) < 1000


def test_a_non_blocking_stream(device: Device, vector_add: CudaModule) -> None:
    stream = Stream.create(device)
    count = 65536
    a, b = random_floats(count), random_floats(count)
    da, db = DeviceBuffer.from_numpy(a, device, stream), DeviceBuffer.from_numpy(b, device, stream)
    dc = DeviceBuffer((count,), np.float32, device, stream)
    vector_add.function("vadd").launch(count // 256, 256, [da, db, dc, np.int32(count)], stream=stream)
    np.testing.assert_array_equal(dc.copy_to_host(stream=stream), a + b)
    assert dc.__cuda_array_interface__["stream"] == int(stream.handle)
    stream.synchronize()
    stream.close()


# -- HostProgram on the GPU -----------------------------------------------------------------


@pytest.fixture(scope="module")
def program(device: Device) -> HostProgram:
    return HostProgram.for_cuda(parse(GPU_HOST_MODULE), POINTER_KERNELS_PTX, device=device)


def test_host_program_on_numpy_inputs(program: HostProgram) -> None:
    assert isinstance(program.executor, CudaExecutor)
    for _ in range(3):
        x, y = random_floats(1024), random_floats(1024)
        biased, reversed_ = program.run(x, y)
        expected_biased, expected_reversed = gpu_host_reference(x, y)
        np.testing.assert_array_equal(biased, expected_biased)
        np.testing.assert_array_equal(reversed_, expected_reversed)
        assert reversed_.shape == (4, 256)


def test_host_program_results_on_the_device_and_outputs(device: Device, program: HostProgram) -> None:
    x, y = random_floats(1024), random_floats(1024)
    expected = gpu_host_reference(x, y)
    results = program.run_on_device(x, y)
    assert all(isinstance(r, DeviceBuffer) for r in results), results
    for result, reference in zip(results, expected):
        np.testing.assert_array_equal(result.to_numpy(), reference)
    outputs = (
        DeviceBuffer.empty((1024,), np.float32, device),
        DeviceBuffer.empty((4, 256), np.float32, device),
    )
    assert (
        program.run_on_device(
            DeviceBuffer.from_numpy(x, device), DeviceBuffer.from_numpy(y, device), outputs=outputs
        )
        == outputs
    )
    program.synchronize()
    for output, reference in zip(outputs, expected):
        np.testing.assert_array_equal(output.to_numpy(), reference)
    with pytest.raises(ValueError, match=r"output #1 of @main: expected shape \(4, 256\)"):
        program.run_on_device(x, y, outputs=(outputs[0], DeviceBuffer.empty((1024,), np.float32, device)))
    with pytest.raises(TypeError, match="outputs of a GPU program must be device arrays"):
        program.run_on_device(x, y, outputs=(np.empty(1024, np.float32), outputs[1]))


def test_host_program_views_of_an_arena(device: Device) -> None:
    """Intermediates as views of one arena: pointer + offset on a real device, results unchanged."""
    program = HostProgram.for_cuda(parse(GPU_ARENA_MODULE), POINTER_KERNELS_PTX, device=device)
    assert [(view.root, view.byte_offset) for view in program.plan.views] == [(3, 0), (3, 4096), (3, 0)]
    for seed in range(3):
        x, y = random_floats(1024, seed), random_floats(1024, seed + 10)
        for result, reference in zip(program.run(x, y), gpu_arena_reference(x, y)):
            np.testing.assert_array_equal(result, reference)


def test_host_program_argument_errors(program: HostProgram) -> None:
    with pytest.raises(ValueError, match=r"argument #1 \(%y\) of @main: expected dtype float32"):
        program.run(random_floats(1024), np.zeros(1024))
    with pytest.raises(ValueError, match=r"takes 2 argument\(s\)"):
        program.run(random_floats(1024))


def test_host_program_checks_the_block_size_when_built(device: Device) -> None:
    with pytest.raises(CudaError) as caught:
        HostProgram.for_cuda(parse(GPU_TOO_MANY_THREADS_MODULE), POINTER_KERNELS_PTX, device=device)
    message = str(caught.value)
    for part in ("'add3_small' (grid [4, 1, 1], block [256, 1, 1])", "256 threads", "at most 128"):
        assert part in message, message


FAULT_SCRIPT = """
import numpy as np
from ptx_kernels import GPU_FAULT_MODULE, POINTER_KERNELS_PTX, parse
from mlc.runtime.cuda import CudaError
from mlc.runtime.host import HostProgram
program = HostProgram.for_cuda(parse(GPU_FAULT_MODULE), POINTER_KERNELS_PTX)
try:
    program.run(np.zeros(256, np.float32))
except CudaError as error:
    print("CudaError:", error)
else:
    print("no error")
"""


def test_a_kernel_fault_is_reported_with_the_launches_of_the_call() -> None:
    # A fault poisons the CUDA context for the rest of its process: provoke it in a child.
    here = Path(__file__).parent
    root = here.parents[2]
    environment = dict(os.environ)
    environment["PYTHONPATH"] = os.pathsep.join([str(root), str(here), environment.get("PYTHONPATH", "")])
    environment.pop("CUDA_LAUNCH_BLOCKING", None)
    child = subprocess.run(
        [sys.executable, "-c", FAULT_SCRIPT], capture_output=True, text=True, timeout=120, env=environment
    )
    output = child.stdout + child.stderr
    assert "CudaError:" in output, output
    assert "CUDA_ERROR_" in output, output
    assert "the last call of @main launched 'fault' (grid [1, 1, 1], block [32, 1, 1])" in output, output
    assert "CUDA_LAUNCH_BLOCKING=1" in output, output
    assert GPU_FAULT_MODULE  # the module the child ran


# -- PyTorch interoperation -----------------------------------------------------------------


@pytest.fixture(scope="module")
def torch():  # type: ignore[no-untyped-def]
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch has no CUDA")
    return torch


class DLPackOnly:
    """A tensor seen only through DLPack (as a library without the array interface would be)."""

    def __init__(self, tensor: object):
        self.tensor = tensor

    def __dlpack__(self, stream: object = None) -> object:
        return self.tensor.__dlpack__(stream=stream)  # type: ignore[attr-defined]

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.tensor.__dlpack_device__()  # type: ignore[attr-defined]


def test_torch_tensors_as_kernel_parameters(torch, vector_add: CudaModule) -> None:  # type: ignore[no-untyped-def]
    count = 300_000
    a, b = torch.randn(count, device="cuda"), torch.randn(count, device="cuda")
    for wrap in (lambda t: t, DLPackOnly):  # __cuda_array_interface__, then DLPack
        c = torch.zeros(count, device="cuda")
        views = [device_array_view(wrap(t)) for t in (a, b, c)]  # the launch takes device memory, not tensors
        vector_add.function("vadd").launch(blocks_for(count, 256), 256, [*views, np.int32(count)])
        torch.cuda.synchronize()
        assert torch.equal(c, a + b)


def test_torch_reads_device_buffers(torch, device: Device) -> None:  # type: ignore[no-untyped-def]
    array = random_floats(4096).reshape(64, 64)
    buffer = DeviceBuffer.from_numpy(array, device)
    tensor = torch.as_tensor(buffer, device="cuda")
    assert tensor.data_ptr() == buffer.pointer
    np.testing.assert_array_equal(tensor.cpu().numpy(), array)


def test_host_program_uses_torch_tensors_in_place(torch, program: HostProgram) -> None:  # type: ignore[no-untyped-def]
    x, y = torch.randn(1024, device="cuda"), torch.randn(1024, device="cuda")
    expected = gpu_host_reference(x.cpu().numpy(), y.cpu().numpy())
    for result, reference in zip(program.run(x, DLPackOnly(y)), expected):
        np.testing.assert_array_equal(result, reference)
    outputs = (torch.empty(1024, device="cuda"), torch.empty(4, 256, device="cuda"))
    program.run_on_device(x, y, outputs=outputs)
    torch.cuda.synchronize()
    for output, reference in zip(outputs, expected):
        np.testing.assert_array_equal(output.cpu().numpy(), reference)
    host_x = torch.randn(1024)  # a CPU tensor is copied like a numpy array
    np.testing.assert_array_equal(
        program.run(host_x, y)[0], gpu_host_reference(host_x.numpy(), y.cpu().numpy())[0]
    )


def test_host_program_checks_torch_tensors(torch, program: HostProgram) -> None:  # type: ignore[no-untyped-def]
    y = torch.randn(1024, device="cuda")
    misaligned = torch.randn(1025, device="cuda")[1:]  # contiguous, 4 bytes past a 16-byte boundary
    with pytest.raises(
        ValueError,
        match=r"argument #0 \(%x\) of @main: its address 0x[0-9a-f]+ is not aligned to "
        r"16 bytes \(offset 4\), which parameter #0 of kernel 'add3'",
    ):
        program.run(misaligned, y)
    with pytest.raises(ValueError, match=r"argument #0 \(%x\) of @main: the array is not C-contiguous"):
        program.run(torch.randn(2048, device="cuda")[::2], y)
    with pytest.raises(
        ValueError, match=r"argument #1 \(%y\) of @main: expected dtype float32 .* got float64"
    ):
        program.run(y, y.double())
    with pytest.raises(ValueError, match=r"argument #1 \(%y\) of @main: expected shape \(1024,\)"):
        program.run(y, y[:512])
    with pytest.raises(ValueError, match=r"argument #0 \(%x\) of @main: exporting it through DLPack failed"):
        program.run(torch.randn(1024, device="cuda", requires_grad=True), y)


def test_run_on_device_with_torch_outputs_falls_back_to_the_checked_path(torch, program: HostProgram) -> None:  # type: ignore[no-untyped-def]
    """Well-formed tensors take the fast path; any other array is checked (and explained) in full,
    and the next well-formed call points the kernels at its own tensors again."""
    for _ in range(2):
        x, y = torch.randn(1024, device="cuda"), torch.randn(1024, device="cuda")
        outputs = (torch.empty(1024, device="cuda"), torch.empty(4, 256, device="cuda"))
        assert program.run_on_device(x, y, outputs=outputs) == outputs
        torch.cuda.synchronize()
        for output, reference in zip(outputs, gpu_host_reference(x.cpu().numpy(), y.cpu().numpy())):
            np.testing.assert_array_equal(output.cpu().numpy(), reference)
        with pytest.raises(ValueError, match=r"output #1 of @main: the array is not C-contiguous"):
            program.run_on_device(x, y, outputs=(outputs[0], torch.empty(4, 512, device="cuda")[:, ::2]))
        with pytest.raises(ValueError, match=r"output #0 of @main: expected dtype float32"):
            program.run_on_device(x, y, outputs=(outputs[0].double(), outputs[1]))


# -- streams: a call is ordered with the caller's stream (mlc/runtime/call_streams.py) ------------

SPIN_CYCLES = 100_000_000
"""`torch.cuda._sleep` cycles (tens of milliseconds): the input is written that late on its stream,
so a call not ordered after that stream reads the old input."""


def _late_write(torch, stream, tensor, values) -> None:  # type: ignore[no-untyped-def]
    """Enqueues on `stream` a long spin, then the write of `values` into `tensor`."""
    with torch.cuda.stream(stream):
        torch.cuda._sleep(SPIN_CYCLES)
        tensor.copy_(values)


def _assert_outputs(results, x, y) -> None:  # type: ignore[no-untyped-def]
    for result, reference in zip(results, gpu_host_reference(x.cpu().numpy(), y.cpu().numpy())):
        got = result if isinstance(result, np.ndarray) else np.asarray(result.cpu() if hasattr(result, "cpu") else result.to_numpy())
        np.testing.assert_array_equal(got, reference)


def test_calls_run_on_pytorchs_current_stream(torch, program: HostProgram) -> None:  # type: ignore[no-untyped-def]
    """Inside `torch.cuda.stream(side)`, with no synchronization: the fast path (PyTorch outputs),
    the checked path (device results) and `run` (numpy results) all read the late input."""
    side = torch.cuda.Stream()
    y = torch.ones(1024, device="cuda")
    for call in ("fast", "device results", "numpy results"):
        x, source = torch.zeros(1024, device="cuda"), torch.randn(1024, device="cuda")
        outputs = (torch.empty(1024, device="cuda"), torch.empty(4, 256, device="cuda"))
        torch.cuda.synchronize()
        _late_write(torch, side, x, source)
        with torch.cuda.stream(side):
            if call == "fast":
                results = program.run_on_device(x, y, outputs=outputs)
            elif call == "device results":
                results = program.run_on_device(x, y)
                assert all(r.__cuda_array_interface__["stream"] == side.cuda_stream for r in results)
            else:
                results = program.run(x, y)
        side.synchronize()
        _assert_outputs(results, source, y)


@pytest.mark.parametrize("spelling", ["torch.cuda.Stream", "int", "mlc Stream"])
def test_a_call_runs_on_the_stream_it_is_given(torch, device: Device, program: HostProgram, spelling: str) -> None:  # type: ignore[no-untyped-def]
    side = torch.cuda.Stream()
    value = {"torch.cuda.Stream": side, "int": side.cuda_stream, "mlc Stream": None}[spelling]
    if value is None:
        value = Stream(device, cuda.driver_module().CUstream(side.cuda_stream), owned=False)
    x, y, source = torch.zeros(1024, device="cuda"), torch.ones(1024, device="cuda"), torch.randn(1024, device="cuda")
    outputs = (torch.empty(1024, device="cuda"), torch.empty(4, 256, device="cuda"))
    torch.cuda.synchronize()
    _late_write(torch, side, x, source)
    program.run_on_device(x, y, outputs=outputs, stream=value)  # PyTorch's current stream is the default one
    side.synchronize()
    _assert_outputs(outputs, source, y)
    with pytest.raises(mlc.ArgumentTypeError, match="expected an mlc Stream, a torch.cuda.Stream"):
        program.run_on_device(x, y, outputs=outputs, stream="side")
