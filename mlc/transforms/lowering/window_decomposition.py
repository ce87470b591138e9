"""The rewrites of graph-decompose for windowed ops: pools as strided slices, conv2d as a GEMM.

Both start from the padded input: `graph.concat` of the input with broadcast splat constants
along the padded axes (the pool's identity, zero for a convolution). Kernel offset (i, j) of a
window with strides (sh, sw) and dilations (dh, dw) sees the strided slice

    padded[..., i·dh : i·dh + (OH − 1)·sh + 1 : sh, j·dw : j·dw + (OW − 1)·sw + 1 : sw]

of the output's spatial shape. All of these are layout ops over the input, so the kernel that
consumes them reads the input through composed index maps (`analysis/layout_maps.py`): no padded
copy and no slice is materialised.

**Pools.** `max_pool2d` is the `graph.max` of the slices; `avg_pool2d` the `graph.add` of the
slices (in f32 for f16 inputs: the interpreter accumulates there) divided by the number of
input elements each window covers, a constant computed here from the shapes (padding is not
counted). A window of at most `SINGLE_PASS_WINDOW` elements is one kernel (each output reads its
whole window); a larger one is reduced along the width first, then along the height (two
kernels, kh + kw reads per output instead of kh·kw).

**conv2d, stride 1** (one group, input channels a multiple of `IMPLICIT_GEMM_CHANNELS`) is an
implicit GEMM over shifted rows: x goes NHWC and is padded to (N, Hp, Wp, C) (one layout kernel: a
4-D transpose and the padding, on the GPU a windowed shared-memory transpose, `transpose_kernel.py`),
viewed as P = (N·Hp·Wp, C) rows of pixels. Output pixel (n, oh, ow), computed at row
r = n·Hp·Wp + oh·Wp + ow of the padded grid, sees through kernel offset (kh, kw) the pixel at row
r + s with s = kh·dh·Wp + kw·dw. So the column matrix is, side by side along K, the kh·kw slices
of P (continued by s_max zero rows) starting s rows down, multiplied by the weights as
(kh·kw·C, O): graph-fuse puts those slices into the matmul's kernel, which reads P at shifted
origins (`analysis/operand_maps.py`), so the column matrix is never materialised. The product,
on the padded grid (Hp·Wp / (OH·OW) more rows: 7% for a 56² layer with padding 1), is sliced to
the output pixels and transposed back to NCHW, where the bias and any elementwise consumer are
added. Without a bias or an elementwise consumer that slice and transpose are one layout kernel on
the CPU; on the GPU the matmul's kernel stores its product through them (graph-fuse{store-layouts},
a `tile.scatter` straight into NCHW: no layout kernel after the GEMM); with them, a product of more than `DIRECT_LAYOUT_ELEMENTS`
elements is first transposed by a coalesced shared-memory kernel of its own (N, Hp·Wp, O) ->
(N, O, Hp·Wp), and the epilogue reads its rows (two kernels), a smaller one is read through the
slice and the transpose by the epilogue (one kernel). An NHWC graph (transposes around the
convolution) reads its input and writes its result through the composed transposes in those two
layout kernels (block copies).

**conv2d, otherwise** is an explicit im2col followed by the tile-level matmul (so it inherits the
matmul kernel's tiling and tensor cores). With G groups of Cg = C/G channels and Og = O/G
outputs, x is viewed as (N, G, Cg, 1, H, W), padded, its kh·kw slices concatenated along the
size-1 axis and transposed to (G, N, OH, OW, Cg, kh·kw): one gather kernel writes this column
matrix, viewed as (G, N·OH·OW, Cg·kh·kw) (one matrix without groups). The weights, viewed as
(G, Og, Cg·kh·kw), are transposed and multiplied. The product, viewed as (N, OH, OW, O), or
(G, N, OH, OW, Og) with groups, is transposed back to NCHW, where the bias is added: that
transpose, the bias and any elementwise consumer are one kernel.

An f16 (bf16) convolution with a bias is computed in f32 (columns, weights and bias widened in the
kernels that read them) and rounded once at the end, as the interpreter does: the f16 matmul
kernel would round its product before the bias is added. Without a bias (a ResNet convolution
before its batch norm) the product is the result, which the f16 matmul kernel accumulates in f32
and rounds once: the columns and weights stay f16 (half the bytes of the column matrix) and the
product runs on the matmul's f16 path (tensor cores on the GPU).

Limits: strided and grouped convolutions materialise their column matrix (kh·kw / (sh·sw) times
the input), and so does a stride-1 one with few channels (the first layer of a CNN); the implicit
GEMM computes the padded grid's extra pixels; depthwise convolutions go through the im2col path
(a batch of G products of Og columns, not a direct kernel).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, TensorType, f32
from xdsl.ir import Attribute, Operation, SSAValue

from mlc.dialects.element_types import is_float
from mlc.dialects.graph import ops as graph
from mlc.dialects.graph.constants import numpy_to_dense

SINGLE_PASS_WINDOW = 16
"""The largest pool window (elements) reduced in one kernel; larger ones are reduced separably."""
NHWC_FROM_NCHW, NCHW_FROM_NHWC = (0, 2, 3, 1), (0, 3, 1, 2)
IMPLICIT_GEMM_CHANNELS = 8
"""Input channels must be a multiple of this for the implicit GEMM: a K step of the matmul stays
inside one kernel offset, and a row of 8 f16 channels is one 16-byte async copy."""

DIRECT_LAYOUT_ELEMENTS = 1 << 20
"""An implicit GEMM's NCHW product of at most this many elements with an epilogue (a bias, an
elementwise consumer) is transposed by the epilogue's kernel, reading through the index map, rather
than by a coalesced shared-memory transpose kernel of its own: at these sizes (4 MiB of f32 at most,
well inside the GPU's L2 cache) a kernel launch and a round trip through memory cost more than
strided reads (a small CNN at batch 1 to 8)."""

FUSED_CONSUMERS = (*graph.ELEMENTWISE_OPS, graph.BroadcastOp, graph.ReshapeOp)
"""Consumers that join the kernel of a convolution's last layout op (its epilogue)."""

Insert = Callable[[Operation], SSAValue]


def _shape(value: SSAValue) -> tuple[int, ...]:
    value_type = value.type
    assert isinstance(value_type, TensorType)
    return value_type.get_shape()


def _element_type(value: SSAValue) -> Attribute:
    value_type = value.type
    assert isinstance(value_type, TensorType)
    return value_type.element_type


def _scalar(insert: Insert, value: float, element_type: Attribute) -> SSAValue:
    constant_type = TensorType(element_type, [])
    return insert(graph.ConstantOp(DenseIntOrFPElementsAttr.from_list(constant_type, [value])))


def _reshape(insert: Insert, x: SSAValue, shape: Sequence[int]) -> SSAValue:
    if _shape(x) == tuple(shape):
        return x
    return insert(graph.ReshapeOp(x, TensorType(_element_type(x), shape)))


def pad(insert: Insert, x: SSAValue, pads: dict[int, tuple[int, int]], value: float) -> SSAValue:
    """`x` with `pads[axis] = (before, after)` elements of `value` around each axis."""
    element_type = _element_type(x)
    for axis, (before, after) in pads.items():
        if not before and not after:
            continue
        pieces = []
        for count, is_input in ((before, False), (-1, True), (after, False)):
            if is_input:
                pieces.append(x)
            elif count:
                shape = list(_shape(x))
                shape[axis] = count
                filler = _scalar(insert, value, element_type)
                pieces.append(insert(graph.BroadcastOp(filler, TensorType(element_type, shape))))
        x = insert(graph.ConcatOp(pieces, axis=axis))
    return x


def window_slices(
    insert: Insert, padded: SSAValue, axes: Sequence[int], kernel: Sequence[int], strides: Sequence[int],
    dilations: Sequence[int], outputs: Sequence[int],
) -> list[SSAValue]:
    """The strided slice of `padded` seen by each kernel offset (row-major over the offsets)."""
    shape = _shape(padded)
    slices = []
    for offsets in np.ndindex(*kernel):
        starts, ends, steps = [0] * len(shape), list(shape), [1] * len(shape)
        for axis, offset, stride, dilation, count in zip(axes, offsets, strides, dilations, outputs):
            starts[axis] = int(offset) * dilation
            ends[axis] = starts[axis] + (count - 1) * stride + 1
            steps[axis] = stride
        if starts == [0] * len(shape) and ends == list(shape) and steps == [1] * len(shape):
            slices.append(padded)
        else:
            slices.append(insert(graph.SliceOp(padded, starts=starts, ends=ends, steps=steps)))
    return slices


def _window_counts(sizes: Sequence[int], kernel: Sequence[int], strides: Sequence[int], pads: Sequence[int], outputs: Sequence[int]) -> np.ndarray:
    """How many input elements each window covers (padding excluded), as an (OH, OW) array."""
    per_axis = []
    for axis in range(2):
        begins = np.arange(outputs[axis]) * strides[axis] - pads[axis]
        ends = begins + kernel[axis]
        per_axis.append(np.minimum(ends, sizes[axis]) - np.maximum(begins, 0))
    return np.outer(per_axis[0], per_axis[1])


def _pool_pass(insert: Insert, x: SSAValue, op: graph.Pool2dOp, axes: Sequence[int], identity: float) -> SSAValue:
    """Combines the windows of `op` along `axes` (2 and/or 3) of x."""
    kernel, strides, pads = op.kernel.get_values(), op.strides.get_values(), op.pads.get_values()
    outputs = _shape(op.result)
    padded = pad(insert, x, {axis: (pads[axis - 2], pads[axis]) for axis in axes}, identity)
    slices = window_slices(
        insert, padded, axes, [kernel[a - 2] for a in axes], [strides[a - 2] for a in axes], [1] * len(axes), [outputs[a] for a in axes]
    )
    averaging = isinstance(op, graph.AvgPool2dOp)
    if averaging and _element_type(x) != f32 and is_float(_element_type(x)):
        slices = [insert(graph.CastOp(s, TensorType(f32, _shape(s)))) for s in slices]
    result = slices[0]
    for term in slices[1:]:
        result = insert(graph.AddOp(result, term) if averaging else graph.MaxOp(result, term))
    return result


def decompose_pool(op: graph.Pool2dOp, insert: Insert) -> SSAValue:
    kernel = op.kernel.get_values()
    averaging = isinstance(op, graph.AvgPool2dOp)
    identity = 0.0 if averaging else -math.inf
    x = op.x
    if math.prod(kernel) <= SINGLE_PASS_WINDOW:
        result = _pool_pass(insert, x, op, (2, 3), identity)
    else:
        result = _pool_pass(insert, _pool_pass(insert, x, op, (3,), identity), op, (2,), identity)
    if not averaging:
        return result
    outputs = _shape(op.result)
    counts = _window_counts(_shape(x)[2:], kernel, op.strides.get_values(), op.pads.get_values(), outputs[2:])
    counts_type = TensorType(_element_type(result), (1, 1, *outputs[2:]))
    divisor = insert(graph.ConstantOp(numpy_to_dense(counts.reshape(counts_type.get_shape()).astype(np.float32), counts_type)))
    result = insert(graph.DivOp(result, divisor))
    if _element_type(result) != _element_type(op.result):
        result = insert(graph.CastOp(result, op.result.type))
    return result


def shifted_rows_apply(op: graph.Conv2dOp) -> bool:
    """Whether `op` decomposes as an implicit GEMM over shifted rows (see the module docstring)."""
    channels = _shape(op.x)[1]
    return (
        op.group.value.data == 1
        and tuple(op.strides.get_values()) == (1, 1)
        and channels % IMPLICIT_GEMM_CHANNELS == 0
        and math.prod(_shape(op.result)) > 0
    )


def _decompose_shifted_rows(op: graph.Conv2dOp, insert: Insert, direct_layout_elements: int) -> SSAValue:
    """The implicit GEMM: one matmul over row-shifted views of the padded NHWC input."""
    batch, channels = _shape(op.x)[:2]
    outputs, _, kernel_height, kernel_width = _shape(op.w)
    _, _, out_height, out_width = _shape(op.result)
    pads, dilations = op.pads.get_values(), op.dilations.get_values()
    widen: Callable[[Insert, SSAValue], SSAValue] = _widened if op.bias is not None else lambda _, x: x
    # NHWC and padded by one layout kernel: an NHWC input's transposes compose to a block copy; an
    # NCHW one is the GPU's windowed shared-memory transpose (`transpose_kernel.py`).
    x = insert(graph.TransposeOp(widen(insert, op.x), perm=NHWC_FROM_NCHW))
    padded = pad(insert, x, {1: (pads[0], pads[2]), 2: (pads[1], pads[3])}, 0.0)
    padded_height, padded_width = _shape(padded)[1:3]
    pixels = batch * padded_height * padded_width
    flat = _reshape(insert, padded, (pixels, channels))
    shifts = [kh * dilations[0] * padded_width + kw * dilations[1] for kh in range(kernel_height) for kw in range(kernel_width)]
    rows = pad(insert, flat, {0: (0, shifts[-1])}, 0.0)
    pieces = [
        rows if rows is flat else insert(graph.SliceOp(rows, starts=[shift, 0], ends=[shift + pixels, channels], steps=[1, 1]))
        for shift in shifts
    ]
    matrix = pieces[0] if len(pieces) == 1 else insert(graph.ConcatOp(pieces, axis=1))
    weights = insert(graph.TransposeOp(widen(insert, op.w), perm=(2, 3, 1, 0)))
    weights = _reshape(insert, weights, (len(shifts) * channels, outputs))
    product = insert(graph.MatmulOp(matrix, weights))
    window = [0, 0, 0, 0], [batch, out_height, out_width, outputs]
    consumers = [use.operation for use in op.result.uses]
    nhwc_consumers = consumers and all(isinstance(c, graph.TransposeOp) and _transposed_from(c.result, NHWC_FROM_NCHW) for c in consumers)
    layout_only = op.bias is None and not any(isinstance(c, FUSED_CONSUMERS) for c in consumers)
    if nhwc_consumers or layout_only or math.prod(_shape(product)) <= direct_layout_elements:
        # NHWC consumers: the slice and the transposes compose into one read of the product. A
        # layout-only chain (no bias, no elementwise consumer) is the GPU GEMM's scattered store
        # (CPU: one layout kernel); a small product is read through the slice and transpose by the
        # epilogue kernel.
        product = _reshape(insert, product, (batch, padded_height, padded_width, outputs))
        product = insert(graph.SliceOp(product, starts=window[0], ends=window[1], steps=[1, 1, 1, 1]))
        result = insert(graph.TransposeOp(product, perm=(0, 3, 1, 2)))
    else:  # NCHW with an epilogue: a shared-memory transpose of each image's grid, then the slice and the epilogue
        product = insert(graph.TransposeOp(_reshape(insert, product, (batch, padded_height * padded_width, outputs)), perm=(0, 2, 1)))
        product = _reshape(insert, product, (batch, outputs, padded_height, padded_width))
        order = (0, 3, 1, 2)
        starts, ends = [window[0][a] for a in order], [window[1][a] for a in order]
        result = product if ends == list(_shape(product)) else insert(graph.SliceOp(product, starts=starts, ends=ends, steps=[1, 1, 1, 1]))
    if op.bias is not None:
        result = insert(graph.AddOp(result, _widened(insert, _reshape(insert, op.bias, (outputs, 1, 1)))))
    if _element_type(result) != _element_type(op.result):
        result = insert(graph.CastOp(result, op.result.type))
    return result


def is_depthwise(op: graph.Conv2dOp) -> bool:
    """One input channel per group (each output channel reads one input channel)."""
    return _shape(op.w)[1] == 1 and op.group.value.data == _shape(op.x)[1] and math.prod(_shape(op.result)) > 0


def _decompose_depthwise(op: graph.Conv2dOp, insert: Insert) -> SSAValue:
    """The direct depthwise convolution: per kernel offset, the window's slice times that
    offset's weight per channel, summed (in f32 for narrower floats), one elementwise kernel."""
    batch, channels, height, width = _shape(op.x)
    outputs, _, kernel_height, kernel_width = _shape(op.w)
    _, _, out_height, out_width = _shape(op.result)
    multiplier = outputs // channels
    pads = op.pads.get_values()
    element_type = _element_type(op.x)
    wide = f32 if is_float(element_type) and element_type != f32 else element_type
    # Channels as (C, multiplier) when each has several outputs (a reshape at the kernel's exit),
    # else NCHW as it is, so that elementwise consumers join the kernel.
    grouping = (channels, multiplier) if multiplier > 1 else (channels,)
    axes = (len(grouping) + 1, len(grouping) + 2)
    x = _reshape(insert, op.x, (batch, *grouping[:1], *(1,) * (len(grouping) - 1), height, width))
    padded = pad(insert, x, {axes[0]: (pads[0], pads[2]), axes[1]: (pads[1], pads[3])}, 0.0)
    slices = window_slices(
        insert, padded, axes, (kernel_height, kernel_width), op.strides.get_values(), op.dilations.get_values(), (out_height, out_width)
    )
    weights = _reshape(insert, op.w, (1, *grouping, kernel_height, kernel_width))
    result: SSAValue | None = None
    for (kh, kw), window in zip(np.ndindex(kernel_height, kernel_width), slices):
        starts, ends = [0, *(0 for _ in grouping), kh, kw], [1, *grouping, kh + 1, kw + 1]
        tap = insert(graph.SliceOp(weights, starts=starts, ends=ends, steps=[1] * len(starts)))
        if wide != element_type:
            window = insert(graph.CastOp(window, TensorType(wide, _shape(window))))
            tap = insert(graph.CastOp(tap, TensorType(wide, _shape(tap))))
        term = insert(graph.MulOp(window, tap))
        result = term if result is None else insert(graph.AddOp(result, term))
    assert result is not None
    if op.bias is not None:
        bias = _reshape(insert, op.bias, (1, *grouping, 1, 1))
        if wide != element_type:
            bias = insert(graph.CastOp(bias, TensorType(wide, _shape(bias))))
        result = insert(graph.AddOp(result, bias))
    if wide != element_type:
        result = insert(graph.CastOp(result, TensorType(element_type, _shape(result))))
    return _reshape(insert, result, _shape(op.result))


def decompose_conv2d(op: graph.Conv2dOp, insert: Insert, direct_layout_elements: int = DIRECT_LAYOUT_ELEMENTS) -> SSAValue:
    if is_depthwise(op):
        return _decompose_depthwise(op, insert)
    if shifted_rows_apply(op):
        return _decompose_shifted_rows(op, insert, direct_layout_elements)
    batch, _, height, width = _shape(op.x)
    outputs, group_channels, kernel_height, kernel_width = _shape(op.w)
    _, _, out_height, out_width = _shape(op.result)
    groups = op.group.value.data
    group_outputs = outputs // groups
    window = kernel_height * kernel_width
    pads, strides, dilations = op.pads.get_values(), op.strides.get_values(), op.dilations.get_values()
    x = _reshape(insert, op.x, (batch, groups, group_channels, 1, height, width))
    padded = pad(insert, x, {4: (pads[0], pads[2]), 5: (pads[1], pads[3])}, 0.0)
    slices = window_slices(
        insert, padded, (4, 5), (kernel_height, kernel_width), strides, dilations, (out_height, out_width)
    )
    columns = slices[0] if len(slices) == 1 else insert(graph.ConcatOp(slices, axis=3))
    # With a bias the f16 product is widened to be rounded once, after the bias (module docstring).
    widen: Callable[[Insert, SSAValue], SSAValue] = _widened if op.bias is not None else lambda _, x: x
    columns = widen(insert, insert(graph.TransposeOp(columns, perm=(1, 0, 4, 5, 2, 3))))
    depth, rows = group_channels * window, batch * out_height * out_width
    weights = widen(insert, _reshape(insert, op.w, (groups, group_outputs, depth)))
    if groups == 1:
        matrix = _reshape(insert, columns, (rows, depth))
        weights = insert(graph.TransposeOp(_reshape(insert, weights, (outputs, depth)), perm=(1, 0)))
        product = _reshape(insert, insert(graph.MatmulOp(matrix, weights)), (batch, out_height, out_width, outputs))
        result = insert(graph.TransposeOp(product, perm=(0, 3, 1, 2)))
        bias_shape: tuple[int, ...] = (outputs, 1, 1)
    else:
        matrix = _reshape(insert, columns, (groups, rows, depth))
        weights = insert(graph.TransposeOp(weights, perm=(0, 2, 1)))
        product = insert(graph.MatmulOp(matrix, weights))
        product = _reshape(insert, product, (groups, batch, out_height, out_width, group_outputs))
        result = insert(graph.TransposeOp(product, perm=(1, 0, 4, 2, 3)))
        bias_shape = (groups, group_outputs, 1, 1)
    if op.bias is not None:
        result = insert(graph.AddOp(result, _widened(insert, _reshape(insert, op.bias, bias_shape))))
    if _element_type(result) != _element_type(op.result):
        result = insert(graph.CastOp(result, TensorType(_element_type(op.result), _shape(result))))
    return _reshape(insert, result, _shape(op.result))


def _transposed_from(value: SSAValue, perm: tuple[int, ...]) -> bool:
    """Whether `value` is a `graph.transpose` with permutation `perm`."""
    owner = value.owner
    return isinstance(owner, graph.TransposeOp) and owner.normalized_perm() == perm


def _widened(insert: Insert, x: SSAValue) -> SSAValue:
    """x in f32 when it is a narrower float (a convolution rounds once, after its bias)."""
    if _element_type(x) == f32:
        return x
    return insert(graph.CastOp(x, TensorType(f32, _shape(x))))
