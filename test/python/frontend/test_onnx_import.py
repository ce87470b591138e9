"""ONNX import: each mapped op, at the opsets where it changed, interprets like ONNX's reference.

Every case builds a model with `onnx.helper`, imports it (`mlc.frontend.onnx.import_model`), runs
the graph interpreter on random inputs (seeded by the test's name) and compares with
`onnx.reference.ReferenceEvaluator` (or numpy, where ONNX's reference does not implement a version).
Integers and booleans agree exactly; floats within the error bound `error_bounds.result_bounds`
derives for the imported function and the data (`onnx_models.assert_within_import_bounds`): the
interpreter computes each op in float64 and rounds once, the reference in float32, so they may
differ by the roundings and library errors of each op, gamma(n) * sum|terms| for a sum of n terms,
and what the ops after it make of that; maxima, minima and layout ops exactly.
"""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
import onnx.backend.test  # noqa: E402

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from mlc.diagnostics import parse_module, verify  # noqa: E402
from mlc.dialects import make_context  # noqa: E402
from mlc.errors import MlcError  # noqa: E402
from mlc.interpreter import run  # noqa: E402
from mlc.frontend.onnx import OnnxImportError, import_model  # noqa: E402
from mlc.frontend.onnx.registry import mappings  # noqa: E402
from onnx_models import (  # noqa: E402
    assert_within_import_bounds,
    check_import,
    cnn,
    mlp,
    model,
    one_node,
    reference,
    transformer_block,
)


def normal(rng: np.random.Generator, *shape: int, dtype: type = np.float32) -> np.ndarray:
    return rng.standard_normal(shape).astype(dtype)


