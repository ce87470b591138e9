"""Safe loading of ONNX models: what must still import, and how the bounds behave at their edges.

The refusals themselves (traversal, symlinks, sizes, nesting, malformed graphs) are the corpus's,
`test/python/corpus/test_onnx_corpus.py`. Here: external data that stays in the model's directory
imports and computes the stored values, read by mlc and never by onnx; each limit accepts a model
exactly at it; data propagation is skipped, and says so, when onnx would have to hold a long 1-D
value; a cycle in a long graph is found without recursion; nothing in the importer unpickles.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import ModelProto, TensorProto, external_data_helper, helper, numpy_helper  # noqa: E402

from mlc.frontend.onnx import ImportLimits, OnnxImportError, import_model  # noqa: E402
from mlc.frontend.onnx.limits import LIMIT_OPTIONS  # noqa: E402
from mlc.frontend.onnx.model import MAX_PROPAGATED_ELEMENTS, infer_types, opset_versions  # noqa: E402
from mlc.interpreter import run  # noqa: E402

WEIGHTS = np.arange(6, dtype=np.float32).reshape(2, 3)


def _adding(weight: TensorProto) -> ModelProto:
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", weight.name], ["y"])],
        "add",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
        initializer=[weight],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])


def _external(location: str, **entries: str) -> TensorProto:
    tensor = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[2, 3], data_location=TensorProto.EXTERNAL)
    tensor.external_data.add(key="location", value=location)
    for key, value in entries.items():
        tensor.external_data.add(key=key, value=value)
    return tensor


def _computes_x_plus_weights(path: Path) -> None:
    x = np.full((2, 3), 0.5, np.float32)
    (y,) = run(import_model(path), "main", [x])
    np.testing.assert_array_equal(y, x + WEIGHTS)


def _write(model: ModelProto, path: Path) -> Path:
    path.write_bytes(model.SerializeToString())
    return path


@pytest.mark.parametrize(
    "location, entries, data_file, prefix",
    [
        pytest.param("w.bin", {}, "w.bin", b"", id="beside-the-model"),
        pytest.param("w.bin", {"offset": "0", "length": "24"}, "w.bin", b"", id="offset-and-length"),
        pytest.param("w.bin", {"offset": "16"}, "w.bin", b"\x01" * 16, id="offset-into-a-larger-file"),
        pytest.param("data/w.bin", {}, "data/w.bin", b"", id="in-a-subdirectory"),
        pytest.param("data/../w.bin", {}, "w.bin", b"", id="dot-dot-that-stays-inside"),
    ],
)
def test_external_data_inside_the_directory_is_read(
    location: str, entries: dict[str, str], data_file: str, prefix: bytes, tmp_path: Path
):
    (tmp_path / "data").mkdir()
    (tmp_path / data_file).write_bytes(prefix + WEIGHTS.tobytes())
    _computes_x_plus_weights(_write(_adding(_external(location, **entries)), tmp_path / "model.onnx"))


def test_a_symlink_that_stays_inside_the_directory_is_followed(tmp_path: Path):
    (tmp_path / "weights.bin").write_bytes(WEIGHTS.tobytes())
    (tmp_path / "w.bin").symlink_to("weights.bin")
    _computes_x_plus_weights(_write(_adding(_external("w.bin")), tmp_path / "model.onnx"))


def test_models_saved_by_onnx_with_external_data_import(tmp_path: Path):
    path = tmp_path / "model.onnx"
    model = _adding(numpy_helper.from_array(WEIGHTS, "w"))
    onnx.save_model(model, path, save_as_external_data=True, location="weights.data", size_threshold=0)
    assert (tmp_path / "weights.data").stat().st_size == WEIGHTS.nbytes
    _computes_x_plus_weights(path)


def test_onnx_never_reads_the_external_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """mlc reads external data itself, after its checks; onnx's loader (whose checks vary between
    versions) is never reached."""

    def refuse(*arguments: object, **keywords: object) -> None:
        raise AssertionError("onnx read external data")

    for name in ("load_external_data_for_model", "load_external_data_for_tensor", "_read_external_data_bytes"):
        if hasattr(external_data_helper, name):
            monkeypatch.setattr(external_data_helper, name, refuse)
    (tmp_path / "w.bin").write_bytes(WEIGHTS.tobytes())
    _computes_x_plus_weights(_write(_adding(_external("w.bin")), tmp_path / "model.onnx"))


def test_each_limit_accepts_a_model_exactly_at_it(tmp_path: Path):
    path = _write(_adding(numpy_helper.from_array(WEIGHTS, "w")), tmp_path / "model.onnx")
    at_the_limits = ImportLimits(max_model_bytes=path.stat().st_size, max_tensor_elements=6)
    import_model(path, limits=at_the_limits)
    with pytest.raises(OnnxImportError, match="more than the maximum of"):
        import_model(path, limits=ImportLimits(max_model_bytes=path.stat().st_size - 1))


def test_an_empty_tensor_is_within_the_limit_however_long_its_other_dimensions():
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])],
        "empty",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [0, 2**32])],
        [helper.make_empty_tensor_value_info("y")],
    )
    module = import_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)]))
    assert "tensor<0x4294967296xf32>" in str(module)


def test_evaluation_limit_counts_every_value_computed_at_import_time():
    """Two Range nodes of 600 elements each: either alone fits 1000, both together do not."""
    nodes, initializers = (
        [],
        [
            numpy_helper.from_array(np.array(value, np.int64), name)
            for name, value in (("zero", 0), ("limit", 600), ("one", 1))
        ],
    )
    for index in range(2):
        nodes.append(helper.make_node("Range", ["zero", "limit", "one"], [f"r{index}"], name=f"range{index}"))
        nodes.append(helper.make_node("Cast", [f"r{index}"], [f"y{index}"], to=TensorProto.FLOAT))
    graph = helper.make_graph(
        nodes,
        "ranges",
        [],
        [helper.make_empty_tensor_value_info(name) for name in ("y0", "y1")],
        initializer=initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    import_model(model, limits=ImportLimits(max_evaluated_elements=1200))
    with pytest.raises(OnnxImportError, match=r"node #2 'range1' \(Range\): evaluating it .* to 1200 elements"):
        import_model(model, limits=ImportLimits(max_evaluated_elements=1000))


def _long_value_then_computed_shape(length: int) -> ModelProto:
    """A 1-D input of `length` elements through Cast (which onnx's data propagation holds element
    by element), and a Reshape whose shape is computed from a Shape (which needs it)."""
    nodes = [
        helper.make_node("Cast", ["long"], ["long_int"], to=TensorProto.INT64),
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Reshape", ["x", "shape"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "propagation",
        [
            helper.make_tensor_value_info("long", TensorProto.FLOAT, [length]),
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
        ],
        [helper.make_empty_tensor_value_info("y"), helper.make_empty_tensor_value_info("long_int")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])


def test_float_initializers_do_not_count_against_data_propagation():
    """onnx holds 1-D integer initializers for data propagation, not float ones (biases)."""
    model = _long_value_then_computed_shape(8)
    length = MAX_PROPAGATED_ELEMENTS + 1
    model.graph.initializer.append(numpy_helper.from_array(np.zeros(length, np.float32), "bias"))
    model.graph.node.append(helper.make_node("Add", ["bias", "bias"], ["biases"]))
    model.graph.output.append(helper.make_empty_tensor_value_info("biases"))
    inferred, note = infer_types(model, opset_versions(model), ImportLimits())
    assert _inferred_shape(inferred, "y") == [2, 3] and note is None


def _inferred_shape(model: ModelProto, name: str) -> list[int | str] | None:
    for value in model.graph.value_info:
        if value.name == name and value.type.tensor_type.HasField("shape"):
            return [dim.dim_value if dim.HasField("dim_value") else "?" for dim in value.type.tensor_type.shape.dim]
    return None


def test_data_propagation_runs_when_bounded_and_is_skipped_otherwise():
    limits = ImportLimits()
    short = _long_value_then_computed_shape(8)
    inferred, note = infer_types(short, opset_versions(short), limits)
    assert _inferred_shape(inferred, "y") == [2, 3] and note is None
    long = _long_value_then_computed_shape(MAX_PROPAGATED_ELEMENTS + 1)
    inferred, note = infer_types(long, opset_versions(long), limits)
    assert _inferred_shape(inferred, "y") in (None, ["?", "?"])
    assert note is not None and re.search(r"data propagation was skipped: .*'long' of Cast", note)


def test_a_cycle_at_the_end_of_a_long_graph_is_found_without_recursion():
    nodes = [helper.make_node("Neg", [f"v{index}"], [f"v{index + 1}"]) for index in range(5000)]
    nodes[0] = helper.make_node("Add", ["x", "v5000"], ["v1"], name="first")
    graph = helper.make_graph(
        nodes,
        "ring",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_empty_tensor_value_info("v5000")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    with pytest.raises(OnnxImportError, match=r"the graph has a cycle: node #0 'first' \(Add\) reads 'v5000'"):
        import_model(model)


def test_the_tool_has_an_option_for_every_limit():
    assert set(LIMIT_OPTIONS) == set(ImportLimits.__dataclass_fields__)


def test_nothing_in_the_importer_unpickles():
    """Models are protobuf and tensors raw bytes: no pickle, no numpy `.npy`/`.npz` loading."""
    sources = Path(__file__).resolve().parents[3] / "mlc" / "frontend" / "onnx"
    unsafe = re.compile(r"\bpickle\b|\bcPickle\b|allow_pickle|\bnp\.load\(|\bnumpy\.load\(|\bmarshal\b|\bshelve\b")
    found = [
        f"{path.name}:{number}: {line.strip()}"
        for path in sorted(sources.glob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if unsafe.search(line)
    ]
    assert sorted(sources.glob("*.py")) and found == []
