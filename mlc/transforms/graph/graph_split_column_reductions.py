"""graph-split-column-reductions: a long reduction over a non-last axis as partial sums of row blocks.

The CPU lowers a reduction over an axis that is not the last (a column sum of [R, C]) with one
program per strip of up to 128 columns reading all R rows (`columns_cpu.py`): 1024 columns make 8
programs, so at most 8 threads share the work, and each program walks R rows a page apart (one
4 KiB row each for C = 1024), more pages than the TLB holds and lines the L2 does not keep
between strips. This pass rewrites such a reduction of x (shape [..., R, ...inner]) as two:

    xs = reshape(x)                    [..., P, Rb, ...inner]   (a view: Rb = R / P rows a block)
    partial = reduce(xs, axis a + 1)   [..., P, ...inner]       (mlc.cpu_row_splits = P)
    result  = reduce(partial, axis a)  the original result (keepdims as the original)

so that the first kernel has P times the programs (the row blocks times the strips; consecutive
programs, which one thread runs, share a row block that its L2 holds) and the second reads only
P rows of partial results. Rb is the largest power of two dividing R whose block of Rb rows of
`inner` f32 fits `SPLIT_BLOCK_BYTES`, at least `MIN_BLOCK_ROWS` (fewer rows would make the
partials a large share of the traffic); P = R / Rb must be at least 2. A 4096x1024 column sum:
Rb = 128, P = 32, 256 programs instead of 8 (one dev-machine thread: 1.06 -> 0.70 ms, PyTorch
1.04 ms; blocks of 256 KiB, P = 64, took the same 0.69 ms, of 1 MiB 0.74 ms); its 32 x 1024 partial
sums are few enough that the second kernel runs on the calling thread (convert-loop-to-cpu's
`min-parallel-elements`): one dispatch to the worker threads a call, as before. Reductions with
fewer rows are left as they are: their strips (columns across threads) are the better split.

Producers. graph-fuse fuses a reshape of a kernel's input as a view, not one between fused ops, so
the reshape is moved up through the elementwise ops that compute x alone (one use each): they are
rebuilt on the split shape, their operands of x's shape split in turn (down to a function
argument or any other value: a reshape of it, a view that fuses), operands that broadcast along the
reduced axis and the axes before it (every such dimension 1, such as a [C] or [1, C] row) kept as
they are, others (a per-row [R, 1]) reshaped to broadcast the same way ([P, Rb, 1]). A reduction
whose reshapes would apply to the result of a layout op (x.T, a slice: graph-fuse reads those in
place in one kernel, but a reshape of one is a copy kernel) is left whole (`reshapes_fuse`).

Exactness: max and min are exact in any order; a sum's order changes (partial sums of blocks), as
the dialect allows: within the bound of any f32 summation order (`error_bounds.py`); the
elementwise ops compute the same values on the same elements.

Preconditions/limits: f32 reduce_sum, reduce_max, reduce_min over one non-last axis (after
graph-decompose a mean is a sum and a division); static shapes. The decision is by shape alone (the
thread count is the runtime's; option `block-bytes`, default SPLIT_BLOCK_BYTES); the CPU pipeline runs this pass after graph-decompose, before
graph-fuse; the GPU pipeline does not (its column reductions have their own tiles).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import Float32Type, IntegerAttr, ModuleOp, TensorType, i64
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from mlc.dialects import attributes
from mlc.dialects.graph import ops as graph

SPLIT_BLOCK_BYTES = 1 << 19
"""The most bytes of a row block (Rb rows of the reduction's inner elements, f32): 512 KiB, a
quarter of the 2 MiB L2 of a core of the Xeons measured, so the block stays there while the
program strips of its columns read it one after another."""
MIN_BLOCK_ROWS = 16
"""The fewest rows of a block: the partial results are 1 / Rb of the input's traffic."""
SPLIT_REDUCTIONS = (graph.ReduceSumOp, graph.ReduceMaxOp, graph.ReduceMinOp)


def _shape(value: SSAValue) -> tuple[int, ...]:
    assert isinstance(value.type, TensorType)
    return tuple(value.type.get_shape())


def row_blocks(op: graph.ReductionOp, block_bytes: int = SPLIT_BLOCK_BYTES) -> int:
    """P, the row blocks `op` is split into (see the module docstring), or 1 for none."""
    if not isinstance(op, SPLIT_REDUCTIONS) or not isinstance(op.x.type, TensorType):
        return 1
    if not isinstance(op.x.type.element_type, Float32Type) or attributes.CPU_ROW_SPLITS.read(op) is not None:
        return 1
    shape, axes = _shape(op.x), op.normalized_axes()
    if len(axes) != 1 or axes[0] == len(shape) - 1:
        return 1
    if not reshapes_fuse(op.x, axes[0]):
        return 1
    rows, inner = shape[axes[0]], math.prod(shape[axes[0] + 1 :])
    block = 1
    while rows % (block * 2) == 0 and block * 2 * inner * 4 <= block_bytes:
        block *= 2
    return rows // block if block >= MIN_BLOCK_ROWS and rows // block >= 2 else 1


def _reshaped(value: SSAValue, shape: tuple[int, ...], before: Operation) -> SSAValue:
    reshape = graph.ReshapeOp(value, TensorType(value.type.element_type, shape))  # type: ignore[attr-defined]
    Rewriter.insert_op(reshape, InsertPoint.before(before))
    return reshape.result


def _moves(value: SSAValue) -> bool:
    """Whether `value`'s producer moves to the split shape: an elementwise op computing it alone."""
    owner = value.owner
    return isinstance(owner, graph.ELEMENTWISE_OPS) and len(owner.results) == 1 and len(list(value.uses)) == 1


def _padded(operand: SSAValue, rank: int) -> tuple[int, ...]:
    return (1,) * (rank - len(_shape(operand))) + _shape(operand)


def _operand_kind(operand: SSAValue, shape: tuple[int, ...], axis: int) -> str:
    """How an operand of a moved op of `shape` follows it (see `_split_operand`): "full", "kept"
    or "reshaped"."""
    padded = _padded(operand, len(shape))
    if padded == shape:
        return "full"
    return "kept" if all(size == 1 for size in padded[: axis + 1]) else "reshaped"


def reshapes_fuse(value: SSAValue, axis: int) -> bool:
    """Whether every value that the split reshapes (`_split_value`'s leaves) is one that graph-fuse
    reads in place: not the result of a layout op (a transpose, a slice, a broadcast, a reshape:
    a reshape of it would be a copy kernel of its own; a column sum of x.T took 13.5 ms split
    against 5.0 ms whole on one dev-machine thread)."""
    if not _moves(value):
        return not isinstance(value.owner, graph.INJECTIVE_OPS)
    shape = _shape(value)
    for operand in value.owner.operands:  # type: ignore[union-attr]
        kind = _operand_kind(operand, shape, axis)
        if kind == "full" and not reshapes_fuse(operand, axis):
            return False
        if kind == "reshaped" and isinstance(operand.owner, graph.INJECTIVE_OPS):
            return False
    return True


def _split_operand(value: SSAValue, split: tuple[int, ...], axis: int, user: Operation) -> SSAValue:
    """An operand of an elementwise op moved to the `split` shape: split in turn when it has the
    op's full shape; kept as it is when it broadcasts along `axis` and every axis before it (1
    there: it broadcasts to the split shape the same way); else reshaped to broadcast as it did
    (its size along `axis` split into the two, or 1 into 1 and 1)."""
    shape = (*split[:axis], split[axis] * split[axis + 1], *split[axis + 2 :])
    kind, padded = _operand_kind(value, shape, axis), _padded(value, len(shape))
    if kind == "full":
        return _split_value(value, split, axis, user)
    if kind == "kept":
        return value
    along = split[axis : axis + 2] if padded[axis] != 1 else (1, 1)
    return _reshaped(value, (*padded[:axis], *along, *padded[axis + 1 :]), user)


def _split_value(value: SSAValue, split: tuple[int, ...], axis: int, before: Operation) -> SSAValue:
    """`value` (of the reduction's operand shape) on the `split` shape: its elementwise producer
    rebuilt there when it computes `value` alone (see Producers), else a reshape before `before`."""
    if not _moves(value):
        return _reshaped(value, split, before)
    owner = value.owner
    assert isinstance(owner, Operation)
    rebuilt = type(owner).create(
        operands=[_split_operand(o, split, axis, owner) for o in owner.operands],
        result_types=[TensorType(value.type.element_type, split)],  # type: ignore[attr-defined]
        properties=dict(owner.properties),
        attributes=dict(owner.attributes),
    )
    Rewriter.insert_op(rebuilt, InsertPoint.before(before))
    return rebuilt.results[0]


def split_reduction(op: graph.ReductionOp, blocks: int) -> None:
    """Rewrites `op` as the module docstring says, into `blocks` row blocks."""
    shape, (axis,) = _shape(op.x), op.normalized_axes()
    split = (*shape[:axis], blocks, shape[axis] // blocks, *shape[axis + 1 :])
    producer = op.x.owner if isinstance(op.x.owner, Operation) else None
    blocked = _split_value(op.x, split, axis, op)
    partial = type(op)(blocked, axes=[axis + 1], keepdims=False)
    attributes.CPU_ROW_SPLITS.write(partial, IntegerAttr(blocks, i64))
    combined = type(op)(partial.result, axes=[axis], keepdims=op.keeps_dims(), result_type=op.result.type)
    name = op.result.name_hint
    Rewriter.replace_op(op, [partial, combined])
    partial.result.name_hint, combined.result.name_hint = (f"{name}_partial" if name else None), name
    if isinstance(producer, graph.ELEMENTWISE_OPS) and not list(producer.results[0].uses):
        _erase_unused(producer)


def _erase_unused(op: Operation) -> None:
    """Erases `op`, then the producers of its operands that are left without uses (the
    elementwise ops `_split_value` rebuilt on the split shape)."""
    operands = list(op.operands)
    Rewriter.erase_op(op)
    for operand in operands:
        owner = operand.owner
        if isinstance(owner, graph.ELEMENTWISE_OPS) and not any(list(r.uses) for r in owner.results):
            _erase_unused(owner)


@dataclass(frozen=True)
class GraphSplitColumnReductions(ModulePass):
    """Split long f32 reductions over a non-last axis into partial reductions of row blocks (CPU)."""

    name = "graph-split-column-reductions"

    block_bytes: int = SPLIT_BLOCK_BYTES
    """The most bytes of a row block (tests split small tensors with a small value)."""

    def __post_init__(self) -> None:
        if self.block_bytes < 4 * MIN_BLOCK_ROWS:
            raise ValueError(f"block-bytes must hold {MIN_BLOCK_ROWS} f32 rows of one element at least, got {self.block_bytes}")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for reduction in [r for r in op.walk() if isinstance(r, SPLIT_REDUCTIONS)]:
            if (blocks := row_blocks(reduction, self.block_bytes)) > 1:
                split_reduction(reduction, blocks)
