"""view-op-graph draws every op once, every use as an edge between drawn nodes, one cluster per
graph.fusion, and leaves the IR unchanged (random programs with matmuls, reductions and layout ops,
fused by graph-fuse)."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings

from mlc.dialects.graph import ops as graph
from mlc.transforms.graph.view_op_graph import ViewOpGraph, op_graph
from programs import lower, mixed_programs

NODE = re.compile(r"^\s*(n\d+) \[label=")
EDGE = re.compile(r"^\s*(n\d+) -> (n\d+) \[label=")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(program=mixed_programs())
def test_every_op_and_use_is_drawn_and_the_ir_is_unchanged(program: str):
    module = lower(program, "graph-fuse")
    before = str(module)
    function = next(op for op in module.body.block.ops if op.sym_name.data == "main")
    text = op_graph(function)
    assert str(module) == before
    lines = text.splitlines()
    nodes = [match.group(1) for line in lines if (match := NODE.match(line))]
    edges = [match.groups() for line in lines if (match := EDGE.match(line))]
    body = function.body.block
    fusions = [op for op in body.ops if isinstance(op, graph.FusionOp)]
    drawn_ops = [op for op in body.ops if not isinstance(op, graph.FusionOp)]
    drawn_ops += [inner for fusion in fusions for inner in fusion.body.block.ops if not isinstance(inner, graph.YieldOp)]
    assert len(nodes) == len(set(nodes)) == len(body.args) + len(drawn_ops)
    assert all(source in nodes and target in nodes for source, target in edges)
    assert sum(line.strip().startswith("subgraph cluster_") for line in lines) == len(fusions)
    assert text.startswith('digraph "main" {') and text.rstrip().endswith("}")


def test_the_pass_writes_a_file_and_refuses_a_bad_option(tmp_path):
    module = lower("func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n  %0 = graph.exp %x : tensor<4xf32>\n  func.return %0 : tensor<4xf32>\n}", "graph-fuse")
    path = tmp_path / "plan.dot"
    ViewOpGraph(output=str(path)).apply(None, module)  # type: ignore[arg-type]
    assert path.read_text().startswith('digraph "main" {')
    with pytest.raises(ValueError, match="max-label-length must be at least 4"):
        ViewOpGraph(max_label_length=2)
