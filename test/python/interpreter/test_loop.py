"""The loop interpreter: parallel loops as lanes, masked tails, per-lane trip counts, races."""

import numpy as np
import pytest

from mlc.interpreter import DataRace, run, run_kernel

MASKED_ADD = """
loop.kernel @add(%x: memref<1000xf32>, %y: memref<1000xf32>, %out: memref<1000xf32>) {
  loop.parallel %block < 4 mapping block.x {
    loop.parallel %thread < 256 mapping thread.x {
      %c256 = arith.constant 256 : index
      %n = arith.constant 1000 : index
      %base = arith.muli %block, %c256 : index
      %i = arith.addi %base, %thread : index
      %inside = arith.cmpi slt, %i, %n : index
      scf.if %inside {
        %a = memref.load %x[%i] : memref<1000xf32>
        %b = memref.load %y[%i] : memref<1000xf32>
        %s = arith.addf %a, %b : f32
        %m = arith.maximumf %s, %a : f32
        memref.store %m, %out[%i] : memref<1000xf32>
      }
    }
  }
  loop.return
}
func.func @main(%x: memref<1000xf32>, %y: memref<1000xf32>) -> memref<1000xf32> {
  %out = memref.alloc() : memref<1000xf32>
  loop.launch @add(%x, %y, %out) : memref<1000xf32>, memref<1000xf32>, memref<1000xf32>
  func.return %out : memref<1000xf32>
}
"""


def test_elementwise_with_masked_tail(parse, rng):
    x = rng.standard_normal(1000, dtype=np.float32)
    y = rng.standard_normal(1000, dtype=np.float32)
    (out,) = run(parse(MASKED_ADD), "main", [x, y])
    np.testing.assert_array_equal(out, np.maximum(x + y, x))


def test_unwritten_output_is_poisoned(parse, rng):
    module = parse(MASKED_ADD.replace("%n = arith.constant 1000", "%n = arith.constant 990"))
    x = rng.standard_normal(1000, dtype=np.float32)
    (out,) = run(module, "main", [x, x])
    assert np.isnan(out[990:]).all() and not np.isnan(out[:990]).any()


def test_loop_with_a_different_trip_count_per_lane(parse, rng):
    # out[t] = sum of x[0..t] (inclusive): thread t runs t+1 iterations.
    module = parse("""
    loop.kernel @prefix(%x: memref<64xf32>, %out: memref<64xf32>) {
      loop.parallel %t < 64 mapping thread.x {
        %c0 = arith.constant 0 : index
        %c1 = arith.constant 1 : index
        %end = arith.addi %t, %c1 : index
        %zero = arith.constant 0.0 : f32
        %sum = scf.for %k = %c0 to %end step %c1 iter_args(%acc = %zero) -> (f32) {
          %v = memref.load %x[%k] : memref<64xf32>
          %next = arith.addf %acc, %v : f32
          scf.yield %next : f32
        }
        memref.store %sum, %out[%t] : memref<64xf32>
      }
      loop.return
    }
    """)
    x = rng.standard_normal(64, dtype=np.float32)
    (_, out) = run_kernel(module, "prefix", [x, np.zeros(64, np.float32)])
    expected = np.array([np.float32(0) + np.add.accumulate(x)[t] for t in range(64)], dtype=np.float32)
    np.testing.assert_array_equal(out, expected)


def test_shared_buffers_are_per_block_and_sibling_loops_are_ordered(parse, rng):
    # A block-local reverse through a buffer allocated inside the block loop: no barrier needed.
    module = parse("""
    loop.kernel @reverse(%x: memref<512xf32>, %out: memref<512xf32>) {
      loop.parallel %b < 4 mapping block.x {
        %tile = memref.alloc() : memref<128xf32, 3>
        %c128 = arith.constant 128 : index
        %base = arith.muli %b, %c128 : index
        loop.parallel %t < 128 mapping thread.x {
          %i = arith.addi %base, %t : index
          %v = memref.load %x[%i] : memref<512xf32>
          memref.store %v, %tile[%t] : memref<128xf32, 3>
        }
        loop.parallel %t < 128 mapping thread.x {
          %c127 = arith.constant 127 : index
          %r = arith.subi %c127, %t : index
          %v = memref.load %tile[%r] : memref<128xf32, 3>
          %i = arith.addi %base, %t : index
          memref.store %v, %out[%i] : memref<512xf32>
        }
      }
      loop.return
    }
    """)
    x = rng.standard_normal(512, dtype=np.float32)
    (_, out) = run_kernel(module, "reverse", [x, np.zeros(512, np.float32)])
    np.testing.assert_array_equal(out, x.reshape(4, 128)[:, ::-1].reshape(-1))


def test_iterations_writing_one_element_race(parse):
    module = parse("""
    loop.kernel @collide(%out: memref<8xi32>) {
      loop.parallel %b < 2 mapping block.x {
        loop.parallel %t < 8 mapping thread.x {
          %c2 = arith.constant 2 : index
          %half = arith.divui %t, %c2 : index
          %v = arith.index_cast %t : index to i32
          memref.store %v, %out[%half] : memref<8xi32>
        }
      }
      loop.return
    }
    """)
    with pytest.raises(DataRace) as caught:
        run_kernel(module, "collide", [np.zeros(8, np.int32)])
    error = caught.value
    assert error.kind == "WAW" and error.index == (0,)
    assert "thread.x 0" in str(error) and "thread.x 1" in str(error)


def test_blocks_writing_one_element_race(parse):
    module = parse("""
    loop.kernel @blocks(%out: memref<4xf32>) {
      loop.parallel %b < 3 mapping block.x {
        %c0 = arith.constant 0 : index
        %one = arith.constant 1.0 : f32
        memref.store %one, %out[%c0] : memref<4xf32>
      }
      loop.return
    }
    """)
    with pytest.raises(DataRace, match="block.x 0.*block.x 1"):
        run_kernel(module, "blocks", [np.zeros(4, np.float32)])


def test_unmapped_and_nested_loops_with_vectors(parse, rng):
    module = parse("""
    loop.kernel @scale(%x: memref<8x16xf32>, %out: memref<8x16xf32>) {
      loop.parallel %i < 8 {
        loop.parallel %j < 4 {
          %c4 = arith.constant 4 : index
          %col = arith.muli %j, %c4 : index
          %v = vector.load %x[%i, %col] : memref<8x16xf32>, vector<4xf32>
          %two = arith.constant 2.0 : f32
          %s = vector.broadcast %two : f32 to vector<4xf32>
          %w = arith.mulf %v, %s : vector<4xf32>
          %sum = vector.reduction <add>, %w : vector<4xf32> into f32
          %first = vector.insert %sum, %w [0] : f32 into vector<4xf32>
          vector.store %first, %out[%i, %col] : memref<8x16xf32>, vector<4xf32>
        }
      }
      loop.return
    }
    """)
    x = rng.standard_normal((8, 16), dtype=np.float32)
    (_, out) = run_kernel(module, "scale", [x, np.zeros((8, 16), np.float32)])
    doubled = (x * np.float32(2)).reshape(8, 4, 4)
    sums = ((doubled[..., 0] + doubled[..., 1]) + doubled[..., 2]) + doubled[..., 3]
    expected = doubled.copy()
    expected[..., 0] = sums
    np.testing.assert_array_equal(out, expected.reshape(8, 16))
