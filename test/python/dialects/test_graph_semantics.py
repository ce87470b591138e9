"""The graph interpreter against ONNX's reference implementation, op by op.

For each structured graph op (matmul, transpose, the reductions, softmax, layer_norm, conv2d, the
pools, concat, slice), Hypothesis draws shapes, properties and an element type; a seed draws the
data. The op is built with its Python constructor (which infers the result type), verified, and
evaluated by `interpret.evaluate`; the same computation runs as a one-node ONNX model (opset 18) in
`onnx.reference.ReferenceEvaluator`. Slices are also checked against numpy indexing, and the
boolean reductions against `np.any`/`np.all`.

Precision. The interpreter computes floats in float64 and rounds once to the result type, so ONNX
runs in float64 (integers and booleans in their own type) on the same values, and its result is
rounded to the result type before comparing:

- Sums of products (matmul, conv2d, reduce_sum, the sum inside avg_pool2d and reduce_mean) are
  drawn on a lattice: multiples of 1/8 in [-4, 4]. Every product is a multiple of 1/64 below 16 in
  magnitude and every sum of at most a few hundred of them needs under 20 significant bits, so
  float64 computes them exactly in any order. Both sides then round the same exact value once:
  the results must be *identical*. Max, min, transpose, concat and slice copy values: identical.
- A mean and an average pool divide that exact sum by a count; ONNX may compute the quotient
  differently (for example `sum * (1 / count)`), which can differ in float64's last bit and so,
  rarely, round to the neighbouring value of the result type: they agree within one unit in the
  last place (ulp) of the result type.
- softmax and layer_norm take normally distributed data; both sides evaluate the same formula in
  float64, possibly associated differently (ONNX's layer_norm multiplies by a reciprocal square
  root where we divide), so their float64 values differ by a few float64 ulps (relative 1e-15).
  After rounding to the result type they differ by at most one ulp of that type, except where
  layer_norm's `+ bias` cancels to a value far smaller than its terms. The terms are below 100
  here (normalised values are at most sqrt(256) = 16, times a normal scale), so the float64
  difference stays below 1e-13, and atol 1e-12 covers it.
  Values rounding into the subnormal range of f16/bf16 get one subnormal spacing of slack.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator
from xdsl.dialects.builtin import TensorType, bf16, f16, f32, i1, i32, i64
from xdsl.ir import Attribute, Block, Operation, SSAValue

from mlc.dialects.element_types import to_numpy_dtype
from mlc.dialects.graph import ops as graph
from mlc.dialects.graph.interpret import evaluate

OPSET = 18
FLOAT_TYPES = (f32, f16, bf16)
INTEGER_TYPES = (i32, i64)
SETTINGS = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

float_types = st.sampled_from(FLOAT_TYPES)
numeric_types = st.sampled_from(FLOAT_TYPES + INTEGER_TYPES)
any_types = st.sampled_from(FLOAT_TYPES + INTEGER_TYPES + (i1,))
seeds = st.integers(0, 2**32 - 1)

FLOAT_SPACING = {
    "float32": (2.0**-23, 2.0**-149),
    "float16": (2.0**-10, 2.0**-24),
    "bfloat16": (2.0**-7, 2.0**-133),
}
"""(machine epsilon, smallest subnormal) by dtype name (numpy's finfo does not know bfloat16)."""


# == Building and evaluating ==


def arguments(*types: TensorType) -> tuple[SSAValue, ...]:
    """Block arguments of the given types, to build ops on."""
    return tuple(Block(arg_types=types).args)


def interpret(op: Operation, *inputs: np.ndarray) -> np.ndarray:
    op.verify()
    result = evaluate(op, inputs)
    assert result.shape == tuple(op.results[0].type.get_shape())  # type: ignore[attr-defined]
    assert result.dtype == to_numpy_dtype(op.results[0].type.element_type)  # type: ignore[attr-defined]
    return result


def wide(x: np.ndarray) -> np.ndarray:
    """The values ONNX computes on: float64 for floats; integers and booleans as they are (an
    empty max of i32 is the lowest i32, not the lowest i64)."""
    if x.dtype == np.bool_ or np.issubdtype(x.dtype, np.integer):
        return x
    return x.astype(np.float64)


_ONNX_TYPES = {
    np.dtype(np.float64): TensorProto.DOUBLE,
    np.dtype(np.int32): TensorProto.INT32,
    np.dtype(np.int64): TensorProto.INT64,
    np.dtype(np.bool_): TensorProto.BOOL,
}


def run_onnx(op_type: str, inputs: Sequence[np.ndarray | None], **attributes: object) -> np.ndarray:
    """The output of a one-node ONNX model of `op_type` on `inputs` (None: an omitted input)."""
    names = ["" if x is None else f"input{index}" for index, x in enumerate(inputs)]
    while names and names[-1] == "":
        names.pop()
    feeds = {name: x for name, x in zip(names, inputs) if x is not None}
    node = helper.make_node(op_type, names, ["output"], **attributes)
    graph_proto = helper.make_graph(
        [node],
        "one_node",
        [helper.make_tensor_value_info(name, _ONNX_TYPES[x.dtype], x.shape) for name, x in feeds.items()],
        [helper.make_tensor_value_info("output", TensorProto.UNDEFINED, None)],
    )
    model = helper.make_model(graph_proto, opset_imports=[helper.make_opsetid("", OPSET)])
    with warnings.catch_warnings():
        # ONNX's ReduceMean warns about empty slices (NaN, which is the expected result).
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.asarray(ReferenceEvaluator(model).run(None, feeds)[0])


def assert_matches(actual: np.ndarray, reference: np.ndarray, ulps: int = 0, atol: float = 0.0) -> None:
    """`actual` equals `reference` rounded to `actual`'s type, within `ulps` units in the last
    place of that type (and `atol`, for float64 differences that cancellation exposes)."""
    expected = np.asarray(reference).astype(actual.dtype)
    assert actual.shape == expected.shape
    if ulps == 0 and atol == 0.0:
        np.testing.assert_array_equal(actual, expected)
        return
    epsilon, smallest_subnormal = FLOAT_SPACING[actual.dtype.name]
    np.testing.assert_allclose(
        actual.astype(np.float64),
        expected.astype(np.float64),
        rtol=ulps * epsilon,
        atol=max(atol, ulps * smallest_subnormal),
    )


# == Data ==


def lattice(seed: int, shape: Sequence[int], element_type: Attribute) -> np.ndarray:
    """Multiples of 1/8 in [-4, 4] (floats) or integers in [-32, 32]; i1 at random."""
    rng = np.random.default_rng(seed)
    dtype = to_numpy_dtype(element_type)
    # np.asarray: for shape (), numpy's generators return scalars, not rank-0 arrays.
    if element_type == i1:
        return np.asarray(rng.integers(0, 2, shape)).astype(np.bool_)
    values = np.asarray(rng.integers(-32, 33, shape))
    if element_type in INTEGER_TYPES:
        return values.astype(dtype)
    return (values / 8.0).astype(dtype)


def normal(seed: int, shape: Sequence[int], element_type: Attribute, scale: float = 1.0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.asarray(rng.standard_normal(shape) * scale).astype(to_numpy_dtype(element_type))


def shapes(min_rank: int, max_rank: int, min_side: int = 1, max_side: int = 4) -> st.SearchStrategy[tuple[int, ...]]:
    return st.lists(st.integers(min_side, max_side), min_size=min_rank, max_size=max_rank).map(tuple)


@st.composite
def axis_of(draw: st.DrawFn, rank: int) -> int:
    """An axis of a tensor of `rank`, written positively or negatively (numpy's two spellings)."""
    axis = draw(st.integers(0, rank - 1))
    return axis - rank if draw(st.booleans()) else axis


# == matmul ==


@st.composite
def matmul_cases(draw: st.DrawFn) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Shapes of a and b: a shared batch shape that each side may shorten or set to 1."""
    batch = draw(shapes(0, 2, max_side=3))
    rows, inner, columns = draw(st.integers(1, 5)), draw(st.integers(0, 6)), draw(st.integers(1, 5))

    def side_batch() -> tuple[int, ...]:
        kept = batch[draw(st.integers(0, len(batch))) :]
        return tuple(1 if draw(st.booleans()) else size for size in kept)

    return (*side_batch(), rows, inner), (*side_batch(), inner, columns)


@SETTINGS
@given(case=matmul_cases(), element_type=numeric_types, seed=seeds)
def test_matmul(case: tuple[tuple[int, ...], tuple[int, ...]], element_type: Attribute, seed: int) -> None:
    a_shape, b_shape = case
    a, b = lattice(seed, a_shape, element_type), lattice(seed + 1, b_shape, element_type)
    op = graph.MatmulOp(*arguments(TensorType(element_type, a_shape), TensorType(element_type, b_shape)))
    assert_matches(interpret(op, a, b), run_onnx("MatMul", [wide(a), wide(b)]))


def test_matmul_wraps_like_the_element_type() -> None:
    a = np.array([[2**30, 2**30]], dtype=np.int32)
    b = np.array([[2], [2]], dtype=np.int32)
    op = graph.MatmulOp(*arguments(TensorType(i32, (1, 2)), TensorType(i32, (2, 1))))
    # 2**31 + 2**31 = 2**32 wraps to 0 in 32-bit arithmetic.
    np.testing.assert_array_equal(interpret(op, a, b), np.array([[0]], dtype=np.int32))


# == transpose ==


@SETTINGS
@given(shape=shapes(0, 4), element_type=any_types, data=st.data(), seed=seeds)
def test_transpose(shape: tuple[int, ...], element_type: Attribute, data: st.DataObject, seed: int) -> None:
    rank = len(shape)
    perm = data.draw(st.permutations(range(rank)))
    written = [axis - rank if data.draw(st.booleans()) else axis for axis in perm]
    x = lattice(seed, shape, element_type)
    (value,) = arguments(TensorType(element_type, shape))
    op = graph.TransposeOp(value, perm=written)
    # ONNX cannot spell an empty perm (helper.make_attribute needs a type for it).
    reference = run_onnx("Transpose", [wide(x)], perm=list(perm)) if rank else x
    assert_matches(interpret(op, x), reference)


def test_transpose_default_reverses() -> None:
    (value,) = arguments(TensorType(f32, (2, 3, 4)))
    op = graph.TransposeOp(value)
    assert op.perm.get_values() == (2, 1, 0)
    assert op.result.type == TensorType(f32, (4, 3, 2))


# == Reductions ==

REDUCTIONS = {
    graph.ReduceSumOp: "ReduceSum",
    graph.ReduceMaxOp: "ReduceMax",
    graph.ReduceMinOp: "ReduceMin",
    graph.ReduceMeanOp: "ReduceMean",
}


@st.composite
def reduction_cases(draw: st.DrawFn) -> tuple[type[graph.ReductionOp], Attribute, tuple[int, ...], list[int], bool]:
    op_class = draw(st.sampled_from(list(REDUCTIONS)))
    element_type = draw(float_types if op_class is graph.ReduceMeanOp else numeric_types)
    shape = draw(shapes(0, 4, min_side=0))
    rank = len(shape)
    axes = draw(st.lists(st.integers(0, rank - 1), unique=True, max_size=rank)) if rank else []
    written = [axis - rank if draw(st.booleans()) else axis for axis in axes]
    return op_class, element_type, shape, written, draw(st.booleans())


@SETTINGS
@given(case=reduction_cases(), seed=seeds)
def test_reduction(case: tuple[type[graph.ReductionOp], Attribute, tuple[int, ...], list[int], bool], seed: int) -> None:
    op_class, element_type, shape, axes, keepdims = case
    x = lattice(seed, shape, element_type)
    (value,) = arguments(TensorType(element_type, shape))
    op = op_class(value, axes=axes, keepdims=keepdims)
    # noop_with_empty_axes: an empty axes list reduces nothing, as numpy's axis=() does.
    reference = run_onnx(
        REDUCTIONS[op_class],
        [wide(x), np.array(axes, dtype=np.int64)],
        keepdims=int(keepdims),
        noop_with_empty_axes=1,
    )
    ulps = 1 if op_class is graph.ReduceMeanOp else 0
    assert_matches(interpret(op, x), reference, ulps=ulps)


@SETTINGS
@given(shape=shapes(1, 3, min_side=0), data=st.data(), seed=seeds)
def test_boolean_max_and_min_are_any_and_all(shape: tuple[int, ...], data: st.DataObject, seed: int) -> None:
    rank = len(shape)
    axes = data.draw(st.lists(st.integers(0, rank - 1), unique=True, max_size=rank))
    keepdims = data.draw(st.booleans())
    x = lattice(seed, shape, i1)
    (value,) = arguments(TensorType(i1, shape))
    maximum = graph.ReduceMaxOp(value, axes=axes, keepdims=keepdims)
    minimum = graph.ReduceMinOp(value, axes=axes, keepdims=keepdims)
    np.testing.assert_array_equal(interpret(maximum, x), np.any(x, axis=tuple(axes), keepdims=keepdims))
    np.testing.assert_array_equal(interpret(minimum, x), np.all(x, axis=tuple(axes), keepdims=keepdims))


@pytest.mark.parametrize(
    ("op_class", "element_type", "expected"),
    [
        (graph.ReduceSumOp, f32, 0.0),
        (graph.ReduceMaxOp, f16, -math.inf),
        (graph.ReduceMinOp, f32, math.inf),
        (graph.ReduceMeanOp, f32, math.nan),
        (graph.ReduceMaxOp, i32, np.iinfo(np.int32).min),
        (graph.ReduceMinOp, i64, np.iinfo(np.int64).max),
    ],
)
def test_empty_reductions_give_the_identity(op_class: type[graph.ReductionOp], element_type: Attribute, expected: float) -> None:
    (value,) = arguments(TensorType(element_type, (0, 3)))
    op = op_class(value, axes=[0], keepdims=False)
    result = interpret(op, np.zeros((0, 3), dtype=to_numpy_dtype(element_type)))
    np.testing.assert_array_equal(result, np.full((3,), expected, dtype=result.dtype))


def test_reductions_default_to_every_axis() -> None:
    (value,) = arguments(TensorType(f32, (2, 3)))
    op = graph.ReduceSumOp(value, keepdims=True)
    assert op.axes.get_values() == (0, 1)
    assert op.result.type == TensorType(f32, (1, 1))


# == softmax and layer_norm ==


@SETTINGS
@given(
    shape=shapes(1, 4),
    element_type=float_types,
    data=st.data(),
    scale=st.sampled_from([1.0, 30.0, 1000.0]),
    seed=seeds,
)
def test_softmax(shape: tuple[int, ...], element_type: Attribute, data: st.DataObject, scale: float, seed: int) -> None:
    axis = data.draw(axis_of(len(shape)))
    # A scale of 1000 makes exp overflow float64 unless the maximum is subtracted first.
    x = normal(seed, shape, element_type, scale)
    (value,) = arguments(TensorType(element_type, shape))
    op = graph.SoftmaxOp(value, axis=axis)
    assert_matches(interpret(op, x), run_onnx("Softmax", [wide(x)], axis=axis), ulps=1)


@SETTINGS
@given(
    shape=shapes(1, 4),
    element_type=float_types,
    data=st.data(),
    epsilon=st.sampled_from([1e-5, 1e-3, 0.5]),
    seed=seeds,
)
def test_layer_norm(shape: tuple[int, ...], element_type: Attribute, data: st.DataObject, epsilon: float, seed: int) -> None:
    axis = data.draw(axis_of(len(shape)))
    normalized_shape = shape[axis:]
    x = normal(seed, shape, element_type, 3.0)
    scale = normal(seed + 1, normalized_shape, element_type)
    bias = normal(seed + 2, normalized_shape, element_type)
    values = arguments(
        TensorType(element_type, shape),
        TensorType(element_type, normalized_shape),
        TensorType(element_type, normalized_shape),
    )
    op = graph.LayerNormOp(*values, axis=axis, epsilon=epsilon)
    reference = run_onnx("LayerNormalization", [wide(x), wide(scale), wide(bias)], axis=axis, epsilon=epsilon)
    assert_matches(interpret(op, x, scale, bias), reference, ulps=1, atol=1e-12)


# == conv2d and the pools ==


@st.composite
def window(draw: st.DrawFn, size: int) -> tuple[int, int, int, int, int]:
    """(kernel, stride, dilation, pad_begin, pad_end) along one axis of `size`, fitting it."""
    kernel, dilation = draw(st.integers(1, 3)), draw(st.integers(1, 2))
    pad_begin, pad_end = draw(st.integers(0, 2)), draw(st.integers(0, 2))
    extent = dilation * (kernel - 1) + 1
    if extent > size + pad_begin + pad_end:
        kernel, dilation = 1, 1
    return kernel, draw(st.integers(1, 3)), dilation, pad_begin, pad_end


@st.composite
def conv_cases(draw: st.DrawFn) -> dict:
    group = draw(st.integers(1, 3))
    channels, outputs = group * draw(st.integers(1, 2)), group * draw(st.integers(1, 2))
    height, width = draw(st.integers(1, 6)), draw(st.integers(1, 6))
    rows, columns = draw(window(height)), draw(window(width))
    return {
        "x": (draw(st.integers(1, 2)), channels, height, width),
        "w": (outputs, channels // group, rows[0], columns[0]),
        "bias": draw(st.booleans()),
        "strides": (rows[1], columns[1]),
        "dilations": (rows[2], columns[2]),
        "pads": (rows[3], columns[3], rows[4], columns[4]),
        "group": group,
    }


@SETTINGS
@given(case=conv_cases(), element_type=float_types, seed=seeds)
def test_conv2d(case: dict, element_type: Attribute, seed: int) -> None:
    x = lattice(seed, case["x"], element_type)
    w = lattice(seed + 1, case["w"], element_type)
    bias = lattice(seed + 2, case["w"][:1], element_type) if case["bias"] else None
    types = [TensorType(element_type, case["x"]), TensorType(element_type, case["w"])]
    if bias is not None:
        types.append(TensorType(element_type, bias.shape))
    properties = {name: case[name] for name in ("strides", "pads", "dilations", "group")}
    op = graph.Conv2dOp(*arguments(*types), **properties)
    reference = run_onnx(
        "Conv",
        [wide(x), wide(w), None if bias is None else wide(bias)],
        kernel_shape=list(case["w"][2:]),
        strides=list(case["strides"]),
        pads=list(case["pads"]),
        dilations=list(case["dilations"]),
        group=case["group"],
    )
    operands = (x, w) if bias is None else (x, w, bias)
    assert_matches(interpret(op, *operands), reference)


@st.composite
def pool_cases(draw: st.DrawFn) -> dict:
    kernel = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    pads = tuple(draw(st.integers(0, kernel[index % 2] - 1)) for index in range(4))
    height = draw(st.integers(max(1, kernel[0] - pads[0] - pads[2]), 7))
    width = draw(st.integers(max(1, kernel[1] - pads[1] - pads[3]), 7))
    return {
        "x": (draw(st.integers(1, 2)), draw(st.integers(1, 3)), height, width),
        "kernel": kernel,
        "strides": (draw(st.integers(1, 3)), draw(st.integers(1, 3))),
        "pads": pads,
    }


def pool_by_definition(
    x: np.ndarray, kernel: Sequence[int], strides: Sequence[int], pads: Sequence[int], maximum: bool
) -> np.ndarray:
    """ONNX's pooling written out: each output is the max or mean of the window's elements of x."""
    batch, channels, height, width = x.shape
    output_height = (height + pads[0] + pads[2] - kernel[0]) // strides[0] + 1
    output_width = (width + pads[1] + pads[3] - kernel[1]) // strides[1] + 1
    result = np.empty((batch, channels, output_height, output_width))
    for row in range(output_height):
        for column in range(output_width):
            top, left = row * strides[0] - pads[0], column * strides[1] - pads[1]
            window = x[:, :, max(top, 0) : top + kernel[0], max(left, 0) : left + kernel[1]]
            window = window.astype(np.float64).reshape(batch, channels, -1)
            result[:, :, row, column] = window.max(axis=2) if maximum else window.mean(axis=2)
    return result


@SETTINGS
@given(case=pool_cases(), maximum=st.booleans(), element_type=float_types, seed=seeds)
def test_pool2d(case: dict, maximum: bool, element_type: Attribute, seed: int) -> None:
    x = lattice(seed, case["x"], element_type)
    (value,) = arguments(TensorType(element_type, case["x"]))
    op_class = graph.MaxPool2dOp if maximum else graph.AvgPool2dOp
    op = op_class(value, kernel=case["kernel"], strides=case["strides"], pads=case["pads"])
    result = interpret(op, x)
    # The mean of a window of lattice values is one rounding of an exact sum on both sides.
    assert_matches(result, pool_by_definition(x, case["kernel"], case["strides"], case["pads"], maximum))
    # onnx's reference MaxPool reads pads as (top, bottom, left, right) when the strides are 1
    # (onnx/reference/ops/_op_common_pool.py, onnx 1.23), which agrees with ONNX's (top, left,
    # bottom, right) only when left == bottom; its AveragePool reads them correctly.
    misread = maximum and case["strides"] == (1, 1) and case["pads"][1] != case["pads"][2]
    if not misread:
        reference = run_onnx(
            "MaxPool" if maximum else "AveragePool",
            [wide(x)],
            kernel_shape=list(case["kernel"]),
            strides=list(case["strides"]),
            pads=list(case["pads"]),
        )
        assert_matches(result, reference, ulps=0 if maximum else 1)


def test_avg_pool2d_excludes_padding() -> None:
    (value,) = arguments(TensorType(f32, (1, 1, 2, 2)))
    op = graph.AvgPool2dOp(value, kernel=(2, 2), pads=(1, 1, 0, 0))
    x = np.array([[[[1.0, 2.0], [3.0, 4.0]]]], dtype=np.float32)
    # The top-left window holds only x[0, 0]; the top-right x[0, 0] and x[0, 1]; and so on.
    expected = np.array([[[[1.0, 1.5], [2.0, 2.5]]]], dtype=np.float32)
    np.testing.assert_array_equal(interpret(op, x), expected)


# == concat and slice ==


@SETTINGS
@given(base=shapes(1, 3), element_type=any_types, data=st.data(), seed=seeds)
def test_concat(base: tuple[int, ...], element_type: Attribute, data: st.DataObject, seed: int) -> None:
    axis = data.draw(axis_of(len(base)))
    sizes = data.draw(st.lists(st.integers(0, 3), min_size=1, max_size=4))
    shapes_ = [tuple(size if dim == axis % len(base) else side for dim, side in enumerate(base)) for size in sizes]
    xs = [lattice(seed + index, shape, element_type) for index, shape in enumerate(shapes_)]
    op = graph.ConcatOp(arguments(*(TensorType(element_type, shape) for shape in shapes_)), axis=axis)
    assert_matches(interpret(op, *xs), run_onnx("Concat", [wide(x) for x in xs], axis=axis))


@st.composite
def slice_bounds(draw: st.DrawFn, size: int) -> tuple[int, int, int]:
    """(start, end, step) for a dimension of `size`: in range, negative, or far outside it."""
    bound = st.one_of(
        st.integers(-2 * size - 2, 2 * size + 2),
        st.sampled_from([-(2**63), 2**63 - 1]),
    )
    step = draw(st.sampled_from([1, 2, 3, -1, -2, -3]))
    return draw(bound), draw(bound), step


@SETTINGS
@given(shape=shapes(0, 3, min_side=0, max_side=5), element_type=any_types, data=st.data(), seed=seeds)
def test_slice(shape: tuple[int, ...], element_type: Attribute, data: st.DataObject, seed: int) -> None:
    bounds = [data.draw(slice_bounds(size)) for size in shape]
    starts, ends, steps = ([bound[index] for bound in bounds] for index in range(3))
    x = lattice(seed, shape, element_type)
    (value,) = arguments(TensorType(element_type, shape))
    op = graph.SliceOp(value, starts=starts, ends=ends, steps=steps)
    result = interpret(op, x)
    np.testing.assert_array_equal(result, x[tuple(slice(*bound) for bound in bounds)])
    if shape:
        as_int64 = [np.array(values, dtype=np.int64) for values in (starts, ends)]
        axes, step_array = np.arange(len(shape), dtype=np.int64), np.array(steps, dtype=np.int64)
        assert_matches(result, run_onnx("Slice", [wide(x), *as_int64, axes, step_array]))


# == Builders, type inference, and the rest of the pipeline ==


def test_infer_result_type_names_the_operand() -> None:
    with pytest.raises(ValueError, match=r"operand #1 \(b\) of shape 4x5 has 4 rows"):
        graph.MatmulOp.infer_result_type(TensorType(f32, (2, 3)), TensorType(f32, (4, 5)))
    with pytest.raises(graph.TypeInferenceError, match=r"operand #2 \(bias\) of shape 3"):
        x, w, bias = arguments(TensorType(f32, (1, 2, 5, 5)), TensorType(f32, (4, 2, 3, 3)), TensorType(f32, (3,)))
        graph.Conv2dOp(x, w, bias)


def test_constructors_use_onnx_defaults() -> None:
    x, w = arguments(TensorType(f16, (1, 2, 5, 5)), TensorType(f16, (4, 2, 3, 3)))
    conv = graph.Conv2dOp(x, w)
    assert conv.strides.get_values() == (1, 1) and conv.pads.get_values() == (0, 0, 0, 0)
    assert conv.dilations.get_values() == (1, 1) and conv.group.value.data == 1
    assert conv.result.type == TensorType(f16, (1, 4, 3, 3))
    assert graph.SoftmaxOp(x).axis.value.data == -1
    sliced = graph.SliceOp(x, starts=[0, 0, 1, 1], ends=[1, 2, 4, 4])
    assert sliced.steps.get_values() == (1, 1, 1, 1)
    assert sliced.result.type == TensorType(f16, (1, 2, 3, 3))


def test_whole_function_through_the_interpreter() -> None:
    """The spec's example, run by `mlc.interpreter.run` (the ops registered with xDSL's interpreter)."""
    from mlc.diagnostics import parse_module
    from mlc.dialects import make_context
    from mlc.interpreter import run

    text = """
    func.func @mlp(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>) -> tensor<8x32xf32> {
      %0 = "graph.matmul"(%x, %w) : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
      %1 = "graph.add"(%0, %b) : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
      %2 = "graph.gelu"(%1) <{approximate = "tanh"}> : (tensor<8x32xf32>) -> tensor<8x32xf32>
      %3 = "graph.softmax"(%2) <{axis = 1 : i64}> : (tensor<8x32xf32>) -> tensor<8x32xf32>
      func.return %3 : tensor<8x32xf32>
    }
    """
    module, _ = parse_module(text, make_context())
    module.verify()
    rng = np.random.default_rng(0)
    x, w, b = (rng.standard_normal(shape).astype(np.float32) for shape in ((8, 16), (16, 32), (32,)))
    (result,) = run(module, "mlp", [x, w, b])
    h = x.astype(np.float64) @ w.astype(np.float64) + b
    h = 0.5 * h * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (h + 0.044715 * h**3)))
    e = np.exp(h - h.max(axis=1, keepdims=True))
    # The interpreter rounds each op's result to f32, the float64 reference never: both are
    # implementations of @mlp, within the error bound derived for it and the data.
    from programs import bounded_comparison

    reference = (e / e.sum(axis=1, keepdims=True)).astype(np.float32)
    assert bounded_comparison(module, [x, w, b], [reference]).failure is None


LAYOUT_OPS = {
    "graph.transpose %a perm [1, 0] : tensor<4x4xf32> to tensor<4x4xf32>": "tensor<4x4xf32>",
    "graph.concat %a, %a axis 0 : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>": "tensor<8x4xf32>",
    "graph.slice %a starts [0, 0] ends [4, 4] steps [2, 1] : tensor<4x4xf32> to tensor<2x4xf32>": "tensor<2x4xf32>",
    "graph.slice %a starts [1, 0] ends [3, 4] steps [1, 1] : tensor<4x4xf32> to tensor<2x4xf32>": "tensor<2x4xf32>",
}


@pytest.mark.parametrize("line", sorted(LAYOUT_OPS))
def test_convert_graph_to_tile_lowers_layout_ops_as_gathers(line: str) -> None:
    """Layout ops read their input through a gather, except where the index map is a plain
    translation (a slice of unit steps): a block load at the shifted origin."""
    from programs import lower

    result = LAYOUT_OPS[line]
    text = f"func.func @main(%a: tensor<4x4xf32>) -> {result} {{\n  %0 = {line}\n  func.return %0 : {result}\n}}\n"
    tiled = str(lower(text, "convert-graph-to-tile{target=cpu}"))
    translation = "steps [1, 1]" in line
    assert ("tile.gather %a" in tiled) == (not translation)
    assert ("tile.load %a" in tiled) == translation
    # On the GPU a lone transpose of the last two dimensions is a shared-memory transpose instead.
    lone_transpose = line.startswith("graph.transpose")
    assert ("tile.transpose" in str(lower(text, "convert-graph-to-tile"))) == lone_transpose

