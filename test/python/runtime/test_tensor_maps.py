"""TMA tensor maps kept in device memory (`mlc.runtime.tensor_maps`).

Without a GPU: the table encodes a map once per (pointer, geometry), hands out stable 64-byte
aligned slots, reuses the least recently used slot when full and says so (`generation`), and
geometries the copy engine refuses are reported before the driver sees them. The PTX of the copy
kernel below assembles for sm_90a when ptxas is installed.

Plans (`runtime.plan`): a kernel's `mlc.tensor_maps` become `KernelLaunch.tensor_maps`, checked
against the buffers the launch passes (a map of a buffer it does not pass, a box of the wrong
rank, an element or box the copy engine refuses are errors naming the kernel; a kernel whose
parameters leave no room for its maps fails the launch's verifier); a mapped buffer needs 16-byte
alignment. Through the fake driver, a `HostProgram` keeps each kernel's map parameter on its
buffer's map as buffers move, CUDA graphs included (`test_host_program_keeps_...`).

On an sm_90 GPU: a tiny kernel copies one 64x64 f16 box with `cp.async.bulk.tensor` (128-byte
swizzle) from a map in global memory, passed as a plain pointer and acquired with
`fence.proxy.tensormap::generic.acquire.gpu`, completing on an mbarrier; the shared tile it writes
out must be the box's bytes in the swizzled order wgmma reads (`wgmma_nvvm`'s layout), with the
rows past the operand's end zero-filled. And the host path end to end: bench/tma_matmul.py's
TMA producer/consumer wgmma kernel launched by a `HostProgram` from a host module whose kernel
declares its two maps, with and without CUDA graphs, called with operands at new addresses (new
maps, the graphs keyed by them) and compared with numpy.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ptx_kernels import parse

from mlc.runtime.plan import HostProgramError, plan_host_function
from mlc.runtime.slots import TensorMapParameter
from mlc.runtime.tensor_maps import TMA_FENCE, TensorMapError, TensorMapGeometry, TensorMapTable

BOX = (64, 64)
BOX_BYTES = BOX[0] * BOX[1] * 2
THREADS = 128

COPY_KERNEL = f"""
target triple = "nvptx64-nvidia-cuda"
@tile = internal addrspace(3) global [{BOX_BYTES} x i8] undef, align 1024
@bar = internal addrspace(3) global i64 undef, align 8

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare void @llvm.nvvm.barrier0()
declare void @llvm.nvvm.mbarrier.init.shared(ptr addrspace(3), i32)
declare i64 @llvm.nvvm.mbarrier.arrive.expect.tx.scope.cta.space.cta(ptr addrspace(3), i32)
declare i1 @llvm.nvvm.mbarrier.try.wait.parity.scope.cta.space.cta(ptr addrspace(3), i32)
declare void @llvm.nvvm.cp.async.bulk.tensor.g2s.tile.2d(ptr addrspace(7), ptr addrspace(3), ptr, i32, i32, i16, i64, i1, i1, i32)
declare void @llvm.nvvm.fence.proxy.async.shared_cta()

