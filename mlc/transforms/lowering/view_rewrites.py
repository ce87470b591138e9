"""Rewrite rules of graph-simplify that move layout ops: views read in place instead of copies.

* `TransposeMovingUnitAxes`: a transpose that keeps the order of the axes longer than 1 (a batch
  of one moved behind the sequence) is a reshape: nothing moves.
* `LayoutChainAsOneView`: a chain of reshapes, transposes and slices becomes the fewest such ops
  that read the same strided view of its leaf (`analysis/strided_views.py`), where that is fewer
  ops. The head split of PyTorch's multi-head attention (seven layout ops between the
  in-projection and each of q, k, v, four of them copies) becomes one slice and one transpose
  of a reshape of the projection, which graph-fuse fuses into one gather kernel.
* `ElementwiseAfterReshape`: `f(reshape(x), c...)` -> `reshape(f(x, c...))` for an elementwise
  `f` whose other operands vary at most along the last axis, which the reshape keeps (a linear
  layer's bias added, or its relu applied, after its product was reshaped back to (S, B, N)):
  the op then meets the product, and graph-fuse makes it the matmul's epilogue.
* `ElementwiseAfterTranspose`: `f(transpose(x, p), c...)` -> `transpose(f(x, c...), p)` for such
  an `f` and a `p` keeping the last axis last (a bias added after the rows were permuted).
* `RowsPermutedAfterMatmul`: `matmul(reshape(transpose(x, p)), W)` with `p` keeping the last axis
  last (a permutation of the rows: PyTorch's (B, S, E) -> (S, B, E) before the in-projection of
  batch-first multi-head attention) -> `reshape(transpose(reshape(matmul(reshape(x), W)), p))`:
  the product takes x's rows in place, and the permutation moves to its result, where only layout
  ops (through reshapes and elementwise ops of the kinds above) read it: the gather of q, k and v
  or the attention chain (`chain_operand_views.py`) then reads the permuted rows in place, so no
  kernel writes x transposed. Exact: each row of the product is the same dot products.

Every rule is exact (the same elements, the same arithmetic). Each leaves no more ops than it
found, except `RowsPermutedAfterMatmul`, which adds reshapes (views, no kernel) but takes the last
transpose off a matmul's operand, which no rule puts back, so graph-simplify's fixpoint terminates.

Outside graph-simplify, graph-fuse calls `split_key_transpose` on an attention chain it fuses:
Kt = transpose(x, p) whose next-to-last axis (the head dim D) is x's last becomes
transpose(transpose(x, p'), swap of the last two axes), p' = p with its last two entries swapped
(so p' keeps x's last axis last: a gather that copies contiguous rows, or nothing when p' is the
identity), and the chain takes the swap: its kernel reads K [..., N, D] in place, as
FlashAttention reads K, instead of a gather writing Kt [..., D, N] one element apart along N.
"""

from __future__ import annotations

import dataclasses
import math

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern

from mlc.dialects.graph import ops as graph
from mlc.transforms.analysis.gemm_chain import AttentionChain
from mlc.transforms.analysis.strided_views import LAYOUT_OP_NAMES, canonical_layout, canonical_ops, layout_chain, transpose_permutation
from mlc.transforms.lowering.graph_rewriting import replace_with_new_op, replace_with_value, tensor_type_of


