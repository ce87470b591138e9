"""The GPU's shared-memory transpose through every pass, interpreted before and after each.

Hypothesis draws a transpose of the last two dimensions (leading dimensions from none to two,
matrix sides that are and are not multiples of the block, f32, f16 and i64 elements, the i64
ones taking the 32-wide block) and lowers it through the GPU pipeline: after convert-graph-to-tile
(the tile interpreter runs `tile.transpose`), convert-tile-to-loop (the loop interpreter runs the
thread loops in lockstep, the block-synchronous order of shared memory) and gpu-insert-barriers
(the GPU interpreter runs the threads between barriers and reports any race on the shared tile),
every stage must give the graph interpreter's result bit for bit. Other transposes (and every
transpose on the CPU) stay gathers: checked on the tile IR.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from mlc.dialects.tile import ops as tile
from programs import assert_equivalent, lower, random_inputs

TO_TILE = "graph-simplify,graph-decompose,graph-fuse,graph-plan-memory,convert-graph-to-tile,cse,canonicalize"
TO_LOOP = f"{TO_TILE},convert-tile-to-loop{{tensor-cores=true}},cse,canonicalize"
TO_GPU = f"{TO_LOOP},loop-promote-shared,loop-unroll,convert-loop-to-gpu,gpu-insert-barriers"

SIDES = (1, 3, 8, 31, 32, 33, 64, 70)


def _text(shape: tuple[int, ...], element: str, permutation: tuple[int, ...]) -> str:
    result = tuple(shape[axis] for axis in permutation)
    source_type = "tensor<" + "x".join(map(str, shape)) + f"x{element}>"
    result_type = "tensor<" + "x".join(map(str, result)) + f"x{element}>"
    return f"""func.func @main(%x: {source_type}) -> {result_type} {{
      %t = graph.transpose %x perm [{", ".join(map(str, permutation))}] : {source_type} to {result_type}
      func.return %t : {result_type}
    }}"""


def _kernels(module) -> list[tile.KernelOp]:
    return [op for op in module.walk() if isinstance(op, tile.KernelOp)]


@settings(max_examples=25, deadline=None)
@given(
    leading=st.lists(st.integers(1, 3), max_size=2),
    rows=st.sampled_from(SIDES),
    columns=st.sampled_from(SIDES),
    element=st.sampled_from(("f32", "f16", "i64")),
    seed=st.integers(0, 2**16),
)
def test_shared_memory_transpose_matches_at_every_stage(leading: list[int], rows: int, columns: int, element: str, seed: int):
    shape = (*leading, rows, columns)
    rank = len(shape)
    text = _text(shape, element, (*range(rank - 2), rank - 1, rank - 2))
    before = lower(text, "")
    inputs = random_inputs(text.replace("i64", "i32"), seed)
    inputs = [x.astype(np.int64) if element == "i64" else x for x in inputs]
    tiled = lower(text, TO_TILE)
    # Swapping an axis of size 1 moves no element: graph-simplify makes it a reshape.
    moves_elements = rows > 1 and columns > 1
    assert any(isinstance(op, tile.TransposeOp) for op in tiled.walk()) == moves_elements
    for stage in (tiled, lower(text, TO_LOOP), lower(text, TO_GPU)):
        assert_equivalent(before, stage, inputs)


def test_other_permutations_and_the_cpu_keep_the_gather():
    keeps_last = _text((4, 6, 8), "f32", (1, 0, 2))
    swaps_last_two = _text((4, 6, 8), "f32", (0, 2, 1))
    for text, pipeline in ((keeps_last, TO_TILE), (swaps_last_two, TO_TILE.replace("convert-graph-to-tile", "convert-graph-to-tile{target=cpu}"))):
        module = lower(text, pipeline)
        assert not any(isinstance(op, tile.TransposeOp) for op in module.walk())
        assert any(isinstance(op, tile.GatherOp) for op in module.walk())
    assert all(isinstance(op, tile.KernelOp) for op in _kernels(lower(swaps_last_two, TO_TILE)))
