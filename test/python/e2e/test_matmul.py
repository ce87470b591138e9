"""Matrix products compiled from `graph.matmul` agree with numpy, on the CPU and on the GPU.

Every case draws fresh random inputs and compares with a float64 reference. Tolerance: the kernels
accumulate in f32 in their own order, so the error of an element is bounded by about
`1e-5 * sqrt(K)` times the sum of the absolute values of its products (`|A| @ |B|`), the scale of
the rounding errors, not of the result (which may cancel to near zero); f16 results add one f16
rounding (2^-11 relative). CPU cases stay small (CI time); the `gpu` ones, run on the GPU machine,
add the large shapes.
"""

from __future__ import annotations

import numpy as np
import pytest

import mlc
from mlc.dialects.tile import ops as tile
from mlc.transforms.pipelines import CPU_PIPELINE, GPU_PIPELINE
from programs import lower

GPU = pytest.mark.gpu
NUMPY = {"f32": np.float32, "f16": np.float16}


def tensor(shape: tuple[int, ...], element: str = "f32") -> str:
    return "tensor<" + "".join(f"{d}x" for d in shape) + element + ">"


def matmul_program(a_shape: tuple[int, ...], b_shape: tuple[int, ...], element: str = "f32") -> str:
    out = (*np.broadcast_shapes(a_shape[:-2], b_shape[:-2]), a_shape[-2], b_shape[-1])
    a, b, c = tensor(a_shape, element), tensor(b_shape, element), tensor(out, element)
    return f"""func.func @main(%a: {a}, %b: {b}) -> {c} {{
      %0 = graph.matmul %a, %b : ({a}, {b}) -> {c}
      func.return %0 : {c}
    }}"""


