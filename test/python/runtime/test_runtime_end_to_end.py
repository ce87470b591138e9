"""Graph programs through mlc's pipelines and backend, run by the runtime (CPU; GPU when present).

These tie the runtime to what the lowering and the backend really produce: host functions with
`memref.alloc` and launches, kernels with `mlc.arg_alignment`, libm/libdevice calls. They are
skipped when the pipeline or the backend cannot be imported. Results are compared with float64
numpy references: exactly where every element is one correctly rounded f32 operation (`add`),
else within the error bound `error_bounds.result_bounds` derives from the program and the data
(`programs.assert_compiled_matches`: exp's library error, f16 roundings and a GPU's flushing of
subnormals).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

pytest.importorskip("mlc.backend")

from xdsl.dialects.builtin import ModuleOp  # noqa: E402

from mlc.backend import compile_to_cpu_object, compile_to_ptx  # noqa: E402
from mlc.diagnostics import parse_module, verify  # noqa: E402
from mlc.dialects import make_context  # noqa: E402
from mlc.passes import build_pipeline  # noqa: E402
from mlc.runtime import HostProgram  # noqa: E402
from mlc.transforms import all_passes  # noqa: E402
from programs import assert_compiled_matches  # noqa: E402


def lowered(text: str, pipeline: str) -> ModuleOp:
    module, source_map = parse_module(text, make_context())
    for compiler_pass in build_pipeline(pipeline, all_passes(), mlir_syntax=False):
        compiler_pass.apply(make_context(), module)
    verify(module, source_map)
    return module


EXP_PROGRAM = """
func.func @main(%x: tensor<8x16xf32>, %b: tensor<16xf32>) -> tensor<8x16xf32> {
  %0 = "graph.add"(%x, %b) : (tensor<8x16xf32>, tensor<16xf32>) -> tensor<8x16xf32>
  %1 = "graph.exp"(%0) : (tensor<8x16xf32>) -> tensor<8x16xf32>
  %c = "graph.constant"() <{value = dense<2.0> : tensor<8x16xf32>}> : () -> tensor<8x16xf32>
  %2 = "graph.mul"(%1, %c) : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  func.return %2 : tensor<8x16xf32>
}
"""

HALF_PROGRAM = """
func.func @main(%x: tensor<4x64xf16>, %y: tensor<4x64xf16>) -> (tensor<4x64xf16>, tensor<4x64xf16>) {
  %0 = "graph.mul"(%x, %y) : (tensor<4x64xf16>, tensor<4x64xf16>) -> tensor<4x64xf16>
  %1 = "graph.max"(%0, %x) : (tensor<4x64xf16>, tensor<4x64xf16>) -> tensor<4x64xf16>
  %2 = "graph.sub"(%x, %y) : (tensor<4x64xf16>, tensor<4x64xf16>) -> tensor<4x64xf16>
  func.return %1, %2 : tensor<4x64xf16>, tensor<4x64xf16>
}
"""

ADD_PROGRAM = """
func.func @main(%x: tensor<64x256xf32>, %y: tensor<64x256xf32>) -> tensor<64x256xf32> {
  %0 = "graph.add"(%x, %y) : (tensor<64x256xf32>, tensor<64x256xf32>) -> tensor<64x256xf32>
  %1 = "graph.relu"(%0) : (tensor<64x256xf32>) -> tensor<64x256xf32>
  func.return %1 : tensor<64x256xf32>
}
"""


def exp_inputs(generator: np.random.Generator) -> list[np.ndarray]:
    return [
        generator.standard_normal((8, 16)).astype(np.float32),
        generator.standard_normal(16).astype(np.float32),
    ]


def exp_reference(x: np.ndarray, b: np.ndarray) -> list[np.ndarray]:
    return [2 * np.exp(x.astype(np.float64) + b)]


def half_inputs(generator: np.random.Generator) -> list[np.ndarray]:
    return [generator.standard_normal((4, 64)).astype(np.float16) for _ in range(2)]


def half_reference(x: np.ndarray, y: np.ndarray) -> list[np.ndarray]:
    x, y = x.astype(np.float64), y.astype(np.float64)
    return [np.maximum(x * y, x), x - y]


def add_inputs(generator: np.random.Generator) -> list[np.ndarray]:
    return [generator.standard_normal((64, 256)).astype(np.float32) for _ in range(2)]


def add_reference(x: np.ndarray, y: np.ndarray) -> list[np.ndarray]:
    return [np.maximum(x + y, 0)]


PROGRAMS: dict[str, tuple[str, Callable[..., list[np.ndarray]], Callable[..., list[np.ndarray]], bool]] = {
    "exp": (EXP_PROGRAM, exp_inputs, exp_reference, False),
    "half": (HALF_PROGRAM, half_inputs, half_reference, False),
    "add": (ADD_PROGRAM, add_inputs, add_reference, True),
}
"""name -> (program, inputs, float64 reference, whether results are exact)."""


def check(program: HostProgram, name: str) -> None:
    text, inputs, reference, exact = PROGRAMS[name]
    generator = np.random.default_rng(7)
    for _ in range(2):
        arguments = inputs(generator)
        results = program.run(*arguments)
        expected = reference(*arguments)
        for index, (result, want) in enumerate(zip(results, expected, strict=True)):
            assert result.dtype == arguments[0].dtype and result.shape == want.shape, (index, result.dtype, result.shape)
            if exact:
                np.testing.assert_array_equal(result, want.astype(result.dtype), err_msg=f"{name}: result #{index}")
        if not exact:
            assert_compiled_matches(text, arguments, results, expected)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_cpu_end_to_end(name: str) -> None:
    module = lowered(PROGRAMS[name][0], "mlc-lower-to-cpu")
    program = HostProgram.for_cpu(module, compile_to_cpu_object(module))
    check(program, name)


def test_cpu_inputs_misaligned_for_the_kernels_are_copied() -> None:
    module = lowered(ADD_PROGRAM, "mlc-lower-to-cpu")
    program = HostProgram.for_cpu(module, compile_to_cpu_object(module))
    assert program.plan.arguments[0].alignment >= 16, program.plan.arguments[0]
    raw = np.zeros(64 * 256 + 4, np.float32)
    x = raw[1 : 1 + 64 * 256].reshape(64, 256)  # 4 bytes past an aligned address
    x[...] = np.arange(64 * 256).reshape(64, 256) - 5000
    y = np.ones((64, 256), np.float32)
    np.testing.assert_array_equal(program.run(x, y)[0], np.maximum(x + y, 0))


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_gpu_end_to_end(name: str) -> None:
    from mlc.backend.nvptx import LibdeviceNotFoundError
    from mlc.runtime.cuda import get_device

    device = get_device()
    module = lowered(PROGRAMS[name][0], "mlc-lower-to-gpu")
    try:
        ptx = compile_to_ptx(module, device.arch)
    except LibdeviceNotFoundError as error:
        pytest.skip(f"libdevice is not installed here: {error}")
    check(HostProgram.for_cuda(module, ptx, device=device), name)
