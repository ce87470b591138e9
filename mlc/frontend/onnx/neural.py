"""ONNX's contractions, reductions, normalisations and convolutions (pooling: `pooling`).

    MatMul             graph.matmul; a 1-D operand is reshaped to a matrix and the added
                       dimension dropped from the result again (numpy's rule)
    Gemm               graph.transpose of A / B when transA / transB, graph.matmul, graph.mul by
                       alpha (when not 1), graph.add of C (times beta when not 1)
    Softmax            graph.softmax; before opset 13 (`axis` coerces to 2-D) the input is reshaped
                       to (outer, inner), normalised along 1 and reshaped back
    LayerNormalization graph.layer_norm; a missing bias is a zero constant, a scale or bias not of
                       the normalised shape is reshaped or broadcast to it; the Mean and InvStdDev
                       outputs, when used, are computed as ONNX's function body does, in stash_type
    ReduceSum/Mean/    graph.reduce_*; axes from the attribute (before opset 13 for ReduceSum, 18
      Max/Min          for the others) or the constant input; no axes reduces all of them, unless
                       noop_with_empty_axes
    GlobalAverage/     graph.reduce_mean / reduce_max over the spatial axes, keepdims
      MaxPool
    BatchNormalization (x - mean) * (scale * rsqrt(var + epsilon)) + bias, the per-channel
                       parameters reshaped to (C, 1, ...); inference only
    Conv               graph.conv2d; a 1-D convolution is a 2-D one over a height of 1

auto_pad (SAME_UPPER, SAME_LOWER, VALID) is turned into explicit pads (`read_window`, which the
pools share). Not supported: 3-D convolution, BatchNormalization in training mode.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.ir import SSAValue

from mlc.dialects.element_types import is_float
from mlc.frontend.graph_builder import element_type_of, shape_of
from mlc.frontend.onnx.model import ELEMENT_TYPES
from mlc.frontend.onnx.node import Node
from mlc.frontend.onnx.registry import HandlerResult, maps

# -- matrix products ---------------------------------------------------------------------------


@maps("MatMul", (1, 9, 13))
def matmul(node: Node) -> HandlerResult:
    a, b = node.input(0), node.input(1)
    a_vector, b_vector = len(shape_of(a)) == 1, len(shape_of(b)) == 1
    if a_vector:
        a = node.builder.reshape(a, (1, *shape_of(a)))
    if b_vector:
        b = node.builder.reshape(b, (*shape_of(b), 1))
    product = node.builder.matmul(a, b)
    if not (a_vector or b_vector):
        return [product]
    shape = list(shape_of(product))
    if b_vector:
        shape.pop(-1)
    if a_vector:
        shape.pop(-2 if not b_vector else -1)
    return [node.builder.reshape(product, shape)]


@maps("Gemm", (1, 6, 7, 9, 11, 13))
def gemm(node: Node) -> HandlerResult:
    builder = node.builder
    a, b = node.input(0), node.input(1)
    if node.flag("transA", 0):
        a = builder.transpose(a, [1, 0])
    if node.flag("transB", 0):
        b = builder.transpose(b, [1, 0])
    result = builder.matmul(a, b)
    element_type = element_type_of(result)
    alpha, beta = node.attribute("alpha", 1.0), node.attribute("beta", 1.0)
    if alpha != 1.0:
        result = builder.binary("graph.mul", result, builder.scalar(alpha, element_type))
    if node.has_input(2) and beta != 0.0:
        c = node.input(2)
        if beta != 1.0:
            c = builder.binary("graph.mul", c, builder.scalar(beta, element_type))
        result = builder.binary("graph.add", result, c)
    return [result]


# -- softmax and normalisation -----------------------------------------------------------------


@maps("Softmax", (1, 11, 13))
def softmax(node: Node) -> HandlerResult:
    x = node.input(0)
    shape = shape_of(x)
    if node.version >= 13:
        return [node.builder.softmax(x, node.axis(node.attribute("axis", -1), len(shape)))]
    # Before opset 13 the input is treated as a matrix: the axes before `axis` against the rest.
    axis = node.axis(node.attribute("axis", 1), len(shape))
    matrix = node.builder.reshape(x, (math.prod(shape[:axis]), math.prod(shape[axis:])))
    return [node.builder.reshape(node.builder.softmax(matrix, 1), shape)]


def _as_shape(node: Node, value: SSAValue, shape: tuple[int, ...], role: str) -> SSAValue:
    """`value` with exactly `shape`: as is, reshaped (same element count) or broadcast."""
    current = shape_of(value)
    if current == shape:
        return value
    if math.prod(current) == math.prod(shape):
        return node.builder.reshape(value, shape)
    if len(current) <= len(shape) and all(c in (1, s) for c, s in zip(current[::-1], shape[::-1])):
        return node.builder.broadcast(value, shape)
    raise node.error(f"{role} of shape {current} does not fit the normalised shape {shape}")


@maps("LayerNormalization", (17,))
def layer_normalization(node: Node) -> HandlerResult:
    x = node.input(0)
    shape = shape_of(x)
    axis = node.axis(node.attribute("axis", -1), len(shape))
    epsilon = float(node.attribute("epsilon", 1e-5))
    normalised = shape[axis:]
    scale = _as_shape(node, node.input(1), normalised, "scale")
    if node.has_input(2):
        bias = _as_shape(node, node.input(2), normalised, "bias")
    else:
        bias = node.builder.constant(np.zeros(normalised), element_type_of(x))
    result = node.builder.layer_norm(x, scale, bias, axis, epsilon)
    if not (node.output_used(1) or node.output_used(2)):
        return [result, None, None]
    return [result, *_layer_norm_statistics(node, x, axis, epsilon)]


def _layer_norm_statistics(node: Node, x: SSAValue, axis: int, epsilon: float) -> tuple[SSAValue, SSAValue]:
    """LayerNormalization's Mean and InvStdDev outputs (dims from `axis` on kept as 1), computed as
    the op's ONNX function body does, in the element type `stash_type` names."""
    stash_type = node.attribute("stash_type", 1)
    if stash_type not in ELEMENT_TYPES or not is_float(ELEMENT_TYPES[stash_type]):
        raise node.reject_attribute("stash_type", stash_type, "the statistics need a float type mlc supports")
    builder = node.builder
    element_type = ELEMENT_TYPES[stash_type]
    if element_type_of(x) != element_type:
        x = builder.cast(x, element_type)
    axes = list(range(axis, len(shape_of(x))))
    mean = builder.reduce("mean", x, axes, True)
    centred = builder.binary("graph.sub", x, mean)
    variance = builder.reduce("mean", builder.binary("graph.mul", centred, centred), axes, True)
    shifted = builder.binary("graph.add", variance, builder.scalar(epsilon, element_type))
    return mean, builder.unary("graph.rsqrt", shifted)


