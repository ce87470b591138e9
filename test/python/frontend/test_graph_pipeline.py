"""Acceptance of issue 3: ONNX models through the whole graph pipeline compute what they computed.

A small CNN, an MLP and a transformer block (`onnx_models.py`) are imported, then optimised with
`GRAPH_PIPELINE` (simplify, fold constants, CSE, fuse into kernels, plan memory). On fresh random
inputs the graph interpreter must give the same bits before and after the pipeline (every pass of
it is exact), and both must agree with ONNX's reference evaluator. The fused module must print,
parse back and verify, every matmul and convolution must sit in its own group, and the memory plan
must cover the groups' outputs only.

The order is the one that composes: graph-plan-memory after graph-fuse plans the values that leave
groups (what stays inside a group never reaches memory); graph-fuse removes a plan made before it.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

pytest.importorskip("onnx")

from xdsl.dialects import func  # noqa: E402

from mlc.diagnostics import parse_module, verify  # noqa: E402
from mlc.dialects import make_context  # noqa: E402
from mlc.dialects.graph import ops as graph  # noqa: E402
from mlc.frontend.onnx import import_model  # noqa: E402
from mlc.interpreter import run  # noqa: E402
from mlc.passes import build_pipeline  # noqa: E402
from mlc.transforms import all_passes  # noqa: E402
from mlc.transforms.analysis.memory_plan import PLAN_ATTR, buffer_of  # noqa: E402
from onnx_models import cnn, mlp, reference, transformer_block  # noqa: E402

GRAPH_PIPELINE = "graph-simplify,graph-fold-constants,cse,graph-fuse,graph-plan-memory"

EXPECTED_KINDS = {
    "mlp": Counter({"matmul": 2, "reduction": 1}),
    "cnn": Counter({"conv": 2, "opaque": 1, "reduction": 1, "matmul": 1}),
    # layer norms (2), the QKV, score, context, output and MLP matmuls (6), the scaled softmax,
    # and the slices and transposes that split and merge the heads (3 + 4).
    "transformer_block": Counter({"reduction": 3, "matmul": 6, "opaque": 7}),
}
MODELS = {"mlp": mlp, "cnn": cnn, "transformer_block": transformer_block}


def _optimise(module, pipeline: str = GRAPH_PIPELINE):
    optimised = module.clone()
    context = make_context()
    for module_pass in build_pipeline(pipeline, all_passes(), mlir_syntax=False):
        module_pass.apply(context, optimised)
        verify(optimised)
    return optimised


def _main(module) -> func.FuncOp:
    return next(op for op in module.walk() if isinstance(op, func.FuncOp))


@pytest.mark.parametrize("name", sorted(MODELS))
def test_graph_pipeline_keeps_results(name: str):
    onnx_model, draw = MODELS[name]()
    module = import_model(onnx_model)
    optimised = _optimise(module)
    parsed, _ = parse_module(str(optimised), make_context())
    verify(parsed)
    rng = np.random.default_rng(sum(map(ord, name)))
    for _ in range(3):
        inputs = draw(rng)
        before = run(module, "main", list(inputs.values()))
        after = run(optimised, "main", list(inputs.values()))
        again = run(parsed, "main", list(inputs.values()))
        for index, (want, got, reread, onnx_result) in enumerate(zip(before, after, again, reference(onnx_model, inputs))):
            np.testing.assert_array_equal(got, want, err_msg=f"{name}: result #{index} after the pipeline")
            np.testing.assert_array_equal(reread, want, err_msg=f"{name}: result #{index} printed and parsed")
            np.testing.assert_allclose(got, onnx_result, rtol=1e-4, atol=1e-4, err_msg=f"{name}: result #{index} vs ONNX")


@pytest.mark.parametrize("name", sorted(MODELS))
def test_fusion_plan_of_the_models(name: str):
    onnx_model, _ = MODELS[name]()
    optimised = _optimise(import_model(onnx_model))
    function = _main(optimised)
    fusions = [op for op in function.body.block.ops if isinstance(op, graph.FusionOp)]
    assert Counter(fusion.kind.data for fusion in fusions) == EXPECTED_KINDS[name]
    for fusion in fusions:
        contractions = [op for op in fusion.body.walk() if isinstance(op, graph.CONTRACTION_OPS)]
        assert len(contractions) == (fusion.kind.data in ("matmul", "conv"))
    outside = [op for op in function.body.block.ops if not isinstance(op, (graph.FusionOp, func.ReturnOp))]
    assert all(isinstance(op, (graph.ConstantOp, graph.ReshapeOp)) for op in outside)
    # The plan covers group outputs (and reshape views of them), never what stays inside a group.
    assert PLAN_ATTR in function.attributes
    planned = [result for op in function.body.block.ops for result in op.results if buffer_of(result) is not None]
    assert all(isinstance(value.owner, (graph.FusionOp, graph.ReshapeOp)) for value in planned)
    assert not any(buffer_of(result) for fusion in fusions for op in fusion.body.walk() for result in op.results)


def test_plan_then_fuse_composes():
    """A plan made before graph-fuse is removed by it and made again after: the same final IR."""
    onnx_model, _ = transformer_block()
    module = import_model(onnx_model)
    planned_first = _optimise(module, "graph-simplify,graph-fold-constants,cse,graph-plan-memory,graph-fuse,graph-plan-memory")
    assert str(planned_first) == str(_optimise(module))
