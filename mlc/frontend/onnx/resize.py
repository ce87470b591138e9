"""ONNX Resize (static scales or sizes) as per-axis products with constant matrices; Range of
constants.

**Resize.** Every interpolation ONNX defines (nearest, linear, cubic, with or without antialias,
every coordinate transformation) is separable and linear (up to `tf_crop_and_resize`'s
extrapolated positions, below): along each
resized axis, output position y is a fixed weighted sum of input positions. So along axis a the
resize is a product with a constant (out_a x in_a) matrix M_a, and the whole resize is one such
product per resized axis:

    y = x ×_a M_a ...      last axis: x @ M^T;  second to last: M @ x;  others: transposed there

M_a is computed at import time by onnx's own reference interpolation applied to the identity
matrix (`onnx.reference.ops.op_resize._interpolate_1d_along_axis`: its columns are the resized
unit vectors), so every mode, rounding rule and edge case is exactly the reference's; output
sizes and scales (`axes`, `keep_aspect_ratio_policy`) are computed here as the reference does.
The products run on the matmul kernel (f32 accumulation). Nearest resizing is exact for finite
data (one product by 1 plus zeros per output); an inf or NaN poisons the outputs that read its
row or column (0 * inf), as Gather's one-hot lookup does.

`tf_crop_and_resize` reads the region of interest (a constant) into each axis's matrix; its
positions outside the input are no weighted sum but `extrapolation_value`: a `graph.where` with
a constant mask of the positions outside along any axis (the reference's axis-by-axis passes give
that value there too, as the weights of a row sum to 1).

Limits: float inputs only; scales, sizes and roi must be constants. The reference's helper is
private to onnx: an onnx without it gets a clear error.

**Range** with constant start, limit and delta is `np.arange` at import time (a constant), the
number of elements being ONNX's `max(ceil((limit - start) / delta), 0)`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from types import ModuleType

import numpy as np
from xdsl.dialects.builtin import i1
from xdsl.ir import SSAValue

from mlc.dialects.element_types import is_float
from mlc.frontend.graph_builder import element_type_of, shape_of
from mlc.frontend.onnx.node import Node
from mlc.frontend.onnx.registry import HandlerResult, maps

MODES = ("nearest", "linear", "cubic")
TRANSFORMATIONS = (
    "half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_crop_and_resize"
)
NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
ASPECT_POLICIES = ("stretch", "not_larger", "not_smaller")


@maps("Range", (11,), constant_inputs=(0, 1, 2))
def range_(node: Node) -> HandlerResult:
    start, limit, delta = (node.constant(index, role) for index, role in enumerate(("start", "limit", "delta")))
    assert start is not None and limit is not None and delta is not None
    if float(delta) == 0:
        raise node.error("delta is 0 (the range would never end)")
    count = max(math.ceil((float(limit) - float(start)) / float(delta)), 0)
    # A constant made at import time, like the values the importer evaluates: under the same limit.
    node.importer.count_evaluated_elements(count, node.proto, node.index)
    values = np.asarray(start) + np.arange(count, dtype=np.asarray(start).dtype) * np.asarray(delta)
    return [values.astype(np.asarray(start).dtype)]


@maps("Resize", (10, 11, 13, 18, 19), constant_inputs=(1, 2, 3))
def resize(node: Node) -> HandlerResult:
    x = node.input(0)
    shape = shape_of(x)
    if not is_float(element_type_of(x)):
        raise node.error(f"Resize of {element_type_of(x)} is not supported (float inputs are)")
    mode = _choice(node, "mode", "nearest", MODES)
    default_transformation = "asymmetric" if node.version == 10 else "half_pixel"
    transformation = _choice(node, "coordinate_transformation_mode", default_transformation, TRANSFORMATIONS)
    axes = node.axes(node.attribute("axes", list(range(len(shape)))), len(shape))
    scales, sizes = _scales_and_sizes(node)
    factors, outputs = _output_sizes(node, shape, axes, scales, sizes)
    coefficients = _coefficients(node, mode)
    regions = _regions(node, len(shape), axes) if transformation == "tf_crop_and_resize" else None
    extrapolated = np.zeros([1] * len(shape), dtype=bool)
    for axis in axes:
        region = None if regions is None else regions[axis]
        if math.isclose(factors[axis], 1.0) and outputs[axis] == shape[axis] and region in (None, (0.0, 1.0)):
            continue  # the reference skips identity axes too
        interpolate = _axis_interpolation(node, shape[axis], factors[axis], outputs[axis], coefficients, transformation, region)
        x = _along_axis(node, x, axis, interpolate(np.eye(shape[axis]), 0.0))
        outside = interpolate(np.zeros((shape[axis], 1)), 1.0).reshape(-1) != 0
        extrapolated = extrapolated | outside.reshape([-1 if d == axis else 1 for d in range(len(shape))])
    if not extrapolated.any():
        return [x]
    # Positions outside the crop read extrapolation_value, whichever axis they are outside along.
    value = node.builder.scalar(float(node.attribute("extrapolation_value", 0.0)), element_type_of(x))
    return [node.builder.where(node.builder.constant(extrapolated, i1), value, x)]


def _regions(node: Node, rank: int, axes: list[int]) -> dict[int, tuple[float, float]]:
    """tf_crop_and_resize's region of interest per axis: (start, end) as fractions of the input."""
    roi = node.constant(1, "roi")
    values = [] if roi is None else [float(v) for v in np.asarray(roi).reshape(-1)]
    if len(values) != 2 * len(axes):
        raise node.error(f"roi has {len(values)} entries, tf_crop_and_resize needs 2 per resized axis ({2 * len(axes)})")
    return {axis: (values[index], values[len(axes) + index]) for index, axis in enumerate(axes)}


