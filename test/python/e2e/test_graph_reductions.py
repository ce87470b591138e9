"""Reductions and normalisations compiled from the graph level agree with numpy.

Every case runs on the CPU (in CI) and on the GPU (marked `gpu`, run on the GPU machine), with
fresh random inputs. References are computed in float64. Tolerances: f32 results within 2e-5
relative (a few ulps: the kernels sum in a different order and compute exp and rsqrt in f32); a
sum is compared within 1e-5 of the sum of absolute values (its rounding error grows with the
terms, not the result); f16 results within one f16 rounding (2e-3) since they are computed in
f32 and rounded once.
"""

from __future__ import annotations

import numpy as np
import pytest

import mlc
from mlc.dialects.tile import ops as tile
from programs import lower

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]
AWKWARD_ROWS = [1, 31, 33, 1000, 4097]


def tensor(shape: tuple[int, ...], element: str = "f32") -> str:
    return "tensor<" + "".join(f"{d}x" for d in shape) + element + ">"


def _softmax(x: np.ndarray, axis: int) -> np.ndarray:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _layer_norm(x: np.ndarray, scale: np.ndarray, bias: np.ndarray, axes: tuple[int, ...], epsilon: float) -> np.ndarray:
    centered = x - x.mean(axis=axes, keepdims=True)
    variance = (centered * centered).mean(axis=axes, keepdims=True)
    return centered / np.sqrt(variance + epsilon) * scale + bias


def kernel_count(text: str) -> int:
    return sum(isinstance(op, tile.KernelOp) for op in lower(text, "convert-graph-to-tile").walk())


@pytest.fixture
def rng(request: pytest.FixtureRequest) -> np.random.Generator:
    return np.random.default_rng(abs(hash(request.node.nodeid)) % 2**32)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("columns", AWKWARD_ROWS)
def test_fused_softmax_of_an_affine_relu(device: str, columns: int, rng: np.random.Generator):
    """softmax(relu(2x + 1)): one kernel, x read once and the result written once."""
    t = tensor((37, columns))
    text = f"""func.func @main(%x: {t}) -> {t} {{
      %two = graph.constant dense<2.0> : tensor<f32>
      %one = graph.constant dense<1.0> : tensor<f32>
      %0 = graph.mul %x, %two : ({t}, tensor<f32>) -> {t}
      %1 = graph.add %0, %one : ({t}, tensor<f32>) -> {t}
      %2 = graph.relu %1 : {t}
      %3 = graph.softmax %2 axis 1 : {t}
      func.return %3 : {t}
    }}"""
    assert kernel_count(text) == 1
    compiled = mlc.compile(text, device=device)
    x = rng.standard_normal((37, columns)).astype(np.float32)
    expected = _softmax(np.maximum(2 * x.astype(np.float64) + 1, 0), axis=1)
    np.testing.assert_allclose(compiled(x), expected, rtol=2e-5, atol=1e-7)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("columns", AWKWARD_ROWS)