def positive(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return (rng.random(shape) + 0.5).astype(np.float32)


# -- elementwise ------------------------------------------------------------------------------


@pytest.mark.parametrize("opset", [11, 13, 14, 21])
@pytest.mark.parametrize("op_type", ["Add", "Sub", "Mul", "Div"])
@pytest.mark.parametrize("shapes", [((3, 4), (3, 4)), ((2, 3, 4), (4,)), ((2, 1, 4), (3, 1))])
def test_arithmetic(op_type: str, opset: int, shapes: tuple, rng: np.random.Generator):
    a, b = normal(rng, *shapes[0]), positive(rng, *shapes[1])
    check_import(one_node(op_type, {"a": a, "b": b}, opset=opset), {"a": a, "b": b})


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("op_type", ["Add", "Sub", "Mul"])
def test_integer_arithmetic(op_type: str, dtype: type, rng: np.random.Generator):
    a, b = rng.integers(-50, 50, (3, 4)).astype(dtype), rng.integers(-50, 50, (4,)).astype(dtype)
    check_import(one_node(op_type, {"a": a, "b": b}), {"a": a, "b": b})


def test_float16_arithmetic(rng: np.random.Generator):
    a, b = normal(rng, 4, 5, dtype=np.float16), normal(rng, 5, dtype=np.float16)
    check_import(one_node("Mul", {"a": a, "b": b}), {"a": a, "b": b})


@pytest.mark.parametrize("opset", [11, 13, 15, 21])
def test_pow(opset: int, rng: np.random.Generator):
    a, b = positive(rng, 3, 4), normal(rng, 4)
    check_import(one_node("Pow", {"a": a, "b": b}, opset=opset), {"a": a, "b": b})


def test_pow_with_an_integer_exponent(rng: np.random.Generator):
    a = normal(rng, 3, 4)
    exponent = np.array([2, 3, 0, 1], dtype=np.int64)
    check_import(one_node("Pow", {"a": a}, initializers={"e": exponent}, opset=15), {"a": a})


@pytest.mark.parametrize("count", [1, 2, 3])
@pytest.mark.parametrize("op_type", ["Max", "Min", "Sum", "Mean"])
def test_variadic(op_type: str, count: int, rng: np.random.Generator):
    shapes = [(2, 3, 4), (3, 1), (4,)][:count]
    inputs = {f"x{index}": normal(rng, *shape) for index, shape in enumerate(shapes)}
    check_import(one_node(op_type, inputs, opset=13), inputs)


UNARY_DOMAINS = {
    "Neg": normal,
    "Abs": normal,
    "Exp": normal,
    "Log": positive,
    "Sqrt": positive,
    "Reciprocal": positive,
    "Tanh": normal,
    "Sigmoid": normal,
    "Relu": normal,
    "Erf": normal,
}


@pytest.mark.parametrize("opset", [11, 13, 21])
@pytest.mark.parametrize("op_type", sorted(UNARY_DOMAINS))
def test_unary(op_type: str, opset: int, rng: np.random.Generator):
    x = UNARY_DOMAINS[op_type](rng, 3, 5)
    check_import(one_node(op_type, {"x": x}, opset=opset), {"x": x})


@pytest.mark.parametrize("op_type", ["Neg", "Abs", "Relu"])
def test_unary_on_integers(op_type: str, rng: np.random.Generator):
    x = rng.integers(-9, 9, (4, 3)).astype(np.int32)
    check_import(one_node(op_type, {"x": x}, opset=14), {"x": x})


@pytest.mark.parametrize("opset", [20, 21])
@pytest.mark.parametrize("approximate", ["none", "tanh", None])
def test_gelu(approximate: str | None, opset: int, rng: np.random.Generator):
    x = normal(rng, 4, 6) * 3
    attributes = {} if approximate is None else {"approximate": approximate}
    check_import(one_node("Gelu", {"x": x}, opset=opset, **attributes), {"x": x})


ACTIVATIONS = {
    "LeakyRelu": {"alpha": 0.2},
    "Elu": {"alpha": 0.7},
    "HardSigmoid": {"alpha": 0.3, "beta": 0.4},
    "HardSwish": {},
}


@pytest.mark.parametrize("op_type", sorted(ACTIVATIONS))
def test_activations(op_type: str, rng: np.random.Generator):
    x = normal(rng, 3, 7) * 4
    check_import(one_node(op_type, {"x": x}, opset=16, **ACTIVATIONS[op_type]), {"x": x})


def test_prelu(rng: np.random.Generator):
    x, slope = normal(rng, 2, 3, 4), positive(rng, 3, 1)
    check_import(one_node("PRelu", {"x": x, "slope": slope}, opset=16), {"x": x, "slope": slope})


@pytest.mark.parametrize("bounds", [("lo", "hi"), ("lo", ""), ("", "hi"), ()])
def test_clip(bounds: tuple[str, ...], rng: np.random.Generator):
    x = normal(rng, 4, 5)
    values = {"lo": np.array(-0.5, np.float32), "hi": np.array(0.7, np.float32)}
    initializers = {name: values[name] for name in bounds if name}
    onnx_model = one_node("Clip", {"x": x}, initializers=initializers, input_names=["x", *bounds], opset=13)
    check_import(onnx_model, {"x": x})


COMPARISONS = ["Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"]


@pytest.mark.parametrize("opset", [13, 16, 19, 21])
@pytest.mark.parametrize("op_type", COMPARISONS)
def test_comparisons(op_type: str, opset: int, rng: np.random.Generator):
    # Small integers as floats, so that equal elements occur.
    a, b = rng.integers(-2, 3, (3, 4)).astype(np.float32), rng.integers(-2, 3, (4,)).astype(np.float32)
    check_import(one_node(op_type, {"a": a, "b": b}, opset=opset), {"a": a, "b": b})


def test_equal_on_integers_and_booleans(rng: np.random.Generator):
    a, b = rng.integers(0, 3, (5,)).astype(np.int64), rng.integers(0, 3, (5,)).astype(np.int64)
    check_import(one_node("Equal", {"a": a, "b": b}), {"a": a, "b": b})
    p, q = rng.random(6) < 0.5, rng.random(6) < 0.5
    check_import(one_node("Equal", {"p": p, "q": q}), {"p": p, "q": q})


@pytest.mark.parametrize("opset", [13, 16, 21])
def test_where(opset: int, rng: np.random.Generator):
    condition, a, b = rng.random((3, 1)) < 0.5, normal(rng, 3, 4), normal(rng, 4)
    inputs = {"c": condition, "a": a, "b": b}
    check_import(one_node("Where", inputs, opset=opset), inputs)


@pytest.mark.parametrize("op_type", ["And", "Or", "Xor"])
def test_logic(op_type: str, rng: np.random.Generator):
    p, q = rng.random((2, 3)) < 0.5, rng.random((3,)) < 0.5
    check_import(one_node(op_type, {"p": p, "q": q}), {"p": p, "q": q})


def _with_special_values(x: np.ndarray) -> np.ndarray:
    x = x.copy()
    x.flat[:4] = [np.nan, np.inf, -np.inf, -0.0]
    return x


@pytest.mark.parametrize("element", [np.float32, np.float16])
def test_is_nan(element: type, rng: np.random.Generator):
    x = _with_special_values(normal(rng, 3, 4).astype(element))
    check_import(one_node("IsNaN", {"x": x}), {"x": x})


@pytest.mark.parametrize("positive, negative", [(1, 1), (1, 0), (0, 1), (0, 0)])
def test_is_inf(positive: int, negative: int, rng: np.random.Generator):
    x = _with_special_values(normal(rng, 3, 4))
    check_import(one_node("IsInf", {"x": x}, detect_positive=positive, detect_negative=negative), {"x": x})


def test_is_nan_refuses_integers():
    with pytest.raises(OnnxImportError, match="IsNaN takes a float tensor, got i32"):
        check_import(one_node("IsNaN", {"x": np.arange(4, dtype=np.int32)}), {"x": np.arange(4, dtype=np.int32)})


def test_not(rng: np.random.Generator):
    p = rng.random((2, 3)) < 0.5
    check_import(one_node("Not", {"p": p}), {"p": p})


CASTS = [
    (np.float32, TensorProto.FLOAT16),
    (np.float32, TensorProto.INT32),
    (np.float32, TensorProto.INT64),
    (np.float32, TensorProto.BOOL),
    (np.float32, TensorProto.FLOAT),
    (np.int64, TensorProto.FLOAT),
    (np.int32, TensorProto.INT64),
    (np.bool_, TensorProto.FLOAT),
    (np.float16, TensorProto.FLOAT),
]


@pytest.mark.parametrize("opset", [13, 19, 21])
@pytest.mark.parametrize("source, target", CASTS)
def test_cast(source: type, target: int, opset: int, rng: np.random.Generator):
    x = (normal(rng, 3, 4) * 5).astype(source) if source != np.bool_ else rng.random((3, 4)) < 0.5
    check_import(one_node("Cast", {"x": x}, opset=opset, to=target), {"x": x})


# -- matrix products, reductions, normalisations ------------------------------------------------

MATMUL_SHAPES = [
    ((3, 4), (4, 5)),
    ((2, 3, 4), (4, 5)),
    ((2, 1, 3, 4), (5, 4, 2)),
    ((4,), (4, 5)),
    ((3, 4), (4,)),
    ((2, 3, 4), (4,)),
    ((4,), (2, 4, 3)),
]


@pytest.mark.parametrize("opset", [11, 13, 21])
@pytest.mark.parametrize("shapes", MATMUL_SHAPES)
def test_matmul(shapes: tuple, opset: int, rng: np.random.Generator):
    a, b = normal(rng, *shapes[0]), normal(rng, *shapes[1])
    check_import(one_node("MatMul", {"a": a, "b": b}, opset=opset), {"a": a, "b": b})


GEMMS = [
    ({}, (3,)),
    ({"transA": 1}, (2, 3)),
    ({"transB": 1, "alpha": 0.5}, (1, 3)),
    ({"transA": 1, "transB": 1, "alpha": 2.0, "beta": 0.25}, ()),
    ({"beta": 0.0}, (3,)),
    ({"alpha": 1.5}, None),
]


@pytest.mark.parametrize("opset", [11, 13, 21])
@pytest.mark.parametrize("attributes, c_shape", GEMMS)
def test_gemm(attributes: dict, c_shape: tuple | None, opset: int, rng: np.random.Generator):
    a = normal(rng, *((4, 2) if attributes.get("transA") else (2, 4)))
    b = normal(rng, *((3, 4) if attributes.get("transB") else (4, 3)))
    initializers = {"b": b} if c_shape is None else {"b": b, "c": normal(rng, *c_shape)}
    onnx_model = one_node("Gemm", {"a": a}, initializers=initializers, opset=opset, **attributes)
    check_import(onnx_model, {"a": a})


REDUCTIONS = ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin"]


def _reduction_model(op_type: str, x: np.ndarray, axes: list[int] | None, keepdims: int, opset: int) -> onnx.ModelProto:
    axes_as_input = opset >= (13 if op_type == "ReduceSum" else 18)
    if axes is None:
        return one_node(op_type, {"x": x}, opset=opset, keepdims=keepdims)
    if axes_as_input:
        axes_input = {"axes": np.array(axes, np.int64)}
        return one_node(op_type, {"x": x}, initializers=axes_input, opset=opset, keepdims=keepdims)
    return one_node(op_type, {"x": x}, opset=opset, keepdims=keepdims, axes=axes)


@pytest.mark.parametrize("opset", [11, 13, 18, 20, 21])
@pytest.mark.parametrize("axes, keepdims", [([1], 1), ([-1, 0], 0), (None, 1), (None, 0), ([2], 0)])
@pytest.mark.parametrize("op_type", REDUCTIONS)
def test_reductions(op_type: str, axes: list[int] | None, keepdims: int, opset: int, rng: np.random.Generator):
    x = normal(rng, 2, 3, 4)
    check_import(_reduction_model(op_type, x, axes, keepdims, opset), {"x": x})


@pytest.mark.parametrize("op_type", REDUCTIONS)
def test_reduction_with_no_axes_and_noop(op_type: str, rng: np.random.Generator):
    x = normal(rng, 2, 3)
    onnx_model = one_node(op_type, {"x": x}, opset=18, noop_with_empty_axes=1)
    check_import(onnx_model, {"x": x})


@pytest.mark.parametrize("opset", [13, 22])
@pytest.mark.parametrize("op_type", ["GlobalAveragePool", "GlobalMaxPool"])
@pytest.mark.parametrize("shape", [(2, 3, 5, 4), (1, 2, 7)])
def test_global_pooling(op_type: str, shape: tuple, opset: int, rng: np.random.Generator):
    x = normal(rng, *shape)
    onnx_model = one_node(op_type, {"x": x}, opset=opset)
    if len(shape) == 4:
        check_import(onnx_model, {"x": x})
        return
    # onnx's reference GlobalMaxPool reduces the wrong axes of inputs that are not 4-D: use numpy.
    reduce = np.mean if op_type == "GlobalAveragePool" else np.max
    expected = reduce(x.astype(np.float64), axis=(2,), keepdims=True)
    assert_within_import_bounds(import_model(onnx_model), [x], [expected], "numpy")


@pytest.mark.parametrize("opset, axis", [(11, None), (11, 2), (11, -2), (13, None), (13, 0), (13, 1), (21, -2)])
def test_softmax(opset: int, axis: int | None, rng: np.random.Generator):
    x = normal(rng, 2, 3, 4) * 3
    attributes = {} if axis is None else {"axis": axis}
    onnx_model = one_node("Softmax", {"x": x}, opset=opset, **attributes)
    if opset >= 13:
        check_import(onnx_model, {"x": x})
        return
    # onnx's reference implements only version 13; version 11 normalises x coerced to a matrix.
    split = (1 if axis is None else axis) % 3
    matrix = x.reshape(math.prod(x.shape[:split]), -1).astype(np.float64)
    exponentials = np.exp(matrix - matrix.max(axis=1, keepdims=True))
    expected = (exponentials / exponentials.sum(axis=1, keepdims=True)).reshape(x.shape)
    assert_within_import_bounds(import_model(onnx_model), [x], [expected], "numpy")


@pytest.mark.parametrize("axis, parameter_shape", [(-1, (5,)), (1, (4, 5)), (-1, (1, 5)), (2, (1,))])
@pytest.mark.parametrize("with_bias", [True, False])
def test_layer_normalization(axis: int, parameter_shape: tuple, with_bias: bool, rng: np.random.Generator):
    x = normal(rng, 3, 4, 5) * 2 + 1
    initializers = {"scale": positive(rng, *parameter_shape)}
    if with_bias:
        initializers["bias"] = normal(rng, *parameter_shape)
    onnx_model = one_node("LayerNormalization", {"x": x}, initializers=initializers, opset=17, axis=axis, epsilon=1e-3)
    check_import(onnx_model, {"x": x})


@pytest.mark.parametrize("opset", [11, 14, 15, 21])
@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (4, 3), (2, 3, 6)])
def test_batch_normalization(shape: tuple, opset: int, rng: np.random.Generator):
    x = normal(rng, *shape)
    channels = shape[1]
    initializers = {
        "scale": positive(rng, channels),
        "bias": normal(rng, channels),
        "mean": normal(rng, channels),
        "var": positive(rng, channels),
    }
    onnx_model = one_node("BatchNormalization", {"x": x}, initializers=initializers, opset=opset, epsilon=1e-3)
    if opset >= 14:
        check_import(onnx_model, {"x": x})
        return
    # onnx's reference runs version 9 in training mode; with one output it is inference mode.
    parameters = {name: value.reshape(channels, *[1] * (len(shape) - 2)) for name, value in initializers.items()}
    wide = {name: value.astype(np.float64) for name, value in parameters.items()}
    expected = (x.astype(np.float64) - wide["mean"]) / np.sqrt(wide["var"] + 1e-3) * wide["scale"] + wide["bias"]
    assert_within_import_bounds(import_model(onnx_model), [x], [expected], "numpy")


