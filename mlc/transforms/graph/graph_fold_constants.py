"""graph-fold-constants: evaluates graph ops whose operands are all constants, at compile time.

Algorithm. A greedy worklist walk (xDSL's `PatternRewriteWalker`) visits every used graph op with
one tensor result, no regions, and only `graph.constant` operands. The op is evaluated by the graph
interpreter (`mlc.dialects.graph.interpret.evaluate`, the semantic definition of the dialect, so
folding is exact by construction) and replaced by a `graph.constant` holding the result; constants
left without uses are erased. Replacing an op exposes its users, so whole constant subgraphs fold
to one constant.

Splats stay cheap. When every operand is a splat and the op is elementwise, or is a broadcast,
reshape or transpose (which move elements but never change them), the result is a splat: it is
computed on the scalars and stored as a one-element splat attribute, whatever the result's size.
Any other result whose elements all have the same bits becomes a splat attribute as well.

Limits, and what is left alone:

* `max-elements` (default 1 << 20) caps the element count of a folded non-splat result, and of
  every operand the interpreter must materialise, to keep modules (and compile time) small;
  except a transpose or reshape of a constant that nothing else uses, which leaves the module
  the same size (a linear layer's transposed weight: no transpose kernel per call).
* Results that xDSL 0.74 cannot write as text and read back bit for bit are not folded (NaN,
  infinities, f32 integers of 7 to 9 digits such as 16777216.0, non-splat arrays of zeros of
  both signs; see `graph/constants.py`), so that printing a folded module never changes its
  meaning. `1.0 / 0.0` therefore stays a division.
* Unused ops are not folded (a dead constant is no better than a dead op; `dce` removes both).
* Ops the interpreter cannot evaluate (a new op without semantics yet) or whose evaluation fails
  are left alone: folding is an optimisation, and the interpreter reports the error at run time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, ModuleOp, TensorType
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern

from mlc.dialects.element_types import to_numpy_dtype
from mlc.dialects.graph import ops as graph
from mlc.dialects.graph.constants import numpy_to_dense, round_trips_as_text, splat_dense
from mlc.dialects.graph.interpret import dense_to_numpy, evaluate
from mlc.transforms.lowering.graph_rewriting import is_graph_op, replace_and_clean_up, splat_of

SPLAT_PRESERVING_OPS: tuple[type[Operation], ...] = (
    *graph.ELEMENTWISE_OPS,
    graph.BroadcastOp,
    graph.ReshapeOp,
)
"""Ops whose result is a splat of f(scalars) when every operand is a splat (transpose: by name)."""


def _element_count(tensor_type: TensorType) -> int:
    return math.prod(tensor_type.get_shape())


def _preserves_splats(op: Operation) -> bool:
    return isinstance(op, SPLAT_PRESERVING_OPS) or op.name == "graph.transpose"


def _is_foldable(op: Operation) -> bool:
    """A used graph op with one tensor result, no regions, and only `graph.constant` operands."""
    return (
        is_graph_op(op)
        and not isinstance(op, graph.ConstantOp)
        and not op.regions
        and len(op.results) == 1
        and isinstance(op.results[0].type, TensorType)
        and len(op.operands) > 0
        and bool(op.results[0].uses)
        and all(isinstance(operand.owner, graph.ConstantOp) for operand in op.operands)
    )


def _moves_its_only_use(op: Operation) -> bool:
    """A transpose or reshape whose constant operand it alone uses: folding it replaces that
    constant by one of the same size, so the module does not grow (a linear layer's weight)."""
    return (isinstance(op, graph.ReshapeOp) or op.name == "graph.transpose") and all(
        operand.has_one_use() for operand in op.operands
    )


def _fold_splats(op: Operation, result_type: TensorType) -> DenseIntOrFPElementsAttr | None:
    """The splat result of a splat-preserving op whose operands are all splats, or None."""
    scalars = [splat_of(operand) for operand in op.operands]
    if any(scalar is None for scalar in scalars):
        return None
    if isinstance(op, graph.ELEMENTWISE_OPS):
        # Elementwise ops evaluate on rank-0 operands as on full ones: the same scalar function.
        value = np.asarray(evaluate(op, [np.asarray(scalar) for scalar in scalars]))
        if value.shape != () or value.dtype != to_numpy_dtype(result_type.element_type):
            return None
    else:
        value = np.asarray(scalars[0])
    return splat_dense(value, result_type)


def fold(op: Operation, max_elements: int) -> DenseIntOrFPElementsAttr | None:
    """The constant value of foldable `op`, or None when it is not folded (see the docstring)."""
    result_type = op.results[0].type
    assert isinstance(result_type, TensorType)
    try:
        if _preserves_splats(op) and (splat := _fold_splats(op, result_type)) is not None:
            return splat if round_trips_as_text(splat) else None
        operand_types = [operand.type for operand in op.operands]
        sizes = [_element_count(t) for t in (*operand_types, result_type)]  # type: ignore[arg-type]
        if max(sizes) > max_elements and not _moves_its_only_use(op):
            return None
        operands = [dense_to_numpy(operand.owner.value) for operand in op.operands]  # type: ignore[union-attr]
        value = np.asarray(evaluate(op, operands))
    except (NotImplementedError, ValueError, ArithmeticError):
        # No semantics for this op yet, or an input the interpreter rejects: leave it to run time.
        return None
    expected_dtype = to_numpy_dtype(result_type.element_type)
    if value.shape != result_type.get_shape() or value.dtype != expected_dtype:
        return None
    attribute = numpy_to_dense(value, result_type)
    return attribute if round_trips_as_text(attribute) else None


@dataclass
class FoldConstantOp(RewritePattern):
    """op(constant, ..., constant) -> constant."""

    max_elements: int

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not _is_foldable(op):
            return
        value = fold(op, self.max_elements)
        if value is not None:
            constant = graph.ConstantOp(value)
            replace_and_clean_up(rewriter, op, [constant], [constant.result])


@dataclass(frozen=True)
class GraphFoldConstants(ModulePass):
    """Evaluate graph ops whose operands are all constants and replace them by constants.

    `max-elements` caps the size of a folded (non-splat) result; see the module docstring.
    """

    name = "graph-fold-constants"

    max_elements: int = 1 << 20

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(FoldConstantOp(self.max_elements)).rewrite_module(op)
