"""Reducing a tile spread over a block's threads (the layout of `analysis/thread_layout.py`).

A reduction along one axis gathers, for each output position, the terms each thread holds in its
repetitions (`reduction_terms`), combines them in registers as a balanced tree of the combiner
(`combine_tree`, so rounding grows with log n, not n) and then across the threads that share the
row with a `loop.all_reduce` over the thread bits of that axis (`all_reduce`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.ir import SSAValue

from mlc.dialects.loop import ops as loop
from mlc.dialects.tile import ops as tile
from mlc.transforms.lowering.chunk_access import Emitter


def reduction_terms(partials: Sequence[list[SSAValue]], along_chunk: bool, vector: int) -> list[list[SSAValue]]:
    """The terms of each output of a thread, from its repetitions' elements of the reduced tile.

    Along the chunk (the last axis), all of a thread's elements are terms of one output; a tile
    constant along the chunk (broadcast along the last axis) holds one scalar for the chunk's
    `vector` equal elements, each of them a term. Across chunks, position p of every repetition
    feeds output p (a single scalar standing for every position).
    """
    if along_chunk:
        return [[element for elements in partials for element in (elements * vector if len(elements) == 1 else elements)]]
    width = max(len(elements) for elements in partials)
    return [[elements[p if len(elements) > 1 else 0] for elements in partials] for p in range(width)]


def combine_tree(terms: list[SSAValue], combine: Callable[[list[SSAValue]], SSAValue]) -> SSAValue:
    """A balanced tree of `combine` over `terms` (pairs in order, an odd last one carried up)."""
    while len(terms) > 1:
        paired = [combine(terms[i : i + 2]) for i in range(0, len(terms) - 1, 2)]
        terms = paired + ([terms[-1]] if len(terms) % 2 else [])
    return terms[0]


def all_reduce(emitter: Emitter, op: tile.ReduceOp, value: SSAValue, mask: int) -> SSAValue:
    """`value` combined across the threads whose ids differ in the bits of `mask`, with `op`'s combiner."""
    combiner = op.body.clone()
    block = combiner.block
    terminator = block.last_op
    assert isinstance(terminator, tile.YieldOp)
    block.insert_op_before(loop.YieldOp(list(terminator.values)), terminator)
    terminator.detach()
    terminator.erase()
    return emitter.emit(loop.AllReduceOp(value, mask, combiner))
