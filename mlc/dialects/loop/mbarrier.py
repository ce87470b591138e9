"""Barriers finer than the block's: `loop.warp_sync` and the mbarrier ops (`loop.mbarrier_init`,
`loop.mbarrier_arrive`, `loop.mbarrier_wait`).

What: a warp-wide meeting point (`__syncwarp()`), and PTX's mbarriers: an i64 in shared memory
whose phases complete after a set number of arrivals and, with `expect_tx`, after that many
bytes of bulk copies (`tma.py`) have landed on it; a wait blocks until the phase of a parity has
completed. `mlc/interpreter/mbarrier.py` runs the model.

Preconditions: a barrier is an i64 element of a shared buffer (`verify_barrier`), initialised
before other threads use it. Limits: arrival counts and expected bytes below 2^20.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import I64, IndexType, IntegerAttr, MemRefType, i64
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from mlc.dialects.loop.loops import SHARED_MEMORY_SPACE
from mlc.dialects.loop.syntax import parse_indexed, print_indexed, resolve_indices


@irdl_op_definition
class WarpSyncOp(IRDLOperation):
    """`loop.warp_sync`: the 32 lanes of each warp that runs it meet, and each lane's memory
    accesses before it are ordered before every lane's accesses after it (PTX `bar.warp.sync
    0xffffffff`, CUDA's `__syncwarp()`). Every lane of a warp must reach it together. So one lane
    can arrive on an mbarrier for its whole warp: its arrival releases what the warp did."""

    name = "loop.warp_sync"
    assembly_format = "attr-dict"

    def __init__(self) -> None:
        super().__init__()


def is_shared_memref(memref_type: Attribute) -> bool:
    """Whether `memref_type` is a memref in shared memory (space 3)."""
    space = memref_type.memory_space if isinstance(memref_type, MemRefType) else None
    return isinstance(space, IntegerAttr) and space.value.data == SHARED_MEMORY_SPACE


def verify_barrier(barrier: SSAValue, indices: Sequence[SSAValue]) -> None:
    """An mbarrier is an i64 element of a shared buffer (one 8-byte word per barrier)."""
    barrier_type = barrier.type
    if not (isinstance(barrier_type, MemRefType) and barrier_type.element_type == i64 and is_shared_memref(barrier_type)):
        raise VerifyException(f"an mbarrier is an i64 of a shared buffer (memref<..xi64, 3>), not {barrier_type}")
    if len(indices) != barrier_type.get_num_dims():
        raise VerifyException(f"expected {barrier_type.get_num_dims()} barrier indices, got {len(indices)}")


@irdl_op_definition
class MbarrierInitOp(IRDLOperation):
    """`loop.mbarrier_init %bars[%i], 1 : memref<4xi64, 3>`: makes the i64 at `%bars[%i]` an
    mbarrier whose phases complete after `count` arrivals (PTX `mbarrier.init.shared.b64`), in
    phase 0. The lanes that run it must all name one barrier with one count (it is issued by one
    thread in practice); other threads may use the barrier only after a barrier of the block."""

    name = "loop.mbarrier_init"
    barrier = operand_def(MemRefType)
    indices = var_operand_def(IndexType)
    count = prop_def(IntegerAttr[I64])

    def __init__(self, barrier: SSAValue, indices: Sequence[SSAValue], count: int) -> None:
        super().__init__(operands=[barrier, indices], properties={"count": IntegerAttr(count, i64)})

    @property
    def arrivals(self) -> int:
        return self.count.value.data

    def verify_(self) -> None:
        verify_barrier(self.barrier, self.indices)
        if not 1 <= self.arrivals < 1 << 20:
            raise VerifyException(f"an mbarrier's arrival count is between 1 and 2^20 - 1, got {self.arrivals}")

    @classmethod
    def parse(cls, parser: Parser) -> MbarrierInitOp:
        barrier, indices = parse_indexed(parser)
        parser.parse_punctuation(",")
        count = parser.parse_integer()
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        barrier_type = parser.parse_type()
        op = cls(parser.resolve_operand(barrier, barrier_type), resolve_indices(parser, indices), count)  # type: ignore[arg-type]
        op.attributes |= attributes
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        print_indexed(printer, self.barrier, self.indices)
        printer.print_string(f", {self.arrivals}")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.barrier.type)


@irdl_op_definition
class MbarrierArriveOp(IRDLOperation):
    """`loop.mbarrier_arrive %bars[%i] [expect_tx 16384] : memref<4xi64, 3>`: each lane that runs
    it counts one arrival on the barrier's current phase (PTX `mbarrier.arrive.shared::cta.b64`);
    with `expect_tx N` it first makes the phase also wait for N more bytes of bulk copies
    (`loop.tma_load`) completing on it (`mbarrier.arrive.expect_tx`). The phase completes when
    all its arrivals are in and its expected bytes have landed; the barrier is then in the next
    phase (its parity flips)."""

    name = "loop.mbarrier_arrive"
    barrier = operand_def(MemRefType)
    indices = var_operand_def(IndexType)
    expect_tx = opt_prop_def(IntegerAttr[I64])

    def __init__(self, barrier: SSAValue, indices: Sequence[SSAValue], expect_tx: int | None = None) -> None:
        properties = {} if expect_tx is None else {"expect_tx": IntegerAttr(expect_tx, i64)}
        super().__init__(operands=[barrier, indices], properties=properties)

    @property
    def transaction_bytes(self) -> int:
        return 0 if self.expect_tx is None else self.expect_tx.value.data

    def verify_(self) -> None:
        verify_barrier(self.barrier, self.indices)
        if not 0 <= self.transaction_bytes < 1 << 20:
            raise VerifyException(f"an mbarrier expects between 0 and 2^20 - 1 transaction bytes, got {self.transaction_bytes}")

    @classmethod
    def parse(cls, parser: Parser) -> MbarrierArriveOp:
        barrier, indices = parse_indexed(parser)
        expect_tx = parser.parse_integer() if parser.parse_optional_keyword("expect_tx") is not None else None
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        barrier_type = parser.parse_type()
        op = cls(parser.resolve_operand(barrier, barrier_type), resolve_indices(parser, indices), expect_tx)  # type: ignore[arg-type]
        op.attributes |= attributes
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        print_indexed(printer, self.barrier, self.indices)
        if self.expect_tx is not None:
            printer.print_string(f" expect_tx {self.transaction_bytes}")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.barrier.type)


@irdl_op_definition
class MbarrierWaitOp(IRDLOperation):
    """`loop.mbarrier_wait %bars[%i], %parity : memref<4xi64, 3>`: blocks the lanes that run it
    until the barrier's phase of parity `%parity` (its low bit) has completed (PTX
    `mbarrier.try_wait.parity` in a loop): returns at once while the barrier's current phase has
    the other parity. The bulk copies that completed on that phase are then visible to the
    waiting threads. Waiting on a phase that never completes (arrivals or bytes missing) hangs:
    the interpreter reports it."""

    name = "loop.mbarrier_wait"
    barrier = operand_def(MemRefType)
    indices = var_operand_def(IndexType)
    parity = operand_def(IndexType)

    def __init__(self, barrier: SSAValue, indices: Sequence[SSAValue], parity: SSAValue) -> None:
        super().__init__(operands=[barrier, indices, parity])

    def verify_(self) -> None:
        verify_barrier(self.barrier, self.indices)

    @classmethod
    def parse(cls, parser: Parser) -> MbarrierWaitOp:
        barrier, indices = parse_indexed(parser)
        parser.parse_punctuation(",")
        parity = parser.parse_unresolved_operand()
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        barrier_type = parser.parse_type()
        op = cls(parser.resolve_operand(barrier, barrier_type), resolve_indices(parser, indices), parser.resolve_operand(parity, IndexType()))  # type: ignore[arg-type]
        op.attributes |= attributes
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        print_indexed(printer, self.barrier, self.indices)
        printer.print_string(", ")
        printer.print_operand(self.parity)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.barrier.type)
