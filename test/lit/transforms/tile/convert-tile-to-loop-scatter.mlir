// convert-tile-to-loop lowers a matmul kernel's `tile.scatter` (an implicit GEMM storing through
// its output's slice and transpose, graph-fuse{store-layouts=true}) to one guarded scalar store
// per micro-tile element: the row's indices (image, grid row, grid column past the slice = -1)
// computed from the thread's row, the channel from its column, every index checked against its
// dimension (-1 fails the unsigned compare).
// RUN: mlc-opt %s -p 'graph-decompose,graph-fuse{store-layouts=true},convert-graph-to-tile,canonicalize,cse,convert-tile-to-loop,cse,canonicalize' | filecheck %s

// CHECK-LABEL: loop.kernel @tiny_0_implicit_gemm_matmul(
// CHECK-SAME:    %output0: memref<1x2x2x1xf32>
// CHECK:         %[[ROW:.*]] = arith.addi %m, %row : index
// CHECK-NEXT:    %[[IMAGE:.*]] = arith.divui %[[ROW]], %c4 : index
// CHECK-NEXT:    %[[PAIR:.*]] = arith.divui %[[ROW]], %c2 : index
// CHECK-NEXT:    %[[Y:.*]] = arith.remui %[[PAIR]], %c2 : index
// CHECK-NEXT:    %[[GRID_X:.*]] = arith.remui %[[ROW]], %c2 : index
// CHECK-NEXT:    %[[KEPT:.*]] = arith.cmpi ult, %[[GRID_X]], %c1 : index
// CHECK-NEXT:    %[[DROP:.*]] = arith.constant -1 : index
// CHECK-NEXT:    %[[X:.*]] = arith.select %[[KEPT]], %[[GRID_X]], %[[DROP]] : index
// CHECK-NEXT:    %[[CHANNEL:.*]] = arith.addi %n, %column : index
// CHECK-NEXT:    %[[IN0:.*]] = arith.cmpi ult, %[[IMAGE]], %c1 : index
// CHECK-NEXT:    %[[IN1:.*]] = arith.cmpi ult, %[[CHANNEL]], %c2 : index
// CHECK-NEXT:    %[[IN2:.*]] = arith.cmpi ult, %[[Y]], %c2 : index
// CHECK-NEXT:    %[[IN3:.*]] = arith.cmpi ult, %[[X]], %c1 : index
// CHECK-NEXT:    %[[A:.*]] = arith.andi %[[IN0]], %[[IN1]] : i1
// CHECK-NEXT:    %[[B:.*]] = arith.andi %[[A]], %[[IN2]] : i1
// CHECK-NEXT:    %[[INSIDE:.*]] = arith.andi %[[B]], %[[IN3]] : i1
// CHECK-NEXT:    scf.if %[[INSIDE]] {
// CHECK-NEXT:      memref.store %acc, %output0[%[[IMAGE]], %[[CHANNEL]], %[[Y]], %[[X]]] : memref<1x2x2x1xf32>
// CHECK-NEXT:    }
func.func @tiny(%x: tensor<1x8x2x2xf32>, %w: tensor<2x8x1x2xf32>) -> tensor<1x2x2x1xf32> {
  %r = graph.conv2d %x, %w strides [1, 1] pads [0, 0, 0, 0] dilations [1, 1] group 1 : (tensor<1x8x2x2xf32>, tensor<2x8x1x2xf32>) -> tensor<1x2x2x1xf32>
  func.return %r : tensor<1x2x2x1xf32>
}
