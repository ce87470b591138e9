"""`loop.mbarrier_*` and `loop.tma_load` in NVVM terms (sm_90): mbarriers and bulk tensor copies.

Run by convert-gpu-to-nvvm once the kernel is an `llvm.func` (a copy needs its source's parameter
and the map parameters are appended to the function), after shared memory became globals:

* `loop.mbarrier_init` -> `llvm.nvvm.mbarrier.init.shared(bar, count)`, then
  `fence.proxy.async.shared::cta` so that the copy engine (the async proxy) sees the barrier.
* `loop.mbarrier_arrive` -> `llvm.nvvm.mbarrier.arrive.expect.tx.scope.cta.space.cta(bar, bytes)`
  with `expect_tx`, else `mbarrier.arrive.shared::cta.b64` (inline PTX).
* `loop.mbarrier_wait` -> a `mbarrier.try_wait.parity.shared::cta.b64` loop in inline PTX (its
  label is local to the asm's `{ }` scope, so the asm may be duplicated by unrolling), with a
  memory clobber: no shared-memory access moves above the wait.
* `loop.warp_sync` -> `llvm.nvvm.bar.warp.sync(0xffffffff)` (`__syncwarp()`).
* `loop.tma_load` -> `llvm.nvvm.cp.async.bulk.tensor.g2s.tile.Nd(dst, bar, map, coordinates
  innermost first, ...)` through a tensor map. Each distinct (source parameter, swizzle, box)
  becomes one trailing `!llvm.ptr` parameter of the kernel and one entry of `mlc.tensor_maps`,
  which the runtime reads to encode the map (`mlc/runtime/tensor_maps.py`); the kernel acquires
  each map once at entry with `fence.proxy.tensormap::generic.acquire.gpu` (the runtime writes
  maps through the generic proxy). A destination swizzled like wgmma reads it (`mlc.swizzle` =
  128, `wgmma_nvvm`'s layout: blocks of 64 columns, each R rows of 128 bytes) is filled by one
  R x 64 box per column block, with the map's 128-byte swizzle, which is exactly that layout; any
  other destination by one box of its trailing dimensions without swizzle (its allocation is
  128-byte aligned by convert-gpu-to-nvvm, as the copy engine needs).

* `scf.if {mlc.warp_roles = array<i64: producer, consumer>}` (a warp-specialized kernel's roles)
  -> `setmaxnreg.dec.sync.aligned.u32 producer` first in its then-region and
  `setmaxnreg.inc.sync.aligned.u32 consumer` first in its else-region (0: no `setmaxnreg`), so
  that the copy-issuing warpgroup gives registers to the warpgroups that hold accumulators. The
  attribute stays for the interpreter (the regions run as coroutines).

Preconditions: the copy's source is a kernel parameter (global memory), the destination and the
barriers are shared allocations; a swizzled destination has 16-bit elements, the box's origin at
row 0 and column 0 of its matrix (constant indices) and 8k rows of 64m columns.
"""

from __future__ import annotations

from xdsl.dialects import arith, llvm, scf
from xdsl.dialects.builtin import ArrayAttr, DenseArrayBase, DictionaryAttr, IntAttr, IntegerAttr, IndexType, MemRefType, i1, i16, i32, i64
from xdsl.ir import Block, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from mlc.diagnostics import PassFailure
from mlc.dialects import attributes
from mlc.dialects.element_types import byte_width
from mlc.dialects.llvm_extra import AddrSpaceCastOp
from mlc.dialects.loop import ops as loop
from mlc.transforms.analysis.affine_index import constant_index
from mlc.transforms.lowering.llvm_kernel import element_address, is_shared_pointer, pointer_base
from mlc.transforms.lowering.wgmma_nvvm import SWIZZLE_ROW_BYTES, fence_proxy_async, swizzle_of, swizzled_address

TMA_FENCE = "fence.proxy.tensormap::generic.acquire.gpu [$0], 128;"
ARRIVE = "mbarrier.arrive.shared::cta.b64 _, [$0];"
WAIT = "{ .reg .pred done; wait: mbarrier.try_wait.parity.shared::cta.b64 done, [$0], $1; @!done bra wait; }"
TMA_DESTINATION_ALIGNMENT = 128
"""The alignment in bytes of a bulk tensor copy's shared destination without swizzle."""
CLUSTER_MEMORY_SPACE = 7
"""`shared::cluster`: the address space of a bulk copy's destination operand."""

MapKey = tuple[int, int, tuple[int, ...]]
"""(source parameter, swizzle span in bytes, box outermost first): one tensor map."""


def _shared_address(op: Operation, memref_value: SSAValue, indices: list[SSAValue], what: str) -> tuple[list[Operation], SSAValue]:
    base = pointer_base(memref_value)
    if not is_shared_pointer(base):
        raise PassFailure(op, f"{op.name}'s {what} must be a shared allocation")
    return element_address(base, memref_value.type, indices)  # type: ignore[arg-type]


