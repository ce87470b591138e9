"""ONNX's MaxPool and AveragePool: the graph pools where they fit, decompositions elsewhere.

    1-D and 2-D, no dilation   graph.max_pool2d / avg_pool2d (1-D through a height of 1)
    3-D, no dilation           two 2-D pools: (N, C, D1, D2, D3) is reshaped to (N, C·D1, D2, D3)
                               and pooled over (D2, D3), the result reshaped to (N, C, D1, O2·O3)
                               and pooled with kernel (k1, 1) over D1, then reshaped back
    dilations, more than 3     strided slices (below)
      spatial axes, padding
      the 2-D pools refuse
    MaxPool's Indices          strided slices with a running argmax (below)

Window geometry is ONNX's (`PoolAxis`): `auto_pad` becomes explicit pads (SAME_UPPER puts the odd
pad at the end, SAME_LOWER at the start, VALID pads nothing); with `ceil_mode` the output has one
more window where the division rounds up, unless that window would start past the input and its
beginning padding (the rule of ONNX's shape inference and PyTorch). The padding added for ceil
mode's extra window never counts in an average; `count_include_pad` counts the declared padding.

**Strided slices.** Max and sum over a box are separable, so the spatial axes are reduced one at a
time, the last first. Along an axis the input is padded with the reduction's identity (−inf for
max, 0 for sum) by `graph.concat` with a broadcast constant, and kernel offset j contributes the
strided slice `padded[j·dilation : j·dilation + (outputs − 1)·stride + 1 : stride]`; the slices are
combined with `graph.max` or `graph.add`. A box costs Σ kernel slices rather than Π kernel. An
average divides the sum by the number of elements each window counts: a constant computed with
numpy at import time (the outer product of the per-axis counts), as it depends only on shapes and
attributes.

**Indices.** Along each axis (the last first) a running maximum and its index visit the kernel
offsets in order and take an offset's value only where it is strictly greater than the running
maximum (`graph.cmp gt`, `graph.where`), or where the offset is the first inside the input: the
first maximum in kernel order wins, as in onnx's reference. Reducing the innermost axis first makes
that order row-major over the whole window. Whether an offset is inside the input or the first one
inside depends only on the output position: both are constant masks. An index is
Σ coefficient_a · position_a, whose row-major coefficients number the spatial positions
(`storage_order` 1: column-major), plus (n·C + c) · (spatial size), as onnx's reference numbers
them; the per-axis terms are constants added to the slices of the index carried so far.

Limits: a window holding only padding (possible with pads of a kernel's size or dilations) is an
error. NaN: the graph pools and `graph.max` propagate NaN, where onnx's reference skips it; with
Indices, a NaN is kept only where it is the first element along an axis.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import i1, i64
from xdsl.ir import SSAValue

from mlc.frontend.graph_builder import GraphBuilder, element_type_of, shape_of
from mlc.frontend.onnx.neural import read_window
from mlc.frontend.onnx.node import Node
from mlc.frontend.onnx.registry import HandlerResult, maps

# -- window geometry -----------------------------------------------------------------------------


@dataclass(frozen=True)
class PoolAxis:
    """The windows of a pool along one spatial axis."""

    size: int
    """The input's extent."""
    kernel: int
    stride: int
    dilation: int
    begin: int
    """Declared padding at the start (after auto_pad)."""
    end: int
    """Declared padding at the end (after auto_pad), without ceil mode's extension."""
    outputs: int
    """The number of windows."""

    @property
    def span(self) -> int:
        """The extent of one window, dilation included."""
        return (self.kernel - 1) * self.dilation + 1

    def positions(self) -> np.ndarray:
        """(outputs, kernel): the input position of each window's elements (padding is < 0 or
        >= size)."""
        starts = np.arange(self.outputs) * self.stride - self.begin
        return starts[:, None] + np.arange(self.kernel)[None, :] * self.dilation

    def inside(self) -> np.ndarray:
        """(outputs, kernel): which window elements are inside the input."""
        positions = self.positions()
        return (positions >= 0) & (positions < self.size)

    def counts(self, include_padding: bool) -> np.ndarray:
        """(outputs,): the elements each window averages (the declared padding with
        `include_padding`, never ceil mode's extension)."""
        positions = self.positions()
        low, high = (-self.begin, self.size + self.end) if include_padding else (0, self.size)
        return ((positions >= low) & (positions < high)).sum(axis=1)

    @property
    def padded_end(self) -> int:
        """The padding the windows reach past the input's end (ceil mode's extension included)."""
        return max(0, (self.outputs - 1) * self.stride + self.span - self.begin - self.size)

    @property
    def is_identity(self) -> bool:
        """Whether every window is one input element, in order."""
        return self.kernel == 1 and self.stride == 1 and self.begin == 0 and self.outputs == self.size

    def fits_graph_pool(self) -> bool:
        """Whether a graph pool computes these windows: no dilation, and pads smaller than the
        kernel (the graph pools' rule, so that no window is only padding)."""
        return self.dilation == 1 and self.begin < self.kernel and max(self.end, self.padded_end) < self.kernel


