"""ONNX ops that move or restructure data, and the ops that only produce constants.

    Identity, Dropout (inference,   the input itself (Dropout's mask, if used: a constant true)
      or training with ratio 0)
    Constant, Shape,                a value known at import time; it becomes a graph.constant
      ConstantOfShape               where it is used as a tensor
    Transpose                       graph.transpose (perm defaults to reversing the axes)
    Reshape, Flatten,               graph.reshape to the static result shape
      Squeeze, Unsqueeze
    Expand                          graph.broadcast to broadcast(input shape, shape)
    Concat                          graph.concat
    Slice                           graph.slice with one start/end/step per dimension
    Split                           one graph.slice per output

Reshape's shape, Expand's shape, Slice's starts/ends/axes/steps, Split's sizes and the axes of
Squeeze and Unsqueeze are inputs since opset 13 (attributes before): both forms are read, and
the inputs must be constants. Slice bounds are normalised to Python's slice semantics (what
`graph.slice` means): clamped non-negative indices, except that a backward slice running through
index 0 ends at -(size + 1), the one integer that means "before the first element" there.
"""

from __future__ import annotations

import math

import numpy as np
from xdsl.ir import SSAValue

from mlc.dialects.element_types import to_numpy_dtype
from mlc.dialects.graph.ops import broadcast_shapes, format_shape
from mlc.frontend.onnx.node import Node
from mlc.frontend.onnx.registry import HandlerResult, maps

_TYPE_CHANGES_ONLY_AFTER_21 = (23, 24, 25)
"""Versions of the shape ops after opset 21 that only add element types (float4, int2, ...)."""


@maps("Identity", (1, 13, 14, 16, 19, 21, *_TYPE_CHANGES_ONLY_AFTER_21))
def identity(node: Node) -> HandlerResult:
    return [node.input(0)]


@maps("Dropout", (7, 10, 12, 13, 22), constant_inputs=(1, 2))
def dropout(node: Node) -> HandlerResult:
    training_mode = node.constant(2, "training_mode")
    if training_mode is not None and bool(np.asarray(training_mode).reshape(-1)[0]):
        # Training mode drops random elements, unless the ratio is 0: then it is the identity too.
        ratio = node.constant(1, "ratio")
        ratio_value = 0.5 if ratio is None else float(np.asarray(ratio).reshape(-1)[0])
        if ratio_value != 0.0:
            raise node.error(
                f"training mode with ratio {ratio_value:g} drops random elements, which is not supported "
                "(mlc imports models for inference; only ratio 0 is deterministic)"
            )
    mask = None
    if node.output_used(1):
        # Nothing is dropped: the mask is all true (of the data's type before version 10).
        dtype = np.bool_ if node.version >= 10 else to_numpy_dtype(node.input_type(0).element_type)
        mask = np.ones(node.input_shape(0), dtype=dtype)
    return [node.input(0), mask]


@maps("Constant", (1, 9, 11, 12, 13, 19, 21, *_TYPE_CHANGES_ONLY_AFTER_21))
def constant(node: Node) -> HandlerResult:
    for name in ("sparse_value", "value_string", "value_strings"):
        if node.has_attribute(name):
            raise node.error(f"a constant given by '{name}' is not supported")
    if node.has_attribute("value"):
        return [np.asarray(node.attribute("value"))]
    if node.has_attribute("value_float"):
        return [np.asarray(node.attribute("value_float"), dtype=np.float32)]
    if node.has_attribute("value_floats"):
        return [np.asarray(node.attribute("value_floats"), dtype=np.float32)]
    if node.has_attribute("value_int"):
        return [np.asarray(node.attribute("value_int"), dtype=np.int64)]
    if node.has_attribute("value_ints"):
        return [np.asarray(node.attribute("value_ints"), dtype=np.int64)]
    raise node.error("it has no value attribute")


@maps("Shape", (1, 13, 15, 19, 21, *_TYPE_CHANGES_ONLY_AFTER_21), shape_only_inputs=(0,))
def shape(node: Node) -> HandlerResult:
    dims = node.input_shape(0)
    start, end = node.attribute("start", 0), node.attribute("end", None)
    return [np.asarray(dims[start:end], dtype=np.int64)]


