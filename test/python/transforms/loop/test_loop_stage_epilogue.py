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
from test_tf32_equivalence import HOPPER_DEFAULT_STEPS as TF32_STAGED_STEPS
from test_tf32_equivalence import _check_chain as _tf32_check_chain
from test_tf32_equivalence import _wgmma_tile_level as _tf32_tile_level
from test_tf32_equivalence import program as tf32_program
from test_wgmma_equivalence import RAGGED_STAGED_SHAPES, STEPS, _tile_level

from mlc.dialects.attributes import EPILOGUE_STAGING, STAGED_EPILOGUE
from mlc.transforms.loop.loop_stage_epilogue import BAND_ROWS, FRAGMENT_COLUMNS, WARP, Rounds, round_choices
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
    warp stages half its band (rows 0-7, then 8-15: 33 KiB beside 4 stages); one block, ragged M and N
    (136 of its 256 columns)."""
    _check_chain(program(70, 136, 128, True), "bf16", WARP_SPECIALIZED_STAGED_STEPS, 6, tile_level=_wide_tile_level(), path="loop.wgmma")


def _tf32_wide_tile_level() -> str:
    return _tf32_tile_level(128).replace("matmul-tile=128,64,32", "matmul-tile=128,256,32")


@settings(max_examples=1, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(m=st.integers(1, 128), n=st.integers(1, 64).map(lambda chunks: 4 * chunks), k=st.integers(9, 32).map(lambda blocks: 4 * blocks), seed=st.integers(0, 2**32 - 1))
@example(m=70, n=136, k=100, seed=9)  # ragged M, K and N: the second column part holds 8 of its 128 columns
def test_quarter_bands_in_four_rounds_are_exact(m: int, n: int, k: int, seed: int):
    """TF32 at 128x256x32, as mlc.compile's sm_90 default runs it (f32 outputs, warp-specialized): a
    half band (8 x 260 f32 a warp, 65 KiB) leaves room for 3 stages of 48 KiB, a quarter (rows 0-7
    then 8-15, each in two column parts of 128: 8 x 132 f32, 33 KiB) for 4; one block of the grid,
    every step from convert-tile-to-loop bit-identical to it, no race (each round's writes and reads
    ordered by warp syncs)."""
    lowered = _tf32_check_chain(tf32_program(m, n, k, False, "tf32"), "tf32", TF32_STAGED_STEPS, seed, _tf32_wide_tile_level(), "loop.wgmma")
    assert "mlc.staged_epilogue = array<i64: 8, 128, 132>" in lowered and "mlc.warp_roles" in lowered


@settings(max_examples=30, deadline=None)
@given(width=st.integers(1, 32).map(lambda groups: 8 * groups), chunk=st.sampled_from([4, 8]))
def test_round_choices_tile_the_band(width: int, chunk: int):
    """Every staging the pass may choose covers a warp's 16 x W band exactly once over its rounds,
    each round's chunks a whole number of the warp's lanes, each fragment's 8 columns in one part;
    the whole band first, then ever smaller parts (the pass takes the first of the most stages)."""
    choices = round_choices(width, chunk)
    assert choices[0] == Rounds(BAND_ROWS, width)
    for choice in choices:
        assert choice.count(width) * choice.rows * choice.columns == BAND_ROWS * width
        assert width % choice.columns == 0 and choice.columns % FRAGMENT_COLUMNS == 0 and choice.columns % chunk == 0
        assert choice.rows * choice.columns // chunk % WARP == 0 or choice.rows == BAND_ROWS
    sizes = [choice.rows * choice.columns for choice in choices]
    assert sizes == sorted(sizes, reverse=True) and len(set(sizes)) == len(sizes)


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


def test_a_tf32_128x256_tile_stages_quarter_bands_beside_four_stages():
    """TF32 4096^3's tile under mlc.compile's default (128x256x32 f32, 48 KiB a stage): a whole band
    (8 x 16 x 260 f32, 130 KiB) would leave 2 stages, half a band 3, a quarter (8 x 8 x 132: rows
    0-7 and 8-15, each in two parts of 128 columns, four rounds) the kernel's 4."""
    tile_text = str(lower(tf32_program(256, 512, 256, False, "tf32"), _tf32_wide_tile_level()))
    text = str(lower(tile_text, "convert-tile-to-loop{tensor-cores=true wgmma=true},loop-stage-epilogue"))
    assert "mlc.staged_epilogue = array<i64: 8, 128, 132>" in text and "mlc.pipeline_stages = 4" in text
    assert "memref<8x8x132xf32, 3 : i64>" in text
    assert text.count("loop.warp_sync") == 7  # round 0's reads; rounds 1-3's writes and reads
    assert "{alignment = 16 : i64} : memref<256x512xf32>, vector<4xf32>" in text


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
