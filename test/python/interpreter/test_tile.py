"""The tile interpreter: programs over a grid, masked block loads and stores, tile.map."""

import numpy as np
import pytest

from mlc.dialects.graph.error_bounds import gamma
from mlc.interpreter import DataRace, run, run_kernel

ADD_EXP = """
tile.kernel @add_exp(%x: memref<1000xf32>, %y: memref<1000xf32>, %out: memref<1000xf32>) grid [4] {
  %pid = tile.program_id 0
  %c256 = arith.constant 256 : index
  %offset = arith.muli %pid, %c256 : index
  %a = tile.load %x[%offset] : memref<1000xf32> -> !tile.tile<256xf32>
  %b = tile.load %y[%offset] : memref<1000xf32> -> !tile.tile<256xf32>
  %s = tile.map %a, %b : !tile.tile<256xf32>, !tile.tile<256xf32> -> !tile.tile<256xf32> {
  ^bb0(%u: f32, %v: f32):
    %w = arith.addf %u, %v : f32
    %e = math.exp %w : f32
    tile.yield %e : f32
  }
  tile.store %s, %out[%offset] : !tile.tile<256xf32>, memref<1000xf32>
  tile.return
}
func.func @main(%x: memref<1000xf32>, %y: memref<1000xf32>) -> memref<1000xf32> {
  %out = memref.alloc() : memref<1000xf32>
  tile.launch @add_exp(%x, %y, %out) : memref<1000xf32>, memref<1000xf32>, memref<1000xf32>
  func.return %out : memref<1000xf32>
}
"""


def test_elementwise_with_masked_tail(parse, rng):
    x = rng.standard_normal(1000, dtype=np.float32)
    y = rng.standard_normal(1000, dtype=np.float32)
    (out,) = run(parse(ADD_EXP), "main", [x, y])
    assert out.dtype == np.float32
    expected = np.exp((x + y).astype(np.float64)).astype(np.float32)
    np.testing.assert_array_equal(out, expected)


def test_load_pads_out_of_bounds_elements(parse, rng):
    module = parse("""
    tile.kernel @shift(%x: memref<10x7xf32>, %out: memref<10x7xf32>) grid [2, 1] {
      %pid = tile.program_id 0
      %c5 = arith.constant 5 : index
      %c2 = arith.constant 2 : index
      %cm1 = arith.constant -1 : index
      %row = arith.muli %pid, %c5 : index
      %shifted = arith.addi %row, %c2 : index
      %a = tile.load %x[%shifted, %cm1] padding -7.0 : f32 : memref<10x7xf32> -> !tile.tile<5x8xf32>
      %left = arith.constant 0 : index
      %t = tile.map %a : !tile.tile<5x8xf32> -> !tile.tile<5x8xf32> {
      ^bb0(%u: f32):
        tile.yield %u : f32
      }
      tile.store %t, %out[%row, %left] : !tile.tile<5x8xf32>, memref<10x7xf32>
      tile.return
    }
    """)
    x = rng.standard_normal((10, 7), dtype=np.float32)
    padded = np.full((17, 9), -7.0, dtype=np.float32)
    padded[:10, 1:8] = x
    expected = padded[2:12, :7]
    (_, out) = run_kernel(module, "shift", [x, np.zeros((10, 7), np.float32)])
    np.testing.assert_array_equal(out, expected)


