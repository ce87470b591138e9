"""Small ONNX models built with `onnx.helper`, and how to check an import of them.

`model(...)` builds a one-graph model; `check_import(model, inputs)` imports it, runs the graph
interpreter and compares with `onnx.reference.ReferenceEvaluator` on the same inputs (floats
within the error bound derived for the imported function and the data, `assert_within_import_bounds`,
which the other import tests use for their numpy references too). The three
acceptance models of issue 3 (an MLP, a small CNN and a transformer block) are `mlp()`, `cnn()`
and `transformer_block()`; each returns the model and a function drawing fresh random inputs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from mlc.dialects.element_types import to_numpy_dtype
from mlc.frontend.onnx import import_model
from mlc.interpreter import run

Inputs = dict[str, np.ndarray]

NUMPY_TO_ONNX = {
    np.dtype(np.float32): TensorProto.FLOAT,
    np.dtype(np.float16): TensorProto.FLOAT16,
    np.dtype(np.float64): TensorProto.DOUBLE,
    np.dtype(np.int32): TensorProto.INT32,
    np.dtype(np.int64): TensorProto.INT64,
    np.dtype(np.bool_): TensorProto.BOOL,
}


def model(
    nodes: Sequence[onnx.NodeProto],
    inputs: dict[str, tuple[int, Sequence[int | str] | None]],
    outputs: Sequence[str],
    initializers: dict[str, np.ndarray] | None = None,
    opset: int = 21,
) -> onnx.ModelProto:
    """A model of `nodes`; `inputs` maps names to (ONNX element type, shape); outputs are untyped."""
    graph = helper.make_graph(
        list(nodes),
        "test",
        [helper.make_tensor_value_info(name, element, shape) for name, (element, shape) in inputs.items()],
        [helper.make_empty_tensor_value_info(name) for name in outputs],
        initializer=[numpy_helper.from_array(value, name) for name, value in (initializers or {}).items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def one_node(
    op_type: str,
    inputs: dict[str, np.ndarray],
    outputs: Sequence[str] = ("y",),
    opset: int = 21,
    initializers: dict[str, np.ndarray] | None = None,
    input_names: Sequence[str] | None = None,
    **attributes: object,
) -> onnx.ModelProto:
    """A model of one node whose graph inputs have the shapes and types of `inputs`' arrays.

    `input_names` orders the node's inputs (with "" for an absent optional one) when they are
    not simply the graph inputs followed by the initializers.
    """
    names = list(input_names) if input_names is not None else [*inputs, *(initializers or {})]
    node = helper.make_node(op_type, names, list(outputs), name=f"the_{op_type.lower()}", **attributes)
    graph_inputs = {name: (NUMPY_TO_ONNX[value.dtype], value.shape) for name, value in inputs.items()}
    return model([node], graph_inputs, outputs, initializers, opset)


def reference(onnx_model: onnx.ModelProto, inputs: Inputs) -> list[np.ndarray]:
    return [np.asarray(value) for value in ReferenceEvaluator(onnx_model).run(None, inputs)]


def assert_within_import_bounds(module, arguments: list[np.ndarray], references: list[np.ndarray], label: str = "") -> None:
    """Another implementation's results (`references`: ONNX's reference evaluator, numpy, stored
    PyTorch outputs) of the function imported as `module`, on `arguments`, each rounded once to the
    type of the function's result, are within the error bound `error_bounds.result_bounds` derives
    for the function and the data: the interpreter and any implementation computing in f32 with the
    stated accuracy of the math functions agree that closely (`programs.bounded_comparison`;
    integers exactly where the values are certain; NaN and infinities in the same places)."""
    from programs import bounded_comparison, main_function

    result_types = main_function(module).function_type.outputs.data
    rounded = [np.asarray(reference).astype(to_numpy_dtype(t.element_type)) for reference, t in zip(references, result_types, strict=True)]
    failure = bounded_comparison(module, arguments, rounded).failure
    assert failure is None, f"{label}: beyond the derived error bound: {failure}"


def check_import(onnx_model: onnx.ModelProto, inputs: Inputs) -> list[np.ndarray]:
    """Imports `onnx_model`, interprets it and compares with ONNX's reference (integers exactly,
    floats within the derived error bound: `assert_within_import_bounds`); returns mlc's results."""
    module = import_model(onnx_model)
    initializers = {tensor.name for tensor in onnx_model.graph.initializer}
    argument_order = [value.name for value in onnx_model.graph.input if value.name not in initializers]
    arguments = [inputs[name] for name in argument_order]
    actual = run(module, "main", list(arguments))
    expected = reference(onnx_model, inputs)
    assert len(actual) == len(expected)
    for index, (got, want) in enumerate(zip(actual, expected)):
        assert got.shape == want.shape, f"output #{index}: shape {got.shape}, expected {want.shape}"
        assert got.dtype == want.dtype, f"output #{index}: dtype {got.dtype}, expected {want.dtype}"
        if not np.issubdtype(want.dtype, np.floating):
            np.testing.assert_array_equal(got, want, err_msg=f"output #{index}")
    assert_within_import_bounds(module, arguments, expected, "ONNX's reference")
    return actual