@maps("BatchNormalization", (7, 9, 14, 15))
def batch_normalization(node: Node) -> HandlerResult:
    if not node.flag("spatial", 1):
        raise node.reject_attribute("spatial", 0, "per-activation statistics are not supported")
    if node.flag("training_mode", 0):
        raise node.error("training mode is not supported (mlc imports models for inference)")
    if any(node.output_used(index) for index in range(1, 5)):
        raise node.error("the running mean and variance outputs exist in training mode only")
    builder = node.builder
    x = node.input(0)
    shape = shape_of(x)
    if len(shape) < 2:
        raise node.error(f"the input must have rank 2 or more, not {len(shape)}")
    element_type = element_type_of(x)
    parameter_shape = (shape[1],) + (1,) * (len(shape) - 2)

    def parameter(index: int) -> SSAValue:
        value = node.input(index)
        if element_type_of(value) != element_type:
            value = builder.cast(value, element_type)
        return value if shape_of(value) == parameter_shape else builder.reshape(value, parameter_shape)

    scale, bias, mean, variance = (parameter(index) for index in (1, 2, 3, 4))
    epsilon = builder.scalar(float(node.attribute("epsilon", 1e-5)), element_type)
    inverse_deviation = builder.unary("graph.rsqrt", builder.binary("graph.add", variance, epsilon))
    centred = builder.binary("graph.sub", x, mean)
    scaled = builder.binary("graph.mul", centred, builder.binary("graph.mul", scale, inverse_deviation))
    return [builder.binary("graph.add", scaled, bias)]


# -- reductions --------------------------------------------------------------------------------

REDUCTIONS = {
    "ReduceSum": ("sum", 13, (1, 11, 13)),
    "ReduceMean": ("mean", 18, (1, 11, 13, 18)),
    "ReduceMax": ("max", 18, (1, 11, 12, 13, 18, 20)),
    "ReduceMin": ("min", 18, (1, 11, 12, 13, 18, 20)),
}
"""op type -> (graph reduction, first version with axes as an input, versions handled)."""


def reduction(node: Node) -> HandlerResult:
    kind, axes_input_version, _ = REDUCTIONS[node.op_type]
    x = node.input(0)
    rank = len(shape_of(x))
    if node.version >= axes_input_version:
        axes = node.constant_ints(1, "axes")
        if not axes and node.flag("noop_with_empty_axes", 0):
            return [x]
    else:
        axes = node.attribute("axes")
    axes = node.axes(axes, rank) if axes else list(range(rank))
    if not axes:
        return [x]  # a rank-0 input has nothing to reduce
    return [node.builder.reduce(kind, x, axes, node.flag("keepdims", 1))]