define ptx_kernel void @tma_copy(ptr %map, ptr addrspace(1) %out, i32 %column, i32 %row) {{
entry:
  %thread = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %first = icmp eq i32 %thread, 0
  br i1 %first, label %init, label %initialized
init:
  call void @llvm.nvvm.mbarrier.init.shared(ptr addrspace(3) @bar, i32 1)
  call void @llvm.nvvm.fence.proxy.async.shared_cta()
  br label %initialized
initialized:
  call void @llvm.nvvm.barrier0()
  br i1 %first, label %issue, label %wait
issue:
  call void asm sideeffect "{TMA_FENCE}", "l"(ptr %map)
  %state = call i64 @llvm.nvvm.mbarrier.arrive.expect.tx.scope.cta.space.cta(ptr addrspace(3) @bar, i32 {BOX_BYTES})
  %destination = addrspacecast ptr addrspace(3) @tile to ptr addrspace(7)
  call void @llvm.nvvm.cp.async.bulk.tensor.g2s.tile.2d(ptr addrspace(7) %destination, ptr addrspace(3) @bar, ptr %map, i32 %column, i32 %row, i16 0, i64 0, i1 false, i1 false, i32 0)
  br label %wait
wait:
  %landed = call i1 @llvm.nvvm.mbarrier.try.wait.parity.scope.cta.space.cta(ptr addrspace(3) @bar, i32 0)
  br i1 %landed, label %copy, label %wait
copy:
{{copies}}  ret void
}}
"""


def _copy_kernel_ir() -> str:
    """COPY_KERNEL with its copy-out: thread t moves the 16-byte chunks t + i * THREADS."""
    copies = "".join(
        f"  %chunk{i} = add i32 %thread, {i * THREADS}\n"
        f"  %from{i} = getelementptr i128, ptr addrspace(3) @tile, i32 %chunk{i}\n"
        f"  %value{i} = load i128, ptr addrspace(3) %from{i}, align 16\n"
        f"  %to{i} = getelementptr i128, ptr addrspace(1) %out, i32 %chunk{i}\n"
        f"  store i128 %value{i}, ptr addrspace(1) %to{i}, align 16\n"
        for i in range(BOX_BYTES // 16 // THREADS)
    )
    return COPY_KERNEL.replace("{copies}", copies)


def copy_kernel_ptx() -> str:
    from mlc.backend.nvptx import target_machine
    from llvmlite import binding

    module = binding.parse_assembly(_copy_kernel_ir())
    module.verify()
    return target_machine("sm_90a", 83).emit_assembly(module)


def swizzled_box(source: np.ndarray, row: int, column: int) -> np.ndarray:
    """The bytes a 128-byte-swizzled copy of the BOX at (row, column) of `source` leaves in shared
    memory: the box zero-filled past the source's end, byte b of its row-major image at
    b ^ (((b >> 7) & 7) << 4)."""
    box = np.zeros(BOX, dtype=source.dtype)
    part = source[row : row + BOX[0], column : column + BOX[1]]
    box[: part.shape[0], : part.shape[1]] = part
    image = box.view(np.uint8).reshape(-1)
    offsets = np.arange(image.size)
    swizzled = np.empty_like(image)
    swizzled[offsets ^ (((offsets >> 7) & 7) << 4)] = image
    return swizzled


class FakeDevice:
    """Records the uploads a table makes; encodes a map as its key's bytes."""

    def __init__(self) -> None:
        self.memory: dict[int, bytes] = {}
        self.encoded: list[tuple[int, TensorMapGeometry]] = []

    def encode(self, pointer: int, geometry: TensorMapGeometry) -> bytes:
        self.encoded.append((pointer, geometry))
        return (pointer.to_bytes(8, "little") + repr(geometry).encode()).ljust(128, b"\0")[:128]

    def upload(self, address: int, raw: np.ndarray) -> None:
        self.memory[address] = raw.tobytes()


GEOMETRY = TensorMapGeometry.row_major("f16", (200, 136), BOX)


def test_table_encodes_each_operand_once_and_keeps_its_slot() -> None:
    device = FakeDevice()
    table = TensorMapTable(base=4096, capacity=2, encode=device.encode, upload=device.upload)
    first = table.address(0x1000, GEOMETRY)
    assert table.address(0x1000, GEOMETRY) == first and len(device.encoded) == 1
    second = table.address(0x2000, GEOMETRY)
    assert {first, second} == {4096, 4096 + 128} and table.generation == 0
    assert device.memory[first] == device.encode(0x1000, GEOMETRY)
    table.address(0x1000, GEOMETRY)  # most recently used: 0x2000's slot goes next
    third = table.address(0x3000, GEOMETRY)
    assert third == second and table.generation == 1
    assert device.memory[third] == device.encode(0x3000, GEOMETRY)
    assert table.address(0x1000, GEOMETRY) == first and table.generation == 1


