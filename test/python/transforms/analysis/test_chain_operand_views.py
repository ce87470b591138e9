"""A chain operand as rows of a wide matrix (chain_operand_views.row_view): the blocks it addresses
are the view's elements, checked against numpy's views of the same layout ops."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from mlc.transforms.analysis.chain_operand_views import coordinates, row_view
from mlc.transforms.analysis.strided_views import StridedView


def _head_split(sequence: int, batch: int, heads: int, depth: int, batch_first: bool, part: int) -> tuple[StridedView, np.ndarray, int]:
    """q (part 0), k (1) or v (2) [B, H, S, d] of the projection [S*B, 3E] (`batch_first`:
    [B*S, 3E]) of PyTorch's multi-head attention, as a strided view and as numpy's view."""
    outer = (batch, sequence) if batch_first else (sequence, batch)
    leaf = np.arange(sequence * batch * 3 * heads * depth)
    perm = (0, 2, 1, 3) if batch_first else (1, 2, 0, 3)
    split = leaf.reshape(*outer, 3 * heads, depth)[:, :, part * heads : (part + 1) * heads, :]
    view = StridedView.whole(leaf.shape).reshaped((*outer, 3 * heads, depth))
    assert view is not None
    view = view.sliced((0, 0, part * heads, 0), (*outer, (part + 1) * heads, depth), (1, 1, 1, 1))
    assert view is not None
    return view.transposed(perm), split.transpose(perm), leaf.size


@settings(max_examples=40, deadline=None)
@given(
    sequence=st.integers(2, 9), batch=st.integers(1, 4), heads=st.integers(1, 4), depth=st.sampled_from((2, 4, 8)),
    batch_first=st.booleans(), part=st.integers(0, 2),
)
def test_head_split_blocks_are_the_view(sequence: int, batch: int, heads: int, depth: int, batch_first: bool, part: int):
    view, expected, elements = _head_split(sequence, batch, heads, depth, batch_first, part)
    rows = row_view(view, elements, depth)
    assert rows is not None
    wide = np.arange(elements).reshape(rows.outer, rows.rows, rows.width)
    for b in range(batch):
        for h in range(heads):
            outer, column = coordinates(rows, (b, h))
            np.testing.assert_array_equal(wide[outer, :, column : column + depth], expected[b, h])
    # batch first, b steps whole [S, 3E] matrices; otherwise it is a column offset of one matrix
    assert (rows.outer, rows.width) == ((batch, 3 * heads * depth) if batch_first else (1, 3 * batch * heads * depth))


def test_views_that_are_not_rows_of_a_matrix():
    view, _, elements = _head_split(5, 2, 2, 8, False, 1)
    assert row_view(view, elements, 16) is None  # columns the kernel loads must be the view's (no padding)
    assert row_view(view.transposed((0, 1, 3, 2)), elements, 5) is None  # columns not contiguous
    assert row_view(StridedView.whole((6, 1, 8)), 48, 8) is None  # one row
    # overlapping heads: the second batch dim steps 4 columns, but a row of the view is 8 wide
    assert row_view(StridedView(0, (((2, 4),), ((3, 8),), ((8, 1),))), 64, 8) is None
