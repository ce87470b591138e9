"""A quick end-to-end check of mlc's CUDA layer on a GPU machine, without pytest.

    python test/python/runtime/gpu_smoke.py            # from the repository root, or anywhere

Prints one `PASS`, `FAIL` or `SKIP` line per check (a FAIL is followed by the error and the end of
its traceback), then a summary; exits with 1 when a check failed. Checks: the driver and the
device, memory round trips, a hand-written PTX vector add (with a scalar parameter), a
shared-memory block reverse (hand-written PTX, and LLVM IR through llvmlite's NVPTX backend),
that a bad launch and bad PTX raise CudaError naming what failed, event timing, a HostProgram
end to end and a graph program through mlc's pipeline and backend (both need xdsl), and PyTorch
interoperation (when torch with CUDA is installed).

`--fake-driver` runs the same checks against the fake driver of the tests (no GPU needed), to
check this script itself.
"""

from __future__ import annotations

import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parents[2]), str(HERE)]  # mlc without installing it, and ptx_kernels

import numpy as np  # noqa: E402


class Skip(Exception):
    """A check that cannot run here (a missing optional package)."""


def check_driver() -> str:
    from mlc.runtime import cuda

    count = cuda.device_count()
    device = cuda.get_device()
    p = device.properties
    version = p.driver_version
    return (
        f"{count} device(s); device 0: {p.name}, {device.arch}, {p.multiprocessor_count} SMs, "
        f"{p.total_memory_bytes / 2**30:.1f} GiB, driver {version // 1000}.{(version % 1000) // 10}"
    )


def check_memory() -> str:
    from mlc.runtime.cuda import DeviceBuffer

    generator = np.random.default_rng()
    for dtype in (np.float32, np.float16, np.int64, np.bool_):
        array = (generator.standard_normal((123, 77)) * 10).astype(dtype)
        with DeviceBuffer.from_numpy(array) as buffer:
            assert buffer.pointer % 256 == 0, f"{dtype.__name__}: pointer {buffer.pointer:#x} not 256-aligned"
            np.testing.assert_array_equal(buffer.to_numpy(), array, err_msg=f"round trip of {dtype.__name__}")
    return "float32, float16, int64, bool round trips"


