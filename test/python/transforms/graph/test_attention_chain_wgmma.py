"""The attention chain on Hopper's warpgroup products (`chain_wgmma.py`, FlashAttention-3's registers).

graph-fuse's model asks for warpgroup products (`products = "wgmma"` in `mlc.chain_plan`) where
the tensor-core kernel's blocks fit them (`attention_cost.wgmma_chain_fits`); with
`convert-tile-to-loop{tensor-cores=true wgmma=true}` (sm_90) each key block is then one
`loop.wgmma` per warpgroup for S = Q Kt and one for P V, both with A from registers (Q's and P's
fragments), K and V staged swizzled by loop-promote-shared. Checked:

* Hypothesis draws f16/bf16 attention cores with head dims 64 and 128, K stored [N, D] (read
  K-major) or given as Kt (N-major), masks of every kind, fast math or not, blocks of one or two
  warpgroups; through the GPU pipeline down to gpu-insert-barriers, the kernel is interpreted with
  its barriers, async copies and the race checker, within the softmax's derived error bound and
  against float64 numpy; a Kt whose rows are not 16-byte multiples keeps mma.sync;
* the head split read and written in place on warpgroup products;
* the plan's decision: products for blocks of 64 to 256 rows and keys and head dims of 64 to
  256, not for smaller ones; graph-fuse writes it for the transformer block's attention.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import event, example, given, settings
from hypothesis import strategies as st
from programs import AttentionProgram, assert_compiled_matches, attention_program, attention_programs, head_split_attention_program, lower, random_inputs
from test_attention_chain import SETTINGS, TENSOR_CORE_PREFIX, _head_split_reference, _inputs, _reference, _run

from mlc.transforms.analysis.attention_cost import wgmma_chain_fits

WGMMA_PREFIX = TENSOR_CORE_PREFIX.replace("convert-tile-to-loop{tensor-cores=true}", "convert-tile-to-loop{tensor-cores=true wgmma=true}")
"""The GPU pipeline as sm_90 sets it (convert-tile-to-loop's `wgmma`), down to gpu-insert-barriers."""
assert WGMMA_PREFIX != TENSOR_CORE_PREFIX


def _lowered(text: str, block_rows: int, fast_math: bool = False) -> tuple[str, str]:
    """`text` to graph-fuse's output, its chain plan rewritten to `block_rows` x 64 keys and
    warpgroup products (short sequences get smaller blocks), and the rest of WGMMA_PREFIX."""
    passes = WGMMA_PREFIX.split(",")
    after_fuse = [name.split("{")[0] for name in passes].index("graph-fuse") + 1
    fused = str(lower(text, ",".join(passes[:after_fuse])))
    fused = re.sub(r', products = "\w+"', "", fused)
    plan = f'block_rows = {block_rows} : i64, block_keys = 64 : i64, products = "wgmma"{", fast_math" if fast_math and "fast_math" not in fused else ""}'
    fused = re.sub(r"block_rows = \d+ : i64, block_keys = \d+ : i64", plan, fused)
    return fused, ",".join(passes[after_fuse:])


@settings(max_examples=3, **SETTINGS)
@given(
    program=attention_programs(max_rows=70, max_keys=140, depths=(64, 128), elements=("f16", "bf16")),
    fast_math=st.booleans(),
    block_rows=st.sampled_from([64, 128]),
    seed=st.integers(0, 2**32 - 1),
)
@example(program=attention_program("bf16", (2,), 130, 136, 128, 64, "causal-where", False, True), fast_math=True, block_rows=128, seed=7)
@example(program=attention_program("f16", (), 70, 72, 64, 128, "additive", True, False), fast_math=False, block_rows=64, seed=8)
def test_wgmma_chain_kernel(program: AttentionProgram, fast_math: bool, block_rows: int, seed: int):
    inputs = _inputs(program, seed)
    text = program.text
    module = lower(*_lowered(text, block_rows, fast_math))
    kernel = str(module)
    aligned = program.stored_keys or program.keys % 8 == 0  # Kt's rows staged by 16-byte copies
    assert ("loop.wgmma m64" in kernel) == aligned and ("loop.ldmatrix" in kernel) != aligned
    if aligned:
        assert f"mlc.warp_grid = array<i64: {block_rows // 16}, 1>" in kernel and kernel.count("mlc.swizzle = 128") == 2
    event(f"{'wgmma' if aligned else 'mma.sync'} {program.element} {program.mask}{' fast' if fast_math else ''}")
    assert_compiled_matches(program.text, inputs, _run(module, inputs), references=[_reference(program, inputs)])


@pytest.mark.parametrize("shape", [("f16", 33, 2, 2, 64, True, True), ("bf16", 70, 2, 1, 64, False, False)], ids=["batch-first-f16", "sequence-first-bf16"])
def test_head_split_on_warpgroup_products(shape: tuple):
    """q, k and v read from the projection's rows (K-major K blocks at each head's columns), O's
    transpose written in place, interpreted within the bound and against numpy."""
    text = head_split_attention_program(*shape)
    inputs = random_inputs(text, 5)
    module = lower(*_lowered(text, 64))
    assert str(module).count("mlc_gpu.func @") == 1 and str(module).count("loop.wgmma m64") == 2
    assert_compiled_matches(text, inputs, _run(module, inputs), references=[_head_split_reference(inputs[0], *shape[1:])])


@pytest.mark.parametrize(
    ("blocks", "fits"),
    [((64, 64, 64, 64), True), ((128, 128, 128, 33), True), ((128, 64, 256, 256), True), ((32, 64, 64, 64), False), ((128, 64, 32, 64), False), ((128, 32, 64, 64), False)],
)
def test_plan_asks_for_warpgroup_products_where_blocks_fit(blocks: tuple[int, int, int, int], fits: bool):
    assert wgmma_chain_fits(*blocks) == fits


def test_graph_fuse_asks_for_warpgroup_products():
    """The plan of 16 heads x 512 tokens x d 64 (the transformer block at batch 1) asks for them; d 32 does not."""
    for depth, asked in ((64, True), (32, False)):
        program = attention_program("f16", (16,), 512, 512, depth, depth, "none", True, True)
        fused = str(lower(program.text, WGMMA_PREFIX.split(",graph-plan-memory")[0]))
        assert ('products = "wgmma"' in fused) == asked
