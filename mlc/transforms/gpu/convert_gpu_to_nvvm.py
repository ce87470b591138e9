"""convert-gpu-to-nvvm: mlc_gpu kernels become NVVM-flavoured `llvm.func`s.

* `mlc_gpu.func` becomes an external `llvm.func` over bare pointers (see `llvm_kernel.py`)
  marked `nvvm.kernel`, with `nvvm.maxntid` set to its block size so that ptxas can budget
  registers, and `nvvm.minctasm` where the kernel carries `mlc.min_blocks_per_multiprocessor`;
  the backend turns these attributes into a PTX `.entry` with `.maxntid` (and `.minnctapersm`).
* `mlc_gpu.thread_id` / `block_id` read NVVM's special registers (`tid`, `ctaid`) through
  `llvm.call_intrinsic`; `block_dim` / `grid_dim` become constants, since mlc kernels have a
  static launch shape (which also lets LLVM fold the index arithmetic).
* `mlc_gpu.barrier` becomes `llvm.nvvm.barrier0` (bar.sync 0); `mlc_gpu.shuffle` becomes
  `llvm.nvvm.shfl.sync.{bfly,up,down,idx}` over the full warp; `loop.mma_sync` (left in the
  kernel by convert-loop-to-gpu) becomes `llvm.nvvm.mma.m16n8k16.row.col.*` (mma.sync, sm_80+;
  `llvm.nvvm.mma.m16n8k8.row.col.tf32` for f32 registers, `loop.round_tf32` `llvm.nvvm.f2tf32.rna`),
  `loop.ldmatrix` `llvm.nvvm.ldmatrix.sync.aligned.m8n8.*` on its shared buffer (an error if the
  buffer is not shared memory); `loop.async_copy` / `async_commit` / `async_wait` become
  `llvm.nvvm.cp.async.{cg,ca}.shared.global.N[.s]` (zero fill where its `if` is false, through
  the source size), `cp.async.commit.group` and `cp.async.wait.group` (after the kernel becomes
  an `llvm.func`, when its parameters are pointers: the copy reads a parameter's address);
  `loop.mbarrier_*` and `loop.tma_load` become mbarrier intrinsics and bulk tensor copies through
  tensor maps passed as trailing parameters (`mlc.tensor_maps`; `tma_nvvm.py`), sm_90a.
* shared memory (`memref.alloca` in space 3) becomes an addrspace(3) `llvm.mlir.global`, read with
  `llvm.mlir.addressof` (beyond 48 KiB a block, offsets in one dynamic shared global:
  `shared_memory_to_globals`).

Special registers are i32; they are zero-extended to i64 and cast to `index` with an unrealized
cast, which `convert-arith-to-llvm` and `reconcile-unrealized-casts` resolve. The kernel's
standard ops are left for the `convert-*-to-llvm` passes; `mlc_gpu.launch` stays for the runtime.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, llvm, memref
from xdsl.dialects.builtin import (
    DenseArrayBase,
    IndexType,
    IntAttr,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    StringAttr,
    UnitAttr,
    UnrealizedConversionCastOp,
    VectorType,
    f32,
    i32,
    i64,
)
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from mlc.diagnostics import PassFailure
from mlc.dialects import attributes
from mlc.dialects.element_types import byte_width
from mlc.dialects.gpu import ops as gpu
from mlc.dialects.llvm_extra import AddrSpaceCastOp
from mlc.dialects.loop import ops as loop
from mlc.transforms.lowering.llvm_kernel import (
    SHARED_MEMORY_SPACE,
    element_address,
    is_shared_pointer,
    kernel_to_llvm_func,
    pointer_base,
    replace_terminators,
)
from mlc.transforms.lowering.tma_nvvm import TMA_DESTINATION_ALIGNMENT, lower_mbarriers_and_tma
from mlc.transforms.lowering.warp_shuffle_nvvm import lower_shuffle
from mlc.transforms.lowering.wgmma_nvvm import (
    SWIZZLE_ATOM_BYTES,
    fence_proxy_async,
    lower_wgmma,
    lower_wgmma_wait,
    prepare_wgmma_kernel,
    swizzle_of,
    swizzled_address,
)

_REGISTERS = {gpu.ThreadIdOp: "tid", gpu.BlockIdOp: "ctaid"}
BARRIER_INTRINSIC = "llvm.nvvm.barrier0"
GLOBAL_MEMORY_SPACE = 1


def _special_register(op: gpu.IndexQueryOp, register: str) -> list[Operation]:
    read = llvm.CallIntrinsicOp(f"llvm.nvvm.read.ptx.sreg.{register}.{op.dimension.data}", [], [i32])
    widened = llvm.ZExtOp(read.results[0], i64)
    as_index = UnrealizedConversionCastOp.get([widened.res], [IndexType()])
    return [read, widened, as_index]


def _replace(op: Operation, new_ops: list[Operation], value: SSAValue | None) -> None:
    Rewriter.insert_op(new_ops, InsertPoint.before(op))
    if value is not None:
        value.name_hint = op.results[0].name_hint
        op.results[0].replace_all_uses_with(value)
    op.detach()
    op.erase()


MMA_INTRINSIC = {
    "f16": "llvm.nvvm.mma.m16n8k16.row.col.f32.f32",
    "bf16": "llvm.nvvm.mma.m16n8k16.row.col.bf16",
    "f32": "llvm.nvvm.mma.m16n8k8.row.col.tf32",
}
"""`mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32` and
`mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32` in LLVM 22's spelling."""


