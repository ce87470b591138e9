"""`GraphBuilder` builds spec ops by name with the result types their verifiers expect."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects.builtin import IntegerAttr, TensorType, f32, i64
from xdsl.ir import Block

from mlc.frontend.graph_builder import GraphBuildError, GraphBuilder


def _builder(*shapes: tuple[int, ...]) -> tuple[GraphBuilder, list]:
    block = Block(arg_types=[TensorType(f32, shape) for shape in shapes])
    return GraphBuilder(block), list(block.args)


def test_result_types_match_the_verifiers():
    builder, (x, w, a, b) = _builder((2, 3, 9, 8), (4, 3, 3, 3), (5, 2, 3), (3, 7))
    assert builder.conv2d(x, w, None, [2, 1], [1, 0, 1, 2], [1, 2], 1).type == TensorType(f32, (2, 4, 5, 6))
    assert builder.pool2d("max", x, [3, 2], [2, 2], [1, 1, 0, 0]).type == TensorType(f32, (2, 3, 4, 4))
    assert builder.matmul(a, b).type == TensorType(f32, (5, 2, 7))
    assert builder.transpose(a, [2, 0, 1]).type == TensorType(f32, (3, 5, 2))
    assert builder.reduce("mean", a, [0, 2], keepdims=True).type == TensorType(f32, (1, 2, 1))
    assert builder.slice(a, [4, 0, 0], [-6, 2, 3], [-2, 1, 2]).type == TensorType(f32, (3, 2, 2))
    assert builder.concat([a, a], 1).type == TensorType(f32, (5, 4, 3))
    assert builder.constant(np.arange(3), i64).type == TensorType(i64, (3,))
    assert builder.scalar(1.5, f32).type == TensorType(f32, ())


def test_ops_that_do_not_fit_raise():
    builder, (a, b) = _builder((2, 3), (4, 5))
    with pytest.raises(GraphBuildError, match="contraction sizes differ"):
        builder.matmul(a, b)
    with pytest.raises(GraphBuildError, match="do not broadcast"):
        builder.binary("graph.add", a, b)
    with pytest.raises(GraphBuildError, match="'graph.reshape' op"):
        builder.reshape(a, (5,))


def test_windows_and_ranks_that_do_not_fit_raise():
    builder, (a, b, x, w) = _builder((2, 3), (2, 3, 4), (1, 1, 4, 4), (1, 1, 3))
    with pytest.raises(GraphBuildError, match="'graph.concat' operands 2x3, 2x3x4 must have one rank"):
        builder.concat([a, b], 0)
    with pytest.raises(GraphBuildError, match="needs at least one operand"):
        builder.concat([], 0)
    with pytest.raises(GraphBuildError, match="'graph.conv2d' weight must have rank 4, got 1x1x3"):
        builder.conv2d(x, w, None, [1, 1], [0, 0, 0, 0], [1, 1], 1)
    with pytest.raises(GraphBuildError, match=r"two positive sizes, got \[0, 1\]"):
        builder.conv2d(x, x, None, [0, 1], [0, 0, 0, 0], [1, 1], 1)
    with pytest.raises(GraphBuildError, match="'graph.max_pool2d' strides"):
        builder.pool2d("max", x, [0, 2], [1, 1], [0, 0, 0, 0])


def test_ops_without_a_class_are_built_in_generic_form():
    builder, (a,) = _builder((2, 3))
    result = builder.create("graph.future_op", [a], a.type, {"axis": IntegerAttr(1, i64)})
    assert builder.block.last_op is result.op
    assert '"graph.future_op"(%1) <{axis = 1 : i64}> : (tensor<2x3xf32>) -> tensor<2x3xf32>' in str(result.op)
