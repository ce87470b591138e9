"""Vector code that the CPU loop lowerings share (matmul micro-kernels, row, column and vector kernels).

What: `ASSUMED_ALIGNMENT` and `cap_vector_alignment` (vector accesses of kernel parameters state
at most 16 bytes, the alignment numpy gives, so that the runtime need not copy arguments to
64-byte boundaries; unaligned vector loads cost x86 little), `unmapped_loop` (a `loop.parallel`
without a mapping: a plain loop on the CPU) and `pack_vector` (scalars as one f32 vector, reusing
the loaded vector when they are its lanes in order).

Preconditions: f32 elements for `pack_vector`. Limits: alignment is capped, never raised.
"""

from __future__ import annotations

from xdsl.dialects import vector
from xdsl.dialects.builtin import IndexType, IntegerAttr, VectorType, f32, i64
from xdsl.ir import Block, Region, SSAValue

from mlc.dialects.loop import ops as loop
from mlc.transforms.lowering.chunk_access import Emitter


ASSUMED_ALIGNMENT = 16
"""The most alignment (bytes) vector accesses state and parameters require: numpy's arrays start
on 16-byte boundaries, rarely on 64, and a stricter requirement would make the runtime copy every
such argument; unaligned vector loads cost x86 little."""


def unmapped_loop(trip_count: int, name: str) -> loop.ParallelOp:
    parallel = loop.ParallelOp(trip_count, None, Region(Block(arg_types=[IndexType()])))
    parallel.body.block.args[0].name_hint = name
    return parallel


def pack_vector(emitter: Emitter, elements: list[SSAValue]) -> SSAValue:
    """A vector of `elements`: the loaded vector itself when they are its lanes in order."""
    first = elements[0].owner
    if (
        isinstance(first, vector.ExtractOp)
        and first.vector.type == VectorType(f32, [len(elements)])
        and all(
            isinstance(e.owner, vector.ExtractOp) and e.owner.vector is first.vector and list(e.owner.static_position.get_values()) == [lane] and not e.owner.dynamic_position
            for lane, e in enumerate(elements)
        )
    ):
        return first.vector
    vector_type = VectorType(f32, [len(elements)])
    if all(e is elements[0] for e in elements):
        return emitter.emit(vector.BroadcastOp(elements[0], vector_type))
    packed = emitter.emit(vector.BroadcastOp(elements[0], vector_type))
    for lane in range(1, len(elements)):
        packed = emitter.emit(vector.InsertOp(elements[lane], packed, [lane]))
    return packed


def cap_vector_alignment(kernel: loop.KernelOp) -> None:
    """States at most `ASSUMED_ALIGNMENT` on the vector accesses of the kernel's parameters."""
    parameters = set(kernel.body.block.args)
    for op in kernel.walk():
        stated = op.attributes.get("alignment")
        if (
            isinstance(op, vector.LoadOp | vector.StoreOp)
            and op.base in parameters
            and isinstance(stated, IntegerAttr)
            and stated.value.data > ASSUMED_ALIGNMENT
        ):
            op.attributes["alignment"] = IntegerAttr(ASSUMED_ALIGNMENT, i64)
