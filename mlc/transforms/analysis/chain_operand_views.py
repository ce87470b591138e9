"""A GEMM chain's operands read in place: strided views of a stored value as rows of a wide matrix.

An operand X [..., R, C] of an attention chain (Q; K under `key_transpose`; V) that is made by a
chain of layout ops (reshape, slice, transpose) from a leaf L, each op read by the chain alone, is
a strided view of L (`strided_views.py`): element (c_1, ..., c_k, r, c) of X is L's element
`offset + sum(s_i c_i) + s_r r + s_c c`. The chain kernel can load X's [block, C] tiles straight
from L when X's rows are contiguous runs of one wide matrix (`row_view`):

* s_c = 1 and C the columns the kernel loads (a power of two: no padding columns to mask);
* L viewed as [outer, R, W] with W = s_r (the row length) and R*W dividing L's elements;
* every batch coordinate c_i moves X either by whole [R, W] matrices (s_i a multiple of R*W: it
  steps the outer index) or along a row (the column offset), and a row of X stays inside its row
  of L: col0 + sum over the column-stepping dims of (size_i - 1) s_i + C <= W.

Then X's block at (c_1..c_k, r0) is the [block, C] tile of L's matrix `outer0 + sum(c_i s_i /
(R*W))` at row r0, column `col0 + sum(c_i s_i)` over the column-stepping dims (`RowView`); rows past
R are outside that matrix, so the kernel's bounds checks still hold. The head split of multi-head
attention is such a view: PyTorch's in-projection P [S*B, 3E] viewed as (S, B, 3H, d), Q =
transpose(slice(P)) [B, H, S, d] is W = B*3E, one matrix, the head (b, h) at column b*3E + h*d
(K and V: + E, + 2E); in batch-first order (P [B*S, 3E]) W = 3E and b steps the outer index. The
chain reads the projection in place: no gather kernel writes q, k and v.

The chain's result O [..., M, Dv] is written the same way where its one use is a transpose keeping
the last axis last (O's (B, H, S, d) -> (S, B, H, d) before the out-projection): the kernel stores
the transpose's result, of which O is the view by the inverse permutation, so no kernel moves O.

`operand_views` finds the views (graph-fuse puts their ops into the chain's region, so the decision
is the region's membership, `region_ops`) and finds them again in a region (convert-graph-to-tile).

Limits: only views whose last stride is 1 (a transposed operand is K's `key_transpose`, taken
before this); no broadcast (stride 0) operands; X's rows R > 1 and columns C > 1.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from xdsl.ir import Operation, SSAValue

from mlc.transforms.analysis.gemm_chain import AttentionChain
from mlc.transforms.analysis.strided_views import LAYOUT_OP_NAMES, StridedView, layout_chain, transpose_permutation
from mlc.transforms.analysis.tile_sizes import next_power_of_two


@dataclass(frozen=True)
class RowView:
    """An operand as [block, C] tiles of a leaf viewed as [outer, rows, width] (module docstring)."""

    outer: int
    rows: int
    width: int
    outer_offset: int
    column_offset: int
    steps: tuple[tuple[int, int], ...]
    """Per batch dimension of the operand: (outer step, column step), one of them 0."""

    def memref_shape(self, batch_rank: int) -> tuple[int, ...]:
        """The leaf's shape as the kernel reads it: `batch_rank` leading dims (the last the outer
        index, the others 1), then rows and width."""
        batch = (*(1,) * (batch_rank - 1), self.outer) if batch_rank else ()
        return (*batch, self.rows, self.width)


def row_view(view: StridedView, leaf_elements: int, columns: int) -> RowView | None:
    """`view` [..., R, C] of a row-major leaf of `leaf_elements` elements as rows of a wide
    matrix whose tiles of `columns` columns the kernel loads; None where it is not one."""
    strides = view.strides
    *batch, rows, width_of_view = view.shape
    if strides is None or len(view.shape) < 2 or rows < 2 or width_of_view != columns or columns < 2 or strides[-1] != 1:
        return None
    width = strides[-2]
    matrix = rows * width
    if width < columns or leaf_elements % matrix:
        return None
    outer_offset, column_offset = divmod(view.offset, matrix)
    steps, reach = [], column_offset + columns
    for size, stride in zip(batch, strides[:-2]):
        if size == 1:
            steps.append((0, 0))
        elif stride and stride % matrix == 0:
            steps.append((stride // matrix, 0))
        else:
            steps.append((0, stride))
            reach += (size - 1) * stride
    if reach > width or any(column < 0 for _, column in steps):
        return None
    return RowView(leaf_elements // matrix, rows, width, outer_offset, column_offset, tuple(steps))


@dataclass(frozen=True)
class OperandView:
    """A chain operand read in place: the leaf the kernel reads, its row view, the layout ops."""

    leaf: SSAValue
    rows: RowView
    ops: tuple[Operation, ...]


def _loaded_columns(chain: AttentionChain, operand: SSAValue) -> int:
    shape = operand.type.get_shape()  # type: ignore[attr-defined]
    return next_power_of_two(shape[-1])


def _operand_view(operand: SSAValue, columns: int, allowed: Collection[Operation] | None, users: set[Operation]) -> OperandView | None:
    """The view of one operand through the layout ops above it that only `users` (and the ops
    taken) read; within `allowed` where given (a region's ops)."""
    taken: list[Operation] = []
    value = operand
    while isinstance(owner := value.owner, Operation) and owner.name in LAYOUT_OP_NAMES:
        if allowed is not None and owner not in allowed:
            break
        if not all(use.operation in users or use.operation in taken for use in owner.results[0].uses):
            break
        taken.append(owner)
        value = owner.operands[0]
    if not taken:
        return None
    found = layout_chain(operand, within=set(taken))
    if found is None or found[0] is not value:  # a reshape needing a copy: not one view
        return None
    leaf, view, _ = found
    rows = row_view(view, math.prod(leaf.type.get_shape()), columns)  # type: ignore[attr-defined]
    return OperandView(leaf, rows, tuple(reversed(taken))) if rows is not None else None


def _output_view(chain: AttentionChain, allowed: Collection[Operation] | None) -> OperandView | None:
    """O written in the layout a transpose of it (its one use) makes: the kernel stores the
    transpose's result, of which O is a view (the transpose by the inverse permutation)."""
    uses = list(chain.output.result.uses)
    transpose = uses[0].operation if len(uses) == 1 else None
    perm = transpose_permutation(transpose) if transpose is not None else None
    if transpose is None or perm is None or (allowed is not None and transpose not in allowed):
        return None
    stored = transpose.results[0]
    shape = stored.type.get_shape()  # type: ignore[attr-defined]
    view = StridedView.whole(shape).transposed(tuple(perm.index(axis) for axis in range(len(perm))))
    rows = row_view(view, math.prod(shape), _loaded_columns(chain, chain.output.result))
    return OperandView(stored, rows, (transpose,)) if rows is not None else None


def operand_views(chain: AttentionChain, allowed: Collection[Operation] | None = None) -> dict[SSAValue, OperandView]:
    """Q, K (as the kernel reads it) and V of `chain` that it can read in place, and O where it
    can be written in place, by operand value (Q, V and O of a plain matmul chain too).
    `allowed`: the ops of a region that hold the views."""
    views: dict[SSAValue, OperandView] = {}
    members = set(chain.ops)
    for operand in dict.fromkeys((chain.scores.a, chain.keys, chain.output.b)):
        if chain.keys is chain.scores.b and operand is chain.keys:
            continue  # Kt [D, N] read as it is stored: its rows are not contiguous runs of D
        view = _operand_view(operand, _loaded_columns(chain, operand), allowed, members)
        if view is not None:
            views[operand] = view
            members |= set(view.ops)
    if (written := _output_view(chain, allowed)) is not None:
        views[chain.output.result] = written
    return views


def region_ops(chain: AttentionChain, views: dict[SSAValue, OperandView]) -> tuple[Operation, ...]:
    """The chain's ops and the layout ops of `views`, in program order (an op may make several
    operands' views: the head split's reshape, read by q's, k's and v's slices)."""
    ops = {*chain.ops, *(op for view in views.values() for op in view.ops)}
    block = chain.output.parent_block()
    assert block is not None
    return tuple(op for op in block.ops if op in ops)


def coordinates(view: RowView, batch: Sequence[int]) -> tuple[int, int]:
    """(outer index, first column) of the block at batch coordinates `batch` (for tests and
    host-side checks; the kernel emits the same sums as index arithmetic)."""
    outer = view.outer_offset + sum(c * step for c, (step, _) in zip(batch, view.steps))
    column = view.column_offset + sum(c * step for c, (_, step) in zip(batch, view.steps))
    return outer, column
