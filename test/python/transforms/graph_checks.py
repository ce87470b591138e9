"""Shared pieces of the graph-pass equivalence tests (graph-simplify, graph-fold-constants, cse/dce).

* `shapes`, `shapes_with_empty`, `broadcasting_to(shape)`: Hypothesis strategies for small static
  shapes (the second with dimensions of size 0 too).
* `draw_inputs(data, module)`: inputs for `@main` with any bits for floats (NaN, ±inf, ±0.0,
  subnormals) and the full range of integers.
* `assert_same_results(expected, actual)`: equal dtypes, shapes and bits, except that any NaN
  equals any NaN (NaN payloads are not part of the graph semantics; numpy does not define them).
  -0.0 and +0.0 differ.
* `interpret(module, inputs)`: `mlc.interpreter.run` on copies of the inputs.
* `interpreter_keeps_rank_0(op_text)`, `interpreter_saturates_bf16_casts()`: detect two
  interpreter bugs (rank-0 results of some layout ops come back with shape (1,); bf16 casts to
  integers wrap instead of saturating), so that the tests avoid them until they are fixed.
"""

from __future__ import annotations

from collections.abc import Sequence

import ml_dtypes
import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from xdsl.dialects.builtin import ModuleOp

from mlc.diagnostics import parse_module
from mlc.dialects import make_context
from mlc.dialects.element_types import to_numpy_dtype
from mlc.interpreter import run

shapes = st.lists(st.integers(1, 4), min_size=0, max_size=3).map(tuple)
shapes_with_empty = st.lists(st.integers(0, 3), min_size=1, max_size=3).map(tuple)
"""Shapes with at least one dimension of size 0 now and then (tensors without elements)."""


@st.composite
def broadcasting_to(draw: st.DrawFn, shape: tuple[int, ...]) -> tuple[int, ...]:
    """A shape that broadcasts to `shape`: leading dimensions dropped, some dimensions 1."""
    kept = list(shape[draw(st.integers(0, len(shape))) :])
    return tuple(1 if draw(st.booleans()) else d for d in kept)


def draw_inputs(data: st.DataObject, module: ModuleOp) -> list[np.ndarray]:
    """Inputs for `@main` of `module`: any bits for floats, the full range for integers."""
    function = next(op for op in module.walk() if op.name == "func.func" and op.sym_name.data == "main")
    inputs = []
    for argument_type in function.function_type.inputs.data:
        dtype = to_numpy_dtype(argument_type.element_type)
        shape = argument_type.get_shape()
        if dtype == ml_dtypes.bfloat16:
            # Every bf16 value is the top half of an f32 one: draw f32 bits, keep the top half.
            bits = data.draw(hnp.arrays(np.uint32, shape))
            inputs.append((bits >> 16).astype(np.uint16).view(ml_dtypes.bfloat16))
        else:
            inputs.append(data.draw(hnp.arrays(dtype, shape)))
    return inputs


def interpret(module: ModuleOp, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    return run(module, "main", [x.copy() for x in inputs])


def interpreter_keeps_rank_0(op_text: str) -> bool:
    """Whether the interpreter returns the rank-0 result of `op_text` (on %x: tensor<f32>) as rank 0.

    The graph interpreter's broadcast and transpose returned shape (1,) for rank-0 results
    (`np.ascontiguousarray` adds a dimension); the tests draw rank-0 results of those ops once that
    is fixed.
    """
    text = (
        "func.func @main(%x: tensor<f32>) -> tensor<f32> {\n"
        f"  %0 = {op_text}\n"
        "  func.return %0 : tensor<f32>\n}"
    )
    module, _ = parse_module(text, make_context())
    return interpret(module, [np.array(1.0, np.float32)])[0].shape == ()


def interpreter_saturates_bf16_casts() -> bool:
    """Whether the interpreter casts an out-of-range bf16 to i32 as it does f16 and f32 (saturating).

    It did not: bf16 is no `np.floating` to numpy, so its casts to integers wrapped around. The
    tests avoid bf16 -> integer casts of out-of-range values until that is fixed.
    """
    text = (
        "func.func @main(%x: tensor<bf16>) -> tensor<i32> {\n"
        "  %0 = graph.cast %x : tensor<bf16> to tensor<i32>\n"
        "  func.return %0 : tensor<i32>\n}"
    )
    module, _ = parse_module(text, make_context())
    big = np.array(2.0**31, dtype=ml_dtypes.bfloat16)
    return int(interpret(module, [big])[0]) == np.iinfo(np.int32).max


def _as_floats(array: np.ndarray) -> np.ndarray:
    return array.astype(np.float32) if array.dtype == ml_dtypes.bfloat16 else array


def assert_same_results(expected: Sequence[np.ndarray], actual: Sequence[np.ndarray]) -> None:
    """Equal dtypes, shapes and bits; any NaN matches any NaN (and nothing else)."""
    assert len(expected) == len(actual)
    for index, (want, got) in enumerate(zip(expected, actual)):
        assert (want.dtype, want.shape) == (got.dtype, got.shape), (
            f"result #{index}: {got.dtype}{got.shape}, expected {want.dtype}{want.shape}"
        )
        want_floats, got_floats = _as_floats(want), _as_floats(got)
        if np.issubdtype(want_floats.dtype, np.floating):
            want_nan, got_nan = np.isnan(want_floats), np.isnan(got_floats)
            assert (want_nan == got_nan).all(), f"result #{index}: NaN at different places: {got} != {want}"
            bits = np.dtype(f"u{want.itemsize}")
            same = want.view(bits)[~want_nan] == got.view(bits)[~got_nan]
            assert same.all(), f"result #{index}: different bits: {got} != {want}"
        else:
            assert (want == got).all(), f"result #{index}: {got} != {want}"


def count_ops(module: ModuleOp, name: str) -> int:
    return sum(op.name == name for op in module.walk())
