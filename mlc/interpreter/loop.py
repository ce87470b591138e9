"""The loop interpreter: the executable definition of the loop ops, on the shared engine.

A `loop.kernel` runs once; every `loop.parallel` runs all its iterations at once as lanes of the
engine (see `mlc.interpreter.engine`). Each nesting depth of parallel loops owns one lane axis, so
a value computed inside `loop.parallel %b < 4 { loop.parallel %t < 256 {...} }` has shape
(4, 256), one computed between the two loops (4, 1), and a value before both is 0-d. Sibling
loops at one depth reuse the axis. This executes the parallel iterations in lockstep, which is a
valid schedule of independent iterations, and the statements of a body in order, which is the
sequential semantics the dialect defines between sibling loops. Mappings (`block.x`,
`thread.x`, ...) do not change the semantics; they only name lanes in messages.

Allocations (`memref.alloc`/`alloca`, any memory space) made inside parallel loops give one buffer
per iteration of the enclosing loops: shared memory allocated in a block loop is one per block.

Races: the iterations of one execution of a parallel loop must be independent, so two of them
writing one element (global or shared memory) is reported as a data race (WAW), naming the two
iterations. Writes in different executions (sibling loops, successive iterations of an enclosing
sequential loop) are ordered. Reads are not checked.

`loop.all_reduce` runs its butterfly on the lane axis of the enclosing loop: for each mask bit,
each lane combines its value with the lane whose index differs in that bit.

A `loop.launch` of an `llvm.func` (a loop kernel lowered for the CPU) runs it once, as a plain
function on bare pointers.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import MappingProxyType

import numpy as np
from xdsl.dialects import llvm
from xdsl.ir import Operation

from mlc.dialects.loop import ops as loop
from mlc.interpreter.engine import Execution, Exit, LaneSpace, Level, Machine, OperationTable, launch
from mlc.interpreter.errors import InterpreterError
from mlc.interpreter.llvm import plain_kernel_arguments
from mlc.interpreter.races import RaceAxes, WriteTracker
from mlc.interpreter.values import Mask, as_array, dtype_of, kernel_parameters


class LoopNestLevel(Level):
    """The lane axes of one loop kernel (one per parallel depth) and its write checks."""

    def __init__(self, kernel: loop.KernelOp, check_races: bool):
        super().__init__()
        self.depths: dict[Operation, int] = {}
        extents: list[int] = []
        labels: list[set[str]] = []
        for op in kernel.walk():
            if isinstance(op, loop.ParallelOp):
                depth = len(op.enclosing_parallel_loops())
                self.depths[op] = depth
                while len(extents) <= depth:
                    extents.append(1)
                    labels.append(set())
                extents[depth] = max(extents[depth], op.trip_count)
                labels[depth].add(op.mapping_name() or "unmapped")
        self.extents = tuple(extents)
        self.labels = tuple(
            next(iter(names)) if len(names) == 1 else f"depth {d}" for d, names in enumerate(labels)
        )
        self.strides = tuple(int(np.prod(self.extents[d + 1 :])) for d in range(len(self.extents)))
        self._serials = [0] * len(self.extents)
        self._counter = 0
        if check_races and self.extents:
            self.write_tracker = WriteTracker(
                RaceAxes(
                    self.extents,
                    self._epochs,
                    self.describe_lane,
                    "in one execution of a parallel loop (its iterations must be independent)",
                )
            )

    def lanes(self) -> LaneSpace:
        return LaneSpace((1,) * len(self.extents), np.asarray(0, dtype=np.int64))

    def _epochs(self, lanes: np.ndarray) -> list[np.ndarray]:
        return [np.full(lanes.shape, serial, dtype=np.int64) for serial in self._serials]

    def new_epoch(self, depth: int) -> None:
        """A parallel loop at `depth` starts or ends: writes before and after it are ordered."""
        self._counter += 1
        self._serials[depth] = self._counter
        for deeper in range(depth + 1, len(self._serials)):
            self._serials[deeper] = self._counter

    def describe_lane(self, lane: int) -> str:
        coordinates = [(lane // stride) % extent for stride, extent in zip(self.strides, self.extents)]
        return "iteration (" + ", ".join(f"{label} {c}" for label, c in zip(self.labels, coordinates)) + ")"


def run_kernel(machine: Machine, kernel: loop.KernelOp, arguments: Sequence[object]) -> None:
    parameters = kernel_parameters(arguments, kernel.function_type.inputs.data)
    level = LoopNestLevel(kernel, machine.check_races)
    launch(machine, kernel.body, parameters, level.lanes(), level)


def _parallel(execution: Execution, op: Operation, mask: Mask) -> None:
    assert isinstance(op, loop.ParallelOp)
    level = execution.level
    if not isinstance(level, LoopNestLevel):
        raise InterpreterError("'loop.parallel' can only run inside a loop kernel", op)
    depth = level.depths[op]
    trip_count = op.trip_count
    outer = execution.lanes
    shape = list(outer.shape)
    shape[depth] = trip_count
    axis_shape = [1] * len(shape)
    axis_shape[depth] = trip_count
    induction = np.arange(trip_count, dtype=np.int64).reshape(axis_shape)
    execution.lanes = LaneSpace(tuple(shape), outer.lane_ids + induction * level.strides[depth])
    level.new_epoch(depth)
    try:
        execution.run_region(op.body, [induction], mask)
    finally:
        execution.lanes = outer
        level.new_epoch(depth)
    return None


def _all_reduce(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    """The butterfly of the dialect's definition, on the lane axis of the enclosing loop."""
    assert isinstance(op, loop.AllReduceOp)
    level = execution.level
    loop_op = op.enclosing_loop()
    if not isinstance(level, LoopNestLevel) or loop_op is None:
        raise InterpreterError("'loop.all_reduce' can only run inside a loop.parallel of a loop kernel", op)
    axis = level.depths[loop_op]
    lanes = execution.lanes.shape
    value = np.array(np.broadcast_to(as_array(execution.get(op.value), dtype_of(op.value.type)), lanes))
    indices = np.arange(loop_op.trip_count)
    bits = op.mask.value.data
    bit = 1
    while bit <= bits:
        if bits & bit:
            partner = np.take(value, indices ^ bit, axis=axis)
            (combined,) = execution.run_region(op.body, [value, partner], mask)
            value = np.array(np.broadcast_to(as_array(combined, value.dtype), lanes))
        bit <<= 1
    return [value]


def _launch(execution: Execution, op: Operation, mask: Mask) -> None:
    assert isinstance(op, loop.LaunchOp)
    machine = execution.machine
    kernel = machine.lookup(op.kernel.root_reference.data, op)
    arguments = execution.operands(op)
    if isinstance(kernel, loop.KernelOp):
        run_kernel(machine, kernel, arguments)
    elif isinstance(kernel, llvm.FuncOp):
        launch(machine, kernel.body, plain_kernel_arguments(arguments), LaneSpace.single(), Level())
    else:
        raise InterpreterError(f"'loop.launch' cannot run a '{kernel.name}'", op)
    return None


def _exit(execution: Execution, op: Operation, mask: Mask) -> Exit:
    return Exit(execution.operands(op))


def table() -> OperationTable:
    return OperationTable(
        MappingProxyType({loop.ParallelOp: _parallel, loop.AllReduceOp: _all_reduce, loop.LaunchOp: _launch}),
        MappingProxyType({loop.YieldOp: _exit, loop.ReturnOp: _exit}),
    )