def test_layer_norm_rows(device: str, columns: int, rng: np.random.Generator):
    x_type, p_type = tensor((19, columns)), tensor((columns,))
    text = f"""func.func @main(%x: {x_type}, %s: {p_type}, %b: {p_type}) -> {x_type} {{
      %0 = graph.layer_norm %x, %s, %b axis -1 epsilon 1.0e-05 : ({x_type}, {p_type}, {p_type}) -> {x_type}
      func.return %0 : {x_type}
    }}"""
    x = (rng.standard_normal((19, columns)) * 3 + 1).astype(np.float32)
    scale, bias = (rng.standard_normal(columns).astype(np.float32) for _ in range(2))
    expected = _layer_norm(x.astype(np.float64), scale, bias, (1,), 1e-5)
    result = mlc.compile(text, device=device)(x, scale, bias)
    np.testing.assert_allclose(result, expected, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("kind", ["reduce_sum", "reduce_max", "reduce_min", "reduce_mean"])
@pytest.mark.parametrize(
    "shape, axes", [((64, 4097), (1,)), ((1000, 33), (0,)), ((3, 2, 2), (1,)), ((6, 31, 5), (0, 2)), ((7,), (0,))]
)
def test_reductions_keepdims_false(device: str, kind: str, shape, axes, rng: np.random.Generator):
    """Over the last axis, a non-last axis (coalesced along the rows; also one so short that a thread
    holds several rows), two axes, everything."""
    out = tuple(size for axis, size in enumerate(shape) if axis not in axes)
    axes_text = ", ".join(map(str, axes))
    text = f"""func.func @main(%x: {tensor(shape)}) -> {tensor(out)} {{
      %0 = graph.{kind} %x axes [{axes_text}] keepdims false : {tensor(shape)} to {tensor(out)}
      func.return %0 : {tensor(out)}
    }}"""
    x = rng.standard_normal(shape).astype(np.float32)
    reference = {"reduce_sum": np.sum, "reduce_max": np.max, "reduce_min": np.min, "reduce_mean": np.mean}[kind]
    expected = reference(x.astype(np.float64), axis=axes)
    result = mlc.compile(text, device=device)(x)
    scale = np.abs(x.astype(np.float64)).sum(axis=axes) / (1 if kind == "reduce_sum" else np.prod([shape[a] for a in axes]))
    assert result.shape == expected.shape
    assert np.all(np.abs(result - expected) <= 1e-5 * scale + 1e-6)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("kind, identity", [("reduce_sum", 0.0), ("reduce_max", -np.inf), ("reduce_min", np.inf)])
def test_empty_reductions_give_the_identity(device: str, kind: str, identity: float):
    text = f"""func.func @main(%x: {tensor((2, 0, 4))}) -> {tensor((2, 4))} {{
      %0 = graph.{kind} %x axes [1] keepdims false : {tensor((2, 0, 4))} to {tensor((2, 4))}
      func.return %0 : {tensor((2, 4))}
    }}"""
    result = mlc.compile(text, device=device)(np.empty((2, 0, 4), np.float32))
    np.testing.assert_array_equal(result, np.full((2, 4), identity, np.float32))


@pytest.mark.parametrize("device", DEVICES)
def test_f16_softmax_accumulates_in_f32(device: str, rng: np.random.Generator):
    t = tensor((8, 4097), "f16")
    text = f"""func.func @main(%x: {t}) -> {t} {{
      %0 = graph.softmax %x axis 1 : {t}
      func.return %0 : {t}
    }}"""
    x = (rng.standard_normal((8, 4097)) * 4).astype(np.float16)
    result = mlc.compile(text, device=device)(x)
    assert result.dtype == np.float16
    np.testing.assert_allclose(result.astype(np.float64), _softmax(x.astype(np.float64), axis=1), rtol=2e-3, atol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
def test_integer_row_sum_wraps_and_max_is_exact(device: str, rng: np.random.Generator):
    t, r = tensor((5, 1000), "i32"), tensor((5, 1), "i32")
    text = f"""func.func @main(%x: {t}) -> ({r}, {r}) {{
      %0 = graph.reduce_sum %x axes [1] keepdims true : {t} to {r}
      %1 = graph.reduce_max %x axes [-1] keepdims true : {t} to {r}
      func.return %0, %1 : {r}, {r}
    }}"""
    x = rng.integers(-(2**30), 2**30, size=(5, 1000), dtype=np.int32)
    total, maximum = mlc.compile(text, device=device)(x)
    np.testing.assert_array_equal(total, x.sum(axis=1, keepdims=True, dtype=np.int32))
    np.testing.assert_array_equal(maximum, x.max(axis=1, keepdims=True))


@pytest.mark.parametrize("device", DEVICES)
def test_statistics_and_normalised_rows_from_one_kernel(device: str, rng: np.random.Generator):
    """A row's mean is returned beside x - mean: both outputs come from one kernel."""
    t, r = tensor((300, 100)), tensor((300, 1))
    text = f"""func.func @main(%x: {t}) -> ({t}, {r}) {{
      %m = graph.reduce_mean %x axes [1] keepdims true : {t} to {r}
      %d = graph.sub %x, %m : ({t}, {r}) -> {t}
      func.return %d, %m : {t}, {r}
    }}"""
    assert kernel_count(text) == 1
    compiled = mlc.compile(text, device=device)
    x = rng.standard_normal((300, 100)).astype(np.float32)
    centered, mean = compiled(x)
    np.testing.assert_allclose(mean, x.astype(np.float64).mean(axis=1, keepdims=True), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(centered, x - x.astype(np.float64).mean(axis=1, keepdims=True), rtol=1e-5, atol=1e-6)
