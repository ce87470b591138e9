"""graph-simplify: algebraic simplification of graph IR, one small rewrite pattern per rule.

Every rule is an *exact* equivalence under the graph interpreter's semantics: the rewritten
function returns the same bits for every input, NaN payloads aside (numpy does not define them),
with -0.0 and +0.0 told apart, integer arithmetic wrapping around, and infinities and NaN as
inputs. "0", "1" and "-1" are splat `graph.constant`s of any shape. A rewrite keeps the result
type exactly: when the operand that remains is smaller than the result (`x + 0` with a larger
zero), it becomes a `graph.broadcast` of that operand.

Layout rules: identity `reshape`/`broadcast`/`cast`/`transpose` -> x; reshape of a reshape,
broadcast of a broadcast and transpose of a transpose compose into one op; a transpose that moves
only axes of size 1 is a reshape; a longer chain of reshapes, transposes and slices becomes
the fewest of them that read the same strided view; elementwise ops move before reshapes and
transposes that keep the last axis, and a matmul whose operand's rows are permuted takes them in
place, the permutation moving to its result where layout ops read it (`view_rewrites.py`); cast of a cast drops
the inner cast when it is lossless (i1 -> any, i32 -> i64, f16/bf16 -> f32), e.g. f16 -> f32 -> f16
is x. Arithmetic rules: `x + 0`, `x - 0`, `0 - x -> -x`, `x * 1`, `x * -1 -> -x`, `x / 1`,
`x / -1 -> -x`, `x ** 1`, `x ** 0 -> 1`, `max(x, x)`, `min(x, x)`, `where(c, x, x)`,
`where(true/false, x, y)`, `-(-x)`, `|-x| -> |x|`, `relu(relu x)`, `|(|x|)|`; for integers only,
`x * 0 -> 0`, `x - x -> 0`; for floats only, `relu(|x|) -> |x|`.

Why some familiar rules are restricted, for float element types:

* `x * 0 -> 0` is wrong: NaN * 0 and inf * 0 are NaN, and (-1) * 0 is -0.0. Likewise `x - x -> 0`
  (inf - inf is NaN). Both are done for integers only.
* `x + 0 -> x` holds for the zero -0.0 only: -0.0 + (+0.0) is +0.0. Dually `x - 0 -> x` holds
  for +0.0 only, and `0 - x -> -x` for -0.0 only (+0.0 - (+0.0) is +0.0, not -0.0). Frameworks
  usually write +0.0, so `x + 0.0` stays; rewriting it needs the knowledge that x is never -0.0.
* `relu(|x|) -> |x|` is wrong for integers: |INT_MIN| wraps to INT_MIN < 0.

Driver: xDSL's greedy worklist walker, to a fixpoint; every rule strictly shrinks the IR or
replaces an op by a cheaper one, so it terminates. Ops a rule leaves without uses are erased
(graph ops are `Pure`); other dead code is `dce`'s business. `graph.transpose` is matched by name
and its spec'd property (`perm: array<i64>`, numpy's semantics, negative entries counting from the
end), and rebuilt with its own class, so this file depends on no more of it than the spec fixes.
Limits: rules look at one or two ops; constants are recognised only as splat `graph.constant`s
(run graph-fold-constants first to expose more); no reassociation, no distributivity.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import DenseArrayBase, ModuleOp, bf16, f16, f32, i32, i64
from xdsl.ir import Attribute, Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from mlc.dialects.element_types import is_bool, is_float, is_integer
from mlc.dialects.graph import ops as graph
from mlc.transforms.analysis.strided_views import transpose_permutation
from mlc.transforms.lowering.graph_rewriting import (
    operand_beside,
    replace_with_new_op,
    replace_with_negation,
    replace_with_splat,
    replace_with_value,
    splat_is,
    splat_of,
    tensor_type_of,
)
from mlc.transforms.lowering.view_rewrites import (
    ElementwiseAfterReshape,
    ElementwiseAfterTranspose,
    LayoutChainAsOneView,
    RowsPermutedAfterMatmul,
    TransposeMovingUnitAxes,
)

LOSSLESS_CASTS: frozenset[tuple[Attribute, Attribute]] = frozenset({(i32, i64), (f16, f32), (bf16, f32)})
"""(source, target) element types where the target holds every source value exactly (i1 aside)."""


def _element_type(op: Operation) -> Attribute:
    return tensor_type_of(op.operands[0]).element_type


# Layout rules.


class IdentityView(RewritePattern):
    """reshape(x), broadcast(x) or cast(x) to x's own type -> x."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.ReshapeOp | graph.BroadcastOp | graph.CastOp, rewriter: PatternRewriter) -> None:
        if op.x.type == op.result.type:
            replace_with_value(rewriter, op, op.x)


