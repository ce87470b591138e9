"""MaxPool and AveragePool through `mlc.frontend.onnx.pooling`, against onnx's reference.

Hypothesis draws 1-, 2- and 3-D windows (kernel, strides, dilations, explicit pads or auto_pad,
ceil_mode, count_include_pad, MaxPool's Indices in both storage orders) over small inputs, often of
small integers so that windows hold ties; mlc's import, run by the graph interpreter, must match
`onnx.reference.ReferenceEvaluator`. Inputs are at least one window wide and pads smaller than
the kernel, so that every window holds an input element (mlc refuses the others).

Where onnx's reference (1.23) departs from the operator's definition, the comparison sidesteps it:

* auto_pad: the reference's MaxPool pads SAME_LOWER like SAME_UPPER and does not clamp a negative
  SAME padding (a stride longer than the window), its AveragePool ignores dilations under SAME and
  VALID. The reference runs the model with the explicit pads ONNX defines instead (mlc imports the
  auto_pad model; the importer checks its output shapes against ONNX's shape inference).
* MaxPool with all strides and dilations 1 takes another path in the reference, which ignores the
  pads of 1-D and 3-D inputs, reads 2-D pads in the wrong order and unravels an in-window argmax
  with the output's shape: MaxPool is drawn with a stride or dilation above 1, and unit strides are
  checked against numpy's sliding windows instead.
* AveragePool in ceil mode: the reference puts half of the padding that the extra window needs at
  the start, shifting every window when that padding is 2 or more; it is at most the stride less
  1, so AveragePool in ceil mode is drawn with strides of at most 2.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

onnx = pytest.importorskip("onnx")

from onnx_models import assert_within_import_bounds, check_import, one_node, reference  # noqa: E402

from mlc.frontend.onnx import OnnxImportError, import_model  # noqa: E402
from mlc.interpreter import run  # noqa: E402

SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture
def rng(request: pytest.FixtureRequest) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(request.node.name.encode()))


@dataclass
class Pool:
    """A drawn pool: the input and the node's attributes."""

    x: np.ndarray
    attributes: dict
    spans: list[int]

    def explicit_pads(self) -> list[int]:
        """The pads ONNX defines for the attributes (auto_pad resolved)."""
        auto_pad = self.attributes.get("auto_pad", "NOTSET")
        rank = len(self.spans)
        if auto_pad == "NOTSET":
            return list(self.attributes.get("pads", [0] * 2 * rank))
        if auto_pad == "VALID":
            return [0] * 2 * rank
        begins, ends = [], []
        for size, span, stride in zip(self.x.shape[2:], self.spans, self.attributes["strides"]):
            total = max(0, (-(-size // stride) - 1) * stride + span - size)
            small, large = total // 2, total - total // 2
            begins.append(small if auto_pad == "SAME_UPPER" else large)
            ends.append(large if auto_pad == "SAME_UPPER" else small)
        return begins + ends

    def reference_attributes(self) -> dict:
        attributes = {name: value for name, value in self.attributes.items() if name != "auto_pad"}
        attributes["pads"] = self.explicit_pads()
        return attributes


@st.composite
def pools(draw: st.DrawFn, op_type: str, with_indices: bool = False, unit_strides: bool = False) -> Pool:
    rank = draw(st.integers(1, 3))
    kernel = draw(st.lists(st.integers(1, 3), min_size=rank, max_size=rank))
    strides = draw(st.lists(st.integers(1, 3), min_size=rank, max_size=rank))
    dilations = draw(st.lists(st.integers(1, 3), min_size=rank, max_size=rank))
    if unit_strides:
        strides, dilations = [1] * rank, [1] * rank
    elif op_type == "MaxPool" and all(value == 1 for value in strides + dilations):
        strides[draw(st.integers(0, rank - 1))] = 2  # see the module docstring
    spans = [(length - 1) * dilation + 1 for length, dilation in zip(kernel, dilations)]
    sizes = [draw(st.integers(span, span + 4)) for span in spans]
    attributes: dict = {"kernel_shape": kernel, "strides": strides, "dilations": dilations}
    auto_pad = draw(st.sampled_from(["NOTSET", "NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"]))
    if auto_pad == "NOTSET":
        attributes["pads"] = [draw(st.integers(0, length - 1)) for length in kernel + kernel]
    else:
        attributes["auto_pad"] = auto_pad
    attributes["ceil_mode"] = draw(st.integers(0, 1))
    if op_type == "AveragePool" and attributes["ceil_mode"]:
        attributes["strides"] = [min(stride, 2) for stride in strides]  # see the module docstring
    if op_type == "AveragePool":
        attributes["count_include_pad"] = draw(st.integers(0, 1))
    if with_indices:
        attributes["storage_order"] = draw(st.integers(0, 1))
    shape = (draw(st.integers(1, 2)), draw(st.integers(1, 2)), *sizes)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    if draw(st.booleans()):
        x = rng.integers(-3, 4, shape).astype(np.float32)  # ties: the first maximum must win
    else:
        x = rng.standard_normal(shape).astype(np.float32)
    return Pool(x, attributes, spans)


def _sliding_window_max(x: np.ndarray, kernel: list[int], pads: list[int]) -> np.ndarray:
    """MaxPool with unit strides and dilations, by numpy's sliding windows over the −inf-padded input."""
    rank = len(kernel)
    padded = np.pad(x, [(0, 0), (0, 0), *zip(pads[:rank], pads[rank:])], constant_values=-np.inf)
    axes = tuple(range(2, 2 + rank))
    windows = np.lib.stride_tricks.sliding_window_view(padded, kernel, axis=axes)
    return windows.max(axis=tuple(range(-rank, 0)))


def _check(op_type: str, pool: Pool, outputs: tuple[str, ...] = ("y",)) -> None:
    """mlc's import of the drawn model against onnx's reference of its explicit-pads twin."""
    model = one_node(op_type, {"x": pool.x}, outputs=outputs, opset=22, **pool.attributes)
    explicit = one_node(op_type, {"x": pool.x}, outputs=outputs, opset=22, **pool.reference_attributes())
    expected = reference(explicit, {"x": pool.x})
    module = import_model(model)
    actual = run(module, "main", [pool.x])
    for name, got, want in zip(outputs, actual, expected):
        assert got.shape == want.shape, f"{name}: shape {got.shape}, expected {want.shape}"
        assert got.dtype == want.dtype, f"{name}: dtype {got.dtype}, expected {want.dtype}"
    # Maxima and indices exactly; averages within the bound of a sum over the window and a division.
    assert_within_import_bounds(module, [pool.x], expected, "ONNX's reference")


@SETTINGS
@given(pools("MaxPool"))
def test_max_pool_matches_the_reference(pool: Pool):
    _check("MaxPool", pool)


@SETTINGS
@given(pools("MaxPool", with_indices=True))
def test_max_pool_indices_match_the_reference(pool: Pool):
    _check("MaxPool", pool, ("y", "indices"))


@SETTINGS
@given(pools("MaxPool", unit_strides=True))
def test_max_pool_with_unit_strides_matches_sliding_windows(pool: Pool):
    model = one_node("MaxPool", {"x": pool.x}, opset=22, **pool.attributes)
    (result,) = run(import_model(model), "main", [pool.x])
    expected = _sliding_window_max(pool.x, pool.attributes["kernel_shape"], pool.explicit_pads())
    np.testing.assert_array_equal(result, expected)


@SETTINGS
@given(pools("AveragePool"))
def test_average_pool_matches_the_reference(pool: Pool):
    _check("AveragePool", pool)


# -- which graph ops each case becomes ------------------------------------------------------------


def _imported_ops(op_type: str, shape: tuple[int, ...], outputs: tuple[str, ...] = ("y",), **attributes) -> str:
    x = np.zeros(shape, np.float32)
    return str(import_model(one_node(op_type, {"x": x}, outputs=outputs, opset=22, **attributes)))


def test_plain_pools_stay_graph_pools():
    text = _imported_ops("MaxPool", (1, 2, 6, 6), kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    assert text.count("graph.max_pool2d") == 1 and "graph.slice" not in text
    text = _imported_ops("AveragePool", (1, 2, 6), kernel_shape=[2], ceil_mode=1, strides=[2])
    assert text.count("graph.avg_pool2d") == 1 and "graph.slice" not in text


def test_3d_pools_are_two_graph_pools():
    text = _imported_ops("AveragePool", (1, 2, 4, 5, 6), kernel_shape=[2, 3, 2], pads=[1, 1, 0, 0, 1, 1])
    assert text.count("graph.avg_pool2d") == 2 and "graph.slice" not in text


def test_dilated_pools_are_strided_slices():
    text = _imported_ops("MaxPool", (1, 1, 6, 6), kernel_shape=[2, 3], dilations=[2, 1], pads=[1, 1, 1, 1])
    assert "pool2d" not in text
    # Separable: one slice per kernel offset of each axis, not per window element.
    assert text.count("graph.slice") == 2 + 3


def test_pools_of_more_than_three_axes_are_strided_slices(rng: np.random.Generator):
    x = rng.standard_normal((1, 2, 3, 4, 3, 4)).astype(np.float32)
    kernel, pads = [2, 2, 1, 3], [1, 0, 0, 1, 0, 1, 0, 1]
    onnx_model = one_node("MaxPool", {"x": x}, opset=22, kernel_shape=kernel, pads=pads)
    (result,) = run(import_model(onnx_model), "main", [x])
    np.testing.assert_array_equal(result, _sliding_window_max(x, kernel, pads))


def test_indices_of_the_conformance_cases():
    """ONNX's two node tests of MaxPool's Indices, whose reference outputs are stated by hand."""
    x = np.arange(1, 26, dtype=np.float32).reshape(1, 1, 5, 5)
    outputs = ("y", "indices")
    onnx_model = one_node("MaxPool", {"x": x}, outputs=outputs, opset=12, kernel_shape=[5, 5], pads=[2, 2, 2, 2])
    _, indices = run(import_model(onnx_model), "main", [x])
    np.testing.assert_array_equal(indices[0, 0, 0], [12, 13, 14, 14, 14])
    attributes = {"kernel_shape": [2, 2], "strides": [2, 2], "storage_order": 1}
    onnx_model = one_node("MaxPool", {"x": x}, outputs=outputs, opset=12, **attributes)
    _, indices = run(import_model(onnx_model), "main", [x])
    np.testing.assert_array_equal(indices, [[[[6, 16], [8, 18]]]])


def test_indices_take_the_first_inside_element_of_a_window_of_minus_infinity():
    """Padding is −inf too: a window of −inf inputs must still name an input element."""
    x = np.full((1, 1, 3), -np.inf, np.float32)
    attributes = {"kernel_shape": [3], "strides": [2], "pads": [2, 2]}
    onnx_model = one_node("MaxPool", {"x": x}, outputs=("y", "indices"), opset=22, **attributes)
    _, indices = check_import(onnx_model, {"x": x})
    np.testing.assert_array_equal(indices, [[[0, 0, 2]]])


@pytest.mark.parametrize(
    ("op_type", "outputs"), [("MaxPool", ("y",)), ("MaxPool", ("y", "indices")), ("AveragePool", ("y",))]
)
def test_dilated_pools_of_float16(op_type: str, outputs: tuple[str, ...], rng: np.random.Generator):
    x = rng.standard_normal((2, 3, 5, 6)).astype(np.float16)
    attributes = {"kernel_shape": [2, 3], "dilations": [2, 1], "strides": [2, 1], "pads": [1, 1, 1, 0]}
    onnx_model = one_node(op_type, {"x": x}, outputs=outputs, opset=22, **attributes)
    check_import(onnx_model, {"x": x})


# -- what remains refused -------------------------------------------------------------------------


def test_a_window_of_only_padding_is_an_error():
    x = np.zeros((1, 1, 1, 4), np.float32)
    onnx_model = one_node("MaxPool", {"x": x}, opset=22, kernel_shape=[2, 1], dilations=[2, 1], pads=[1, 0, 1, 0])
    with pytest.raises(OnnxImportError) as raised:
        import_model(onnx_model)
    message = str(raised.value)
    assert message.startswith("node #0 'the_maxpool' (MaxPool): a window along spatial axis 0 holds only padding")


# -- Dropout in training mode -----------------------------------------------------------------------


def _training_dropout(x: np.ndarray, ratio: float) -> object:
    initializers = {"ratio": np.array(ratio, np.float32), "training_mode": np.array(True)}
    return one_node("Dropout", {"x": x}, outputs=("y", "mask"), initializers=initializers, opset=22)


def test_training_dropout_with_ratio_zero_is_the_identity(rng: np.random.Generator):
    x = rng.standard_normal((3, 4)).astype(np.float32)
    check_import(_training_dropout(x, 0.0), {"x": x})


def test_random_training_dropout_is_an_error():
    x = np.zeros((3, 4), np.float32)
    with pytest.raises(OnnxImportError) as raised:
        import_model(_training_dropout(x, 0.25))
    message = str(raised.value)
    assert message.startswith("node #0 'the_dropout' (Dropout): training mode with ratio 0.25 drops random")
