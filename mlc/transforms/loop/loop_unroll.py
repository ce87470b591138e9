"""loop-unroll: fully unroll the `scf.for` loops a lowering marked `mlc.unroll`; unroll by N those
marked `mlc.unroll_by` = N.

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

Unrolling by N (`mlc.unroll_by`). A loop of T iterations becomes a loop of T div N iterations of N
clones (clone j's counter = the new loop's counter + j * step, each clone's iteration arguments the
previous clone's yields), then T mod N clones after it with constant counters, as above. A loop
around a `loop.wgmma` that carries `mlc.a_register_sets` = N > 1 is marked so first (its products
alternate N sets of A registers, `matmul_wgmma.A_REGISTER_SETS`, which the loop's single body cannot
do); where such a loop's bounds are not constants the product's `mlc.a_register_sets` becomes 1
instead, so that the GPU lowering waits for every product before rewriting its registers.

Preconditions: a marked loop has constant bounds (`arith.constant`) and a positive step, and runs
at most `MAX_UNROLLED_ITERATIONS` times; otherwise the pass reports the loop. Unmarked loops are
left alone.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i64
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass

from mlc.diagnostics import PassFailure
from mlc.dialects import attributes
from mlc.dialects.loop import ops as loop_ops
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
    _replace_loop(loop, _clone_iterations(loop, iterations(loop), list(loop.iter_args)))


def _replace_loop(loop: scf.ForOp, carried: list[SSAValue]) -> None:
    """Erases `loop`, its results replaced by `carried` (what its unrolled copies yield)."""
    for result, value in zip(loop.results, carried):
        result.replace_all_uses_with(value)
    loop.parent_block().erase_op(loop)  # type: ignore[union-attr]


def _clone_body(loop: scf.ForOp, counter_value: SSAValue, carried: list[SSAValue], before: Operation) -> list[SSAValue]:
    """One copy of `loop`'s body before `before`, counter and iteration arguments replaced; its yields."""
    block = before.parent_block()
    assert block is not None
    counter, *arguments = loop.body.block.args
    mapping: dict[SSAValue, SSAValue] = {counter: counter_value, **dict(zip(arguments, carried))}
    for op in loop.body.block.ops:
        if isinstance(op, scf.YieldOp):
            return [mapping.get(value, value) for value in op.arguments]
        block.insert_op_before(op.clone(value_mapper=mapping), before)
    return carried


def _clone_iterations(loop: scf.ForOp, values: range, carried: list[SSAValue]) -> list[SSAValue]:
    """One copy of `loop`'s body before it per counter value in `values` (an `arith.constant`
    each), the first taking `carried`; the last copy's yields (`carried` when there is none)."""
    for value in values:
        constant = arith.ConstantOp(IntegerAttr(value, loop.lb.type))
        constant.result.name_hint = loop.body.block.args[0].name_hint
        loop.parent_block().insert_op_before(constant, loop)  # type: ignore[union-attr]
        carried = _clone_body(loop, constant.result, carried, loop)
    return carried


def unroll_by(loop: scf.ForOp, factor: int) -> None:
    """Replaces `loop` by a loop of `factor` copies of its body an iteration and the iterations
    left over as copies after it (see the module docstring)."""
    bounds = [constant_index(value) for value in (loop.lb, loop.ub, loop.step)]
    if any(bound is None for bound in bounds) or bounds[2] <= 0:  # type: ignore[operator]
        raise PassFailure(loop, "loop-unroll needs constant bounds and a positive step on a loop marked mlc.unroll_by")
    lower, upper, step = bounds  # type: ignore[misc]
    values = range(lower, upper, step)
    whole = len(values) // factor * factor
    counter_type = loop.lb.type
    carried: list[SSAValue] = list(loop.iter_args)
    if whole:
        constants = [arith.ConstantOp(IntegerAttr(value, counter_type)) for value in (lower, lower + whole * step, factor * step)]
        body = Block(arg_types=[counter_type, *(value.type for value in carried)])
        body.add_op(terminator := scf.YieldOp())
        counter, *arguments = body.args
        counter.name_hint = loop.body.block.args[0].name_hint
        yields: list[SSAValue] = list(arguments)
        for copy in range(factor):
            value: SSAValue = counter
            if copy:
                offset = arith.ConstantOp(IntegerAttr(copy * step, counter_type))
                shifted = arith.AddiOp(counter, offset.result)
                body.insert_op_before(offset, terminator)
                body.insert_op_before(shifted, terminator)
                value = shifted.result
            yields = _clone_body(loop, value, yields, terminator)
        body.erase_op(terminator)
        body.add_op(scf.YieldOp(*yields))
        unrolled = scf.ForOp(constants[0].result, constants[1].result, constants[2].result, carried, Region(body))
        unrolled.attributes.update({name: value for name, value in loop.attributes.items() if name != attributes.UNROLL_BY.name})
        for constant in constants:
            loop.parent_block().insert_op_before(constant, loop)  # type: ignore[union-attr]
        loop.parent_block().insert_op_before(unrolled, loop)  # type: ignore[union-attr]
        carried = list(unrolled.results)
    _replace_loop(loop, _clone_iterations(loop, values[whole:], carried))


def mark_register_set_loops(module: ModuleOp) -> None:
    """Marks the loop around each `loop.wgmma` with `mlc.a_register_sets` = N > 1 `mlc.unroll_by` =
    N, or sets the product's N to 1 where the loop's bounds are not constants (see the module docstring)."""
    for product in module.walk():
        sets = attributes.A_REGISTER_SETS.read(product) if isinstance(product, loop_ops.WgmmaOp) else None
        if sets is None or sets.value.data == 1:  # type: ignore[attr-defined]
            continue
        around = product.parent_op()
        if not isinstance(around, scf.ForOp):
            continue  # run once per enclosing iteration, after a wait for every product (the K loop was unrolled whole)
        copies = [op for op in around.body.block.ops if isinstance(op, loop_ops.WgmmaOp) and attributes.A_REGISTER_SETS.read(op) == sets]
        if len(copies) >= sets.value.data:  # type: ignore[attr-defined]
            continue  # unrolled already (a second run of the pass)
        if any(constant_index(value) is None for value in (around.lb, around.ub, around.step)):
            attributes.A_REGISTER_SETS.write(product, IntegerAttr(1, i64))
        else:
            attributes.UNROLL_BY.write(around, sets)


@dataclass(frozen=True)
class LoopUnroll(ModulePass):
    """Fully unroll the `scf.for` loops marked `mlc.unroll`; unroll by N those marked `mlc.unroll_by`
    (and those around a loop.wgmma with `mlc.a_register_sets` = N)."""

    name = "loop-unroll"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        # Reversed walk order meets inner loops before the loops around them, so an outer loop's
        # clones copy bodies whose marked loops are already unrolled.
        marked = [loop for loop in op.walk() if isinstance(loop, scf.ForOp) and attributes.UNROLL.read(loop) is not None]
        for loop in reversed(marked):
            unroll(loop)
        mark_register_set_loops(op)
        partly = [loop for loop in op.walk() if isinstance(loop, scf.ForOp) and attributes.UNROLL_BY.read(loop) is not None]
        for loop in reversed(partly):
            factor = attributes.UNROLL_BY.read(loop).value.data  # type: ignore[union-attr]
            unroll_by(loop, factor)
