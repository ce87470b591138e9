"""Asynchronous global -> shared copies: `loop.async_copy/commit/wait` and NVVM's `cp.async`.

Semantics (see `loop.AsyncCopyOp`). A copy reads its source when it is issued (the sources mlc
copies are read-only in the kernel) and joins the open group; a commit closes the open group;
`wait N` completes every committed group but the newest N, in order: their data is written to
shared memory then, as a write by the issuing lanes, so the race checkers see it at the wait.
Until then the destination bytes are *in flight*: any other read or write of them is reported
(`DataRace`: a read of a stage before its wait, or a store or a second copy into a stage whose
copy has not landed). At issue the copy also counts as a write for the race checkers, so a copy
that overwrites a stage other threads may still be reading (no barrier between) is reported too.

State lives on the running level (`Level.async_copies`), one per launch. Limits: groups are
tracked per launch, not per thread: the commits and waits must be reached by every lane that
issued copies (uniform control flow, as in the pipelines `loop-promote-shared` builds), and a wait
runs in the same lane space as the copies it completes (the same thread loop).

NVVM spellings: `llvm.nvvm.cp.async.{cg,ca}.shared.global.{4,8,16}[.s]` (destination, source,
and with `.s` the source size: bytes past it are zero-filled), `llvm.nvvm.cp.async.commit.group`,
`llvm.nvvm.cp.async.wait.group(N)` and `llvm.nvvm.cp.async.wait.all`.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np
from xdsl.ir import Operation

from mlc.dialects.loop import ops as loop
from mlc.interpreter.engine import Execution, OperationTable
from mlc.interpreter.errors import DataRace
from mlc.interpreter.memory import Buffer, Memory
from mlc.interpreter.memory_ops import vector_addresses
from mlc.interpreter.values import Mask, MemRefValue


@dataclass
class PendingCopy:
    """One issued copy, for the lanes of `mask`: what to write where once its group completes."""

    op: Operation
    addresses: np.ndarray
    values: np.ndarray
    mask: Mask


@dataclass
class AsyncCopies:
    """The copies of one launch: the open group, the committed groups, the bytes in flight."""

    open_group: list[PendingCopy] = field(default_factory=list)
    committed: deque[list[PendingCopy]] = field(default_factory=deque)
    in_flight: dict[Buffer, np.ndarray] = field(default_factory=dict)
    """Per buffer, how many copies in flight write each byte."""
    products: deque[list[tuple[np.ndarray, int]]] = field(default_factory=deque)
    """The `loop.wgmma` groups in flight, oldest first: the (addresses, itemsize) they read."""
    reads_in_flight: dict[Buffer, np.ndarray] = field(default_factory=dict)
    """Per buffer, how many products in flight read each byte (a write of one is a race)."""
    barriers: dict[int, Any] = field(default_factory=dict)
    """The launch's mbarriers by shared address (`mbarrier.MBarrier`), with their bulk copies."""

    @property
    def busy(self) -> bool:
        return bool(self.in_flight or self.reads_in_flight)

    def count(self, table: dict[Buffer, np.ndarray], memory: Memory, addresses: np.ndarray, itemsize: int, delta: int) -> None:
        for piece in memory.locate(np.asarray(addresses, dtype=np.int64).reshape(-1), itemsize):
            counts = table.setdefault(piece.buffer, np.zeros(piece.buffer.size, dtype=np.int32))
            for byte in range(itemsize):
                np.add.at(counts, piece.offsets + byte, delta)
            if delta < 0 and not counts.any():
                del table[piece.buffer]

    def issue_product(self, memory: Memory, reads: list[tuple[np.ndarray, int]]) -> None:
        """A `loop.wgmma`: one group, whose reads stay in flight until a wait completes it."""
        for addresses, itemsize in reads:
            self.count(self.reads_in_flight, memory, addresses, itemsize, 1)
        self.products.append(reads)

    def wait_products(self, memory: Memory, pending: int) -> None:
        while len(self.products) > pending:
            for addresses, itemsize in self.products.popleft():
                self.count(self.reads_in_flight, memory, addresses, itemsize, -1)

    def mark(self, memory: Memory, copy: PendingCopy, delta: int) -> None:
        addresses = np.asarray(copy.addresses)
        itemsize = copy.values.dtype.itemsize
        selected = addresses if copy.mask is None else addresses[_widened(copy.mask, addresses)]
        self.count(self.in_flight, memory, selected, itemsize, delta)

    def check(self, memory: Memory, addresses: np.ndarray, itemsize: int, op: Operation, is_write: bool) -> None:
        """Reports an access of bytes that a copy still in flight writes, a write of bytes that a
        product in flight reads."""
        for piece in memory.locate(np.asarray(addresses, dtype=np.int64).reshape(-1), itemsize):
            read = self.reads_in_flight.get(piece.buffer) if is_write else None
            if read is not None and (hit := np.nonzero(read[piece.offsets] > 0)[0]).size:
                element = piece.buffer.element_index(int(piece.offsets[hit[0]]) // piece.buffer.granularity)
                raise DataRace(
                    "WAR",
                    piece.buffer.describe(),
                    element,
                    ("a loop.wgmma", "this access"),
                    "written while a warpgroup product still reads it (no loop.wgmma_wait completes it first)",
                    op,
                )
            counts = self.in_flight.get(piece.buffer)
            if counts is None:
                continue
            hit = np.nonzero(counts[piece.offsets] > 0)[0]
            if hit.size:
                element = piece.buffer.element_index(int(piece.offsets[hit[0]]) // piece.buffer.granularity)
                raise DataRace(
                    "WAW" if is_write else "RAW",
                    piece.buffer.describe(),
                    element,
                    ("an async copy", "this access"),
                    f"{'written' if is_write else 'read'} while an async copy into it is still in flight "
                    "(no loop.async_wait / cp.async.wait_group completes it first)",
                    op,
                )


def _widened(mask: np.ndarray, addresses: np.ndarray) -> np.ndarray:
    mask = np.asarray(mask, dtype=bool)
    return np.broadcast_to(mask.reshape(mask.shape + (1,) * (addresses.ndim - mask.ndim)), addresses.shape)


def state_of(execution: Execution) -> AsyncCopies:
    level = execution.level
    if level.async_copies is None:
        level.async_copies = AsyncCopies()
    return level.async_copies


def issue(execution: Execution, op: Operation, addresses: np.ndarray, values: np.ndarray, mask: Mask) -> None:
    """Starts a copy of `values` to shared `addresses` (lane axes, then the copied elements)."""
    state = state_of(execution)
    memory = execution.machine.memory
    active = addresses if mask is None else addresses[_widened(mask, addresses)]
    state.check(memory, active, values.dtype.itemsize, op, True)
    if execution.machine.check_races:
        execution.track_write(addresses, mask, values.dtype.itemsize, addresses.ndim - execution.lanes_rank(), op)
    copy = PendingCopy(op, addresses, values, mask)
    state.mark(memory, copy, 1)
    state.open_group.append(copy)


def commit(execution: Execution) -> None:
    state = state_of(execution)
    state.committed.append(state.open_group)
    state.open_group = []


def wait(execution: Execution, pending: int) -> None:
    """Completes every committed group but the newest `pending`, oldest first."""
    state = state_of(execution)
    memory = execution.machine.memory
    while len(state.committed) > pending:
        for copy in state.committed.popleft():
            state.mark(memory, copy, -1)
            trailing = copy.addresses.ndim - execution.lanes_rank()
            execution.write(copy.addresses, copy.values, copy.values.dtype, copy.mask, copy.op, trailing)


def issue_product(execution: Execution, reads: list[tuple[np.ndarray, int]]) -> None:
    """Starts a `loop.wgmma` group reading (addresses, itemsize) until a `loop.wgmma_wait`."""
    state_of(execution).issue_product(execution.machine.memory, reads)


def _wgmma_wait(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    assert isinstance(op, loop.WgmmaWaitOp)
    state_of(execution).wait_products(execution.machine.memory, op.groups_in_flight)
    return [execution.get(value) for value in op.accumulators]


def _async_copy(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    assert isinstance(op, loop.AsyncCopyOp)
    operands = execution.operands(op)
    source, *rest = operands
    source_indices = rest[: len(op.source_indices)]
    destination = rest[len(op.source_indices)]
    destination_indices = rest[len(op.source_indices) + 1 : len(op.source_indices) + 1 + len(op.destination_indices)]
    assert isinstance(source, MemRefValue) and isinstance(destination, MemRefValue)
    reading = mask
    if op.inside is not None:
        inside = np.asarray(operands[-1], dtype=bool)
        reading = inside if mask is None else (np.asarray(mask, dtype=bool) & inside)
    shape = (op.count,)
    values = execution.read(vector_addresses(source, source_indices, shape), source.dtype, reading, op, 1)
    values = np.broadcast_to(values, np.broadcast_shapes(values.shape, execution.lanes.shape + shape))
    issue(execution, op, vector_addresses(destination, destination_indices, shape), np.array(values), mask)
    return []


def _async_commit(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    commit(execution)
    return []


def _async_wait(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    assert isinstance(op, loop.AsyncWaitOp)
    wait(execution, op.groups_in_flight)
    return []


def table() -> OperationTable:
    return OperationTable(
        MappingProxyType({loop.AsyncCopyOp: _async_copy, loop.AsyncCommitOp: _async_commit, loop.AsyncWaitOp: _async_wait, loop.WgmmaWaitOp: _wgmma_wait}),
        MappingProxyType({}),
    )


# -- NVVM intrinsics --------------------------------------------------------------------------------


def cp_async_intrinsic(execution: Execution, op: Operation, arguments: list[object], mask: Mask) -> list[object]:
    """`llvm.nvvm.cp.async.{ca,cg}.shared.global.{4,8,16}[.s](dst, src[, src_size])`."""
    name = op.intrin.data  # type: ignore[attr-defined]
    size = int(name.rsplit(".s", 1)[0].rsplit(".", 1)[-1]) if name.endswith(".s") else int(name.rsplit(".", 1)[-1])
    byte = np.arange(size, dtype=np.int64)
    destination = np.asarray(arguments[0], dtype=np.int64)[..., None] + byte
    source = np.asarray(arguments[1], dtype=np.int64)[..., None] + byte
    read_mask = None if len(arguments) < 3 else (byte < np.asarray(arguments[2], dtype=np.int64)[..., None])
    values = execution.read(source, np.dtype(np.uint8), mask, op, 1, read_mask)
    values = np.broadcast_to(values, np.broadcast_shapes(values.shape, destination.shape))
    issue(execution, op, np.broadcast_to(destination, values.shape), np.array(values), mask)
    return []


def commit_intrinsic(execution: Execution, op: Operation, arguments: list[object], mask: Mask) -> list[object]:
    commit(execution)
    return []


def wait_group_intrinsic(execution: Execution, op: Operation, arguments: list[object], mask: Mask) -> list[object]:
    wait(execution, int(np.asarray(arguments[0]).reshape(-1)[0]))
    return []


def wait_all_intrinsic(execution: Execution, op: Operation, arguments: list[object], mask: Mask) -> list[object]:
    wait(execution, 0)
    return []


CP_ASYNC_INTRINSICS = {
    **{
        f"llvm.nvvm.cp.async.{cache}.shared.global.{size}{suffix}": cp_async_intrinsic
        for cache, sizes in (("ca", (4, 8, 16)), ("cg", (16,)))
        for size in sizes
        for suffix in ("", ".s")
    },
    "llvm.nvvm.cp.async.commit.group": commit_intrinsic,
    "llvm.nvvm.cp.async.wait.group": wait_group_intrinsic,
    "llvm.nvvm.cp.async.wait.all": wait_all_intrinsic,
}
