"""convert-cf-to-llvm: `cf` branches inside kernels become `llvm` branches.

* `cf.br` / `cf.cond_br` become `llvm.br` / `llvm.cond_br` with the same successors.
* `cf.switch` becomes a chain of `llvm.icmp "eq"` + `llvm.cond_br`, one new block per case after
  the first, ending in the default successor (xDSL's llvm dialect has no `llvm.switch`).
* **Block arguments.** Before a branch is rewritten, the arguments of its successor blocks get
  their llvm types (`index` becomes `i64`, ...). Users of such an argument that are not converted
  yet see a `builtin.unrealized_conversion_cast` back to the old type, placed at the start of the
  block; operands passed by the other predecessors are cast into the new type, right away for
  predecessors that are already `llvm` branches, and when they are rewritten for `cf` ones.

Entry blocks keep their arguments: they are the function's parameters, converted with the function
by the kernel lowerings. Preconditions and scope: see `llvm_conversion`. Limits: `cf.assert` is
refused (there is no abort on the GPU path yet), and so is a block whose arguments change type
while one of its predecessors is a terminator of another dialect.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import cf, llvm
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, UnrealizedConversionCastOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern
from xdsl.rewriter import BlockInsertPoint, InsertPoint, Rewriter

from mlc.diagnostics import PassFailure
from mlc.transforms.lowering.llvm_conversion import (
    OpLowering,
    RejectRemainingOps,
    cast_to_llvm,
    convert_kernel_ops,
    convert_type,
)

_BRANCHES = (cf.BranchOp, cf.ConditionalBranchOp, cf.SwitchOp, llvm.BrOp, llvm.CondBrOp)


def _forwarded_operands(terminator: llvm.BrOp | llvm.CondBrOp, successor: Block) -> list[list[int]]:
    """For each edge of an llvm branch to `successor`, the operand indices passed along it."""
    if isinstance(terminator, llvm.BrOp):
        return [list(range(len(terminator.arguments)))]
    then_count = len(terminator.then_arguments)
    edges: list[list[int]] = []
    if terminator.then_block is successor:
        edges.append(list(range(1, 1 + then_count)))
    if terminator.else_block is successor:
        edges.append(list(range(1 + then_count, len(terminator.operands))))
    return edges


def convert_block_arguments(block: Block, rewriter: PatternRewriter, branch: Operation) -> None:
    """Gives the arguments of `block` (a successor of `branch`) their llvm types."""
    if block.prev_block is None:
        return  # an entry block: its arguments are the function's parameters
    targets = [convert_type(argument.type) for argument in block.args]
    for argument, target in zip(block.args, targets):
        if target is None:
            raise PassFailure(branch, f"cannot convert a successor's argument of type {argument.type} to LLVM")
    if all(argument.type == target for argument, target in zip(block.args, targets)):
        return
    predecessors = {use.operation for use in block.uses}
    for predecessor in predecessors:
        if not isinstance(predecessor, _BRANCHES):
            raise PassFailure(
                branch, f"cannot convert the arguments of a block that '{predecessor.name}' also branches to"
            )
    for argument, target in zip(block.args, targets):
        if argument.type == target:
            continue
        assert target is not None
        old_type = argument.type
        new_argument = rewriter.replace_value_with_new_type(argument, target)
        cast, cast_result = UnrealizedConversionCastOp.cast_one(new_argument, old_type)
        rewriter.insert(cast, InsertPoint.at_start(block))
        rewriter.replace_uses_with_if(new_argument, cast_result, lambda use: use.operation is not cast)
    for predecessor in predecessors:
        if not isinstance(predecessor, llvm.BrOp | llvm.CondBrOp):
            continue
        for edge in _forwarded_operands(predecessor, block):
            for operand_index, argument in zip(edge, block.args, strict=True):
                value = predecessor.operands[operand_index]
                if value.type != argument.type:
                    converted = cast_to_llvm(value, rewriter, InsertPoint.before(predecessor), predecessor)
                    predecessor.operands[operand_index] = converted
                    rewriter.notify_op_modified(predecessor)


def _forward(lowering: OpLowering, values: Sequence[SSAValue], successor: Block) -> list[SSAValue]:
    """`values` converted to the types of `successor`'s (already converted) arguments."""
    forwarded: list[SSAValue] = []
    for value, argument in zip(values, successor.args, strict=True):
        converted = value if value.type == argument.type else lowering.operand(value)
        if converted.type != argument.type:
            raise lowering.fail(f"cannot pass a value of type {value.type} to a block argument of type {argument.type}")
        forwarded.append(converted)
    return forwarded


def _lower_switch(lowering: OpLowering, op: cf.SwitchOp) -> None:
    flag = lowering.operand(op.flag)
    default = _forward(lowering, op.default_operands, op.default_block)
    case_values = [] if op.case_values is None else [int(v) for v in op.case_values.get_values()]
    cases = [
        (value, block, _forward(lowering, operands, block))
        for value, block, operands in zip(case_values, op.case_blocks, op.case_operand, strict=True)
    ]
    if not cases:
        lowering.emit(llvm.BrOp(op.default_block, *default))
        return
    rewriter = lowering.rewriter
    insert_point = InsertPoint.before(op)
    current_block = op.parent_block()
    assert current_block is not None
    for index, (value, block, operands) in enumerate(cases):
        constant = llvm.ConstantOp(IntegerAttr(value, flag.type), flag.type)  # type: ignore[arg-type]
        equal = llvm.ICmpOp(flag, constant.result, IntegerAttr(llvm.ICmpPredicateFlag.EQ.to_int(), 64))
        if index == len(cases) - 1:
            otherwise, otherwise_operands = op.default_block, default
        else:
            otherwise, otherwise_operands = Block(), []
            Rewriter.insert_block(otherwise, BlockInsertPoint.after(current_block))
        rewriter.insert([constant, equal], insert_point)
        rewriter.insert(llvm.CondBrOp(equal.res, block, operands, otherwise, otherwise_operands), insert_point)
        current_block = otherwise
        insert_point = InsertPoint.at_end(otherwise)


class BranchLowering(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(
        self, op: cf.BranchOp | cf.ConditionalBranchOp | cf.SwitchOp, rewriter: PatternRewriter
    ) -> None:
        for successor in op.successors:
            convert_block_arguments(successor, rewriter, op)
        lowering = OpLowering(op, rewriter)
        match op:
            case cf.BranchOp():
                lowering.emit(llvm.BrOp(op.successor, *_forward(lowering, op.arguments, op.successor)))
            case cf.ConditionalBranchOp():
                then_operands = _forward(lowering, op.then_arguments, op.then_block)
                else_operands = _forward(lowering, op.else_arguments, op.else_block)
                condition = lowering.operand(op.cond)
                lowering.emit(llvm.CondBrOp(condition, op.then_block, then_operands, op.else_block, else_operands))
            case cf.SwitchOp():
                _lower_switch(lowering, op)
        lowering.erase()


@dataclass(frozen=True)
class ConvertCfToLLVM(ModulePass):
    """Lower cf branches inside kernels to llvm branches, converting block argument types.

    `index` block arguments become `i64`; cf.switch becomes a chain of compares and branches.
    """

    name = "convert-cf-to-llvm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        convert_kernel_ops(
            op,
            [
                BranchLowering(),
                RejectRemainingOps(
                    "cf", self.name, {"cf.assert": "cannot lower cf.assert: kernels have no way to abort yet"}
                ),
            ],
            dialect="cf",
        )