def test_geometry_strides_and_checks() -> None:
    assert GEOMETRY.strides == (272, 2) and GEOMETRY.box_bytes == BOX_BYTES
    GEOMETRY.check()
    refused = {
        "multiple of 16 bytes": TensorMapGeometry.row_major("f16", (200, 135), BOX),
        "at most 128 bytes": TensorMapGeometry.row_major("f16", (200, 136), (64, 128)),
        "1 to 256": TensorMapGeometry.row_major("f32", (512, 512), (512, 16)),
        "elements": TensorMapGeometry("i8", (4, 16), (16, 1), (4, 16)),
    }
    for message, geometry in refused.items():
        with pytest.raises(TensorMapError, match=message):
            geometry.check()
    with pytest.raises(TensorMapError, match="64-byte aligned"):
        TensorMapTable(base=4096 + 32, capacity=1, encode=FakeDevice().encode, upload=FakeDevice().upload)


def test_swizzled_box_reference_moves_chunks_within_rows() -> None:
    source = np.arange(200 * 136, dtype=np.uint16).view(np.float16).reshape(200, 136)
    image = swizzled_box(source, 0, 0).view(np.float16).reshape(BOX)
    # row 1's first 16-byte chunk (8 elements) lands in its second chunk, row 0 stays put
    assert np.array_equal(image[0, :8], source[0, :8]) and np.array_equal(image[1, 8:16], source[1, :8])


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="needs ptxas")
def test_copy_kernel_assembles_for_sm90a(tmp_path) -> None:
    ptx = copy_kernel_ptx()
    assert "fence.proxy.tensormap::generic.acquire.gpu" in ptx and "cp.async.bulk.tensor.2d" in ptx
    (tmp_path / "copy.ptx").write_text(ptx)
    subprocess.run(["ptxas", "-arch=sm_90a", str(tmp_path / "copy.ptx"), "-o", str(tmp_path / "copy.cubin")], check=True)


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="needs ptxas")
def test_tma_matmul_kernel_assembles_without_spills_or_ignored_setmaxnreg(tmp_path) -> None:
    tma_matmul = _tma_matmul()
    ptx = tma_matmul.kernel_ptx(tma_matmul.Config("f16", 256, 512, 192, stages=3, persistent=True))
    assert ptx.count("wgmma.mma_async") == 4 and ptx.count("cp.async.bulk.tensor") == 5
    assert ptx.count("bar.sync") == 1  # after the mbarriers' initialization; none in the main loop
    (tmp_path / "matmul.ptx").write_text(ptx)
    report = subprocess.run(
        ["ptxas", "-v", "-arch=sm_90a", str(tmp_path / "matmul.ptx"), "-o", str(tmp_path / "matmul.cubin")],
        check=True, capture_output=True, text=True,
    ).stderr
    assert "0 bytes spill stores" in report and "C75" not in report, report  # C7508: setmaxnreg ignored


@pytest.mark.gpu
def test_tma_copy_from_a_map_in_global_memory() -> None:
    from mlc.runtime.cuda import CudaModule, DeviceBuffer, get_device

    if get_device().properties.compute_capability < (9, 0):
        pytest.skip("TMA needs sm_90")
    function = CudaModule(copy_kernel_ptx()).function("tma_copy")
    table, storage = TensorMapTable.on_device(capacity=4)
    rng = np.random.default_rng(0)
    source = rng.standard_normal((200, 136)).astype(np.float16)
    with DeviceBuffer.from_numpy(source) as operand, storage:
        for row, column in ((0, 0), (64, 64), (150, 72)):  # the last box runs past both ends
            out = DeviceBuffer.zeros((BOX_BYTES,), np.uint8)
            map_address = table.address(operand.pointer, GEOMETRY)
            function.launch(1, THREADS, [_Pointer(map_address), out, np.int32(column), np.int32(row)])
            assert np.array_equal(out.to_numpy(), swizzled_box(source, row, column)), (row, column)
            out.close()
        assert table.generation == 0


class _Pointer:
    """A device address as a kernel parameter (`KernelArguments.from_values` takes `.pointer`)."""

    def __init__(self, pointer: int):
        self.pointer = pointer


