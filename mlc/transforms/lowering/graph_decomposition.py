"""The rewrites of graph-decompose: composite graph ops as the primitives the code generator lowers.

`decompose_op(op)` replaces one softmax, layer_norm, reduction, pool, conv2d (those two in
`window_decomposition.py`) or integer matmul by its decomposition (the rewrites,
their numerics and limits are in graph-decompose's docstring, `mlc/transforms/graph/graph_decompose.py`);
`decompose_function(function)` rewrites every op of a function.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from xdsl.builder import Builder
from xdsl.dialects import func
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, TensorType, f32, i32, i64
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from mlc.dialects.element_types import is_float, to_numpy_dtype
from mlc.dialects.graph import ops as graph
from mlc.dialects.graph.constants import numpy_to_dense
from mlc.dialects.graph.interpret import evaluate
from mlc.transforms.lowering.window_decomposition import DIRECT_LAYOUT_ELEMENTS, decompose_conv2d, decompose_pool

PRIMITIVE_REDUCTIONS = (graph.ReduceSumOp, graph.ReduceMaxOp, graph.ReduceMinOp)


def _tensor(value: SSAValue) -> TensorType:
    value_type = value.type
    assert isinstance(value_type, TensorType)
    return value_type


def _is_narrow_float(element_type: Attribute) -> bool:
    return is_float(element_type) and element_type.bitwidth < 32  # type: ignore[attr-defined]


@dataclass
class _Emitter:
    """Builds graph ops before the op being decomposed."""

    builder: Builder

    def insert(self, op: Operation, name: str | None = None) -> SSAValue:
        """Inserts `op`; `name` becomes its result's name in printed IR."""
        self.builder.insert(op)
        if name is not None:
            op.results[0].name_hint = name
        return op.results[0]

    def scalar(self, value: float, element_type: Attribute) -> SSAValue:
        constant_type = TensorType(element_type, [])
        return self.insert(graph.ConstantOp(DenseIntOrFPElementsAttr.from_list(constant_type, [value])))

    def cast(self, value: SSAValue, element_type: Attribute) -> SSAValue:
        if _tensor(value).element_type == element_type:
            return value
        return self.insert(graph.CastOp(value, TensorType(element_type, _tensor(value).get_shape())))

    def reduce(
        self, kind: type[graph.ReductionOp], x: SSAValue, axes: tuple[int, ...], name: str | None = None
    ) -> SSAValue:
        """A keepdims reduction of x (already f32 or an integer) over `axes`; one element is x."""
        if _count(_tensor(x).get_shape(), axes) == 1:
            return x
        return self.insert(kind(x, axes=axes, keepdims=True), name)

    def mean(self, x: SSAValue, axes: tuple[int, ...], name: str) -> SSAValue:
        count = _count(_tensor(x).get_shape(), axes)
        total = self.reduce(graph.ReduceSumOp, x, axes, f"{name}_sum")
        if count == 1:
            return total
        return self.insert(graph.DivOp(total, self.scalar(float(count), _tensor(x).element_type)), name)


def _count(shape: tuple[int, ...], axes: tuple[int, ...]) -> int:
    return math.prod(shape[axis] for axis in axes)


def _computing_type(element_type: Attribute) -> Attribute:
    return f32 if _is_narrow_float(element_type) else element_type


def _decompose_softmax(op: graph.SoftmaxOp, emit: _Emitter) -> SSAValue:
    element_type = _tensor(op.x).element_type
    x = emit.cast(op.x, _computing_type(element_type))
    axes = (op.normalized_axis(),)
    shifted = emit.insert(graph.SubOp(x, emit.reduce(graph.ReduceMaxOp, x, axes, "max")), "shifted")
    exponentials = emit.insert(graph.ExpOp(shifted), "exp")
    inverse_sum = emit.insert(graph.ReciprocalOp(emit.reduce(graph.ReduceSumOp, exponentials, axes, "sum")), "inverse_sum")
    result = emit.insert(graph.MulOp(exponentials, inverse_sum))
    return emit.cast(result, element_type)


def _decompose_layer_norm(op: graph.LayerNormOp, emit: _Emitter) -> SSAValue:
    element_type = _tensor(op.x).element_type
    wide = _computing_type(element_type)
    x, scale, bias = (emit.cast(value, wide) for value in (op.x, op.scale, op.bias))
    axes = tuple(range(op.normalized_axis(), _tensor(x).get_num_dims()))
    centered = emit.insert(graph.SubOp(x, emit.mean(x, axes, "mean")), "centered")
    variance = emit.mean(emit.insert(graph.MulOp(centered, centered), "squares"), axes, "variance")
    epsilon = emit.scalar(float(op.epsilon.value.data), wide)
    inverse_deviation = emit.insert(graph.RsqrtOp(emit.insert(graph.AddOp(variance, epsilon))), "rstd")
    normalized = emit.insert(graph.MulOp(centered, inverse_deviation), "normalized")
    result = emit.insert(graph.AddOp(emit.insert(graph.MulOp(normalized, scale)), bias))
    return emit.cast(result, element_type)