for _op_type, (_, _, _versions) in REDUCTIONS.items():
    maps(_op_type, _versions, constant_inputs=(1,))(reduction)


@maps("GlobalAveragePool", (1, 22))
def global_average_pool(node: Node) -> HandlerResult:
    x = node.input(0)
    return [node.builder.reduce("mean", x, list(range(2, len(shape_of(x)))), True)]


@maps("GlobalMaxPool", (1, 22))
def global_max_pool(node: Node) -> HandlerResult:
    x = node.input(0)
    return [node.builder.reduce("max", x, list(range(2, len(shape_of(x)))), True)]


# -- convolution -------------------------------------------------------------------------------


@dataclass
class Window:
    """A sliding window over the spatial axes, pads as (begins..., ends...) as ONNX orders them."""

    kernel: list[int]
    strides: list[int]
    pads: list[int]
    dilations: list[int]

    def as_2d(self) -> Window:
        """The window of a 1-D op lifted to 2-D over a height of 1."""
        if len(self.kernel) == 2:
            return self
        return Window([1, *self.kernel], [1, *self.strides], [0, self.pads[0], 0, self.pads[1]], [1, *self.dilations])


def read_window(node: Node, spatial: Sequence[int], kernel: Sequence[int]) -> Window:
    """The window of a convolution or pool: strides, dilations, and pads with auto_pad resolved."""
    rank = len(spatial)
    strides = list(node.attribute("strides", [1] * rank))
    dilations = list(node.attribute("dilations", [1] * rank))
    if len(strides) != rank or len(dilations) != rank:
        raise node.error(f"strides {strides} and dilations {dilations} must have {rank} entries")
    for name, values in (("kernel_shape", kernel), ("strides", strides), ("dilations", dilations)):
        if any(value < 1 for value in values):
            raise node.reject_attribute(name, list(values), "every entry must be positive")
    auto_pad = node.attribute("auto_pad", "NOTSET")
    if auto_pad == "NOTSET":
        pads = list(node.attribute("pads", [0] * (2 * rank)))
    elif auto_pad == "VALID":
        pads = [0] * (2 * rank)
    elif auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        # The output has ceil(size / stride) positions; the odd pad goes at the end (UPPER) or
        # the beginning (LOWER).
        begins, ends = [], []
        for size, k, stride, dilation in zip(spatial, kernel, strides, dilations):
            total = max(0, (-(-size // stride) - 1) * stride + (k - 1) * dilation + 1 - size)
            small, large = total // 2, total - total // 2
            begins.append(small if auto_pad == "SAME_UPPER" else large)
            ends.append(large if auto_pad == "SAME_UPPER" else small)
        pads = begins + ends
    else:
        raise node.reject_attribute("auto_pad", auto_pad, "ONNX defines NOTSET, SAME_UPPER, SAME_LOWER and VALID")
    if len(pads) != 2 * rank:
        raise node.error(f"pads {pads} must have {2 * rank} entries")
    return Window(list(kernel), strides, pads, dilations)


def _spatial_rank(node: Node, shape: Sequence[int]) -> int:
    spatial = len(shape) - 2
    if spatial not in (1, 2):
        raise node.error(f"only 1-D and 2-D {node.op_type} is supported; this input has rank {len(shape)}")
    return spatial


def _lift_1d(node: Node, value: SSAValue) -> SSAValue:
    """(N, C, L) -> (N, C, 1, L)."""
    shape = shape_of(value)
    return node.builder.reshape(value, (*shape[:2], 1, shape[2]))


def _drop_height(node: Node, value: SSAValue) -> SSAValue:
    """(N, C, 1, L) -> (N, C, L)."""
    shape = shape_of(value)
    return node.builder.reshape(value, (*shape[:2], shape[3]))


@maps("Conv", (1, 11, 22))
def conv(node: Node) -> HandlerResult:
    x_shape, weight_shape = node.input_shape(0), node.input_shape(1)
    spatial = _spatial_rank(node, x_shape)
    if len(weight_shape) != len(x_shape):
        raise node.error(f"the weight has rank {len(weight_shape)} and the input rank {len(x_shape)}; they must agree")
    kernel = list(node.attribute("kernel_shape", weight_shape[2:]))
    if tuple(kernel) != tuple(weight_shape[2:]):
        raise node.error(f"kernel_shape {kernel} differs from the weight's spatial shape {list(weight_shape[2:])}")
    window = read_window(node, x_shape[2:], kernel).as_2d()
    x, weight = node.input(0), node.input(1)
    if spatial == 1:
        x, weight = _lift_1d(node, x), _lift_1d(node, weight)
    bias = node.input(2) if node.has_input(2) else None
    group = node.attribute("group", 1)
    result = node.builder.conv2d(x, weight, bias, window.strides, window.pads, window.dilations, group)
    return [_drop_height(node, result) if spatial == 1 else result]
