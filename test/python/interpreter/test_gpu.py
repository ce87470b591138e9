"""The mlc_gpu interpreter: grids of threads as lanes, divergence, barriers and race detection."""

import numpy as np
import pytest

from mlc.interpreter import BarrierDivergence, DataRace, run, run_kernel

ELEMENTWISE = """
mlc_gpu.func @axpy(%x: memref<1000xf32>, %y: memref<1000xf32>, %out: memref<1000xf32>) grid [8, 1, 1] block [128, 1, 1] {
  %b = mlc_gpu.block_id x
  %t = mlc_gpu.thread_id x
  %n = mlc_gpu.block_dim x
  %base = arith.muli %b, %n : index
  %i = arith.addi %base, %t : index
  %size = arith.constant 1000 : index
  %inside = arith.cmpi ult, %i, %size : index
  scf.if %inside {
    %a = memref.load %x[%i] : memref<1000xf32>
    %c = memref.load %y[%i] : memref<1000xf32>
    %alpha = arith.constant 3.0 : f32
    %p = arith.mulf %alpha, %a : f32
    %s = arith.addf %p, %c : f32
    memref.store %s, %out[%i] : memref<1000xf32>
  }
  mlc_gpu.return
}
func.func @main(%x: memref<1000xf32>, %y: memref<1000xf32>) -> memref<1000xf32> {
  %out = memref.alloc() : memref<1000xf32>
  mlc_gpu.launch @axpy(%x, %y, %out) grid [8, 1, 1] block [128, 1, 1] : memref<1000xf32>, memref<1000xf32>, memref<1000xf32>
  func.return %out : memref<1000xf32>
}
"""


def test_elementwise_with_masked_tail(parse, rng):
    x = rng.standard_normal(1000, dtype=np.float32)
    y = rng.standard_normal(1000, dtype=np.float32)
    (out,) = run(parse(ELEMENTWISE), "main", [x, y])
    np.testing.assert_array_equal(out, np.float32(3) * x + y)


def test_divergent_if_yields_per_thread_values(parse, rng):
    module = parse("""
    mlc_gpu.func @parity(%x: memref<2x64xi32>, %out: memref<2x64xi32>) grid [1, 2, 1] block [64, 1, 1] {
      %row = mlc_gpu.block_id y
      %t = mlc_gpu.thread_id x
      %v = memref.load %x[%row, %t] : memref<2x64xi32>
      %c1 = arith.constant 1 : i32
      %low = arith.andi %v, %c1 : i32
      %odd = arith.cmpi ne, %low, %c1 : i32
      %r = scf.if %odd -> (i32) {
        %c2 = arith.constant 2 : i32
        %h = arith.divsi %v, %c2 : i32
        scf.yield %h : i32
      } else {
        %c3 = arith.constant 3 : i32
        %m = arith.muli %v, %c3 : i32
        %n = arith.addi %m, %c1 : i32
        scf.yield %n : i32
      }
      memref.store %r, %out[%row, %t] : memref<2x64xi32>
      mlc_gpu.return
    }
    """)
    x = rng.integers(-1000, 1000, size=(2, 64), dtype=np.int32)
    (_, out) = run_kernel(module, "parity", [x, np.zeros((2, 64), np.int32)])
    expected = np.where(x % 2 == 0, np.trunc(x / 2).astype(np.int32), 3 * x + 1)
    np.testing.assert_array_equal(out, expected)


REVERSE = """
mlc_gpu.func @reverse(%x: memref<1024xf32>, %out: memref<1024xf32>) grid [4, 1, 1] block [256, 1, 1] {
  %b = mlc_gpu.block_id x
  %t = mlc_gpu.thread_id x
  %n = mlc_gpu.block_dim x
  %s = memref.alloc() : memref<256xf32, 3>
  %base = arith.muli %b, %n : index
  %i = arith.addi %base, %t : index
  %v = memref.load %x[%i] : memref<1024xf32>
  memref.store %v, %s[%t] : memref<256xf32, 3>
  mlc_gpu.barrier
  %c255 = arith.constant 255 : index
  %r = arith.subi %c255, %t : index
  %w = memref.load %s[%r] : memref<256xf32, 3>
  memref.store %w, %out[%i] : memref<1024xf32>
  mlc_gpu.return
}
"""


