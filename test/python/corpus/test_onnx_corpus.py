"""The malformed-input corpus of ONNX import: `mlc-import-onnx` and `mlc.frontend.onnx.import_model`.

Each row of `CASES` writes one bad input into a fresh directory (a model built with `onnx.helper`,
a file that is not a model, a stored file of `test/corpus/onnx/`, external data pointing
elsewhere) and gives the pattern its message must match. Every row is refused

* by `import_model(path)` with an `OnnxImportError` (an `MlcError`) whose message matches, and
* by the tool's `main` in this process: exit code 1, the message on stderr after the tool's
  `error:` prefix, no traceback.

The rows of `PROCESS_CASES` (one or two of each kind) also run the console script as its own
process (`corpus_support.run_tool`, about 1 s each), which checks what a user sees. `TOOL_CASES`
are failures of the tool alone (its arguments, its output file), `API_CASES` of the API alone
(bytes and `ModelProto`s, which have no directory for external data).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from corpus_support import CORPUS, assert_clean_failure, assert_no_traceback, run_tool  # noqa: E402
from onnx import ModelProto, TensorProto, helper, numpy_helper  # noqa: E402

from mlc.errors import MlcError  # noqa: E402
from mlc.frontend.onnx import ImportLimits, OnnxImportError, import_model  # noqa: E402
from mlc.frontend.onnx.limits import LIMIT_OPTIONS  # noqa: E402
from mlc.tools.mlc_import_onnx import main  # noqa: E402

FLOAT_2X3 = {"x": (TensorProto.FLOAT, [2, 3])}


# -- building bad models ---------------------------------------------------------------------------


def graph_model(
    nodes: Sequence[onnx.NodeProto],
    inputs: dict[str, tuple[int, Sequence[int | str] | None]] = FLOAT_2X3,
    outputs: Sequence[str] = ("y",),
    initializers: Sequence[TensorProto] = (),
    opsets: dict[str, int] | None = None,
) -> ModelProto:
    """A model of `nodes`; `inputs` maps names to (element type, shape); outputs are untyped."""
    graph = helper.make_graph(
        list(nodes),
        "corpus",
        [helper.make_tensor_value_info(name, element, shape) for name, (element, shape) in inputs.items()],
        [helper.make_empty_tensor_value_info(name) for name in outputs],
        initializer=list(initializers),
    )
    opset_imports = [helper.make_opsetid(domain, version) for domain, version in (opsets or {"": 21}).items()]
    return helper.make_model(graph, opset_imports=opset_imports)


def node(op_type: str, inputs: Sequence[str], outputs: Sequence[str] = ("y",), **attributes: object) -> onnx.NodeProto:
    """A node named after its op in lower case, so that messages can be matched by name."""
    return helper.make_node(op_type, list(inputs), list(outputs), name=op_type.lower(), **attributes)


def int64s(name: str, *values: int) -> TensorProto:
    """A 1-D int64 initializer of `values`; a scalar when there is one value."""
    return numpy_helper.from_array(np.array(values if len(values) != 1 else values[0], np.int64), name)


def weight(name: str = "w") -> TensorProto:
    return numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3), name)


def save(model: ModelProto, directory: Path, name: str = "model.onnx") -> Path:
    """Writes the serialised model itself: `onnx.save` would act on its external-data entries."""
    path = directory / name
    path.write_bytes(model.SerializeToString())
    return path


def writes(build: Callable[[], ModelProto]) -> Callable[[Path], Path]:
    return lambda directory: save(build(), directory)


def with_external_weight(directory: Path, **entries: str) -> Path:
    """`y = x + w` with the 2x3 float weight `w` stored in `w.bin` beside the model (24 bytes),
    described by the external-data `entries` (location, offset, length)."""
    tensor = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[2, 3], data_location=TensorProto.EXTERNAL)
    for key, value in entries.items():
        tensor.external_data.add(key=key, value=value)
    (directory / "w.bin").write_bytes(np.arange(6, dtype=np.float32).tobytes())
    return save(graph_model([node("Add", ["x", "w"])], initializers=[tensor]), directory)


def outside_the_directory(directory: Path) -> Path:
    """A data file beside the model's directory, and the model in a directory of its own."""
    (directory / "secret.bin").write_bytes(b"\x00" * 24)
    inner = directory / "model"
    inner.mkdir()
    return inner


