"""Mutated ONNX models: whatever is done to a valid model, import succeeds or fails cleanly.

Hypothesis mutates one small model that uses many mapped ops (convolution, normalisation, pooling,
matmul, a Gather evaluated at import time, split, reshapes, comparisons, casts): its serialised
bytes (bytes overwritten, deleted or inserted) or its structure (node inputs and outputs renamed,
ops swapped, attributes given hostile values or added, nodes dropped, the opset changed). The
import must return a module or raise `OnnxImportError`, never another exception, and never one
that blames mlc ("a bug in mlc"). Mutations like these found the refusals of text that is not
UTF-8, of 0/1 attributes with other values, of Concat over different ranks and of zero strides.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

onnx = pytest.importorskip("onnx")
from onnx import AttributeProto, ModelProto, TensorProto, helper, numpy_helper  # noqa: E402

from mlc.frontend.onnx import OnnxImportError, import_model  # noqa: E402
from mlc.frontend.onnx.registry import mappings  # noqa: E402


def _model() -> ModelProto:
    f32 = np.float32
    nodes = [
        helper.make_node("Conv", ["x", "conv_w", "conv_b"], ["conv"], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["conv", "scale", "bias", "mean", "var"], ["norm"]),
        helper.make_node("MaxPool", ["norm"], ["pool"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["pool"], ["flat"], axis=1),
        helper.make_node("MatMul", ["flat", "dense_w"], ["dense"]),
        helper.make_node("Gather", ["table", "index"], ["row"], axis=0),
        helper.make_node("Add", ["dense", "row"], ["sum"]),
        helper.make_node("Split", ["sum", "sizes"], ["left", "right"], axis=1),
        helper.make_node("Unsqueeze", ["left", "zero"], ["lifted"]),
        helper.make_node("ReduceSum", ["lifted", "zero"], ["reduced"], keepdims=0),
        helper.make_node("Greater", ["reduced", "right"], ["greater"]),
        helper.make_node("Where", ["greater", "reduced", "right"], ["chosen"]),
        helper.make_node("Cast", ["chosen"], ["half"], to=TensorProto.FLOAT16),
        helper.make_node("Softmax", ["half"], ["y"], axis=-1),
    ]
    initializers = {
        "conv_w": np.ones((4, 3, 3, 3), f32),
        "conv_b": np.ones(4, f32),
        "scale": np.ones(4, f32),
        "bias": np.zeros(4, f32),
        "mean": np.zeros(4, f32),
        "var": np.ones(4, f32),
        "dense_w": np.ones((16, 6), f32),
        "table": np.ones((5, 6), f32),
        "index": np.array([1], np.int64),
        "sizes": np.array([3, 3], np.int64),
        "zero": np.array([0], np.int64),
    }
    graph = helper.make_graph(
        nodes,
        "mutated",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT16, None)],
        initializer=[numpy_helper.from_array(value, name) for name, value in initializers.items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


MODEL = _model()
VALUE_NAMES = sorted({name for node in MODEL.graph.node for name in [*node.input, *node.output]} | {"", "nowhere"})
HOSTILE_INTS = [-(2**40), -100, -3, -1, 0, 1, 2, 3, 100, 2**40]


def _refused_cleanly_or_imported(source: ModelProto | bytes) -> None:
    try:
        import_model(source)
    except OnnxImportError as error:
        assert "a bug in mlc" not in str(error), str(error)


def test_the_model_imports_before_mutation():
    import_model(MODEL)


byte_edits = st.lists(
    st.tuples(st.sampled_from(["overwrite", "delete", "insert"]), st.floats(0, 1, exclude_max=True), st.binary(min_size=1, max_size=4)),
    min_size=1,
    max_size=4,
)


@settings(max_examples=300)
@given(byte_edits)
def test_mutated_bytes(edits: list[tuple[str, float, bytes]]):
    data = bytearray(MODEL.SerializeToString())
    for kind, where, payload in edits:
        position = int(where * len(data))
        if kind == "overwrite":
            data[position : position + len(payload)] = payload
        elif kind == "delete":
            del data[position : position + len(payload)]
        else:
            data[position:position] = payload
    _refused_cleanly_or_imported(bytes(data))


@st.composite
def structural_edit(draw: st.DrawFn) -> tuple:
    kind = draw(st.sampled_from(["input", "output", "op", "attribute", "extra-attribute", "drop", "opset"]))
    node = draw(st.integers(0, len(MODEL.graph.node) - 1))
    return kind, node, draw(st.integers(0, 2**16))


def _apply(model: ModelProto, edit: tuple) -> None:
    kind, index, choice = edit
    nodes = model.graph.node
    node = nodes[index % len(nodes)]
    if kind == "input" and node.input:
        node.input[choice % len(node.input)] = VALUE_NAMES[choice % len(VALUE_NAMES)]
    elif kind == "output":
        node.output[choice % len(node.output)] = VALUE_NAMES[choice % len(VALUE_NAMES)]
    elif kind == "op":
        ops = sorted(mappings())
        node.op_type = ops[choice % len(ops)]
    elif kind == "attribute" and node.attribute:
        attribute = node.attribute[choice % len(node.attribute)]
        if attribute.type == AttributeProto.INT:
            attribute.i = HOSTILE_INTS[choice % len(HOSTILE_INTS)]
        elif attribute.type == AttributeProto.INTS:
            attribute.ints[:] = [HOSTILE_INTS[(choice >> shift) % len(HOSTILE_INTS)] for shift in range(choice % 5)]
    elif kind == "extra-attribute":
        name = ["axis", "perm", "keepdims", "alpha", "to", "strides"][choice % 6]
        value = [1, 0.5, [1, 0], "text", -(2**40)][choice % 5]
        node.attribute.append(helper.make_attribute(name, value))
    elif kind == "drop" and len(nodes) > 1:
        nodes.remove(node)
    elif kind == "opset":
        model.opset_import[0].version = [1, 6, 7, 9, 11, 13, 17, 18, 21, 22][choice % 10]


@settings(max_examples=300)
@given(st.lists(structural_edit(), min_size=1, max_size=3))
def test_mutated_structure(edits: list[tuple]):
    model = ModelProto()
    model.CopyFrom(MODEL)
    for edit in edits:
        _apply(model, edit)
    _refused_cleanly_or_imported(model)
