"""mbarriers and bulk tensor copies: `loop.mbarrier_init/arrive/wait` and `loop.tma_load`.

Model (the ops: `mlc/dialects/loop/mbarrier.py`, `tma.py`). An mbarrier is keyed by its byte address in
shared memory and holds its arrival count, the arrivals its current phase still needs, the
phase's *transaction balance* (bytes `expect_tx` announced minus bytes of the copies issued on
it) and how many phases have completed (the current phase's parity is that count's low bit).
A `loop.tma_load` reads its box when it is issued (zeros outside the source, before its start
too; the sources mlc copies are read-only in the kernel; an innermost start that is not 16-byte
aligned is reported, as the GPU stops such a copy) and attaches it to the barrier's current phase. A phase with
no arrival missing and a zero balance *may* complete, but the model completes it (its copies land
in shared memory, the parity flips) only when the barrier is next used: by a wait, which then
returns, or by an arrival or a copy, which belong to the next phase. So the data is there only
for threads that wait (or that come after the next phase began). Until the copies land, the destination bytes are *in flight* in the launch's
`AsyncCopies` (`async_copy.py`): reading or writing them is a reported `DataRace`, and a copy
into bytes that a `loop.wgmma` in flight still reads is reported too.

A wait on a phase that has not completed suspends the waiting lanes when they run as a warp role
(`warp_roles.py`: the producer and consumer loops of a warp-specialized kernel are coroutines that
hand over at such waits); when no role can run any more, or outside warp roles (every thread's
statements run in one order, lockstep), the wait is reported as a hang (`InterpreterError`: which
arrivals and bytes are missing).

Race checkers: a copy counts as a write by the issuing thread when it is issued (as an async copy
does), so a copy over a stage other threads read unordered is reported. Ordering through
mbarriers (`races.SharedMemoryTracker`'s vector clocks): an arrival releases the arriving
threads' accesses into the barrier's current phase, and so does a bulk copy for its issuing
thread (the bytes it writes, completing the transaction); a wait that returns acquires what the
phase it waited for released. So a consumer reads a stage after waiting on its *full* barrier,
and a producer refills it after waiting on its *empty* barrier (on which the consumers arrived
after their reads), with no `bar.sync` between. `loop.warp_sync` makes each lane of a warp
acquire what every lane of it did before, so one lane's arrival after it releases the whole
warp's accesses (a warp-specialized kernel's consumers arrive on *empty* once per warp). Limits: the landing itself is not a tracked write
(a thread that reads the bytes with no wait of its own after another thread's wait landed them
is not reported); at the loop level (no shared-memory tracker) only writes are checked.
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
from mlc.interpreter.warp_roles import current_scheduler

WARP_SIZE = 32
TMA_COORDINATE_ALIGNMENT = 16
"""Bytes the innermost start coordinate of a bulk tensor copy's box must be a multiple of."""


@dataclass
class MBarrier:
    """One mbarrier's state; `copies` are the bulk copies waiting for the current phase."""

    count: int
    arrivals_missing: int
    balance: int = 0
    completed_phases: int = 0
    copies: list[PendingCopy] = field(default_factory=list)
    released: np.ndarray | None = None
    """The clock the current phase's arrivals and copies released (race checks; None: nothing)."""
    completed_clock: np.ndarray | None = None
    """What the last completed phase released: a wait that returns acquires it."""


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
    barrier.completed_clock, barrier.released = barrier.released, None


def _active_threads(execution: Execution, mask: Mask) -> tuple[np.ndarray, np.ndarray]:
    """The block and the thread of each active lane (flat, in `_active_lanes` order)."""
    lane_ids = _per_lane(execution, execution.lanes.lane_ids)[_active_lanes(execution, mask)]
    return execution.level.block_and_thread(lane_ids)


def _release(execution: Execution, barrier: MBarrier, lanes: np.ndarray, mask: Mask) -> None:
    """The threads of the `lanes` selected (active-lane order) release into the current phase."""
    tracker = execution.level.shared_tracker
    if tracker is None or not lanes.any():
        return
    blocks, threads = _active_threads(execution, mask)
    clock = tracker.release(int(blocks[lanes][0]), threads[lanes])
    barrier.released = clock if barrier.released is None else np.maximum(barrier.released, clock)


