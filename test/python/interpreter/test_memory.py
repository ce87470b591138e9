"""Memref views, copies, atomics, vector transfers, switches and LLVM aggregates under lanes."""

import numpy as np

from mlc.interpreter import run_kernel


def test_subview_reshape_copy_and_atomics(parse, rng):
    module = parse("""
    mlc_gpu.func @views(%x: memref<4x8xf32>, %out: memref<2x4xf32>, %flat: memref<32xf32>, %total: memref<1xf32>) grid [1, 1, 1] block [4, 2, 1] {
      %tx = mlc_gpu.thread_id x
      %ty = mlc_gpu.thread_id y
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %corner = memref.subview %x[1, 2] [2, 4] [1, 1] : memref<4x8xf32> to memref<2x4xf32, strided<[8, 1], offset: 10>>
      %v = memref.load %corner[%ty, %tx] : memref<2x4xf32, strided<[8, 1], offset: 10>>
      memref.store %v, %out[%ty, %tx] : memref<2x4xf32>
      %x_flat = memref.collapse_shape %x [[0, 1]] : memref<4x8xf32> into memref<32xf32>
      %x_3d = memref.expand_shape %x_flat [[0, 1, 2]] output_shape [2, 2, 8] : memref<32xf32> into memref<2x2x8xf32>
      %first = arith.cmpi eq, %tx, %c0 : index
      %lead = arith.cmpi eq, %ty, %c0 : index
      %only = arith.andi %first, %lead : i1
      scf.if %only {
        %copy = memref.expand_shape %flat [[0, 1, 2]] output_shape [2, 2, 8] : memref<32xf32> into memref<2x2x8xf32>
        "memref.copy"(%x_3d, %copy) : (memref<2x2x8xf32>, memref<2x2x8xf32>) -> ()
      }
      %w = memref.load %x[%ty, %tx] : memref<4x8xf32>
      %old = "memref.atomic_rmw"(%w, %total, %c0) <{kind = 0 : i64}> : (f32, memref<1xf32>, index) -> f32
      mlc_gpu.return
    }
    """)
    x = rng.integers(-10, 10, size=(4, 8)).astype(np.float32)
    _, out, flat, total = run_kernel(
        module, "views", [x, np.zeros((2, 4), np.float32), np.zeros(32, np.float32), np.zeros(1, np.float32)]
    )
    np.testing.assert_array_equal(out, x[1:3, 2:6])
    np.testing.assert_array_equal(flat, x.reshape(-1))
    assert total[0] == x[:2, :4].sum()


def test_transfer_read_pads_and_broadcasts(parse, rng):
    module = parse("""
    loop.kernel @transfer(%x: memref<3x5xf32>, %out: memref<3x8xf32>, %columns: memref<4x3xf32>) {
      loop.parallel %row < 3 {
        %c0 = arith.constant 0 : index
        %c1 = arith.constant 1 : index
        %pad = arith.constant -1.0 : f32
        %v = vector.transfer_read %x[%row, %c1], %pad : memref<3x5xf32>, vector<8xf32>
        vector.transfer_write %v, %out[%row, %c0] : vector<8xf32>, memref<3x8xf32>
        %b = vector.transfer_read %x[%row, %c0], %pad {permutation_map = affine_map<(d0, d1) -> (0)>} : memref<3x5xf32>, vector<4xf32>
        %t = vector.transfer_read %x[%c0, %row], %pad {permutation_map = affine_map<(d0, d1) -> (d0)>} : memref<3x5xf32>, vector<4xf32>
        %s = arith.addf %b, %t : vector<4xf32>
        vector.transfer_write %s, %columns[%c0, %row] {permutation_map = affine_map<(d0, d1) -> (d0)>} : vector<4xf32>, memref<4x3xf32>
      }
      loop.return
    }
    """)
    x = rng.standard_normal((3, 5)).astype(np.float32)
    _, out, columns = run_kernel(
        module, "transfer", [x, np.zeros((3, 8), np.float32), np.zeros((4, 3), np.float32)]
    )
    expected = np.full((3, 8), -1.0, np.float32)
    expected[:, :4] = x[:, 1:5]
    np.testing.assert_array_equal(out, expected)
    padded_columns = np.full((4, 3), -1.0, np.float32)
    padded_columns[:3, :] = x[:, :3]
    np.testing.assert_array_equal(columns, x[:, 0][None, :] + padded_columns)


