// RUN: mlc-opt %s --split-input-file -p 'loop-group-tiles{group=2}' | filecheck %s
// RUN: mlc-opt %s --split-input-file -p 'loop-group-tiles{group=2}' | mlc-opt --split-input-file -p 'loop-group-tiles{group=2}' | filecheck %s --check-prefix=AGAIN
// RUN: not mlc-opt %s -p 'loop-group-tiles{group=0}' 2>&1 | filecheck %s --check-prefix=BAD
// RUN: mlc-opt %s --split-input-file -p 'loop-group-tiles{group=2 l2-bytes=4000}' | filecheck %s --check-prefix=L2
// RUN: not mlc-opt %s -p 'loop-group-tiles{l2-bytes=-1}' 2>&1 | filecheck %s --check-prefix=BAD-L2

// 5 row blocks (block.x) by 3 column blocks (block.y) in groups of 2 rows: at the start of the
// thread loop, launch = x + 5 * y, first = launch / 6 * 2, size = min(5 - first, 2) (the last
// group holds row 4 alone), within = launch mod 6, row = first + within mod size, column =
// within / size; the loads and stores index the tile (row, column). The kernel records the group.
// CHECK-LABEL: loop.kernel @tiles
// CHECK-SAME:    mlc.tile_group = 2 : i64
// CHECK:         loop.parallel %x < 5 mapping block.x {
// CHECK-NEXT:      loop.parallel %y < 3 mapping block.y {
// CHECK-NEXT:        loop.parallel %t < 4 mapping thread.x {
// CHECK-NEXT:          %[[X_COUNT:.*]] = arith.constant 5 : index
// CHECK-NEXT:          %[[SCALED:.*]] = arith.muli %y, %[[X_COUNT]] : index
// CHECK-NEXT:          %[[LAUNCH:.*]] = arith.addi %x, %[[SCALED]] : index
// CHECK-NEXT:          %[[PER_GROUP:.*]] = arith.constant 6 : index
// CHECK-NEXT:          %[[GROUP:.*]] = arith.divui %[[LAUNCH]], %[[PER_GROUP]] : index
// CHECK-NEXT:          %[[G:.*]] = arith.constant 2 : index
// CHECK-NEXT:          %[[FIRST:.*]] = arith.muli %[[GROUP]], %[[G]] : index
// CHECK-NEXT:          %[[X_COUNT_AGAIN:.*]] = arith.constant 5 : index
// CHECK-NEXT:          %[[LEFT:.*]] = arith.subi %[[X_COUNT_AGAIN]], %[[FIRST]] : index
// CHECK-NEXT:          %[[G_AGAIN:.*]] = arith.constant 2 : index
// CHECK-NEXT:          %[[SIZE:.*]] = arith.minui %[[LEFT]], %[[G_AGAIN]] : index
// CHECK-NEXT:          %[[WITHIN:.*]] = arith.remui %[[LAUNCH]], %[[PER_GROUP]] : index
// CHECK-NEXT:          %[[OFFSET:.*]] = arith.remui %[[WITHIN]], %[[SIZE]] : index
// CHECK-NEXT:          %tile_row = arith.addi %[[FIRST]], %[[OFFSET]] : index
// CHECK-NEXT:          %tile_column = arith.divui %[[WITHIN]], %[[SIZE]] : index
// CHECK-NEXT:          %v = memref.load %a[%tile_row, %tile_column, %t] : memref<5x3x4xf32>
// CHECK-NEXT:          memref.store %v, %out[%tile_row, %tile_column, %t] : memref<5x3x4xf32>
// AGAIN-LABEL: loop.kernel @tiles
// AGAIN-COUNT-1: %tile_row = arith.addi
// AGAIN-NOT:     %tile_row{{.*}} = arith.addi
// AGAIN-LABEL: loop.kernel @beyond
// BAD: loop-group-tiles needs group >= 1, got 0
// BAD-L2: loop-group-tiles needs l2-bytes >= 0 (0: every grid), got -1
// L2-LABEL: loop.kernel @tiles
// L2-NOT:     mlc.tile_group
// L2-NOT:     tile_row
loop.kernel @tiles(%a: memref<5x3x4xf32>, %out: memref<5x3x4xf32>) {
  loop.parallel %x < 5 mapping block.x {
    loop.parallel %y < 3 mapping block.y {
      loop.parallel %t < 4 mapping thread.x {
        %v = memref.load %a[%x, %y, %t] : memref<5x3x4xf32>
        memref.store %v, %out[%x, %y, %t] : memref<5x3x4xf32>
      }
    }
  }
  loop.return
}

// -----

