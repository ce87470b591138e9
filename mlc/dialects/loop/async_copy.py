"""Asynchronous global-to-shared copies (Ampere `cp.async`): `loop.async_copy`, `loop.async_commit`,
`loop.async_wait`.

What: a copy of 4, 8 or 16 bytes per thread that runs in the background (zeros instead when its
`if` operand is false), the commit that closes the thread's current group of copies, and the
wait until at most N committed groups are in flight. The destination holds the data only after
the wait that completes its group (the interpreter reports an earlier access).

Preconditions: the destination is shared memory (space 3), source and destination have one
element type. Limits: the sizes `cp.async` moves; groups are per thread.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import I64, IndexType, IntegerAttr, MemRefType, i1, i64
from xdsl.ir import SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    prop_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from mlc.dialects.loop.loops import SHARED_MEMORY_SPACE
from mlc.dialects.loop.syntax import print_indexed


ASYNC_COPY_BYTES = (4, 8, 16)
"""The sizes one `loop.async_copy` may move (PTX `cp.async` moves 4, 8 or 16 bytes)."""


@irdl_op_definition
class AsyncCopyOp(IRDLOperation):
    """`loop.async_copy %src[%i, %j] to %dst[%s, %k, %l], 8 [if %inside] : memref<..> to memref<.., 3>`.

    Starts copying `elements` neighbouring elements (4, 8 or 16 bytes) along the last dimension
    of `source` (global memory) to `destination` (shared memory), in the background (PTX
    `cp.async.cg.shared.global`, or `.ca` below 16 bytes). With `if %inside` false the destination
    receives zeros and the source is not read (PTX's src-size 0), so that a copy past a buffer's
    end needs no branch. The copy joins the thread's current *group*; `loop.async_commit` closes
    the group and `loop.async_wait N` blocks until at most the N most recently committed groups of
    this thread are still in flight. The destination holds the copied data only after the wait
    that completes its group: reading it before (or writing it, by another op) is an error the
    interpreter reports, and another thread sees it only once a barrier (at the loop level, the
    block-synchronous order of statements) follows that wait.
    """

    name = "loop.async_copy"
    source = operand_def(MemRefType)
    source_indices = var_operand_def(IndexType)
    destination = operand_def(MemRefType)
    destination_indices = var_operand_def(IndexType)
    inside = opt_operand_def(i1)
    elements = prop_def(IntegerAttr[I64])
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def __init__(
        self,
        source: SSAValue,
        source_indices: Sequence[SSAValue],
        destination: SSAValue,
        destination_indices: Sequence[SSAValue],
        elements: int,
        inside: SSAValue | None = None,
    ):
        super().__init__(
            operands=[source, source_indices, destination, destination_indices, [] if inside is None else [inside]],
            properties={"elements": IntegerAttr(elements, i64)},
        )

    @property
    def count(self) -> int:
        return self.elements.value.data

    def byte_count(self) -> int:
        element_type = self.source.type.element_type  # type: ignore[attr-defined]
        return self.count * (element_type.bitwidth // 8)  # type: ignore[attr-defined]

    def verify_(self) -> None:
        source_type, destination_type = self.source.type, self.destination.type
        assert isinstance(source_type, MemRefType) and isinstance(destination_type, MemRefType)
        if source_type.element_type != destination_type.element_type:
            raise VerifyException(f"source and destination element types differ: {source_type.element_type} and {destination_type.element_type}")
        for name, memref_type, indices in (("source", source_type, self.source_indices), ("destination", destination_type, self.destination_indices)):
            if len(indices) != memref_type.get_num_dims():
                raise VerifyException(f"expected {memref_type.get_num_dims()} {name} indices, got {len(indices)}")
        space = destination_type.memory_space
        if not (isinstance(space, IntegerAttr) and space.value.data == SHARED_MEMORY_SPACE):
            raise VerifyException("the destination of an async copy must be shared memory (memory space 3)")
        if not hasattr(source_type.element_type, "bitwidth") or self.byte_count() not in ASYNC_COPY_BYTES:
            raise VerifyException(f"an async copy moves 4, 8 or 16 bytes, not {self.count} elements of {source_type.element_type}")

    @classmethod
    def parse(cls, parser: Parser) -> AsyncCopyOp:
        source = parser.parse_unresolved_operand()
        source_indices = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_unresolved_operand)
        parser.parse_keyword("to")
        destination = parser.parse_unresolved_operand()
        destination_indices = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_unresolved_operand)
        parser.parse_punctuation(",")
        elements = parser.parse_integer()
        inside = parser.parse_unresolved_operand() if parser.parse_optional_keyword("if") is not None else None
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        source_type = parser.parse_type()
        parser.parse_keyword("to")
        destination_type = parser.parse_type()
        op = cls(
            parser.resolve_operand(source, source_type),
            parser.resolve_operands(source_indices, [IndexType()] * len(source_indices), parser.pos),
            parser.resolve_operand(destination, destination_type),
            parser.resolve_operands(destination_indices, [IndexType()] * len(destination_indices), parser.pos),
            elements,
            None if inside is None else parser.resolve_operand(inside, i1),
        )
        op.attributes |= attributes
        return op

    def print(self, printer: Printer) -> None:
        for position, (memref_value, indices) in enumerate(((self.source, self.source_indices), (self.destination, self.destination_indices))):
            printer.print_string(" to " if position else " ")
            print_indexed(printer, memref_value, indices)
        printer.print_string(f", {self.count}")
        if self.inside is not None:
            printer.print_string(" if ")
            printer.print_operand(self.inside)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.source.type)
        printer.print_string(" to ")
        printer.print_attribute(self.destination.type)


@irdl_op_definition
class AsyncCommitOp(IRDLOperation):
    """`loop.async_commit`: closes the thread's current group of async copies (PTX
    `cp.async.commit_group`); an empty group is allowed and completes at once."""

    name = "loop.async_commit"
    assembly_format = "attr-dict"

    def __init__(self) -> None:
        super().__init__()


@irdl_op_definition
class AsyncWaitOp(IRDLOperation):
    """`loop.async_wait 1`: waits until at most `pending` of the thread's committed groups of async
    copies are still in flight (PTX `cp.async.wait_group N`); their copies are then complete."""

    name = "loop.async_wait"
    pending = prop_def(IntegerAttr[I64])
    assembly_format = "$pending attr-dict"

    def __init__(self, pending: int) -> None:
        super().__init__(properties={"pending": IntegerAttr(pending, i64)})

    @property
    def groups_in_flight(self) -> int:
        return self.pending.value.data

    def verify_(self) -> None:
        if self.groups_in_flight < 0:
            raise VerifyException(f"the number of groups left in flight must be non-negative, got {self.groups_in_flight}")