def external_data_through_a_symlink(directory: Path) -> Path:
    inner = outside_the_directory(directory)
    (inner / "link.bin").symlink_to(directory / "secret.bin")
    return with_external_weight(inner, location="link.bin")


def nested_ifs(depth: int) -> ModelProto:
    """`depth` If nodes, each in the then-branch of the one before; every else-branch is a leaf."""
    leaf = helper.make_graph(
        [helper.make_node("Constant", [], ["leaf"], value_floats=[1.0])],
        "leaf",
        [],
        [helper.make_tensor_value_info("leaf", TensorProto.FLOAT, [1])],
    )
    branch = leaf
    for level in range(depth):
        output = helper.make_tensor_value_info(f"o{level}", TensorProto.FLOAT, [1])
        inner = helper.make_node("If", ["c"], [output.name], then_branch=branch, else_branch=leaf)
        branch = helper.make_graph([inner], f"level{level}", [], [output])
    condition = numpy_helper.from_array(np.array(True), "c")
    return graph_model(list(branch.node), {}, [branch.output[0].name], [condition])


def _varint(value: int) -> bytes:
    encoded = bytearray()
    while True:
        encoded.append(value & 0x7F | (0x80 if value > 0x7F else 0))
        value >>= 7
        if not value:
            return bytes(encoded)


def _message_field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def too_deep_to_parse(directory: Path) -> Path:
    """Subgraphs nested 60 deep, written as protobuf wire format directly (onnx.helper cannot
    build what protobuf cannot parse): graph.node(1) -> node.attribute(5) -> attribute.g(6)."""
    graph = _message_field(2, b"leaf")
    for _ in range(60):
        attribute = _message_field(1, b"then_branch") + _varint(20 << 3) + _varint(5) + _message_field(6, graph)
        graph = _message_field(1, _message_field(4, b"If") + _message_field(5, attribute))
    model = _varint(1 << 3) + _varint(8) + _message_field(7, graph) + _message_field(8, _varint(2 << 3) + _varint(21))
    path = directory / "deep.onnx"
    path.write_bytes(model)
    return path


def recursive_function() -> ModelProto:
    body = [helper.make_node("F", ["a"], ["b"], domain="local")]
    function = helper.make_function("local", "F", ["a"], ["b"], body, [helper.make_opsetid("", 21)])
    model = graph_model([helper.make_node("F", ["x"], ["y"], domain="local", name="call")], opsets={"": 21, "local": 1})
    model.functions.append(function)
    return model


def nested_function_calls(depth: int) -> ModelProto:
    """Local functions F0 ... F{depth-1}, each calling the next; the graph calls F0."""
    opsets = [helper.make_opsetid("", 21), helper.make_opsetid("local", 1)]
    functions = [
        helper.make_function(
            "local",
            f"F{level}",
            ["a"],
            ["b"],
            [helper.make_node(f"F{level + 1}", ["a"], ["b"], domain="local")],
            opsets,
        )
        for level in range(depth - 1)
    ]
    functions.append(
        helper.make_function("local", f"F{depth - 1}", ["a"], ["b"], [helper.make_node("Relu", ["a"], ["b"])], opsets)
    )
    model = graph_model(
        [helper.make_node("F0", ["x"], ["y"], domain="local", name="call")], opsets={"": 21, "local": 1}
    )
    model.functions.extend(functions)
    return model


def constant_with_external_data(directory: Path) -> Path:
    """A Constant node whose value tensor points outside the model's directory."""
    inner = outside_the_directory(directory)
    value = TensorProto(name="v", data_type=TensorProto.FLOAT, dims=[2, 3], data_location=TensorProto.EXTERNAL)
    value.external_data.add(key="location", value="../secret.bin")
    nodes = [node("Constant", [], ["c"], value=value), node("Add", ["x", "c"])]
    return save(graph_model(nodes), inner)


def stored(name: str) -> Callable[[Path], Path]:
    return lambda directory: CORPUS / "onnx" / name