def test_map_with_divergent_branch_and_broadcast(parse, rng):
    module = parse("""
    tile.kernel @relu_scale(%x: memref<4x16xf32>, %s: memref<16xf32>, %out: memref<4x16xf32>) grid [1] {
      %c0 = arith.constant 0 : index
      %a = tile.load %x[%c0, %c0] : memref<4x16xf32> -> !tile.tile<4x16xf32>
      %row = tile.load %s[%c0] : memref<16xf32> -> !tile.tile<16xf32>
      %b = tile.broadcast %row : !tile.tile<16xf32> -> !tile.tile<4x16xf32>
      %half = arith.constant 0.5 : f32
      %h = tile.splat %half : f32 -> !tile.tile<4x16xf32>
      %r = tile.map %a, %b, %h : !tile.tile<4x16xf32>, !tile.tile<4x16xf32>, !tile.tile<4x16xf32> -> !tile.tile<4x16xf32> {
      ^bb0(%u: f32, %v: f32, %w: f32):
        %zero = arith.constant 0.0 : f32
        %positive = arith.cmpf ogt, %u, %zero : f32
        %y = scf.if %positive -> (f32) {
          %p = arith.mulf %u, %v : f32
          scf.yield %p : f32
        } else {
          %q = arith.mulf %u, %w : f32
          scf.yield %q : f32
        }
        tile.yield %y : f32
      }
      tile.store %r, %out[%c0, %c0] : !tile.tile<4x16xf32>, memref<4x16xf32>
      tile.return
    }
    """)
    x = rng.standard_normal((4, 16), dtype=np.float32)
    s = rng.standard_normal(16, dtype=np.float32)
    (_, _, out) = run_kernel(module, "relu_scale", [x, s, np.zeros((4, 16), np.float32)])
    expected = np.where(x > 0, x * s, x * np.float32(0.5))
    np.testing.assert_array_equal(out, expected)


def test_f16_tiles_compute_in_f16(parse, rng):
    module = parse("""
    tile.kernel @fma16(%x: memref<64xf16>, %y: memref<64xf16>, %out: memref<64xf16>) grid [2] {
      %pid = tile.program_id 0
      %c32 = arith.constant 32 : index
      %offset = arith.muli %pid, %c32 : index
      %a = tile.load %x[%offset] : memref<64xf16> -> !tile.tile<32xf16>
      %b = tile.load %y[%offset] : memref<64xf16> -> !tile.tile<32xf16>
      %r = tile.map %a, %b : !tile.tile<32xf16>, !tile.tile<32xf16> -> !tile.tile<32xf16> {
      ^bb0(%u: f16, %v: f16):
        %p = arith.mulf %u, %v : f16
        %q = arith.addf %p, %u : f16
        tile.yield %q : f16
      }
      tile.store %r, %out[%offset] : !tile.tile<32xf16>, memref<64xf16>
      tile.return
    }
    """)
    x = rng.standard_normal(64).astype(np.float16)
    y = rng.standard_normal(64).astype(np.float16)
    (_, _, out) = run_kernel(module, "fma16", [x, y, np.zeros(64, np.float16)])
    assert out.dtype == np.float16
    np.testing.assert_array_equal(out, x * y + x)


def test_two_programs_writing_one_block_is_a_race(parse):
    module = parse("""
    tile.kernel @overlap(%x: memref<16xf32>, %out: memref<16xf32>) grid [2] {
      %pid = tile.program_id 0
      %c4 = arith.constant 4 : index
      %offset = arith.muli %pid, %c4 : index
      %a = tile.load %x[%offset] : memref<16xf32> -> !tile.tile<8xf32>
      tile.store %a, %out[%offset] : !tile.tile<8xf32>, memref<16xf32>
      tile.return
    }
    """)
    with pytest.raises(DataRace) as caught:
        run_kernel(module, "overlap", [np.zeros(16, np.float32), np.zeros(16, np.float32)])
    assert caught.value.kind == "WAW"
    assert caught.value.index == (4,)
    assert "program (0,)" in str(caught.value) and "program (1,)" in str(caught.value)


