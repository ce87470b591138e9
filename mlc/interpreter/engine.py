"""The lane-vectorized execution engine that every level's interpreter runs on.

One engine runs host functions, tile programs, loop kernels, `mlc_gpu` kernels and `llvm.func`s.
Each SSA value is a numpy array over the *lanes* of the running code (see `values.py`): a host
function or a tile program has no lane axes (one lane), a loop kernel one axis per nesting depth
of `loop.parallel`, a GPU kernel six (grid z, y, x, then block z, y, x), and the body of a
`tile.map` the axes of its tile. Every op then runs once for all lanes, under a *mask* of the
lanes that are active; pure ops simply compute for every lane, and only memory, control flow and
synchronization look at the mask.

Why not xDSL's `Interpreter`: it keeps one Python value per SSA value and follows one successor
per terminator, so it cannot run lanes that diverge, and its arith/math functions compute f32 in
f64. What we need of it (a value environment, dispatch on op type, region calls) is a few lines
here, and owning it lets a block be prepared once (`BlockPlan`) and run many times cheaply.

Structured control flow (`scf.if`, `scf.for`, ...) is implemented by its ops, with masks.
Unstructured control flow (several blocks in a region) runs by *minimum program counter*: each
lane has a program counter (its block's number in `control_flow.block_order`); the lanes at the
lowest-numbered block run it next, their results are merged into the values of the other lanes,
and the terminator moves them on. This reconverges structured code exactly where the hardware
would. Terminators are kept apart from other ops: they return an `Exit` (the region's results)
or a `Branch` (per-lane successor blocks and their arguments).

`Level` is what the running level adds: how allocations are scoped (per lane, per block), the
race trackers, and buffers to release when a launch ends. Dialect interpreters register plain
functions in an `OperationTable`; an implementation reads operands with `execution.operands(op)`
and returns the results (or None), or runs regions with `execution.run_region`.
"""

from __future__ import annotations

import math
from typing import Any
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.traits import IsTerminator

from mlc.interpreter.control_flow import block_order
from mlc.interpreter.errors import InterpreterError, OutOfBounds, UnsupportedOperation
from mlc.interpreter.memory import Buffer, BufferKind, Memory
from mlc.interpreter.races import SharedMemoryTracker, WriteTracker
from mlc.interpreter.values import Mask, as_array, dtype_of, merge, poison_value, widen_mask, zero_value

SHARED_MEMORY_SPACE = 3
PRIVATE_MEMORY_SPACE = 5


@dataclass(frozen=True)
class Exit:
    """The lanes running this terminator leave the region with `values`."""

    values: Sequence[object]


@dataclass(frozen=True)
class Branch:
    """Lanes where `condition` holds (all, when None) go to `block` with `arguments`, in order."""

    targets: Sequence[tuple[np.ndarray | None, Block, Sequence[object]]]


Transfer = Exit | Branch
Implementation = Callable[["Execution", Operation, Mask], Sequence[object] | None]
TerminatorImplementation = Callable[["Execution", Operation, Mask], Transfer]


@dataclass(frozen=True)
class OperationTable:
    """Op implementations by op class, and terminator implementations apart."""

    operations: Mapping[type[Operation], Implementation] = field(default_factory=dict)
    terminators: Mapping[type[Operation], TerminatorImplementation] = field(default_factory=dict)

    def merged(self, other: OperationTable) -> OperationTable:
        return OperationTable(
            {**self.operations, **other.operations}, {**self.terminators, **other.terminators}
        )


@dataclass(frozen=True)
class LaneSpace:
    """The lanes of the running code: their extents, and each lane's id in the launch."""

    shape: tuple[int, ...]
    lane_ids: np.ndarray

    @staticmethod
    def single(lane_id: int = 0) -> LaneSpace:
        return LaneSpace((), np.asarray(lane_id, dtype=np.int64))

    @property
    def count(self) -> int:
        return math.prod(self.shape)