def _choice(node: Node, name: str, default: str, allowed: Sequence[str]) -> str:
    value = node.attribute(name, default)
    if value not in allowed:
        raise node.reject_attribute(name, value, f"mlc maps {', '.join(allowed)}")
    return value


def _scales_and_sizes(node: Node) -> tuple[list[float] | None, list[int] | None]:
    """The constant scales or sizes (exactly one of them given, as ONNX requires)."""
    if node.version == 10:
        scales = node.constant(1, "scales")
        return (None if scales is None else [float(s) for s in np.asarray(scales).reshape(-1)]), None
    scales = node.constant(2, "scales")
    sizes = node.constant_ints(3, "sizes")
    scale_list = None if scales is None or np.asarray(scales).size == 0 else [float(s) for s in np.asarray(scales).reshape(-1)]
    size_list = None if not sizes else sizes
    if (scale_list is None) == (size_list is None):
        raise node.error("exactly one of scales and sizes must be given (and not empty)")
    return scale_list, size_list


def _output_sizes(
    node: Node, shape: tuple[int, ...], axes: list[int], scales: list[float] | None, sizes: list[int] | None
) -> tuple[list[float], list[int]]:
    """(scale factor, output size) of every axis, as onnx's reference `_interpolate_nd` computes them."""
    given = scales if scales is not None else sizes
    assert given is not None
    if len(given) != len(axes):
        raise node.error(f"{'scales' if scales is not None else 'sizes'} has {len(given)} entries for {len(axes)} axes")
    factors, outputs = [1.0] * len(shape), list(shape)
    if scales is not None:
        for axis, scale in zip(axes, scales):
            if scale <= 0:
                raise node.error(f"scale {scale} of axis {axis} is not positive")
            factors[axis], outputs[axis] = scale, int(scale * shape[axis])
        return factors, outputs
    assert sizes is not None
    for axis, size in zip(axes, sizes):
        if size < 0 or shape[axis] == 0:
            raise node.error(f"size {size} of axis {axis} (of extent {shape[axis]}) cannot be resized to")
        factors[axis], outputs[axis] = size / shape[axis], size
    policy = _choice(node, "keep_aspect_ratio_policy", "stretch", ASPECT_POLICIES)
    if policy != "stretch":
        chosen = [factors[axis] for axis in axes]
        scale = min(chosen) if policy == "not_larger" else max(chosen)
        for axis in axes:
            factors[axis], outputs[axis] = scale, int(scale * shape[axis] + 0.5)
    return factors, outputs