def _mma(op: loop.MmaSyncOp) -> tuple[list[Operation], list[SSAValue]]:
    """`mma.sync`: f16 pairs go as `<2 x half>`, bf16 pairs and TF32 (f32) registers bitcast to
    i32 (LLVM's operands)."""
    operand_type = op.operand_type()
    element = str(operand_type.element_type) if isinstance(operand_type, VectorType) else str(operand_type)
    ops: list[Operation] = []
    registers: list[SSAValue] = []
    for value in (*op.a, *op.b):
        if element in ("bf16", "f32"):
            packed = llvm.BitcastOp(value, i32)
            ops.append(packed)
            value = packed.result
        registers.append(value)
    call = llvm.CallIntrinsicOp(MMA_INTRINSIC[element], [*registers, *op.c], [llvm.LLVMStructType.from_type_list([f32] * 4)])
    fields = [llvm.ExtractValueOp(DenseArrayBase.from_list(i64, [index]), call.results[0], f32) for index in range(4)]
    return [*ops, call, *fields], [field.res for field in fields]


def _round_tf32(op: loop.RoundTf32Op) -> tuple[list[Operation], list[SSAValue]]:
    """`cvt.rna.tf32.f32` (`llvm.nvvm.f2tf32.rna`, an i32 result) bitcast back to f32."""
    call = llvm.CallIntrinsicOp("llvm.nvvm.f2tf32.rna", [op.value], [i32])
    as_float = llvm.BitcastOp(call.results[0], f32)
    return [call, as_float], [as_float.result]


def _ldmatrix(op: loop.LdMatrixOp) -> tuple[list[Operation], list[SSAValue]]:
    """`ldmatrix` from the shared global the buffer became: a GEP by the row-major linear index,
    `llvm.nvvm.ldmatrix.sync.aligned.m8n8.x{1,2,4}[.trans].b16.p3`, and each i32 register bitcast
    to the `vector<2xT>` that `loop.mma_sync` takes (LLVM folds the casts away)."""
    base = pointer_base(op.buffer)
    if not is_shared_pointer(base):
        raise PassFailure(op, "loop.ldmatrix reads only shared memory on the GPU: its buffer must be a shared allocation (run loop-promote-shared)")
    memref_type = op.buffer.type
    assert isinstance(memref_type, MemRefType)
    ops, address = element_address(base, memref_type, op.indices)
    count = op.matrices
    name = f"llvm.nvvm.ldmatrix.sync.aligned.m8n8.x{count}{'.trans' if op.transposed else ''}.b16.p3"
    result_type = i32 if count == 1 else llvm.LLVMStructType.from_type_list([i32] * count)
    call = llvm.CallIntrinsicOp(name, [address], [result_type])
    ops.append(call)
    registers: list[SSAValue] = []
    for position, register in enumerate(op.registers):
        value = call.results[0]
        if count != 1:
            field = llvm.ExtractValueOp(DenseArrayBase.from_list(i64, [position]), value, i32)
            ops.append(field)
            value = field.res
        as_pair = llvm.BitcastOp(value, register.type)
        ops.append(as_pair)
        registers.append(as_pair.result)
    return ops, registers


