"""convert-memref-to-llvm: memref accesses inside kernels become pointer arithmetic and loads.

Memrefs are bare pointers (see `llvm_conversion.convert_type`): a kernel's buffers arrive as
`!llvm.ptr` parameters cast to memrefs at entry, and those pointers are used directly.

    %v = memref.load %m[%i, %j] : memref<4x8xf32>
      ->  %s = llvm.mlir.constant(8) : i64
          %r = llvm.mul %i, %s : i64
          %o = llvm.add %r, %j : i64
          %p = llvm.getelementptr inbounds %ptr[%o] : (!llvm.ptr, i64) -> !llvm.ptr, f32
          %v = llvm.load %p {alignment = 4 : i64} : !llvm.ptr -> f32

* `memref.load` / `memref.store`: the row-major linear index (static strides, multiplications by
  1 left out), a GEP on the element type, and `llvm.load` / `llvm.store` with the element's
  natural alignment. A rank-0 memref is accessed through its pointer itself.
* `memref.alloca` (private memory: space 5, or no space on the CPU) becomes an `llvm.alloca` of
  the element count, hoisted to the entry block of the enclosing `llvm.func` (LLVM promotes only
  static entry-block allocas to registers, and an alloca in a loop would grow the stack on every
  iteration; the contents of a fresh alloca are undefined, so reusing one is a refinement). Its
  alignment is the largest of the op's `alignment`, the element's and 16 bytes for buffers of at
  least 16 bytes, so that the 16-byte vector accesses the tile-to-loop lowering marks hold.

Preconditions and scope: see `llvm_conversion`. Limits: memrefs must be static and have the
identity layout; shared-memory allocation (`memref.alloca` in space 3), `memref.alloc`,
`memref.dealloc`, `memref.get_global` and the view ops (`subview`, `cast`, ...) inside kernels
are refused with a diagnostic. Host functions keep their memref ops.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import llvm, memref
from xdsl.dialects.builtin import IntegerAttr, MemRefType, ModuleOp, i64
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern
from xdsl.rewriter import InsertPoint

from mlc.dialects.kernels import element_count
from mlc.transforms.lowering.llvm_conversion import (
    PRIVATE_MEMORY_SPACE,
    OpLowering,
    RejectRemainingOps,
    bare_pointer_type,
    convert_kernel_ops,
    element_pointer,
    memory_space,
    natural_alignment,
)

MIN_BUFFER_ALIGNMENT = 16
"""Private buffers of at least this many bytes are aligned to it (the widest vector access)."""

_REASONS = {
    "memref.alloc": "cannot allocate on the heap inside a kernel; kernels allocate private buffers with memref.alloca",
    "memref.dealloc": "cannot free memory inside a kernel; kernels allocate private buffers with memref.alloca",
    "memref.get_global": "memref.get_global inside a kernel is not supported yet by convert-memref-to-llvm",
}


class LoadLowering(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.LoadOp, rewriter: PatternRewriter) -> None:
        lowering = OpLowering(op, rewriter)
        result_type = lowering.result_type()
        address = element_pointer(lowering, op.memref, op.indices)
        load = lowering.emit(llvm.LoadOp(address, result_type, alignment=natural_alignment(result_type)))
        lowering.replace([load.dereferenced_value])


class StoreLowering(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.StoreOp, rewriter: PatternRewriter) -> None:
        lowering = OpLowering(op, rewriter)
        value_type = lowering.type(op.value.type)
        address = element_pointer(lowering, op.memref, op.indices)
        value = lowering.operand(op.value)
        lowering.emit(llvm.StoreOp(value, address, alignment=natural_alignment(value_type)))
        lowering.erase()


def _alloca_alignment(op: memref.AllocaOp, memref_type: MemRefType) -> int:
    element_alignment = natural_alignment(memref_type.element_type)
    alignment = element_alignment
    if isinstance(op.alignment, IntegerAttr):
        alignment = max(alignment, op.alignment.value.data)
    if element_count(memref_type) * element_alignment >= MIN_BUFFER_ALIGNMENT:
        alignment = max(alignment, MIN_BUFFER_ALIGNMENT)
    return alignment


def _entry_point(op: Operation) -> InsertPoint:
    """Where a hoisted alloca goes: after the allocas (and constants) that start the enclosing
    llvm.func's entry block, so that allocas keep their program order; just before `op` outside
    an llvm.func."""
    function = op.parent_op()
    while function is not None and not isinstance(function, llvm.FuncOp):
        function = function.parent_op()
    if function is None or not function.body.blocks:
        return InsertPoint.before(op)
    entry = function.body.blocks[0]
    insert_point = InsertPoint.at_start(entry)
    for entry_op in entry.ops:
        if not isinstance(entry_op, llvm.AllocaOp | llvm.ConstantOp):
            break
        insert_point = InsertPoint.after(entry_op)
    return insert_point


class AllocaLowering(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.AllocaOp, rewriter: PatternRewriter) -> None:
        lowering = OpLowering(op, rewriter)
        memref_type = op.memref.type
        assert isinstance(memref_type, MemRefType)
        pointer_type = bare_pointer_type(lowering, memref_type)
        if memory_space(memref_type) not in (0, PRIVATE_MEMORY_SPACE):
            raise lowering.fail(
                f"cannot lower an allocation in memory space {memory_space(memref_type)}: only private "
                f"buffers (space {PRIVATE_MEMORY_SPACE} or none) become allocas"
            )
        element_type = lowering.type(memref_type.element_type)
        insert_point = _entry_point(op)
        size = llvm.ConstantOp(IntegerAttr(element_count(memref_type), 64), i64)
        alloca = llvm.AllocaOp(size, element_type, alignment=_alloca_alignment(op, memref_type))
        assert alloca.res.type == pointer_type
        rewriter.insert(size, insert_point)
        rewriter.insert(alloca, InsertPoint.after(size))
        lowering.replace([alloca.res])


@dataclass(frozen=True)
class ConvertMemRefToLLVM(ModulePass):
    """Lower memref loads, stores and private allocas inside kernels to llvm pointer operations.

    Memrefs become bare pointers (`!llvm.ptr<space>`); host functions keep their memref ops.
    """

    name = "convert-memref-to-llvm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        convert_kernel_ops(
            op,
            [
                LoadLowering(),
                StoreLowering(),
                AllocaLowering(),
                RejectRemainingOps("memref", self.name, _REASONS),
            ],
            dialect="memref",
        )
