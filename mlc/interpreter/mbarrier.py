"""mbarriers and bulk tensor copies: `loop.mbarrier_init/arrive/wait` and `loop.tma_load`.

Model (see the ops in `mlc/dialects/loop/ops.py`). An mbarrier is keyed by its byte address in
shared memory and holds its arrival count, the arrivals its current phase still needs, the
phase's *transaction balance* (bytes `expect_tx` announced minus bytes of the copies issued on
it) and how many phases have completed (the current phase's parity is that count's low bit).
A `loop.tma_load` reads its box when it is issued (zeros past the source's end; the sources mlc
copies are read-only in the kernel) and attaches it to the barrier's current phase. A phase with
no arrival missing and a zero balance *may* complete, but the model completes it (its copies land
in shared memory, the parity flips) only when the barrier is next used: by a wait, which then
returns, or by an arrival or a copy, which belong to the next phase. So the data is there only
for threads that wait (or that come after the next phase began). Until the copies land, the destination bytes are *in flight* in the launch's
`AsyncCopies` (`async_copy.py`): reading or writing them is a reported `DataRace`, and a copy
into bytes that a `loop.wgmma` in flight still reads is reported too.

`loop.mbarrier_wait` on a phase that has not completed is reported as a hang (`InterpreterError`:
which arrivals and bytes are missing): the interpreter runs the threads of a block in lockstep,
so what the waiting threads have not seen arrive by then never arrives. This models kernels where
every role's statements run in one order (one thread issues the copies, all threads wait), not
warp-specialized producer/consumer loops in divergent branches (those need a scheduler of warps).

Race checkers: a copy counts as a write by the issuing thread when it is issued (as an async copy
does), so a copy over a stage other threads read in the same barrier phase is reported; the
landing is not a tracked write (the copy engine's, ordered for the waiting threads by the wait).
Limit: a read of the box by another thread in the issuing barrier phase is reported as a race even
after a wait on its barrier (the mbarrier's ordering is not modelled there): a barrier must lie
between a copy's issue and other threads' reads, as in the pipelines `loop-promote-shared` builds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np
from xdsl.ir import Operation

from mlc.dialects.loop import ops as loop
from mlc.interpreter.async_copy import PendingCopy, state_of
from mlc.interpreter.engine import Execution, OperationTable
from mlc.interpreter.errors import InterpreterError
from mlc.interpreter.memory_ops import checked_indices, vector_addresses
from mlc.interpreter.values import Mask, MemRefValue


@dataclass
class MBarrier:
    """One mbarrier's state; `copies` are the bulk copies waiting for the current phase."""

    count: int
    arrivals_missing: int
    balance: int = 0
    completed_phases: int = 0
    copies: list[PendingCopy] = field(default_factory=list)


def _active_lanes(execution: Execution, mask: Mask) -> np.ndarray:
    """The flat indices of the lanes that run the op."""
    shape = execution.lanes.shape
    active = np.ones(shape, dtype=bool) if mask is None else np.broadcast_to(np.asarray(mask, dtype=bool), shape)
    return np.flatnonzero(active)


def _per_lane(execution: Execution, values: object) -> np.ndarray:
    return np.broadcast_to(np.asarray(values), execution.lanes.shape).reshape(-1)


def _barrier_addresses(execution: Execution, op: Operation, barrier: object, indices: list[object], mask: Mask) -> np.ndarray:
    """The byte address of the barrier each active lane names."""
    assert isinstance(barrier, MemRefValue)
    checked_indices(barrier, indices, mask)
    return _per_lane(execution, barrier.address(indices))[_active_lanes(execution, mask)]


def _barrier(execution: Execution, address: int, op: Operation) -> MBarrier:
    found = state_of(execution).barriers.get(address)
    if found is None:
        raise InterpreterError("use of an mbarrier that no loop.mbarrier_init initialized", op)
    return found


def _settle(execution: Execution, barrier: MBarrier) -> None:
    """Completes the current phase if nothing is missing: its copies land, the parity flips."""
    if barrier.arrivals_missing or barrier.balance:
        return
    state = state_of(execution)
    memory = execution.machine.memory
    for copy in barrier.copies:
        state.mark(memory, copy, -1)
        for piece in memory.locate(copy.addresses, copy.values.dtype.itemsize):
            memory.scatter(piece, copy.values.dtype, copy.values[piece.positions])
    barrier.copies = []
    barrier.completed_phases += 1
    barrier.arrivals_missing = barrier.count


