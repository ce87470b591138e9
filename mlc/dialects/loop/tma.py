"""Bulk tensor copies (Hopper TMA): `loop.tma_load`.

What: each lane that runs it copies a box of a global buffer (the destination's trailing
dimensions) into shared memory in the background, zeros outside the source; the copy's bytes
count against an mbarrier's current phase (`mbarrier.py`), whose completion makes the box
visible to the threads that wait on it. On the GPU the copy goes through a tensor map that the
runtime encodes (`mlc.tensor_maps`).

Preconditions: the source is global memory (a kernel argument), the destination shared; rows of
the box and a constant innermost start coordinate are multiples of 16 bytes. Limits: at most
`TMA_BOX_LIMIT` elements per box dimension; loads only (no TMA stores).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, IntegerAttr, MemRefType
from xdsl.ir import SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from mlc.dialects.loop.mbarrier import is_shared_memref, verify_barrier
from mlc.dialects.loop.syntax import parse_indexed, print_indexed, resolve_indices


def _constant_index(value: SSAValue) -> int | None:
    """The value of an `arith.constant` index or integer, None for anything computed."""
    owner = value.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    return None


TMA_BOX_LIMIT = 256
"""The most elements a bulk tensor copy's box spans along one dimension."""


@irdl_op_definition
class TmaLoadOp(IRDLOperation):
    """`loop.tma_load %a[%i, %j] to %stages[%s, %c0, %c0], %bars[%b] : memref<MxKxf16> to
    memref<SxRxCxf16, 3>, memref<Sxi64, 3>`.

    A bulk tensor copy (TMA, PTX `cp.async.bulk.tensor`): each lane that runs it copies the box
    of `source` (global memory, a kernel argument) at `source_indices`, as large as the
    destination's trailing `rank(source)` dimensions, to the destination at
    `destination_indices` (the box's first element; shared memory), in the background; elements
    outside the source (past its end, or before its start: coordinates may be negative) arrive
    as zeros. The innermost start coordinate must be a multiple of 16 bytes (the hardware stops a
    copy that is not with an illegal instruction; the interpreter reports it); the others may be
    anything. The copy's bytes count against the barrier's current
    phase (`loop.mbarrier_arrive ... expect_tx`): the destination holds the box once that phase
    completes, for the threads that wait on it (`loop.mbarrier_wait`); reading or writing it
    before is an error the interpreter reports. On the GPU the copy goes through a tensor map
    (one per source and box, `mlc.tensor_maps`) that the runtime encodes.
    """

    name = "loop.tma_load"
    source = operand_def(MemRefType)
    source_indices = var_operand_def(IndexType)
    destination = operand_def(MemRefType)
    destination_indices = var_operand_def(IndexType)
    barrier = operand_def(MemRefType)
    barrier_indices = var_operand_def(IndexType)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def __init__(
        self,
        source: SSAValue,
        source_indices: Sequence[SSAValue],
        destination: SSAValue,
        destination_indices: Sequence[SSAValue],
        barrier: SSAValue,
        barrier_indices: Sequence[SSAValue],
    ) -> None:
        super().__init__(operands=[source, source_indices, destination, destination_indices, barrier, barrier_indices])

    def box(self) -> tuple[int, ...]:
        """The copied box: the destination's trailing dimensions, one per source dimension."""
        source_type, destination_type = self.source.type, self.destination.type
        assert isinstance(source_type, MemRefType) and isinstance(destination_type, MemRefType)
        return tuple(destination_type.get_shape()[destination_type.get_num_dims() - source_type.get_num_dims() :])

    def byte_count(self) -> int:
        element_type = self.source.type.element_type  # type: ignore[attr-defined]
        count = 1
        for size in self.box():
            count *= size
        return count * (element_type.bitwidth // 8)  # type: ignore[attr-defined]

    def verify_(self) -> None:
        source_type, destination_type = self.source.type, self.destination.type
        assert isinstance(source_type, MemRefType) and isinstance(destination_type, MemRefType)
        if source_type.element_type != destination_type.element_type:
            raise VerifyException(f"source and destination element types differ: {source_type.element_type} and {destination_type.element_type}")
        for name, memref_type, indices in (("source", source_type, self.source_indices), ("destination", destination_type, self.destination_indices)):
            if len(indices) != memref_type.get_num_dims():
                raise VerifyException(f"expected {memref_type.get_num_dims()} {name} indices, got {len(indices)}")
        if is_shared_memref(source_type):
            raise VerifyException("the source of a bulk tensor copy is global memory")
        if not is_shared_memref(destination_type):
            raise VerifyException("the destination of a bulk tensor copy must be shared memory (memory space 3)")
        if destination_type.get_num_dims() < source_type.get_num_dims():
            raise VerifyException(f"the destination has fewer dimensions than the {source_type.get_num_dims()} of the box")
        if not hasattr(source_type.element_type, "bitwidth") or not all(0 < size <= TMA_BOX_LIMIT for size in self.box()):
            raise VerifyException(f"a bulk tensor copy's box spans 1 to {TMA_BOX_LIMIT} elements of a scalar type per dimension, not {list(self.box())}")
        if self.box()[-1] * source_type.element_type.bitwidth % 128:  # type: ignore[attr-defined]
            raise VerifyException("a bulk tensor copy's box rows are multiples of 16 bytes")
        innermost = _constant_index(self.source_indices[-1])
        if innermost is not None and innermost * source_type.element_type.bitwidth % 128:  # type: ignore[attr-defined]
            raise VerifyException(f"a bulk tensor copy's innermost start coordinate is a multiple of 16 bytes, not {innermost} elements")
        verify_barrier(self.barrier, self.barrier_indices)

    @classmethod
    def parse(cls, parser: Parser) -> TmaLoadOp:
        source, source_indices = parse_indexed(parser)
        parser.parse_keyword("to")
        destination, destination_indices = parse_indexed(parser)
        parser.parse_punctuation(",")
        barrier, barrier_indices = parse_indexed(parser)
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        source_type = parser.parse_type()
        parser.parse_keyword("to")
        destination_type = parser.parse_type()
        parser.parse_punctuation(",")
        barrier_type = parser.parse_type()
        op = cls(
            parser.resolve_operand(source, source_type),  # type: ignore[arg-type]
            resolve_indices(parser, source_indices),
            parser.resolve_operand(destination, destination_type),  # type: ignore[arg-type]
            resolve_indices(parser, destination_indices),
            parser.resolve_operand(barrier, barrier_type),  # type: ignore[arg-type]
            resolve_indices(parser, barrier_indices),
        )
        op.attributes |= attributes
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        print_indexed(printer, self.source, self.source_indices)
        printer.print_string(" to ")
        print_indexed(printer, self.destination, self.destination_indices)
        printer.print_string(", ")
        print_indexed(printer, self.barrier, self.barrier_indices)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.source.type)
        printer.print_string(" to ")
        printer.print_attribute(self.destination.type)
        printer.print_string(", ")
        printer.print_attribute(self.barrier.type)
