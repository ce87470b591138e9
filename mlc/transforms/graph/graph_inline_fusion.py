"""graph-inline-fusion: the inverse of graph-fuse; every `graph.fusion` is replaced by its body.

Algorithm: for each top-level `graph.fusion` of a function, its body's ops move in front of it
with the body's arguments replaced by the fusion's operands, uses of its results are replaced by
the values its `graph.yield` returned, and the fusion is erased. The function then computes the
same values with the same ops, in an order in which every value is defined before it is used (the
body was, and the fusion's operands were defined before the fusion).

A memory plan of the function (graph-plan-memory) no longer describes it and is removed.

`inline_fusions(function)` (`lowering/fusion_inlining.py`) is the same for passes that work on the
ops of a fused function.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from mlc.transforms.lowering.fusion_inlining import inline_fusions


@dataclass(frozen=True)
class GraphInlineFusion(ModulePass):
    """Replace every graph.fusion by the ops of its body (the inverse of graph-fuse)."""

    name = "graph-inline-fusion"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for function in [f for f in op.walk() if isinstance(f, func.FuncOp)]:
            inline_fusions(function)
