"""Which tile kernels are CPU row kernels, and how their rows are cut into ranges of columns.

`row_kernel_refusal` decides what `rows_cpu.py` lowers (see its docstring for the layout):
tiles of one shape [R, C] (or [C]) and their broadcasts, the ops of
`cpu_vector_kernels.VECTOR_KERNEL_OPS`, reductions along the last axis with one of
`cpu_vector_kernels.IDENTITIES`'s combiners, masks of one column range.

Masks. The kernel's `tile.in_bounds` masks (all of one column range: the first K columns of the
row, from a constant column) cut each column loop into ranges (`column_ranges`): whole chunks
inside the mask, scalars up to its edge, scalars to the next chunk boundary outside it, whole
chunks outside. In each range the mask is one value for all lanes (the row's condition inside,
false outside), so a map's `arith.select` on it stays a select of whole vectors. Accesses are
analysed as far as the range reaches, so those of the chunks inside need no checks. A store's
loop skips the ranges that lie beyond its destination's columns. Rows outside the memref (a
last program's) keep their per-row condition.

Limits (`row_kernel_refusal` names the first that applies; such kernels are left for
convert-tile-to-loop): f32 tiles only (and i1 tiles of a comparison that only stores use:
`cpu_vector_kernels.stored_comparison`); map bodies of f32 arithmetic (`vector_maps.VECTOR_OPS` on vectors;
anything on per-row scalars; selects only on a mask); masks of one column range; no loops, no
other tile ops; reductions with one of the four combiners.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerAttr
from xdsl.ir import SSAValue

from mlc.dialects.tile import ops as tile
from mlc.transforms.lowering.chunk_access import Emitter
from mlc.transforms.lowering.cpu_vector_kernels import combiner, tile_shape, vector_kernel_op_refusal
from mlc.transforms.lowering.vector_maps import vector_map_refusal


def row_shape(kernel: tile.KernelOp) -> tuple[int, ...] | None:
    """[R, C] or [C] (one row): the shape of the kernel's reductions' operands, or of its stored
    tiles where it has no reductions (an elementwise kernel), when they all have one such shape."""
    shapes = {tile_shape(op.source) for op in kernel.walk() if isinstance(op, tile.ReduceOp)}
    shapes = shapes or {tile_shape(op.value) for op in kernel.walk() if isinstance(op, tile.StoreOp)}
    if len(shapes) != 1:
        return None
    (shape,) = shapes
    return shape if len(shape) in (1, 2) else None


def row_kernel_refusal(kernel: tile.KernelOp) -> str | None:
    """Why `kernel` is not a row kernel this lowering takes (see the module docstring), or None."""
    shape = row_shape(kernel)
    if shape is None:
        return "no reductions (or stores) of one 1-d or 2-d shape"
    rows, columns = shape if len(shape) == 2 else (1, *shape)
    if columns < 2:
        return "rows of one column"
    broadcasts = {(rows, columns), (1, columns), (rows, 1), (1, 1)} if len(shape) == 2 else {(columns,), (1,)}
    masks = set()
    for op in kernel.body.block.ops:
        if refusal := vector_kernel_op_refusal(op, broadcasts, "rows"):
            return refusal
        if isinstance(op, tile.InBoundsOp):
            if not is_wide(op.result, columns) or constant(op.indices[-1]) is None:
                return "a tile.in_bounds mask that is not of whole rows from a constant column"
            masks.add((constant(op.indices[-1]), op.bounds_shape()[-1]))
        if isinstance(op, tile.ReduceOp) and (op.axis.value.data != len(shape) - 1 or combiner(op) is None):
            return "a reduction that is not a plain addf/maximumf/minimumf/mulf along the rows"
        if isinstance(op, tile.MapOp) and is_wide(op.results[0], columns) and (refusal := vector_map_refusal(op)):
            return refusal
        if isinstance(op, tile.StoreOp) and len(shape) == 2 and tile_shape(op.value)[0] != rows and rows != 1:
            return "a store of a tile broadcast along rows"
    return "tile.in_bounds masks of different columns" if len(masks) > 1 else None


def constant(value: SSAValue) -> int | None:
    owner = value.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    return None


def column_mask(kernel: tile.KernelOp, columns: int) -> int:
    """How many leading columns of a row the kernel's `tile.in_bounds` masks keep (all without)."""
    for op in kernel.body.block.ops:
        if isinstance(op, tile.InBoundsOp):
            return max(0, min(columns, op.bounds_shape()[-1] - (constant(op.indices[-1]) or 0)))
    return columns


def within(shape: tuple[int, ...], columns: ColumnRange) -> tuple[int, ...]:
    """A wide tile's shape as far as the chunks of `columns` reach: what `chunk_access` needs to
    prove their accesses in bounds (at least 2 wide, which it would take for a broadcast)."""
    return (*shape[:-1], max(columns.stop, 2))


def is_wide(value: SSAValue, columns: int) -> bool:
    """Whether a tile value varies along the columns (is computed a chunk at a time)."""
    return tile_shape(value)[-1] == columns and columns > 1


def shared_rows(kernel: tile.KernelOp, rows: int) -> set[SSAValue]:
    """The kernel's memrefs read only as one row that all of its `rows` rows share (a layer
    norm's scale and bias: they stay in L1, nothing to prefetch)."""
    loads = [op for op in kernel.body.block.ops if isinstance(op, tile.LoadOp)]
    shared = {op.source for op in loads if tile_shape(op.result)[0] == 1}
    return shared - {op.source for op in loads if tile_shape(op.result)[0] > 1} if rows > 1 else set()


def has_math(op: tile.MapOp) -> bool:
    return any(inner.dialect_name() == "math" for inner in op.body.block.ops)


@dataclass(frozen=True)
class ColumnRange:
    """Columns [start, stop) of a row, computed `width` at a time (1: scalars), where the kernel's
    `tile.in_bounds` masks are all true (`inside`) or all false."""

    start: int
    stop: int
    width: int
    inside: bool


def column_ranges(columns: int, kept: int, width: int) -> list[ColumnRange]:
    """The row cut so that every chunk is all inside or all outside the first `kept` columns:
    whole chunks of `width`, scalars for the chunk that the mask's edge cuts."""
    inside_end, outside_start = kept // width * width, -(-kept // width) * width
    candidates = [
        ColumnRange(0, inside_end, width, True),
        ColumnRange(inside_end, kept, 1, True),
        ColumnRange(kept, min(outside_start, columns), 1, False),
        ColumnRange(outside_start, columns, width, False),
    ]
    return [c for c in candidates if c.stop > c.start]


@dataclass
class ChunkScope:
    """Where one chunk of columns is computed: an emitter in a column loop, the chunk's first
    column, its range, and the chunk's values computed so far."""

    emitter: Emitter
    column: SSAValue
    range: ColumnRange
    values: dict[SSAValue, SSAValue] = field(default_factory=dict)