def _output_count(node: Node, size: int, kernel: int, stride: int, dilation: int, begin: int, end: int) -> int:
    """The number of windows along an axis, with ONNX's ceil mode rule (see the module docstring)."""
    extent = size + begin + end - ((kernel - 1) * dilation + 1)
    if extent < 0:
        raise node.error(f"the window spans more than the padded input ({size} + {begin} + {end} elements)")
    if not node.flag("ceil_mode", 0):
        return extent // stride + 1
    count = -(-extent // stride) + 1
    # The last window must start inside the input or its beginning padding.
    return count - 1 if (count - 1) * stride >= size + begin else count


def pool_axes(node: Node, x_shape: Sequence[int]) -> list[PoolAxis]:
    """The windows along each spatial axis of an (N, C, spatial...) input; rejects windows that
    hold only padding."""
    if len(x_shape) < 3:
        raise node.error(f"the input must have rank 3 or more (N, C and spatial axes), not {len(x_shape)}")
    spatial = x_shape[2:]
    kernel = node.attribute("kernel_shape")
    if kernel is None or len(kernel) != len(spatial):
        raise node.error(f"kernel_shape {kernel} must have {len(spatial)} entries")
    window = read_window(node, spatial, kernel)
    if min(*kernel, *window.strides, *window.dilations) < 1 or min(window.pads) < 0:
        raise node.error(
            f"kernel_shape {list(kernel)}, strides {window.strides} and dilations {window.dilations} must be "
            f"positive and pads {window.pads} not negative"
        )
    rank = len(spatial)
    axes = []
    for axis, size in enumerate(spatial):
        geometry = (size, kernel[axis], window.strides[axis], window.dilations[axis])
        begin, end = window.pads[axis], window.pads[rank + axis]
        axes.append(PoolAxis(*geometry, begin, end, _output_count(node, *geometry, begin, end)))
    for axis, pool_axis in enumerate(axes):
        if not pool_axis.inside().any(axis=1).all():
            raise node.error(f"a window along spatial axis {axis} holds only padding, which is not supported")
    return axes


# -- the graph pools -----------------------------------------------------------------------------


def _graph_pool(builder: GraphBuilder, kind: str, x: SSAValue, height: PoolAxis, width: PoolAxis) -> SSAValue:
    """`graph.{kind}_pool2d` over the last two axes of NCHW `x`."""
    pads = [height.begin, width.begin, max(height.end, height.padded_end), max(width.end, width.padded_end)]
    return builder.pool2d(kind, x, [height.kernel, width.kernel], [height.stride, width.stride], pads)


def _unit_axis(size: int) -> PoolAxis:
    """An axis the pool leaves alone."""
    return PoolAxis(size, 1, 1, 1, 0, 0, size)


def graph_pools(builder: GraphBuilder, kind: str, x: SSAValue, axes: Sequence[PoolAxis]) -> SSAValue:
    """The pool of 1, 2 or 3 spatial axes that fit the graph pools, through reshapes (see the
    module docstring). Averages exclude all padding."""
    shape = shape_of(x)
    batch, channels = shape[:2]
    if len(axes) == 1:
        lifted = builder.reshape(x, (batch, channels, 1, shape[2]))
        pooled = _graph_pool(builder, kind, lifted, _unit_axis(1), axes[0])
        return builder.reshape(pooled, (batch, channels, axes[0].outputs))
    if len(axes) == 2:
        return _graph_pool(builder, kind, x, *axes)
    depth, height, width = axes
    planes = builder.reshape(x, (batch, channels * depth.size, height.size, width.size))
    pooled = _graph_pool(builder, kind, planes, height, width)
    columns = builder.reshape(pooled, (batch, channels, depth.size, height.outputs * width.outputs))
    pooled = _graph_pool(builder, kind, columns, depth, _unit_axis(height.outputs * width.outputs))
    return builder.reshape(pooled, (batch, channels, depth.outputs, height.outputs, width.outputs))


def fits_graph_pools(axes: Sequence[PoolAxis]) -> bool:
    return len(axes) <= 3 and all(axis.fits_graph_pool() for axis in axes)


# -- strided slices ------------------------------------------------------------------------------


def _along(axis: int, rank: int, values: np.ndarray) -> np.ndarray:
    """`values` (1-D) laid along `axis` of a tensor of `rank`, size 1 elsewhere (it broadcasts)."""
    shape = [1] * rank
    shape[axis] = len(values)
    return values.reshape(shape)


def _pad(builder: GraphBuilder, x: SSAValue, axis: int, before: int, after: int, fill: float) -> SSAValue:
    """`x` with `before` and `after` elements of `fill` around `axis` (graph.concat)."""
    if not before and not after:
        return x
    shape = shape_of(x)
    splat = builder.constant(np.full((1,) * len(shape), fill), element_type_of(x))

    def filler(length: int) -> SSAValue:
        return builder.broadcast(splat, (*shape[:axis], length, *shape[axis + 1 :]))

    parts = [*([filler(before)] if before else []), x, *([filler(after)] if after else [])]
    return builder.concat(parts, axis)


def _offset_slice(
    builder: GraphBuilder, padded: SSAValue, axis: int, pool_axis: PoolAxis, offset: int
) -> SSAValue:
    """Kernel offset `offset` of every window along `axis` of the input padded by `begin`."""
    shape = shape_of(padded)
    starts, ends, steps = [0] * len(shape), list(shape), [1] * len(shape)
    starts[axis] = offset * pool_axis.dilation
    ends[axis] = starts[axis] + (pool_axis.outputs - 1) * pool_axis.stride + 1
    steps[axis] = pool_axis.stride
    return builder.slice(padded, starts, ends, steps)


def sliding_reduction(builder: GraphBuilder, kind: str, x: SSAValue, axes: Sequence[PoolAxis]) -> SSAValue:
    """The max (kind `max`) or sum (`sum`) over every window, padding excluded, by strided slices
    (see the module docstring)."""
    fill, combine = (-np.inf, "graph.max") if kind == "max" else (0.0, "graph.add")
    result = x
    for spatial_axis in reversed(range(len(axes))):
        pool_axis, axis = axes[spatial_axis], 2 + spatial_axis
        if pool_axis.is_identity:
            continue
        padded = _pad(builder, result, axis, pool_axis.begin, pool_axis.padded_end, fill)
        result = _offset_slice(builder, padded, axis, pool_axis, 0)
        for offset in range(1, pool_axis.kernel):
            result = builder.binary(combine, result, _offset_slice(builder, padded, axis, pool_axis, offset))
    return result


def window_counts(axes: Sequence[PoolAxis], include_padding: bool) -> np.ndarray:
    """The number of elements each window averages, over the spatial output shape."""
    counts = np.ones(())
    for pool_axis in axes:
        counts = np.multiply.outer(counts, pool_axis.counts(include_padding))
    return counts


# -- MaxPool's Indices ---------------------------------------------------------------------------


def _index_coefficients(spatial: Sequence[int], storage_order: int) -> list[int]:
    """What one step along each spatial axis adds to a flat index (row- or column-major)."""
    if storage_order == 0:
        return [math.prod(spatial[axis + 1 :]) for axis in range(len(spatial))]
    return [math.prod(spatial[:axis]) for axis in range(len(spatial))]


def _take_condition(
    builder: GraphBuilder, greater: SSAValue, first_inside: np.ndarray, later_inside: np.ndarray, axis: int
) -> SSAValue:
    """Where an offset replaces the running maximum: where it is the first inside the input, or
    inside and strictly greater (`greater`). The masks are per output position along `axis`."""
    rank = len(shape_of(greater))

    def mask(values: np.ndarray) -> SSAValue:
        return builder.constant(_along(axis, rank, values), i1)

    if not later_inside.any():
        return mask(first_inside)
    condition = greater
    if not later_inside.all():
        condition = builder.where(mask(later_inside), condition, builder.scalar(False, i1))
    if first_inside.any():
        condition = builder.where(mask(first_inside), builder.scalar(True, i1), condition)
    return condition


def _argmax_along(
    builder: GraphBuilder,
    values: SSAValue,
    indices: SSAValue | None,
    axis: int,
    pool_axis: PoolAxis,
    coefficient: int,
) -> tuple[SSAValue, SSAValue]:
    """The maximum over the windows along `axis` and its flat index (`indices` carries the index
    terms of the axes reduced so far; None before the first)."""
    rank = len(shape_of(values))
    padded_values = _pad(builder, values, axis, pool_axis.begin, pool_axis.padded_end, -np.inf)
    padded_indices = None
    if indices is not None:
        padded_indices = _pad(builder, indices, axis, pool_axis.begin, pool_axis.padded_end, 0)
    inside = pool_axis.inside()
    # Padding positions are clipped only to keep the index terms in range: they are never taken.
    terms = coefficient * np.clip(pool_axis.positions(), 0, pool_axis.size - 1)
    best_value: SSAValue | None = None
    best_index: SSAValue | None = None
    for offset in range(pool_axis.kernel):
        if offset > 0 and not inside[:, offset].any():
            continue
        value = _offset_slice(builder, padded_values, axis, pool_axis, offset)
        index = builder.constant(_along(axis, rank, terms[:, offset]), i64)
        if padded_indices is not None:
            carried = _offset_slice(builder, padded_indices, axis, pool_axis, offset)
            index = builder.binary("graph.add", carried, index)
        if best_value is None or best_index is None:
            best_value, best_index = value, index
            continue
        seen = inside[:, :offset].any(axis=1)
        first_inside, later_inside = inside[:, offset] & ~seen, inside[:, offset] & seen
        greater = builder.compare("gt", value, best_value)
        take = _take_condition(builder, greater, first_inside, later_inside, axis)
        best_value = builder.where(take, value, best_value)
        best_index = builder.where(take, index, best_index)
    assert best_value is not None and best_index is not None  # offset 0 is always visited
    if shape_of(best_index) != shape_of(best_value):
        # A kernel of 1 leaves the index a constant along the other axes, which the next axis slices.
        best_index = builder.broadcast(best_index, shape_of(best_value))
    return best_value, best_index


def max_pool_with_indices(
    builder: GraphBuilder, x: SSAValue, axes: Sequence[PoolAxis], storage_order: int
) -> tuple[SSAValue, SSAValue]:
    """MaxPool's values and Indices (int64 flat indices into the input, see the module docstring)."""
    shape = shape_of(x)
    spatial = shape[2:]
    coefficients = _index_coefficients(spatial, storage_order)
    values, indices = x, None
    for spatial_axis in reversed(range(len(axes))):
        values, indices = _argmax_along(
            builder, values, indices, 2 + spatial_axis, axes[spatial_axis], coefficients[spatial_axis]
        )
    assert indices is not None  # there is at least one spatial axis
    planes = np.arange(shape[0] * shape[1]).reshape(shape[0], shape[1], *([1] * len(spatial))) * math.prod(spatial)
    indices = builder.binary("graph.add", indices, builder.constant(planes, i64))
    return values, indices


# -- the handlers --------------------------------------------------------------------------------


@maps("MaxPool", (1, 8, 10, 11, 12, 22))
def max_pool(node: Node) -> HandlerResult:
    axes = pool_axes(node, node.input_shape(0))
    x = node.input(0)
    if node.output_used(1):
        storage_order = node.attribute("storage_order", 0)
        if storage_order not in (0, 1):
            raise node.reject_attribute("storage_order", storage_order, "ONNX defines 0 (row-major) and 1")
        values, indices = max_pool_with_indices(node.builder, x, axes, storage_order)
        return [values, indices]
    if fits_graph_pools(axes):
        return [graph_pools(node.builder, "max", x, axes), None]
    return [sliding_reduction(node.builder, "max", x, axes), None]


@maps("AveragePool", (1, 7, 10, 11, 19, 22))
def average_pool(node: Node) -> HandlerResult:
    axes = pool_axes(node, node.input_shape(0))
    include_padding = node.flag("count_include_pad", 0)
    builder, x = node.builder, node.input(0)
    element_type = element_type_of(x)
    if not fits_graph_pools(axes):
        total = sliding_reduction(builder, "sum", x, axes)
        counts = builder.constant(window_counts(axes, include_padding), element_type)
        return [builder.binary("graph.div", total, counts)]
    result = graph_pools(builder, "avg", x, axes)
    if not include_padding or not any(axis.begin or axis.end for axis in axes):
        return [result]
    # The graph pools divide by the elements inside the input; ONNX with count_include_pad by
    # those inside the input and its declared padding: rescale by the ratio.
    ratio = window_counts(axes, False) / window_counts(axes, True)
    return [builder.binary("graph.mul", result, builder.constant(ratio, element_type))]