def assert_matmul_close(got: np.ndarray, a: np.ndarray, b: np.ndarray, element: str = "f32") -> None:
    """`got` is `a @ b` within f32 accumulation error (and one rounding to f16 for f16 results)."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    expected = np.matmul(a64, b64)
    assert got.shape == expected.shape and got.dtype == NUMPY[element]
    bound = 1e-5 * np.sqrt(a.shape[-1]) * np.matmul(np.abs(a64), np.abs(b64)) + 1e-30
    if element == "f16":
        bound = bound + 2.0**-11 * np.abs(expected) + 2.0**-24
    error = np.abs(got.astype(np.float64) - expected)
    worst = np.unravel_index(np.argmax(error - bound), error.shape)
    assert np.all(error <= bound), f"at {worst}: got {got[worst]}, expected {expected[worst]} (bound {bound[worst]})"


def random(rng: np.random.Generator, shape: tuple[int, ...], element: str = "f32") -> np.ndarray:
    return rng.standard_normal(shape).astype(NUMPY[element])


@pytest.fixture
def rng(request: pytest.FixtureRequest) -> np.random.Generator:
    return np.random.default_rng(abs(hash(request.node.nodeid)) % 2**32)


SHAPES = [
    pytest.param((1, 1), (1, 1), id="1x1x1"),
    pytest.param((17, 65), (65, 33), id="17x33x65"),
    pytest.param((64, 64), (64, 64), id="64x64x64"),
    pytest.param((3, 64, 48), (48, 80), id="batch3-broadcast-b"),
    pytest.param((2, 1, 5, 7), (3, 7, 9), id="batch-broadcast-both"),
    pytest.param((256, 256), (256, 256), id="256x256x256", marks=GPU),
    pytest.param((1000, 1000), (1000, 1000), id="1000x1000x1000", marks=GPU),
    pytest.param((4, 128, 96), (4, 96, 200), id="batch4-128x200x96", marks=GPU),
]
DEVICES = ["cpu", pytest.param("cuda", marks=GPU)]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("a_shape, b_shape", SHAPES)
def test_matmul_f32(device: str, a_shape, b_shape, rng: np.random.Generator):
    a, b = random(rng, a_shape), random(rng, b_shape)
    result = mlc.compile(matmul_program(a_shape, b_shape), device=device)(a, b)
    assert_matmul_close(result, a, b)


F16_SHAPES = [
    pytest.param((17, 65), (65, 33), id="17x33x65"),
    pytest.param((2, 40, 24), (24, 36), id="batch2-broadcast-b"),
    pytest.param((512, 512), (512, 512), id="512x512x512", marks=GPU),
    pytest.param((1000, 1000), (1000, 1000), id="1000x1000x1000", marks=GPU),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("a_shape, b_shape", F16_SHAPES)
def test_matmul_f16_accumulates_in_f32(device: str, a_shape, b_shape, rng: np.random.Generator):
    a, b = random(rng, a_shape, "f16"), random(rng, b_shape, "f16")
    result = mlc.compile(matmul_program(a_shape, b_shape, "f16"), device=device)(a, b)
    assert_matmul_close(result, a, b, "f16")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("block", ["16,16,4", "32,64,16", "128,128,8"])
def test_block_sizes_from_the_pass_option(device: str, block: str, rng: np.random.Generator):
    """Every block shape computes the same product (17x33x65: partial blocks in every dimension)."""
    text = matmul_program((17, 65), (65, 33))
    option = "convert-graph-to-tile{matmul-tile=" + block + "}"
    kernel = next(op for op in lower(text, option).walk() if isinstance(op, tile.KernelOp))
    assert list(kernel.attributes["mlc.matmul_tile"].get_values()) == [int(s) for s in block.split(",")]
    pipeline = (GPU_PIPELINE if device == "cuda" else CPU_PIPELINE).replace("convert-graph-to-tile", option)
    a, b = random(rng, (17, 65)), random(rng, (65, 33))
    assert_matmul_close(mlc.compile(text, device=device, pipeline=pipeline)(a, b), a, b)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("element", ["f32", "f16"])
def test_bias_and_relu_are_the_matmul_kernels_epilogue(device: str, element: str, rng: np.random.Generator):
    """relu(x @ w + b): one kernel; the product never reaches memory."""
    x_type, w_type, b_type, y_type = (tensor(s, element) for s in ((33, 40), (40, 70), (70,), (33, 70)))
    text = f"""func.func @main(%x: {x_type}, %w: {w_type}, %b: {b_type}) -> {y_type} {{
      %0 = graph.matmul %x, %w : ({x_type}, {w_type}) -> {y_type}
      %1 = graph.add %0, %b : ({y_type}, {b_type}) -> {y_type}
      %2 = graph.relu %1 : {y_type}
      func.return %2 : {y_type}
    }}"""
    assert sum(isinstance(op, tile.KernelOp) for op in lower(text, "graph-decompose,graph-fuse,convert-graph-to-tile").walk()) == 1
    x, w, b = random(rng, (33, 40), element), random(rng, (40, 70), element), random(rng, (70,), element)
    result = mlc.compile(text, device=device)(x, w, b)
    product = x.astype(np.float64) @ w
    if element == "f16":  # the product is rounded to f16 before the bias is added, as the graph says
        product = product.astype(np.float16).astype(np.float64)
    expected = np.maximum(product + b, 0)
    scale = np.abs(x.astype(np.float64)) @ np.abs(w.astype(np.float64))
    bound = 1e-5 * np.sqrt(40) * scale + (2.0**-10 * (np.abs(expected) + scale * 2.0**-11) if element == "f16" else 0) + 1e-6
    assert result.dtype == NUMPY[element]
    assert np.all(np.abs(result.astype(np.float64) - expected) <= bound)


@pytest.mark.parametrize("device", DEVICES)
def test_matmul_between_elementwise_kernels(device: str, rng: np.random.Generator):
    """relu(x) @ w + b, then tanh: the matmul reads a kernel's output and feeds another."""
    x_type, w_type, b_type, y_type = tensor((37, 20)), tensor((20, 50)), tensor((50,)), tensor((37, 50))
    text = f"""func.func @main(%x: {x_type}, %w: {w_type}, %b: {b_type}) -> {y_type} {{
      %r = graph.relu %x : {x_type}
      %0 = graph.matmul %r, %w : ({x_type}, {w_type}) -> {y_type}
      %1 = graph.add %0, %b : ({y_type}, {b_type}) -> {y_type}
      %2 = graph.tanh %1 : {y_type}
      func.return %2 : {y_type}
    }}"""
    x, w, b = random(rng, (37, 20)), random(rng, (20, 50)), random(rng, (50,))
    result = mlc.compile(text, device=device)(x, w, b)
    product = np.maximum(x.astype(np.float64), 0) @ w
    bound = 1e-5 * np.sqrt(20) * (np.abs(np.maximum(x, 0)).astype(np.float64) @ np.abs(w)) + 1e-6
    np.testing.assert_array_less(np.abs(result - np.tanh(product + b)), bound + 1e-6)


@pytest.mark.parametrize("device", DEVICES)
def test_residual_block(device: str, rng: np.random.Generator):
    """x + relu(x) @ w: the add reads x beside the product (its kernel is the matmul's epilogue)."""
    t = tensor((45, 45))
    text = f"""func.func @main(%x: {t}, %w: {t}) -> {t} {{
      %r = graph.relu %x : {t}
      %y = graph.matmul %r, %w : ({t}, {t}) -> {t}
      %z = graph.add %y, %x : ({t}, {t}) -> {t}
      func.return %z : {t}
    }}"""
    x, w = random(rng, (45, 45)), random(rng, (45, 45))
    relu = np.maximum(x, 0)
    result = mlc.compile(text, device=device)(x, w)
    bound = 1e-5 * np.sqrt(45) * (np.abs(relu).astype(np.float64) @ np.abs(w)) + 1e-6
    np.testing.assert_array_less(np.abs(result - (relu.astype(np.float64) @ w + x)), bound + 1e-6)


@pytest.mark.parametrize("device", DEVICES)
def test_empty_inner_dimension_gives_zeros(device: str):
    text = matmul_program((3, 0), (0, 4))
    result = mlc.compile(text, device=device)(np.empty((3, 0), np.float32), np.empty((0, 4), np.float32))
    np.testing.assert_array_equal(result, np.zeros((3, 4), np.float32))