def _weights(rng: np.random.Generator, *shape: int) -> np.ndarray:
    scale = 1.0 / math.sqrt(shape[-1] if len(shape) > 1 else shape[0])
    return (rng.standard_normal(shape) * scale).astype(np.float32)


ModelAndInputs = tuple[onnx.ModelProto, Callable[[np.random.Generator], Inputs]]


def mlp(batch: int = 8, features: int = 16, hidden: int = 32, classes: int = 10) -> ModelAndInputs:
    """x -> MatMul + Add -> Relu -> Gemm -> Softmax (opset 17)."""
    rng = np.random.default_rng(1)
    weights = {
        "w1": _weights(rng, features, hidden),
        "b1": _weights(rng, hidden),
        "w2": _weights(rng, classes, hidden),  # Gemm with transB, as torch exports Linear
        "b2": _weights(rng, classes),
    }
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h0"], name="fc1"),
        helper.make_node("Add", ["h0", "b1"], ["h1"], name="fc1_bias"),
        helper.make_node("Relu", ["h1"], ["h2"], name="relu"),
        helper.make_node("Gemm", ["h2", "w2", "b2"], ["logits"], name="fc2", transB=1),
        helper.make_node("Softmax", ["logits"], ["probabilities"], name="softmax", axis=-1),
    ]
    onnx_model = model(nodes, {"x": (TensorProto.FLOAT, [batch, features])}, ["probabilities"], weights, opset=17)
    return onnx_model, lambda rng: {"x": rng.standard_normal((batch, features)).astype(np.float32)}