def write_bytes(name: str, data: bytes) -> Callable[[Path], Path]:
    def write(directory: Path) -> Path:
        path = directory / name
        path.write_bytes(data)
        return path

    return write


def a_directory(directory: Path) -> Path:
    path = directory / "model.onnx"
    path.mkdir()
    return path


def a_fifo(directory: Path) -> Path:
    path = directory / "model.onnx"
    os.mkfifo(path)
    return path


# -- the corpus ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    id: str
    write: Callable[[Path], Path]
    """Writes the input into the directory it is given; returns the path to import."""
    pattern: str
    """A regular expression the message must match (searched for)."""
    limits: dict[str, int] = field(default_factory=dict)
    """`ImportLimits` fields other than their defaults (passed to the tool as its options)."""

    def options(self) -> list[str]:
        return [text for name, value in self.limits.items() for text in (LIMIT_OPTIONS[name], str(value))]


CASES = [
    # Files that are not models.
    Case("missing-file", lambda directory: directory / "missing.onnx", r"cannot read \S*missing\.onnx: no such file"),
    Case("directory", a_directory, r"cannot read \S*model\.onnx: it is a directory, not a model file"),
    Case("fifo", a_fifo, r"cannot read \S*model\.onnx: not a regular file"),
    Case("empty-file", write_bytes("empty.onnx", b""), r"empty\.onnx is not an ONNX model: it is empty"),
    Case("text-file", write_bytes("notes.onnx", b"hello, I am text\n"), r"notes\.onnx is not an ONNX model: protobuf"),
    Case("truncated-file", stored("truncated.onnx"), r"truncated\.onnx is not an ONNX model: protobuf cannot parse it"),
    Case("corrupt-bytes", stored("corrupt.onnx"), r"corrupt\.onnx is not an ONNX model: protobuf cannot parse it"),
    Case("no-graph", writes(lambda: ModelProto(ir_version=8)), r"is not an ONNX model: it has no graph"),
    Case(
        "file-over-the-size-limit",
        writes(lambda: graph_model([node("Relu", ["x"])])),
        r"model\.onnx is \d+ bytes, more than the maximum of 32 \(max_model_bytes, --max-model-size\)",
        {"max_model_bytes": 32},
    ),
    # Opsets and ops.
    Case(
        "no-default-opset",
        writes(lambda: graph_model([node("Relu", ["x"])], opsets={"com.example": 1})),
        r"imports no opset of the default ONNX domain",
    ),
    Case(
        "opset-zero",
        writes(lambda: graph_model([node("Relu", ["x"])], opsets={"": 0})),
        r"opset 0 .* opsets start at 1",
    ),
    Case(
        "opset-too-new",
        writes(lambda: graph_model([node("Relu", ["x"])], opsets={"": 999})),
        r"opset 999, newer than the installed onnx package knows",
    ),
    Case(
        "opset-too-old",
        writes(lambda: graph_model([node("Relu", ["x"])], opsets={"": 1})),
        r"node #0 'relu' \(Relu\): Relu version 1 \(selected by opset 1\) is not supported; mlc maps versions",
    ),
    Case(
        "op-of-an-unknown-domain",
        writes(
            lambda: graph_model(
                [helper.make_node("FusedGelu", ["x"], ["y"], domain="com.example", name="fused")],
                opsets={"": 21, "com.example": 1},
            )
        ),
        r"node #0 'fused' \(com\.example\.FusedGelu\): op FusedGelu of domain 'com\.example' is not supported",
    ),
    Case(
        "unsupported-op",
        writes(lambda: graph_model([node("Tan", ["x"])])),
        r"node #0 'tan' \(Tan\): op Tan is not supported",
    ),
    # Shapes and element types.
    Case(
        "symbolic-dimension",
        writes(lambda: graph_model([node("Relu", ["x"])], {"x": (TensorProto.FLOAT, ["batch", 3])})),
        r"graph input 'x' has a dynamic dimension 'batch' \(dimension 0\)",
    ),
    Case(
        "unknown-rank",
        writes(lambda: graph_model([node("Relu", ["x"])], {"x": (TensorProto.FLOAT, None)})),
        r"graph input 'x' has an unknown rank",
    ),
    Case(
        "negative-dimension",
        writes(lambda: graph_model([node("Relu", ["x"])], {"x": (TensorProto.FLOAT, [2, -3])})),
        r"graph input 'x' has a negative dimension -3 \(dimension 1\)",
    ),
    Case(
        "float64-input",
        writes(lambda: graph_model([node("Relu", ["x"])], {"x": (TensorProto.DOUBLE, [2])})),
        r"graph input 'x' has element type double, which mlc does not support",
    ),
    Case(
        "uint8-initializer",
        writes(
            lambda: graph_model(
                [node("Identity", ["u"])], {}, initializers=[numpy_helper.from_array(np.zeros(2, np.uint8), "u")]
            )
        ),
        r"node #0 'identity' \(Identity\): constant 'u' has element type uint8",
    ),
    Case(
        "string-initializer",
        writes(
            lambda: graph_model(
                [node("Identity", ["s"])], {}, initializers=[helper.make_tensor("s", TensorProto.STRING, [1], [b"a"])]
            )
        ),
        r"node #0 'identity' \(Identity\): constant 's' has element type string, which mlc does not support",
    ),
    # The graph's structure.
    Case(
        "cycle",
        writes(lambda: graph_model([node("Relu", ["b"], ["a"]), node("Neg", ["a"], ["b"]), node("Add", ["x", "a"])])),
        r"the graph has a cycle: node #0 'relu' \(Relu\) reads 'b', written by node #1 'neg' \(Neg\), "
        r"which reads 'a', written by node #0 'relu' \(Relu\)",
    ),
    Case(
        "node-reading-its-own-output",
        writes(lambda: graph_model([node("Add", ["x", "y"])])),
        r"the graph has a cycle: node #0 'add' \(Add\) reads 'y', written by node #0 'add' \(Add\)",
    ),
    Case(
        "nodes-out-of-order",
        writes(lambda: graph_model([node("Neg", ["a"]), node("Relu", ["x"], ["a"])])),
        r"node #0 'neg' \(Neg\): input 'a' is written by a later node, node #1 'relu' \(Relu\); "
        r"ONNX graphs list their nodes in topological order",
    ),
    Case(
        "dangling-input",
        writes(lambda: graph_model([node("Add", ["x", "ghost"])])),
        r"node #0 'add' \(Add\): input #1 'ghost' is not defined by any node, initializer or graph input",
    ),
    Case(
        "dangling-input-of-a-dead-node",
        writes(lambda: graph_model([node("Add", ["x", "ghost"], ["unused"]), node("Neg", ["x"])])),
        r"node #0 'add' \(Add\): input #1 'ghost' is not defined",
    ),
    Case(
        "output-nothing-computes",
        writes(lambda: graph_model([node("Relu", ["x"])], outputs=["y", "nothing"])),
        r"graph output 'nothing' is not computed by any node, and is not a graph input or initializer",
    ),
    Case(
        "two-nodes-write-one-value",
        writes(lambda: graph_model([node("Relu", ["x"]), node("Neg", ["x"])])),
        r"node #1 'neg' \(Neg\): output 'y' is defined twice: node #0 'relu' \(Relu\) also writes it",
    ),
    Case(
        "node-overwrites-a-graph-input",
        writes(lambda: graph_model([node("Relu", ["x"], ["x"])], outputs=["x"])),
        r"node #0 'relu' \(Relu\): output 'x' is also a graph input",
    ),
    Case(
        "initializer-defined-twice",
        writes(lambda: graph_model([node("Add", ["x", "w"])], initializers=[weight(), weight()])),
        r"initializer 'w' is defined twice",
    ),
    Case(
        "too-many-inputs",
        writes(lambda: graph_model([node("Relu", ["x", "x"])])),
        r"node #0 'relu' \(Relu\): it has 2 inputs, but Relu version 14 takes 1",
    ),
    Case(
        "too-few-inputs",
        writes(lambda: graph_model([node("Add", ["x"])])),
        r"node #0 'add' \(Add\): it has 1 input, but Add version 14 takes 2",
    ),
    Case(
        "required-input-left-empty",
        writes(lambda: graph_model([node("Add", ["x", ""])])),
        r"node #0 'add' \(Add\): input #1 \(B\) of Add version 14 is required but empty",
    ),
    Case(
        "too-many-outputs",
        writes(lambda: graph_model([node("Relu", ["x"], ["y", "z"])])),
        r"node #0 'relu' \(Relu\): it has 2 outputs, but Relu version 14 takes 1",
    ),
    Case(
        "variadic-op-without-inputs",
        writes(lambda: graph_model([node("Concat", [], axis=0)])),
        r"node #0 'concat' \(Concat\): it has 0 inputs, but Concat version 13 takes at least 1",
    ),
    # Attributes.
    Case(
        "attribute-of-the-wrong-type",
        writes(lambda: graph_model([node("Softmax", ["x"], axis=1.5)])),
        r"node #0 'softmax' \(Softmax\): attribute axis must be of type INT, but is FLOAT",
    ),
    Case(
        "attribute-the-op-does-not-have",
        writes(lambda: graph_model([node("Relu", ["x"], alpha=0.5)])),
        r"node #0 'relu' \(Relu\): Relu version 14 has no attribute alpha",
    ),
    Case(
        "required-attribute-missing",
        writes(lambda: graph_model([node("Cast", ["x"])])),
        r"node #0 'cast' \(Cast\): Cast version 21 requires attribute to, which is missing",
    ),
    Case(
        "axis-out-of-range",
        writes(lambda: graph_model([node("Softmax", ["x"], axis=5)])),
        r"node #0 'softmax' \(Softmax\): axis 5 is out of range for rank 2",
    ),
    Case(
        "concat-axis-out-of-range",
        writes(lambda: graph_model([node("Concat", ["x", "x"], axis=-3)])),
        r"node #0 'concat' \(Concat\): axis -3 is out of range for rank 2",
    ),
    Case(
        "permutation-repeating-an-axis",
        writes(lambda: graph_model([node("Transpose", ["x"], perm=[0, 0])])),
        r"node #0 'transpose' \(Transpose\): perm \[0, 0\] repeat an axis",
    ),
    Case(
        "keepdims-neither-0-nor-1",
        writes(
            lambda: graph_model([node("ReduceSum", ["x", "axes"], keepdims=2)], initializers=[int64s("axes", 1, 0)])
        ),
        r"node #0 'reducesum' \(ReduceSum\): attribute keepdims=2 is not supported: it must be 0 or 1",
    ),
    Case(
        "concat-of-different-ranks",
        writes(lambda: graph_model([node("Concat", ["x", "v"], axis=0)], initializers=[int64s("v", 1, 2, 3)])),
        r"node #0 'concat' \(Concat\): input #1 has rank 1 and input #0 rank 2; they must agree",
    ),
    Case(
        "reshape-copying-a-dimension-the-input-lacks",
        writes(lambda: graph_model([node("Reshape", ["x", "shape"])], initializers=[int64s("shape", 3, 2, 0)])),
        r"node #0 'reshape' \(Reshape\): shape \[3, 2, 0\] copies with 0 a dimension that the rank-2 input lacks",
    ),
    Case(
        "convolution-weight-of-another-rank",
        writes(
            lambda: graph_model(
                [node("Conv", ["x", "w"])], {"x": (TensorProto.FLOAT, [1, 2, 3, 3])}, initializers=[weight()]
            )
        ),
        r"node #0 'conv' \(Conv\): the weight has rank 2 and the input rank 4; they must agree",
    ),
    Case(
        "zero-stride",
        writes(
            lambda: graph_model(
                [node("MaxPool", ["x"], kernel_shape=[2, 2], strides=[0, 1])], {"x": (TensorProto.FLOAT, [1, 1, 4, 4])}
            )
        ),
        r"node #0 'maxpool' \(MaxPool\): attribute strides=\[0, 1\] is not supported: every entry must be positive",
    ),
    # Sizes: refused from the declared or inferred shapes, before anything is allocated.
    Case(
        "initializer-of-2**40-elements-without-data",
        writes(
            lambda: graph_model(
                [node("Add", ["x", "w"])],
                initializers=[TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[2**20, 2**20])],
            )
        ),
        r"initializer 'w' has 1099511627776 elements \(1048576x1048576\), more than the maximum of 2147483648 "
        r"\(max_tensor_elements, --max-tensor-elements\)",
    ),
    Case(
        "input-of-2**40-elements",
        writes(lambda: graph_model([node("Relu", ["x"])], {"x": (TensorProto.FLOAT, [2**20, 2**20])})),
        r"graph input 'x' has 1099511627776 elements",
    ),
    Case(
        "constant-of-shape-2**40",
        writes(
            lambda: graph_model(
                [node("ConstantOfShape", ["shape"], ["c"]), node("Add", ["x", "c"])],
                {"x": (TensorProto.FLOAT, [1])},
                initializers=[int64s("shape", 2**20, 2**20)],
            )
        ),
        r"value 'c' \(output #0 of node #0 'constantofshape' \(ConstantOfShape\)\) has 1099511627776 elements",
    ),
    Case(
        "range-of-2**36",
        writes(
            lambda: graph_model(
                [node("Range", ["start", "limit", "delta"], ["r"]), node("Cast", ["r"], to=TensorProto.FLOAT)],
                {},
                initializers=[int64s("start", 0), int64s("limit", 2**36), int64s("delta", 1)],
            )
        ),
        r"value 'r' \(output #0 of node #0 'range' \(Range\)\) has 68719476736 elements",
    ),
    Case(
        "evaluated-at-import-time-over-the-limit",
        writes(
            lambda: graph_model(
                [node("Range", ["start", "limit", "delta"], ["r"]), node("Cast", ["r"], to=TensorProto.FLOAT)],
                {},
                initializers=[int64s("start", 0), int64s("limit", 5000), int64s("delta", 1)],
            )
        ),
        r"node #0 'range' \(Range\): evaluating it at import time would bring the values computed at import "
        r"time to 5000 elements, more than the maximum of 1000 \(max_evaluated_elements",
        {"max_evaluated_elements": 1000},
    ),
    Case(
        "tensor-over-a-lowered-limit",
        writes(lambda: graph_model([node("Add", ["x", "w"])], initializers=[weight()])),
        r"initializer 'w' has 6 elements \(2x3\), more than the maximum of 5",
        {"max_tensor_elements": 5},
    ),
    Case(
        "raw-data-shorter-than-the-shape",
        writes(
            lambda: graph_model(
                [node("Add", ["x", "w"])],
                initializers=[TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[2, 3], raw_data=bytes(8))],
            )
        ),
        r"initializer 'w' holds 8 bytes of data, but its shape \(2x3\) and type \(float\) need 24",
    ),
    # Nesting.
    Case(
        "subgraphs-nested-17-deep",
        writes(lambda: nested_ifs(17)),
        r"subgraph 'leaf' \(in attribute \w+_branch of node #0 \(If\) in subgraph 'level0', "
        r"within node #0 \(If\)\) is nested 17 deep, more than the maximum of 16 \(max_subgraph_depth",
    ),
    Case(
        "subgraphs-over-a-lowered-limit",
        writes(lambda: nested_ifs(3)),
        r"is nested 3 deep, more than the maximum of 2",
        {"max_subgraph_depth": 2},
    ),
    Case("subgraphs-too-deep-to-parse", too_deep_to_parse, r"deep\.onnx is not an ONNX model: .*nest deeper than"),
    Case(
        "recursive-local-function",
        writes(recursive_function),
        r"local function local\.F calls itself \(local\.F -> local\.F\)",
    ),
    Case(
        "local-function-calls-nested-too-deep",
        writes(lambda: nested_function_calls(20)),
        r"calls between local functions nest 17 deep \(local\.F0 -> local\.F1 -> .* -> local\.F16\), "
        r"more than the maximum of 16",
    ),
    # External data: only regular files inside the model's directory, within their bounds.
    Case(
        "external-data-at-an-absolute-path",
        lambda directory: with_external_weight(
            outside_the_directory(directory), location=str(directory / "secret.bin")
        ),
        r"initializer 'w': external data location '/\S*secret\.bin' is an absolute path; "
        r"mlc reads external data only from the model's directory",
    ),
    Case(
        "external-data-path-traversal",
        lambda directory: with_external_weight(outside_the_directory(directory), location="../secret.bin"),
        r"initializer 'w': external data location '\.\./secret\.bin' leaves the model's directory",
    ),
    Case(
        "external-data-traversal-through-a-subdirectory",
        lambda directory: with_external_weight(outside_the_directory(directory), location="sub/../../secret.bin"),
        r"external data location 'sub/\.\./\.\./secret\.bin' leaves the model's directory",
    ),
    Case(
        "external-data-symlink-leaving-the-directory",
        external_data_through_a_symlink,
        r"initializer 'w': external data location 'link\.bin' resolves to /\S*secret\.bin, "
        r"outside the model's directory",
    ),
    Case(
        "external-data-of-a-constant-node",
        constant_with_external_data,
        r"attribute value of node #0 'constant' \(Constant\): external data location '\.\./secret\.bin' leaves",
    ),
    Case(
        "external-data-file-missing",
        lambda directory: with_external_weight(directory, location="missing.bin"),
        r"initializer 'w': external data file 'missing\.bin' does not exist in",
    ),
    Case(
        "external-data-location-is-a-directory",
        lambda directory: with_external_weight(directory, location="."),
        r"initializer 'w': external data location '\.' is not a regular file",
    ),
    Case(
        "external-data-without-a-location",
        lambda directory: with_external_weight(directory, offset="0"),
        r"initializer 'w' keeps its data in an external file but gives no location",
    ),
    Case(
        "external-data-offset-beyond-the-file",
        lambda directory: with_external_weight(directory, location="w.bin", offset="100"),
        r"initializer 'w': external data offset 100 is beyond the end of 'w\.bin' \(24 bytes\)",
    ),
    Case(
        "external-data-length-beyond-the-file",
        lambda directory: with_external_weight(directory, location="w.bin", offset="8", length="24"),
        r"initializer 'w': external data at offset 8 with length 24 runs past the end of 'w\.bin' \(24 bytes\)",
    ),
    Case(
        "external-data-length-not-the-tensor's",
        lambda directory: with_external_weight(directory, location="w.bin", length="16"),
        r"initializer 'w': external data length 16 does not match its shape \(2x3\) and type \(float\), "
        r"which need 24 bytes",
    ),
    Case(
        "external-data-negative-offset",
        lambda directory: with_external_weight(directory, location="w.bin", offset="-8"),
        r"initializer 'w': external data offset '-8' is not a non-negative integer",
    ),
]