def _wgmma(op: loop.WgmmaOp) -> tuple[list[Operation], list[SSAValue]]:
    """`wgmma.mma_async` steps on the swizzled shared buffers (`wgmma_nvvm.py`)."""
    buffers = (op.rhs,) if op.lhs is None else (op.lhs, op.rhs)
    bases = [pointer_base(buffer) for buffer in buffers]
    if not all(is_shared_pointer(base) and swizzle_of(buffer) for base, buffer in zip(bases, buffers)):
        raise PassFailure(op, "loop.wgmma reads only swizzled shared memory on the GPU: its buffers must be shared allocations with mlc.swizzle (run loop-promote-shared)")
    return lower_wgmma(op, *([None] if op.lhs is None else []), *bases)  # type: ignore[arg-type]


def _async_copy(op: loop.AsyncCopyOp) -> list[Operation]:
    """`cp.async.cg.shared.global` (16 bytes; `.ca` below) from the parameter's global address to
    the shared global's, with a source size of 0 bytes (zero fill) where `if` is false."""
    source, destination = pointer_base(op.source), pointer_base(op.destination)
    if not is_shared_pointer(destination):
        raise PassFailure(op, "loop.async_copy writes only shared memory: its destination must be a shared allocation")
    if source is None or not isinstance(source.owner, Block):
        raise PassFailure(op, "loop.async_copy reads a kernel parameter in global memory on the GPU")
    source_ops, source_address = element_address(source, op.source.type, op.source_indices)  # type: ignore[arg-type]
    address = swizzled_address if swizzle_of(op.destination) else element_address
    destination_ops, destination_address = address(destination, op.destination.type, op.destination_indices)  # type: ignore[arg-type]
    global_address = AddrSpaceCastOp(source_address, llvm.LLVMPointerType(IntAttr(GLOBAL_MEMORY_SPACE)))
    ops = [*source_ops, *destination_ops, global_address]
    size = op.byte_count()
    name = f"llvm.nvvm.cp.async.{'cg' if size == 16 else 'ca'}.shared.global.{size}"
    arguments = [destination_address, global_address.results[0]]
    if op.inside is not None:
        full, empty = arith.ConstantOp(IntegerAttr(size, i32)), arith.ConstantOp(IntegerAttr(0, i32))
        source_size = arith.SelectOp(op.inside, full.result, empty.result)
        ops += [full, empty, source_size]
        arguments.append(source_size.result)
        name += ".s"
    return [*ops, llvm.CallIntrinsicOp(name, arguments, [])]


def _lower_async_copies(function: llvm.FuncOp, proxy_fence: bool) -> None:
    """Async copies, once the kernel's parameters are pointers (a copy needs its source's address);
    with `proxy_fence` (wgmma reads the copies) each wait is followed by `fence.proxy.async`."""
    for op in list(function.walk()):
        if isinstance(op, loop.AsyncCopyOp):
            _replace(op, _async_copy(op), None)
        elif isinstance(op, loop.AsyncCommitOp):
            _replace(op, [llvm.CallIntrinsicOp("llvm.nvvm.cp.async.commit.group", [], [])], None)
        elif isinstance(op, loop.AsyncWaitOp):
            pending = arith.ConstantOp(IntegerAttr(op.groups_in_flight, i32))
            fence = [fence_proxy_async()] if proxy_fence else []
            _replace(op, [pending, llvm.CallIntrinsicOp("llvm.nvvm.cp.async.wait.group", [pending.result], []), *fence], None)