@maps("ConstantOfShape", (9, 20, 21, *_TYPE_CHANGES_ONLY_AFTER_21), constant_inputs=(0,))
def constant_of_shape(node: Node) -> HandlerResult:
    dims = node.constant_ints(0, "shape") or []
    fill = node.attribute("value", np.zeros(1, dtype=np.float32))
    return [np.full(dims, np.asarray(fill).reshape(-1)[0], dtype=np.asarray(fill).dtype)]


@maps("Transpose", (1, 13, 21, *_TYPE_CHANGES_ONLY_AFTER_21))
def transpose(node: Node) -> HandlerResult:
    rank = node.input_rank(0)
    permutation = node.attribute("perm", list(reversed(range(rank))))
    if len(permutation) != rank:
        raise node.reject_attribute("perm", permutation, f"not a permutation of {rank} axes")
    return [node.builder.transpose(node.input(0), node.axes(permutation, rank, "perm"))]


@maps("Reshape", (5, 13, 14, 19, 21, *_TYPE_CHANGES_ONLY_AFTER_21), constant_inputs=(1,))
def reshape(node: Node) -> HandlerResult:
    source = node.input_shape(0)
    requested = node.constant_ints(1, "shape")
    if requested is None:
        raise node.error("input #1 (shape) is missing")
    allow_zero = node.flag("allowzero", 0)
    if not allow_zero and 0 in requested[len(source) :]:
        raise node.error(f"shape {requested} copies with 0 a dimension that the rank-{len(source)} input lacks")
    if any(size < -1 for size in requested):
        raise node.error(f"shape {requested} has a negative size other than -1")
    target = [source[axis] if size == 0 and not allow_zero else size for axis, size in enumerate(requested)]
    if target.count(-1) > 1:
        raise node.error(f"shape {requested} has more than one -1")
    if -1 in target:
        known = math.prod(size for size in target if size != -1)
        if known == 0 or math.prod(source) % known:
            raise node.error(f"shape {requested} does not fit the {math.prod(source)} elements of the input")
        target[target.index(-1)] = math.prod(source) // known
    if math.prod(target) != math.prod(source):
        raise node.error(f"cannot reshape {format_shape(source)} to {format_shape(target)}")
    return [node.builder.reshape(node.input(0), target)]


@maps("Flatten", (1, 9, 11, 13, 21, *_TYPE_CHANGES_ONLY_AFTER_21))
def flatten(node: Node) -> HandlerResult:
    source = node.input_shape(0)
    axis = node.attribute("axis", 1)
    if not -len(source) <= axis <= len(source):
        raise node.reject_attribute("axis", axis, f"out of range for rank {len(source)}")
    axis = axis + len(source) if axis < 0 else axis
    return [node.builder.reshape(node.input(0), [math.prod(source[:axis]), math.prod(source[axis:])])]


def _axes_argument(node: Node, first_input_version: int) -> list[int] | None:
    """`axes` from the attribute (older versions) or input #1 (`first_input_version` on)."""
    if node.version >= first_input_version:
        return node.constant_ints(1, "axes")
    return node.attribute("axes")


@maps("Squeeze", (1, 11, 13, 21, *_TYPE_CHANGES_ONLY_AFTER_21), constant_inputs=(1,))
def squeeze(node: Node) -> HandlerResult:
    source = node.input_shape(0)
    axes = _axes_argument(node, 13)
    if axes is None:
        removed = {axis for axis, size in enumerate(source) if size == 1}
    else:
        removed = set(node.axes(axes, len(source)))
        for axis in sorted(removed):
            if source[axis] != 1:
                raise node.error(f"cannot squeeze axis {axis} of size {source[axis]}")
    return [node.builder.reshape(node.input(0), [size for axis, size in enumerate(source) if axis not in removed])]


@maps("Unsqueeze", (1, 11, 13, 21, *_TYPE_CHANGES_ONLY_AFTER_21), constant_inputs=(1,))
def unsqueeze(node: Node) -> HandlerResult:
    source = node.input_shape(0)
    axes = _axes_argument(node, 13)
    if axes is None:
        raise node.error("axes are missing")
    rank = len(source) + len(axes)
    inserted = set(node.axes(axes, rank))
    remaining = iter(source)
    target = [1 if axis in inserted else next(remaining) for axis in range(rank)]
    return [node.builder.reshape(node.input(0), target)]