PROCESS_CASES = {
    "missing-file",
    "directory",
    "truncated-file",
    "corrupt-bytes",
    "opset-too-new",
    "unsupported-op",
    "symbolic-dimension",
    "cycle",
    "too-many-inputs",
    "two-nodes-write-one-value",
    "initializer-of-2**40-elements-without-data",
    "external-data-path-traversal",
    "external-data-symlink-leaving-the-directory",
}


def _cases(ids: set[str] | None = None) -> list:
    marks = {"fifo": pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")}
    return [
        pytest.param(case, id=case.id, marks=marks.get(case.id, ())) for case in CASES if ids is None or case.id in ids
    ]


def test_the_corpus_is_large_and_its_ids_are_unique():
    assert len(CASES) >= 20
    assert len({case.id for case in CASES}) == len(CASES)
    assert PROCESS_CASES <= {case.id for case in CASES}


@pytest.mark.parametrize("case", _cases())
def test_import_model_refuses(case: Case, tmp_path: Path):
    path = case.write(tmp_path)
    with pytest.raises(OnnxImportError) as raised:
        import_model(path, limits=ImportLimits(**case.limits))
    assert isinstance(raised.value, MlcError)
    assert re.search(case.pattern, str(raised.value)), f"{str(raised.value)!r} does not match {case.pattern!r}"


@pytest.mark.parametrize("case", _cases())
def test_tool_refuses(case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    path = case.write(tmp_path)
    status = main([str(path), *case.options(), "-o", str(tmp_path / "out.mlir")])
    captured = capsys.readouterr()
    assert_no_traceback(captured.out + captured.err)
    assert status == 1
    assert re.search(rf"^mlc-import-onnx: error: .*{case.pattern}", captured.err), captured.err
    assert not (tmp_path / "out.mlir").exists()


@pytest.mark.parametrize("case", _cases(PROCESS_CASES))
def test_tool_process_refuses(case: Case, tmp_path: Path):
    path = case.write(tmp_path)
    assert_clean_failure(
        run_tool("mlc-import-onnx", path, *case.options()), rf"^mlc-import-onnx: error: .*{case.pattern}"
    )


# -- the tool's own failures -----------------------------------------------------------------------


def _relu_model(directory: Path) -> Path:
    return save(graph_model([node("Relu", ["x"])]), directory)


TOOL_CASES = [
    pytest.param(
        lambda directory: [_relu_model(directory), "-o", directory / "missing" / "out.mlir"],
        r"mlc-import-onnx: error: cannot write \S*out\.mlir: the directory \S*missing does not exist",
        id="output-in-a-missing-directory",
    ),
    pytest.param(
        lambda directory: [_relu_model(directory), "-o", directory],
        r"mlc-import-onnx: error: cannot write \S*: Is a directory",
        id="output-onto-a-directory",
    ),
    pytest.param(
        lambda directory: [_relu_model(directory), "--input-shape", "z=2x3"],
        r"input_shapes names 'z', which is not a graph input \(inputs: 'x'\)",
        id="input-shape-of-no-input",
    ),
    pytest.param(
        lambda directory: [_relu_model(directory), "--input-shape", "x=2xq"],
        r"argument --input-shape: dimensions must be integers separated by 'x', got '2xq'",
        id="input-shape-not-integers",
    ),
    pytest.param(
        lambda directory: [_relu_model(directory), "--max-tensor-elements", "0"],
        r"argument --max-tensor-elements: expected a positive integer, got '0'",
        id="limit-not-positive",
    ),
]


@pytest.mark.parametrize("arguments, pattern", TOOL_CASES)
def test_tool_refuses_bad_arguments_and_outputs(arguments: Callable[[Path], list], pattern: str, tmp_path: Path):
    assert_clean_failure(run_tool("mlc-import-onnx", *arguments(tmp_path)), pattern)


# -- the API's own inputs: bytes and ModelProtos ---------------------------------------------------


def _external_model_proto(directory: Path) -> ModelProto:
    return onnx.load(with_external_weight(directory, location="w.bin"), load_external_data=False)


API_CASES = [
    pytest.param(lambda directory: b"", {}, r"the bytes are not an ONNX model: it is empty", id="empty-bytes"),
    pytest.param(
        lambda directory: b"\xff\x00 not a model", {}, r"the bytes are not an ONNX model: protobuf", id="garbage-bytes"
    ),
    pytest.param(
        lambda directory: graph_model([node("Relu", ["x"])]).SerializeToString(),
        {"max_model_bytes": 16},
        r"the model bytes are \d+ bytes, more than the maximum of 16",
        id="bytes-over-the-size-limit",
    ),
    pytest.param(
        lambda directory: ModelProto(ir_version=8), {}, r"the ModelProto has no graph", id="model-proto-without-a-graph"
    ),
    pytest.param(
        _external_model_proto,
        {},
        r"initializer 'w' keeps its data in the external file 'w\.bin', "
        r"which mlc reads only when the model is given as a path",
        id="model-proto-with-external-data",
    ),
    pytest.param(
        lambda directory: _external_model_proto(directory).SerializeToString(),
        {},
        r"initializer 'w' keeps its data in the external file 'w\.bin'",
        id="bytes-with-external-data",
    ),
]


@pytest.mark.parametrize("source, limits, pattern", API_CASES)
def test_import_model_refuses_bytes_and_model_protos(source: Callable, limits: dict, pattern: str, tmp_path: Path):
    with pytest.raises(OnnxImportError, match=pattern):
        import_model(source(tmp_path), limits=ImportLimits(**limits))


def test_input_shapes_refuse_negative_dimensions():
    with pytest.raises(OnnxImportError, match=r"input_shapes gives 'x' a negative dimension: \[2, -3\]"):
        import_model(graph_model([node("Relu", ["x"])]), input_shapes={"x": [2, -3]})
