"""loop-unroll: fully unroll the `scf.for` loops a lowering marked `mlc.unroll`.

Why. The K steps of a matmul micro-kernel are a short loop (a block's BK, 16 at most) whose body
reads a few shared-memory vectors and issues TM x TN multiply-adds. Unrolled, ptxas can issue the
next step's reads while this step's multiply-adds run and keep every fragment in registers; on an
H200 that took a hand-written kernel of this shape from 0.69x to 0.94x cuBLAS. The lowering that
builds the loop knows this, so it records the decision as the unit attribute `mlc.unroll`; this
pass carries it out late (after `loop-promote-shared`, which reads the loop as a loop).

Algorithm. Innermost marked loops first: the body is cloned once per iteration, its induction
variable replaced by an `arith.constant` of the iteration's value and its iteration arguments by
the previous clone's yielded values (the initial values for the first); the loop's results become
the last clone's yields (the initial values when it runs no iteration).

Preconditions: a marked loop has constant bounds (`arith.constant`) and a positive step, and runs
at most `MAX_UNROLLED_ITERATIONS` times; otherwise the pass reports the loop. Unmarked loops are
left alone.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IntegerAttr, ModuleOp
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass

from mlc.diagnostics import PassFailure
from mlc.dialects import attributes
from mlc.transforms.analysis.affine_index import constant_index

MAX_UNROLLED_ITERATIONS = 64
"""Beyond this many clones the code grows faster than unrolling can pay back."""


def iterations(loop: scf.ForOp) -> range:
    """The induction variable's values; reports a loop whose bounds or step are not constants."""
    bounds = [constant_index(value) for value in (loop.lb, loop.ub, loop.step)]
    if any(bound is None for bound in bounds):
        raise PassFailure(loop, "loop-unroll needs constant bounds and step on a loop marked mlc.unroll")
    lower, upper, step = bounds  # type: ignore[misc]
    if step <= 0:
        raise PassFailure(loop, f"loop-unroll needs a positive step on a loop marked mlc.unroll, got {step}")
    values = range(lower, upper, step)
    if len(values) > MAX_UNROLLED_ITERATIONS:
        raise PassFailure(loop, f"loop-unroll unrolls at most {MAX_UNROLLED_ITERATIONS} iterations; this loop marked mlc.unroll runs {len(values)}")
    return values


def unroll(loop: scf.ForOp) -> None:
    """Replaces `loop` by one clone of its body per iteration (see the module docstring)."""
    block = loop.parent_block()
    assert block is not None
    counter, *arguments = loop.body.block.args
    carried: list[SSAValue] = list(loop.iter_args)
    counter_type = loop.lb.type
    for value in iterations(loop):
        constant = arith.ConstantOp(IntegerAttr(value, counter_type))
        constant.result.name_hint = counter.name_hint
        block.insert_op_before(constant, loop)
        mapping: dict[SSAValue, SSAValue] = {counter: constant.result, **dict(zip(arguments, carried))}
        for op in loop.body.block.ops:
            if isinstance(op, scf.YieldOp):
                carried = [mapping.get(value, value) for value in op.arguments]
                continue
            block.insert_op_before(op.clone(value_mapper=mapping), loop)
    for result, value in zip(loop.results, carried):
        result.replace_all_uses_with(value)
    block.erase_op(loop)


@dataclass(frozen=True)
class LoopUnroll(ModulePass):
    """Fully unroll the `scf.for` loops marked `mlc.unroll`."""

    name = "loop-unroll"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        # Reversed walk order meets inner loops before the loops around them, so an outer loop's
        # clones copy bodies whose marked loops are already unrolled.
        marked = [loop for loop in op.walk() if isinstance(loop, scf.ForOp) and attributes.UNROLL.read(loop) is not None]
        for loop in reversed(marked):
            unroll(loop)
