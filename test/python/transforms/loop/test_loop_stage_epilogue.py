"""loop-stage-epilogue: wgmma tiles stored through shared memory compute what they did.

Hypothesis draws f16/bf16 matmuls with a bias and a relu, M ragged against the 64- or 128-row
blocks, N a multiple of 8 (ragged against the 64-wide blocks, so whole 16-byte chunks fall
outside) and K over several steps; the module after each pass from the tile level (the new pass
before loop-promote-shared, cp.async or TMA staging) through gpu-insert-barriers is interpreted on
the same inputs: bit-identical results, no race reported (the staging's fragment writes and chunk
reads are other lanes of the same warp: the pass's `loop.warp_sync` must order them, also inside
the consumers' branch of a warp-specialized kernel). The preconditions' other
side: N not a multiple of 8 leaves the kernel alone, and so do f32 accumulators that the
epilogue computes with (TF32 + bias + relu).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from test_tensor_core_equivalence import _check_chain, program
from test_tf32_equivalence import _wgmma_tile_level as _tf32_tile_level
from test_tf32_equivalence import program as tf32_program
from test_wgmma_equivalence import RAGGED_STAGED_SHAPES, STEPS, _tile_level

from mlc.dialects.attributes import EPILOGUE_STAGING, STAGED_EPILOGUE
from programs import lower

STAGED_STEPS = [step.replace("loop-promote-shared", "loop-stage-epilogue,loop-promote-shared") for step in STEPS]
TMA_STAGED_STEPS = [step.replace("loop-promote-shared", "loop-stage-epilogue,loop-promote-shared{tma=true}") for step in STEPS]
WARP_SPECIALIZED_STAGED_STEPS = [step.replace("loop-promote-shared", "loop-stage-epilogue,loop-promote-shared{tma=true warp-specialize=true}") for step in STEPS]


@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(**RAGGED_STAGED_SHAPES, rows=st.sampled_from([64, 128]), tma=st.booleans())
def test_staged_epilogue_is_exact(m: int, n: int, k: int, rows: int, tma: bool, element: str, seed: int):
    _check_chain(program(m, n, k, True), element, TMA_STAGED_STEPS if tma else STAGED_STEPS, seed, tile_level=_tile_level(rows), path="loop.wgmma")


@settings(max_examples=1, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(**RAGGED_STAGED_SHAPES)
@example(m=70, n=72, k=456, element="f16", seed=4)
def test_staged_epilogue_in_warp_roles_is_exact(m: int, n: int, k: int, element: str, seed: int):
    """Warp-specialized (the epilogue runs in the consumers' divergent branch): the warp sync alone
    orders each warp's staging writes and reads (gpu-insert-barriers adds no barrier in the roles;
    the interpreter's race checker orders the lanes through it)."""
    _check_chain(program(m, n, k, True), element, WARP_SPECIALIZED_STAGED_STEPS, seed, tile_level=_tile_level(128), path="loop.wgmma")


def _wide_tile_level() -> str:
    return _tile_level(128).replace("matmul-tile=128,64,64", "matmul-tile=128,256,64")


def test_half_bands_in_two_rounds_are_exact():
    """128x256 tiles, warp-specialized: a whole band's staging (66 KiB) would cost a stage, so each
    warp stages half its band (rows 0-7, then 8-15: 33 KiB beside 4 stages); ragged M and N."""
    _check_chain(program(70, 264, 128, True), "bf16", WARP_SPECIALIZED_STAGED_STEPS, 6, tile_level=_wide_tile_level(), path="loop.wgmma")


def _staged(m: int, n: int, k: int) -> str:
    tile_text = str(lower(program(m, n, k, True), _tile_level(128)))
    return str(lower(tile_text, "convert-tile-to-loop{tensor-cores=true wgmma=true},loop-stage-epilogue"))


def test_a_128x256_tile_stages_half_bands_beside_four_stages():
    """A 128x256 f16 tile (8 warps of 16 x 256): a whole band's staging (8 x 16 x 264, a 16-byte
    pad per row: 66 KiB) would leave room for 3 stages of 48 KiB, half a band (8 x 8 x 264, two
    rounds) for the kernel's 4; the stores are 16-byte chunks, the output 16-byte aligned."""
    tile_text = str(lower(program(256, 512, 256, True), _wide_tile_level()))
    text = str(lower(tile_text, "convert-tile-to-loop{tensor-cores=true wgmma=true},loop-stage-epilogue"))
    assert "mlc.staged_epilogue = array<i64: 8, 256, 264>" in text
    assert "memref<8x8x264xf16, 3 : i64>" in text and "mlc.epilogue_staging" in text
    assert "mlc.pipeline_stages = 4" in text
    assert text.count("loop.warp_sync") == 3  # round 0's reads, round 1's writes, round 1's reads
    assert "vector<8xf16>" in text and "{alignment = 16 : i64} : memref<256x512xf16>, vector<8xf16>" in text


@pytest.mark.parametrize("n", [70, 203])
def test_columns_not_in_whole_chunks_keep_the_fragment_stores(n: int):
    module = lower(str(lower(program(70, n, 72, True), _tile_level(64))), "convert-tile-to-loop{tensor-cores=true wgmma=true},loop-stage-epilogue")
    assert not any(STAGED_EPILOGUE.read(op) is not None or EPILOGUE_STAGING.read(op) is not None for op in module.walk())


@pytest.mark.parametrize("epilogue", [False, True])
def test_f32_accumulators_computed_with_keep_the_fragment_stores(epilogue: bool):
    """A TF32 product (f32 output) is staged where only stored; with a bias and a relu computed on
    its f32 accumulators its products wait in each K step (`products_stay_in_flight`: a lockstep
    pipeline, which warp specialization does not take), and the pass leaves it alone."""
    text = tf32_program(70, 72, 200, epilogue, "tf32")
    module = lower(str(lower(text, _tf32_tile_level(128))), "convert-tile-to-loop{tensor-cores=true wgmma=true},loop-stage-epilogue")
    assert "loop.wgmma" in str(module)
    staged = any(STAGED_EPILOGUE.read(op) is not None for op in module.walk())
    assert staged is not epilogue


def test_staged_epilogue_in_grouped_tile_order_is_exact():
    """With loop-group-tiles besides (`group-tiles=G`): the band origins are a grouped order's
    row and column blocks, computed from the block ids with `remui`, which the barrier pass must
    know uniform (else the staging's indices are unknown per thread and every fragment store a
    WAW hazard across warps); 3 x 2 blocks of 64 rows in groups of 2, ragged M and N, bit-identical."""
    steps = [step.replace("convert-loop-to-gpu", "loop-group-tiles{group=2},convert-loop-to-gpu") for step in WARP_SPECIALIZED_STAGED_STEPS]
    assert any("loop-group-tiles" in step for step in steps)
    _check_chain(program(130, 72, 136, True), "f16", steps, 8, tile_level=_tile_level(64), path="loop.wgmma")
