"""bf16 end to end: compiled bf16 programs against numpy and PyTorch, within derived error bounds.

bf16 tensors are `ml_dtypes.bfloat16` arrays (PyTorch bf16 tensors on the GPU). Kernels load
bf16, compute in f32 and round each stored result to nearest even, as PyTorch does. Compiled
results are compared with the graph interpreter under the bound `error_bounds.result_bounds`
derives for the program and the data (never a guessed tolerance); a matmul also with the exact
float64 product, under its forward error bound (f32 accumulation plus one bf16 rounding).

Also here: the rounding itself (f32 -> bf16 bit for bit against ml_dtypes, ties, subnormals,
NaN and infinities included), ONNX models with bf16 inputs and initializers, the bad inputs
(a float32 array for a bf16 parameter; a TF32 precision the target cannot compute; bf16 on a
GPU older than sm_80) and, marked `gpu`, the kernels against PyTorch.
"""

from __future__ import annotations

import re

import ml_dtypes
import numpy as np
import pytest

import mlc
from mlc.compiler import select_entry
from mlc.diagnostics import parse_module
from mlc.dialects import make_context
from mlc.dialects.graph.error_bounds import check_results, result_bounds

BF16 = ml_dtypes.bfloat16

PROGRAM = """func.func @main(%x: tensor<16x96xbf16>, %w: tensor<96x40xbf16>, %b: tensor<40xbf16>, %s: tensor<40xbf16>)
    -> (tensor<16x40xbf16>, tensor<16x40xbf16>, tensor<16x40xbf16>, tensor<16x40xbf16>, tensor<16xbf16>, tensor<16x96xf32>) {
  %0 = graph.matmul %x, %w : (tensor<16x96xbf16>, tensor<96x40xbf16>) -> tensor<16x40xbf16>
  %1 = graph.add %0, %b : (tensor<16x40xbf16>, tensor<40xbf16>) -> tensor<16x40xbf16>
  %2 = "graph.gelu"(%1) <{approximate = "tanh"}> : (tensor<16x40xbf16>) -> tensor<16x40xbf16>
  %3 = "graph.softmax"(%2) <{axis = 1 : i64}> : (tensor<16x40xbf16>) -> tensor<16x40xbf16>
  %4 = "graph.layer_norm"(%1, %s, %b) <{axis = 1 : i64, epsilon = 1.0e-05 : f32}> : (tensor<16x40xbf16>, tensor<40xbf16>, tensor<40xbf16>) -> tensor<16x40xbf16>
  %5 = "graph.reduce_sum"(%x) <{axes = array<i64: 1>, keepdims = false}> : (tensor<16x96xbf16>) -> tensor<16xbf16>
  %6 = graph.cast %x : tensor<16x96xbf16> to tensor<16x96xf32>
  func.return %0, %2, %3, %4, %5, %6 : tensor<16x40xbf16>, tensor<16x40xbf16>, tensor<16x40xbf16>, tensor<16x40xbf16>, tensor<16xbf16>, tensor<16x96xf32>
}
"""