@maps("Expand", (8, 13), constant_inputs=(1,))
def expand(node: Node) -> HandlerResult:
    requested = node.constant_ints(1, "shape")
    source = node.input_shape(0)
    target = broadcast_shapes(source, requested or [])
    if target is None:
        raise node.error(f"input of shape {format_shape(source)} does not broadcast with shape {requested}")
    return [node.builder.broadcast(node.input(0), target)]


@maps("Concat", (4, 11, 13))
def concat(node: Node) -> HandlerResult:
    operands = node.inputs()
    rank = node.input_rank(0)
    for index in range(1, len(node.proto.input)):
        if node.has_input(index) and node.input_rank(index) != rank:
            other = node.input_rank(index)
            raise node.error(f"input #{index} has rank {other} and input #0 rank {rank}; they must agree")
    axis = node.axis(node.attribute("axis", 0), rank)
    return [node.builder.concat(operands, axis)]


def _python_slice(start: int, end: int, step: int, size: int) -> tuple[int, int, int]:
    """ONNX's clamping of one axis's bounds, in a form Python's slice reads the same way."""
    start, end, step = slice(start, end, step).indices(size)
    if step < 0 and end < 0:
        end = -size - 1  # backward through index 0: -1 would mean the last element
    return start, end, step


@maps("Slice", (1, 10, 11, 13), constant_inputs=(1, 2, 3, 4))
def slice_(node: Node) -> HandlerResult:
    source = node.input_shape(0)
    if node.version >= 10:
        starts, ends = node.constant_ints(1, "starts"), node.constant_ints(2, "ends")
        axes, steps = node.constant_ints(3, "axes"), node.constant_ints(4, "steps")
    else:  # attributes, and no steps, before version 10
        starts, ends, axes, steps = node.attribute("starts"), node.attribute("ends"), node.attribute("axes"), None
    if starts is None or ends is None or len(starts) != len(ends):
        raise node.error("starts and ends must be given, with one entry per sliced axis")
    axes = axes or list(range(len(starts)))
    steps = steps or [1] * len(starts)
    if not len(axes) == len(steps) == len(starts):
        raise node.error("starts, ends, axes and steps must have the same length")
    bounds = [(0, size, 1) for size in source]
    for axis, start, end, step in zip(node.axes(axes, len(source)), starts, ends, steps):
        if step == 0:
            raise node.error(f"step 0 on axis {axis}")
        bounds[axis] = _python_slice(start, end, step, source[axis])
    first, last, step = (list(column) for column in zip(*bounds)) if bounds else ([], [], [])
    return [node.builder.slice(node.input(0), first, last, step)]


def _split_sizes(node: Node, size: int, outputs: int) -> list[int]:
    if node.version >= 13:
        sizes = node.constant_ints(1, "split")
    else:
        sizes = node.attribute("split")
    if sizes is not None:
        if sum(sizes) != size or len(sizes) != outputs:
            raise node.error(f"split sizes {sizes} do not divide {size} into {outputs} outputs")
        return sizes
    count = node.attribute("num_outputs", outputs) if node.version >= 18 else outputs
    if node.version < 18 and size % count:
        raise node.error(f"axis of size {size} does not split evenly into {count} outputs")
    chunk = -(-size // count)  # ONNX 18: equal chunks of ceil(size / n), the last one smaller
    return [chunk] * (count - 1) + [size - chunk * (count - 1)]


@maps("Split", (2, 11, 13, 18), constant_inputs=(1,))
def split(node: Node) -> HandlerResult:
    source = node.input_shape(0)
    axis = node.axis(node.attribute("axis", 0), len(source))
    sizes = _split_sizes(node, source[axis], len(node.proto.output))
    x = node.input(0)
    results: list[SSAValue] = []
    offset = 0
    for size in sizes:
        starts, ends = [0] * len(source), list(source)
        starts[axis], ends[axis] = offset, offset + size
        results.append(node.builder.slice(x, starts, ends, [1] * len(source)))
        offset += size
    return results
