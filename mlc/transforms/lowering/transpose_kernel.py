"""The GPU's tile kernel of a lone transpose of the last two dimensions: load, `tile.transpose`, store.

`convert-graph-to-tile` (GPU target) hands a fusion group to `build_transpose_kernel` when the
group is one `graph.transpose` of a value read from memory (possibly through a reshape at the
group's entrance, as a convolution's NCHW <-> NHWC swaps of (N, C, H*W) are) whose permutation
swaps the last two dimensions and keeps the leading ones (`is_matrix_transpose`). A layout op feeding or consuming
other ops stays an index map of their kernel (`layout_gather.py`): there each element is a
gather, one side strided. Alone, the transpose of an X of shape (B..., N, M) into Y (B..., M, N)
is the classic shared-memory exchange, written at the tile level as

    grid [B, ceil(M / T), ceil(N / T)]             (no batch axis without leading dimensions)
    %i = program_id(1) * T, %j = program_id(2) * T
    %t = tile.load %X[%b, %j, %i] : [1, T, T]      rows of X: coalesced along X's last dimension
    %u = tile.transpose %t                          the exchange through shared memory
    tile.store %u, %Y[%b, %i, %j]                   rows of Y: coalesced along Y's last dimension

Leading dimensions are collapsed into one (the buffers are passed unchanged: same element count).
T (`transpose_block`) is 64 for elements of up to 4 bytes (32 for 8-byte ones: the staging tile
stays at 16 KiB plus padding) and is cut to the smallest power of two covering the matrix (at least
8); 256
threads share a 64x64 block, 16 elements each per direction (`transpose_threads`).
`convert-tile-to-loop` lowers the kernel (`transpose_loop.py`). The kernel records T as
`mlc.transpose_block` for the loop lowering and for readers of the IR.

Windowed transposes. A group of layout ops only whose result is a 4-D NCHW <-> NHWC transpose of
its one input with the spatial grid translated (`windowed_transpose`: a convolution's input
transposed and zero-padded, its product's padded grid sliced and transposed back) is the same
exchange over pixels: Y viewed as (N, R1, R2), the input as (N, L1, L2), one of each pair the
channels and the other the flattened pixels of its grid. The block of the input is a `tile.gather`
whose pixel index goes through the window map (pixel q = (a, b) of Y's grid reads (a + oa, b + ob)
of the input's grid, index -1 where that is outside: the padding), the channel index a
`tile.range`; transposed and stored like the plain kernel. So padding or slicing costs no pass of
its own: one kernel moves the activation, coalesced on both sides (runs of a grid row on the pixel
side).

Limits: only the last two dimensions swapped, or the windowed NCHW <-> NHWC transposes (other
permutations keep the gather kernel); one scalar access per element and thread (coalesced, not
vectorised).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.builder import Builder
from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, IntegerAttr, MemRefType, TensorType, i64
from xdsl.ir import Block, Region, SSAValue
from xdsl.rewriter import InsertPoint

from mlc.dialects import attributes
from mlc.dialects.element_types import byte_width
from mlc.dialects.graph import ops as graph
from mlc.dialects.tile import ops as tile
from mlc.transforms.analysis.fusion_groups import FusionGroup
from mlc.transforms.analysis.layout_maps import LAYOUT_OPS, AxisMap, pieces
from mlc.transforms.analysis.operand_maps import splat_of
from mlc.transforms.analysis.tile_sizes import next_power_of_two

LARGEST_BLOCK = 64
"""T for elements of up to 4 bytes: 64x64 blocks moved 128 bytes per warp access on an H100."""
SMALLEST_BLOCK = 8
"""The smallest T: 64 elements, one per thread of two warps."""
THREADS = 256
"""Threads of a full block (8 warps), each moving T * T / 256 elements per direction."""


def _shape(value: SSAValue) -> tuple[int, ...]:
    value_type = value.type
    assert isinstance(value_type, TensorType)
    return value_type.get_shape()


def is_matrix_transpose(group: FusionGroup) -> graph.TransposeOp | None:
    """The group's transpose when the group is one transpose of the last two dimensions of an input
    (or of a reshape of one at the group's entrance: the kernel reads the buffer in that shape)."""
    if not 1 <= len(group.ops) <= 2 or not isinstance(group.ops[-1], graph.TransposeOp):
        return None
    op = group.ops[-1]
    source = op.x
    if len(group.ops) == 2:
        reshape = group.ops[0]
        if not isinstance(reshape, graph.ReshapeOp) or reshape.result is not op.x:
            return None
        source = reshape.x
    rank = len(_shape(op.x))
    permutation = tuple(op.perm.get_values())
    swapped = (*range(rank - 2), rank - 1, rank - 2)
    inputs = [value for value, _ in group.inputs]
    if rank < 2 or permutation != swapped or inputs != [source] or group.outputs != [op.result]:
        return None
    return op if math.prod(_shape(op.x)) else None


def transpose_block(rows: int, columns: int, element_bytes: int) -> int:
    """T: the block's side (see the module docstring)."""
    largest = LARGEST_BLOCK if element_bytes <= 4 else LARGEST_BLOCK // 2
    return min(largest, max(SMALLEST_BLOCK, next_power_of_two(max(rows, columns))))


def transpose_threads(block: int) -> int:
    return min(THREADS, block * block)


def build_transpose_kernel(name: str, op: graph.TransposeOp) -> tile.KernelOp:
    """The tile kernel of `op` (a swap of its last two dimensions; see the module docstring)."""
    shape = _shape(op.x)
    element_type = op.x.type.element_type  # type: ignore[attr-defined]
    batch = math.prod(shape[:-2])
    rows, columns = shape[-1], shape[-2]  # of the result: Y is (batch, rows, columns)
    block = transpose_block(rows, columns, byte_width(element_type))
    leading = (batch,) if len(shape) > 2 else ()
    source_type = MemRefType(element_type, (*leading, columns, rows))
    result_type = MemRefType(element_type, (*leading, rows, columns))
    grid = (*leading, -(-rows // block), -(-columns // block))
    kernel = tile.KernelOp(name, [source_type, result_type], grid, num_warps=transpose_threads(block) // 32 or 1)
    attributes.TRANSPOSE_BLOCK.write(kernel, IntegerAttr(block, i64))
    source, result = kernel.body.block.args
    source.name_hint, result.name_hint = op.x.name_hint or "x", "output0"
    builder = Builder(InsertPoint.at_end(kernel.body.block))

    def index(value: int) -> SSAValue:
        return builder.insert(arith.ConstantOp(IntegerAttr(value, IndexType()))).result

    size = index(block)
    program_ids = [builder.insert(tile.ProgramIdOp(axis)).result for axis in range(len(grid))]
    row = builder.insert(arith.MuliOp(program_ids[-2], size)).result
    column = builder.insert(arith.MuliOp(program_ids[-1], size)).result
    row.name_hint, column.name_hint = "i", "j"
    batch_index = program_ids[:-2]
    loaded = builder.insert(
        tile.LoadOp(source, [*batch_index, column, row], tile.TileType((*(1,) * len(leading), block, block), element_type))
    ).result
    transposed = builder.insert(tile.TransposeOp(loaded)).result
    builder.insert(tile.StoreOp(transposed, result, [*batch_index, row, column]))
    builder.insert(tile.ReturnOp())
    return kernel


@dataclass(frozen=True)
class WindowedTranspose:
    """A group's NCHW <-> NHWC transpose with a translated spatial grid (see the module docstring)."""

    source: SSAValue
    """The group's input, read as the 4-D `leaf_shape`."""
    leaf_shape: tuple[int, int, int, int]
    result: SSAValue
    to_channels_last: bool
    """NCHW -> NHWC (the result's channels last) or back."""
    offsets: tuple[int, int]
    """(oa, ob): result pixel (a, b) reads the input's pixel (a + oa, b + ob)."""

    def grids(self) -> tuple[tuple[int, int], tuple[int, int]]:
        """The spatial grids (A, B) of the result and (A', B') of the input."""
        result, leaf = _shape(self.result), self.leaf_shape
        return (result[1:3], leaf[2:4]) if self.to_channels_last else (result[2:4], leaf[1:3])  # type: ignore[return-value]

    def contained(self) -> bool:
        """Whether every result pixel reads an input pixel (a slice: no padding to select)."""
        (a, b), (outer_a, outer_b) = self.grids()
        oa, ob = self.offsets
        return 0 <= oa and oa + a <= outer_a and 0 <= ob and ob + b <= outer_b


def windowed_transpose(group: FusionGroup) -> WindowedTranspose | None:
    """The group as a windowed transpose when it is one (see the module docstring), else None."""
    layout = (*LAYOUT_OPS, graph.BroadcastOp, graph.ReshapeOp)
    if len(group.inputs) != 1 or len(group.outputs) != 1 or not all(isinstance(op, layout) for op in group.ops):
        return None
    ((source, _),), (result,) = group.inputs, group.outputs
    if not isinstance(result.owner, LAYOUT_OPS) or len(_shape(result)) != 4 or not math.prod(_shape(result)):
        return None
    members = {value for op in group.ops for value in op.results}
    try:  # a reshape at the group's entrance is a leaf: the input read in the reshape's shape
        found = pieces(result, lambda v: v not in members or isinstance(v.owner, graph.ReshapeOp), splat_of)
    except ValueError:
        return None
    if len(found) != 1 or found[0].ranges or found[0].padding not in (None, 0, 0.0):
        return None
    leaf, indices = found[0].leaf, found[0].indices
    read = leaf.owner.x if isinstance(leaf.owner, graph.ReshapeOp) and leaf in members else leaf  # type: ignore[union-attr]
    if read is not source or len(_shape(leaf)) != 4 or indices[0] != AxisMap(0, 0):
        return None
    shape, result_shape = _shape(leaf), _shape(result)
    for to_channels_last, channel_dim, pixel_dims in ((True, 1, (2, 3)), (False, 3, (1, 2))):
        result_channel, result_pixels = (3, (1, 2)) if to_channels_last else (1, (2, 3))
        maps = [indices[dim] for dim in pixel_dims]
        whole = shape[0] == result_shape[0] and shape[channel_dim] == result_shape[result_channel]  # batch and channels not sliced
        if whole and indices[channel_dim] == AxisMap(result_channel, 0) and all(m.dim == d and m.stride == 1 for m, d in zip(maps, result_pixels)):
            return WindowedTranspose(source, (shape[0], shape[1], shape[2], shape[3]), result, to_channels_last, (maps[0].offset, maps[1].offset))
    return None


def build_windowed_transpose_kernel(name: str, window: WindowedTranspose) -> tile.KernelOp:
    """The tile kernel of a windowed transpose (see the module docstring)."""
    batch = window.leaf_shape[0]
    (a, b), (outer_a, outer_b) = window.grids()
    channels = _shape(window.result)[3 if window.to_channels_last else 1]
    result_view = (batch, a * b, channels) if window.to_channels_last else (batch, channels, a * b)
    source_view = (batch, channels, outer_a * outer_b) if window.to_channels_last else (batch, outer_a * outer_b, channels)
    element_type = window.result.type.element_type  # type: ignore[attr-defined]
    block = transpose_block(result_view[1], result_view[2], byte_width(element_type))
    grid = (batch, -(-result_view[1] // block), -(-result_view[2] // block))
    kernel = tile.KernelOp(name, [MemRefType(element_type, source_view), MemRefType(element_type, result_view)], grid, num_warps=transpose_threads(block) // 32 or 1)
    attributes.TRANSPOSE_BLOCK.write(kernel, IntegerAttr(block, i64))
    source, result = kernel.body.block.args
    source.name_hint, result.name_hint = window.source.name_hint or "x", "output0"
    builder = Builder(InsertPoint.at_end(kernel.body.block))
    size = builder.insert(arith.ConstantOp(IntegerAttr(block, IndexType()))).result
    program_ids = [builder.insert(tile.ProgramIdOp(axis)).result for axis in range(3)]
    row = builder.insert(arith.MuliOp(program_ids[1], size)).result
    column = builder.insert(arith.MuliOp(program_ids[2], size)).result
    row.name_hint, column.name_hint = "i", "j"
    shape = (1, block, block)
    # The source block's rows are the result's columns (origin j), its columns the result's rows (i).
    batch_index = builder.insert(tile.SplatOp(program_ids[0], tile.TileType(shape, IndexType()))).result
    source_rows = builder.insert(tile.RangeOp(column, 1, shape)).result
    source_columns = builder.insert(tile.RangeOp(row, 2, shape)).result
    if window.to_channels_last:
        source_columns = _window_map(builder, source_columns, window)
    else:
        source_rows = _window_map(builder, source_rows, window)
    gathered = builder.insert(tile.GatherOp(source, [batch_index, source_rows, source_columns], tile.TileType(shape, element_type))).result
    transposed = builder.insert(tile.TransposeOp(gathered)).result
    builder.insert(tile.StoreOp(transposed, result, [program_ids[0], row, column]))
    builder.insert(tile.ReturnOp())
    return kernel


def _window_map(builder: Builder, pixels: SSAValue, window: WindowedTranspose) -> SSAValue:
    """The input's flattened pixel index of each result pixel of `pixels` (-1 outside the input)."""
    (_, b), (outer_a, outer_b) = window.grids()
    body = Block(arg_types=[IndexType()])
    inner = Builder(InsertPoint.at_end(body))

    def emit(op: arith.BinaryOperation | arith.CmpiOp | arith.SelectOp | arith.AndIOp) -> SSAValue:
        return inner.insert(op).results[0]

    def index(value: int) -> SSAValue:
        return inner.insert(arith.ConstantOp(IntegerAttr(value, IndexType()))).result

    pixel = body.args[0]
    row = emit(arith.AddiOp(emit(arith.DivUIOp(pixel, index(b))), index(window.offsets[0])))
    column = emit(arith.AddiOp(emit(arith.RemUIOp(pixel, index(b))), index(window.offsets[1])))
    position = emit(arith.AddiOp(emit(arith.MuliOp(row, index(outer_b))), column))
    if not window.contained():  # unsigned comparisons: a negative row or column is outside too
        inside = emit(arith.AndIOp(emit(arith.CmpiOp(row, index(outer_a), "ult")), emit(arith.CmpiOp(column, index(outer_b), "ult"))))
        position = emit(arith.SelectOp(inside, position, index(-1)))
    inner.insert(tile.YieldOp([position]))
    index_type = pixels.type
    assert isinstance(index_type, tile.TileType)
    return builder.insert(tile.MapOp([pixels], [index_type], Region(body))).outputs[0]


def build_gpu_layout_kernel(name: str, group: FusionGroup) -> tile.KernelOp | None:
    """The GPU's shared-memory transpose kernel of `group` when it is a plain or windowed transpose."""
    transpose = is_matrix_transpose(group)
    if transpose is not None:
        return build_transpose_kernel(name, transpose)
    window = windowed_transpose(group)
    return build_windowed_transpose_kernel(name, window) if window is not None else None
