"""Unit tests of the decisions behind convert-graph-to-tile and convert-tile-to-loop."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mlc.diagnostics import parse_module
from mlc.dialects import make_context
from mlc.transforms.convert_graph_to_tile import choose_tile_shape, collapse_dimensions
from mlc.transforms.convert_tile_to_loop import ThreadLayout
from mlc.transforms.elementwise_fusion import partition


def test_collapse_merges_dimensions_with_the_same_broadcast_pattern():
    assert collapse_dimensions((8, 16, 32), [(8, 16, 32), (8, 16, 32)]) == ((4096,), [(4096,), (4096,)])
    assert collapse_dimensions((64, 1024), [(64, 1024), (1024,)]) == ((64, 1024), [(64, 1024), (1, 1024)])
    assert collapse_dimensions((4, 8, 16), [(4, 8, 16), (4, 1, 1)]) == ((4, 128), [(4, 128), (4, 1)])


def test_collapse_drops_size_one_dimensions_and_handles_scalars():
    assert collapse_dimensions((1, 5, 1), [(1, 5, 1), ()]) == ((5,), [(5,), (1,)])
    assert collapse_dimensions((), [()]) == ((1,), [(1,)])


@given(
    shape=st.lists(st.integers(1, 6), min_size=1, max_size=4),
    masks=st.lists(st.lists(st.booleans(), min_size=4, max_size=4), min_size=1, max_size=3),
)
def test_collapse_preserves_every_element_count(shape, masks):
    inputs = [tuple(d if keep else 1 for d, keep in zip(shape, mask)) for mask in masks]
    domain, collapsed = collapse_dimensions(tuple(shape), inputs)
    count = lambda dims: __import__("math").prod(dims)
    assert count(domain) == count(shape)
    for original, new in zip(inputs, collapsed):
        assert count(original) == count(new)
        assert len(new) == len(domain)


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
