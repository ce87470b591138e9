"""loop-group-tiles: the blocks of a 2-D grid run in grouped order and compute what they did.

Hypothesis draws grids (X row blocks by Y column blocks, a group size G < X, so the last group is
often shorter) of a kernel whose blocks each write their tile of an output from the same tile of
an input and their own coordinates. The loop interpreter runs it before and after the pass and
through convert-loop-to-gpu: bit-identical results, and no element left unwritten (an unwritten
one stays NaN) or written twice (a reported race), so the block-to-tile map is a bijection. The
grouped order itself is checked against Triton's formula, computed here for every launch index.
With `l2-bytes` drawn below or above the input's bytes, and the kernel drawn with or without a
tensor-core product (a warp's `loop.mma_sync` on its tile), the pass groups exactly the kernels
its rule names (a product reading more than `l2-bytes`), and either way the results are the same.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mlc.dialects.attributes import TILE_GROUP
from mlc.interpreter import run_kernel
from programs import lower


def grid_kernel(rows: int, columns: int, source: str, target: str, threads: int, body: str) -> str:
    """`@tiles(%a: memref<source>, %out: memref<target>)`: `body` in thread %t of block (%x, %y)."""
    return f"""
loop.kernel @tiles(%a: memref<{source}>, %out: memref<{target}>) {{
  loop.parallel %x < {rows} mapping block.x {{
    loop.parallel %y < {columns} mapping block.y {{
      loop.parallel %t < {threads} mapping thread.x {{
{body}
      }}
    }}
  }}
  loop.return
}}
"""


def kernel_text(rows: int, columns: int) -> str:
    """out[x, y, t] = 2 * a[x, y, t] + 100 * x + y for each block (x, y) and thread t."""
    shape = f"{rows}x{columns}x4xf32"
    body = f"""        %c2 = arith.constant 2.0 : f32
        %c100 = arith.constant 100 : index
        %v = memref.load %a[%x, %y, %t] : memref<{shape}>
        %scaled = arith.mulf %v, %c2 : f32
        %row = arith.muli %x, %c100 : index
        %tag = arith.addi %row, %y : index
        %tag_int = arith.index_cast %tag : index to i64
        %tag_float = arith.sitofp %tag_int : i64 to f32
        %r = arith.addf %scaled, %tag_float : f32
        memref.store %r, %out[%x, %y, %t] : memref<{shape}>"""
    return grid_kernel(rows, columns, shape, shape, 4, body)


def product_kernel_text(rows: int, columns: int) -> str:
    """out[x, y, lane] = the first accumulator of a warp's m16n8k16 product of a[x, y] with itself."""
    source, target = f"{rows}x{columns}x64xf16", f"{rows}x{columns}x32xf32"
    body = f"""        %c2 = arith.constant 2 : index
        %pair = arith.muli %t, %c2 : index
        %v = vector.load %a[%x, %y, %pair] : memref<{source}>, vector<2xf16>
        %z = arith.constant 0.0 : f32
        %d:4 = loop.mma_sync m16n8k16 (%v, %v, %v, %v) * (%v, %v) + (%z, %z, %z, %z) : vector<2xf16> -> f32
        memref.store %d#0, %out[%x, %y, %t] : memref<{target}>"""
    return grid_kernel(rows, columns, source, target, 32, body)


def grouped_order(rows: int, columns: int, group: int) -> list[tuple[int, int]]:
    """Triton's grouped order: the (row, column) tile of each launch index."""
    order = []
    for launch in range(rows * columns):
        first = launch // (group * columns) * group
        size = min(rows - first, group)
        within = launch % (group * columns)
        order.append((first + within % size, within // size))
    return order


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=st.integers(2, 11),
    columns=st.integers(2, 6),
    group=st.integers(1, 10),
    seed=st.integers(0, 2**16),
    product=st.booleans(),
    l2=st.sampled_from(["every grid", "below the input", "the input's size"]),
)
def test_grouped_tiles_compute_the_same_tiles(rows: int, columns: int, group: int, seed: int, product: bool, l2: str):
    group = min(group, rows - 1)
    text = product_kernel_text(rows, columns) if product else kernel_text(rows, columns)
    generator = np.random.default_rng(seed)
    if product:
        a = generator.standard_normal((rows, columns, 64)).astype(np.float16)
        out = np.full((rows, columns, 32), np.nan, np.float32)
    else:
        a = generator.standard_normal((rows, columns, 4)).astype(np.float32)
        out = np.full_like(a, np.nan)
    l2_bytes = {"every grid": 0, "below the input": a.nbytes - 1, "the input's size": a.nbytes}[l2]
    pipeline = f"loop-group-tiles{{group={group} l2-bytes={l2_bytes}}}"

    def run(module) -> np.ndarray:  # noqa: ANN001
        return run_kernel(module, "tiles", [a, out.copy()])[1]

    expected = run(lower(text, ""))
    assert not np.isnan(expected).any()
    grouped = lower(text, pipeline)
    chosen = l2_bytes == 0 or (product and a.nbytes > l2_bytes)
    assert [TILE_GROUP.read(op).value.data for op in grouped.walk() if TILE_GROUP.read(op) is not None] == ([group] if chosen else [])  # type: ignore[union-attr]
    np.testing.assert_array_equal(run(grouped), expected)
    np.testing.assert_array_equal(run(lower(text, f"{pipeline},convert-loop-to-gpu")), expected)
    assert sorted(grouped_order(rows, columns, group)) == [(r, c) for r in range(rows) for c in range(columns)]


def test_a_group_walks_its_rows_down_every_column():
    """5 row blocks in groups of 2 by 3 columns: (0,0) (1,0) (0,1) (1,1) (0,2) (1,2), then rows 2-3,
    then the short last group of row 4 alone."""
    assert grouped_order(5, 3, 2)[:8] == [(0, 0), (1, 0), (0, 1), (1, 1), (0, 2), (1, 2), (2, 0), (3, 0)]
    assert grouped_order(5, 3, 2)[-3:] == [(4, 0), (4, 1), (4, 2)]


def test_the_pipeline_groups_beyond_l2_unless_told_to_group_every_grid():
    """`l2-group-tiles=G` runs the pass deciding per kernel (l2-bytes = the L2 cache), right before
    convert-loop-to-gpu; `group-tiles=G` overrides it (every 2-D grid); a negative G is refused."""
    from mlc.transforms.loop.convert_loop_to_gpu import ConvertLoopToGpu
    from mlc.transforms.loop.loop_group_tiles import L2_BYTES, LoopGroupTiles
    from mlc.transforms.pipelines import LowerToGpu

    def grouping(pipeline: LowerToGpu) -> list[LoopGroupTiles]:
        passes = pipeline.passes()
        found = [(index, p) for index, p in enumerate(passes) if isinstance(p, LoopGroupTiles)]
        assert all(isinstance(passes[index + 1], ConvertLoopToGpu) for index, _ in found)
        return [p for _, p in found]

    assert grouping(LowerToGpu(arch="sm_90", l2_group_tiles=8)) == [LoopGroupTiles(group=8, l2_bytes=L2_BYTES)]
    assert grouping(LowerToGpu(arch="sm_90", l2_group_tiles=8, group_tiles=4)) == [LoopGroupTiles(group=4)]
    assert grouping(LowerToGpu(arch="sm_90")) == []
    with pytest.raises(ValueError, match="l2-group-tiles must be 0"):
        LowerToGpu(l2_group_tiles=-1)