def test_shared_memory_reverse_with_barrier(parse, rng):
    x = rng.standard_normal(1024, dtype=np.float32)
    (_, out) = run_kernel(parse(REVERSE), "reverse", [x, np.zeros(1024, np.float32)])
    np.testing.assert_array_equal(out, x.reshape(4, 256)[:, ::-1].reshape(-1))


def test_shared_memory_reverse_without_barrier_is_a_raw_race(parse, rng):
    module = parse(REVERSE.replace("  mlc_gpu.barrier\n", ""))
    with pytest.raises(DataRace) as caught:
        run_kernel(module, "reverse", [np.zeros(1024, np.float32), np.zeros(1024, np.float32)])
    error = caught.value
    assert error.kind == "RAW"
    assert "shared buffer 's'" in error.buffer
    assert error.index == (255,)
    assert error.threads == ("thread (255, 0, 0)", "thread (0, 0, 0)")
    assert "RAW" in str(error) and "memref.load" in str(error)


def test_in_place_reverse_needs_a_barrier_between_read_and_write(parse):
    module = parse("""
    mlc_gpu.func @flip(%data: memref<32xf32>) grid [1, 1, 1] block [32, 1, 1] {
      %t = mlc_gpu.thread_id x
      %s = memref.alloc() : memref<32xf32, 3>
      %v = memref.load %data[%t] : memref<32xf32>
      memref.store %v, %s[%t] : memref<32xf32, 3>
      mlc_gpu.barrier
      %c31 = arith.constant 31 : index
      %r = arith.subi %c31, %t : index
      %w = memref.load %s[%r] : memref<32xf32, 3>
      memref.store %w, %s[%t] : memref<32xf32, 3>
      mlc_gpu.return
    }
    """)
    with pytest.raises(DataRace) as caught:
        run_kernel(module, "flip", [np.zeros(32, np.float32)])
    assert caught.value.kind == "WAR"
    assert caught.value.threads == ("thread (31, 0, 0)", "thread (0, 0, 0)")


def test_barrier_in_divergent_code_is_an_error(parse):
    module = parse("""
    mlc_gpu.func @bad(%data: memref<64xf32>) grid [2, 1, 1] block [32, 1, 1] {
      %t = mlc_gpu.thread_id x
      %c16 = arith.constant 16 : index
      %low = arith.cmpi ult, %t, %c16 : index
      scf.if %low {
        mlc_gpu.barrier
      }
      mlc_gpu.return
    }
    """)
    with pytest.raises(BarrierDivergence, match="16 of 32 threads of block \\(0, 0, 0\\)"):
        run_kernel(module, "bad", [np.zeros(64, np.float32)])