class TransposeMovingUnitAxes(RewritePattern):
    """transpose(x, p) -> reshape(x) when p keeps the order of x's axes longer than 1: the
    elements stay in order (a batch of 1 moved behind the sequence), so nothing moves."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        perm = transpose_permutation(op)
        if perm is None or perm == tuple(range(len(perm))):
            return
        shape = tensor_type_of(op.operands[0]).get_shape()
        if [axis for axis in perm if shape[axis] != 1] == sorted(axis for axis in perm if shape[axis] != 1):
            replace_with_new_op(rewriter, op, graph.ReshapeOp(op.operands[0], op.results[0].type))


class LayoutChainAsOneView(RewritePattern):
    """A chain of reshapes, transposes and slices -> the fewest such ops of the same strided view
    (`analysis/strided_views.py`), where that is fewer ops: kernels then read the leaf in place."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        chain = layout_chain(op.results[0]) if op.name in LAYOUT_OP_NAMES else None
        if chain is None or chain[2] < 2:
            return
        leaf, view, count = chain
        layout = canonical_layout(view, math.prod(tensor_type_of(leaf).get_shape()))
        if layout is not None and layout.op_count(tensor_type_of(leaf).get_shape()) < count:
            ops = canonical_ops(leaf, layout)
            replace_with_value(rewriter, op, ops[-1].results[0] if ops else leaf, ops)


class ElementwiseAfterReshape(RewritePattern):
    """f(reshape(x), c...) -> reshape(f(x, c...)) for an elementwise f whose other operands vary
    at most along the last axis, which the reshape keeps (see the module docstring)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, graph.ELEMENTWISE_OPS) or len(op.results) != 1:
            return
        for index, operand in enumerate(op.operands):
            reshape = operand.owner
            if not isinstance(reshape, graph.ReshapeOp) or not reshape.result.has_one_use():
                continue
            source, result = tensor_type_of(reshape.x).get_shape(), tensor_type_of(op.results[0]).get_shape()
            if tuple(tensor_type_of(reshape.result).get_shape()) != tuple(result) or not source or not result or source[-1] != result[-1]:
                continue
            others = [tensor_type_of(v).get_shape() for i, v in enumerate(op.operands) if i != index]
            if not all(len(side) <= len(source) and math.prod(side[:-1]) == 1 for side in others):
                continue
            operands = [reshape.x if i == index else v for i, v in enumerate(op.operands)]
            result_type = TensorType(tensor_type_of(op.results[0]).element_type, source)
            inner = type(op).create(operands=operands, result_types=[result_type], properties=dict(op.properties), attributes=dict(op.attributes))
            reshaped = graph.ReshapeOp(inner.results[0], op.results[0].type)
            replace_with_value(rewriter, op, reshaped.result, [inner, reshaped])
            return


def _last_axis_only(op: Operation, index: int) -> bool:
    """Whether `op`'s operands other than `index` vary at most along the last axis."""
    others = [tensor_type_of(v).get_shape() for i, v in enumerate(op.operands) if i != index]
    rank = len(tensor_type_of(op.operands[index]).get_shape())
    return all(len(side) <= rank and math.prod(side[:-1]) == 1 for side in others)


def _keeps_last_axis(perm: tuple[int, ...] | None) -> bool:
    return perm is not None and len(perm) >= 2 and perm[-1] == len(perm) - 1