class ReshapeOfReshape(RewritePattern):
    """reshape(reshape(x)) -> reshape(x)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.ReshapeOp, rewriter: PatternRewriter) -> None:
        if isinstance(inner := op.x.owner, graph.ReshapeOp):
            replace_with_new_op(rewriter, op, graph.ReshapeOp(inner.x, op.result.type))


class BroadcastOfBroadcast(RewritePattern):
    """broadcast(broadcast(x)) -> broadcast(x)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.BroadcastOp, rewriter: PatternRewriter) -> None:
        if isinstance(inner := op.x.owner, graph.BroadcastOp):
            replace_with_new_op(rewriter, op, graph.BroadcastOp(inner.x, op.result.type))


class CastOfLosslessCast(RewritePattern):
    """cast(cast(x: A -> B) -> C) -> cast(x -> C) (or x when C = A) when A -> B is lossless."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.CastOp, rewriter: PatternRewriter) -> None:
        inner = op.x.owner
        if not isinstance(inner, graph.CastOp):
            return
        source = tensor_type_of(inner.x).element_type
        middle = tensor_type_of(inner.result).element_type
        if not (is_bool(source) or (source, middle) in LOSSLESS_CASTS):
            return
        if inner.x.type == op.result.type:
            replace_with_value(rewriter, op, inner.x)
        else:
            replace_with_new_op(rewriter, op, graph.CastOp(inner.x, op.result.type))


class IdentityTranspose(RewritePattern):
    """transpose(x, [0, 1, ..., n-1]) -> x."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        perm = transpose_permutation(op)
        if perm is not None and perm == tuple(range(len(perm))):
            replace_with_value(rewriter, op, op.operands[0])


class TransposeOfTranspose(RewritePattern):
    """transpose(transpose(x, p), q) -> transpose(x, [p[q[i]] for i]) (x when that is the identity)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        outer = transpose_permutation(op)
        if outer is None or not isinstance(inner_op := op.operands[0].owner, Operation):
            return
        if (inner := transpose_permutation(inner_op)) is None:
            return
        composed = [inner[axis] for axis in outer]
        if composed == list(range(len(composed))):
            replace_with_value(rewriter, op, inner_op.operands[0])
            return
        # The op's own class, so that this file need not import (or know the constructor of) it.
        transpose = type(op).create(
            operands=[inner_op.operands[0]],
            result_types=[op.results[0].type],
            properties={"perm": DenseArrayBase.from_list(i64, composed)},
        )
        replace_with_new_op(rewriter, op, transpose)


# Arithmetic rules.


class AddZero(RewritePattern):
    """x + 0 and 0 + x -> x (for floats the zero must be -0.0)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.AddOp, rewriter: PatternRewriter) -> None:
        if (other := operand_beside(op, -0.0)) is not None:
            replace_with_value(rewriter, op, other)


class SubZero(RewritePattern):
    """x - 0 -> x (for floats the zero must be +0.0)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.SubOp, rewriter: PatternRewriter) -> None:
        if splat_is(op.rhs, 0.0):
            replace_with_value(rewriter, op, op.lhs)


class ZeroSub(RewritePattern):
    """0 - x -> -x (for floats the zero must be -0.0)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.SubOp, rewriter: PatternRewriter) -> None:
        if splat_is(op.lhs, -0.0):
            replace_with_negation(rewriter, op, op.rhs)


class SubSelf(RewritePattern):
    """x - x -> 0, for integers only (inf - inf is NaN)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.SubOp, rewriter: PatternRewriter) -> None:
        if op.lhs is op.rhs and is_integer(_element_type(op)):
            replace_with_splat(rewriter, op, 0)


class MulOne(RewritePattern):
    """x * 1 and 1 * x -> x."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.MulOp, rewriter: PatternRewriter) -> None:
        if (other := operand_beside(op, 1.0)) is not None:
            replace_with_value(rewriter, op, other)


class MulMinusOne(RewritePattern):
    """x * -1 and -1 * x -> -x."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.MulOp, rewriter: PatternRewriter) -> None:
        if (other := operand_beside(op, -1.0)) is not None:
            replace_with_negation(rewriter, op, other)


class MulZero(RewritePattern):
    """x * 0 and 0 * x -> 0, for integers only (NaN * 0 is NaN, -1.0 * 0 is -0.0)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.MulOp, rewriter: PatternRewriter) -> None:
        if is_integer(_element_type(op)) and operand_beside(op, 0.0) is not None:
            replace_with_splat(rewriter, op, 0)


