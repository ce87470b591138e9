"""graph-pad-matmul-operands: give f16/bf16 matmuls operand rows of whole 16-byte multiples.

Hopper's tensor-core path (`matmul_wgmma.py`) stages both operands in shared memory with 16-byte
asynchronous copies, so the rows of A (K elements) and of B (N elements) must be multiples of 8
16-bit elements; a matmul with a ragged K or N (4095x4097x1023) otherwise falls back to mma.sync
with register copies. With `wgmma=true` (what `mlc-lower-to-gpu{arch=sm_90}` sets) this pass
rewrites such a matmul into one on zero-padded copies and a slice of its result:

    a' = concat(a, 0[..., M, K' - K], axis=-1)                       (if K is ragged)
    b' = concat(concat(b, 0[..., K, N' - N], axis=-1), 0[..., K' - K, N'], axis=-2)
    r  = slice(matmul(a', b'))[..., :, :N]                           (if N is ragged)

with K' and N' the next multiples of 8. graph-fuse then makes one kernel of each operand's
concats and one of the slice (memory-bound copies, a few percent of the product's time at the
sizes where it applies) and convert-graph-to-tile gives the product wgmma blocks.

Exactness: the padded K columns of A and rows of B are zeros, so each padded term adds 0 * 0 =
+0 to a sum (the result changes only where the sum was -0.0, which becomes +0.0); the padded
columns of B give only the columns the slice drops. Inputs with infinities or NaN give the same
results (they never meet a padded zero).

Preconditions/limits: only matmuls of f16/bf16 operands whose padded K gives the wgmma K loop at
least two steps (K' > 64, as `choose_matmul_tile` requires), and not the two products of an
attention chain (`gemm_chain.match_attention`: graph-fuse makes one tensor-core kernel of the
chain, which masks ragged keys itself); rows M are never padded (wgmma
masks them); the epilogue after a padded matmul reads the slice, so it is its own kernel rather
than the matmul's epilogue. Without `wgmma` the pass changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import BFloat16Type, Float16Type, ModuleOp, TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from mlc.dialects.graph import ops as graph
from mlc.dialects.graph.constants import splat_dense
from mlc.transforms.analysis.gemm_chain import matmuls_outside_attention
from mlc.transforms.lowering.matmul_blocks import WGMMA_ALIGNMENT, WGMMA_TILES


def _round_up(size: int) -> int:
    return -(-size // WGMMA_ALIGNMENT) * WGMMA_ALIGNMENT


def _shape(value: SSAValue) -> tuple[int, ...]:
    value_type = value.type
    assert isinstance(value_type, TensorType)
    return tuple(value_type.get_shape())


def needs_padding(op: graph.MatmulOp) -> bool:
    """Whether `op` multiplies 16-bit operands with ragged rows that wgmma could run once padded."""
    element = op.result.type.element_type  # type: ignore[attr-defined]
    depth, columns = _shape(op.a)[-1], _shape(op.b)[-1]
    if not isinstance(element, Float16Type | BFloat16Type) or 0 in _shape(op.result):
        return False
    ragged = depth % WGMMA_ALIGNMENT or columns % WGMMA_ALIGNMENT
    return bool(ragged) and _round_up(depth) > WGMMA_TILES[0][2]


class _Builder:
    """Inserts new graph ops before the matmul being rewritten."""

    def __init__(self, anchor: Operation):
        self.anchor = anchor

    def insert(self, op: Operation) -> SSAValue:
        Rewriter.insert_op(op, InsertPoint.before(self.anchor))
        return op.results[0]

    def pad(self, value: SSAValue, axis: int, size: int) -> SSAValue:
        """`value` with zeros appended along `axis` (counted from the end) up to `size`."""
        shape = list(_shape(value))
        missing = size - shape[axis]
        if missing == 0:
            return value
        shape[axis] = missing
        element = value.type.element_type  # type: ignore[attr-defined]
        zeros = self.insert(graph.ConstantOp(splat_dense(0.0, TensorType(element, shape))))
        return self.insert(graph.ConcatOp([value, zeros], axis=len(shape) + axis))


def pad_matmul(op: graph.MatmulOp) -> None:
    """Rewrites `op` as the module docstring says."""
    builder = _Builder(op)
    depth, columns = _shape(op.a)[-1], _shape(op.b)[-1]
    padded_depth, padded_columns = _round_up(depth), _round_up(columns)
    a = builder.pad(op.a, -1, padded_depth)
    b = builder.pad(builder.pad(op.b, -1, padded_columns), -2, padded_depth)
    precision = op.precision.data if "precision" in op.properties else None
    product = builder.insert(graph.MatmulOp(a, b, precision=precision))
    result = product
    if padded_columns != columns:
        shape = _shape(product)
        ends = [*shape[:-1], columns]
        result = builder.insert(graph.SliceOp(product, starts=[0] * len(shape), ends=ends))
    product.owner.attributes |= op.attributes  # type: ignore[union-attr]
    op.result.replace_all_uses_with(result)
    Rewriter.erase_op(op)


@dataclass(frozen=True)
class GraphPadMatmulOperands(ModulePass):
    """Pad the ragged operand rows of f16/bf16 matmuls to 16-byte multiples for wgmma."""

    name = "graph-pad-matmul-operands"

    wgmma: bool = False
    """Pad for Hopper's wgmma lowering (without it the pass changes nothing)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if not self.wgmma:
            return
        for matmul in matmuls_outside_attention(op):
            if needs_padding(matmul):
                pad_matmul(matmul)
