"""Replacing `graph.fusion` regions by their bodies (what graph-inline-fusion does to a module).

`inline_fusion(fusion)` moves a fusion's body in front of it, its arguments replaced by the
fusion's operands and its results by what the body yields; `inline_fusions(function)` does it for
every top-level fusion of a function and drops the function's memory plan, which no longer
describes it.
"""

from __future__ import annotations

from xdsl.dialects import func
from xdsl.rewriter import InsertPoint, Rewriter

from mlc.dialects.graph import ops as graph
from mlc.transforms.analysis.memory_plan import forget_memory_plan


def inline_fusion(fusion: graph.FusionOp) -> None:
    """Replaces `fusion` by the ops of its body."""
    body = fusion.body.block
    terminator = body.last_op
    assert isinstance(terminator, graph.YieldOp)
    # The yield moves out too, so that a yielded body argument reads as the operand it stands for.
    Rewriter.inline_block(body, InsertPoint.before(fusion), list(fusion.inputs))
    for result, value in zip(fusion.results, terminator.values):
        result.replace_all_uses_with(value)
    Rewriter.erase_op(terminator)
    Rewriter.erase_op(fusion)


def inline_fusions(function: func.FuncOp) -> None:
    """Inlines every top-level `graph.fusion` of `function` (a function without any is unchanged)."""
    fusions = [op for block in function.body.blocks for op in block.ops if isinstance(op, graph.FusionOp)]
    for fusion in fusions:
        inline_fusion(fusion)
    if fusions:
        forget_memory_plan(function)