class DivOne(RewritePattern):
    """x / 1 -> x."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.DivOp, rewriter: PatternRewriter) -> None:
        if splat_is(op.rhs, 1.0):
            replace_with_value(rewriter, op, op.lhs)


class DivMinusOne(RewritePattern):
    """x / -1 -> -x (for integers INT_MIN / -1 wraps to INT_MIN, as -INT_MIN does)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.DivOp, rewriter: PatternRewriter) -> None:
        if splat_is(op.rhs, -1.0):
            replace_with_negation(rewriter, op, op.lhs)


class PowOne(RewritePattern):
    """x ** 1 -> x."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.PowOp, rewriter: PatternRewriter) -> None:
        if splat_is(op.rhs, 1.0):
            replace_with_value(rewriter, op, op.lhs)


class PowZero(RewritePattern):
    """x ** 0 -> 1 (also for x = 0, inf and NaN, as in C's pow and numpy)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.PowOp, rewriter: PatternRewriter) -> None:
        if splat_is(op.rhs, 0.0) or splat_is(op.rhs, -0.0):
            replace_with_splat(rewriter, op, 1)


class MaxMinSelf(RewritePattern):
    """max(x, x) and min(x, x) -> x."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.MaxOp | graph.MinOp, rewriter: PatternRewriter) -> None:
        if op.lhs is op.rhs:
            replace_with_value(rewriter, op, op.lhs)


class WhereSameBranches(RewritePattern):
    """where(c, x, x) -> x."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.WhereOp, rewriter: PatternRewriter) -> None:
        if op.true_value is op.false_value:
            replace_with_value(rewriter, op, op.true_value)


class WhereConstantCondition(RewritePattern):
    """where(true, x, y) -> x and where(false, x, y) -> y for a splat condition."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.WhereOp, rewriter: PatternRewriter) -> None:
        condition = splat_of(op.condition)
        if condition is not None:
            replace_with_value(rewriter, op, op.true_value if condition else op.false_value)


# Unary rules.


class NegNeg(RewritePattern):
    """-(-x) -> x."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.NegOp, rewriter: PatternRewriter) -> None:
        if isinstance(inner := op.x.owner, graph.NegOp):
            replace_with_value(rewriter, op, inner.x)


class AbsOfNeg(RewritePattern):
    """|-x| -> |x|."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.AbsOp, rewriter: PatternRewriter) -> None:
        if isinstance(inner := op.x.owner, graph.NegOp):
            replace_with_new_op(rewriter, op, graph.AbsOp(inner.x))


class IdempotentUnary(RewritePattern):
    """relu(relu(x)) -> relu(x) and |(|x|)| -> |x|."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.ReluOp | graph.AbsOp, rewriter: PatternRewriter) -> None:
        if type(op.x.owner) is type(op):
            replace_with_value(rewriter, op, op.x)


class ReluOfAbs(RewritePattern):
    """relu(|x|) -> |x|, for floats only (|INT_MIN| is INT_MIN < 0)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: graph.ReluOp, rewriter: PatternRewriter) -> None:
        if isinstance(op.x.owner, graph.AbsOp) and is_float(_element_type(op)):
            replace_with_value(rewriter, op, op.x)


RULES: Sequence[type[RewritePattern]] = (
    IdentityView,
    ReshapeOfReshape,
    BroadcastOfBroadcast,
    CastOfLosslessCast,
    IdentityTranspose,
    TransposeOfTranspose,
    TransposeMovingUnitAxes,
    LayoutChainAsOneView,
    ElementwiseAfterReshape,
    ElementwiseAfterTranspose,
    RowsPermutedAfterMatmul,
    AddZero,
    SubZero,
    ZeroSub,
    SubSelf,
    MulOne,
    MulMinusOne,
    MulZero,
    DivOne,
    DivMinusOne,
    PowOne,
    PowZero,
    MaxMinSelf,
    WhereSameBranches,
    WhereConstantCondition,
    NegNeg,
    AbsOfNeg,
    IdempotentUnary,
    ReluOfAbs,
)
"""Every rule of the pass, in the order the driver tries them on an op."""


@dataclass(frozen=True)
class GraphSimplify(ModulePass):
    """Simplify graph ops by exact algebraic rules (x*1 -> x, transpose of transpose, ...).

    The rules are listed in the module docstring; each is an equivalence bit for bit, so float
    rules that hold only for some inputs (x*0 -> 0) are done for integers only.
    """

    name = "graph-simplify"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        patterns = GreedyRewritePatternApplier([rule() for rule in RULES], dce_enabled=False)
        PatternRewriteWalker(patterns).rewrite_module(op)