def test_switches_under_divergence(parse, rng):
    module = parse("""
    mlc_gpu.func @switch(%x: memref<32xi32>, %out: memref<32xi32>) grid [1, 1, 1] block [32, 1, 1] {
      %t = mlc_gpu.thread_id x
      %c3 = arith.constant 3 : index
      %selector = arith.remui %t, %c3 : index
      %v = memref.load %x[%t] : memref<32xi32>
      %r = scf.index_switch %selector -> i32
      case 0 {
        %c10 = arith.constant 10 : i32
        %a = arith.addi %v, %c10 : i32
        scf.yield %a : i32
      }
      case 1 {
        %b = arith.muli %v, %v : i32
        scf.yield %b : i32
      }
      default {
        %z = arith.constant 0 : i32
        %n = arith.subi %z, %v : i32
        scf.yield %n : i32
      }
      memref.store %r, %out[%t] : memref<32xi32>
      mlc_gpu.return
    }
    """)
    x = rng.integers(-100, 100, size=32, dtype=np.int32)
    (_, out) = run_kernel(module, "switch", [x, np.zeros(32, np.int32)])
    selector = np.arange(32) % 3
    np.testing.assert_array_equal(out, np.select([selector == 0, selector == 1], [x + 10, x * x], -x))


def test_cf_switch_and_struct_descriptors(parse, rng):
    module = parse("""
    llvm.func @classify(%x: !llvm.ptr, %out: !llvm.ptr) {
      %tid = llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.tid.x"() : () -> i32
      %c4 = llvm.mlir.constant(4 : i32) : i32
      %kind = llvm.urem %tid, %c4 : i32
      %t64 = llvm.zext %tid : i32 to i64
      %undef = llvm.mlir.undef : !llvm.struct<(ptr, i64)>
      %d0 = llvm.insertvalue %x, %undef[0] : !llvm.struct<(ptr, i64)>
      %d1 = llvm.insertvalue %t64, %d0[1] : !llvm.struct<(ptr, i64)>
      %base = llvm.extractvalue %d1[0] : !llvm.struct<(ptr, i64)>
      %index = llvm.extractvalue %d1[1] : !llvm.struct<(ptr, i64)>
      %p = llvm.getelementptr %base[%index] : (!llvm.ptr, i64) -> !llvm.ptr, f32
      %v = llvm.load %p : !llvm.ptr -> f32
      cf.switch %kind : i32, [
        default: ^other(%v : f32),
        0: ^double(%v : f32),
        2: ^negate
      ]
    ^double(%a: f32):
      %two = llvm.fadd %a, %a : f32
      llvm.br ^store(%two : f32)
    ^negate:
      %n = llvm.fneg %v : f32
      llvm.br ^store(%n : f32)
    ^other(%o: f32):
      llvm.br ^store(%o : f32)
    ^store(%r: f32):
      %q = llvm.getelementptr %out[%t64] : (!llvm.ptr, i64) -> !llvm.ptr, f32
      llvm.store %r, %q : f32, !llvm.ptr
      llvm.return
    }
    """)
    x = rng.standard_normal(16).astype(np.float32)
    (_, out) = run_kernel(module, "classify", [x, np.zeros(16, np.float32)], grid=(1, 1, 1), block=(16, 1, 1))
    kind = np.arange(16) % 4
    np.testing.assert_array_equal(out, np.select([kind == 0, kind == 2], [x + x, -x], x))