def test_batch_normalization_with_runtime_parameters(rng: np.random.Generator):
    inputs = {"x": normal(rng, 2, 3, 4, 4), "scale": positive(rng, 3), "bias": normal(rng, 3)}
    inputs |= {"mean": normal(rng, 3), "var": positive(rng, 3)}
    check_import(one_node("BatchNormalization", inputs, opset=15), inputs)


# -- convolution and pooling ------------------------------------------------------------------

CONVOLUTIONS = [
    {},
    {"pads": [1, 1, 1, 1]},
    {"pads": [0, 1, 2, 1], "strides": [2, 1]},
    {"dilations": [2, 2], "pads": [2, 2, 2, 2]},
    {"auto_pad": "SAME_UPPER", "strides": [2, 2]},
    {"auto_pad": "SAME_LOWER", "strides": [2, 2]},
    {"auto_pad": "VALID", "strides": [1, 2]},
    {"group": 2, "pads": [1, 1, 1, 1]},
    {"group": 4},
]


@pytest.mark.parametrize("opset", [11, 13, 22])
@pytest.mark.parametrize("with_bias", [True, False])
@pytest.mark.parametrize("attributes", CONVOLUTIONS)
def test_conv2d(attributes: dict, with_bias: bool, opset: int, rng: np.random.Generator):
    group = attributes.get("group", 1)
    x = normal(rng, 2, 4, 7, 8)
    initializers = {"w": normal(rng, 6 if group != 4 else 4, 4 // group, 3, 3)}
    if with_bias:
        initializers["b"] = normal(rng, initializers["w"].shape[0])
    onnx_model = one_node("Conv", {"x": x}, initializers=initializers, opset=opset, **attributes)
    check_import(onnx_model, {"x": x})


@pytest.mark.parametrize(
    "attributes", [{}, {"pads": [1, 2], "strides": [2]}, {"auto_pad": "SAME_UPPER", "dilations": [2]}]
)
def test_conv1d(attributes: dict, rng: np.random.Generator):
    x = normal(rng, 2, 3, 11)
    initializers = {"w": normal(rng, 5, 3, 3), "b": normal(rng, 5)}
    onnx_model = one_node("Conv", {"x": x}, initializers=initializers, opset=13, **attributes)
    check_import(onnx_model, {"x": x})


POOLS = [
    {"kernel_shape": [2, 2]},
    {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]},
    {"kernel_shape": [3, 2], "strides": [2, 1], "pads": [1, 0, 0, 1]},
    {"kernel_shape": [3, 3], "strides": [2, 2], "auto_pad": "SAME_UPPER"},
    {"kernel_shape": [2, 2], "strides": [2, 2], "auto_pad": "SAME_LOWER"},
    {"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": 1},
    {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "ceil_mode": 1},
]


@pytest.mark.parametrize("opset", [11, 12, 13, 22])
@pytest.mark.parametrize("attributes", POOLS)
def test_max_pool(attributes: dict, opset: int, rng: np.random.Generator):
    x = normal(rng, 2, 3, 7, 8)
    onnx_model = one_node("MaxPool", {"x": x}, opset=opset, **attributes)
    if attributes.get("auto_pad") != "SAME_LOWER":
        check_import(onnx_model, {"x": x})
        return
    # onnx's reference MaxPool pads SAME_LOWER like SAME_UPPER and rounds its output size down;
    # compare with the explicit padding the spec defines (the odd row and column at the start).
    explicit = {"kernel_shape": [2, 2], "strides": [2, 2], "pads": [1, 0, 0, 0]}
    (expected,) = reference(one_node("MaxPool", {"x": x}, opset=opset, **explicit), {"x": x})
    (result,) = run(import_model(onnx_model), "main", [x])
    np.testing.assert_array_equal(result, expected)


@pytest.mark.parametrize("opset", [11, 19, 22])
@pytest.mark.parametrize("count_include_pad", [0, 1])
@pytest.mark.parametrize("attributes", POOLS)
def test_average_pool(attributes: dict, count_include_pad: int, opset: int, rng: np.random.Generator):
    x = normal(rng, 2, 3, 7, 8)
    onnx_model = one_node("AveragePool", {"x": x}, opset=opset, count_include_pad=count_include_pad, **attributes)
    check_import(onnx_model, {"x": x})


@pytest.mark.parametrize("op_type", ["MaxPool", "AveragePool"])
def test_pool1d(op_type: str, rng: np.random.Generator):
    x = normal(rng, 2, 3, 9)
    onnx_model = one_node(op_type, {"x": x}, opset=13, kernel_shape=[3], strides=[2], pads=[1, 1])
    check_import(onnx_model, {"x": x})


# -- data movement ------------------------------------------------------------------------------


@pytest.mark.parametrize("opset", [11, 13, 21])
@pytest.mark.parametrize("perm", [None, [1, 0, 2], [2, 0, 1], [0, 1, 2]])
def test_transpose(perm: list[int] | None, opset: int, rng: np.random.Generator):
    x = normal(rng, 2, 3, 4)
    attributes = {} if perm is None else {"perm": perm}
    check_import(one_node("Transpose", {"x": x}, opset=opset, **attributes), {"x": x})


@pytest.mark.parametrize("opset", [11, 13, 14, 19, 21])
@pytest.mark.parametrize("shape", [[4, 6], [0, -1], [2, 0, 2, -1], [-1]])
def test_reshape(shape: list[int], opset: int, rng: np.random.Generator):
    x = normal(rng, 2, 3, 4)
    onnx_model = one_node("Reshape", {"x": x}, initializers={"shape": np.array(shape, np.int64)}, opset=opset)
    check_import(onnx_model, {"x": x})


def test_reshape_allowzero_keeps_an_empty_dimension(rng: np.random.Generator):
    x = normal(rng, 0, 3)
    shape = np.array([3, 0], np.int64)
    check_import(one_node("Reshape", {"x": x}, initializers={"shape": shape}, opset=14, allowzero=1), {"x": x})


def test_reshape_to_a_shape_computed_from_shapes(rng: np.random.Generator):
    """Shape -> Gather -> Concat chains (as exporters emit them) are evaluated at import time."""
    x, y = normal(rng, 2, 3, 4), normal(rng, 6, 4)
    nodes = [
        helper.make_node("Shape", ["x"], ["x_shape"]),
        helper.make_node("Gather", ["x_shape", "zero"], ["batch"], axis=0),
        helper.make_node("Unsqueeze", ["batch", "axes0"], ["batch1"]),
        helper.make_node("Concat", ["batch1", "minus_one"], ["target"], axis=0),
        helper.make_node("Reshape", ["y", "target"], ["y2"]),
        helper.make_node("Add", ["y2", "x"], ["sum"]),
    ]
    initializers = {
        "zero": np.array(0, np.int64),
        "axes0": np.array([0], np.int64),
        "minus_one": np.array([-1, 4], np.int64),
    }
    inputs = {"x": (TensorProto.FLOAT, [2, 3, 4]), "y": (TensorProto.FLOAT, [6, 4])}
    module_text = str(import_model(model(nodes, inputs, ["sum"], initializers, opset=13)))
    assert "graph.concat" not in module_text and "Gather" not in module_text
    check_import(model(nodes, inputs, ["sum"], initializers, opset=13), {"x": x, "y": y})


@pytest.mark.parametrize("opset", [11, 13, 21])
@pytest.mark.parametrize("axis", [0, 1, 2, -1, 3])
def test_flatten(axis: int, opset: int, rng: np.random.Generator):
    x = normal(rng, 2, 3, 4)
    check_import(one_node("Flatten", {"x": x}, opset=opset, axis=axis), {"x": x})


@pytest.mark.parametrize("opset", [11, 13, 21])
@pytest.mark.parametrize("axes", [[1], [1, -1], None])
def test_squeeze(axes: list[int] | None, opset: int, rng: np.random.Generator):
    x = normal(rng, 2, 1, 3, 1)
    if axes is None:
        onnx_model = one_node("Squeeze", {"x": x}, opset=opset)
    elif opset >= 13:
        onnx_model = one_node("Squeeze", {"x": x}, initializers={"axes": np.array(axes, np.int64)}, opset=opset)
    else:
        onnx_model = one_node("Squeeze", {"x": x}, opset=opset, axes=axes)
    check_import(onnx_model, {"x": x})


@pytest.mark.parametrize("opset", [11, 13, 21])
@pytest.mark.parametrize("axes", [[0], [1, -1], [3, 0]])
def test_unsqueeze(axes: list[int], opset: int, rng: np.random.Generator):
    x = normal(rng, 2, 3)
    if opset >= 13:
        onnx_model = one_node("Unsqueeze", {"x": x}, initializers={"axes": np.array(axes, np.int64)}, opset=opset)
    else:
        # (onnx's reference inserts the axes of version 11 in the order given, not sorted.)
        onnx_model = one_node("Unsqueeze", {"x": x}, opset=opset, axes=sorted(axes, key=lambda axis: axis % 4))
    check_import(onnx_model, {"x": x})


@pytest.mark.parametrize("opset", [11, 13, 21])
@pytest.mark.parametrize("shapes", [((3, 1), (2, 3, 4)), ((4,), (3, 1)), ((2, 1, 4), (1, 3, 1)), ((3,), (3,))])
def test_expand(shapes: tuple, opset: int, rng: np.random.Generator):
    x = normal(rng, *shapes[0])
    onnx_model = one_node("Expand", {"x": x}, initializers={"shape": np.array(shapes[1], np.int64)}, opset=opset)
    check_import(onnx_model, {"x": x})


@pytest.mark.parametrize("opset", [11, 13, 21])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concat(axis: int, opset: int, rng: np.random.Generator):
    inputs = {}
    for index, size in enumerate([1, 2, 3]):
        shape = [2, 3, 4]
        shape[axis] = size
        inputs[f"x{index}"] = normal(rng, *shape)
    check_import(one_node("Concat", inputs, opset=opset, axis=axis), inputs)


SLICES = [
    ([1], [3], None, None),
    ([0, 1], [2, -1], [0, 2], None),
    ([-1], [-1000], [1], [-1]),
    ([10], [0], [2], [-2]),
    ([0, 0], [100, 100], [-1, 1], [2, 3]),
    ([2, -3], [1, 9], [1, 0], [-1, 1]),
    ([-2], [9223372036854775807], [2], None),
]


@pytest.mark.parametrize("opset", [11, 13, 21])
@pytest.mark.parametrize("starts, ends, axes, steps", SLICES)
def test_slice(starts: list, ends: list, axes: list | None, steps: list | None, opset: int, rng: np.random.Generator):
    x = normal(rng, 4, 5, 6)
    initializers = {"starts": np.array(starts, np.int64), "ends": np.array(ends, np.int64)}
    names = ["x", "starts", "ends"]
    if axes is not None or steps is not None:
        initializers["axes"] = np.array(axes if axes is not None else list(range(len(starts))), np.int64)
        names.append("axes")
    if steps is not None:
        initializers["steps"] = np.array(steps, np.int64)
        names.append("steps")
    check_import(one_node("Slice", {"x": x}, initializers=initializers, input_names=names, opset=opset), {"x": x})


@pytest.mark.parametrize("opset, attributes, sizes", [
    (11, {"axis": 1}, None),
    (11, {"axis": -1, "split": [1, 3, 2]}, None),
    (13, {"axis": 1}, None),
    (13, {"axis": 2}, [4, 2]),
    (18, {"axis": 2, "num_outputs": 3}, None),
    (18, {"axis": 2, "num_outputs": 4}, None),
    (21, {"axis": 0}, [1, 1]),
])
def test_split(opset: int, attributes: dict, sizes: list | None, rng: np.random.Generator):
    x = normal(rng, 2, 3, 6)
    count = attributes.get("num_outputs") or (len(sizes) if sizes else len(attributes.get("split", [])) or 3)
    if opset < 18 and "num_outputs" not in attributes and sizes is None and "split" not in attributes:
        count = x.shape[attributes["axis"]]
    outputs = [f"y{index}" for index in range(count)]
    initializers = {"split": np.array(sizes, np.int64)} if sizes else None
    onnx_model = one_node("Split", {"x": x}, outputs=outputs, initializers=initializers, opset=opset, **attributes)
    check_import(onnx_model, {"x": x})


# -- identity-like ops and constants ------------------------------------------------------------


@pytest.mark.parametrize("opset", [11, 13, 16, 21])
def test_identity(opset: int, rng: np.random.Generator):
    x = normal(rng, 3, 2)
    nodes = [helper.make_node("Identity", ["x"], ["i"]), helper.make_node("Neg", ["i"], ["y"])]
    check_import(model(nodes, {"x": (TensorProto.FLOAT, [3, 2])}, ["y", "i"], opset=opset), {"x": x})


@pytest.mark.parametrize("opset", [7, 11, 12, 13, 21, 22])
def test_dropout_in_inference_is_the_identity(opset: int, rng: np.random.Generator):
    x = normal(rng, 4, 3)
    outputs = ["y", "mask"]
    if opset >= 12:
        ratio = {"ratio": np.array(0.3, np.float32)}
        onnx_model = one_node("Dropout", {"x": x}, outputs=outputs, initializers=ratio, opset=opset)
    else:
        onnx_model = one_node("Dropout", {"x": x}, outputs=outputs, opset=opset, ratio=0.3)
    if opset >= 10:
        check_import(onnx_model, {"x": x})
        return
    # Before version 10 the mask has the data's type (onnx's reference returns bool regardless).
    y, mask = run(import_model(onnx_model), "main", [x])
    np.testing.assert_array_equal(y, x)
    np.testing.assert_array_equal(mask, np.ones_like(x))


CONSTANTS = [
    {"value": numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3))},
    {"value": numpy_helper.from_array(np.array([1, -2, 3], dtype=np.int64))},
    {"value_float": 2.5},
    {"value_floats": [1.0, 2.0, 3.0]},
    {"value_int": 7},
    {"value_ints": [4, 5, 6]},
]