def host_module(maps: str, parameters: int = 5, element: str = "f16", columns: int = 64) -> str:
    pointers = ", ".join(["!llvm.ptr<1>"] * 3 + ["!llvm.ptr"] * (parameters - 3))
    a, b, c = (f"memref<128x{columns}x{element}>" for _ in range(3))
    return f"""builtin.module {{
  llvm.func @k({pointers}) attributes {{nvvm.kernel, mlc.arg_alignment = array<i64: 4, 4, 4>, mlc.tensor_maps = [{maps}]}}
  func.func @main(%a: {a}, %b: {b}) -> {c} {{
    %c = memref.alloc() : {c}
    mlc_gpu.launch @k(%a, %b, %c) grid [1, 1, 1] block [128, 1, 1] : {a}, {b}, {c}
    func.return %c : {c}
  }}
}}"""


def test_plans_read_tensor_maps_and_align_their_buffers() -> None:
    plan = plan_host_function(parse(host_module("array<i64: 0, 128, 64, 64>, array<i64: 1, 0, 8, 16>")))
    (launch,) = plan.launches
    assert launch.tensor_maps == (TensorMapParameter(0, (64, 64), 128), TensorMapParameter(1, (8, 16), 0))
    assert [argument.alignment for argument in plan.arguments] == [16, 16]


@pytest.mark.parametrize(
    ("maps", "parameters", "element", "columns", "message"),
    [
        ("array<i64: 3, 128, 64, 64>", 4, "f16", 64, "reads parameter #3; the launch passes 3 buffers"),
        ("array<i64: 0, 128, 64>", 4, "f16", 64, "a box of 1 dimensions"),
        ("array<i64: 0, 128, 64, 64>", 4, "i32", 64, "f16, bf16 or f32 buffers"),
        ("array<i64: 0, 128, 64, 64>", 4, "f16", 60, "multiple of 16 bytes"),
        ("array<i64: 0, 100, 64, 64>", 4, "f16", 64, "mlc.tensor_maps' must be"),
    ],
)
def test_bad_tensor_maps_are_reported(maps: str, parameters: int, element: str, columns: int, message: str) -> None:
    with pytest.raises(HostProgramError, match=message.replace("(", r"\(").replace(")", r"\)")) as error:
        plan_host_function(parse(host_module(maps, parameters, element, columns)))
    assert "kernel 'k'" in str(error.value)


def test_a_kernel_without_room_for_its_maps_is_refused_by_the_verifier() -> None:
    from mlc.diagnostics import VerificationFailure

    with pytest.raises(VerificationFailure, match="takes 2 arguments and 1 tensor maps, but the launch passes 3"):
        parse(host_module("array<i64: 0, 128, 64, 64>", parameters=3))


def _tma_matmul():
    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))
    import tma_matmul

    return tma_matmul


@pytest.mark.gpu
@pytest.mark.parametrize("cuda_graph", [False, True])
def test_host_program_passes_tensor_maps_to_a_tma_matmul(cuda_graph: bool) -> None:
    import ml_dtypes

    from mlc.runtime.cuda import DeviceBuffer, get_device
    from mlc.runtime.host import HostProgram

    if get_device().properties.compute_capability < (9, 0):
        pytest.skip("TMA and wgmma need sm_90")
    tma_matmul = _tma_matmul()
    config = tma_matmul.Config("bf16", 256, 512, 192, persistent=cuda_graph)
    program = HostProgram.for_cuda_plan(
        plan_host_function(parse(tma_matmul.host_module(config))), tma_matmul.kernel_ptx(config), cuda_graph=cuda_graph
    )
    rng = np.random.default_rng(1)
    for call in range(3):  # new operand buffers each call: new maps (and graphs)
        a = rng.standard_normal((config.m, config.k)).astype(ml_dtypes.bfloat16)
        b = rng.standard_normal((config.k, config.n)).astype(ml_dtypes.bfloat16)
        with DeviceBuffer.from_numpy(a) as device_a, DeviceBuffer.from_numpy(b) as device_b:
            for _ in range(2):  # the same buffers again: the same maps (a graph replayed)
                (result,) = program.run(device_a, device_b)
                expected = a.astype(np.float32) @ b.astype(np.float32)
                bound = np.abs(a.astype(np.float32)) @ np.abs(b.astype(np.float32)) * 2.0**-7 + 1e-6
                assert np.all(np.abs(result.astype(np.float32) - expected) <= bound), call


