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

Every rule is exact (the same elements, the same arithmetic) and leaves no more ops than it found,
so graph-simplify's fixpoint terminates.

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
from xdsl.ir import Operation
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
            if tuple(tensor_type_of(reshape.result).get_shape()) != tuple(result) or not source or source[-1] != result[-1]:
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
