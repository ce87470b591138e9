"""What the CPU's row and column lowerings (`rows_cpu.py`, `columns_cpu.py`) share.

The combiners a reduction of theirs may use (`IDENTITIES`, `combiner`), the tile ops their kernels
may hold (`vector_kernel_op_refusal`) and `CpuVectorLowering`: the kernel's uniform index code
cloned once per program, its reductions and stores lowered in program order, the streaming
accesses' prefetch marks (`cpu_prefetch.py` has the policy) and the choices recorded on the loop
kernel (`mlc.cpu_vector_width`, `mlc.cpu_accumulators`, `mlc.cpu_prefetch_bytes`,
`mlc.cpu_store_prefetch_bytes`).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import arith, vector
from xdsl.dialects.builtin import Float32Type, IntegerAttr, i1, i64
from xdsl.ir import Block, Operation, SSAValue

from mlc.dialects import attributes
from mlc.dialects.loop import ops as loop
from mlc.dialects.tile import ops as tile
from mlc.transforms.lowering.chunk_access import Emitter
from mlc.transforms.lowering.cpu_vector_code import ASSUMED_ALIGNMENT, cap_vector_alignment
from mlc.transforms.lowering.tile_kernel_lowering import TileKernelLowering

IDENTITIES: dict[type[Operation], float] = {
    arith.AddfOp: -0.0,
    arith.MaximumfOp: float("-inf"),
    arith.MinimumfOp: float("inf"),
    arith.MulfOp: 1.0,
}
"""The combiners a reduction may use, with the identity its accumulators start from."""


def tile_shape(value: SSAValue) -> tuple[int, ...]:
    """A tile value's shape."""
    return value.type.get_shape()  # type: ignore[attr-defined]


def combiner(reduce: tile.ReduceOp) -> type[Operation] | None:
    """The combiner's op class when the region is `yield op(a, b)` of one of `IDENTITIES`."""
    block = reduce.body.block
    ops = list(block.ops)
    if len(ops) != 2 or not isinstance(ops[1], tile.YieldOp) or type(ops[0]) not in IDENTITIES:
        return None
    if set(ops[0].operands) != set(block.args) or ops[1].operands[0] is not ops[0].results[0]:
        return None
    return type(ops[0])


VECTOR_KERNEL_OPS = (
    tile.LoadOp, tile.StoreOp, tile.MapOp, tile.ReduceOp, tile.BroadcastOp, tile.SplatOp, tile.InBoundsOp, tile.ProgramIdOp, tile.ReturnOp,
)
"""The tile ops of the kernels the CPU's row and column lowerings take."""


def stored_comparison(value: SSAValue) -> bool:
    """An i1 tile that a map yields straight from a comparison and that only stores use (the row
    kernels store it as the comparison's vector of i1: bytes in memory)."""
    owner = value.owner
    if not isinstance(owner, tile.MapOp) or value.type.element_type != i1:  # type: ignore[attr-defined]
        return False
    yielded = owner.body.block.last_op.operands[value.index]  # type: ignore[union-attr]
    return isinstance(yielded.owner, arith.CmpfOp) and all(isinstance(use.operation, tile.StoreOp) for use in value.uses)


def vector_kernel_op_refusal(op: Operation, shapes: set[tuple[int, ...]], kind: str) -> str | None:
    """Why one op stops the row or column lowering (`kind`: "rows", "columns"): a tile op of
    another kind, regions other than a map's or reduction's, a tile neither f32 nor a mask (nor,
    in rows, a stored comparison), or of none of the kernel's `shapes`; None if it does not."""
    if op.dialect_name() == "tile" and not isinstance(op, VECTOR_KERNEL_OPS):
        return f"{op.name} is not an op of {kind}"
    if not isinstance(op, tile.MapOp | tile.ReduceOp) and op.regions:
        return f"{op.name} has regions"
    for value in (*op.operands, *op.results):
        if not isinstance(value.type, tile.TileType):
            continue
        if not isinstance(value.type.element_type, Float32Type) and not isinstance(value.owner, tile.InBoundsOp) and not (
            kind == "rows" and stored_comparison(value)
        ):
            return "a tile that is neither f32, a tile.in_bounds mask nor a stored comparison"
        if tile_shape(value) not in shapes:
            return f"a tile of shape {tile_shape(value)} in a kernel of {kind} of tiles {sorted(shapes)}"
    return None


class CpuVectorLowering(TileKernelLowering):
    """What the CPU's row and column lowerings (`columns_cpu.py`) share: the uniform index code,
    the reductions and stores in program order (`_reduce`, `_store`), the recorded choices."""

    width: int
    prefetch_bytes: int = 0
    """`mlc.cpu_prefetch_bytes` of the kernel's streaming loads (0: none; row kernels set it)."""
    store_prefetch_bytes: int = 0
    """`mlc.cpu_store_prefetch_bytes`: the prefetch distance of its whole-chunk stores (0: none)."""

    def require_alignment(self, memref_value: SSAValue, alignment: int) -> None:
        super().require_alignment(memref_value, min(alignment, ASSUMED_ALIGNMENT))

    def clone_uniform_code(self, program: Emitter) -> None:
        """The kernel's scalar code outside tiles (index arithmetic), once per program."""
        for op in self.kernel.body.block.ops:
            if op.dialect_name() != "tile" and not any(isinstance(v.type, tile.TileType) for v in (*op.operands, *op.results)):
                clone = op.clone(value_mapper=self.values)
                program.builder.insert(clone)
                self.values.update(zip(op.results, clone.results))

    def lower_in_program_order(self) -> None:
        for op in self.kernel.body.block.ops:
            if isinstance(op, tile.ReduceOp):
                self._reduce(op)
            elif isinstance(op, tile.StoreOp):
                self._store(op)

    def _prefetch_streams(self, block: Block, skipped: set[SSAValue], scratch: set[SSAValue]) -> None:
        """Mark the column loop's vector stores and its loads of operands not in `skipped` (not
        `scratch` rows) with their prefetch distance (`mlc.cpu_prefetch_bytes`, the loads' or the
        stores'; none where it is 0), for convert-vector-to-llvm."""
        for access in block.walk():
            if isinstance(access, vector.LoadOp) and access.base not in scratch and access.base not in skipped:
                distance = self.prefetch_bytes
            elif isinstance(access, vector.StoreOp) and access.base not in scratch:
                distance = self.store_prefetch_bytes
            else:
                continue
            if distance:
                attributes.CPU_PREFETCH_BYTES.write(access, IntegerAttr(distance, i64))

    def _reduce(self, op: tile.ReduceOp) -> None:
        raise NotImplementedError

    def _store(self, op: tile.StoreOp) -> None:
        raise NotImplementedError

    def finish_vector_kernel(self, result: loop.KernelOp, bodies: Sequence[Block], accumulators: int) -> loop.KernelOp:
        self.finish_kernel(result, bodies)
        cap_vector_alignment(result)
        attributes.CPU_VECTOR_WIDTH.write(result, IntegerAttr(self.width, i64))
        attributes.CPU_ACCUMULATORS.write(result, IntegerAttr(accumulators, i64))
        if self.prefetch_bytes:
            attributes.CPU_PREFETCH_BYTES.write(result, IntegerAttr(self.prefetch_bytes, i64))
        if self.store_prefetch_bytes:
            attributes.CPU_STORE_PREFETCH_BYTES.write(result, IntegerAttr(self.store_prefetch_bytes, i64))
        return result

