"""Matrix products compiled from `graph.matmul` agree with numpy, on the CPU and on the GPU.

Every case draws random inputs (seeded by the test's name) and compares with the graph interpreter
and a float64 numpy reference, within the error bound `error_bounds.result_bounds` derives from
the program and the data (`programs.assert_compiled_matches`): the kernels accumulate in f32 in
their own order, so an element may be off by gamma(K) = K u / (1 - K u) times the sum of the
absolute values of its products (`|A| @ |B|`, the scale of the rounding errors, not of the result,
which may cancel to near zero), plus the roundings of the result and of each epilogue op (f16
results: one f16 rounding each). CPU cases stay small (CI time); the `gpu` ones, run on the GPU
machine, add the large shapes.
"""

from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest

import mlc
from mlc.dialects.tile import ops as tile
from mlc.transforms.pipelines import CPU_PIPELINE, GPU_PIPELINE
from programs import assert_compiled_matches, lower

GPU = pytest.mark.gpu
NUMPY = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16}


def tensor(shape: tuple[int, ...], element: str = "f32") -> str:
    return "tensor<" + "".join(f"{d}x" for d in shape) + element + ">"


def matmul_program(a_shape: tuple[int, ...], b_shape: tuple[int, ...], element: str = "f32") -> str:
    out = (*np.broadcast_shapes(a_shape[:-2], b_shape[:-2]), a_shape[-2], b_shape[-1])
    a, b, c = tensor(a_shape, element), tensor(b_shape, element), tensor(out, element)
    return f"""func.func @main(%a: {a}, %b: {b}) -> {c} {{
      %0 = graph.matmul %a, %b : ({a}, {b}) -> {c}
      func.return %0 : {c}
    }}"""


def assert_matmul_close(text: str, got: np.ndarray, a: np.ndarray, b: np.ndarray, element: str = "f32") -> None:
    """`got`, the compiled `text` (`matmul_program`) on `a` and `b`, is `a @ b` within the derived
    bound: f32 accumulation error (and one rounding to f16 for f16 results)."""
    expected = np.matmul(a.astype(np.float64), b.astype(np.float64))
    assert got.shape == expected.shape and got.dtype == NUMPY[element]
    assert_compiled_matches(text, [a, b], got, [expected])


def random(rng: np.random.Generator, shape: tuple[int, ...], element: str = "f32") -> np.ndarray:
    return rng.standard_normal(shape).astype(NUMPY[element])


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
    text = matmul_program(a_shape, b_shape)
    assert_matmul_close(text, mlc.compile(text, device=device)(a, b), a, b)


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
    text = matmul_program(a_shape, b_shape, "f16")
    assert_matmul_close(text, mlc.compile(text, device=device)(a, b), a, b, "f16")


@GPU
@pytest.mark.parametrize("element", ["f16", "bf16"])
@pytest.mark.parametrize("depth", [512, 520])
def test_pipelined_tensor_core_matmul(element: str, depth: int, rng: np.random.Generator):
    """Large enough for the 128x256x32 block: both operands copied by cp.async three K steps deep
    (81 KiB of dynamic shared memory); K = 520 ends in a partial step, whose copies zero-fill."""
    a, b = random(rng, (2048, depth), element), random(rng, (depth, 2048), element)
    text = matmul_program((2048, depth), (depth, 2048), element)
    lowered = str(lower(text, GPU_PIPELINE))
    assert "llvm.nvvm.cp.async.cg.shared.global.16" in lowered and "mlc.dynamic_shared_bytes" in lowered
    assert_matmul_close(text, mlc.compile(text, device="cuda")(a, b), a, b, element)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("block", ["16,16,4", "32,64,16", "128,128,8"])
def test_block_sizes_from_the_pass_option(device: str, block: str, rng: np.random.Generator):
    """Every block shape computes the same product (17x33x65: partial blocks in every dimension)."""
    text = matmul_program((17, 65), (65, 33))
    option = "convert-graph-to-tile{matmul-tile=" + block + "}"
    kernel = next(op for op in lower(text, option).walk() if isinstance(op, tile.KernelOp))
    assert list(kernel.attributes["mlc.matmul_tile"].get_values()) == [int(s) for s in block.split(",")]
    pipeline = re.sub(r"convert-graph-to-tile(\{[^}]*\})?", option, GPU_PIPELINE if device == "cuda" else CPU_PIPELINE)
    a, b = random(rng, (17, 65)), random(rng, (65, 33))
    assert_matmul_close(text, mlc.compile(text, device=device, pipeline=pipeline)(a, b), a, b)