def _init(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    assert isinstance(op, loop.MbarrierInitOp)
    barrier, *indices = execution.operands(op)
    barriers = state_of(execution).barriers
    for address in np.unique(_barrier_addresses(execution, op, barrier, indices, mask)):
        previous = barriers.get(int(address))
        if previous is not None and previous.copies:
            raise InterpreterError("loop.mbarrier_init of an mbarrier whose bulk copies have not landed", op)
        barriers[int(address)] = MBarrier(op.arrivals, op.arrivals)
    return []


def _arrive(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    assert isinstance(op, loop.MbarrierArriveOp)
    barrier_value, *indices = execution.operands(op)
    addresses, arrivals = np.unique(_barrier_addresses(execution, op, barrier_value, indices, mask), return_counts=True)
    for address, count in zip(addresses, arrivals):
        barrier = _barrier(execution, int(address), op)
        _settle(execution, barrier)
        if count > barrier.arrivals_missing:
            raise InterpreterError(
                f"{int(count)} arrivals on an mbarrier phase that expects {barrier.arrivals_missing} more (of {barrier.count})", op
            )
        barrier.arrivals_missing -= int(count)
        barrier.balance += op.transaction_bytes * int(count)
    return []


def _wait(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    assert isinstance(op, loop.MbarrierWaitOp)
    barrier_value, *indices, parity = execution.operands(op)
    addresses = _barrier_addresses(execution, op, barrier_value, indices, mask)
    parities = _per_lane(execution, parity)[_active_lanes(execution, mask)]
    for address, lane_parity in set(zip(addresses.tolist(), (np.asarray(parities, dtype=np.int64) & 1).tolist())):
        barrier = _barrier(execution, address, op)
        if barrier.completed_phases % 2 != lane_parity:
            continue  # the phase of that parity is the previous one, complete: returns at once
        _settle(execution, barrier)
        if barrier.completed_phases % 2 == lane_parity:
            raise InterpreterError(
                f"waits forever on an mbarrier phase of parity {lane_parity} that never completes: "
                f"{barrier.arrivals_missing} of {barrier.count} arrivals missing, transaction balance "
                f"{barrier.balance} bytes (expected minus copied)",
                op,
            )
    return []


def _tma_load(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    assert isinstance(op, loop.TmaLoadOp)
    operands = execution.operands(op)
    source_rank, destination_rank = len(op.source_indices), len(op.destination_indices)
    source, source_indices = operands[0], operands[1 : 1 + source_rank]
    destination = operands[1 + source_rank]
    destination_indices = operands[2 + source_rank : 2 + source_rank + destination_rank]
    barrier_value, barrier_indices = operands[2 + source_rank + destination_rank], operands[3 + source_rank + destination_rank :]
    assert isinstance(source, MemRefValue) and isinstance(destination, MemRefValue)
    box = op.box()
    checked_indices(destination, destination_indices, mask, box)
    inside = _inside_source(source, source_indices, box)
    addresses = vector_addresses(source, [np.where(np.asarray(index) < 0, 0, index) for index in source_indices], box)
    values = execution.read(addresses, source.dtype, mask, op, len(box), inside)
    targets = vector_addresses(destination, destination_indices, box)
    if execution.machine.check_races:  # at issue, as an async copy: a copy over what other threads still read
        execution.track_write(targets, mask, source.dtype.itemsize, len(box), op)
    lanes_shape = tuple(execution.lanes.shape)
    values = np.broadcast_to(values, lanes_shape + box).reshape((-1,) + box)
    targets = np.broadcast_to(targets, lanes_shape + box).reshape((-1,) + box)
    state = state_of(execution)
    memory = execution.machine.memory
    barrier_addresses = _barrier_addresses(execution, op, barrier_value, barrier_indices, mask)
    for lane, barrier_address in zip(_active_lanes(execution, mask), barrier_addresses.tolist()):
        barrier = _barrier(execution, barrier_address, op)
        _settle(execution, barrier)
        copy = PendingCopy(op, targets[lane].reshape(-1), np.array(values[lane].reshape(-1)), None)
        state.check(memory, copy.addresses, copy.values.dtype.itemsize, op, True)
        state.mark(memory, copy, 1)
        barrier.copies.append(copy)
        barrier.balance -= copy.values.nbytes
    return []


def _inside_source(source: MemRefValue, indices: list[object], box: tuple[int, ...]) -> np.ndarray:
    """Which elements of the box (lane axes, then the box's) lie inside the source."""
    rank = len(box)
    inside = np.ones((), dtype=bool)
    for axis, (index, size, extent) in enumerate(zip(indices, source.shape, box)):
        shape = [1] * rank
        shape[axis] = extent
        position = np.asarray(index)[(...,) + (None,) * rank] + np.arange(extent).reshape(shape)
        inside = inside & (position >= 0) & (position < size)
    return inside


def table() -> OperationTable:
    return OperationTable(
        MappingProxyType({loop.MbarrierInitOp: _init, loop.MbarrierArriveOp: _arrive, loop.MbarrierWaitOp: _wait, loop.TmaLoadOp: _tma_load}),
        MappingProxyType({}),
    )
