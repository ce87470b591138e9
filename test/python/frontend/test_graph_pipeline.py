"""Acceptance of issue 3: ONNX models through the whole graph pipeline compute what they computed.

A small CNN, an MLP and a transformer block (`onnx_models.py`) are imported, then optimised with
`GRAPH_PIPELINE` (simplify, fold constants, CSE, fuse into kernels, plan memory). On fresh random
inputs the graph interpreter must give the same bits before and after the pipeline (every pass of
it is exact), and ONNX's reference evaluator must agree with them within the error bound derived
for the imported function and the data (`onnx_models.assert_within_import_bounds`). The fused
module must print, parse back and verify, every matmul and convolution must sit in its own group,
and the memory plan must cover the groups' outputs only.

The order is the one that composes: graph-plan-memory after graph-fuse plans the values that leave
groups (what stays inside a group never reaches memory); graph-fuse removes a plan made before it.

Peak memory: through the graph stages of the lowering pipelines (decompose, fuse, plan), the arena
of each model's intermediates, at sizes near real use, is at least the largest sum of aligned live
tensor sizes at any step (no arena can be smaller) and at most the sum of all of them (what one
allocation per intermediate takes); `live_bounds` computes both from the IR, sharing no code with
the planner, and `graph-plan-memory{report=true}` prints the arena's size.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

pytest.importorskip("onnx")

from xdsl.dialects import func  # noqa: E402
from xdsl.dialects.builtin import TensorType  # noqa: E402
from xdsl.ir import Operation, SSAValue  # noqa: E402
from xdsl.traits import ConstantLike  # noqa: E402

from mlc.diagnostics import parse_module, verify  # noqa: E402
from mlc.dialects import make_context  # noqa: E402
from mlc.dialects.graph import ops as graph  # noqa: E402
from mlc.frontend.onnx import import_model  # noqa: E402
from mlc.interpreter import run  # noqa: E402
from mlc.passes import build_pipeline  # noqa: E402
from mlc.transforms import all_passes  # noqa: E402
from mlc.dialects.element_types import byte_width  # noqa: E402
from mlc.transforms.analysis.memory_plan import PLAN_ATTR, buffer_of  # noqa: E402
from mlc.transforms.graph.graph_plan_memory import GraphPlanMemory  # noqa: E402
from onnx_models import assert_within_import_bounds, cnn, mlp, reference, transformer_block  # noqa: E402

GRAPH_PIPELINE = "graph-simplify,graph-fold-constants,cse,graph-fuse,graph-plan-memory"

EXPECTED_KINDS = {
    "mlp": Counter({"matmul": 2, "reduction": 1}),
    "cnn": Counter({"conv": 2, "opaque": 1, "reduction": 1, "matmul": 1}),
    # layer norms (2), the QKV, output and MLP matmuls (4), the attention core (score matmul,
    # scaled softmax, context matmul) as one chain, which also holds the layout ops that split and
    # merge the heads: it reads q, k and v from the QKV product and writes the merged heads in
    # place (`chain_operand_views.py`), so no layout group is left.
    "transformer_block": Counter({"reduction": 2, "matmul": 4, "chain": 1}),
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
        for index, (want, got, reread) in enumerate(zip(before, after, again, strict=True)):
            np.testing.assert_array_equal(got, want, err_msg=f"{name}: result #{index} after the pipeline")
            np.testing.assert_array_equal(reread, want, err_msg=f"{name}: result #{index} printed and parsed")
        # What the optimised function computes is bit for bit what the import computes: ONNX's
        # reference must be within the error bound derived for the imported function and the data.
        assert_within_import_bounds(module, list(inputs.values()), reference(onnx_model, inputs), f"{name} vs ONNX")


@pytest.mark.parametrize("name", sorted(MODELS))
def test_fusion_plan_of_the_models(name: str):
    onnx_model, _ = MODELS[name]()
    optimised = _optimise(import_model(onnx_model))
    function = _main(optimised)
    fusions = [op for op in function.body.block.ops if isinstance(op, graph.FusionOp)]
    assert Counter(fusion.kind.data for fusion in fusions) == EXPECTED_KINDS[name]
    for fusion in fusions:
        contractions = [op for op in fusion.body.walk() if isinstance(op, graph.CONTRACTION_OPS)]
        # One contraction per matmul/conv group, the two of attention in a chain, none elsewhere.
        assert len(contractions) == {"matmul": 1, "conv": 1, "chain": 2}.get(fusion.kind.data, 0)
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


LOWERING_GRAPH_STAGES = "graph-simplify,graph-fold-constants,cse,graph-decompose,cse,graph-fold-constants,graph-fuse,graph-plan-memory"
"""The graph part of mlc-lower-to-cpu and mlc-lower-to-gpu."""
LARGER_MODELS = {
    "mlp": lambda: mlp(batch=64, features=128, hidden=512, classes=10),
    "cnn": lambda: cnn(batch=4, channels=3, size=32, classes=10),
    "transformer_block": lambda: transformer_block(batch=2, tokens=64, width=64, heads=4),
}


def _aligned_bytes(value: SSAValue, alignment: int) -> int:
    value_type = value.type
    assert isinstance(value_type, TensorType)
    size = math.prod(value_type.get_shape()) * byte_width(value_type.element_type)
    return -(-size // alignment) * alignment


def _step(op: Operation, body) -> Operation:  # type: ignore[no-untyped-def]
    while op.parent_block() is not body:
        op = op.parent_op()  # type: ignore[assignment]
    return op


def live_bounds(function: func.FuncOp, alignment: int) -> tuple[int, int]:
    """(the largest sum of aligned sizes of intermediates live at one step, the sum of all of them).

    An intermediate is a top-level result that is not returned, not a constant and not a reshape
    (a reshape is a view: of an intermediate, it keeps that one live; of anything else, it is not
    in the arena). It is live from its step to the last step that uses it or a view of it.
    """
    body = function.body.block
    steps = {op: index for index, op in enumerate(body.ops)}
    returned = set(body.last_op.operands)  # type: ignore[union-attr]
    root: dict[SSAValue, SSAValue] = {}
    for op in body.ops:
        for result in op.results:
            if isinstance(op, graph.ReshapeOp):
                if op.x in root and result not in returned:
                    root[result] = root[op.x]
            elif not op.has_trait(ConstantLike) and result not in returned:
                root[result] = result
    last = {value: steps[value.owner] for value in set(root.values())}  # type: ignore[index]
    for value, owner in root.items():
        for use in value.uses:
            last[owner] = max(last[owner], steps[_step(use.operation, body)])
    sizes = {value: _aligned_bytes(value, alignment) for value in last}
    peak = max(
        (sum(size for value, size in sizes.items() if steps[value.owner] <= step <= last[value]) for step in steps.values()),  # type: ignore[index]
        default=0,
    )
    return peak, sum(sizes.values())


@pytest.mark.parametrize("name", sorted(LARGER_MODELS))
def test_arena_is_between_the_live_peak_and_the_sum(name: str):
    onnx_model, _ = LARGER_MODELS[name]()
    function = _main(_optimise(import_model(onnx_model), LOWERING_GRAPH_STAGES))
    plan = function.attributes[PLAN_ATTR]
    arena, alignment = (plan.data[key].value.data for key in ("arena_bytes", "alignment"))  # type: ignore[attr-defined]
    peak, total = live_bounds(function, alignment)
    assert peak > 0, "a model without intermediates tests nothing"
    assert peak <= arena <= total
    assert plan.data["unplanned_bytes"].value.data == total  # type: ignore[attr-defined]


def test_arena_reuses_memory_in_a_transformer_block(capsys: pytest.CaptureFixture[str]):
    """The report of graph-plan-memory{report=true}: the block's arena is its live peak, under the
    sum of its intermediates (the greedy placement reaches the lower bound here; the sum is
    smaller than when q, k, v and the merged heads were written by layout kernels of their own)."""
    onnx_model, _ = LARGER_MODELS["transformer_block"]()
    function = _main(_optimise(import_model(onnx_model), LOWERING_GRAPH_STAGES.removesuffix(",graph-plan-memory")))
    GraphPlanMemory(report=True).apply(make_context(), function.parent_op())  # type: ignore[arg-type]
    peak, total = live_bounds(function, 256)
    arena = function.attributes[PLAN_ATTR].data["arena_bytes"].value.data  # type: ignore[attr-defined]
    assert arena == peak and arena < total
    report = capsys.readouterr().err
    assert report.startswith(f"@main: peak {arena / 1024:.1f} KiB in an arena, {total / 1024:.1f} KiB unplanned")