@pytest.mark.parametrize("opset", [13, 19, 21])
@pytest.mark.parametrize("attributes", CONSTANTS)
def test_constant(attributes: dict, opset: int):
    nodes = [helper.make_node("Constant", [], ["c"], **attributes), helper.make_node("Identity", ["c"], ["y"])]
    check_import(model(nodes, {}, ["y"], opset=opset), {})


def test_shape_and_constant_of_shape_as_tensors(rng: np.random.Generator):
    x = normal(rng, 2, 5)
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Shape", ["x"], ["last"], start=-1),
        helper.make_node("ConstantOfShape", ["shape"], ["filled"], value=numpy_helper.from_array(np.float32([1.5]))),
        helper.make_node("Add", ["filled", "x"], ["y"]),
    ]
    check_import(model(nodes, {"x": (TensorProto.FLOAT, [2, 5])}, ["y", "shape", "last"], opset=21), {"x": x})


def test_unmapped_op_on_constants_is_evaluated_at_import(rng: np.random.Generator):
    x = normal(rng, 3, 4)
    table = normal(rng, 5, 4)
    nodes = [
        helper.make_node("Gather", ["table", "indices"], ["rows"], axis=0),
        helper.make_node("Add", ["x", "rows"], ["y"]),
    ]
    initializers = {"table": table, "indices": np.array([4, 0, 2], np.int64)}
    check_import(model(nodes, {"x": (TensorProto.FLOAT, [3, 4])}, ["y"], initializers), {"x": x})


