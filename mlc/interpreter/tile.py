"""The tile interpreter: the executable definition of the tile ops, on the shared engine.

A `tile.launch` runs its `tile.kernel` once per grid point, one program after another (row-major
over the grid), each program being one lane of `mlc.interpreter.engine`; `tile.program_id` reads
the program's coordinate. Tile values are numpy arrays of the tile's shape and dtype.

* `tile.load` reads the block at the origin given by its indices; elements outside the memref
  (below 0 or past the end of a dimension) read as `padding` (zero when absent).
* `tile.store` writes the block; elements outside the memref are dropped.
* `tile.map` runs its scalar body once on whole arrays: inside it the engine's lanes are the
  tile's elements, so the arith/math implementations of the SIMT engine apply elementwise, and
  control flow in the body (`scf.if` on an element-dependent condition) runs under element masks.
  Scalars from outside the map broadcast.
* `tile.broadcast` follows numpy's rules; `tile.splat` fills a tile with a scalar.
* `tile.reduce` halves the reduced axis repeatedly, combining element i with element i + n/2 by
  running the combiner region on whole arrays (a fixed order; the dialect leaves it open).
* `tile.in_bounds` is the mask `tile.load` uses: true where the block's element is inside.
* `tile.range` gives each element its coordinate along an axis; `tile.gather` reads at per-element
  positions, padding outside the memref as `tile.load` does.
* `tile.dot` adds the products to the accumulator one K index at a time, in increasing order,
  each a fused multiply-add rounded once to f32 (`scalar.fma`, as `math.fma` is run): the order
  the loop lowering computes in, so the two agree bit for bit. A `tf32` / `3xtf32` precision
  multiplies the rounded or split operands (`mlc/dialects/precision.py`), 3xtf32's three
  products per K index small parts first.

Programs of one launch are not ordered with respect to each other: two programs writing one
element is reported as a data race (WAW). Reads of elements another program writes are not
checked.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import MappingProxyType

import numpy as np
from xdsl.ir import Operation, SSAValue

from mlc.dialects.precision import operand_pairs
from mlc.dialects.tile import ops as tile
from mlc.interpreter.engine import (
    Execution,
    Exit,
    LaneSpace,
    Level,
    Machine,
    OperationTable,
)
from mlc.interpreter.errors import InterpreterError
from mlc.interpreter.races import RaceAxes, WriteTracker
from mlc.interpreter.scalar import fma
from mlc.interpreter.values import Mask, MemRefValue, as_array, constant_value, dtype_of, kernel_parameters


class ProgramGridLevel(Level):
    """The programs of one tile launch: which one runs, and the write checks across them."""

    def __init__(self, grid: Sequence[int], check_races: bool):
        super().__init__()
        self.grid = tuple(grid)
        self.point: tuple[int, ...] = (0,) * len(self.grid)
        if check_races:
            count = int(np.prod(self.grid))
            self.write_tracker = WriteTracker(
                RaceAxes(
                    (count,),
                    lambda lanes: [np.zeros_like(lanes)],
                    self.describe_lane,
                    "(the programs of a launch are not ordered)",
                )
            )

    def describe_lane(self, lane: int) -> str:
        point = tuple(int(i) for i in np.unravel_index(lane, self.grid))
        return f"program {point}"


def _program_level(execution: Execution, op: Operation) -> ProgramGridLevel:
    if not isinstance(execution.level, ProgramGridLevel):
        raise InterpreterError(f"'{op.name}' can only run inside a tile kernel", op)
    return execution.level


def run_kernel(machine: Machine, kernel: tile.KernelOp, arguments: Sequence[object]) -> None:
    """Runs every program of `kernel`'s grid on the buffers `arguments`."""
    parameters = kernel_parameters(arguments, kernel.function_type.inputs.data)
    grid = kernel.grid_shape()
    level = ProgramGridLevel(grid, machine.check_races)
    try:
        for lane, point in enumerate(np.ndindex(*grid)):
            level.point = point
            Execution(machine, LaneSpace.single(lane), level).run_region(kernel.body, parameters, None)
    finally:
        level.release(machine.memory)


