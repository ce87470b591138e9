"""Every pass of both pipelines preserves what matmul programs compute.

Hypothesis draws a graph function around one `graph.matmul` (`matmul_programs.py`: odd sizes,
broadcast batches, f32, f16 and bf16, elementwise producers and epilogues) and random inputs; for each
pass of `mlc-lower-to-gpu` and `mlc-lower-to-cpu` the module is interpreted just before and just
after the pass. Across `convert-graph-to-tile` the graph interpreter (float64, rounded once) meets
f32 accumulation: the results are compared with the graph interpreter's on the drawn program,
element by element within the bound `error_bounds.result_bounds` derives from the program and its
data (`programs.assert_within_bounds`: gamma(K) * (|A| @ |B|) for the accumulation of K products,
plus a rounding of the result and of each epilogue op), and a result a few bounds off fails
(`programs.assert_perturbation_caught`). Every other pass is exact: the loop lowering adds the
products in the order the tile interpreter does, with the same fused multiply-adds, and the later
passes change no arithmetic. The GPU steps run the kernels in the GPU-level interpreter, on the CPU.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from matmul_programs import matmul_programs
from mlc.interpreter import run
from mlc.transforms.pipelines import CPU_PIPELINE, GPU_PIPELINE
from programs import assert_equivalent, assert_perturbation_caught, assert_within_bounds, lower, random_inputs, same_draws_for_every_step, stage

PASSES_BELOW_GRAPH = ("convert-graph-to-tile",)


def _steps(pipeline: str, target: str) -> dict[str, tuple[str, str]]:
    """(passes before, the pass) for each pass from convert-graph-to-tile on, repeats of cse/canonicalize once."""
    passes = pipeline.split(",")
    start = next(index for index, name in enumerate(passes) if name.split("{")[0] == "convert-graph-to-tile")
    steps: dict[str, tuple[str, str]] = {}
    for index in range(start, len(passes)):
        key = f"{target}:{passes[index]}"
        if key not in steps:
            steps[key] = (",".join(passes[:index]), passes[index])
    return steps


STEPS = _steps(GPU_PIPELINE, "gpu") | {
    key: value for key, value in _steps(CPU_PIPELINE, "cpu").items() if f"gpu:{key[4:]}" not in _steps(GPU_PIPELINE, "gpu")
}

ONE_BY_ONE = """func.func @main(%a: tensor<1x1xf32>, %b: tensor<1x1xf32>) -> tensor<1x1xf32> {
  %0 = graph.matmul %a, %b : (tensor<1x1xf32>, tensor<1x1xf32>) -> tensor<1x1xf32>
  func.return %0 : tensor<1x1xf32>
}
"""
RAGGED = ONE_BY_ONE.replace("%a: tensor<1x1xf32>", "%a: tensor<17x65xf32>").replace(
    "%b: tensor<1x1xf32>) -> tensor<1x1xf32>", "%b: tensor<65x33xf32>) -> tensor<17x33xf32>"
).replace("(tensor<1x1xf32>, tensor<1x1xf32>) -> tensor<1x1xf32>", "(tensor<17x65xf32>, tensor<65x33xf32>) -> tensor<17x33xf32>").replace(
    "func.return %0 : tensor<1x1xf32>", "func.return %0 : tensor<17x33xf32>"
)
BROADCAST_BATCH = """func.func @main(%a: tensor<3x5x7xf16>, %b: tensor<7x9xf16>) -> tensor<3x5x9xf16> {
  %0 = graph.matmul %a, %b : (tensor<3x5x7xf16>, tensor<7x9xf16>) -> tensor<3x5x9xf16>
  func.return %0 : tensor<3x5x9xf16>
}
"""

EPILOGUE = """func.func @main(%a: tensor<2x3x5x7xf16>, %b: tensor<3x7x9xf16>, %bias: tensor<9xf16>, %r: tensor<2x3x5x9xf16>) -> tensor<2x3x5x9xf16> {
  %0 = graph.matmul %a, %b : (tensor<2x3x5x7xf16>, tensor<3x7x9xf16>) -> tensor<2x3x5x9xf16>
  %1 = graph.add %0, %bias : (tensor<2x3x5x9xf16>, tensor<9xf16>) -> tensor<2x3x5x9xf16>
  %2 = graph.relu %1 : tensor<2x3x5x9xf16>
  %3 = graph.add %2, %r : (tensor<2x3x5x9xf16>, tensor<2x3x5x9xf16>) -> tensor<2x3x5x9xf16>
  func.return %3 : tensor<2x3x5x9xf16>
}
"""


@pytest.mark.parametrize("step", list(STEPS))  # pipeline order: each step reuses the last one's lowering
@same_draws_for_every_step
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(program=matmul_programs(), seed=st.integers(0, 2**32 - 1))
@example(program=ONE_BY_ONE, seed=1)
@example(program=BROADCAST_BATCH, seed=3)
@example(program=EPILOGUE, seed=4)
def test_pass_preserves_matmul(step: str, program: str, seed: int):
    _check_step(step, program, seed)


RAGGED_STEPS = list(step for step in STEPS if step.startswith("gpu:") or step in ("cpu:convert-tile-dot-to-cpu", "cpu:convert-loop-to-cpu"))
"""Every step but the CPU's LLVM ones, where the interpreter runs a block's threads one by one (slow)."""


@pytest.mark.parametrize("step", RAGGED_STEPS)
def test_pass_preserves_a_ragged_matmul(step: str):
    """17x33x65: partial blocks along M, N and K, and chunks cut by the matrix edges."""
    _check_step(step, RAGGED, 2)


def _check_step(step: str, program: str, seed: int) -> None:
    before_passes, name = STEPS[step]
    before = stage(program, before_passes)
    after = stage(program, f"{before_passes},{name}" if before_passes else name)
    inputs = random_inputs(program, seed)
    if name.split("{")[0] in PASSES_BELOW_GRAPH:
        actual = run(after, "main", [x.copy() for x in inputs])
        assert_within_bounds(program, inputs, actual)
        assert_perturbation_caught(program, inputs, actual)
    else:
        assert_equivalent(before, after, inputs)


TF32_MATMUL = """func.func @main(%a: tensor<17x65xf32>, %b: tensor<65x33xf32>) -> tensor<17x33xf32> {
  %0 = graph.matmul %a, %b : (tensor<17x65xf32>, tensor<65x33xf32>) -> tensor<17x33xf32>
  func.return %0 : tensor<17x33xf32>
}
"""


@pytest.mark.parametrize("precision", ["tf32", "3xtf32"])
def test_precision_reaches_the_tile_interpreter(precision: str):
    """convert-graph-to-tile{precision=...} puts the precision on the dot, and the tile interpreter
    models it as the graph interpreter does (operands rounded or split to TF32): the two agree
    within f32 accumulation, while tf32 is measurably off the IEEE product and 3xtf32 is not."""
    program = TF32_MATMUL.replace("graph.matmul %a, %b", f'graph.matmul %a, %b {{precision = "{precision}"}}')
    inputs = random_inputs(TF32_MATMUL, 5)
    graph_result = run(lower(program, ""), "main", [x.copy() for x in inputs])[0]
    tile_result = run(lower(TF32_MATMUL, f"convert-graph-to-tile{{precision={precision}}}"), "main", [x.copy() for x in inputs])[0]
    exact = inputs[0].astype(np.float64) @ inputs[1].astype(np.float64)
    scale = np.abs(inputs[0].astype(np.float64)) @ np.abs(inputs[1].astype(np.float64))
    np.testing.assert_array_less(np.abs(tile_result - graph_result), 65 * 2.0**-24 * scale + 1e-30)
    assert_within_bounds(program, inputs, [tile_result])
    relative_error = float(np.max(np.abs(graph_result - exact) / scale))
    if precision == "tf32":
        assert 2.0**-16 < relative_error < 2 * 2.0**-10 + 2.0**-20
    else:
        assert relative_error < 4 * 2.0**-20