def _decompose_reduction(op: graph.ReductionOp, emit: _Emitter) -> SSAValue | None:
    """The primitive form of a reduction, or None when it is one already (or cannot be)."""
    shape = _tensor(op.x).get_shape()
    axes = tuple(sorted(set(op.normalized_axes())))
    element_type = _tensor(op.x).element_type
    count = _count(shape, axes)
    is_mean = isinstance(op, graph.ReduceMeanOp)
    already_primitive = (
        isinstance(op, PRIMITIVE_REDUCTIONS) and op.keeps_dims() and not _is_narrow_float(element_type) and count > 1
    )
    if count == 0:
        # The result does not depend on the (absent) data: the interpreter gives the identity.
        empty_input = np.empty(shape, dtype=to_numpy_dtype(element_type))
        value = evaluate(op, [empty_input])
        return emit.insert(graph.ConstantOp(numpy_to_dense(value, _tensor(op.result))), "identity")
    if already_primitive or (is_mean and not is_float(element_type)):
        return None
    if count == 1:
        reduced = op.x
    else:
        x = emit.cast(op.x, _computing_type(element_type))
        reduced = emit.mean(x, axes, "mean") if is_mean else emit.reduce(type(op), x, axes)
        reduced = emit.cast(reduced, element_type)
    result_type = op.result.type
    if _tensor(reduced).get_shape() != _tensor(op.result).get_shape():
        reduced = emit.insert(graph.ReshapeOp(reduced, result_type))
    return reduced


def _decompose_integer_matmul(op: graph.MatmulOp, emit: _Emitter) -> SSAValue | None:
    """An integer matmul as the product of (..., M, K, 1) and (..., 1, K, N) summed over K.

    In i32 (i64 for 64-bit operands), wrapping: sums and products modulo 2^32 are the interpreter's
    int64 result modulo 2^32, so truncated to the element type they agree exactly. One reduction
    kernel; the (M, K, N) products are never stored. Not a GEMM kernel: integer tensor cores and
    the blocked kernel's reuse are not used. On the GPU an i64 product does not compile yet: its
    row reduction would shuffle i64 values, which `mlc_gpu.shuffle` does not move."""
    result_type = _tensor(op.result)
    element_type = result_type.element_type
    if is_float(element_type):
        return None
    wide = i64 if element_type.bitwidth > 32 else i32  # type: ignore[attr-defined]
    *a_batch, rows, depth = _tensor(op.a).get_shape()
    *b_batch, _, columns = _tensor(op.b).get_shape()
    a = emit.insert(graph.ReshapeOp(emit.cast(op.a, wide), TensorType(wide, (*a_batch, rows, depth, 1))))
    b = emit.insert(graph.ReshapeOp(emit.cast(op.b, wide), TensorType(wide, (*b_batch, 1, depth, columns))))
    products = emit.insert(graph.MulOp(a, b), "products")
    rank = _tensor(products).get_num_dims()
    if depth == 0:
        total = emit.insert(graph.ConstantOp(numpy_to_dense(np.zeros(result_type.get_shape()), TensorType(wide, result_type.get_shape()))))
    else:
        total = emit.reduce(graph.ReduceSumOp, products, (rank - 2,), "sums")
        total = emit.insert(graph.ReshapeOp(total, TensorType(wide, result_type.get_shape())))
    return emit.cast(total, element_type)


def decompose_op(op: Operation, direct_layout_elements: int = DIRECT_LAYOUT_ELEMENTS) -> bool:
    """Replaces `op` by its decomposition when it has one; returns whether it did.
    `direct_layout_elements`: `window_decomposition.DIRECT_LAYOUT_ELEMENTS` for this rewrite."""
    emit = _Emitter(Builder(InsertPoint.before(op)))
    if isinstance(op, graph.SoftmaxOp):
        replacement = _decompose_softmax(op, emit)
    elif isinstance(op, graph.LayerNormOp):
        replacement = _decompose_layer_norm(op, emit)
    elif isinstance(op, graph.REDUCTION_OPS):
        replacement = _decompose_reduction(op, emit)
    elif isinstance(op, graph.Conv2dOp):
        replacement = decompose_conv2d(op, emit.insert, direct_layout_elements)
    elif isinstance(op, graph.Pool2dOp):
        replacement = decompose_pool(op, emit.insert)
    elif isinstance(op, graph.MatmulOp):
        replacement = _decompose_integer_matmul(op, emit)
    else:
        return False
    if replacement is None:
        return False
    op.results[0].replace_all_uses_with(replacement)
    Rewriter.erase_op(op)
    return True


def decompose_function(function: func.FuncOp, direct_layout_elements: int = DIRECT_LAYOUT_ELEMENTS) -> None:
    for op in list(function.body.walk()):
        decompose_op(op, direct_layout_elements)