def lower_kernel_body(function: gpu.FuncOp) -> None:
    grid, block = function.grid_shape(), function.block_shape()
    for op in list(function.walk()):
        if isinstance(op, gpu.ShuffleOp):
            new_ops, result = lower_shuffle(op)
            _replace(op, new_ops, result)
        elif isinstance(op, loop.WgmmaOp | loop.WgmmaWaitOp):
            new_ops, results = _wgmma(op) if isinstance(op, loop.WgmmaOp) else lower_wgmma_wait(op)
            for old, new in zip(op.results, results):
                new.name_hint = old.name_hint
            Rewriter.replace_op(op, new_ops, results)
        elif isinstance(op, loop.MmaSyncOp | loop.LdMatrixOp | loop.RoundTf32Op):
            new_ops, results = _mma(op) if isinstance(op, loop.MmaSyncOp) else _ldmatrix(op) if isinstance(op, loop.LdMatrixOp) else _round_tf32(op)
            for old, new in zip(op.results, results):
                new.name_hint = old.name_hint
            Rewriter.replace_op(op, new_ops, results)
        elif isinstance(op, gpu.ThreadIdOp | gpu.BlockIdOp):
            new_ops = _special_register(op, _REGISTERS[type(op)])
            _replace(op, new_ops, new_ops[-1].results[0])
        elif isinstance(op, gpu.BlockDimOp | gpu.GridDimOp):
            sizes = block if isinstance(op, gpu.BlockDimOp) else grid
            constant = arith.ConstantOp(IntegerAttr(sizes[op.axis()], IndexType()))
            _replace(op, [constant], constant.result)
        elif isinstance(op, gpu.BarrierOp):
            _replace(op, [llvm.CallIntrinsicOp(BARRIER_INTRINSIC, [], [])], None)


STATIC_SHARED_MEMORY_BYTES = 48 * 1024
"""The most static shared memory a kernel may declare; beyond it the block's shared memory is dynamic."""