def _acquire(execution: Execution, barrier: MBarrier, lanes: np.ndarray, mask: Mask) -> None:
    tracker = execution.level.shared_tracker
    if tracker is None or barrier.completed_clock is None or not lanes.any():
        return
    blocks, threads = _active_threads(execution, mask)
    tracker.acquire(int(blocks[lanes][0]), threads[lanes], barrier.completed_clock)


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
    lane_addresses = _barrier_addresses(execution, op, barrier_value, indices, mask)
    addresses, arrivals = np.unique(lane_addresses, return_counts=True)
    for address, count in zip(addresses, arrivals):
        barrier = _barrier(execution, int(address), op)
        _settle(execution, barrier)
        if count > barrier.arrivals_missing:
            raise InterpreterError(
                f"{int(count)} arrivals on an mbarrier phase that expects {barrier.arrivals_missing} more (of {barrier.count})", op
            )
        _release(execution, barrier, lane_addresses == address, mask)
        barrier.arrivals_missing -= int(count)
        barrier.balance += op.transaction_bytes * int(count)
    return []


def _wait(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    """Returns once the phase of each lane's parity completed (suspending a warp role until it
    does); the lanes acquire what that phase released."""
    assert isinstance(op, loop.MbarrierWaitOp)
    barrier_value, *indices, parity = execution.operands(op)
    lane_addresses = _barrier_addresses(execution, op, barrier_value, indices, mask)
    parities = np.asarray(_per_lane(execution, parity)[_active_lanes(execution, mask)], dtype=np.int64) & 1
    # A phase of the lane's parity that is the current one must complete: the target phase count.
    # (Otherwise it is the previous phase, complete: the wait returns at once.)
    targets: dict[int, int] = {}
    for address, lane_parity in set(zip(lane_addresses.tolist(), parities.tolist())):
        barrier = _barrier(execution, address, op)
        if barrier.completed_phases % 2 == lane_parity:
            targets[address] = barrier.completed_phases + 1

    def complete() -> bool:
        for address, target in targets.items():
            barrier = _barrier(execution, address, op)
            if barrier.completed_phases < target:
                _settle(execution, barrier)
            if barrier.completed_phases < target:
                return False
        return True

    def missing() -> str:
        address = next(a for a, t in targets.items() if _barrier(execution, a, op).completed_phases < t)
        return _missing(_barrier(execution, address, op))

    role = current_scheduler(execution)
    if not (complete() if role is None else role[0].wait_until(role[1], complete, missing)):
        others = [] if role is None else role[0].other_waits(role[1])
        raise InterpreterError(
            f"waits forever on an mbarrier {missing()}"
            + "".join(f"; every warp role waits, another on an mbarrier {other}" for other in others),
            op,
        )
    for address in np.unique(lane_addresses).tolist():
        _acquire(execution, _barrier(execution, address, op), lane_addresses == address, mask)
    return []


def _warp_sync(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    """The lanes of each warp meet: each warp's threads acquire what all of them did (race
    checks). Every lane of a warp that runs it must be active."""
    tracker = execution.level.shared_tracker
    if tracker is None:  # the loop level checks writes only: nothing to order
        return []
    blocks, threads = _active_threads(execution, mask)
    warps = blocks * tracker.threads_per_block + threads // WARP_SIZE
    for warp in np.unique(warps).tolist():
        members = threads[warps == warp]
        block, first = int(blocks[warps == warp][0]), int(members[0]) // WARP_SIZE * WARP_SIZE
        lanes = min(WARP_SIZE, tracker.threads_per_block - first)
        if members.size != lanes:
            raise InterpreterError(
                f"loop.warp_sync reached by {members.size} of the {lanes} lanes of warp {first // WARP_SIZE} "
                f"of {tracker.describe_block(block)}: a warp's lanes must reach it together",
                op,
            )
        tracker.sync_warp(block, members)
    return []


def _missing(barrier: MBarrier) -> str:
    return (
        f"phase of parity {barrier.completed_phases % 2} that never completes: {barrier.arrivals_missing} of "
        f"{barrier.count} arrivals missing, transaction balance {barrier.balance} bytes (expected minus copied)"
    )


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
    _check_innermost_alignment(op, source, source_indices, mask)
    inside = _inside_source(source, source_indices, box)
    values = execution.read(_box_addresses(source, source_indices, box), source.dtype, mask, op, len(box), inside)
    targets = vector_addresses(destination, destination_indices, box)
    if execution.machine.check_races:  # at issue, as an async copy: a copy over what other threads still read
        execution.track_write(targets, mask, source.dtype.itemsize, len(box), op)
    lanes_shape = tuple(execution.lanes.shape)
    values = np.broadcast_to(values, lanes_shape + box).reshape((-1,) + box)
    targets = np.broadcast_to(targets, lanes_shape + box).reshape((-1,) + box)
    state = state_of(execution)
    memory = execution.machine.memory
    barrier_addresses = _barrier_addresses(execution, op, barrier_value, barrier_indices, mask)
    for position, (lane, barrier_address) in enumerate(zip(_active_lanes(execution, mask), barrier_addresses.tolist())):
        barrier = _barrier(execution, barrier_address, op)
        _settle(execution, barrier)
        # The copy's completion releases its bytes (written by the issuing thread) into the phase.
        _release(execution, barrier, np.arange(barrier_addresses.size) == position, mask)
        copy = PendingCopy(op, targets[lane].reshape(-1), np.array(values[lane].reshape(-1)), None)
        state.check(memory, copy.addresses, copy.values.dtype.itemsize, op, True)
        state.mark(memory, copy, 1)
        barrier.copies.append(copy)
        barrier.balance -= copy.values.nbytes
    return []


def _check_innermost_alignment(op: loop.TmaLoadOp, source: MemRefValue, indices: list[object], mask: Mask) -> None:
    """Reports a copy whose box starts at an innermost coordinate that is not a multiple of
    `TMA_COORDINATE_ALIGNMENT` bytes: the copy engine stops such a copy with an illegal
    instruction (seen on an H100 for a box shifted by one f16 column, BENCHMARKS.md, conv11),
    whatever the box or the bounds; the outer coordinates may be anything, negative included."""
    elements = TMA_COORDINATE_ALIGNMENT // source.dtype.itemsize
    innermost = np.asarray(indices[-1])
    misaligned = innermost % elements != 0
    if mask is not None:  # only the lanes that issue the copy
        innermost, misaligned = np.broadcast_arrays(innermost, misaligned & mask)
    if np.any(misaligned):
        first = int(innermost[misaligned].reshape(-1)[0])
        raise InterpreterError(
            f"bulk tensor copy from innermost coordinate {first}: the copy engine needs it to be a multiple of "
            f"{elements} elements ({TMA_COORDINATE_ALIGNMENT} bytes) and stops the kernel with an illegal instruction otherwise",
            op,
        )


def _box_addresses(source: MemRefValue, indices: list[object], box: tuple[int, ...]) -> np.ndarray:
    """The byte address of each element of the box (lane axes, then the box's), its position
    clamped into the source per dimension: the elements outside are not read (`_inside_source`),
    and a box that starts before the source (negative coordinates: a convolution's padding) keeps
    every inside element at its own position."""
    rank = len(box)
    offsets = np.zeros((), dtype=np.int64)
    for axis, (index, size, extent, stride) in enumerate(zip(indices, source.shape, box, source.strides)):
        shape = [1] * rank
        shape[axis] = extent
        position = np.asarray(index, dtype=np.int64)[(...,) + (None,) * rank] + np.arange(extent).reshape(shape)
        offsets = offsets + np.clip(position, 0, size - 1) * stride
    return np.asarray(source.address([0] * len(indices))) + offsets * source.dtype.itemsize


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
        MappingProxyType(
            {loop.MbarrierInitOp: _init, loop.MbarrierArriveOp: _arrive, loop.MbarrierWaitOp: _wait, loop.TmaLoadOp: _tma_load, loop.WarpSyncOp: _warp_sync}
        ),
        MappingProxyType({}),
    )