def _as_i32(value: SSAValue) -> tuple[list[Operation], SSAValue]:
    if isinstance(value.type, IndexType):
        cast = arith.IndexCastOp(value, i32)
        return [cast], cast.result
    as_integer = llvm.PtrToIntOp(value, i32)
    return [as_integer], as_integer.results[0]


class _TmaLowering:
    """Lowers the ops of one kernel; collects its tensor maps."""

    def __init__(self, function: llvm.FuncOp) -> None:
        self.function = function
        self.entry: Block = function.body.blocks[0]
        self.parameters = len(self.entry.args)
        self.maps: dict[MapKey, SSAValue] = {}
        self.views: dict[MapKey, tuple[int, ...]] = {}

    def map_parameter(self, key: MapKey) -> SSAValue:
        if key not in self.maps:
            self.maps[key] = self.entry.insert_arg(llvm.LLVMPointerType(), len(self.entry.args))
            self.maps[key].name_hint = f"map{len(self.maps) - 1}"
        return self.maps[key]

    def lower(self, op: Operation) -> list[Operation]:
        if isinstance(op, loop.MbarrierInitOp):
            ops, barrier = _shared_address(op, op.barrier, list(op.indices), "barrier")
            count = arith.ConstantOp(IntegerAttr(op.arrivals, i32))
            return [*ops, count, llvm.CallIntrinsicOp("llvm.nvvm.mbarrier.init.shared", [barrier, count.result], []), fence_proxy_async()]
        if isinstance(op, loop.MbarrierArriveOp):
            ops, barrier = _shared_address(op, op.barrier, list(op.indices), "barrier")
            if op.expect_tx is not None:
                size = arith.ConstantOp(IntegerAttr(op.transaction_bytes, i32))
                name = "llvm.nvvm.mbarrier.arrive.expect.tx.scope.cta.space.cta"
                return [*ops, size, llvm.CallIntrinsicOp(name, [barrier, size.result], [i64])]
            cast_ops, address = _as_i32(barrier)
            return [*ops, *cast_ops, llvm.InlineAsmOp(ARRIVE, "r,~{memory}", [address], [], has_side_effects=True)]
        if isinstance(op, loop.MbarrierWaitOp):
            ops, barrier = _shared_address(op, op.barrier, list(op.indices), "barrier")
            address_ops, address = _as_i32(barrier)
            parity_ops, parity = _as_i32(op.parity)
            wait = llvm.InlineAsmOp(WAIT, "r,r,~{memory}", [address, parity], [], has_side_effects=True)
            return [*ops, *address_ops, *parity_ops, wait]
        assert isinstance(op, loop.TmaLoadOp)
        return self.tma_load(op)

    def tma_load(self, op: loop.TmaLoadOp) -> list[Operation]:
        source = pointer_base(op.source)
        if source is None or not isinstance(source.owner, Block) or source.owner is not self.entry or source.index >= self.parameters:  # type: ignore[attr-defined]
            raise PassFailure(op, "loop.tma_load reads a kernel parameter in global memory on the GPU")
        ops, barrier = _shared_address(op, op.barrier, list(op.barrier_indices), "barrier")
        destination_type = op.destination.type
        assert isinstance(destination_type, MemRefType)
        base = pointer_base(op.destination)
        if not is_shared_pointer(base):
            raise PassFailure(op, "loop.tma_load writes only shared memory: its destination must be a shared allocation")
        assert base is not None
        box = op.box()
        swizzle = swizzle_of(op.destination) or 0
        coordinates = list(reversed(list(op.source_indices)))
        copies: list[tuple[list[Operation], SSAValue, int]] = []  # (ops, destination, column offset)
        if swizzle:
            rows, columns = box[-2:]
            block = SWIZZLE_ROW_BYTES // byte_width(destination_type.element_type)
            if len(box) != 2 or rows % 8 or columns % block or not all(constant_index(index) == 0 for index in list(op.destination_indices)[-2:]):
                raise PassFailure(op, f"a bulk copy into a swizzled buffer copies whole R x C matrices (8k rows, {block}m columns of {destination_type.element_type}) from row 0, column 0")
            box = (rows, block)
            outer = list(op.destination_indices)[:-2]
            for column in range(0, columns, block):
                offset = arith.ConstantOp(IntegerAttr(column, IndexType()))
                zero = op.destination_indices[-2]
                address_ops, address = swizzled_address(base, destination_type, [*outer, zero, offset.result])
                copies.append(([offset, *address_ops], address, column))
        else:
            address_ops, address = element_address(base, destination_type, list(op.destination_indices))
            copies.append((address_ops, address, 0))
        key = (source.index, swizzle, box)  # type: ignore[attr-defined]
        tensor_map = self.map_parameter(key)
        source_type = op.source.type
        assert isinstance(source_type, MemRefType)  # the op's verifier: the kernel's view of the buffer the launch passes
        self.views[key] = tuple(source_type.get_shape())
        name = f"llvm.nvvm.cp.async.bulk.tensor.g2s.tile.{len(box)}d"
        flags = [arith.ConstantOp(IntegerAttr(0, i16)), arith.ConstantOp(IntegerAttr(0, i64)), arith.ConstantOp(IntegerAttr(0, i1)), arith.ConstantOp(IntegerAttr(0, i32))]
        ops += flags
        innermost_ops, innermost = _as_i32(coordinates[0])
        ops += innermost_ops
        rest: list[SSAValue] = []
        for coordinate in coordinates[1:]:
            cast_ops, value = _as_i32(coordinate)
            ops += cast_ops
            rest.append(value)
        for address_ops, address, column in copies:
            column_ops: list[Operation] = []
            first = innermost
            if column:
                shift = arith.ConstantOp(IntegerAttr(column, i32))
                moved = arith.AddiOp(innermost, shift.result)
                column_ops, first = [shift, moved], moved.result
            target = AddrSpaceCastOp(address, llvm.LLVMPointerType(IntAttr(CLUSTER_MEMORY_SPACE)))
            arguments = [target.results[0], barrier, tensor_map, first, *rest, *(flag.result for flag in flags[:2]), flags[2].result, flags[2].result, flags[3].result]
            ops += [*address_ops, *column_ops, target, llvm.CallIntrinsicOp(name, arguments, [])]
        return ops

    def finish(self) -> None:
        """The map parameters in the signature, `mlc.tensor_maps`, the maps' fences at entry."""
        if not self.maps:
            return
        inputs = [argument.type for argument in self.entry.args]
        self.function.properties["function_type"] = llvm.LLVMFunctionType(inputs, llvm.LLVMVoidType())
        argument_attributes = self.function.arg_attrs
        old = list(argument_attributes.data) if argument_attributes is not None else [DictionaryAttr({})] * self.parameters
        self.function.arg_attrs = ArrayAttr([*old, *(DictionaryAttr({}) for _ in self.maps)])
        attributes.TENSOR_MAP_VIEWS.write(self.function, ArrayAttr([DenseArrayBase.from_list(i64, list(self.views[key])) for key in self.maps]))
        attributes.TENSOR_MAPS.write(self.function, ArrayAttr([DenseArrayBase.from_list(i64, [source, swizzle, *box]) for source, swizzle, box in self.maps]))
        fences = [llvm.InlineAsmOp(TMA_FENCE, "l,~{memory}", [parameter], [], has_side_effects=True) for parameter in self.maps.values()]
        first = self.entry.first_op
        assert first is not None
        Rewriter.insert_op(fences, InsertPoint.before(first))


