"""The ONNX backend's own behaviour: devices, inputs, specialisation on input values, errors.

ONNX's node tests through the backend are in `test_onnx_backend.py`; these cases build small models
with `onnx.helper` and check what the node tests do not: device names, input checking, the
specialisation of models whose shapes or constant inputs come at run time, `run_node`, and that
what mlc cannot run is an `UnsupportedModelError`.
"""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

from mlc.frontend.onnx.backend import (  # noqa: E402
    DeviceUnavailableError,
    MlcBackend,
    UnsupportedModelError,
    cuda_available,
    inputs_read_at_import,
    resolve_device,
)
from programs import assert_compiled_matches  # noqa: E402


def _model(nodes: list, inputs: list, outputs: list, opset: int = 17) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", inputs, outputs)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _add_model() -> onnx.ModelProto:
    return _model(
        [helper.make_node("Add", ["x", "y"], ["z"])],
        [helper.make_tensor_value_info(name, TensorProto.FLOAT, [2, 3]) for name in ("x", "y")],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 3])],
    )


def _reshape_model() -> onnx.ModelProto:
    """Reshape whose target shape is a graph input, as in ONNX's node tests."""
    return _model(
        [helper.make_node("Reshape", ["x", "shape"], ["y"])],
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 6]),
            helper.make_tensor_value_info("shape", TensorProto.INT64, [2]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )


@pytest.mark.parametrize(
    ("name", "device"),
    [("interp", "interp"), ("cpu", "cpu"), ("cuda", "cuda"), ("CPU", "cpu"), ("CUDA", "cuda"), ("CUDA:0", "cuda")],
)
def test_device_names(name: str, device: str):
    assert resolve_device(name) == device


@pytest.mark.parametrize(("name", "message"), [("gpu", "device must be one of"), ("CUDA:1", "CUDA device 0 only"), ("CPU:2", "CPU device 0 only")])
def test_bad_device_names(name: str, message: str):
    with pytest.raises(ValueError, match=message):
        resolve_device(name)
    assert not MlcBackend.supports_device(name)


def test_pinned_backend_serves_onnx_device_of_its_kind():
    interp = MlcBackend.pinned("interp")
    assert interp.supports_device("CPU") and not interp.supports_device("CUDA")
    assert interp.target("CPU") == "interp"
    with pytest.raises(ValueError, match="pinned to 'interp'"):
        interp.prepare(_add_model(), "CUDA")
    assert not MlcBackend.pinned("cuda").supports_device("CPU")
    assert MlcBackend.pinned("cuda").supports_device("CUDA") == cuda_available()


@pytest.mark.parametrize("device", ["interp", "cpu"])
def test_run_by_position_and_by_name(device: str):
    x, y = np.arange(6, dtype=np.float32).reshape(2, 3), np.full((2, 3), 0.5, np.float32)
    representation = MlcBackend.prepare(_add_model(), device)
    (by_position,) = representation.run([x, y])
    outputs = representation.run({"y": y, "x": x})
    np.testing.assert_array_equal(by_position, x + y)
    np.testing.assert_array_equal(outputs["z"], x + y)


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        ([np.zeros((2, 3), np.float32)], r"takes 2 input\(s\) \['x', 'y'\], got 1"),
        ([np.zeros((2, 3), np.float64), np.zeros((2, 3), np.float32)], "input 'x' has dtype float64; the model declares float32"),
        ([np.zeros((2, 3), np.float32), np.zeros((3, 2), np.float32)], r"input 'y' has shape \[3, 2\]; the model declares \[2, 3\]"),
        ({"x": np.zeros((2, 3), np.float32)}, "missing \\['y'\\]"),
    ],
)
def test_wrong_inputs_are_named(inputs: object, message: str):
    with pytest.raises(ValueError, match=message):
        MlcBackend.prepare(_add_model(), "interp").run(inputs)


def test_inputs_read_at_import_are_bound_per_run():
    model = _reshape_model()
    assert inputs_read_at_import(model) == {"shape"}
    representation = MlcBackend.prepare(model, "interp")
    x = np.arange(12, dtype=np.float32).reshape(2, 6)
    for shape in ([3, 4], [4, 3], [3, 4]):
        (y,) = representation.run([x, np.array(shape, np.int64)])
        np.testing.assert_array_equal(y, x.reshape(shape))
    assert len(representation._cache) == 2  # one specialisation per distinct shape value


def test_inputs_read_at_import_through_other_nodes():
    """The axes reach Unsqueeze through a Cast: the graph input is still bound."""
    model = _model(
        [helper.make_node("Cast", ["axes32"], ["axes"], to=TensorProto.INT64), helper.make_node("Unsqueeze", ["x", "axes"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3]), helper.make_tensor_value_info("axes32", TensorProto.INT32, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    assert inputs_read_at_import(model) == {"axes32"}
    (y,) = MlcBackend.prepare(model, "interp").run([np.ones(3, np.float32), np.array([1], np.int32)])
    assert y.shape == (3, 1)


def test_dynamic_dimensions_take_the_shape_of_each_run():
    model = _model(
        [helper.make_node("Relu", ["x"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])],
    )
    representation = MlcBackend.prepare(model, "interp")
    for batch in (1, 5):
        x = np.linspace(-1, 1, batch * 4, dtype=np.float32).reshape(batch, 4)
        (y,) = representation.run([x])
        np.testing.assert_array_equal(y, np.maximum(x, 0))


@pytest.mark.parametrize("device", ["interp", "cpu"])
def test_run_node(device: str):
    x = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)
    (y,) = MlcBackend.run_node(helper.make_node("Sigmoid", ["x"], ["y"]), [x], device=device)
    sigmoid = """func.func @main(%x: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %y = graph.sigmoid %x : tensor<3x4xf32>
  func.return %y : tensor<3x4xf32>
}"""
    assert_compiled_matches(sigmoid, [x], y, [1 / (1 + np.exp(-x.astype(np.float64)))])


def test_unsupported_op_is_an_unsupported_model_error():
    model = _model(
        [helper.make_node("Tan", ["x"], ["y"], name="tangent")],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )
    with pytest.raises(UnsupportedModelError) as raised:
        MlcBackend.prepare(model, "interp")
    assert raised.value.stage == "import"
    assert "node #0 'tangent' (Tan): op Tan is not supported" in str(raised.value)


def test_unknown_option_is_refused():
    with pytest.raises(TypeError, match="unexpected options: fast"):
        MlcBackend.prepare(_add_model(), "interp", fast=True)


@pytest.mark.skipif(cuda_available(), reason="checks the machine without a CUDA device")
def test_cuda_without_a_device_is_a_clear_error():
    assert not MlcBackend.supports_device("cuda")
    with pytest.raises(DeviceUnavailableError, match="no CUDA device is available"):
        MlcBackend.prepare(_add_model(), "cuda")


@pytest.mark.gpu
def test_cuda_runs_a_model():
    x, y = np.arange(6, dtype=np.float32).reshape(2, 3), np.ones((2, 3), np.float32)
    (z,) = MlcBackend.prepare(_add_model(), "cuda").run([x, y])
    np.testing.assert_array_equal(z, x + y)