def cnn(batch: int = 2, channels: int = 3, size: int = 12, classes: int = 5) -> ModelAndInputs:
    """Conv -> BatchNormalization -> Relu -> MaxPool -> Conv -> Relu -> GlobalAveragePool ->
    Flatten -> Gemm (opset 15: onnx's reference runs BatchNormalization-9 in training mode)."""
    rng = np.random.default_rng(2)
    weights = {
        "conv1_w": _weights(rng, 8, channels, 3, 3),
        "conv1_b": _weights(rng, 8),
        "bn_scale": (1 + 0.1 * rng.standard_normal(8)).astype(np.float32),
        "bn_bias": _weights(rng, 8),
        "bn_mean": (0.1 * rng.standard_normal(8)).astype(np.float32),
        "bn_var": (1 + 0.1 * rng.random(8)).astype(np.float32),
        "conv2_w": _weights(rng, 16, 8, 3, 3),
        "fc_w": _weights(rng, classes, 16),
        "fc_b": _weights(rng, classes),
    }
    nodes = [
        helper.make_node("Conv", ["x", "conv1_w", "conv1_b"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c1", "bn_scale", "bn_bias", "bn_mean", "bn_var"], ["n1"], name="bn1"),
        helper.make_node("Relu", ["n1"], ["r1"], name="relu1"),
        helper.make_node("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p1", "conv2_w"], ["c2"], name="conv2", strides=[2, 2], auto_pad="SAME_UPPER"),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("GlobalAveragePool", ["r2"], ["g"], name="gap"),
        helper.make_node("Flatten", ["g"], ["f"], name="flatten"),
        helper.make_node("Gemm", ["f", "fc_w", "fc_b"], ["logits"], name="fc", transB=1),
    ]
    shape = [batch, channels, size, size]
    onnx_model = model(nodes, {"x": (TensorProto.FLOAT, shape)}, ["logits"], weights, opset=15)
    return onnx_model, lambda rng: {"x": rng.standard_normal(shape).astype(np.float32)}


def transformer_block(batch: int = 2, tokens: int = 8, width: int = 16, heads: int = 2) -> ModelAndInputs:
    """A pre-norm encoder block as exporters emit it (opset 20): LayerNormalization, a fused QKV
    projection Split into heads by Reshape/Transpose, scaled dot-product attention with Softmax,
    the output projection and residual Add, then LayerNormalization, MatMul, Gelu, MatMul, Add."""
    rng = np.random.default_rng(3)
    head = width // heads
    weights = {
        "ln1_scale": (1 + 0.1 * rng.standard_normal(width)).astype(np.float32),
        "ln1_bias": _weights(rng, width),
        "qkv_w": _weights(rng, width, 3 * width),
        "qkv_b": _weights(rng, 3 * width),
        "out_w": _weights(rng, width, width),
        "out_b": _weights(rng, width),
        "ln2_scale": (1 + 0.1 * rng.standard_normal(width)).astype(np.float32),
        "ln2_bias": _weights(rng, width),
        "up_w": _weights(rng, width, 4 * width),
        "up_b": _weights(rng, 4 * width),
        "down_w": _weights(rng, 4 * width, width),
        "down_b": _weights(rng, width),
        "heads_shape": np.array([batch, tokens, heads, head], dtype=np.int64),
        "merged_shape": np.array([batch, tokens, width], dtype=np.int64),
        "split_sizes": np.array([width, width, width], dtype=np.int64),
        "scale": np.array(1.0 / math.sqrt(head), dtype=np.float32),
    }
    node = helper.make_node
    nodes = [
        node("LayerNormalization", ["x", "ln1_scale", "ln1_bias"], ["n1"], name="ln1", axis=-1, epsilon=1e-5),
        node("MatMul", ["n1", "qkv_w"], ["qkv0"], name="qkv"),
        node("Add", ["qkv0", "qkv_b"], ["qkv1"], name="qkv_bias"),
        node("Split", ["qkv1", "split_sizes"], ["q0", "k0", "v0"], name="split_qkv", axis=-1),
        *[node("Reshape", [f"{t}0", "heads_shape"], [f"{t}1"], name=f"{t}_heads") for t in "qkv"],
        node("Transpose", ["q1"], ["q"], name="q_t", perm=[0, 2, 1, 3]),
        node("Transpose", ["k1"], ["kt"], name="k_t", perm=[0, 2, 3, 1]),
        node("Transpose", ["v1"], ["v"], name="v_t", perm=[0, 2, 1, 3]),
        node("MatMul", ["q", "kt"], ["scores0"], name="scores"),
        node("Mul", ["scores0", "scale"], ["scores1"], name="scale_scores"),
        node("Softmax", ["scores1"], ["attention"], name="softmax", axis=-1),
        node("MatMul", ["attention", "v"], ["context0"], name="context"),
        node("Transpose", ["context0"], ["context1"], name="merge_t", perm=[0, 2, 1, 3]),
        node("Reshape", ["context1", "merged_shape"], ["context"], name="merge_heads"),
        node("MatMul", ["context", "out_w"], ["projected0"], name="out_proj"),
        node("Add", ["projected0", "out_b"], ["projected"], name="out_bias"),
        node("Add", ["x", "projected"], ["residual1"], name="residual1"),
        node("LayerNormalization", ["residual1", "ln2_scale", "ln2_bias"], ["n2"], name="ln2"),
        node("MatMul", ["n2", "up_w"], ["up0"], name="up"),
        node("Add", ["up0", "up_b"], ["up1"], name="up_bias"),
        node("Gelu", ["up1"], ["activated"], name="gelu", approximate="tanh"),
        node("MatMul", ["activated", "down_w"], ["down0"], name="down"),
        node("Add", ["down0", "down_b"], ["down1"], name="down_bias"),
        node("Add", ["residual1", "down1"], ["y"], name="residual2"),
    ]
    shape = [batch, tokens, width]
    onnx_model = model(nodes, {"x": (TensorProto.FLOAT, shape)}, ["y"], weights, opset=20)
    return onnx_model, lambda rng: {"x": rng.standard_normal(shape).astype(np.float32)}
