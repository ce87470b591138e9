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

Limits: only the last two dimensions swapped (other permutations keep the gather kernel); one
scalar access per element and thread (coalesced, not vectorised).
"""

from __future__ import annotations

import math

from xdsl.builder import Builder
from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, IntegerAttr, MemRefType, TensorType, i64
from xdsl.ir import SSAValue
from xdsl.rewriter import InsertPoint

from mlc.dialects import attributes
from mlc.dialects.element_types import byte_width
from mlc.dialects.graph import ops as graph
from mlc.dialects.tile import ops as tile
from mlc.transforms.analysis.fusion_groups import FusionGroup

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
    return min(largest, max(SMALLEST_BLOCK, 1 << max(0, (max(rows, columns) - 1).bit_length())))


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