DOUBLED = """builtin.module {
  llvm.func @tensor_map_doubled(!llvm.ptr<1>, !llvm.ptr<1>, !llvm.ptr) attributes {nvvm.kernel, mlc.tensor_maps = [array<i64: 0, 0, 8, 16>]}
  func.func @main(%x: memref<32x16xf32>) -> memref<32x16xf32> {
    %y = memref.alloc() : memref<32x16xf32>
    mlc_gpu.launch @tensor_map_doubled(%x, %y) grid [1, 1, 1] block [32, 1, 1] : memref<32x16xf32>, memref<32x16xf32>
    func.return %y : memref<32x16xf32>
  }
}"""
DOUBLED_PTX = ".version 8.3\n.target sm_90a\n.address_size 64\n.visible .entry tensor_map_doubled(\n)\n{\n\tret;\n}\n"


def test_host_program_keeps_tensor_map_parameters_on_their_buffers(monkeypatch) -> None:
    """Through the fake driver (no GPU): the kernel reads its operand only through the map its
    trailing parameter points to. Operands at more addresses than a map table keeps: every call
    still gets its own operand's map (re-encoded once evicted), with CUDA graphs captured per
    address set and dropped when a slot is reused; the same buffer again reuses its map."""
    import fake_cuda_driver

    from mlc.runtime.cuda import DeviceBuffer
    from mlc.runtime.executor import MAX_CUDA_GRAPHS
    from mlc.runtime.host import HostProgram

    state = fake_cuda_driver.install(monkeypatch)
    program = HostProgram.for_cuda_plan(plan_host_function(parse(DOUBLED)), DOUBLED_PTX, cuda_graph=True)
    operands = [DeviceBuffer.from_numpy(np.full((32, 16), index, np.float32)) for index in range(MAX_CUDA_GRAPHS + 2)]
    for _ in range(2):
        for index, operand in enumerate(operands):
            (result,) = program.run(operand)
            assert np.all(result == 2 * index), index
    assert len(state.tensor_maps) == 2 * len(operands)  # the second round finds each evicted
    (result,) = program.run(operands[-1])
    assert np.all(result == 2 * (len(operands) - 1)) and len(state.tensor_maps) == 2 * len(operands)
    assert len(program._graphs) == 1  # dropped at the last eviction, then one capture replayed
    encoded = np.frombuffer(state.tensor_maps[0], np.uint64)
    assert encoded[0] == operands[0].pointer and list(encoded[1:6]) == [2, 16, 32, 16, 8]  # sizes and box innermost first


def test_a_map_reads_its_buffer_in_the_kernels_view() -> None:
    """`mlc.tensor_map_views`: the kernel reads a 128x64 buffer as [16, 512] rows (as the
    transformer's out-projection reads O [S, B, H, d] as [S*B, H*d]); the map's geometry is that
    view, and a view that is not one of the buffer's elements is refused."""
    text = host_module("array<i64: 0, 128, 16, 64>", parameters=4).replace("mlc.tensor_maps", "mlc.tensor_map_views = [array<i64: 16, 512>], mlc.tensor_maps")
    (launch,) = plan_host_function(parse(text)).launches
    assert launch.tensor_maps == (TensorMapParameter(0, (16, 64), 128, (16, 512)),)
    with pytest.raises(HostProgramError, match=r"reads memref<128x64xf16> as \[16, 256\], which is not a view"):
        plan_host_function(parse(text.replace("16, 512", "16, 256")))
    with pytest.raises(HostProgramError, match="1 views"):
        plan_host_function(parse(host_module("array<i64: 0, 128, 16, 64>, array<i64: 1, 128, 16, 64>").replace("mlc.tensor_maps", "mlc.tensor_map_views = [array<i64: 16, 512>], mlc.tensor_maps")))