def test_cpu_tall_block(rng: np.random.Generator):
    """The CPU's default block is 512 rows tall where that still makes 16 programs
    (`matmul_blocks.cpu_tile`); 520 rows end in a partial block of 8, 2050 columns in one of 2."""
    a_shape, b_shape = (520, 40), (40, 2050)
    text = matmul_program(a_shape, b_shape)
    kernel = next(op for op in lower(text, "convert-graph-to-tile{target=cpu}").walk() if isinstance(op, tile.KernelOp))
    assert list(kernel.attributes["mlc.matmul_tile"].get_values()) == [512, 128, 16]
    a, b = random(rng, a_shape), random(rng, b_shape)
    assert_matmul_close(text, mlc.compile(text, device="cpu")(a, b), a, b)


CPU_MICRO_KERNEL_SHAPES = [
    pytest.param((130, 70), (70, 129), id="130x129x70"),
    pytest.param((2, 37, 50), (2, 50, 45), id="batch2-37x45x50"),
    pytest.param((3, 4100), (4100, 40), id="3x40x4100-unpacked"),
    pytest.param((128, 27), (27, 4), id="128x4x27-narrow"),
]


@pytest.mark.parametrize("micro_kernel", ["8,32,16", "4,16,8", "2,8,4", "1,4,4"])
@pytest.mark.parametrize("a_shape, b_shape", CPU_MICRO_KERNEL_SHAPES)
def test_cpu_micro_kernels(micro_kernel: str, a_shape, b_shape, rng: np.random.Generator):
    """Every CPU micro-kernel (convert-tile-dot-to-cpu) computes the product, with rows, columns
    and K that are multiples of no block size, in batches, with K too long for a packed rhs panel
    (read in place), and with rows of the packed panel and the scratch accumulators narrower than
    64 bytes (their vector accesses state the alignment they have: a 4-column product crashed
    with aligned 16-byte accesses claiming 64)."""
    text = matmul_program(a_shape, b_shape)
    pipeline = CPU_PIPELINE.replace("convert-tile-dot-to-cpu", "convert-tile-dot-to-cpu{micro-kernel=" + micro_kernel + "}")
    a, b = random(rng, a_shape), random(rng, b_shape)
    assert_matmul_close(text, mlc.compile(text, device="cpu", pipeline=pipeline)(a, b), a, b)


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
    assert result.dtype == NUMPY[element]
    assert_compiled_matches(text, [x, w, b], result, [expected])


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
    assert_compiled_matches(text, [x, w, b], result, [np.tanh(product.astype(np.float32).astype(np.float64) + b)])


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
    product = (relu.astype(np.float64) @ w).astype(np.float32).astype(np.float64)  # %y is f32
    assert_compiled_matches(text, [x, w], result, [product + x])


@pytest.mark.parametrize("device", DEVICES)
def test_empty_inner_dimension_gives_zeros(device: str):
    text = matmul_program((3, 0), (0, 4))
    result = mlc.compile(text, device=device)(np.empty((3, 0), np.float32), np.empty((0, 4), np.float32))
    np.testing.assert_array_equal(result, np.zeros((3, 4), np.float32))


@pytest.mark.parametrize(
    "device, element, a_shape, b_shape",
    [
        *(("cpu", "i32", a, b) for a, b in (((2, 17, 33), (33, 9)), ((3, 0), (0, 4)))),
        *(pytest.param("cuda", "i32", a, b, marks=GPU) for a, b in (((2, 17, 33), (33, 9)), ((3, 0), (0, 4)))),
        ("cpu", "i64", (5, 7), (7, 3)),
        pytest.param("cuda", "i64", (5, 7), (7, 3), marks=GPU),
    ],
)
def test_integer_matmul_is_exact_and_wraps(device: str, element: str, a_shape, b_shape, rng: np.random.Generator):
    """Integer products (graph-decompose: one reduction over the broadcast products) equal numpy's,
    wrapping at the element type (i8-range operands for MatMulInteger-style use, then any)."""
    text = matmul_program(a_shape, b_shape, element)
    dtype = np.int32 if element == "i32" else np.int64
    compiled = mlc.compile(text, device=device)
    for limit in (128, np.iinfo(dtype).max):
        a = rng.integers(-limit, limit, a_shape, dtype=dtype)
        b = rng.integers(-limit, limit, b_shape, dtype=dtype)
        with np.errstate(over="ignore"):
            expected = np.matmul(a.astype(np.int64), b.astype(np.int64)).astype(dtype)
        np.testing.assert_array_equal(compiled(a, b), expected)
