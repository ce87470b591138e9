"""Unit tests of the decisions behind convert-graph-to-tile and convert-tile-to-loop."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mlc.diagnostics import parse_module
from mlc.dialects import make_context
from mlc.transforms.analysis.tile_sizes import choose_cpu_column_tile, choose_reduction_tile, choose_tile_shape, reduction_warps
from mlc.transforms.lowering.group_plan import KernelPlan, collapse_dimensions
from mlc.transforms.analysis.thread_layout import ThreadLayout
from mlc.transforms.analysis.fusion_groups import FusionGroup, partition, reduced_shape, shape_of
from mlc.transforms.lowering.graph_decomposition import decompose_function


def _collapsed(domain, participants):
    collapse = collapse_dimensions(domain, participants)
    return collapse.domain, [collapse.shape(shape) for shape in participants]


def test_collapse_merges_dimensions_with_the_same_broadcast_pattern():
    assert _collapsed((8, 16, 32), [(8, 16, 32), (8, 16, 32)]) == ((4096,), [(4096,), (4096,)])
    assert _collapsed((64, 1024), [(64, 1024), (1024,)]) == ((64, 1024), [(64, 1024), (1, 1024)])
    assert _collapsed((4, 8, 16), [(4, 8, 16), (4, 1, 1)]) == ((4, 128), [(4, 128), (4, 1)])


def test_collapse_drops_size_one_dimensions_and_handles_scalars():
    assert _collapsed((1, 5, 1), [(1, 5, 1), ()]) == ((5,), [(5,), (1,)])
    assert _collapsed((), [()]) == ((1,), [(1,)])


def test_collapse_keeps_reduced_dimensions_apart_from_kept_ones():
    # A layer norm over the last two dimensions of 2x3x4x5: the reduced shape takes part.
    collapse = collapse_dimensions((2, 3, 4, 5), [(2, 3, 4, 5), (4, 5), (2, 3, 1, 1)])
    assert collapse.domain == (6, 20)
    assert collapse.axes((2, 3)) == (1,)
    assert collapse.shape((2, 3, 1, 1)) == (6, 1)


@given(
    shape=st.lists(st.integers(1, 6), min_size=1, max_size=4),
    masks=st.lists(st.lists(st.booleans(), min_size=4, max_size=4), min_size=1, max_size=3),
)
def test_collapse_preserves_every_element_count(shape, masks):
    inputs = [tuple(d if keep else 1 for d, keep in zip(shape, mask)) for mask in masks]
    domain, collapsed = _collapsed(tuple(shape), inputs)
    assert math.prod(domain) == math.prod(shape)
    for original, new in zip(inputs, collapsed):
        assert math.prod(original) == math.prod(new)
        assert len(new) == len(domain)


def test_reduction_tiles_hold_whole_rows_and_stay_coalesced():
    assert choose_reduction_tile((4096, 1024), (1,), 2048) == (2, 1024)
    assert choose_reduction_tile((8192, 8192), (1,), 2048) == (1, 8192)
    assert choose_reduction_tile((64, 1000), (1,), 2048) == (2, 1024)
    assert choose_reduction_tile((4096, 33), (1,), 2048) == (32, 64)
    # A column reduction spans 32 contiguous elements when the rows fit.
    assert choose_reduction_tile((1000, 4096), (0,), 2048) == (1024, 32)
    assert reduction_warps((1, 8192)) == 16
    assert reduction_warps((1, 65536)) == 32
    assert reduction_warps((2, 1024)) == 4
    assert reduction_warps((1, 4)) == 1


def test_longer_rows_are_covered_chunk_by_chunk():
    """Beyond 65536 elements a program holds a 16384-element chunk of its row and loops over the
    reduced dimensions it does not cover whole, one program per kept row (or 32 columns)."""
    assert choose_reduction_tile((2, 65536), (1,), 2048) == (1, 65536)
    assert choose_reduction_tile((2, 65537), (1,), 2048) == (1, 16384)
    assert choose_reduction_tile((100000, 8), (0,), 2048) == (2048, 8)
    assert choose_reduction_tile((70001, 3), (0,), 2048) == (4096, 4)
    assert choose_reduction_tile((100000, 4096), (0,), 2048) == (512, 32)
    # Reduced dimensions 0 and 2 (not adjacent, so not collapsed): loops over both.
    assert choose_reduction_tile((3, 2, 70001), (0, 2), 2048) == (1, 1, 16384)
    assert choose_reduction_tile((70001, 2, 3), (0, 2), 2048) == (4096, 1, 4)
    assert reduction_warps((1, 16384)) == 32


@pytest.mark.parametrize(
    "domain, reduced_axes, loop_axes, grid_counts, masked",
    [
        ((2, 100000), (1,), (1,), (2, 1), True),
        ((2, 131072), (1,), (1,), (2, 1), False),
        ((3, 2, 70001), (0, 2), (0, 2), (1, 2, 1), True),
        ((2, 65536), (1,), (), (2, 1), False),
    ],
)
def test_a_plan_loops_over_the_reduced_dimensions_its_tile_does_not_cover(domain, reduced_axes, loop_axes, grid_counts, masked):
    """Looped dimensions get one program (the loop covers them); the last chunk masks when partial."""
    group = FusionGroup(domain=domain, reduced_axes=reduced_axes)
    collapse = collapse_dimensions(domain, [domain, reduced_shape(domain, reduced_axes)])
    plan = KernelPlan("k", group, collapse, choose_reduction_tile(domain, reduced_axes, 2048), 32)
    assert (plan.loop_axes, plan.grid_counts) == (loop_axes, grid_counts)
    assert plan.needs_mask() == masked


def test_tile_shape_is_filled_innermost_first_and_never_exceeds_the_dimension_power_of_two():
    assert choose_tile_shape((64, 1024), 2048) == (2, 1024)
    assert choose_tile_shape((1 << 26,), 2048) == (2048,)
    assert choose_tile_shape((3, 5), 2048) == (4, 8)
    assert choose_tile_shape((1000, 3), 64) == (16, 4)


def test_thread_layout_uses_sixteen_byte_chunks_and_shrinks_small_blocks():
    layout = ThreadLayout.choose((2, 1024), num_warps=4, max_vector=4)
    assert (layout.vector, layout.threads, layout.repetitions, layout.chunks_per_row) == (4, 128, 4, 256)
    tiny = ThreadLayout.choose((4,), num_warps=4, max_vector=4)
    assert (tiny.vector, tiny.threads, tiny.repetitions) == (4, 1, 1)
    odd_row = ThreadLayout.choose((8, 6), num_warps=1, max_vector=4)
    assert odd_row.vector == 2  # the largest power of two that divides the row


def _groups(text: str):
    module, _ = parse_module(text, make_context())
    function = next(iter(module.body.block.ops))
    return partition(function)


def _column_sum_group(element: str, rows: int, columns: int, wide_output: bool = False, per_row: bool = False):
    t, o = f"tensor<{rows}x{columns}x{element}>", f"tensor<{columns}x{element}>"
    returned = f"%0, %1 : {t}, {o}" if wide_output else f"%1 : {o}"
    r = f"tensor<{rows}x1x{element}>"
    producer = f"graph.mul %x, %r : ({t}, {r}) -> {t}" if per_row else f"graph.abs %x : {t}"
    (group,) = _groups(
        f"""
        func.func @f(%x: {t}, %r: {r}) -> ({t if wide_output else o}{', ' + o if wide_output else ''}) {{
          %0 = {producer}
          %1 = graph.reduce_sum %0 axes [0] keepdims false : {t} to {o}
          func.return {returned}
        }}"""
    )
    return group


def test_cpu_column_reductions_stream_whole_columns_of_a_strip():
    """On the CPU an f32 column reduction gets all its rows and a strip of columns dividing them
    (no column masks); other element types, groups that store values of every row or read values
    of every row broadcast along the columns, and reductions along the last axis keep the GPU's
    tile."""
    assert choose_cpu_column_tile((65536, 64), (0,), _column_sum_group("f32", 65536, 64)) == (65536, 64)
    assert choose_cpu_column_tile((4096, 1024), (0,), _column_sum_group("f32", 4096, 1024)) == (4096, 128)
    assert choose_cpu_column_tile((1000, 1500), (0,), _column_sum_group("f32", 1000, 1500)) == (1024, 4)
    assert choose_cpu_column_tile((1000, 37), (0,), _column_sum_group("f32", 1000, 37)) is None  # odd: masks
    assert choose_cpu_column_tile((1 << 20, 64), (0,), _column_sum_group("f32", 1 << 20, 64)) is None  # too large
    assert choose_cpu_column_tile((4096, 1024), (0,), _column_sum_group("i32", 4096, 1024)) is None
    assert choose_cpu_column_tile((4096, 1024), (0,), _column_sum_group("f32", 4096, 1024, wide_output=True)) is None
    assert choose_cpu_column_tile((4096, 1024), (1,), _column_sum_group("f32", 4096, 1024)) is None
    assert choose_cpu_column_tile((4096, 1024), (0,), _column_sum_group("f32", 4096, 1024, per_row=True)) is None


def test_partition_fuses_a_chain_and_cuts_at_reshapes():
    groups = _groups(
        """
        func.func @f(%x: tensor<4x8xf32>) -> tensor<32xf32> {
          %0 = graph.exp %x : tensor<4x8xf32>
          %1 = graph.neg %0 : tensor<4x8xf32>
          %2 = graph.reshape %1 : tensor<4x8xf32> to tensor<32xf32>
          %3 = graph.sqrt %2 : tensor<32xf32>
          func.return %3 : tensor<32xf32>
        }"""
    )
    assert [[op.name for op in g.ops] for g in groups] == [["graph.exp", "graph.neg"], ["graph.reshape", "graph.sqrt"]]


def test_partition_keeps_a_value_used_by_two_groups_as_an_output():
    groups = _groups(
        """
        func.func @f(%x: tensor<8xf32>, %y: tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<8xf32>) {
          %0 = graph.exp %x : tensor<8xf32>
          %1 = graph.add %y, %0 : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
          %2 = graph.neg %0 : tensor<8xf32>
          func.return %1, %2 : tensor<2x8xf32>, tensor<8xf32>
        }"""
    )
    names = [[op.name for op in g.ops] for g in groups]
    assert ["graph.exp"] in names and ["graph.add"] in names and ["graph.neg"] in names
    exp_group = next(g for g in groups if g.ops[0].name == "graph.exp")
    assert groups.index(exp_group) == 0  # its output is an input of the others


def test_partition_broadcast_producer_joins_the_larger_consumer():
    groups = _groups(
        """
        func.func @f(%x: tensor<8xf32>, %y: tensor<2x8xf32>) -> tensor<2x8xf32> {
          %0 = graph.exp %x : tensor<8xf32>
          %1 = graph.add %y, %0 : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
          func.return %1 : tensor<2x8xf32>
        }"""
    )
    assert len(groups) == 1 and groups[0].domain == (2, 8)
    assert sorted(seen for _, seen in groups[0].inputs) == [(2, 8), (8,)]


@pytest.mark.parametrize("returned_twice", [False, True])
def test_partition_output_of_the_domain_shape_stays_in_the_group(returned_twice):
    ret = "%0, %1 : tensor<4xf32>, tensor<4xf32>" if returned_twice else "%1 : tensor<4xf32>"
    result_types = "(tensor<4xf32>, tensor<4xf32>)" if returned_twice else "tensor<4xf32>"
    groups = _groups(
        f"""
        func.func @f(%x: tensor<4xf32>) -> {result_types} {{
          %0 = graph.exp %x : tensor<4xf32>
          %1 = graph.neg %0 : tensor<4xf32>
          func.return {ret}
        }}"""
    )
    assert len(groups) == 1
    assert len(groups[0].outputs) == (2 if returned_twice else 1)


def test_siblings_reading_a_common_input_share_one_kernel():
    groups = _groups(
        """
        func.func @f(%i: tensor<64xi32>, %j: tensor<64xi32>) -> (tensor<64xi1>, tensor<64xi32>) {
          %0 = graph.cmp ge, %i, %j : (tensor<64xi32>, tensor<64xi32>) -> tensor<64xi1>
          %1 = graph.div %i, %j : (tensor<64xi32>, tensor<64xi32>) -> tensor<64xi32>
          func.return %0, %1 : tensor<64xi1>, tensor<64xi32>
        }"""
    )
    assert len(groups) == 1 and len(groups[0].outputs) == 2
    assert len(groups[0].inputs) == 2  # i and j, each read once


def test_dependent_siblings_are_not_merged():
    # %2 depends on the exp group through %1 (a reshape cut): merging them would form a cycle.
    groups = _groups(
        """
        func.func @f(%x: tensor<4x8xf32>) -> (tensor<32xf32>, tensor<32xf32>) {
          %0 = graph.exp %x : tensor<4x8xf32>
          %1 = graph.reshape %0 : tensor<4x8xf32> to tensor<32xf32>
          %2 = graph.neg %1 : tensor<32xf32>
          %3 = graph.reshape %x : tensor<4x8xf32> to tensor<32xf32>
          %4 = graph.abs %3 : tensor<32xf32>
          %5 = graph.add %2, %4 : (tensor<32xf32>, tensor<32xf32>) -> tensor<32xf32>
          func.return %5, %4 : tensor<32xf32>, tensor<32xf32>
        }"""
    )
    names = [[op.name for op in g.ops] for g in groups]
    assert names[0] == ["graph.exp"]
    assert len(groups) == 2


def test_a_reshaped_result_is_written_in_place():
    groups = _groups(
        """
        func.func @f(%x: tensor<256xf32>) -> tensor<16x16xf32> {
          %0 = graph.exp %x : tensor<256xf32>
          %1 = graph.reshape %0 : tensor<256xf32> to tensor<16x16xf32>
          func.return %1 : tensor<16x16xf32>
        }"""
    )
    assert [[op.name for op in g.ops] for g in groups] == [["graph.exp"]]


def _decomposed_groups(text: str):
    module, _ = parse_module(text, make_context())
    function = next(iter(module.body.block.ops))
    decompose_function(function)
    return partition(function)


def test_a_softmax_with_its_producers_and_consumers_is_one_group():
    groups = _decomposed_groups(
        """
        func.func @f(%x: tensor<64x1000xf32>) -> tensor<64x1000xf32> {
          %0 = graph.relu %x : tensor<64x1000xf32>
          %1 = graph.softmax %0 axis 1 : tensor<64x1000xf32>
          %2 = graph.neg %1 : tensor<64x1000xf32>
          func.return %2 : tensor<64x1000xf32>
        }"""
    )
    assert len(groups) == 1
    assert (groups[0].domain, groups[0].reduced_axes) == ((64, 1000), (1,))
    assert [value for value, _ in groups[0].inputs] == [groups[0].ops[0].operands[0]]


def test_a_layer_norm_and_its_row_statistics_output_are_one_group():
    groups = _decomposed_groups(
        """
        func.func @f(%x: tensor<8x4x16xf32>, %s: tensor<4x16xf32>, %b: tensor<4x16xf32>) -> (tensor<8x4x16xf32>, tensor<8x1x1xf32>) {
          %0 = graph.layer_norm %x, %s, %b axis 1 epsilon 1.0e-05 : (tensor<8x4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<8x4x16xf32>
          %1 = graph.reduce_max %x axes [1, 2] keepdims true : tensor<8x4x16xf32> to tensor<8x1x1xf32>
          func.return %0, %1 : tensor<8x4x16xf32>, tensor<8x1x1xf32>
        }"""
    )
    assert len(groups) == 1  # the max reads x too: a sibling of the same rows
    assert groups[0].reduced_axes == (1, 2)
    assert sorted(shape_of(v) for v in groups[0].outputs) == [(8, 1, 1), (8, 4, 16)]


def test_reductions_over_different_axes_are_different_kernels():
    groups = _decomposed_groups(
        """
        func.func @f(%x: tensor<32x64xf32>) -> tensor<32x64xf32> {
          %0 = graph.reduce_sum %x axes [1] keepdims true : tensor<32x64xf32> to tensor<32x1xf32>
          %1 = graph.reduce_sum %x axes [0] keepdims true : tensor<32x64xf32> to tensor<1x64xf32>
          %2 = graph.add %0, %1 : (tensor<32x1xf32>, tensor<1x64xf32>) -> tensor<32x64xf32>
          func.return %2 : tensor<32x64xf32>
        }"""
    )
    # The row sum joins the add (whose domain is its input); the column sum is its own kernel.
    assert sorted(g.reduced_axes for g in groups) == [(0,), (1,)]


def test_a_reduction_not_kept_is_returned_through_a_view():
    groups = _decomposed_groups(
        """
        func.func @f(%x: tensor<32x64xf32>) -> tensor<32xf32> {
          %0 = graph.reduce_mean %x axes [1] keepdims false : tensor<32x64xf32> to tensor<32xf32>
          func.return %0 : tensor<32xf32>
        }"""
    )
    assert [[op.name for op in g.ops] for g in groups] == [["graph.reduce_sum", "graph.div"]]


def test_a_smaller_output_without_a_reduction_to_match_gets_its_own_group():
    # exp(b) is returned and used by a 2x8 add: a 2x8 kernel cannot store it once, so the
    # partition is redone with exp alone.
    groups = _groups(
        """
        func.func @f(%x: tensor<2x8xf32>, %b: tensor<8xf32>) -> (tensor<2x8xf32>, tensor<8xf32>) {
          %0 = graph.exp %b : tensor<8xf32>
          %1 = graph.add %x, %0 : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
          func.return %1, %0 : tensor<2x8xf32>, tensor<8xf32>
        }"""
    )
    assert [[op.name for op in g.ops] for g in groups] == [["graph.exp"], ["graph.add"]]


def test_a_reduced_output_returned_beside_its_consumer_stays_in_the_kernel():
    groups = _decomposed_groups(
        """
        func.func @f(%x: tensor<300x100xf32>) -> (tensor<300x100xf32>, tensor<300x1xf32>) {
          %m = graph.reduce_mean %x axes [1] keepdims true : tensor<300x100xf32> to tensor<300x1xf32>
          %d = graph.sub %x, %m : (tensor<300x100xf32>, tensor<300x1xf32>) -> tensor<300x100xf32>
          func.return %d, %m : tensor<300x100xf32>, tensor<300x1xf32>
        }"""
    )
    assert len(groups) == 1 and len(groups[0].outputs) == 2
