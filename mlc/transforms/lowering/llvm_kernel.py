"""Turning a kernel op (`loop.kernel`, `mlc_gpu.func`) into an `llvm.func` over bare pointers.

Shared by `convert-gpu-to-nvvm` and `convert-loop-to-cpu`. The body is moved unchanged; each
memref parameter becomes an `!llvm.ptr` (`!llvm.ptr<3>` for shared memory) and is cast back to
its memref type with `builtin.unrealized_conversion_cast` at entry, for the memref conversion to
consume later. Discardable attributes (such as `mlc.arg_alignment`) are kept.

Every global-memory parameter is marked `llvm.noalias`: mlc launches a kernel on distinct buffers
wherever it writes one of them (graph-plan-memory does no in-place reuse), and only reads may
overlap, which `noalias` allows. LLVM then infers which parameters are only read, and the NVPTX
backend reads those through the non-coherent cache (`ld.global.nc`): 3% on a 4096^3 matmul (H200).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from xdsl.dialects import arith, llvm
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, IndexType, IntAttr, IntegerAttr, MemRefType, UnitAttr, UnrealizedConversionCastOp, i64
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

SHARED_MEMORY_SPACE = 3


def pointer_type_for(memref_type: Attribute) -> llvm.LLVMPointerType:
    """The bare pointer a memref becomes: address space 3 for shared memory, else generic."""
    assert isinstance(memref_type, MemRefType)
    space = memref_type.memory_space
    if isinstance(space, IntegerAttr) and space.value.data == SHARED_MEMORY_SPACE:
        return llvm.LLVMPointerType(IntAttr(SHARED_MEMORY_SPACE))
    return llvm.LLVMPointerType()


def kernel_to_llvm_func(kernel: Operation, attributes: Mapping[str, Attribute]) -> llvm.FuncOp:
    """An external-linkage `llvm.func` with `kernel`'s body; `kernel` is left empty."""
    old_block = kernel.regions[0].block
    pointer_types = [pointer_type_for(argument.type) for argument in old_block.args]
    new_block = Block(arg_types=pointer_types)
    casts = []
    for old_argument, pointer in zip(old_block.args, new_block.args):
        pointer.name_hint = old_argument.name_hint
        cast = UnrealizedConversionCastOp.get([pointer], [old_argument.type])
        cast.results[0].name_hint = old_argument.name_hint
        old_argument.replace_all_uses_with(cast.results[0])
        casts.append(cast)
    new_block.add_ops(casts)
    for op in list(old_block.ops):
        op.detach()
        new_block.add_op(op)
    function = llvm.FuncOp(
        kernel.sym_name.data,  # type: ignore[attr-defined]
        llvm.LLVMFunctionType(pointer_types, llvm.LLVMVoidType()),
        linkage=llvm.LinkageAttr("external"),
        body=Region(new_block),
        extra_attrs={**kernel.attributes, **attributes},
    )
    function.arg_attrs = ArrayAttr([_argument_attributes(pointer) for pointer in pointer_types])
    return function


def _argument_attributes(pointer: llvm.LLVMPointerType) -> DictionaryAttr:
    if isinstance(pointer.addr_space, IntAttr) and pointer.addr_space.data == SHARED_MEMORY_SPACE:
        return DictionaryAttr({})
    return DictionaryAttr({"llvm.noalias": UnitAttr()})


def replace_terminators(function: llvm.FuncOp, terminator_type: type[Operation]) -> None:
    """Replaces the kernel's return ops with `llvm.return`."""
    for op in list(function.walk()):
        if isinstance(op, terminator_type):
            Rewriter.insert_op(llvm.ReturnOp(), InsertPoint.before(op))
            op.detach()
            op.erase()


def pointer_base(memref_value: SSAValue) -> SSAValue | None:
    """The `!llvm.ptr` a memref was cast from (a shared global's address, a kernel parameter)."""
    cast = memref_value.owner
    return cast.inputs[0] if isinstance(cast, UnrealizedConversionCastOp) and len(cast.inputs) == 1 else None


def is_shared_pointer(value: SSAValue | None) -> bool:
    """A pointer into the block's shared memory (a shared global's address, or an offset in it)."""
    return value is not None and isinstance(value.owner, llvm.AddressOfOp | llvm.GEPOp) and isinstance(value.type, llvm.LLVMPointerType) and value.type.addr_space == IntAttr(SHARED_MEMORY_SPACE)


def element_address(base: SSAValue, memref_type: MemRefType, indices: Sequence[SSAValue]) -> tuple[list[Operation], SSAValue]:
    """A GEP from `base` by the row-major linear index of `indices` in `memref_type`."""
    ops: list[Operation] = []
    offset: SSAValue | None = None
    stride = 1
    for index, size in reversed(list(zip(indices, memref_type.get_shape()))):
        term = index
        if stride != 1:
            constant = arith.ConstantOp(IntegerAttr(stride, IndexType()))
            product = arith.MuliOp(index, constant.result)
            ops += [constant, product]
            term = product.result
        if offset is not None:
            total = arith.AddiOp(offset, term)
            ops.append(total)
            term = total.result
        offset, stride = term, stride * size
    assert offset is not None
    wide = arith.IndexCastOp(offset, i64)
    address = llvm.GEPOp(base, [llvm.GEP_USE_SSA_VAL], memref_type.element_type, ssa_indices=[wide.result], result_type=base.type, inbounds=True)
    return [*ops, wide, address], address.result