def _coefficients(node: Node, mode: str) -> Callable[[float, float], np.ndarray]:
    """The reference's weights of one output position (ratio, scale) -> weights, for `mode`."""
    reference = _reference()
    antialias = node.version >= 18 and node.flag("antialias", 0)
    if mode == "nearest":
        if antialias:
            raise node.reject_attribute("antialias", 1, "ONNX defines no antialiasing for nearest")
        rounding = _choice(node, "nearest_mode", "round_prefer_floor", NEAREST_MODES)
        return lambda ratio, scale: reference._nearest_coeffs(ratio, mode=rounding)  # noqa: SLF001
    if mode == "linear":
        return reference._linear_coeffs_antialias if antialias else reference._linear_coeffs  # noqa: SLF001
    a = float(node.attribute("cubic_coeff_a", -0.75))
    cubic = reference._cubic_coeffs_antialias if antialias else reference._cubic_coeffs  # noqa: SLF001
    return lambda ratio, scale: cubic(ratio, scale, A=a)


def _axis_interpolation(
    node: Node,
    extent: int,
    factor: float,
    output: int,
    coefficients: Callable[[float, float], np.ndarray],
    transformation: str,
    region: tuple[float, float] | None,
) -> Callable[[np.ndarray, float], np.ndarray]:
    """The reference's 1-d resize along axis 0 of (extent, k) data, with an extrapolation value:
    of the identity, M (output x extent) whose columns are the resized unit vectors; of zeros with
    extrapolation value 1, where the crop extrapolates."""

    def interpolate(data: np.ndarray, extrapolation: float) -> np.ndarray:
        resized = _reference()._interpolate_1d_along_axis(  # noqa: SLF001
            np.asarray(data, dtype=np.float64),
            0,
            factor,
            output,
            coefficients,
            roi=None if region is None else list(region),
            extrapolation_value=extrapolation,
            coordinate_transformation_mode=transformation,
            exclude_outside=bool(node.attribute("exclude_outside", 0)),
        )
        return np.asarray(resized, dtype=np.float64).reshape(output, data.shape[1])

    return interpolate


def _along_axis(node: Node, x: SSAValue, axis: int, matrix: np.ndarray) -> SSAValue:
    """x contracted with `matrix` (out x in) along `axis`, as a matmul with a constant."""
    builder = node.builder
    rank = len(shape_of(x))
    element_type = element_type_of(x)
    if axis == rank - 2:
        return builder.matmul(builder.constant(matrix, element_type), x)
    permutation = [d for d in range(rank) if d != axis] + [axis]
    moved = x if axis == rank - 1 else builder.transpose(x, permutation)
    product = builder.matmul(moved, builder.constant(np.ascontiguousarray(matrix.T), element_type))
    if axis == rank - 1:
        return product
    return builder.transpose(product, [int(d) for d in np.argsort(permutation)])


def _reference() -> ModuleType:
    """onnx's reference Resize module, whose interpolation helpers define the weights."""
    try:
        from onnx.reference.ops import op_resize
    except ImportError:  # pragma: no cover - onnx is the frontend's own dependency
        op_resize = None
    if op_resize is None or not hasattr(op_resize, "_interpolate_1d_along_axis"):
        from mlc.frontend.onnx.errors import OnnxImportError

        raise OnnxImportError("Resize needs the reference interpolation of onnx >= 1.23 (onnx.reference.ops.op_resize)")
    return op_resize