def test_initializers_become_dense_constants_also_when_large(rng: np.random.Generator):
    x = normal(rng, 1, 300)
    weights = normal(rng, 300, 300)
    onnx_model = one_node("Add", {"x": x}, initializers={"w": weights})
    text = str(import_model(onnx_model))
    assert 'graph.constant dense<"0x' in text
    check_import(onnx_model, {"x": x})


def test_graph_input_with_an_initializer_is_a_constant(rng: np.random.Generator):
    x = normal(rng, 2, 2)
    onnx_model = one_node("Add", {"x": x}, initializers={"w": normal(rng, 2, 2)})
    onnx_model.graph.input.append(helper.make_tensor_value_info("w", TensorProto.FLOAT, [2, 2]))
    function = import_model(onnx_model).body.block.first_op
    assert len(function.args) == 1
    check_import(onnx_model, {"x": x})


def test_awkward_value_names_become_valid_ssa_names(rng: np.random.Generator):
    x = normal(rng, 2)
    nodes = [
        helper.make_node("Neg", ["input.1"], ["/layer/Neg_output_0"]),
        helper.make_node("Abs", ["/layer/Neg_output_0"], ["7"]),
    ]
    onnx_model = model(nodes, {"input.1": (TensorProto.FLOAT, [2])}, ["7"])
    text = str(import_model(onnx_model))
    assert "%input.1" in text and "%_layer_Neg_output" in text and "%v7" in text
    check_import(onnx_model, {"input.1": x})