class ElementwiseAfterTranspose(RewritePattern):
    """f(transpose(x, p), c...) -> transpose(f(x, c...), p) for an elementwise f whose other
    operands vary at most along the last axis, which p keeps last (see the module docstring)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, graph.ELEMENTWISE_OPS) or len(op.results) != 1:
            return
        for index, operand in enumerate(op.operands):
            transpose = operand.owner
            perm = transpose_permutation(transpose) if isinstance(transpose, Operation) else None
            if not _keeps_last_axis(perm) or not transpose.results[0].has_one_use() or not _last_axis_only(op, index):  # type: ignore[union-attr]
                continue
            if tuple(tensor_type_of(operand).get_shape()) != tuple(tensor_type_of(op.results[0]).get_shape()):
                continue
            assert isinstance(transpose, graph.TransposeOp) and perm is not None
            operands = [transpose.x if i == index else v for i, v in enumerate(op.operands)]
            result_type = TensorType(tensor_type_of(op.results[0]).element_type, tensor_type_of(transpose.x).get_shape())
            inner = type(op).create(operands=operands, result_types=[result_type], properties=dict(op.properties), attributes=dict(op.attributes))
            moved = graph.TransposeOp(inner.results[0], perm=perm)
            replace_with_value(rewriter, op, moved.result, [inner, moved])
            return


def _read_by_layout_ops(value: SSAValue) -> bool:
    """Whether every path from `value` through reshapes and elementwise ops whose other operands
    vary at most along the last axis ends at a transpose or slice (a layout op read in place)."""
    uses = list(value.uses)
    for use in uses:
        user = use.operation
        if isinstance(user, graph.TransposeOp | graph.SliceOp):
            continue
        if isinstance(user, graph.ReshapeOp) or (isinstance(user, graph.ELEMENTWISE_OPS) and len(user.results) == 1 and _last_axis_only(user, use.index)):
            if _read_by_layout_ops(user.results[0]):
                continue
        return False
    return bool(uses)


class RowsPermutedAfterMatmul(RewritePattern):
    """matmul(reshape(transpose(x, p)), W) -> reshape(transpose(reshape(matmul(reshape(x), W)), p))
    where p keeps the last axis last and layout ops read the product (see the module docstring)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, graph.MatmulOp) or len(tensor_type_of(op.a).get_shape()) != 2 or len(tensor_type_of(op.b).get_shape()) != 2:
            return
        reshape = op.a.owner
        if not isinstance(reshape, graph.ReshapeOp) or not reshape.result.has_one_use():
            return
        transpose = reshape.x.owner
        perm = transpose_permutation(transpose) if isinstance(transpose, Operation) else None
        if not _keeps_last_axis(perm) or not transpose.results[0].has_one_use():  # type: ignore[union-attr]
            return
        assert isinstance(transpose, graph.TransposeOp) and perm is not None
        rows, depth = tensor_type_of(op.a).get_shape()
        source = tensor_type_of(transpose.x)
        if source.get_shape()[-1] != depth or not _read_by_layout_ops(op.results[0]):
            return
        result = tensor_type_of(op.results[0])
        width, element = result.get_shape()[-1], result.element_type
        flat = graph.ReshapeOp(transpose.x, TensorType(source.element_type, (rows, depth)))
        product = graph.MatmulOp.create(
            operands=[flat.result, op.b], result_types=[result], properties=dict(op.properties), attributes=dict(op.attributes),
        )
        unflat = graph.ReshapeOp(product.results[0], TensorType(element, (*source.get_shape()[:-1], width)))
        moved = graph.TransposeOp(unflat.result, perm=perm)
        back = graph.ReshapeOp(moved.result, result)
        replace_with_value(rewriter, op, back.result, [flat, product, unflat, moved, back])


def split_key_transpose(chain: AttentionChain) -> AttentionChain:
    """`chain` reading K in place through a last-axes swap, where its Kt is a transpose whose
    next-to-last axis is its input's last (see the module docstring); else `chain` as it is."""
    kt = chain.scores.b
    owner = kt.owner
    perm = transpose_permutation(owner) if isinstance(owner, Operation) else None
    if chain.key_transpose is not None or perm is None or perm[-2] != len(perm) - 1 or len(list(kt.uses)) != 1:
        return chain
    assert isinstance(owner, graph.TransposeOp)
    rank = len(perm)
    inner_perm = (*perm[:-2], perm[-1], perm[-2])
    keys = owner.x
    block = owner.parent_block()
    assert block is not None
    if inner_perm != tuple(range(rank)):
        inner = graph.TransposeOp(keys, perm=inner_perm)
        block.insert_op_before(inner, owner)
        keys = inner.result
    swap = graph.TransposeOp(keys, perm=(*range(rank - 2), rank - 1, rank - 2))
    block.insert_op_before(swap, owner)
    kt.replace_all_uses_with(swap.result)
    block.erase_op(owner)
    return dataclasses.replace(chain, key_transpose=swap)
