"""Helpers shared by the graph-level rewrite passes (graph-simplify, graph-fold-constants).

* `splat_of(value)`: the scalar of a splat `graph.constant`, or None.
* `replace_with_value(rewriter, op, value, new_ops)`: replaces a one-result graph op by a value of
  the same element type whose shape broadcasts to the result's (computed by `new_ops`, or already
  there); a `graph.broadcast` is inserted when the shapes differ, so the result type is kept
  exactly.
* `replace_and_clean_up(rewriter, op, new_ops, new_results)`: `rewriter.replace`, then erases the
  graph ops that the replacement left without uses (graph ops are `Pure`). Only producers of the
  replaced op are visited, so a pass removes what *it* made dead and leaves other dead code to
  `dce`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter

from mlc.dialects.graph import ops as graph
from mlc.dialects.graph.constants import splat_scalar


def tensor_type_of(value: SSAValue) -> TensorType:
    value_type = value.type
    assert isinstance(value_type, TensorType)
    return value_type


def splat_of(value: SSAValue) -> np.generic | None:
    """The value of every element of `value` when it is a splat `graph.constant`, else None."""
    owner = value.owner
    if not isinstance(owner, graph.ConstantOp):
        return None
    return splat_scalar(owner.value)


def is_graph_op(op: Operation) -> bool:
    return op.dialect_name() == "graph"


def replace_and_clean_up(
    rewriter: PatternRewriter,
    op: Operation,
    new_ops: Sequence[Operation],
    new_results: Sequence[SSAValue],
) -> None:
    """Replaces `op`, then erases the graph ops among its producers that became unused."""
    producers = [operand.owner for operand in op.operands if isinstance(operand.owner, Operation)]
    rewriter.replace(op, list(new_ops), list(new_results))
    worklist = list(dict.fromkeys(producers))
    while worklist:
        producer = worklist.pop()
        if producer.parent is None or not is_graph_op(producer) or producer.regions:
            continue
        if any(result.uses for result in producer.results):
            continue
        worklist += [
            operand.owner for operand in producer.operands if isinstance(operand.owner, Operation)
        ]
        rewriter.erase(producer)


def replace_with_value(
    rewriter: PatternRewriter, op: Operation, value: SSAValue, new_ops: Sequence[Operation] = ()
) -> None:
    """Replaces one-result `op` by `value`, broadcast to the result type when the shapes differ.

    `new_ops` are new ops that compute `value`; they are inserted before `op`.
    """
    result_type = op.results[0].type
    if value.type == result_type:
        replace_and_clean_up(rewriter, op, new_ops, [value])
        return
    broadcast = graph.BroadcastOp(value, result_type)
    replace_and_clean_up(rewriter, op, [*new_ops, broadcast], [broadcast.result])
