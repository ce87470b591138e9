"""`GraphBuilder`: appends graph ops to a block, working out each result type.

Frontends describe a model op by op; this class turns each step into a graph op of
`spec/graph-dialect.md` with the spec's operand order and property names and types, computes the
result type by the spec's shape rules, verifies the op, and appends it to the block.

Ops are created by name through an xDSL context (`context.get_op("graph.matmul")` and the class's
generic `create`), not through the Python classes of `mlc.dialects.graph.ops`. The builder so
depends only on the spec: it keeps working while the dialect grows, and an op whose class does not
exist yet is still built, as an unregistered op printed in the generic form (which parses as soon
as the class lands). Such ops cannot be verified or interpreted until then.

Shapes are tuples of ints; axes given to the builder must already be non-negative (the frontend
normalises them, so the IR it prints is unambiguous). An op that does not verify raises
`GraphBuildError` with the verifier's message; the frontend adds which source node it came from.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import (
    BytesAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IntegerAttr,
    StringAttr,
    TensorType,
    f32,
    i1,
    i64,
)
from xdsl.ir import Attribute, Block, SSAValue
from xdsl.utils.exceptions import VerifyException

from mlc.dialects import make_context
from mlc.dialects.element_types import to_numpy_dtype
from mlc.dialects.graph.ops import broadcast_shapes, format_shape
from mlc.errors import MlcError

Shape = tuple[int, ...]


class GraphBuildError(MlcError):
    """A graph op could not be built: its operands do not fit, or it does not verify."""


def tensor_type(value: SSAValue) -> TensorType:
    value_type = value.type
    assert isinstance(value_type, TensorType), f"graph values are tensors, got {value_type}"
    return value_type


def shape_of(value: SSAValue) -> Shape:
    return tuple(tensor_type(value).get_shape())


def element_type_of(value: SSAValue) -> Attribute:
    return tensor_type(value).element_type


def _i64_array(values: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, [int(v) for v in values])


def dense_attribute(array: np.ndarray, element_type: Attribute) -> DenseIntOrFPElementsAttr:
    """`array` as a dense attribute of `element_type`, built from its bytes (fast for large data)."""
    values = np.asarray(array, dtype=to_numpy_dtype(element_type))  # no copy when the type matches
    if values.dtype == np.bool_:
        values = values.astype(np.int8)  # i1 is stored one byte per element (see dense_to_numpy)
    return DenseIntOrFPElementsAttr(TensorType(element_type, values.shape), BytesAttr(values.tobytes(order="C")))


def pooled_size(size: int, kernel: int, stride: int, pad_begin: int, pad_end: int, dilation: int = 1) -> int:
    """Output length of a convolution or pooling window along one axis (floor mode)."""
    return (size + pad_begin + pad_end - dilation * (kernel - 1) - 1) // stride + 1


def _require_rank(op_name: str, role: str, value: SSAValue, rank: int) -> None:
    if len(shape_of(value)) != rank:
        raise GraphBuildError(f"'{op_name}' {role} must have rank {rank}, got {format_shape(shape_of(value))}")


def _require_window(op_name: str, *sizes: Sequence[int]) -> None:
    """Strides, dilations and kernel sizes: two positive entries each."""
    for values in sizes:
        if len(values) != 2 or any(v < 1 for v in values):
            raise GraphBuildError(f"'{op_name}' strides, dilations and kernel sizes must be two positive sizes, got {list(values)}")


class GraphBuilder:
    """Appends graph ops to `block`; every method returns the new op's result."""

    def __init__(self, block: Block, context: Context | None = None):
        self.block = block
        self.context = context.clone() if context is not None else make_context()
        # Ops of the spec whose class does not exist yet are built as unregistered ops.
        self.context.allow_unregistered = True

    # -- the one place ops are made ------------------------------------------------------------

    def create(
        self,
        name: str,
        operands: Sequence[SSAValue],
        result_type: Attribute,
        properties: dict[str, Attribute] | None = None,
    ) -> SSAValue:
        """Builds, verifies and appends op `name`; returns its result."""
        op_class = self.context.get_op(name)
        op = op_class.create(operands=list(operands), result_types=[result_type], properties=properties or {})
        try:
            op.verify()
        except VerifyException as error:
            op.erase(safe_erase=False)
            raise GraphBuildError(f"'{name}' op {error}") from None
        self.block.add_op(op)
        return op.results[0]

    # -- constants -----------------------------------------------------------------------------

    def constant(self, array: np.ndarray, element_type: Attribute) -> SSAValue:
        """A `graph.constant` holding `array` converted to `element_type`."""
        value = dense_attribute(array, element_type)
        return self.create("graph.constant", [], value.type, {"value": value})

    def scalar(self, value: float | int | bool, element_type: Attribute) -> SSAValue:
        """A rank-0 constant (it broadcasts against any shape)."""
        return self.constant(np.asarray(value), element_type)

    # -- elementwise ---------------------------------------------------------------------------

    def _broadcast_shape(self, name: str, shapes: Sequence[Shape]) -> Shape:
        result: Shape | None = ()
        for shape in shapes:
            result = broadcast_shapes(result, shape) if result is not None else None
        if result is None:
            described = ", ".join(format_shape(shape) for shape in shapes)
            raise GraphBuildError(f"'{name}' operand shapes {described} do not broadcast")
        return result

    def binary(self, name: str, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        """`graph.add`, `graph.sub`, ... with numpy broadcasting."""
        shape = self._broadcast_shape(name, [shape_of(lhs), shape_of(rhs)])
        return self.create(name, [lhs, rhs], TensorType(element_type_of(lhs), shape))

    def compare(self, predicate: str, lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        shape = self._broadcast_shape("graph.cmp", [shape_of(lhs), shape_of(rhs)])
        return self.create("graph.cmp", [lhs, rhs], TensorType(i1, shape), {"predicate": StringAttr(predicate)})

    def where(self, condition: SSAValue, true_value: SSAValue, false_value: SSAValue) -> SSAValue:
        shapes = [shape_of(condition), shape_of(true_value), shape_of(false_value)]
        shape = self._broadcast_shape("graph.where", shapes)
        result_type = TensorType(element_type_of(true_value), shape)
        return self.create("graph.where", [condition, true_value, false_value], result_type)

    def unary(self, name: str, x: SSAValue) -> SSAValue:
        """`graph.neg`, `graph.exp`, ...: the result type is the operand's."""
        return self.create(name, [x], x.type)

    def gelu(self, x: SSAValue, approximate: str) -> SSAValue:
        return self.create("graph.gelu", [x], x.type, {"approximate": StringAttr(approximate)})

    def cast(self, x: SSAValue, element_type: Attribute) -> SSAValue:
        return self.create("graph.cast", [x], TensorType(element_type, shape_of(x)))

    # -- shape ops -----------------------------------------------------------------------------

    def reshape(self, x: SSAValue, shape: Sequence[int]) -> SSAValue:
        return self.create("graph.reshape", [x], TensorType(element_type_of(x), tuple(shape)))

    def broadcast(self, x: SSAValue, shape: Sequence[int]) -> SSAValue:
        return self.create("graph.broadcast", [x], TensorType(element_type_of(x), tuple(shape)))

    def transpose(self, x: SSAValue, permutation: Sequence[int]) -> SSAValue:
        shape = shape_of(x)
        if sorted(permutation) != list(range(len(shape))):
            raise GraphBuildError(
                f"'graph.transpose' perm {list(permutation)} is not a permutation of {len(shape)} axes"
            )
        result_type = TensorType(element_type_of(x), tuple(shape[axis] for axis in permutation))
        return self.create("graph.transpose", [x], result_type, {"perm": _i64_array(permutation)})

    def concat(self, xs: Sequence[SSAValue], axis: int) -> SSAValue:
        if not xs:
            raise GraphBuildError("'graph.concat' needs at least one operand")
        ranks = {len(shape_of(x)) for x in xs}
        if len(ranks) != 1 or not 0 <= axis < len(shape_of(xs[0])):
            described = ", ".join(format_shape(shape_of(x)) for x in xs)
            raise GraphBuildError(f"'graph.concat' operands {described} must have one rank with axis {axis} in it")
        shape = list(shape_of(xs[0]))
        shape[axis] = sum(shape_of(x)[axis] for x in xs)
        result_type = TensorType(element_type_of(xs[0]), tuple(shape))
        return self.create("graph.concat", xs, result_type, {"axis": IntegerAttr(axis, i64)})

    def slice(self, x: SSAValue, starts: Sequence[int], ends: Sequence[int], steps: Sequence[int]) -> SSAValue:
        """`x[starts[0]:ends[0]:steps[0], ...]` with Python's slice semantics (one entry per dim)."""
        shape = tuple(
            len(range(*slice(start, end, step).indices(size)))
            for size, start, end, step in zip(shape_of(x), starts, ends, steps)
        )
        properties = {"starts": _i64_array(starts), "ends": _i64_array(ends), "steps": _i64_array(steps)}
        return self.create("graph.slice", [x], TensorType(element_type_of(x), shape), properties)

    # -- contractions, reductions, normalisations ------------------------------------------------

    def matmul(self, a: SSAValue, b: SSAValue) -> SSAValue:
        """`np.matmul` of operands of rank >= 2 (batch dims broadcast)."""
        a_shape, b_shape = shape_of(a), shape_of(b)
        if len(a_shape) < 2 or len(b_shape) < 2:
            raise GraphBuildError("'graph.matmul' operands must have rank 2 or more")
        if a_shape[-1] != b_shape[-2]:
            raise GraphBuildError(
                f"'graph.matmul' contraction sizes differ: a is {format_shape(a_shape)}, b is {format_shape(b_shape)}"
            )
        batch = self._broadcast_shape("graph.matmul", [a_shape[:-2], b_shape[:-2]])
        result_type = TensorType(element_type_of(a), (*batch, a_shape[-2], b_shape[-1]))
        return self.create("graph.matmul", [a, b], result_type)

    def reduce(self, kind: str, x: SSAValue, axes: Sequence[int], keepdims: bool) -> SSAValue:
        """`graph.reduce_<kind>` (sum, mean, max, min) over sorted, non-negative `axes`."""
        shape = shape_of(x)
        reduced = set(axes)
        if keepdims:
            result_shape = tuple(1 if axis in reduced else size for axis, size in enumerate(shape))
        else:
            result_shape = tuple(size for axis, size in enumerate(shape) if axis not in reduced)
        properties = {"axes": _i64_array(sorted(reduced)), "keepdims": IntegerAttr.from_bool(keepdims)}
        return self.create(f"graph.reduce_{kind}", [x], TensorType(element_type_of(x), result_shape), properties)

    def softmax(self, x: SSAValue, axis: int) -> SSAValue:
        return self.create("graph.softmax", [x], x.type, {"axis": IntegerAttr(axis, i64)})

    def layer_norm(self, x: SSAValue, scale: SSAValue, bias: SSAValue, axis: int, epsilon: float) -> SSAValue:
        properties = {"axis": IntegerAttr(axis, i64), "epsilon": FloatAttr(epsilon, f32)}
        return self.create("graph.layer_norm", [x, scale, bias], x.type, properties)

    def conv2d(
        self,
        x: SSAValue,
        weight: SSAValue,
        bias: SSAValue | None,
        strides: Sequence[int],
        pads: Sequence[int],
        dilations: Sequence[int],
        group: int,
    ) -> SSAValue:
        """NCHW convolution with OIHW weights; `pads` are (top, left, bottom, right)."""
        _require_rank("graph.conv2d", "x", x, 4)
        _require_rank("graph.conv2d", "weight", weight, 4)
        _require_window("graph.conv2d", strides, dilations)
        batch, _, height, width = shape_of(x)
        out_channels, _, kernel_height, kernel_width = shape_of(weight)
        result_shape = (
            batch,
            out_channels,
            pooled_size(height, kernel_height, strides[0], pads[0], pads[2], dilations[0]),
            pooled_size(width, kernel_width, strides[1], pads[1], pads[3], dilations[1]),
        )
        properties = {
            "strides": _i64_array(strides),
            "pads": _i64_array(pads),
            "dilations": _i64_array(dilations),
            "group": IntegerAttr(group, i64),
        }
        operands = [x, weight] if bias is None else [x, weight, bias]
        return self.create("graph.conv2d", operands, TensorType(element_type_of(x), result_shape), properties)

    def pool2d(
        self, kind: str, x: SSAValue, kernel: Sequence[int], strides: Sequence[int], pads: Sequence[int]
    ) -> SSAValue:
        """`graph.max_pool2d` / `graph.avg_pool2d` (kind `max` / `avg`) over NCHW `x`."""
        _require_rank(f"graph.{kind}_pool2d", "x", x, 4)
        _require_window(f"graph.{kind}_pool2d", strides, kernel)
        batch, channels, height, width = shape_of(x)
        result_shape = (
            batch,
            channels,
            pooled_size(height, kernel[0], strides[0], pads[0], pads[2]),
            pooled_size(width, kernel[1], strides[1], pads[1], pads[3]),
        )
        properties = {"kernel": _i64_array(kernel), "strides": _i64_array(strides), "pads": _i64_array(pads)}
        return self.create(f"graph.{kind}_pool2d", [x], TensorType(element_type_of(x), result_shape), properties)