def test_entry_name_and_round_trip_through_mlc_opt(rng: np.random.Generator):
    x = normal(rng, 3)
    module = import_model(one_node("Sigmoid", {"x": x}), entry_name="forward")
    command = [sys.executable, "-m", "mlc.tools.mlc_opt"]
    result = subprocess.run(command, input=str(module), capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "func.func @forward(%x: tensor<3xf32>) -> tensor<3xf32>" in result.stdout


def test_input_shapes_fix_dynamic_dimensions():
    onnx_model = model([helper.make_node("Relu", ["x"], ["y"])], {"x": (TensorProto.FLOAT, ["batch", 3])}, ["y"])
    module = import_model(onnx_model, input_shapes={"x": [4, 3]})
    assert "tensor<4x3xf32>" in str(module)


# -- versions before opset 11 -------------------------------------------------------------------


@pytest.mark.parametrize("axis, shape", [(None, (4,)), (1, (3,)), (0, (2, 3)), (None, ())])
def test_legacy_broadcast_attribute(axis: int | None, shape: tuple, rng: np.random.Generator):
    a, b = normal(rng, 2, 3, 4), positive(rng, *shape)
    attributes = {"broadcast": 1} if axis is None else {"broadcast": 1, "axis": axis}
    onnx_model = one_node("Div", {"a": a, "b": b}, opset=6, **attributes)
    first = axis if axis is not None else 3 - len(shape)
    aligned = b.reshape(shape + (1,) * (3 - first - len(shape)))
    assert_within_import_bounds(import_model(onnx_model), [a, b], [a.astype(np.float64) / aligned], "numpy")


def test_legacy_attribute_forms(rng: np.random.Generator):
    """Clip-6 bounds, Slice-1 starts/ends/axes and Split-2 sizes are attributes."""
    x = normal(rng, 4, 6)
    check_import(one_node("Clip", {"x": x}, opset=6, min=-0.5, max=0.5), {"x": x})
    check_import(one_node("Slice", {"x": x}, opset=9, starts=[1, -4], ends=[3, 100], axes=[0, 1]), {"x": x})
    check_import(one_node("Split", {"x": x}, outputs=["a", "b"], opset=9, axis=1, split=[2, 4]), {"x": x})


PYTORCH_EXPORTS = Path(onnx.backend.test.__file__).parent / "data"


@pytest.mark.parametrize("suite", ["pytorch-converted", "pytorch-operator"])
def test_pytorch_exports_shipped_with_onnx_import_or_fail_clearly(suite: str):
    """PyTorch exports (mostly opset 6 to 9) in onnx's backend test data: each imports and computes
    its stored outputs, or raises OnnxImportError."""
    imported = 0
    for directory in sorted((PYTORCH_EXPORTS / suite).iterdir()):
        onnx_model = onnx.load(directory / "model.onnx")
        data = directory / "test_data_set_0"
        inputs = [numpy_helper.to_array(onnx.load_tensor(path)) for path in sorted(data.glob("input_*.pb"))]
        expected = [numpy_helper.to_array(onnx.load_tensor(path)) for path in sorted(data.glob("output_*.pb"))]
        try:
            module = import_model(onnx_model)
        except OnnxImportError:
            continue
        imported += 1
        assert_within_import_bounds(module, inputs, expected, f"{directory.name}'s stored outputs")
    assert imported >= {"pytorch-converted": 43, "pytorch-operator": 24}[suite]


# -- opset coverage ------------------------------------------------------------------------------

REQUIRED_OPS = (
    "Add Sub Mul Div Pow Max Min Neg Abs Exp Log Sqrt Reciprocal Tanh Sigmoid Relu Gelu Erf Where Equal Less Greater "
    "Cast MatMul Gemm Transpose Reshape Flatten Squeeze Unsqueeze Expand Concat Slice Softmax LayerNormalization "
    "ReduceSum ReduceMean ReduceMax ReduceMin Conv MaxPool AveragePool GlobalAveragePool BatchNormalization Identity "
    "Constant Dropout"
).split()


@pytest.mark.parametrize("op_type", REQUIRED_OPS)
def test_every_version_of_opsets_7_to_newest_is_mapped(op_type: str):
    """Each required op handles the schema version every opset from 7 on selects."""
    mapping = mappings()[op_type]
    for opset in range(7, onnx.defs.onnx_opset_version() + 1):
        try:
            version = onnx.defs.get_schema(op_type, opset, "").since_version
        except onnx.defs.SchemaError:
            continue  # the op does not exist yet at this opset (Gelu before 20)
        assert version in mapping.versions, f"{op_type} version {version} (opset {opset}) is not mapped"


# -- errors -----------------------------------------------------------------------------------


def _import_error(onnx_model: object, **keywords: object) -> str:
    with pytest.raises(OnnxImportError) as raised:
        import_model(onnx_model, **keywords)
    assert isinstance(raised.value, MlcError)
    return str(raised.value)


def test_unsupported_op_names_the_node():
    x = np.zeros((2, 3), np.float32)
    nodes = [
        helper.make_node("Relu", ["x"], ["r"]),
        helper.make_node("TopK", ["r", "k"], ["values", "indices"], name="top", axis=1),
    ]
    initializers = {"k": np.array([2], np.int64)}
    message = _import_error(model(nodes, {"x": (TensorProto.FLOAT, list(x.shape))}, ["values"], initializers))
    assert message.startswith("node #1 'top' (TopK): op TopK is not supported")


def test_unsupported_op_without_a_name_is_named_by_index():
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Tan", ["r"], ["y"])]
    onnx_model = model(nodes, {"x": (TensorProto.FLOAT, [2])}, ["y"])
    assert _import_error(onnx_model).startswith("node #1 (Tan): op Tan is not supported")


def test_misspelled_op_gets_a_suggestion():
    onnx_model = model([helper.make_node("Sofmax", ["x"], ["y"], name="s")], {"x": (TensorProto.FLOAT, [2])}, ["y"])
    assert "did you mean Softmax?" in _import_error(onnx_model)


def test_custom_domain_op_is_unsupported():
    node = helper.make_node("FusedGelu", ["x"], ["y"], domain="com.example", name="fg")
    onnx_model = model([node], {"x": (TensorProto.FLOAT, [2])}, ["y"])
    onnx_model.opset_import.append(helper.make_opsetid("com.example", 1))
    message = _import_error(onnx_model)
    assert message.startswith("node #0 'fg' (com.example.FusedGelu): op FusedGelu of domain 'com.example'")


def test_unsupported_op_version_is_named():
    node = helper.make_node("PRelu", ["x", "x"], ["y"], name="old")
    onnx_model = model([node], {"x": (TensorProto.FLOAT, [2])}, ["y"], opset=6)
    message = _import_error(onnx_model)
    assert message.startswith("node #0 'old' (PRelu): PRelu version 6 (selected by opset 6) is not supported")
    assert message.endswith("mlc maps versions 7, 9, 16")


def test_dynamic_input_shape_is_an_error():
    onnx_model = model([helper.make_node("Relu", ["x"], ["y"])], {"x": (TensorProto.FLOAT, ["batch", 3])}, ["y"])
    message = _import_error(onnx_model)
    assert "graph input 'x' has a dynamic dimension 'batch' (dimension 0)" in message


def test_unknown_rank_is_an_error():
    onnx_model = model([helper.make_node("Relu", ["x"], ["y"])], {"x": (TensorProto.FLOAT, None)}, ["y"])
    assert "graph input 'x' has an unknown rank" in _import_error(onnx_model)


def test_unsupported_input_dtype_is_an_error():
    onnx_model = model([helper.make_node("Relu", ["x"], ["y"])], {"x": (TensorProto.DOUBLE, [2])}, ["y"])
    assert "graph input 'x' has element type double, which mlc does not support" in _import_error(onnx_model)


def test_unsupported_initializer_dtype_names_the_node():
    onnx_model = one_node("Add", {"x": np.zeros(2, np.float32)}, initializers={"w": np.zeros(2, np.float64)})
    message = _import_error(onnx_model)
    assert message.startswith("node #0 'the_add' (Add): constant 'w' has element type float64")


def test_unsupported_cast_target_is_an_error():
    onnx_model = one_node("Cast", {"x": np.zeros(2, np.float32)}, to=TensorProto.DOUBLE)
    assert "casting to double is not supported" in _import_error(onnx_model)


def test_non_constant_shape_is_an_error():
    inputs = {"x": (TensorProto.FLOAT, [2, 3]), "shape": (TensorProto.INT64, [2])}
    onnx_model = model([helper.make_node("Reshape", ["x", "shape"], ["y"], name="r")], inputs, ["y"])
    message = _import_error(onnx_model)
    assert message.startswith("node #0 'r' (Reshape): input #1 (shape) 'shape' must be a constant")
    assert "depends on the data of graph input 'shape'" in message


def test_non_constant_shape_through_a_chain_names_the_chain():
    inputs = {"x": (TensorProto.FLOAT, [2, 3]), "n": (TensorProto.INT64, [1])}
    nodes = [
        helper.make_node("Concat", ["n", "n"], ["shape"], name="cat", axis=0),
        helper.make_node("Reshape", ["x", "shape"], ["y"], name="r"),
    ]
    message = _import_error(model(nodes, inputs, ["y"]))
    assert "graph input 'n' (through node #0 'cat' (Concat))" in message


def test_training_mode_is_an_error():
    x = np.zeros((2, 3), np.float32)
    initializers = {name: np.ones(3, np.float32) for name in ("scale", "bias", "mean", "var")}
    onnx_model = one_node("BatchNormalization", {"x": x}, initializers=initializers, opset=15, training_mode=1)
    assert "training mode is not supported" in _import_error(onnx_model)


def test_unsupported_attribute_value_is_an_error():
    onnx_model = one_node("Gelu", {"x": np.zeros(2, np.float32)}, opset=20, approximate="sigmoid")
    message = _import_error(onnx_model)
    assert message.startswith("node #0 'the_gelu' (Gelu): attribute approximate='sigmoid' is not supported")


def test_long_graphs_need_no_deep_recursion(rng: np.random.Generator):
    """A 3000-node chain to an unsupported op, and a 300-node chain computing a shape."""
    nodes = [helper.make_node("Neg", [f"v{index}"], [f"v{index + 1}"]) for index in range(3000)]
    nodes.append(helper.make_node("Tan", ["v3000"], ["y"], name="last"))
    onnx_model = model(nodes, {"v0": (TensorProto.FLOAT, [2])}, ["y"])
    assert _import_error(onnx_model).startswith("node #3000 'last' (Tan)")
    shape_chain = [helper.make_node("Add", [f"s{index}", "zero"], [f"s{index + 1}"]) for index in range(300)]
    nodes = [*shape_chain, helper.make_node("Reshape", ["x", "s300"], ["y"])]
    initializers = {"s0": np.array([3, 2], np.int64), "zero": np.array([0], np.int64)}
    x = normal(rng, 2, 3)
    check_import(model(nodes, {"x": (TensorProto.FLOAT, [2, 3])}, ["y"], initializers), {"x": x})


def test_evaluated_nodes_leave_no_graph_ops_behind(rng: np.random.Generator):
    x = normal(rng, 2, 4)
    nodes = [
        helper.make_node("Transpose", ["table"], ["table_t"]),
        helper.make_node("Tan", ["table_t"], ["rows"]),  # not mapped: evaluated at import time
        helper.make_node("Add", ["x", "rows"], ["y"]),
    ]
    initializers = {"table": normal(rng, 4, 2)}
    onnx_model = model(nodes, {"x": (TensorProto.FLOAT, [2, 4])}, ["y"], initializers)
    text = str(import_model(onnx_model))
    assert "graph.transpose" not in text and text.count("graph.constant") == 1
    check_import(onnx_model, {"x": x})


def test_dead_unsupported_nodes_are_not_imported(rng: np.random.Generator):
    x = normal(rng, 3)
    nodes = [helper.make_node("Tan", ["x"], ["unused"]), helper.make_node("Neg", ["x"], ["y"])]
    check_import(model(nodes, {"x": (TensorProto.FLOAT, [3])}, ["y"]), {"x": x})


def test_missing_file_and_garbage_are_errors(tmp_path: Path):
    assert _import_error(tmp_path / "missing.onnx").startswith("cannot read")
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(b"\xff\x00 not a model")
    assert "is not an ONNX model" in _import_error(garbage)


def test_input_shapes_must_name_inputs():
    onnx_model = model([helper.make_node("Relu", ["x"], ["y"])], {"x": (TensorProto.FLOAT, [3])}, ["y"])
    assert "input_shapes names 'z', which is not a graph input" in _import_error(onnx_model, input_shapes={"z": [3]})


# -- the acceptance models of issue 3 -------------------------------------------------------------


def test_mlp(rng: np.random.Generator):
    onnx_model, draw = mlp()
    check_import(onnx_model, draw(rng))


def test_cnn(rng: np.random.Generator):
    onnx_model, draw = cnn()
    check_import(onnx_model, draw(rng))


def test_transformer_block(rng: np.random.Generator):
    onnx_model, draw = transformer_block()
    check_import(onnx_model, draw(rng))


@pytest.mark.parametrize("build", [mlp, cnn, transformer_block])
def test_printed_modules_parse_back_and_compute_the_same(build, rng: np.random.Generator):
    onnx_model, draw = build()
    module = import_model(onnx_model)
    parsed, _ = parse_module(str(module), make_context())
    verify(parsed)
    inputs = list(draw(rng).values())
    for before, after in zip(run(module, "main", inputs), run(parsed, "main", inputs)):
        np.testing.assert_array_equal(before, after)


# -- the tool ---------------------------------------------------------------------------------


def _tool(*arguments: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "mlc.tools.mlc_import_onnx", *arguments]
    return subprocess.run(command, capture_output=True, text=True)


def test_tool_writes_the_module(tmp_path: Path):
    path = tmp_path / "model.onnx"
    onnx.save(one_node("Relu", {"x": np.zeros((2, 3), np.float32)}), path)
    output = tmp_path / "model.mlir"
    result = _tool(str(path), "-o", str(output), "--entry", "net")
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    text = output.read_text()
    assert "func.func @net(%x: tensor<2x3xf32>) -> tensor<2x3xf32>" in text
    assert "graph.relu %x : tensor<2x3xf32>" in text


def test_tool_prints_and_fixes_input_shapes(tmp_path: Path):
    path = tmp_path / "model.onnx"
    onnx.save(model([helper.make_node("Relu", ["x"], ["y"])], {"x": (TensorProto.FLOAT, ["n", 3])}, ["y"]), path)
    result = _tool(str(path), "--input-shape", "x=5x3")
    assert result.returncode == 0, result.stderr
    assert "tensor<5x3xf32>" in result.stdout


def test_tool_reports_errors_without_a_traceback(tmp_path: Path):
    path = tmp_path / "model.onnx"
    onnx.save(model([helper.make_node("Tan", ["x"], ["y"], name="sine")], {"x": (TensorProto.FLOAT, [2])}, ["y"]), path)
    result = _tool(str(path))
    assert result.returncode == 1
    assert result.stderr.startswith(f"mlc-import-onnx: error: {path}: node #0 'sine' (Tan): op Tan is not supported")
    assert "Traceback" not in result.stderr
    missing = _tool(str(tmp_path / "missing.onnx"))
    assert missing.returncode == 1 and "mlc-import-onnx: error: cannot read" in missing.stderr
    bad_shape = _tool(str(path), "--input-shape", "x=2xq")
    assert bad_shape.returncode == 2 and "Traceback" not in bad_shape.stderr


def test_graph_op_counts_are_what_the_mapping_says():
    """Gemm is matmul + mul + add; BatchNormalization is arithmetic; Identity adds nothing."""
    x = np.zeros((2, 4), np.float32)
    initializers = {"w": np.ones((4, 3), np.float32), "c": np.ones(3, np.float32)}
    text = str(import_model(one_node("Gemm", {"x": x}, initializers=initializers, alpha=2.0)))
    positions = [text.index(name) for name in ("graph.matmul", "graph.mul", "graph.add")]
    assert positions == sorted(positions)
    assert "graph.transpose" not in text
