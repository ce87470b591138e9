"""Helpers shared by the graph-level rewrite passes (graph-simplify, graph-fold-constants).

* `splat_of(value)`: the scalar of a splat `graph.constant`, or None.
* `replace_with_value(rewriter, op, value, new_ops)`: replaces a one-result graph op by a value of
  the same element type whose shape broadcasts to the result's (computed by `new_ops`, or already
  there); a `graph.broadcast` is inserted when the shapes differ, so the result type is kept
  exactly.
* `splat_is(value, number)`, `operand_beside(op, number)`: splat constants equal to a number (for
  floats the sign of 0 counts), and the operand beside one; `replace_with_new_op`,
  `replace_with_splat`, `replace_with_negation`: one-result replacements built on
  `replace_with_value`.
* `replace_and_clean_up(rewriter, op, new_ops, new_results)`: `rewriter.replace`, then erases the
  graph ops that the replacement left without uses (graph ops are `Pure`). Only producers of the
  replaced op are visited, so a pass removes what *it* made dead and leaves other dead code to
  `dce`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter

from mlc.dialects.element_types import is_bool, is_float
from mlc.dialects.graph import ops as graph
from mlc.dialects.graph.constants import splat_dense, splat_scalar


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


def splat_is(value: SSAValue, number: float) -> bool:
    """Whether `value` is a splat constant equal to `number`; for floats the sign of 0 counts."""
    scalar = splat_of(value)
    if scalar is None or is_bool(tensor_type_of(value).element_type):
        return False
    if not is_float(tensor_type_of(value).element_type):
        return int(scalar) == number
    as_float = float(scalar)
    return as_float == number and math.copysign(1.0, as_float) == math.copysign(1.0, number)


def operand_beside(op: graph.BinaryOp, number: float) -> SSAValue | None:
    """For a commutative op: the operand beside a splat `number`, or None."""
    if splat_is(op.rhs, number):
        return op.lhs
    if splat_is(op.lhs, number):
        return op.rhs
    return None


def replace_with_new_op(rewriter: PatternRewriter, op: Operation, new_op: Operation) -> None:
    replace_with_value(rewriter, op, new_op.results[0], [new_op])


def replace_with_splat(rewriter: PatternRewriter, op: Operation, number: float) -> None:
    constant = graph.ConstantOp(splat_dense(number, tensor_type_of(op.results[0])))
    replace_with_value(rewriter, op, constant.result, [constant])


def replace_with_negation(rewriter: PatternRewriter, op: Operation, value: SSAValue) -> None:
    negation = graph.NegOp(value)
    replace_with_value(rewriter, op, negation.result, [negation])
