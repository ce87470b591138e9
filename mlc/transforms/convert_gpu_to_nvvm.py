"""convert-gpu-to-nvvm: mlc_gpu kernels become NVVM-flavoured `llvm.func`s.

* `mlc_gpu.func` becomes an external `llvm.func` over bare pointers (see `llvm_kernel.py`)
  marked `nvvm.kernel`, with `nvvm.maxntid` set to its block size so that ptxas can budget
  registers; the backend turns these attributes into a PTX `.entry` with `.maxntid`.
* `mlc_gpu.thread_id` / `block_id` read NVVM's special registers (`tid`, `ctaid`) through
  `llvm.call_intrinsic`; `block_dim` / `grid_dim` become constants, since mlc kernels have a
  static launch shape (which also lets LLVM fold the index arithmetic).
* `mlc_gpu.barrier` becomes `llvm.nvvm.barrier0` (bar.sync 0).

Special registers are i32; they are zero-extended to i64 and cast to `index` with an unrealized
cast, which `convert-arith-to-llvm` and `reconcile-unrealized-casts` resolve. The kernel's
standard ops are left for the `convert-*-to-llvm` passes; `mlc_gpu.launch` stays for the runtime.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, llvm
from xdsl.dialects.builtin import (
    DenseArrayBase,
    IndexType,
    IntegerAttr,
    ModuleOp,
    UnitAttr,
    UnrealizedConversionCastOp,
    i32,
    i64,
)
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from mlc.dialects.gpu import ops as gpu
from mlc.transforms.llvm_kernel import kernel_to_llvm_func, replace_terminators

_REGISTERS = {gpu.ThreadIdOp: "tid", gpu.BlockIdOp: "ctaid"}
BARRIER_INTRINSIC = "llvm.nvvm.barrier0"


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


def lower_kernel_body(function: gpu.FuncOp) -> None:
    grid, block = function.grid_shape(), function.block_shape()
    for op in list(function.walk()):
        if isinstance(op, gpu.ThreadIdOp | gpu.BlockIdOp):
            new_ops = _special_register(op, _REGISTERS[type(op)])
            _replace(op, new_ops, new_ops[-1].results[0])
        elif isinstance(op, gpu.BlockDimOp | gpu.GridDimOp):
            sizes = block if isinstance(op, gpu.BlockDimOp) else grid
            constant = arith.ConstantOp(IntegerAttr(sizes[op.axis()], IndexType()))
            _replace(op, [constant], constant.result)
        elif isinstance(op, gpu.BarrierOp):
            _replace(op, [llvm.CallIntrinsicOp(BARRIER_INTRINSIC, [], [])], None)


@dataclass(frozen=True)
class ConvertGpuToNvvm(ModulePass):
    """Turn mlc_gpu kernels into llvm.func kernels with NVVM intrinsics."""

    name = "convert-gpu-to-nvvm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in [k for k in op.walk() if isinstance(k, gpu.FuncOp)]:
            lower_kernel_body(kernel)
            attributes = {
                "nvvm.kernel": UnitAttr(),
                "nvvm.maxntid": DenseArrayBase.from_list(i32, kernel.block_shape()),
            }
            function = kernel_to_llvm_func(kernel, attributes)
            replace_terminators(function, gpu.ReturnOp)
            Rewriter.insert_op(function, InsertPoint.before(kernel))
            kernel.detach()
            kernel.erase()
