"""graph-fuse: fusion changes no result, the groups obey the fusion rules, and lowering still works.

Hypothesis draws elementwise programs, reduction programs and mixed programs (matmuls, reductions,
normalisations, transposes and reshapes among elementwise ops; `programs.py`), and checks:

* the graph interpreter gives the same bits before and after graph-fuse (a fusion means its body);
* every group has the kind its ops call for, at most one contraction, whose operands come from
  outside the group (a contraction absorbs consumers only), and only constants and reshapes stay
  outside groups; running graph-fuse again changes nothing;
* on elementwise programs the groups are exactly the kernels convert-graph-to-tile makes;
* graph-fuse followed by mlc-lower-to-cpu compiles and agrees with the interpreter, within the
  error bound `error_bounds.result_bounds` derives from the program and its data.
"""

from __future__ import annotations

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from xdsl.dialects import func
from xdsl.ir import Operation

import mlc
from mlc.dialects.graph import ops as graph
from mlc.transforms.analysis.fusion_groups import partition
from mlc.transforms.analysis.layout_maps import LAYOUT_OPS
from mlc.transforms.graph.graph_fuse import GRAPH_REDUCTIONS
from programs import (
    assert_equivalent,
    assert_perturbation_caught,
    assert_within_bounds,
    comparison_event,
    elementwise_programs,
    lower,
    mixed_programs,
    random_inputs,
    reduction_programs,
)

PROGRAMS = st.one_of(elementwise_programs(max_ops=6), reduction_programs(), mixed_programs())
SETTINGS = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)
ELEMENTWISE_KIND_OPS = (*graph.ELEMENTWISE_OPS, graph.BroadcastOp, graph.ReshapeOp)


def _main(module) -> func.FuncOp:
    return next(op for op in module.walk() if isinstance(op, func.FuncOp) and op.sym_name.data == "main")


def _fusions(module) -> list[graph.FusionOp]:
    return [op for op in module.walk() if isinstance(op, graph.FusionOp)]


def _body(fusion: graph.FusionOp) -> list[Operation]:
    return [op for op in fusion.body.block.ops if not isinstance(op, graph.YieldOp)]


@SETTINGS
@given(program=PROGRAMS, seed=st.integers(0, 2**32 - 1))
def test_fusion_preserves_results(program: str, seed: int):
    before = lower(program, "")
    after = lower(program, "graph-fuse")
    assert_equivalent(before, after, random_inputs(program, seed))


def _check_kind(fusion: graph.FusionOp) -> None:
    body = _body(fusion)
    contractions = [op for op in body if isinstance(op, graph.CONTRACTION_OPS)]
    assert len(contractions) <= 1, "two contractions in one group"
    kind = fusion.kind.data
    if contractions:
        assert kind == ("matmul" if isinstance(contractions[0], graph.MatmulOp) else "conv")
        # An epilogue only: elementwise ops, and the contraction reads nothing computed in the group.
        assert all(isinstance(op, ELEMENTWISE_KIND_OPS) for op in body if op is not contractions[0])
        assert all(operand.owner is fusion.body.block for operand in contractions[0].operands)
    elif kind == "reduction":
        assert any(isinstance(op, GRAPH_REDUCTIONS) for op in body)
        assert all(isinstance(op, (*ELEMENTWISE_KIND_OPS, *LAYOUT_OPS, *GRAPH_REDUCTIONS)) for op in body)
    elif kind == "elementwise":
        assert all(isinstance(op, (*ELEMENTWISE_KIND_OPS, *LAYOUT_OPS)) for op in body)
        assert not (len(body) == 1 and isinstance(body[0], graph.ReshapeOp)), "a lone reshape is no group"
    else:
        assert kind == "opaque" and len(body) == 1
        assert isinstance(body[0], graph.POOLING_OPS)


@SETTINGS
@given(program=PROGRAMS)
def test_groups_follow_the_rules(program: str):
    after = lower(program, "graph-fuse")
    for fusion in _fusions(after):
        _check_kind(fusion)
    outside = [op for op in _main(after).body.block.ops if not isinstance(op, graph.FusionOp)]
    assert all(isinstance(op, (graph.ConstantOp, graph.ReshapeOp, func.ReturnOp)) for op in outside)
    again = lower(str(after), "graph-fuse")
    assert str(again) == str(after), "graph-fuse is not idempotent"


def _result_names(ops) -> frozenset[str]:
    return frozenset(result.name_hint for op in ops for result in op.results)


@SETTINGS
@given(program=elementwise_programs(max_ops=6))
def test_elementwise_groups_are_the_kernels(program: str):
    """What convert-graph-to-tile lowers, graph-fuse groups as the code generator does."""
    kernels = {
        _result_names(group.ops)
        for group in partition(_main(lower(program, "")))
        if not (len(group.ops) == 1 and isinstance(group.ops[0], graph.ReshapeOp))
    }
    fusions = {_result_names(_body(fusion)) for fusion in _fusions(lower(program, "graph-fuse"))}
    assert fusions == kernels


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(program=st.one_of(elementwise_programs(), reduction_programs()), seed=st.integers(0, 2**32 - 1))
def test_cpu_lowering_after_fusion(program: str, seed: int):
    """Compiled after graph-fuse, within the error bound derived for the program and its data."""
    compiled = mlc.compile(program, device="cpu", pipeline="graph-fuse,mlc-lower-to-cpu")
    inputs = random_inputs(program, seed)
    event(comparison_event(assert_within_bounds(program, inputs, compiled(*inputs))))


SOFTMAX_OF_AFFINE = """
func.func @main(%x: tensor<64x100xf32>, %b: tensor<100xf32>) -> (tensor<64x100xf32>, tensor<64xf32>) {
  %c = graph.constant dense<2.0> : tensor<f32>
  %0 = graph.add %x, %b : (tensor<64x100xf32>, tensor<100xf32>) -> tensor<64x100xf32>
  %1 = graph.mul %0, %c : (tensor<64x100xf32>, tensor<f32>) -> tensor<64x100xf32>
  %2 = graph.relu %1 : tensor<64x100xf32>
  %3 = graph.softmax %2 axis 1 : tensor<64x100xf32>
  %4 = graph.reduce_sum %1 axes [1] keepdims false : tensor<64x100xf32> to tensor<64xf32>
  func.return %3, %4 : tensor<64x100xf32>, tensor<64xf32>
}
"""


def test_cpu_lowering_of_a_fused_reduction():
    fused = lower(SOFTMAX_OF_AFFINE, "graph-fuse")
    assert [fusion.kind.data for fusion in _fusions(fused)] == ["elementwise", "reduction"]
    compiled = mlc.compile(fused, device="cpu")
    inputs = random_inputs(SOFTMAX_OF_AFFINE, 7)
    results = compiled(*inputs)
    assert assert_within_bounds(SOFTMAX_OF_AFFINE, inputs, results).compared == 64 * 100 + 64
    assert_perturbation_caught(SOFTMAX_OF_AFFINE, inputs, results)