def shared_memory_to_globals(kernel: gpu.FuncOp, module: ModuleOp) -> None:
    """Each shared `memref.alloca` becomes addrspace(3) memory the kernel reads with `llvm.mlir.addressof`.

    Up to `STATIC_SHARED_MEMORY_BYTES` in all, each allocation is a global of its own, 16-byte
    aligned, named after the kernel. Beyond that (a deep pipeline of copies), CUDA needs dynamic
    shared memory: one external `[0 x i8]` global, each allocation at a 16-byte aligned offset in
    it, and `mlc.dynamic_shared_bytes` on the kernel (and the global) tells the runtime (and the
    interpreter) how many bytes to give each block.
    """
    allocations = []
    for allocation in [op for op in kernel.walk() if isinstance(op, memref.AllocaOp)]:
        memref_type = allocation.memref.type
        assert isinstance(memref_type, MemRefType)
        space = memref_type.memory_space
        if not (isinstance(space, IntegerAttr) and space.value.data == SHARED_MEMORY_SPACE):
            continue
        if not memref_type.has_static_shape():
            raise PassFailure(allocation, "shared memory needs a static shape")
        allocations.append((allocation, memref_type, math.prod(memref_type.get_shape())))
    total = 0
    for allocation, memref_type, count in allocations:
        total = -(-total // _alignment(allocation)) * _alignment(allocation) + count * byte_width(memref_type.element_type)
    total = -(-total // 16) * 16
    if total > STATIC_SHARED_MEMORY_BYTES:
        _dynamic_shared_memory(kernel, allocations, total)
        return
    for index, (allocation, memref_type, count) in enumerate(allocations):
        name = f"{kernel.sym_name.data}_shared_{index}"
        alignment = _alignment(allocation)
        global_op = llvm.GlobalOp(llvm.LLVMArrayType(count, memref_type.element_type), name, "internal", addr_space=SHARED_MEMORY_SPACE, alignment=alignment)
        Rewriter.insert_op(global_op, InsertPoint.before(kernel))
        address = llvm.AddressOfOp(name, llvm.LLVMPointerType(IntAttr(SHARED_MEMORY_SPACE)))
        as_memref = _as_memref(allocation, address.result, memref_type)
        _replace(allocation, [address, as_memref], as_memref.results[0])


def _alignment(allocation: memref.AllocaOp) -> int:
    """16 bytes (vector copies), 1024 for a swizzled buffer (the swizzle pattern's period), 128
    for the destination of a bulk tensor copy (what the copy engine needs)."""
    if attributes.SWIZZLE.read(allocation) is not None:
        return SWIZZLE_ATOM_BYTES
    bulk_copied = any(isinstance(use.operation, loop.TmaLoadOp) and use.operation.destination == allocation.memref for use in allocation.memref.uses)
    return TMA_DESTINATION_ALIGNMENT if bulk_copied else 16


def _as_memref(allocation: memref.AllocaOp, address: SSAValue, memref_type: MemRefType) -> UnrealizedConversionCastOp:
    """The memref view of the allocation's shared address; it keeps `mlc.swizzle` for its accesses."""
    as_memref = UnrealizedConversionCastOp.get([address], [memref_type])
    swizzle = attributes.SWIZZLE.read(allocation)
    if swizzle is not None:
        attributes.SWIZZLE.write(as_memref, swizzle)
    return as_memref


def _dynamic_shared_memory(kernel: gpu.FuncOp, allocations: list[tuple[memref.AllocaOp, MemRefType, int]], total: int) -> None:
    name = f"{kernel.sym_name.data}_dynamic_shared"
    alignment = max(_alignment(allocation) for allocation, _, _ in allocations)
    global_op = llvm.GlobalOp(llvm.LLVMArrayType(0, IntegerType(8)), name, "external", addr_space=SHARED_MEMORY_SPACE, alignment=alignment)
    attributes.DYNAMIC_SHARED_BYTES.write(global_op, IntegerAttr(total, i64))
    attributes.DYNAMIC_SHARED_BYTES.write(kernel, IntegerAttr(total, i64))
    Rewriter.insert_op(global_op, InsertPoint.before(kernel))
    offset = 0
    pointer = llvm.LLVMPointerType(IntAttr(SHARED_MEMORY_SPACE))
    for allocation, memref_type, count in allocations:
        offset = -(-offset // _alignment(allocation)) * _alignment(allocation)
        base = llvm.AddressOfOp(name, pointer)
        address = llvm.GEPOp(base.result, [offset], IntegerType(8), result_type=pointer, inbounds=True)
        as_memref = _as_memref(allocation, address.result, memref_type)
        _replace(allocation, [base, address, as_memref], as_memref.results[0])
        offset += count * byte_width(memref_type.element_type)


@dataclass(frozen=True)
class ConvertGpuToNvvm(ModulePass):
    """Turn mlc_gpu kernels into llvm.func kernels with NVVM intrinsics."""

    name = "convert-gpu-to-nvvm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in [k for k in op.walk() if isinstance(k, gpu.FuncOp)]:
            if attributes.BLOCK_SYNCHRONOUS.read(kernel) is not None:
                raise PassFailure(
                    kernel, "its shared memory is ordered only as at the loop level; run gpu-insert-barriers before convert-gpu-to-nvvm"
                )
            uses_wgmma = prepare_wgmma_kernel(kernel)
            shared_memory_to_globals(kernel, op)
            lower_kernel_body(kernel)
            nvvm_attributes = {
                "nvvm.kernel": UnitAttr(),
                "nvvm.maxntid": DenseArrayBase.from_list(i32, kernel.block_shape()),
            }
            blocks = attributes.MIN_BLOCKS_PER_MULTIPROCESSOR.read(kernel)
            if isinstance(blocks, IntegerAttr):
                nvvm_attributes["nvvm.minctasm"] = IntegerAttr(blocks.value.data, i32)
            function = kernel_to_llvm_func(kernel, nvvm_attributes)
            replace_terminators(function, gpu.ReturnOp)
            _lower_async_copies(function, uses_wgmma)
            if lower_mbarriers_and_tma(function) or uses_wgmma:
                attributes.REQUIRED_ARCH.write(function, StringAttr("sm_90a"))
            Rewriter.insert_op(function, InsertPoint.before(kernel))
            kernel.detach()
            kernel.erase()