// The per-kernel decision (`l2-bytes=4000` standing in for an L2 cache): @beyond runs a tensor-
// core product and reads %a of 7680 bytes (5 x 3 x 256 f16), more than 4000: grouped. @small_operands
// reads 3840 bytes; its output is 7680 but is only stored to (written once, no reuse): left in launch
// order. @no_product reads 7680 bytes but runs no tensor-core product (not a matmul): left alone.
// Without `l2-bytes` (the RUN above) every one of them is grouped.
// CHECK-LABEL: loop.kernel @beyond
// CHECK-SAME:    mlc.tile_group = 2 : i64
// CHECK-LABEL: loop.kernel @small_operands
// CHECK-SAME:    mlc.tile_group = 2 : i64
// CHECK-LABEL: loop.kernel @no_product
// CHECK-SAME:    mlc.tile_group = 2 : i64
// L2-LABEL: loop.kernel @beyond
// L2-SAME:    mlc.tile_group = 2 : i64
// L2:           %tile_row = arith.addi
// L2:           vector.load %a[%tile_row, %tile_column, %t]
// L2-LABEL: loop.kernel @small_operands
// L2-NOT:     mlc.tile_group
// L2-NOT:     tile_row
// L2-LABEL: loop.kernel @no_product
// L2-NOT:     mlc.tile_group
// L2-NOT:     tile_row
// L2-LABEL: loop.kernel @outside
loop.kernel @beyond(%a: memref<5x3x256xf16>, %out: memref<5x3x32xf32>) {
  loop.parallel %x < 5 mapping block.x {
    loop.parallel %y < 3 mapping block.y {
      loop.parallel %t < 32 mapping thread.x {
        %v = vector.load %a[%x, %y, %t] : memref<5x3x256xf16>, vector<2xf16>
        %z = arith.constant 0.0 : f32
        %d:4 = loop.mma_sync m16n8k16 (%v, %v, %v, %v) * (%v, %v) + (%z, %z, %z, %z) : vector<2xf16> -> f32
        memref.store %d#0, %out[%x, %y, %t] : memref<5x3x32xf32>
      }
    }
  }
  loop.return
}
loop.kernel @small_operands(%a: memref<5x3x128xf16>, %out: memref<5x3x128xf32>) {
  loop.parallel %x < 5 mapping block.x {
    loop.parallel %y < 3 mapping block.y {
      loop.parallel %t < 32 mapping thread.x {
        %v = vector.load %a[%x, %y, %t] : memref<5x3x128xf16>, vector<2xf16>
        %z = arith.constant 0.0 : f32
        %d:4 = loop.mma_sync m16n8k16 (%v, %v, %v, %v) * (%v, %v) + (%z, %z, %z, %z) : vector<2xf16> -> f32
        memref.store %d#0, %out[%x, %y, %t] : memref<5x3x128xf32>
      }
    }
  }
  loop.return
}
loop.kernel @no_product(%a: memref<5x3x256xf16>, %out: memref<5x3x32xf16>) {
  loop.parallel %x < 5 mapping block.x {
    loop.parallel %y < 3 mapping block.y {
      loop.parallel %t < 32 mapping thread.x {
        %v = memref.load %a[%x, %y, %t] : memref<5x3x256xf16>
        memref.store %v, %out[%x, %y, %t] : memref<5x3x32xf16>
      }
    }
  }
  loop.return
}

// -----

// Left alone: a block id used outside the thread loop (the ops between the block and thread
// loops may not divide), a one-dimensional grid, and a group as large as the rows.
// CHECK-LABEL: loop.kernel @outside
// CHECK-NOT:     mlc.tile_group
// CHECK-NOT:     tile_row
// CHECK-LABEL: loop.kernel @one_dimensional
// CHECK-NOT:     tile_row
// CHECK-LABEL: loop.kernel @two_rows
// CHECK-NOT:     tile_row
loop.kernel @outside(%a: memref<5x3xf32>) {
  loop.parallel %x < 5 mapping block.x {
    loop.parallel %y < 3 mapping block.y {
      %v = memref.load %a[%x, %y] : memref<5x3xf32>
      loop.parallel %t < 1 mapping thread.x {
        memref.store %v, %a[%x, %y] : memref<5x3xf32>
      }
    }
  }
  loop.return
}
loop.kernel @one_dimensional(%a: memref<5xf32>) {
  loop.parallel %x < 5 mapping block.x {
    loop.parallel %t < 1 mapping thread.x {
      %v = memref.load %a[%x] : memref<5xf32>
      memref.store %v, %a[%x] : memref<5xf32>
    }
  }
  loop.return
}
loop.kernel @two_rows(%a: memref<2x3xf32>) {
  loop.parallel %x < 2 mapping block.x {
    loop.parallel %y < 3 mapping block.y {
      loop.parallel %t < 1 mapping thread.x {
        %v = memref.load %a[%x, %y] : memref<2x3xf32>
        memref.store %v, %a[%x, %y] : memref<2x3xf32>
      }
    }
  }
  loop.return
}