def test_loop_in_a_thread_with_a_trip_count_per_lane(parse, rng):
    # Each thread counts the steps of the Collatz sequence from its value (a while loop).
    module = parse("""
    mlc_gpu.func @collatz(%x: memref<4x32xi32>, %out: memref<4x32xi32>) grid [1, 1, 1] block [32, 4, 1] {
      %tx = mlc_gpu.thread_id x
      %ty = mlc_gpu.thread_id y
      %start = memref.load %x[%ty, %tx] : memref<4x32xi32>
      %c0 = arith.constant 0 : i32
      %result:2 = scf.while (%v = %start, %steps = %c0) : (i32, i32) -> (i32, i32) {
        %one = arith.constant 1 : i32
        %going = arith.cmpi sgt, %v, %one : i32
        scf.condition(%going) %v, %steps : i32, i32
      } do {
      ^bb0(%v: i32, %steps: i32):
        %one = arith.constant 1 : i32
        %two = arith.constant 2 : i32
        %three = arith.constant 3 : i32
        %bit = arith.andi %v, %one : i32
        %even = arith.cmpi eq, %bit, %c0 : i32
        %half = arith.shrsi %v, %one : i32
        %triple = arith.muli %v, %three : i32
        %up = arith.addi %triple, %one : i32
        %next = arith.select %even, %half, %up : i32
        %more = arith.addi %steps, %one : i32
        scf.yield %next, %more : i32, i32
      }
      memref.store %result#1, %out[%ty, %tx] : memref<4x32xi32>
      mlc_gpu.return
    }
    """)
    x = rng.integers(1, 200, size=(4, 32), dtype=np.int32)

    def steps(value: int) -> int:
        count = 0
        while value > 1:
            value = value // 2 if value % 2 == 0 else 3 * value + 1
            count += 1
        return count

    (_, out) = run_kernel(module, "collatz", [x, np.zeros((4, 32), np.int32)])
    np.testing.assert_array_equal(out, np.vectorize(steps)(x))


def test_two_blocks_writing_one_global_element_race(parse):
    module = parse("""
    mlc_gpu.func @last(%out: memref<1xf32>) grid [2, 1, 1] block [4, 1, 1] {
      %t = mlc_gpu.thread_id x
      %c0 = arith.constant 0 : index
      %is_first = arith.cmpi eq, %t, %c0 : index
      scf.if %is_first {
        %one = arith.constant 1.0 : f32
        memref.store %one, %out[%c0] : memref<1xf32>
      }
      mlc_gpu.return
    }
    """)
    with pytest.raises(DataRace) as caught:
        run_kernel(module, "last", [np.zeros(1, np.float32)])
    assert caught.value.kind == "WAW"
    assert caught.value.threads == (
        "thread (0, 0, 0) of block (0, 0, 0)",
        "thread (0, 0, 0) of block (1, 0, 0)",
    )


def test_global_writes_ordered_by_a_barrier_are_not_a_race(parse):
    module = parse("""
    mlc_gpu.func @handoff(%out: memref<1xf32>) grid [1, 1, 1] block [4, 1, 1] {
      %t = mlc_gpu.thread_id x
      %c0 = arith.constant 0 : index
      %c3 = arith.constant 3 : index
      %first = arith.cmpi eq, %t, %c0 : index
      scf.if %first {
        %one = arith.constant 1.0 : f32
        memref.store %one, %out[%c0] : memref<1xf32>
      }
      mlc_gpu.barrier
      %last = arith.cmpi eq, %t, %c3 : index
      scf.if %last {
        %two = arith.constant 2.0 : f32
        memref.store %two, %out[%c0] : memref<1xf32>
      }
      mlc_gpu.return
    }
    """)
    (out,) = run_kernel(module, "handoff", [np.zeros(1, np.float32)])
    assert out[0] == 2.0


def test_shared_global_and_out_of_bounds_index(parse):
    module = parse("""
    "memref.global"() <{sym_name = "tile", sym_visibility = "private", type = memref<8xf32, 3>, initial_value}> : () -> ()
    mlc_gpu.func @oob(%out: memref<8xf32>) grid [1, 1, 1] block [8, 1, 1] {
      %t = mlc_gpu.thread_id x
      %s = memref.get_global @tile : memref<8xf32, 3>
      %c1 = arith.constant 1 : index
      %i = arith.addi %t, %c1 : index
      %v = memref.load %out[%t] : memref<8xf32>
      memref.store %v, %s[%i] : memref<8xf32, 3>
      mlc_gpu.return
    }
    """)
    from mlc.interpreter import OutOfBounds

    with pytest.raises(OutOfBounds, match="index 8 is out of bounds for dimension 0 of size 8"):
        run_kernel(module, "oob", [np.zeros(8, np.float32)])