def _program_id(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    assert isinstance(op, tile.ProgramIdOp)
    return [np.int64(_program_level(execution, op).point[op.axis.value.data])]


def _block_positions(
    bounds: Sequence[int], origin: Sequence[object], shape: Sequence[int]
) -> tuple[list[np.ndarray], np.ndarray]:
    """Per-dimension element indices of the block at `origin`, and which lie inside `bounds`."""
    rank = len(shape)
    positions = []
    inside = np.ones((), dtype=bool)
    for axis, (start, extent, size) in enumerate(zip(origin, shape, bounds)):
        axis_shape = [1] * rank
        axis_shape[axis] = extent
        position = np.asarray(start, dtype=np.int64) + np.arange(extent, dtype=np.int64).reshape(axis_shape)
        positions.append(position)
        inside = inside & (position >= 0) & (position < size)
    safe = [np.where(inside, p, 0) for p in positions]
    return safe, np.broadcast_to(inside, tuple(shape))


def _load(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    assert isinstance(op, tile.LoadOp)
    memref_value = execution.get(op.source)
    assert isinstance(memref_value, MemRefValue)
    origin = [execution.get(i) for i in op.indices]
    tile_type = op.result.type
    assert isinstance(tile_type, tile.TileType)
    shape = tile_type.get_shape()
    positions, inside = _block_positions(memref_value.shape, origin, shape)
    return [_read_padded(execution, op, memref_value, positions, inside, mask)]


def _read_padded(
    execution: Execution, op: tile.LoadOp | tile.GatherOp, memref_value: MemRefValue, positions: list[np.ndarray], inside: np.ndarray, mask: Mask
) -> np.ndarray:
    """The elements of `memref_value` at `positions` (each inside it), the op's padding where not `inside`."""
    tile_type = op.result.type
    assert isinstance(tile_type, tile.TileType)
    shape, dtype = tile_type.get_shape(), dtype_of(tile_type)
    loaded = execution.read(memref_value.address(positions), dtype, mask, op, len(shape), inside)
    padding = (
        np.zeros((), dtype)
        if op.padding is None
        else as_array(constant_value(op.padding, tile_type.element_type), dtype)
    )
    return np.where(inside, np.broadcast_to(loaded, shape), padding)


def _store(execution: Execution, op: Operation, mask: Mask) -> None:
    assert isinstance(op, tile.StoreOp)
    value = execution.get(op.value)
    memref_value = execution.get(op.dest)
    assert isinstance(memref_value, MemRefValue)
    origin = [execution.get(i) for i in op.indices]
    tile_type = op.value.type
    assert isinstance(tile_type, tile.TileType)
    positions, inside = _block_positions(memref_value.shape, origin, tile_type.get_shape())
    rank = len(tile_type.get_shape())
    execution.write(memref_value.address(positions), value, dtype_of(tile_type), mask, op, rank, inside)


def _broadcast(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    assert isinstance(op, tile.BroadcastOp)
    result_type = op.result.type
    assert isinstance(result_type, tile.TileType)
    return [np.broadcast_to(execution.get(op.source), result_type.get_shape())]


def _transpose(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    assert isinstance(op, tile.TransposeOp)
    return [np.swapaxes(np.asarray(execution.get(op.source)), -1, -2)]


def _splat(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    assert isinstance(op, tile.SplatOp)
    result_type = op.result.type
    assert isinstance(result_type, tile.TileType)
    value = as_array(execution.get(op.value), dtype_of(result_type))
    return [np.broadcast_to(value, result_type.get_shape())]


def _map(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    assert isinstance(op, tile.MapOp)
    shape = op.tile_shape()
    outer = execution.lanes
    # Inside the body the lanes are the tile's elements (see the module docstring).
    execution.lanes = LaneSpace(tuple(shape), outer.lane_ids)
    try:
        results = execution.run_region(op.body, execution.operands(op), mask)
    finally:
        execution.lanes = outer
    return [
        np.broadcast_to(as_array(value, dtype_of(result.type)), shape)
        for value, result in zip(results, op.outputs)
    ]


def _run_combiner(execution: Execution, op: tile.ReduceOp, left: np.ndarray, right: np.ndarray, mask: Mask) -> np.ndarray:
    """The combiner region applied elementwise to two arrays of one shape."""
    outer = execution.lanes
    execution.lanes = LaneSpace(tuple(left.shape), outer.lane_ids)
    try:
        (combined,) = execution.run_region(op.body, [left, right], mask)
    finally:
        execution.lanes = outer
    return np.broadcast_to(as_array(combined, left.dtype), left.shape)


def _reduce(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    """Halves the axis until one element is left: element i is combined with element i + n/2.

    Any order is valid for an associative, commutative combiner; this one is fixed, so the
    interpreter is deterministic, and needs no identity element.
    """
    assert isinstance(op, tile.ReduceOp)
    axis = op.axis.value.data
    values = np.asarray(execution.get(op.source))
    while values.shape[axis] > 1:
        length = values.shape[axis]
        half = length // 2
        combined = _run_combiner(
            execution, op, np.take(values, range(half), axis), np.take(values, range(half, 2 * half), axis), mask
        )
        if length % 2:
            combined = np.concatenate([combined, np.take(values, [length - 1], axis)], axis)
        values = combined
    return [values]


def _in_bounds(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    assert isinstance(op, tile.InBoundsOp)
    result_type = op.result.type
    assert isinstance(result_type, tile.TileType)
    origin = [execution.get(i) for i in op.indices]
    _, inside = _block_positions(op.bounds_shape(), origin, result_type.get_shape())
    return [np.array(inside)]


def _range(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    assert isinstance(op, tile.RangeOp)
    result_type = op.result.type
    assert isinstance(result_type, tile.TileType)
    shape = result_type.get_shape()
    axis = op.axis.value.data
    axis_shape = [1] * len(shape)
    axis_shape[axis] = shape[axis]
    positions = np.asarray(execution.get(op.start), dtype=np.int64) + np.arange(shape[axis], dtype=np.int64).reshape(axis_shape)
    return [np.broadcast_to(positions, shape)]


def _indexed_positions(
    execution: Execution, indices: Sequence[SSAValue], shape: Sequence[int], memref_shape: Sequence[int]
) -> tuple[list[np.ndarray], np.ndarray]:
    """A gather's or scatter's index tiles broadcast to the tile's shape, each position clipped to 0
    where any index falls outside the memref, and the mask of the positions inside it."""
    positions = [np.broadcast_to(np.asarray(execution.get(i), dtype=np.int64), shape) for i in indices]
    inside = np.ones(shape, dtype=bool)
    for position, size in zip(positions, memref_shape):
        inside &= (position >= 0) & (position < size)
    return [np.where(inside, p, 0) for p in positions], inside


def _gather(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    assert isinstance(op, tile.GatherOp)
    memref_value = execution.get(op.source)
    assert isinstance(memref_value, MemRefValue)
    tile_type = op.result.type
    assert isinstance(tile_type, tile.TileType)
    shape = tile_type.get_shape()
    safe, inside = _indexed_positions(execution, op.indices, shape, memref_value.shape)
    return [_read_padded(execution, op, memref_value, safe, inside, mask)]


def _scatter(execution: Execution, op: Operation, mask: Mask) -> None:
    assert isinstance(op, tile.ScatterOp)
    memref_value = execution.get(op.dest)
    assert isinstance(memref_value, MemRefValue)
    tile_type = op.value.type
    assert isinstance(tile_type, tile.TileType)
    shape = tile_type.get_shape()
    safe, inside = _indexed_positions(execution, op.indices, shape, memref_value.shape)
    value = execution.get(op.value)
    execution.write(memref_value.address(safe), value, dtype_of(tile_type), mask, op, len(shape), inside)


def _dot(execution: Execution, op: Operation, mask: Mask) -> list[object]:
    assert isinstance(op, tile.DotOp)
    lhs, rhs, acc = (np.asarray(v) for v in execution.operands(op))
    pairs = operand_pairs(lhs.astype(np.float32), rhs.astype(np.float32), op.precision.data)
    result = np.array(acc, dtype=np.float32)
    for k in range(lhs.shape[-1]):
        for a, b in pairs:
            result = fma(a[..., :, k : k + 1], b[..., k : k + 1, :], result)
    return [result]


def _launch(execution: Execution, op: Operation, mask: Mask) -> None:
    assert isinstance(op, tile.LaunchOp)
    kernel = execution.machine.lookup(op.kernel.root_reference.data, op)
    if not isinstance(kernel, tile.KernelOp):
        raise InterpreterError(
            f"'@{op.kernel.root_reference.data}' is a '{kernel.name}', not a 'tile.kernel'", op
        )
    run_kernel(execution.machine, kernel, execution.operands(op))


def _exit(execution: Execution, op: Operation, mask: Mask) -> Exit:
    return Exit(execution.operands(op))


def table() -> OperationTable:
    return OperationTable(
        MappingProxyType(
            {
                tile.ProgramIdOp: _program_id,
                tile.LoadOp: _load,
                tile.StoreOp: _store,
                tile.BroadcastOp: _broadcast,
                tile.TransposeOp: _transpose,
                tile.SplatOp: _splat,
                tile.MapOp: _map,
                tile.ReduceOp: _reduce,
                tile.InBoundsOp: _in_bounds,
                tile.RangeOp: _range,
                tile.GatherOp: _gather,
                tile.ScatterOp: _scatter,
                tile.DotOp: _dot,
                tile.LaunchOp: _launch,
            }
        ),
        MappingProxyType({tile.YieldOp: _exit, tile.ReturnOp: _exit}),
    )