def _inputs(seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    shapes = [(16, 96), (96, 40), (40,), (40,)]
    return [(rng.standard_normal(shape) * 0.5).astype(BF16) for shape in shapes]


def _bounds(text: str, inputs: list[np.ndarray]):
    module, _ = parse_module(text, make_context(), "<bf16>")
    return result_bounds(select_entry(module, None), inputs)


def _check(results, text: str, inputs: list[np.ndarray]) -> None:
    expected, bounds = _bounds(text, inputs)
    results = results if isinstance(results, tuple) else (results,)
    for got, want in zip(results, expected):
        assert got.dtype == want.dtype and got.shape == want.shape
    comparison = check_results(results, expected, bounds)
    assert comparison.failure is None, comparison.failure
    assert comparison.compared == sum(np.size(e) for e in expected)


@pytest.fixture(scope="module")
def compiled_for_the_cpu() -> mlc.CompiledFunction:
    return mlc.compile(PROGRAM, device="cpu")


def test_compiled_bf16_program_matches_the_interpreter_on_the_cpu(compiled_for_the_cpu: mlc.CompiledFunction):
    """matmul + bias + gelu, softmax, layer norm, a row sum and a cast, in bf16 on the CPU."""
    for seed in range(2):
        inputs = _inputs(seed)
        _check(compiled_for_the_cpu(*inputs), PROGRAM, inputs)


def test_bf16_matmul_is_the_exact_product_within_its_forward_error_bound(compiled_for_the_cpu: mlc.CompiledFunction):
    """f32 accumulation of K products (gamma(K) |A||B|) and one rounding to bf16 (2^-8 |C|)."""
    x, w, *_ = inputs = _inputs(1)
    got = compiled_for_the_cpu(*inputs)[0].astype(np.float64)
    _assert_product_within_bound(got, x, w)


def _assert_product_within_bound(got: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    exact, depth = a64 @ b64, a.shape[-1]
    u32, u16 = 2.0**-24, 2.0**-8
    bound = depth * u32 / (1 - depth * u32) * (np.abs(a64) @ np.abs(b64)) * (1 + u16) + u16 * np.abs(exact)
    assert np.all(np.abs(got - exact) <= bound)


def _rounding_cases() -> np.ndarray:
    rng = np.random.default_rng(2)
    bits = rng.integers(0, 2**32, size=1 << 16, dtype=np.uint64).astype(np.uint32)
    high = rng.integers(0, 2**16, size=4096, dtype=np.uint64).astype(np.uint32) << 16
    special = np.array([0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001, 0xFF812345,
                        0x7F7FFFFF, 0x7F7F8000, 0x00008000, 0x00018000, 0x80007FFF, 0x3F808000, 0x3F818000], dtype=np.uint32)
    return np.concatenate([bits, high | 0x8000, high | 0x7FFF, high | 0x8001, special]).view(np.float32)


def test_f32_to_bf16_rounds_to_nearest_even_bit_for_bit():
    """Ties to even, subnormals kept (not flushed), overflow to infinity, NaN stays NaN."""
    x = _rounding_cases()
    text = f"""func.func @main(%x: tensor<{x.size}xf32>) -> tensor<{x.size}xbf16> {{
      %0 = graph.cast %x : tensor<{x.size}xf32> to tensor<{x.size}xbf16>
      func.return %0 : tensor<{x.size}xbf16>
    }}"""
    got = mlc.compile(text, device="cpu")(x)
    with np.errstate(invalid="ignore"):
        want = x.astype(BF16)
    nan = np.isnan(x)
    np.testing.assert_array_equal(got.view(np.uint16)[~nan], want.view(np.uint16)[~nan])
    assert np.all(np.isnan(got[nan].astype(np.float32)))


def test_interpreter_rounds_bf16_as_pytorch_does():
    """PyTorch computes a bf16 op in f32 and rounds once: for correctly rounded ops the
    interpreter's bf16 result is that, bit for bit."""
    text = """func.func @main(%x: tensor<4096xbf16>, %y: tensor<4096xbf16>) -> (tensor<4096xbf16>, tensor<4096xbf16>) {
      %0 = graph.add %x, %y : (tensor<4096xbf16>, tensor<4096xbf16>) -> tensor<4096xbf16>
      %1 = graph.div %x, %y : (tensor<4096xbf16>, tensor<4096xbf16>) -> tensor<4096xbf16>
      func.return %0, %1 : tensor<4096xbf16>, tensor<4096xbf16>
    }"""
    rng = np.random.default_rng(3)
    x, y = (rng.standard_normal(4096).astype(BF16) for _ in range(2))
    total, quotient = mlc.interpret(text, x, y)
    x32, y32 = x.astype(np.float32), y.astype(np.float32)
    np.testing.assert_array_equal(total.view(np.uint16), (x32 + y32).astype(BF16).view(np.uint16))
    np.testing.assert_array_equal(quotient.view(np.uint16), (x32 / y32).astype(BF16).view(np.uint16))


def test_onnx_bf16_model_compiles_for_the_cpu():
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    from mlc.frontend.onnx import import_model

    rng = np.random.default_rng(4)
    w = rng.standard_normal((16, 8)).astype(BF16)
    initializers = [
        helper.make_tensor("w", TensorProto.BFLOAT16, w.shape, w.view(np.uint16).tobytes(), raw=True),
        helper.make_tensor("b", TensorProto.BFLOAT16, [8], [float(v) / 4 for v in range(8)]),
    ]
    nodes = [helper.make_node("MatMul", ["x", "w"], ["y"]), helper.make_node("Add", ["y", "b"], ["out"])]
    graph = helper.make_graph(
        nodes, "bf16", [helper.make_tensor_value_info("x", TensorProto.BFLOAT16, [4, 16])],
        [helper.make_tensor_value_info("out", TensorProto.BFLOAT16, [4, 8])], initializers,
    )
    module = import_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    assert "tensor<16x8xbf16>" in str(module) and onnx is not None
    x = rng.standard_normal((4, 16)).astype(BF16)
    got = mlc.compile(module, device="cpu")(x)
    exact = x.astype(np.float64) @ w.astype(np.float64) + np.arange(8) / 4
    scale = np.abs(x.astype(np.float64)) @ np.abs(w.astype(np.float64)) + np.arange(8) / 4
    assert got.dtype == BF16
    assert np.all(np.abs(got.astype(np.float64) - exact) <= 2 * 2.0**-8 * scale + 16 * 2.0**-24 * scale)


# -- bad input --------------------------------------------------------------------------------------


def test_float32_array_for_a_bf16_parameter_names_the_argument_and_the_fix(compiled_for_the_cpu: mlc.CompiledFunction):
    inputs = _inputs(5)
    inputs[0] = inputs[0].astype(np.float32)
    with pytest.raises(mlc.ArgumentError, match=r"argument #0 \(%x\) of @main: expected dtype bfloat16 .*ml_dtypes\.bfloat16"):
        compiled_for_the_cpu(*inputs)


TF32_PROGRAM = """func.func @main(%a: tensor<8x16xf32>, %b: tensor<16x4xf32>) -> tensor<8x4xf32> {
  %0 = graph.matmul %a, %b : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  func.return %0 : tensor<8x4xf32>
}
"""


@pytest.mark.parametrize("precision", ["tf32", "3xtf32"])
def test_a_precision_the_cpu_cannot_compute_is_refused_naming_op_and_target(precision: str):
    with pytest.raises(mlc.LoweringError, match=rf"<string>:2:3: error: 'graph.matmul' op precision '{precision}' cannot be honoured on target 'cpu'"):
        mlc.compile(TF32_PROGRAM, device="cpu", precision=precision)
    stated = TF32_PROGRAM.replace("graph.matmul %a, %b", f'graph.matmul %a, %b {{precision = "{precision}"}}')
    with pytest.raises(mlc.LoweringError, match=f"precision '{precision}' cannot be honoured on target 'cpu'"):
        mlc.compile(stated, device="cpu")


def test_precision_ieee_compiles_and_bad_precision_arguments_are_refused():
    a, b = np.ones((8, 16), np.float32), np.ones((16, 4), np.float32)
    np.testing.assert_array_equal(mlc.compile(TF32_PROGRAM, device="cpu", precision="ieee")(a, b), np.full((8, 4), 16.0, np.float32))
    with pytest.raises(mlc.ArgumentError, match=r"precision must be one of 'ieee', 'tf32', '3xtf32', got 'TF32' \(did you mean 'tf32'\?\)"):
        mlc.compile(TF32_PROGRAM, device="cpu", precision="TF32")
    with pytest.raises(mlc.ArgumentError, match=r"with pipeline= give it to convert-graph-to-tile"):
        mlc.compile(TF32_PROGRAM, device="cpu", precision="tf32", pipeline="mlc-lower-to-cpu")
    with pytest.raises(mlc.ArgumentTypeError, match="precision must be a string or None; got float"):
        mlc.compile(TF32_PROGRAM, device="cpu", precision=0.5)
    # A pipeline that asks for TF32 itself is refused by the pass that cannot honour it.
    with pytest.raises(mlc.LoweringError, match=r"'tile.dot' op precision 'tf32' cannot be honoured by convert-tile-to-loop"):
        mlc.compile(TF32_PROGRAM, device="cpu", pipeline="mlc-lower-to-cpu{precision=tf32}")


def test_bf16_on_a_gpu_without_bf16_is_refused_naming_op_and_gpu(monkeypatch: pytest.MonkeyPatch):
    import mlc.runtime
    from mlc.compiler import compile as compile_source

    class Turing:
        name, arch = "Tesla T4", "sm_75"

    monkeypatch.setattr(mlc.runtime, "get_device", lambda: Turing())
    monkeypatch.setattr("mlc.compiler.resolve_device", lambda device: "cuda")
    with pytest.raises(mlc.LoweringError, match=r"'graph.matmul' op computes on bf16, which needs a GPU of compute capability 8.0 or newer \(sm_80\+\); the target, Tesla T4, is sm_75"):
        compile_source(PROGRAM, device="cuda")


def test_ptx_for_an_arch_without_bf16_is_refused_naming_the_kernel():
    from mlc import backend
    from mlc.compiler import lower

    module, _ = parse_module(
        """func.func @main(%x: tensor<64xbf16>) -> tensor<64xbf16> {
          %0 = graph.exp %x : tensor<64xbf16>
          func.return %0 : tensor<64xbf16>
        }""",
        make_context(),
        "<bf16>",
    )
    lower(module, "mlc-lower-to-gpu")
    with pytest.raises(backend.BackendError, match=r"kernel 'main_0_exp' computes on bf16, which needs .* the target is sm_75"):
        backend.compile_to_ptx(module, arch="sm_75")
    assert re.search(r"cvt\.rn\.bf16(x2)?\.f32", backend.compile_to_ptx(module, arch="sm_80"))


# -- GPU, against PyTorch ---------------------------------------------------------------------------


@pytest.mark.gpu
def test_bf16_kernels_match_pytorch_on_the_gpu():
    """The same program on the GPU: numpy (ml_dtypes) and PyTorch bf16 tensors in, each result
    within the derived bound of the interpreter, and PyTorch's own bf16 computation too."""
    torch = pytest.importorskip("torch")
    import torch.nn.functional as functional

    inputs = _inputs(6)
    compiled = mlc.compile(PROGRAM, device="cuda")
    _check(compiled(*inputs), PROGRAM, inputs)
    x, w, b, s = (torch.from_numpy(a.view(np.int16)).view(torch.bfloat16).cuda() for a in inputs)
    results = compiled(x, w, b, s)
    _check(results, PROGRAM, inputs)
    product = x @ w + b
    theirs = [
        x @ w,
        functional.gelu(product, approximate="tanh"),
        torch.softmax(functional.gelu(product, approximate="tanh"), dim=1),
        functional.layer_norm(product, (40,), s, b, eps=1e-5),
        x.sum(dim=1),
        x.float(),
    ]
    as_numpy = tuple(t.cpu().view(torch.int16).numpy().view(BF16) if t.dtype == torch.bfloat16 else t.cpu().numpy() for t in theirs)
    _check(as_numpy, PROGRAM, inputs)


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(1, 1, 1), (17, 33, 65), (128, 256, 512), (1024, 1024, 1024)])
def test_bf16_matmul_matches_pytorch_on_the_gpu(shape: tuple[int, int, int]):
    """f32 accumulation (gamma(K) |A||B|) and one bf16 rounding each, for mlc and for cuBLAS."""
    torch = pytest.importorskip("torch")
    m, k, n = shape
    text = f"""func.func @main(%a: tensor<{m}x{k}xbf16>, %b: tensor<{k}x{n}xbf16>) -> tensor<{m}x{n}xbf16> {{
      %0 = graph.matmul %a, %b : (tensor<{m}x{k}xbf16>, tensor<{k}x{n}xbf16>) -> tensor<{m}x{n}xbf16>
      func.return %0 : tensor<{m}x{n}xbf16>
    }}"""
    rng = np.random.default_rng(7)
    a, b = rng.standard_normal((m, k)).astype(BF16), rng.standard_normal((k, n)).astype(BF16)
    ours = mlc.compile(text, device="cuda")(a, b).astype(np.float64)
    _assert_product_within_bound(ours, a, b)
    ta, tb = (torch.from_numpy(x.view(np.int16)).view(torch.bfloat16).cuda() for x in (a, b))
    reduced = torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False  # f32 accumulation throughout
    try:
        theirs = (ta @ tb).float().cpu().numpy().astype(np.float64)
    finally:
        torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = reduced
    _assert_product_within_bound(theirs, a, b)