class Level:
    """What a level adds to the engine. The base class is the host: one lane, nothing tracked."""

    def __init__(self) -> None:
        self.write_tracker: WriteTracker | None = None
        self.shared_tracker: SharedMemoryTracker | None = None
        self.allocations: list[Buffer] = []
        self.launch_globals: dict[str, np.ndarray] = {}
        self.async_copies: Any = None
        """The launch's async copies in flight (`async_copy.AsyncCopies`), made at the first copy."""

    def allocation_scope(self, lanes: LaneSpace, memory_space: int) -> tuple[int, np.ndarray]:
        """How many copies an allocation has, and which copy each lane uses (default: one per lane)."""
        count = lanes.count
        return count, np.arange(count, dtype=np.int64).reshape(lanes.shape)

    def block_and_thread(self, lane_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        raise InterpreterError("this level has no blocks of threads")

    def release(self, memory: Memory) -> None:
        for buffer in self.allocations:
            memory.release(buffer)
        self.allocations.clear()
        self.launch_globals.clear()
        self.async_copies = None


PlannedOperation = tuple[Operation, Implementation, tuple[SSAValue, ...], tuple[SSAValue, ...]]
"""An op, its implementation, its operands and its results (looked up once, used every run)."""


@dataclass(frozen=True)
class BlockPlan:
    """A block prepared for repeated execution: its ops with their implementations."""

    operations: tuple[PlannedOperation, ...]
    terminator: Operation | None
    terminator_implementation: TerminatorImplementation | None


class Machine:
    """Module-wide state of one interpreter run: memory, symbols, implementations, caches."""

    def __init__(self, module: Operation, table: OperationTable, check_races: bool = True):
        self.module = module
        self.table = table
        self.check_races = check_races
        self.memory = Memory()
        self.symbols: dict[str, Operation] = {}
        for op in module.regions[0].ops if module.regions else ():
            name = op.properties.get("sym_name") or op.attributes.get("sym_name")
            if name is not None:
                self.symbols[name.data] = op  # type: ignore[attr-defined]
        self.module_globals: dict[str, np.ndarray] = {}
        # Per-op data derived from the IR (constants, operand segments, GEP layouts), computed once.
        self.cache: dict[object, object] = {}
        self._result_dtypes: dict[Operation, np.dtype] = {}
        self._plans: dict[Block, BlockPlan] = {}
        self._orders: dict[Region, tuple[list[Block], dict[Block, int]]] = {}

    def lookup(self, name: str, user: Operation | None = None) -> Operation:
        op = self.symbols.get(name)
        if op is None:
            raise InterpreterError(f"'@{name}' does not name an op at the top of the module", user)
        return op

    def result_dtype(self, op: Operation) -> np.dtype:
        """The dtype of `op`'s first result (cached per op: the hot path of every arithmetic op)."""
        dtype = self._result_dtypes.get(op)
        if dtype is None:
            dtype = dtype_of(op.results[0].type)
            self._result_dtypes[op] = dtype
        return dtype

    def cached(self, op: Operation, compute: Callable[[], object]) -> object:
        """`compute()` for `op`, computed on first use (for data derived from the IR only)."""
        value = self.cache.get(op)
        if value is None:
            value = compute()
            self.cache[op] = value
        return value

    def plan(self, block: Block) -> BlockPlan:
        plan = self._plans.get(block)
        if plan is None:
            plan = self._make_plan(block)
            self._plans[block] = plan
        return plan

    def _make_plan(self, block: Block) -> BlockPlan:
        operations = []
        terminator = None
        terminator_implementation = None
        for op in block.ops:
            if op is block.last_op and type(op) in self.table.terminators:
                terminator = op
                terminator_implementation = self.table.terminators[type(op)]
                break
            implementation = self.table.operations.get(type(op))
            if implementation is None:
                if op is block.last_op and op.has_trait(IsTerminator):
                    raise UnsupportedOperation(f"the interpreter cannot run the terminator '{op.name}'", op)
                raise UnsupportedOperation(f"the interpreter cannot run '{op.name}'", op)
            operations.append((op, implementation, tuple(op.operands), tuple(op.results)))
        return BlockPlan(tuple(operations), terminator, terminator_implementation)

    def order(self, region: Region) -> tuple[list[Block], dict[Block, int]]:
        cached = self._orders.get(region)
        if cached is None:
            order = block_order(region)
            cached = (order, {block: index for index, block in enumerate(order)})
            self._orders[region] = cached
        return cached


class Execution:
    """One running function or kernel: its SSA values, its lanes, and its level."""

    def __init__(self, machine: Machine, lanes: LaneSpace, level: Level):
        self.machine = machine
        self.lanes = lanes
        self.level = level
        self.values: dict[SSAValue, object] = {}
        # While a block of a multi-block region runs for some lanes only, results are merged into
        # the other lanes' values instead of replacing them.
        self.merge_mask: np.ndarray | None = None
        # The op being run and its operands, so that `operands` need not walk the op's use lists.
        self._current_op: Operation | None = None
        self._current_operands: tuple[SSAValue, ...] = ()

    def child(self) -> Execution:
        """A fresh value environment on the same lanes (for calls)."""
        return Execution(self.machine, self.lanes, self.level)

    # Values ------------------------------------------------------------------------------------

    def get(self, value: SSAValue) -> object:
        try:
            return self.values[value]
        except KeyError:
            raise InterpreterError(f"value %{value.name_hint or '?'} is used before it is defined") from None

    def operands(self, op: Operation) -> list[object]:
        operands = self._current_operands if op is self._current_op else tuple(op.operands)
        values = self.values
        try:
            return [values[operand] for operand in operands]
        except KeyError:
            return [self.get(operand) for operand in operands]

    # Regions -----------------------------------------------------------------------------------

    def run_region(self, region: Region, arguments: Sequence[object], mask: Mask) -> list[object]:
        """Runs `region` for the lanes of `mask` and returns the values its lanes exit with."""
        blocks = region.blocks
        entry = blocks.first
        if entry is None:
            raise InterpreterError("cannot run an empty region (a declaration?)", region.parent_op())
        if entry is blocks.last:
            plan = self.machine.plan(entry)
            # A lone block that branches (to itself) needs the scheduler; one that exits does not.
            if plan.terminator is None or not plan.terminator.successors:
                return self._run_single_block(entry, plan, arguments, mask)
        return self._run_scheduled(region, arguments, mask)

    def _run_single_block(
        self, block: Block, plan: BlockPlan, arguments: Sequence[object], mask: Mask
    ) -> list[object]:
        saved = self.merge_mask
        self.merge_mask = None
        try:
            for argument, value in zip(block.args, arguments):
                self.values[argument] = value
            self._run_operations(plan, mask)
            if plan.terminator is None:
                return []
            transfer = self._terminate(plan, mask)
            assert isinstance(transfer, Exit)
            return list(transfer.values)
        finally:
            self.merge_mask = saved

    def _run_operations(self, plan: BlockPlan, mask: Mask) -> None:
        values = self.values
        merge_mask = self.merge_mask
        for op, implementation, operands, targets in plan.operations:
            self._current_op = op
            self._current_operands = operands
            try:
                results = implementation(self, op, mask)
            except InterpreterError as error:
                error.locate(op)
                raise
            except (ArithmeticError, ValueError, TypeError, IndexError) as error:
                raise InterpreterError(f"internal error while interpreting: {error!r}", op) from error
            if results is None:
                continue
            if len(results) != len(targets):
                raise InterpreterError(f"expected {len(targets)} results, got {len(results)}", op)
            if merge_mask is None:
                for target, result in zip(targets, results):
                    values[target] = result
            else:
                for target, result in zip(targets, results):
                    values[target] = merge(merge_mask, result, values.get(target), target.type)

    def _terminate(self, plan: BlockPlan, mask: Mask) -> Transfer:
        assert plan.terminator is not None and plan.terminator_implementation is not None
        try:
            return plan.terminator_implementation(self, plan.terminator, mask)
        except InterpreterError as error:
            error.locate(plan.terminator)
            raise

    def _run_scheduled(self, region: Region, arguments: Sequence[object], mask: Mask) -> list[object]:
        if not self.lanes.shape:
            return self._run_sequential(region, arguments, mask)
        order, numbers = self.machine.order(region)
        done = len(order)
        shape = self.lanes.shape
        if mask is None:
            counters = np.zeros(shape, dtype=np.int32)
        else:
            counters = np.where(np.broadcast_to(mask, shape), 0, done).astype(np.int32)
        for argument, value in zip(order[0].args, arguments):
            self.values[argument] = value
        results: list[object] | None = None
        result_types: list[Attribute] = []
        saved = self.merge_mask
        try:
            while True:
                current = int(counters.min())
                if current >= done:
                    break
                here = counters == current
                lane_mask = None if here.all() else here
                self.merge_mask = lane_mask
                plan = self.machine.plan(order[current])
                self._run_operations(plan, lane_mask)
                if plan.terminator is None:
                    raise InterpreterError(
                        "a block of a multi-block region has no terminator", region.parent_op()
                    )
                transfer = self._terminate(plan, lane_mask)
                if isinstance(transfer, Branch):
                    self._branch(transfer, here, counters, numbers)
                    continue
                if results is None:
                    results = list(transfer.values)
                    result_types = [v.type for v in plan.terminator.operands]
                else:
                    results = [
                        merge(lane_mask, new, old, t)
                        for new, old, t in zip(transfer.values, results, result_types)
                    ]
                counters[here] = done
        finally:
            self.merge_mask = saved
        return results if results is not None else _no_results(region)

    def _run_sequential(self, region: Region, arguments: Sequence[object], mask: Mask) -> list[object]:
        """The scheduler for a single lane: follow the branches."""
        if mask is not None and not np.all(mask):
            return _no_results(region)
        block = region.blocks.first
        assert block is not None
        saved = self.merge_mask
        self.merge_mask = None
        try:
            while True:
                for argument, value in zip(block.args, arguments):
                    self.values[argument] = value
                plan = self.machine.plan(block)
                self._run_operations(plan, None)
                if plan.terminator is None:
                    raise InterpreterError(
                        "a block of a multi-block region has no terminator", region.parent_op()
                    )
                transfer = self._terminate(plan, None)
                if isinstance(transfer, Exit):
                    return list(transfer.values)
                for condition, target, target_arguments in transfer.targets:
                    if condition is None or bool(condition):
                        block, arguments = target, target_arguments
                        break
                else:
                    raise InterpreterError("no branch was taken", plan.terminator)
        finally:
            self.merge_mask = saved

    def _branch(
        self, transfer: Branch, here: np.ndarray, counters: np.ndarray, numbers: dict[Block, int]
    ) -> None:
        """Moves the lanes `here` to the successors their conditions pick, with block arguments."""
        remaining = here
        for condition, target, arguments in transfer.targets:
            taken = remaining if condition is None else remaining & np.asarray(condition, dtype=bool)
            if not taken.any():
                continue
            remaining = remaining & ~taken
            taken_mask = None if taken.all() else taken
            for argument, value in zip(target.args, arguments):
                self.values[argument] = merge(taken_mask, value, self.values.get(argument), argument.type)
            if target not in numbers:
                raise InterpreterError("branch to a block outside the running region")
            counters[taken] = numbers[target]

    # Memory ------------------------------------------------------------------------------------

    def allocate(
        self,
        name: str,
        unit_bytes: int,
        memory_space: int,
        element_dtype: np.dtype,
        element_shape: tuple[int, ...] = (),
        description: str = "",
    ) -> np.ndarray:
        """Allocates poisoned memory for the running lanes; returns each lane's base address."""
        units, index = self.level.allocation_scope(self.lanes, memory_space)
        kind = {SHARED_MEMORY_SPACE: BufferKind.SHARED, PRIVATE_MEMORY_SPACE: BufferKind.PRIVATE}.get(
            memory_space, BufferKind.GLOBAL
        )
        buffer = self.machine.memory.allocate(
            name,
            unit_bytes,
            units,
            kind,
            granularity=element_dtype.itemsize,
            element_shape=element_shape,
            fill=poison_value(element_dtype),
            description=description,
        )
        self.level.allocations.append(buffer)
        return buffer.base + index * unit_bytes

    def read(
        self,
        addresses: np.ndarray,
        dtype: np.dtype,
        mask: Mask,
        op: Operation,
        trailing_rank: int = 0,
        element_mask: np.ndarray | None = None,
    ) -> np.ndarray:
        """Loads `dtype` values at byte `addresses` for the active lanes (zero elsewhere).

        `addresses` has the lane axes, then `trailing_rank` axes of the elements each lane reads
        (a vector, a tile); `element_mask` (over both) leaves out single elements, such as the
        masked-off or out-of-bounds elements of a masked vector load.
        """
        addresses = np.asarray(addresses, dtype=np.int64)
        lanes_mask = _access_mask(mask, trailing_rank, element_mask)
        # A uniform address read by some lanes is one read, and its value is uniform.
        access_mask = None if addresses.ndim == 0 and (lanes_mask is None or lanes_mask.any()) else lanes_mask
        memory = self.machine.memory
        shape, flat, selector = _flatten(addresses, access_mask)
        pieces = memory.locate(flat, dtype.itemsize)
        if self.level.async_copies is not None and self.level.async_copies.in_flight:
            self.level.async_copies.check(memory, flat, dtype.itemsize, op, False)
        if self.machine.check_races and any(self._tracked(p.buffer, False, op) for p in pieces):
            self._track(addresses, lanes_mask, dtype.itemsize, trailing_rank, False, op)
        if len(pieces) == 1 and isinstance(pieces[0].positions, slice):
            values = memory.gather(pieces[0], dtype)
        else:
            values = np.empty(flat.size, dtype=dtype)
            for piece in pieces:
                values[piece.positions] = memory.gather(piece, dtype)
        if selector is None:
            return values.reshape(shape)
        result = np.zeros(shape, dtype=dtype)
        result[selector] = values
        return result

    def write(
        self,
        addresses: np.ndarray,
        values: object,
        dtype: np.dtype,
        mask: Mask,
        op: Operation,
        trailing_rank: int = 0,
        element_mask: np.ndarray | None = None,
    ) -> None:
        """Stores `values` (cast to `dtype`) at byte `addresses` for the active lanes (see `read`)."""
        addresses = np.asarray(addresses, dtype=np.int64)
        values = as_array(values, dtype)
        mask = _access_mask(mask, trailing_rank, element_mask)
        shape = np.broadcast_shapes(addresses.shape, values.shape)
        addresses_full = np.broadcast_to(addresses, shape)
        values_full = np.broadcast_to(values, shape)
        _, flat, selector = _flatten(addresses_full, mask)
        flat_values = (
            values_full.reshape(-1)
            if selector is None
            else np.broadcast_to(values_full, selector.shape)[selector]
        )
        memory = self.machine.memory
        pieces = memory.locate(flat, dtype.itemsize)
        for piece in pieces:
            if piece.buffer.read_only:
                raise InterpreterError(f"write to the constant {piece.buffer.describe()}", op)
        if self.level.async_copies is not None and self.level.async_copies.busy:
            self.level.async_copies.check(memory, flat, dtype.itemsize, op, True)
        if self.machine.check_races and any(self._tracked(p.buffer, True, op) for p in pieces):
            self._track(addresses_full, mask, dtype.itemsize, trailing_rank, True, op)
        for piece in pieces:
            memory.scatter(piece, dtype, flat_values[piece.positions])

    def atomic(
        self,
        addresses: np.ndarray,
        values: object,
        dtype: np.dtype,
        mask: Mask,
        op: Operation,
        combine: Callable[[np.ndarray, np.ndarray], np.ndarray],
    ) -> np.ndarray:
        """Atomic read-modify-write; lanes hitting one address take turns in lane order.

        Returns the values each lane found. Atomics are exempt from the race checks.
        """
        addresses = np.asarray(addresses, dtype=np.int64)
        values = as_array(values, dtype)
        shape = np.broadcast_shapes(addresses.shape, values.shape, () if mask is None else np.shape(mask))
        selector = np.ones(shape, dtype=bool) if mask is None else np.broadcast_to(mask, shape)
        flat = np.broadcast_to(addresses, shape)[selector]
        flat_values = np.broadcast_to(values, shape)[selector]
        old = np.empty(flat.size, dtype=dtype)
        memory = self.machine.memory
        # Lanes with the same address form a queue; round r serves the r-th lane of every queue.
        order = np.argsort(flat, kind="stable")
        sorted_addresses = flat[order]
        starts = np.ones(flat.size, dtype=bool)
        starts[1:] = sorted_addresses[1:] != sorted_addresses[:-1]
        group_start = np.maximum.accumulate(np.where(starts, np.arange(flat.size), 0))
        turn = np.empty(flat.size, dtype=np.int64)
        turn[order] = np.arange(flat.size) - group_start
        for round_number in range(int(turn.max()) + 1 if flat.size else 0):
            chosen = np.nonzero(turn == round_number)[0]
            for piece in memory.locate(flat[chosen], dtype.itemsize):
                if piece.buffer.read_only:
                    raise InterpreterError(f"atomic update of the constant {piece.buffer.describe()}", op)
                positions = chosen[piece.positions]
                current = memory.gather(piece, dtype)
                old[positions] = current
                memory.scatter(piece, dtype, combine(current, flat_values[positions]).astype(dtype))
        result = np.zeros(shape, dtype=dtype)
        result[selector] = old
        return result

    def lanes_rank(self) -> int:
        return len(self.lanes.shape)

    def track_write(self, addresses: np.ndarray, mask: Mask, size: int, trailing_rank: int, op: Operation) -> None:
        """Tells the race checkers of a write without writing (an async copy as it is issued)."""
        addresses = np.asarray(addresses, dtype=np.int64)
        widened = _access_mask(mask, trailing_rank, None)
        _, flat, _ = _flatten(addresses, widened)
        if any(self._tracked(p.buffer, True, op) for p in self.machine.memory.locate(flat, size)):
            self._track(addresses, widened, size, trailing_rank, True, op)

    def _tracked(self, buffer: Buffer, is_write: bool, op: Operation) -> bool:
        level = self.level
        if buffer.kind == BufferKind.SHARED and level.shared_tracker is not None:
            return True
        return (
            is_write
            and level.write_tracker is not None
            and buffer.kind in (BufferKind.GLOBAL, BufferKind.SHARED)
        )

    def _track(
        self, addresses: np.ndarray, mask: Mask, size: int, trailing_rank: int, is_write: bool, op: Operation
    ) -> None:
        """Feeds one access, lane by lane, to the race trackers."""
        lane_ids = widen_mask(np.asarray(self.lanes.lane_ids), trailing_rank)
        lane_shape = tuple(self.lanes.shape) + (1,) * trailing_rank
        shape = np.broadcast_shapes(
            addresses.shape, lane_shape, lane_ids.shape, () if mask is None else mask.shape
        )
        _, flat, selector = _flatten(np.broadcast_to(addresses, shape), mask)
        lanes = np.broadcast_to(lane_ids, shape)
        flat_lanes = (
            lanes.reshape(-1) if selector is None else np.broadcast_to(lanes, selector.shape)[selector]
        )
        for piece in self.machine.memory.locate(flat, size):
            buffer = piece.buffer
            piece_lanes = flat_lanes[piece.positions]
            keys = piece.offsets // buffer.granularity
            if buffer.kind == BufferKind.SHARED and self.level.shared_tracker is not None:
                blocks, threads = self.level.block_and_thread(piece_lanes)
                units = piece.offsets // buffer.unit_bytes
                foreign = np.nonzero(units != blocks)[0]
                if foreign.size:
                    raise OutOfBounds(
                        f"a thread of block {int(blocks[foreign[0]])} accessed copy "
                        f"{int(units[foreign[0]])} of {buffer.describe()}, which belongs to another block",
                        op,
                    )
                self.level.shared_tracker.record(buffer, keys, blocks, threads, is_write, op)
            elif is_write and self.level.write_tracker is not None and buffer.kind != BufferKind.PRIVATE:
                self.level.write_tracker.record(buffer, keys, piece_lanes, op)


def _no_results(region: Region) -> list[object]:
    """Values for a region that no lane ran to its end: zeros of the enclosing op's result types."""
    parent = region.parent_op()
    return [zero_value(result.type) for result in parent.results] if parent is not None else []


def _access_mask(mask: Mask, trailing_rank: int, element_mask: np.ndarray | None) -> Mask:
    """The lanes mask widened over the elements of each lane, and the element mask applied."""
    widened = None if mask is None else widen_mask(np.asarray(mask), trailing_rank)
    if element_mask is None:
        return widened
    element_mask = np.asarray(element_mask, dtype=bool)
    return element_mask if widened is None else (widened & element_mask)


def _flatten(addresses: np.ndarray, mask: Mask) -> tuple[tuple[int, ...], np.ndarray, np.ndarray | None]:
    """The access's shape, its active addresses (flat), and the boolean selector (None: all)."""
    if mask is None:
        return addresses.shape, addresses.reshape(-1), None
    shape = np.broadcast_shapes(addresses.shape, mask.shape)
    selector = np.broadcast_to(mask, shape)
    return shape, np.broadcast_to(addresses, shape)[selector], selector


def launch(
    machine: Machine, body: Region, arguments: Sequence[object], lanes: LaneSpace, level: Level
) -> list[object]:
    """Runs a kernel body on `lanes` and releases what the launch allocated."""
    execution = Execution(machine, lanes, level)
    try:
        return execution.run_region(body, arguments, None)
    finally:
        level.release(machine.memory)
