"""graph-split-column-reductions preserves what reductions over a non-last axis compute.

Hypothesis draws a reduction (sum, max or min; keepdims either way) over axis 0 of [R, C] or axis
1 of [B, R, C], R a multiple of 16 from 32 to 256, its operand x itself or x through elementwise
producers (a product with a second full-shape argument, a row of C added, a per-row [R, 1] scale),
and runs the pass with a small `block-bytes` (so that these small tensors split: blocks of 16 or
more rows), then interprets both functions: max and min must be bit-identical (exact in any order),
sums within the bound of any f32 summation order (`error_bounds`); the pass must have split every
reduction whose rows make two blocks or more (`row_blocks`) and left the producers to fuse (no
reshape of an intermediate). The end-to-end test compiles a split column mean with producers for
the CPU (the default blocks: 4 of 512 rows of 256) against numpy.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xdsl.ir import BlockArgument

import mlc
from mlc.interpreter import run
from mlc.dialects.graph import ops as graph
from mlc.transforms.graph.graph_split_column_reductions import MIN_BLOCK_ROWS
from programs import assert_equivalent, assert_within_bounds, lower, main_function, random_inputs

KINDS = ("reduce_sum", "reduce_max", "reduce_min")
PRODUCERS = ("none", "product", "row", "per-row")


def _tensor(shape: tuple[int, ...]) -> str:
    return "tensor<" + "".join(f"{d}x" for d in shape) + "f32>"


def column_program(kind: str, batch: int, rows: int, columns: int, producer: str, keepdims: bool) -> str:
    shape = (batch, rows, columns) if batch else (rows, columns)
    axis = 1 if batch else 0
    result = tuple(1 if d == axis else s for d, s in enumerate(shape)) if keepdims else tuple(s for d, s in enumerate(shape) if d != axis)
    t = _tensor(shape)
    arguments, body, x = [f"%x: {t}"], [], "%x"
    if producer != "none":
        other = {"product": shape, "row": (columns,), "per-row": (*shape[:-1], 1)}[producer]
        op = "add" if producer == "row" else "mul"
        arguments.append(f"%y: {_tensor(other)}")
        body.append(f"  %p = graph.{op} %x, %y : ({t}, {_tensor(other)}) -> {t}")
        x = "%p"
    body.append(f"  %r = graph.{kind} {x} axes [{axis}] keepdims {str(keepdims).lower()} : {t} to {_tensor(result)}")
    return f"func.func @main({', '.join(arguments)}) -> {_tensor(result)} {{\n" + "\n".join(body) + f"\n  func.return %r : {_tensor(result)}\n}}"


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    kind=st.sampled_from(KINDS),
    batch=st.sampled_from((0, 2)),
    rows=st.integers(2, 16).map(lambda r: r * MIN_BLOCK_ROWS),
    columns=st.sampled_from((2, 3, 8)),
    producer=st.sampled_from(PRODUCERS),
    keepdims=st.booleans(),
    block_rows=st.sampled_from((16, 32)),
    seed=st.integers(0, 2**32 - 1),
)
def test_split_reductions_compute_the_same(kind, batch, rows, columns, producer, keepdims, block_rows, seed):
    program = column_program(kind, batch, rows, columns, producer, keepdims)
    block_bytes = max(block_rows * columns * 4, 4 * MIN_BLOCK_ROWS)
    after = lower(program, f"graph-split-column-reductions{{block-bytes={block_bytes}}}")
    ops = list(main_function(after).body.block.ops)
    reductions = [op for op in ops if isinstance(op, graph.ReductionOp)]
    largest_block = max(b for b in (16, 32, 64, 128, 256) if rows % b == 0 and b * columns * 4 <= block_bytes)
    assert len(reductions) == (2 if rows // largest_block >= 2 else 1)
    # the producers moved to the split shape: a reshape reads only function arguments
    assert all(isinstance(op.x, BlockArgument) for op in ops if isinstance(op, graph.ReshapeOp))
    inputs = random_inputs(program, seed)
    if kind == "reduce_sum":
        assert_within_bounds(program, inputs, run(after, "main", [x.copy() for x in inputs]))
    else:
        assert_equivalent(lower(program, ""), after, inputs)


def test_split_column_mean_with_producers_on_the_cpu():
    """The CPU pipeline splits a mean over 2048 rows of 256 (blocks of 512 rows: 4 of them) with
    its producers fused into the partial kernel; the results match numpy within the bound."""
    t, row = _tensor((2048, 256)), _tensor((256,))
    program = f"""func.func @main(%x: {t}, %y: {t}, %b: {row}) -> {_tensor((1, 256))} {{
  %p = graph.mul %x, %y : ({t}, {t}) -> {t}
  %q = graph.add %p, %b : ({t}, {row}) -> {t}
  %m = graph.reduce_mean %q axes [0] keepdims true : {t} to {_tensor((1, 256))}
  func.return %m : {_tensor((1, 256))}
}}"""
    compiled = mlc.compile(program, device="cpu", num_threads=2)
    assert compiled.ir.count("loop.launch") == 2  # the partial kernel (producers fused) and the combining one
    inputs = random_inputs(program, 7)
    assert_within_bounds(program, inputs, compiled(*inputs))
