"""Warp-collective ops: `loop.ldmatrix` gives `loop.mma_sync` the fragments of row-major tiles.

Each kernel is one warp that loads A (16 x 16) with ldmatrix x4 and B (16 x 8n, K x N row-major)
with ldmatrix x4 or x2 `trans` at the lane addresses the tensor-core lowering uses (row
l % 8 + 8 ((l / 8) % 2), column 8 (l / 16)), multiplies with mma.sync and stores each lane's
accumulators where the accumulator layout puts them: the result must be A @ B. The operands are
small integers, so every sum is exact and the comparison is equality. The same kernel at the GPU
level (an `mlc_gpu.func`) and the NVVM intrinsic are checked by the tensor-core equivalence test.
"""

import numpy as np
import pytest

from mlc.interpreter import run_kernel

LANE_ADDRESSES = """
    %c2 = arith.constant 2 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %c16 = arith.constant 16 : index
    %low = arith.remui %lane, %c8 : index
    %eighth = arith.divui %lane, %c8 : index
    %odd = arith.remui %eighth, %c2 : index
    %high = arith.muli %odd, %c8 : index
    %row = arith.addi %low, %high : index
    %half = arith.divui %lane, %c16 : index
    %column = arith.muli %half, %c8 : index
    %g = arith.divui %lane, %c4 : index
    %t4 = arith.remui %lane, %c4 : index
    %t = arith.muli %t4, %c2 : index
    %g8 = arith.addi %g, %c8 : index
    %t1 = arith.addi %t, %c1 : index
    %zero = arith.constant 0.0 : f32
"""


def _store_tile(result: str, column_offset: str) -> str:
    """Stores the four accumulators of `result` at rows g, g + 8 and columns t, t + 1 (+ offset)."""
    return f"""
    %{result}_c0 = arith.addi %t, %{column_offset} : index
    %{result}_c1 = arith.addi %t1, %{column_offset} : index
    memref.store %{result}#0, %out[%g, %{result}_c0] : memref<16x16xf32>
    memref.store %{result}#1, %out[%g, %{result}_c1] : memref<16x16xf32>
    memref.store %{result}#2, %out[%g8, %{result}_c0] : memref<16x16xf32>
    memref.store %{result}#3, %out[%g8, %{result}_c1] : memref<16x16xf32>
"""


def _kernel(a_shape: str, b_shape: str, b_load: str, tiles: int) -> str:
    """One warp: A by ldmatrix x4, B by `b_load`, `tiles` mma steps (columns 0 and 8), the stores."""
    steps = "".join(
        f"    %d{n}:4 = loop.mma_sync m16n8k16 (%ra#0, %ra#1, %ra#2, %ra#3) * (%rb#{2 * n}, %rb#{2 * n + 1}) "
        "+ (%zero, %zero, %zero, %zero) : vector<2xf16> -> f32\n" + _store_tile(f"d{n}", ("c0", "c8")[n])
        for n in range(tiles)
    )
    return f"""
loop.kernel @k(%a: memref<{a_shape}xf16>, %b: memref<{b_shape}xf16>, %out: memref<16x16xf32>) {{
  loop.parallel %lane < 32 mapping thread.x {{
    %c1 = arith.constant 1 : index
    {LANE_ADDRESSES}
    %c0 = arith.constant 0 : index
    %ra:4 = loop.ldmatrix x4 %a[%row, %column] : memref<{a_shape}xf16> -> vector<2xf16>
    {b_load}
{steps}
  }}
  loop.return
}}
"""


TWO_TILES = _kernel("16x16", "16x16", "%rb:4 = loop.ldmatrix x4 trans %b[%row, %column] : memref<16x16xf16> -> vector<2xf16>", 2)
ONE_TILE_RAGGED = _kernel("16x12", "12x8", "%rb:2 = loop.ldmatrix x2 trans %b[%row, %c0] : memref<12x8xf16> -> vector<2xf16>", 1)


def _integers(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return rng.integers(-4, 5, size=shape).astype(np.float16)


def test_ldmatrix_x4_and_x4_trans_feed_mma(parse, rng):
    a, b = _integers(rng, (16, 16)), _integers(rng, (16, 16))
    _, _, out = run_kernel(parse(TWO_TILES), "k", [a, b, np.zeros((16, 16), np.float32)])
    np.testing.assert_array_equal(out, a.astype(np.float32) @ b.astype(np.float32))


def test_ldmatrix_reads_zero_outside_the_buffer(parse, rng):
    """K = 12: the rows of A and B past the buffer's end (columns 12..15 of A, rows 12..15 of B)
    read as zeros, as a zero-padded tile load's; x2 trans loads one instruction column of B."""
    a, b = _integers(rng, (16, 12)), _integers(rng, (12, 8))
    _, _, out = run_kernel(parse(ONE_TILE_RAGGED), "k", [a, b, np.zeros((16, 16), np.float32)])
    np.testing.assert_array_equal(out[:, :8], a.astype(np.float32) @ b.astype(np.float32))


def test_ldmatrix_needs_whole_warps(parse):
    text = TWO_TILES.replace("%lane < 32", "%lane < 48")
    with pytest.raises(Exception, match="needs whole warps"):
        run_kernel(parse(text), "k", [np.zeros((16, 16), np.float16)] * 2 + [np.zeros((16, 16), np.float32)])