MATMUL_K_LOOP = """
tile.kernel @mm(%x: memref<17x65xf16>, %y: memref<65x33xf16>, %out: memref<17x33xf32>) grid [2, 1] {
  %pm = tile.program_id 0
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c65 = arith.constant 65 : index
  %m = arith.muli %pm, %c16 : index
  %zero = arith.constant 0.0 : f32
  %init = tile.splat %zero : f32 -> !tile.tile<16x64xf32>
  %acc = scf.for %k = %c0 to %c65 step %c16 iter_args(%partial = %init) -> (!tile.tile<16x64xf32>) {
    %a = tile.load %x[%m, %k] : memref<17x65xf16> -> !tile.tile<16x16xf16>
    %b = tile.load %y[%k, %c0] : memref<65x33xf16> -> !tile.tile<16x64xf16>
    %next = tile.dot %a, %b, %partial : !tile.tile<16x16xf16>, !tile.tile<16x64xf16> -> !tile.tile<16x64xf32>
    scf.yield %next : !tile.tile<16x64xf32>
  }
  tile.store %acc, %out[%m, %c0] : !tile.tile<16x64xf32>, memref<17x33xf32>
  tile.return
}
"""


def test_dot_in_a_k_loop_sums_products_in_k_order(parse, rng):
    """Masked loads pad with zeros, so ragged M, N and K need no more; one rounding per K step."""
    x = rng.standard_normal((17, 65)).astype(np.float16)
    y = rng.standard_normal((65, 33)).astype(np.float16)
    (_, _, out) = run_kernel(parse(MATMUL_K_LOOP), "mm", [x, y, np.zeros((17, 33), np.float32)])
    expected = np.zeros((17, 33), np.float64)
    for k in range(65):
        # f16 products are exact in f32 (and f64), so each fused multiply-add rounds once.
        expected = (expected + x[:, k : k + 1].astype(np.float64) * y[k : k + 1, :]).astype(np.float32).astype(np.float64)
    np.testing.assert_array_equal(out, expected.astype(np.float32))


def test_batched_dot_with_a_broadcast_operand(parse, rng):
    module = parse("""
    tile.kernel @bmm(%x: memref<3x4x8xf32>, %y: memref<8x2xf32>, %acc: memref<3x4x2xf32>, %out: memref<3x4x2xf32>) grid [3] {
      %batch = tile.program_id 0
      %c0 = arith.constant 0 : index
      %a = tile.load %x[%batch, %c0, %c0] : memref<3x4x8xf32> -> !tile.tile<1x4x8xf32>
      %b2 = tile.load %y[%c0, %c0] : memref<8x2xf32> -> !tile.tile<8x2xf32>
      %b = tile.broadcast %b2 : !tile.tile<8x2xf32> -> !tile.tile<1x8x2xf32>
      %c = tile.load %acc[%batch, %c0, %c0] : memref<3x4x2xf32> -> !tile.tile<1x4x2xf32>
      %d = tile.dot %a, %b, %c : !tile.tile<1x4x8xf32>, !tile.tile<1x8x2xf32> -> !tile.tile<1x4x2xf32>
      tile.store %d, %out[%batch, %c0, %c0] : !tile.tile<1x4x2xf32>, memref<3x4x2xf32>
      tile.return
    }
    """)
    x = rng.standard_normal((3, 4, 8)).astype(np.float32)
    y = rng.standard_normal((8, 2)).astype(np.float32)
    acc = rng.standard_normal((3, 4, 2)).astype(np.float32)
    (*_, out) = run_kernel(module, "bmm", [x, y, acc, np.zeros((3, 4, 2), np.float32)])
    # Eight fused multiply-adds onto the accumulator, each rounded once to f32: a sum of 9 terms
    # with 8 roundings, within gamma(8) * (|acc| + |x| @ |y|) of the exact value (Higham, 3.1).
    exact = acc + x.astype(np.float64) @ y
    bound = gamma(8) * (np.abs(acc) + np.abs(x.astype(np.float64)) @ np.abs(y))
    assert np.all(np.abs(out - exact) <= bound)
    assert np.all(np.abs((out + 3 * bound).astype(np.float32) - exact) > bound)  # the bound decides
