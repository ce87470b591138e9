"""loop-persistent-tiles: a warp-specialized product on a persistent grid computes what it did.

Hypothesis draws ragged f16/bf16 products (M, N, K against 64x64x64 blocks, at least two K steps
so the stages are reused within a tile and across tiles), with or without loop-group-tiles' grouped
order, lowered the way `mlc.compile` lowers them on sm_90 (TMA, a producer warpgroup, the staged
epilogue) down to the loop level, and a persistent grid of P blocks fewer than the tiles (often
not dividing them: a block's last lap is partial). The loop interpreter runs the kernel before and
after the pass and after convert-loop-to-gpu and gpu-insert-barriers: bit-identical results. The
interpreter runs the two warp roles as coroutines and checks the mbarriers' phases and the races
(`mlc/interpreter/mbarrier.py`): a stage refilled before its release is a reported race, a stage
never released a reported hang (the pass without the release of a tile's last stage hangs here),
so the counters that run on across tiles are checked, not only the results.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from xdsl.dialects import scf

from mlc.dialects.attributes import PERSISTENT_TILES, WARP_ROLES
from mlc.dialects.loop import ops as loop
from mlc.interpreter import run
from mlc.transforms.loop.loop_persistent_tiles import persist_tiles
from mlc.transforms.pipelines import GPU_PIPELINE
from programs import lower, random_inputs, transposed_matmul_program

PASSES = GPU_PIPELINE.split(",")
TILE_LEVEL = ",".join(PASSES[: PASSES.index("convert-graph-to-tile")] + ["convert-graph-to-tile{matmul-tile=64,64,64}"] + PASSES[PASSES.index("convert-graph-to-tile") + 1 : PASSES.index("convert-tile-to-loop{tensor-cores=true}")])
TO_LOOPS = "convert-tile-to-loop{tensor-cores=true wgmma=true},cse,canonicalize,loop-stage-epilogue,loop-promote-shared{tma=true warp-specialize=true},loop-unroll"


def program(m: int, n: int, k: int, bias: bool = False) -> str:
    """`@main`: an f16 M x K by K x N product (with `bias`, relu(product + bias))."""
    return transposed_matmul_program((), m, k, n, False, False, "f16", bias)


def loop_level(text: str, element: str, group: int) -> str:
    """The kernel at the loop level, right where mlc-lower-to-gpu runs loop-persistent-tiles."""
    tile_text = str(lower(text, TILE_LEVEL))
    tile_text = tile_text.replace("f16", element) if element != "f16" else tile_text
    grouping = f",loop-group-tiles{{group={group}}}" if group else ""
    return str(lower(tile_text, TO_LOOPS + grouping))


def _kernel(module) -> loop.KernelOp:  # type: ignore[no-untyped-def]
    return next(op for op in module.walk() if isinstance(op, loop.KernelOp))


def _tiles(kernel: loop.KernelOp) -> int:
    grid = [op.trip_count for op in kernel.walk() if isinstance(op, loop.ParallelOp) and op.mapping_name().startswith("block.")]
    return int(np.prod(grid))


@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    m=st.integers(65, 200),
    n=st.integers(9, 25).map(lambda blocks: 8 * blocks),
    k=st.integers(9, 25).map(lambda blocks: 8 * blocks),
    element=st.sampled_from(["f16", "bf16"]),
    group=st.sampled_from([0, 2]),
    fraction=st.floats(0.1, 0.9),
    seed=st.integers(0, 2**32 - 1),
)
@example(m=130, n=136, k=200, element="f16", group=2, fraction=0.5, seed=4)  # 3 x 3 tiles on 4 blocks, 4 K steps
def test_persistent_tiles_compute_the_same_products(m: int, n: int, k: int, element: str, group: int, fraction: float, seed: int):
    text = program(m, n, k)
    before = lower(loop_level(text, element, group), "")
    tiles = _tiles(_kernel(before))
    blocks = max(1, min(tiles - 1, int(tiles * fraction)))
    dtype = {"f16": np.float16, "bf16": __import__("ml_dtypes").bfloat16}[element]
    inputs = [x.astype(dtype) for x in random_inputs(text, seed)]
    expected = run(before, "main", [x.copy() for x in inputs])
    after = lower(str(before), "")
    assert persist_tiles(_kernel(after), blocks)
    assert PERSISTENT_TILES.read(_kernel(after)).value.data == blocks  # type: ignore[union-attr]
    for module in (after, lower(str(after), "convert-loop-to-gpu,gpu-insert-barriers")):
        for want, got in zip(expected, run(module, "main", [x.copy() for x in inputs]), strict=True):
            np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))
    gpu = lower(str(after), "convert-loop-to-gpu,gpu-insert-barriers")
    roles = [op for op in gpu.walk() if isinstance(op, scf.IfOp) and WARP_ROLES.name in op.attributes]
    assert len(roles) == 1 and not any(op.name == "mlc_gpu.barrier" for op in roles[0].walk()), "a block barrier inside the roles"


def test_a_kernel_staging_its_bias_per_tile_is_left_alone():
    """The bias epilogue stages the tile's bias columns in shared memory before the roles (a store
    that depends on the block): the roles could not redo it per tile without a barrier among the
    consumers, so the kernel keeps its grid; and one with no more tiles than blocks keeps it too."""
    biased = _kernel(lower(loop_level(program(130, 136, 200, bias=True), "f16", 0), ""))
    assert not persist_tiles(biased, 2) and PERSISTENT_TILES.read(biased) is None
    plain = _kernel(lower(loop_level(program(130, 136, 200), "f16", 0), ""))
    assert not persist_tiles(plain, _tiles(plain)) and PERSISTENT_TILES.read(plain) is None


def test_the_pipeline_runs_it_after_grouping_and_refuses_it_without_warp_roles():
    from mlc.transforms.loop.convert_loop_to_gpu import ConvertLoopToGpu
    from mlc.transforms.loop.loop_group_tiles import LoopGroupTiles
    from mlc.transforms.loop.loop_persistent_tiles import LoopPersistentTiles
    from mlc.transforms.pipelines import LowerToGpu

    passes = LowerToGpu(arch="sm_90", tma=True, warp_specialize=True, l2_group_tiles=8, persistent_tiles=132).passes()
    kinds = [type(p) for p in passes]
    at = kinds.index(LoopPersistentTiles)
    assert kinds[at - 1] is LoopGroupTiles and kinds[at + 1] is ConvertLoopToGpu and passes[at] == LoopPersistentTiles(blocks=132)
    with pytest.raises(ValueError, match="persistent-tiles=P loops the warp-specialized product"):
        LowerToGpu(arch="sm_90", tma=True, persistent_tiles=132)
    with pytest.raises(ValueError, match="persistent-tiles must be 0"):
        LowerToGpu(arch="sm_90", tma=True, warp_specialize=True, persistent_tiles=-1)
