"""The API's entries besides `compile` itself: `mlc.interpret`, `mlc.available_devices` and
`mlc.LoweringError`, which clients such as the ONNX backend adapter use instead of reaching into
the interpreter, the runtime or the passes.

Integer `graph.pow` stands for an op the lowering cannot handle yet: when it is lowered, pick
another (the README's Status lists them).
"""

from __future__ import annotations

import numpy as np
import pytest

import mlc
from mlc.runtime import is_available

TWO_RESULTS = """func.func @main(%x: tensor<2x3xf32>, %b: tensor<3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  %0 = graph.add %x, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %1 = graph.relu %0 : tensor<2x3xf32>
  func.return %0, %1 : tensor<2x3xf32>, tensor<2x3xf32>
}
"""

INTEGER_MATMUL = """func.func @helper(%x: tensor<2x2xi32>) -> tensor<2x2xi32> {
  func.return %x : tensor<2x2xi32>
}
func.func @main(%x: tensor<2x2xi32>, %y: tensor<2x2xi32>) -> tensor<2x2xi32> {
  %0 = graph.matmul %x, %y : (tensor<2x2xi32>, tensor<2x2xi32>) -> tensor<2x2xi32>
  func.return %0 : tensor<2x2xi32>
}
"""


def test_interpret_returns_what_a_compiled_function_returns():
    x = np.linspace(-2, 2, 6, dtype=np.float32).reshape(2, 3)
    b = np.array([0.5, -1, 0], np.float32)
    interpreted = mlc.interpret(TWO_RESULTS, x, b)
    compiled = mlc.run(TWO_RESULTS, x, b, device="cpu")
    assert isinstance(interpreted, tuple) and len(interpreted) == 2
    for mine, theirs in zip(interpreted, compiled):
        np.testing.assert_array_equal(mine, theirs)
    np.testing.assert_array_equal(interpreted[1], np.maximum(x + b, 0))


TF32_MATMUL = """func.func @main(%x: tensor<2x2xf32>, %y: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %0 = graph.matmul %x, %y {precision = "tf32"} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  func.return %0 : tensor<2x2xf32>
}
"""


def test_interpret_runs_what_the_lowering_refuses():
    x, y = np.array([[1, 2], [3, 4]], np.int32), np.array([[3, 2], [1, 0]], np.int32)
    result = mlc.interpret(INTEGER_MATMUL, x, y, entry="@main")
    assert isinstance(result, np.ndarray)
    np.testing.assert_array_equal(result, x @ y)
    np.testing.assert_array_equal(mlc.compile(INTEGER_MATMUL, device="cpu", entry="main")(x, y), x @ y)
    a = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    assert mlc.interpret(TF32_MATMUL, a, a).shape == (2, 2)
    with pytest.raises(mlc.LoweringError, match="precision 'tf32' cannot be honoured on target 'cpu'") as raised:
        mlc.compile(TF32_MATMUL, device="cpu")
    assert isinstance(raised.value, mlc.CompileError)


def test_errors_in_the_source_are_not_lowering_errors():
    with pytest.raises(mlc.CompileError) as raised:
        mlc.compile("func.func @main() {", device="cpu")
    assert not isinstance(raised.value, mlc.LoweringError)
    with pytest.raises(mlc.CompileError, match="no function @mian .* did you mean @main"):
        mlc.interpret(INTEGER_MATMUL, entry="mian")
    with pytest.raises(mlc.ArgumentTypeError, match="entry must be a string"):
        mlc.interpret(INTEGER_MATMUL, entry=0)


def test_available_devices_are_what_auto_chooses_from():
    devices = mlc.available_devices()
    assert devices == (("cuda", "cpu") if is_available() else ("cpu",))
    assert mlc.compile(TWO_RESULTS, device="auto").device == devices[0]
