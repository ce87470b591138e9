"""A loop kernel's grid of blocks: the `block.x` loop and the `block.y` loop directly in it."""

from __future__ import annotations

from mlc.dialects.loop import ops as loop


def block_loops(kernel: loop.KernelOp) -> tuple[loop.ParallelOp, loop.ParallelOp] | None:
    """The kernel's `block.x` loop and the `block.y` loop directly in its body, or None."""
    rows = [op for op in kernel.body.block.ops if isinstance(op, loop.ParallelOp) and op.mapping_name() == "block.x"]
    if len(rows) != 1:
        return None
    columns = [op for op in rows[0].body.block.ops if isinstance(op, loop.ParallelOp) and op.mapping_name() == "block.y"]
    return (rows[0], columns[0]) if len(columns) == 1 else None