TMA_OPS = (loop.MbarrierInitOp, loop.MbarrierArriveOp, loop.MbarrierWaitOp, loop.TmaLoadOp)


def _set_register_counts(roles: scf.IfOp) -> None:
    """`setmaxnreg` first in each role's region, as `mlc.warp_roles` asks."""
    counts = attributes.WARP_ROLES.integers(roles)
    assert counts is not None
    for region, direction, count in zip((roles.true_region, roles.false_region), ("dec", "inc"), counts):
        first = region.block.first_op if region.blocks else None
        if count and first is not None:
            asm = llvm.InlineAsmOp(f"setmaxnreg.{direction}.sync.aligned.u32 {count};", "~{memory}", [], [], has_side_effects=True)
            Rewriter.insert_op(asm, InsertPoint.before(first))


def lower_mbarriers_and_tma(function: llvm.FuncOp) -> bool:
    """Lowers the kernel's mbarrier ops and bulk copies; True if it had any."""
    ops = [op for op in function.walk() if isinstance(op, TMA_OPS)]
    for roles in [op for op in function.walk() if isinstance(op, scf.IfOp) and attributes.WARP_ROLES.name in op.attributes]:
        _set_register_counts(roles)
    for warp_sync in [op for op in function.walk() if isinstance(op, loop.WarpSyncOp)]:
        every_lane = arith.ConstantOp(IntegerAttr(-1, i32))
        Rewriter.insert_op([every_lane, llvm.CallIntrinsicOp("llvm.nvvm.bar.warp.sync", [every_lane.result], [])], InsertPoint.before(warp_sync))
        warp_sync.detach()
        warp_sync.erase()
    if not ops:
        return False
    lowering = _TmaLowering(function)
    for op in ops:
        Rewriter.insert_op(lowering.lower(op), InsertPoint.before(op))
        op.detach()
        op.erase()
    lowering.finish()
    return True
