"""Layout ops, pools and convolutions compiled end to end agree with the graph interpreter.

Transposes of every permutation, slices with negative and out-of-range bounds, concatenations
along every axis, chains of them feeding elementwise ops and reductions, max and average pools
(strides, padding, windows reduced in one kernel and separably), and conv2d (padding, strides,
dilations, groups, depthwise (a direct kernel), 1x1, the implicit GEMM, bias and an activation,
f16). Each case runs on the CPU (CI)
and the GPU (`gpu`), compared element by element within the error bound derived from the program
(`mlc.dialects.graph.error_bounds`). Where fusion is the point, the number of kernel launches is
checked too: a layout op that reads its operand from memory costs no kernel of its own.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import mlc
from mlc.compiler import select_entry
from mlc.diagnostics import parse_module
from mlc.dialects import make_context
from mlc.dialects.element_types import to_numpy_dtype
from mlc.dialects.graph.error_bounds import check_results, result_bounds
from programs import lower, transposed_matmul_program

DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]


def tensor(shape: tuple[int, ...], element: str = "f32") -> str:
    return "tensor<" + "".join(f"{d}x" for d in shape) + element + ">"


def check(text: str, device: str, seed: int = 0, launches: int | None = None) -> None:
    """Compiles `text` for `device`, runs it on seeded inputs and compares with the interpreter."""
    module, _ = parse_module(text, make_context(), "<test>")
    function = select_entry(module, None)
    rng = np.random.default_rng(seed)
    inputs = [
        rng.uniform(-2, 2, t.get_shape()).astype(to_numpy_dtype(t.element_type)) for t in function.function_type.inputs.data
    ]
    expected, bounds = result_bounds(function, inputs)
    compiled = mlc.compile(text, device=device)
    results = compiled(*inputs)
    results = results if isinstance(results, tuple) else (results,)
    comparison = check_results(results, expected, bounds)
    assert comparison.failure is None, comparison.failure
    assert comparison.compared > 0
    if launches is not None:
        assert len(compiled.program.plan.launches) == launches


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("perm", [(1, 0, 2), (2, 0, 1), (2, 1, 0)])
def test_transpose_any_permutation_fuses_into_its_consumer(device: str, perm: tuple[int, ...]):
    shape = (3, 33, 65)
    result = tuple(shape[p] for p in perm)
    text = f"""func.func @main(%x: {tensor(shape)}, %y: {tensor(result)}) -> {tensor(result)} {{
      %t = graph.transpose %x perm {list(perm)} : {tensor(shape)} to {tensor(result)}
      %s = graph.add %t, %y : ({tensor(result)}, {tensor(result)}) -> {tensor(result)}
      func.return %s : {tensor(result)}
    }}"""
    check(text, device, launches=1)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(("shape", "element"), [((2, 70, 130), "f32"), ((129, 257), "f16"), ((5, 3), "i32")])
def test_lone_transpose_of_the_last_two_dimensions(device: str, shape: tuple[int, ...], element: str):
    """One kernel: on the GPU the shared-memory transpose (`transpose_kernel.py`), on the CPU a gather."""
    result = (*shape[:-2], shape[-1], shape[-2])
    perm = [*range(len(shape) - 2), len(shape) - 1, len(shape) - 2]
    text = f"""func.func @main(%x: {tensor(shape, element)}) -> {tensor(result, element)} {{
      %t = graph.transpose %x perm {perm} : {tensor(shape, element)} to {tensor(result, element)}
      func.return %t : {tensor(result, element)}
    }}"""
    check(text, device, launches=1)


@pytest.mark.parametrize("device", DEVICES)
def test_slices_with_negative_steps_and_concat_chain(device: str):
    text = f"""func.func @main(%x: {tensor((4, 9, 6))}, %y: {tensor((4, 2, 6))}) -> {tensor((6, 3, 4))} {{
      %s = graph.slice %x starts [-1, 100, 0] ends [-100, -100, 6] steps [-1, -4, 1] : {tensor((4, 9, 6))} to {tensor((4, 3, 6))}
      %c = graph.concat %y, %s, %y axis 1 : ({tensor((4, 2, 6))}, {tensor((4, 3, 6))}, {tensor((4, 2, 6))}) -> {tensor((4, 7, 6))}
      %d = graph.slice %c starts [0, 1, 5] ends [4, 7, -7] steps [1, 2, -2] : {tensor((4, 7, 6))} to {tensor((4, 3, 3))}
      %e = graph.exp %d : {tensor((4, 3, 3))}
      %r = graph.reduce_sum %e axes [2] keepdims true : {tensor((4, 3, 3))} to {tensor((4, 3, 1))}
      %n = graph.div %e, %r : ({tensor((4, 3, 3))}, {tensor((4, 3, 1))}) -> {tensor((4, 3, 3))}
      %t = graph.transpose %n perm [2, 1, 0] : {tensor((4, 3, 3))} to {tensor((3, 3, 4))}
      %u = graph.concat %t, %t axis 0 : ({tensor((3, 3, 4))}, {tensor((3, 3, 4))}) -> {tensor((6, 3, 4))}
      func.return %u : {tensor((6, 3, 4))}
    }}"""
    # The slices, the concatenation and the softmax are one kernel; the transposed concat another.
    check(text, device, launches=2)


TRANSPOSED_MATMULS = [
    # batch, M, K, N, transposed lhs, transposed rhs, element, bias and relu epilogue
    ((), 40, 48, 24, True, False, "f32", False),
    ((), 33, 70, 65, False, True, "f32", True),  # the torch linear: x @ transpose(W), W N x K
    ((2,), 17, 24, 40, True, True, "f32", False),
    ((), 64, 96, 128, False, True, "f16", True),
    ((), 80, 72, 136, True, True, "f16", False),  # tensor cores: ldmatrix of the stored blocks
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", TRANSPOSED_MATMULS)
def test_transpose_feeding_matmul_is_read_in_place(device: str, case):
    """A transpose of the last two dimensions feeding a matmul is an operand layout of the matmul's
    kernel (`mlc.operand_major`): one launch, no transposed copy."""
    batch, m, k, n, lhs_t, rhs_t, element, epilogue = case
    text = transposed_matmul_program(batch, m, k, n, lhs_t, rhs_t, element, epilogue)
    check(text, device, launches=1)


POOLS = [
    # kernel, strides, pads (top, left, bottom, right)
    ((2, 2), (2, 2), (0, 0, 0, 0)),
    ((3, 3), (1, 1), (1, 1, 1, 1)),
    ((3, 2), (2, 1), (1, 0, 2, 1)),
    ((5, 4), (2, 3), (2, 1, 1, 3)),  # 20 elements: reduced separably
    ((9, 7), (1, 1), (0, 0, 0, 0)),  # the whole image (a global pool)
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("kind", ["max_pool2d", "avg_pool2d"])
@pytest.mark.parametrize("kernel,strides,pads", POOLS)
def test_pools(device: str, kind: str, kernel, strides, pads):
    from mlc.dialects.graph.nn_ops import windowed_size

    height, width = 9, 7
    out = (
        windowed_size(height, kernel[0], strides[0], pads[0], pads[2]),
        windowed_size(width, kernel[1], strides[1], pads[1], pads[3]),
    )
    x, y = tensor((2, 3, height, width)), tensor((2, 3, *out))
    text = f"""func.func @main(%x: {x}) -> {y} {{
      %r = graph.relu %x : {x}
      %p = graph.{kind} %r kernel {list(kernel)} strides {list(strides)} pads {list(pads)} : {x} to {y}
      %n = graph.neg %p : {y}
      func.return %n : {y}
    }}"""
    check(text, device)


CONVOLUTIONS = [
    # N, C, H, W, O, kernel, strides, pads, dilations, group
    (2, 3, 8, 8, 4, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),
    (1, 4, 9, 7, 6, (3, 2), (2, 1), (0, 1, 2, 0), (2, 1), 2),
    (2, 6, 7, 7, 6, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 6),  # depthwise
    (3, 5, 6, 5, 7, (1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),  # 1x1
    (2, 16, 7, 5, 6, (3, 2), (1, 1), (0, 1, 2, 0), (2, 1), 1),  # implicit GEMM (channels a multiple of 8, stride 1)
    (1, 4, 9, 8, 8, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 4),  # depthwise, two outputs per channel
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(
    "element,case",
    [("f32", CONVOLUTIONS[0]), ("f32", CONVOLUTIONS[1]), ("f16", CONVOLUTIONS[2]), ("f32", CONVOLUTIONS[3]), ("f32", CONVOLUTIONS[4]), ("f32", CONVOLUTIONS[5])],
)
def test_conv2d_with_bias_and_activation(device: str, element: str, case):
    from mlc.dialects.graph.nn_ops import windowed_size

    batch, channels, height, width, outputs, kernel, strides, pads, dilations, group = case
    out = (
        windowed_size(height, kernel[0], strides[0], pads[0], pads[2], dilations[0]),
        windowed_size(width, kernel[1], strides[1], pads[1], pads[3], dilations[1]),
    )
    x, w = tensor((batch, channels, height, width), element), tensor((outputs, channels // group, *kernel), element)
    b, y = tensor((outputs,), element), tensor((batch, outputs, *out), element)
    text = f"""func.func @main(%x: {x}, %w: {w}, %b: {b}) -> {y} {{
      %c = graph.conv2d %x, %w, %b strides {list(strides)} pads {list(pads)} dilations {list(dilations)} group {group} : ({x}, {w}, {b}) -> {y}
      %r = graph.relu %c : {y}
      func.return %r : {y}
    }}"""
    check(text, device)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(("element", "case"), [("f16", CONVOLUTIONS[0]), ("bf16", CONVOLUTIONS[1]), ("f16", (2, 64, 10, 10, 32, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1))])
def test_half_precision_conv2d_without_bias_stays_half(device: str, element: str, case):
    """No bias: the product is the result, rounded once by the f16/bf16 matmul (no f32 copies)."""
    from mlc.dialects.graph.nn_ops import windowed_size

    batch, channels, height, width, outputs, kernel, strides, pads, dilations, group = case
    out = (
        windowed_size(height, kernel[0], strides[0], pads[0], pads[2], dilations[0]),
        windowed_size(width, kernel[1], strides[1], pads[1], pads[3], dilations[1]),
    )
    x, w = tensor((batch, channels, height, width), element), tensor((outputs, channels // group, *kernel), element)
    y = tensor((batch, outputs, *out), element)
    text = f"""func.func @main(%x: {x}, %w: {w}) -> {y} {{
      %c = graph.conv2d %x, %w strides {list(strides)} pads {list(pads)} dilations {list(dilations)} group {group} : ({x}, {w}) -> {y}
      func.return %c : {y}
    }}"""
    check(text, device)
    assert "f32" not in str(lower(text, "graph-decompose"))


@pytest.mark.gpu
def test_implicit_gemm_writes_nchw_itself_on_the_gpu():
    """On the GPU the implicit GEMM stores its product through the slice and the transpose back to
    NCHW (`tile.scatter`): three kernels (the input's windowed transpose, the weights' transpose,
    the GEMM), on the wgmma path (f16, 128 outputs: 64-column blocks) with ragged row blocks."""
    x, w, y = tensor((2, 64, 10, 9), "f16"), tensor((128, 64, 3, 3), "f16"), tensor((2, 128, 10, 9), "f16")
    text = f"""func.func @main(%x: {x}, %w: {w}) -> {y} {{
      %c = graph.conv2d %x, %w strides [1, 1] pads [1, 1, 1, 1] dilations [1, 1] group 1 : ({x}, {w}) -> {y}
      func.return %c : {y}
    }}"""
    check(text, "cuda", launches=3)


def test_conv2d_is_an_implicit_gemm():
    """A stride-1 convolution's column matrix never reaches memory: the matmul kernel reads the
    padded NHWC input at row-shifted origins (`mlc.implicit_gemm`), and no kernel writes kh*kw
    times the input."""
    x, w, y = tensor((2, 16, 6, 5), "f16"), tensor((8, 16, 3, 3), "f16"), tensor((2, 8, 6, 5), "f16")
    text = f"""func.func @main(%x: {x}, %w: {w}) -> {y} {{
      %c = graph.conv2d %x, %w strides [1, 1] pads [1, 1, 1, 1] dilations [1, 1] group 1 : ({x}, {w}) -> {y}
      func.return %c : {y}
    }}"""
    module = lower(text, "graph-decompose,cse,graph-fuse,convert-graph-to-tile")
    kernels = {op.sym_name.data: op for op in module.walk() if op.name == "tile.kernel"}
    (matmul,) = [kernel for kernel in kernels.values() if "mlc.implicit_gemm" in kernel.attributes]
    padded_pixels = 2 * 8 * 7
    assert [t.get_shape() for t in matmul.function_type.inputs.data][0] == (padded_pixels, 16)
    assert list(matmul.attributes["mlc.implicit_gemm"].get_values()) == [0, 1, 2, 7, 8, 9, 14, 15, 16]
    largest = max(math.prod(t.get_shape()) for kernel in kernels.values() for t in kernel.function_type.inputs.data)
    assert largest < 9 * 2 * 16 * 6 * 5


def test_depthwise_conv2d_is_one_kernel():
    """A depthwise convolution reads its windows in one elementwise kernel (no column matrix, no
    matmul)."""
    x, w, y = tensor((2, 6, 7, 7)), tensor((6, 1, 3, 3)), tensor((2, 6, 4, 4))
    text = f"""func.func @main(%x: {x}, %w: {w}) -> {y} {{
      %c = graph.conv2d %x, %w strides [2, 2] pads [1, 1, 1, 1] dilations [1, 1] group 6 : ({x}, {w}) -> {y}
      %r = graph.relu %c : {y}
      func.return %r : {y}
    }}"""
    check(text, "cpu", launches=1)


def test_bad_windows_are_located_errors():
    x, w = tensor((1, 3, 8, 8)), tensor((4, 2, 3, 3))
    text = f"""func.func @main(%x: {x}, %w: {w}) -> {tensor((1, 4, 6, 6))} {{
      %c = graph.conv2d %x, %w strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1] group 1 : ({x}, {w}) -> {tensor((1, 4, 6, 6))}
      func.return %c : {tensor((1, 4, 6, 6))}
    }}"""
    with pytest.raises(mlc.MlcError, match=r"<string>:2:.*must have 3 input channels"):
        mlc.compile(text, device="cpu")
    pool = f"""func.func @main(%x: {x}) -> {tensor((1, 3, 1, 1))} {{
      %p = graph.max_pool2d %x kernel [11, 3] strides [1, 1] pads [1, 1, 1, 1] : {x} to {tensor((1, 3, 1, 1))}
      func.return %p : {tensor((1, 3, 1, 1))}
    }}"""
    with pytest.raises(mlc.MlcError, match=r"<string>:2:.*larger than the padded spatial dimensions"):
        mlc.compile(pool, device="cpu")
    concat = f"""func.func @main(%x: {x}, %y: {tensor((1, 2, 7, 8))}) -> {tensor((1, 5, 8, 8))} {{
      %c = graph.concat %x, %y axis 1 : ({x}, {tensor((1, 2, 7, 8))}) -> {tensor((1, 5, 8, 8))}
      func.return %c : {tensor((1, 5, 8, 8))}
    }}"""
    with pytest.raises(mlc.MlcError, match=r"<string>:2:.*graph.concat"):
        mlc.compile(concat, device="cpu")
