// RUN: mlc-opt %s --split-input-file -p convert-graph-to-tile | filecheck %s
// RUN: mlc-opt %s --split-input-file -p convert-graph-to-tile | mlc-opt --split-input-file | filecheck %s

// convert-graph-to-tile follows the fusion plan in the IR and groups nothing itself: one kernel
// per graph.fusion (named after it), one per op outside every fusion. These plans are written by
// hand; graph-fuse would have made one kernel of each of them.

// Two regions where graph-fuse would make one: two kernels, the first's output read by the second.
// CHECK-LABEL: tile.kernel @split_relu(%x: memref<32xf32>, %output0: memref<32xf32>)
// CHECK:         arith.maximumf
// CHECK-LABEL: tile.kernel @split_exp(%r: memref<32xf32>, %output0: memref<32xf32>)
// CHECK:         math.exp
// CHECK-LABEL: func.func @split
// CHECK:         tile.launch @split_relu(%x, %[[R:.*]]) :
// CHECK:         tile.launch @split_exp(%[[R]], %{{.*}}) :
func.func @split(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %r = graph.fusion elementwise "split_relu" (%a = %x : tensor<4x8xf32>) -> tensor<4x8xf32> {
    %0 = graph.relu %a : tensor<4x8xf32>
    graph.yield %0 : tensor<4x8xf32>
  }
  %e = graph.fusion elementwise "split_exp" (%b = %r : tensor<4x8xf32>) -> tensor<4x8xf32> {
    %1 = graph.exp %b : tensor<4x8xf32>
    graph.yield %1 : tensor<4x8xf32>
  }
  func.return %e : tensor<4x8xf32>
}

// -----

// No fusion at all: a kernel per op, in program order (a reshape between them is a view).
// CHECK-LABEL: tile.kernel @unfused_0_add(
// CHECK-LABEL: tile.kernel @unfused_1_relu(
// CHECK-LABEL: func.func @unfused
// CHECK-COUNT-2: tile.launch
// CHECK-NOT:     tile.launch
func.func @unfused(%x: tensor<4x8xf32>, %y: tensor<8xf32>) -> tensor<32xf32> {
  %0 = graph.add %x, %y : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %1 = graph.reshape %0 : tensor<4x8xf32> to tensor<32xf32>
  %2 = graph.relu %1 : tensor<32xf32>
  func.return %2 : tensor<32xf32>
}

// -----

// A matmul region is one kernel: the product and its epilogue (bias, relu); a reduction region
// reads the matmul's output.
// CHECK-LABEL: tile.kernel @dense(
// CHECK:         tile.dot
// CHECK:         arith.maximumf
// CHECK-LABEL: tile.kernel @row_max(
// CHECK:         tile.reduce
// CHECK-LABEL: func.func @two_kernels
// CHECK-COUNT-2: tile.launch
// CHECK-NOT:     tile.launch
func.func @two_kernels(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>) -> tensor<8x1xf32> {
  %h = graph.fusion matmul "dense" (%xa = %x : tensor<8x16xf32>, %wa = %w : tensor<16x32xf32>, %ba = %b : tensor<32xf32>) -> tensor<8x32xf32> {
    %0 = graph.matmul %xa, %wa : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
    %1 = graph.add %0, %ba : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
    %2 = graph.relu %1 : tensor<8x32xf32>
    graph.yield %2 : tensor<8x32xf32>
  }
  %m = graph.fusion reduction "row_max" (%ha = %h : tensor<8x32xf32>) -> tensor<8x1xf32> {
    %3 = graph.reduce_max %ha axes [1] keepdims true : tensor<8x32xf32> to tensor<8x1xf32>
    graph.yield %3 : tensor<8x1xf32>
  }
  func.return %m : tensor<8x1xf32>
}
