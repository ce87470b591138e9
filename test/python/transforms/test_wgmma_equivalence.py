"""The Hopper tensor-core path (`convert-tile-to-loop{tensor-cores=true wgmma=true}` and the GPU
passes after it, down to the kernel convert-gpu-to-nvvm takes) preserves what f16 and bf16
matmuls compute.

Hypothesis draws M (any), N and K (multiples of 8: wgmma's operands are staged by 16-byte async
copies, so their rows must be 16-byte multiples; ragged against the 64-wide blocks, so loads and
stores are masked and copies zero-filled; K over one block, so that there is a K loop), an epilogue (none, or a bias add and a relu) and the
operand type, at the wgmma block 64x64x64 (one warpgroup) or 128x64x64 (two). The module after
each pass is interpreted on the same random inputs and must give bit-identical results:
`loop.wgmma` accumulates in K order with f32 fused multiply-adds, as `tile.dot` does. The NVVM
level (inline wgmma assembly with matrix descriptors) is not interpreted; the GPU tests run it.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st
from programs import transposed_matmul_program
from test_tensor_core_equivalence import _check_chain, program

from mlc.transforms.pipelines import GPU_PIPELINE

PASSES = GPU_PIPELINE.split(",")
FIRST = PASSES.index("convert-tile-to-loop{tensor-cores=true}")
STEPS = ["convert-tile-to-loop{tensor-cores=true wgmma=true}", *PASSES[FIRST + 1 : PASSES.index("convert-gpu-to-nvvm")]]


RAGGED_STAGED_SHAPES = dict(
    m=st.integers(1, 140),
    n=st.integers(1, 17).map(lambda blocks: 8 * blocks),
    k=st.integers(9, 25).map(lambda blocks: 8 * blocks),
    element=st.sampled_from(["f16", "bf16"]),
    seed=st.integers(0, 2**32 - 1),
)
"""Ragged M, N and K of at least 9 K steps of 8 (stages reused), as every staged wgmma test draws them."""


def _tile_level(rows: int) -> str:
    graph = ",".join(PASSES[: PASSES.index("convert-graph-to-tile")])
    return f"{graph},convert-graph-to-tile{{matmul-tile={rows},64,64}}," + ",".join(PASSES[PASSES.index("convert-graph-to-tile") + 1 : FIRST])


@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(**RAGGED_STAGED_SHAPES, rows=st.sampled_from([64, 128]), epilogue=st.booleans())
def test_wgmma_passes_are_exact(m: int, n: int, k: int, rows: int, epilogue: bool, element: str, seed: int):
    _check_chain(program(m, n, k, epilogue), element, STEPS, seed, tile_level=_tile_level(rows), path="loop.wgmma")


@pytest.mark.parametrize("element", ["bf16"])
def test_wgmma_pipeline_is_exact(element: str):
    """Several K steps (200 = 3 full steps and a ragged one) through a 3-stage async-copy pipeline
    (bf16 only: f16 takes the same path, which the drawn examples above and the GPU tests cover)."""
    _check_chain(program(70, 72, 200, True), element, STEPS, 3, tile_level=_tile_level(64), path="loop.wgmma")


@pytest.mark.parametrize("lhs_transposed, rhs_transposed, rows", [(False, True, 64), (True, False, 128), (True, True, 128)])
def test_wgmma_reads_transposed_operands_in_place(lhs_transposed: bool, rhs_transposed: bool, rows: int):
    """A transposed rhs is staged K-major (N x 64 blocks of the stored weight) and read without the
    instruction's B transpose, a transposed lhs M-major (64 x 64 blocks of the stored K x M) with
    its A transpose: exact through every pass, ragged N and K (zero-filled copies), and M where
    the lhs is not transposed (a transposed lhs's rows are M: 16-byte multiples)."""
    program = transposed_matmul_program((), 72 if lhs_transposed else 70, 200, 72, lhs_transposed, rhs_transposed, "f16", True)
    _check_chain(program, "f16", STEPS, 5, tile_level=_tile_level(rows), path="loop.wgmma")


TMA_STEPS = [step.replace("loop-promote-shared", "loop-promote-shared{tma=true}") for step in STEPS]


@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large], phases=[Phase.explicit, Phase.reuse, Phase.generate])
@given(**RAGGED_STAGED_SHAPES)
@example(m=70, n=72, k=456, element="bf16", seed=3)  # 8 K steps (stages reused), ragged M, N and K
def test_wgmma_passes_with_bulk_tensor_copies_are_exact(m: int, n: int, k: int, element: str, seed: int):
    """The TMA staging (`loop-promote-shared{tma=true}`, `tma_pipeline.py`): one thread issues each
    stage's bulk copies on its mbarrier, every thread waits on the stage's phase; the interpreter's
    mbarrier model lands the boxes (zero-filled past ragged M, N and K) at the phases' completion,
    through convert-loop-to-gpu and gpu-insert-barriers, bit-identical with a bias and a relu."""
    _check_chain(program(m, n, k, True), element, TMA_STEPS, seed, tile_level=_tile_level(128), path="loop.wgmma")


WARP_SPECIALIZED_STEPS = [step.replace("loop-promote-shared", "loop-promote-shared{tma=true warp-specialize=true}") for step in STEPS]


@settings(max_examples=1, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large], phases=[Phase.explicit, Phase.reuse, Phase.generate])
@given(**RAGGED_STAGED_SHAPES)
@example(m=70, n=72, k=456, element="f16", seed=4)  # 8 K steps: each stage released and refilled
def test_warp_specialized_bulk_tensor_copies_are_exact(m: int, n: int, k: int, element: str, seed: int):
    """`loop-promote-shared{tma=true warp-specialize=true}` (`warp_specialization.py`): a producer
    warpgroup issues the copies after waiting on each stage's *empty* mbarrier, the consumer
    warpgroups wait on *full*, multiply and release the stage (lane 0 of each warp, after a
    `loop.warp_sync`); the interpreter runs the two roles as coroutines and orders their accesses
    through the mbarriers (the pass without the warp_sync is a reported WAR: the refill is not
    ordered after the other lanes' reads). Bit-identical through convert-loop-to-gpu and
    gpu-insert-barriers (which adds no barrier inside the roles)."""
    _check_chain(program(m, n, k, True), element, WARP_SPECIALIZED_STEPS, seed, tile_level=_tile_level(128), path="loop.wgmma")


def test_transposed_operands_with_bulk_tensor_copies_are_exact():
    """Both operands transposed (x stored K x M, staged M-major; the weight N x K, staged K-major)
    through the TMA staging: boxes of the stored layouts, 8 K steps, ragged N and K."""
    program = transposed_matmul_program((), 72, 456, 72, True, True, "f16", True)
    _check_chain(program, "f16", TMA_STEPS, 5, tile_level=_tile_level(128), path="loop.wgmma")
