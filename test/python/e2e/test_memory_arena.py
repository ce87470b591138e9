"""Compiled programs run their intermediates out of graph-plan-memory's arena.

A pre-norm MLP block with a classifier (layer norm, two matmuls with bias, gelu and a residual,
a third matmul, softmax) is compiled with the standard pipeline. The `HostPlan` must hold exactly
one intermediate allocation, of the plan's `arena_bytes` (which `graph-plan-memory` computes on
the same graph stages), with every intermediate a view of it and at least two sharing bytes. The
results must be the bits of the same program compiled without graph-plan-memory (same kernels,
one allocation per intermediate) and within the error bound of the graph interpreter
(`error_bounds`). On the CPU here, on the GPU where one is present (`gpu`).
"""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects import func

import mlc
from mlc.dialects.graph.error_bounds import check_results, result_bounds
from mlc.transforms.analysis.memory_plan import PLAN_ATTR
from mlc.transforms.pipelines import CPU_PIPELINE, GPU_PIPELINE
from programs import lower

MLP_BLOCK = """
func.func @main(%x: tensor<64x128xf32>, %g: tensor<128xf32>, %beta: tensor<128xf32>, %w1: tensor<128x512xf32>,
                %b1: tensor<512xf32>, %w2: tensor<512x128xf32>, %b2: tensor<128xf32>, %wc: tensor<128x16xf32>) -> tensor<64x16xf32> {
  %n = graph.layer_norm %x, %g, %beta axis 1 epsilon 1.000000e-05 : (tensor<64x128xf32>, tensor<128xf32>, tensor<128xf32>) -> tensor<64x128xf32>
  %h0 = graph.matmul %n, %w1 : (tensor<64x128xf32>, tensor<128x512xf32>) -> tensor<64x512xf32>
  %h1 = graph.add %h0, %b1 : (tensor<64x512xf32>, tensor<512xf32>) -> tensor<64x512xf32>
  %h2 = graph.gelu %h1 : tensor<64x512xf32>
  %o0 = graph.matmul %h2, %w2 : (tensor<64x512xf32>, tensor<512x128xf32>) -> tensor<64x128xf32>
  %o1 = graph.add %o0, %b2 : (tensor<64x128xf32>, tensor<128xf32>) -> tensor<64x128xf32>
  %r = graph.add %x, %o1 : (tensor<64x128xf32>, tensor<64x128xf32>) -> tensor<64x128xf32>
  %l = graph.matmul %r, %wc : (tensor<64x128xf32>, tensor<128x16xf32>) -> tensor<64x16xf32>
  %p = graph.softmax %l axis 1 : tensor<64x16xf32>
  func.return %p : tensor<64x16xf32>
}
"""
SHAPES = [(64, 128), (128,), (128,), (128, 512), (512,), (512, 128), (128,), (128, 16)]


def _inputs(seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(shape) / np.sqrt(shape[0])).astype(np.float32) for shape in SHAPES]


def _planned_arena_bytes(pipeline: str) -> int:
    graph_stages = pipeline[: pipeline.index(",convert-graph-to-tile")]
    function = next(op for op in lower(MLP_BLOCK, graph_stages).ops if isinstance(op, func.FuncOp))
    return function.attributes[PLAN_ATTR].data["arena_bytes"].value.data  # type: ignore[attr-defined]


def _check_one_arena(compiled: mlc.CompiledFunction, arena_bytes: int) -> None:
    plan = compiled.program.plan
    intermediates = [allocation for allocation in plan.allocations if not allocation.is_result]
    assert [allocation.spec.nbytes for allocation in intermediates] == [arena_bytes]
    assert {view.root for view in plan.views} == {intermediates[0].slot}
    assert len(plan.views) >= 3
    offsets = [view.byte_offset for view in plan.views]
    assert len(set(offsets)) < len(offsets), "no two intermediates share bytes"
    assert sum(view.spec.nbytes for view in plan.views) > arena_bytes


def _check_arena_program(device: str, pipeline: str) -> None:
    compiled = mlc.compile(MLP_BLOCK, device=device)
    _check_one_arena(compiled, _planned_arena_bytes(pipeline))
    unplanned = mlc.compile(MLP_BLOCK, device=device, pipeline=pipeline.replace(",graph-plan-memory", ""))
    assert not unplanned.program.plan.views
    function = next(op for op in compiled.graph_module.ops if isinstance(op, func.FuncOp))
    for seed in range(2):
        inputs = _inputs(seed)
        got = compiled(*inputs)
        np.testing.assert_array_equal(got, unplanned(*inputs))
        expected, bounds = result_bounds(function, inputs)
        comparison = check_results([got], expected, bounds)
        assert comparison.failure is None, comparison.failure
        assert comparison.compared == got.size


def test_cpu_program_runs_out_of_one_arena() -> None:
    _check_arena_program("cpu", CPU_PIPELINE)


@pytest.mark.gpu
def test_gpu_program_runs_out_of_one_arena() -> None:
    _check_arena_program("cuda", GPU_PIPELINE)