def check_vector_add() -> str:
    from ptx_kernels import VECTOR_ADD_PTX

    from mlc.runtime.cuda import CudaModule, DeviceBuffer, KernelArguments

    count = 1_000_003
    generator = np.random.default_rng()
    a, b = generator.standard_normal((2, count)).astype(np.float32)
    da, db, dc = (
        DeviceBuffer.from_numpy(a),
        DeviceBuffer.from_numpy(b),
        DeviceBuffer.zeros((count,), np.float32),
    )
    function = CudaModule(VECTOR_ADD_PTX, name="vadd.ptx").function("vadd")
    function.launch((count + 255) // 256, 256, KernelArguments.from_values([da, db, dc, np.int32(count)]))
    result = dc.to_numpy()
    wrong = np.flatnonzero(result != a + b)
    assert wrong.size == 0, (
        f"{wrong.size} wrong elements, first at {wrong[:5]}: {result[wrong[:5]]} != {(a + b)[wrong[:5]]}"
    )
    return f"{count} elements exact"


def reverse_blocks(ptx: str, name: str) -> None:
    from mlc.runtime.cuda import CudaModule, DeviceBuffer

    blocks = 257
    x = np.random.default_rng().standard_normal(blocks * 256).astype(np.float32)
    source, result = DeviceBuffer.from_numpy(x), DeviceBuffer.empty((blocks * 256,), np.float32)
    CudaModule(ptx, name=f"{name}.ptx").function(name).launch(blocks, 256, [source, result])
    expected = x.reshape(blocks, 256)[:, ::-1].ravel()
    wrong = np.flatnonzero(result.to_numpy() != expected)
    assert wrong.size == 0, f"{wrong.size} wrong elements, first at {wrong[:5]}"


def check_block_reverse_ptx() -> str:
    from ptx_kernels import POINTER_KERNELS_PTX

    reverse_blocks(POINTER_KERNELS_PTX, "block_reverse")
    return "257 blocks of 256 reversed through shared memory"


def check_block_reverse_llvmlite() -> str:
    try:
        import llvmlite  # noqa: F401
    except ImportError as error:
        raise Skip("llvmlite is not installed") from error
    from ptx_kernels import BLOCK_REVERSE_LLVM_IR, ptx_from_llvm_ir

    from mlc.runtime.cuda import get_device

    arch = get_device().arch
    reverse_blocks(ptx_from_llvm_ir(BLOCK_REVERSE_LLVM_IR, arch), "block_reverse_llvm")
    return f"LLVM IR -> llvmlite NVPTX ({arch}) -> driver"


def check_bad_launch() -> str:
    from ptx_kernels import VECTOR_ADD_PTX

    from mlc.runtime.cuda import CudaError, CudaModule, DeviceBuffer

    function = CudaModule(VECTOR_ADD_PTX, name="vadd.ptx").function("vadd")
    buffers = [DeviceBuffer.empty((4096,), np.float32) for _ in range(3)]
    try:
        function.launch(2, 2048, [*buffers, np.int32(4096)])
    except CudaError as error:
        message = str(error)
        for part in ("kernel 'vadd'", "grid [2, 1, 1]", "block [2048, 1, 1]", "CUDA_ERROR_"):
            assert part in message, f"'{part}' missing from: {message}"
        function.launch(16, 256, [*buffers, np.int32(4096)])  # the context still works
        return "CudaError: " + message.replace("\n", " | ")
    raise AssertionError("a block of 2048 threads was launched without an error")


def check_bad_ptx() -> str:
    from mlc.runtime.cuda import CudaError, CudaModule

    broken = ".version 7.0\n.target sm_70\n.address_size 64\n.visible .entry broken()\n{\n\tnot_an_instruction;\n\tret;\n}\n"
    try:
        CudaModule(broken, name="broken.ptx")
    except CudaError as error:
        assert "JIT log:" in str(error), str(error)
        return "CudaError: " + str(error).replace("\n", " | ")
    raise AssertionError("invalid PTX loaded without an error")


def check_events() -> str:
    from ptx_kernels import VECTOR_ADD_PTX

    from mlc.runtime.cuda import CudaModule, DeviceBuffer, KernelArguments, time_on_device

    count = 1 << 24
    buffers = [DeviceBuffer.zeros((count,), np.float32) for _ in range(3)]
    arguments = KernelArguments.from_values([*buffers, np.int32(count)])
    function = CudaModule(VECTOR_ADD_PTX, name="vadd.ptx").function("vadd")
    times = time_on_device(lambda: function.launch(count // 256, 256, arguments), repetitions=20, warmup=3)
    median = float(np.median(times))
    assert 0 < median < 1000, times
    return f"vadd of 2^24 floats: median {median * 1000:.1f} us, {3 * 4 * count / (median / 1000) / 1e9:.0f} GB/s"


def check_host_program() -> str:
    try:
        import xdsl  # noqa: F401
    except ImportError as error:
        raise Skip("xdsl is not installed (pip install -e . in the repository)") from error
    from ptx_kernels import GPU_HOST_MODULE, POINTER_KERNELS_PTX, gpu_host_reference, parse

    from mlc.runtime.host import HostProgram

    program = HostProgram.for_cuda(parse(GPU_HOST_MODULE), POINTER_KERNELS_PTX)
    generator = np.random.default_rng()
    x, y = generator.standard_normal((2, 1024)).astype(np.float32)
    for index, (result, reference) in enumerate(zip(program.run(x, y), gpu_host_reference(x, y))):
        np.testing.assert_array_equal(result, reference, err_msg=f"result #{index}")
    started = time.perf_counter()
    calls = 200
    for _ in range(calls):
        program.run_on_device(x, y)
    program.synchronize()
    per_call = (time.perf_counter() - started) / calls * 1e6
    return f"3 launches, constants and intermediates; run_on_device with numpy inputs: {per_call:.0f} us per call"


def check_pipeline() -> str:
    try:
        import xdsl  # noqa: F401
    except ImportError as error:
        raise Skip("xdsl is not installed (pip install -e . in the repository)") from error
    from mlc.backend import compile_to_ptx
    from mlc.diagnostics import parse_module, verify
    from mlc.dialects import make_context
    from mlc.passes import build_pipeline
    from mlc.runtime.cuda import get_device
    from mlc.runtime.host import HostProgram
    from mlc.transforms import all_passes

    source = """
func.func @main(%x: tensor<256x1024xf32>, %b: tensor<1024xf32>) -> tensor<256x1024xf32> {
  %0 = "graph.add"(%x, %b) : (tensor<256x1024xf32>, tensor<1024xf32>) -> tensor<256x1024xf32>
  %1 = "graph.relu"(%0) : (tensor<256x1024xf32>) -> tensor<256x1024xf32>
  func.return %1 : tensor<256x1024xf32>
}
"""
    module, _ = parse_module(source, make_context())
    for compiler_pass in build_pipeline("mlc-lower-to-gpu", all_passes(), mlir_syntax=False):
        compiler_pass.apply(make_context(), module)
    verify(module)
    arch = get_device().arch
    program = HostProgram.for_cuda(module, compile_to_ptx(module, arch))
    generator = np.random.default_rng()
    x = generator.standard_normal((256, 1024)).astype(np.float32)
    b = generator.standard_normal(1024).astype(np.float32)
    (result,) = program.run(x, b)
    np.testing.assert_array_equal(result, np.maximum(x + b, 0))
    launches = ", ".join(launch.describe() for launch in program.plan.launches)
    return f"graph add+relu -> mlc-lower-to-gpu -> PTX ({arch}) -> HostProgram: exact; launched {launches}"


def check_torch() -> str:
    try:
        import torch
    except ImportError as error:
        raise Skip("torch is not installed") from error
    if not torch.cuda.is_available():
        raise Skip("torch has no CUDA")
    from ptx_kernels import GPU_HOST_MODULE, POINTER_KERNELS_PTX, gpu_host_reference, parse

    from mlc.runtime.cuda import DeviceBuffer
    from mlc.runtime.host import HostProgram

    program = HostProgram.for_cuda(parse(GPU_HOST_MODULE), POINTER_KERNELS_PTX)
    x, y = torch.randn(1024, device="cuda"), torch.randn(1024, device="cuda")
    outputs = (torch.empty(1024, device="cuda"), torch.empty(4, 256, device="cuda"))
    program.run_on_device(x, y, outputs=outputs)
    torch.cuda.synchronize()
    for output, reference in zip(outputs, gpu_host_reference(x.cpu().numpy(), y.cpu().numpy())):
        np.testing.assert_array_equal(output.cpu().numpy(), reference)
    buffer = DeviceBuffer.from_numpy(np.arange(16, dtype=np.float32))
    tensor = torch.as_tensor(buffer, device="cuda")
    assert tensor.data_ptr() == buffer.pointer and tensor.sum().item() == 120.0
    return f"torch {torch.__version__}: CUDA tensors in and out of a HostProgram, DeviceBuffer into torch"


CHECKS: list[tuple[str, Callable[[], str]]] = [
    ("driver and device", check_driver),
    ("device memory", check_memory),
    ("vector add (hand-written PTX)", check_vector_add),
    ("block reverse, shared memory (hand-written PTX)", check_block_reverse_ptx),
    ("block reverse (LLVM IR via llvmlite)", check_block_reverse_llvmlite),
    ("bad launch raises CudaError", check_bad_launch),
    ("bad PTX raises CudaError with the JIT log", check_bad_ptx),
    ("event timing", check_events),
    ("HostProgram on the GPU", check_host_program),
    ("a graph program through the pipeline and the backend", check_pipeline),
    ("PyTorch interoperation", check_torch),
]
NEEDS_REAL_KERNELS = {check_pipeline, check_torch}
"""Checks whose kernels or arrays the fake driver cannot provide."""


def install_fake_driver() -> None:
    import fake_cuda_driver

    from mlc.runtime import cuda_driver

    driver = fake_cuda_driver.make_driver(fake_cuda_driver.FakeState())
    cuda_driver.driver_module = lambda: driver  # type: ignore[assignment]


def main(arguments: list[str]) -> int:
    if "--fake-driver" in arguments:
        install_fake_driver()
        print("NOTE using the fake driver of the tests: no GPU is involved")
    fake = "--fake-driver" in arguments
    failures = 0
    for name, check in CHECKS:
        try:
            if fake and check in NEEDS_REAL_KERNELS:
                raise Skip("needs a real GPU")
            detail = check()
        except Skip as reason:
            print(f"SKIP {name}: {reason}")
        except Exception as error:  # report every failure and go on to the next check
            failures += 1
            print(f"FAIL {name}: {type(error).__name__}: {error}")
            for line in traceback.format_exc().strip().splitlines()[-8:]:
                print(f"     {line}")
        else:
            print(f"PASS {name}: {detail}")
        sys.stdout.flush()
    print(f"{'FAILED' if failures else 'PASSED'}: {failures} of {len(CHECKS)} checks failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
