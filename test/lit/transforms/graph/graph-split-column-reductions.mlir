// RUN: mlc-opt %s --split-input-file -p graph-split-column-reductions | filecheck %s
// RUN: mlc-opt %s --split-input-file -p "graph-split-column-reductions{block-bytes=256}" | filecheck %s --check-prefix=SMALL
// RUN: not mlc-opt %s -p "graph-split-column-reductions{block-bytes=32}" 2>&1 | filecheck %s --check-prefix=OPTION

// A column sum of 4096x1024: blocks of 128 rows (128 x 1024 f32 = 512 KiB), 32 of them; the
// partial sums (mlc.cpu_row_splits = 32) over each block's rows, then their sum.
// CHECK-LABEL: func.func @column_sum
// CHECK-NEXT:    %0 = graph.reshape %x : tensor<4096x1024xf32> to tensor<32x128x1024xf32>
// CHECK-NEXT:    %s_partial = graph.reduce_sum %0 axes [1] keepdims false {mlc.cpu_row_splits = 32 : i64} : tensor<32x128x1024xf32> to tensor<32x1024xf32>
// CHECK-NEXT:    %s = graph.reduce_sum %s_partial axes [0] keepdims false : tensor<32x1024xf32> to tensor<1024xf32>
// CHECK-NEXT:    func.return %s
func.func @column_sum(%x: tensor<4096x1024xf32>) -> tensor<1024xf32> {
  %s = graph.reduce_sum %x axes [0] keepdims false : tensor<4096x1024xf32> to tensor<1024xf32>
  func.return %s : tensor<1024xf32>
}

// -----

// The elementwise ops computing the operand alone move to the split shape, so that graph-fuse
// fuses them with the partial reduction: x of the full shape reshaped, the row b (1 along the
// reduced axis) kept, the per-row c reshaped to broadcast as before; keepdims stays the
// original's, on the second reduction. A max of a batch over axis 1: 2 x 1024 x 256, blocks of
// 512 rows of 256.
// CHECK-LABEL: func.func @producers
// CHECK-NEXT:    %0 = graph.reshape %x : tensor<2048x512xf32> to tensor<8x256x512xf32>
// CHECK-NEXT:    %1 = graph.reshape %c : tensor<2048x1xf32> to tensor<8x256x1xf32>
// CHECK-NEXT:    %2 = graph.mul %0, %1 : (tensor<8x256x512xf32>, tensor<8x256x1xf32>) -> tensor<8x256x512xf32>
// CHECK-NEXT:    %3 = graph.add %2, %b : (tensor<8x256x512xf32>, tensor<512xf32>) -> tensor<8x256x512xf32>
// CHECK-NEXT:    %s_partial = graph.reduce_sum %3 axes [1] keepdims false {mlc.cpu_row_splits = 8 : i64} : tensor<8x256x512xf32> to tensor<8x512xf32>
// CHECK-NEXT:    %s = graph.reduce_sum %s_partial axes [0] keepdims true : tensor<8x512xf32> to tensor<1x512xf32>
// CHECK-NEXT:    %4 = graph.reshape %y : tensor<2x1024x256xf32> to tensor<2x2x512x256xf32>
// CHECK-NEXT:    %m_partial = graph.reduce_max %4 axes [2] keepdims false {mlc.cpu_row_splits = 2 : i64} : tensor<2x2x512x256xf32> to tensor<2x2x256xf32>
// CHECK-NEXT:    %m = graph.reduce_max %m_partial axes [1] keepdims false : tensor<2x2x256xf32> to tensor<2x256xf32>
func.func @producers(%x: tensor<2048x512xf32>, %b: tensor<512xf32>, %c: tensor<2048x1xf32>, %y: tensor<2x1024x256xf32>) -> (tensor<1x512xf32>, tensor<2x256xf32>) {
  %p = graph.mul %x, %c : (tensor<2048x512xf32>, tensor<2048x1xf32>) -> tensor<2048x512xf32>
  %q = graph.add %p, %b : (tensor<2048x512xf32>, tensor<512xf32>) -> tensor<2048x512xf32>
  %s = graph.reduce_sum %q axes [0] keepdims true : tensor<2048x512xf32> to tensor<1x512xf32>
  %m = graph.reduce_max %y axes [1] keepdims false : tensor<2x1024x256xf32> to tensor<2x256xf32>
  func.return %s, %m : tensor<1x512xf32>, tensor<2x256xf32>
}

// -----

// Left alone: a reduction along the last axis (rows: their own lowering), 32 rows (one block:
// the largest that fits 512 KiB has 128 rows of 1024), a mean (graph-decompose makes it a sum
// first), f16, two axes, an op already split, a sum of x.T (a reshape of the transpose would be
// a copy kernel; whole, graph-fuse reads it in place). A producer with another use (the returned
// exp) stays: its value is reshaped.
// CHECK-LABEL: func.func @left_alone
// CHECK-NEXT:    graph.reduce_sum %x axes [1]
// CHECK-NEXT:    graph.reduce_sum %few axes [0] keepdims false : tensor<32x1024xf32>
// CHECK-NEXT:    graph.reduce_mean %x axes [0]
// CHECK-NEXT:    graph.reduce_sum %h axes [0]
// CHECK-NEXT:    graph.reduce_sum %x axes [0, 1]
// CHECK-NEXT:    graph.reduce_sum %x axes [0] keepdims false {mlc.cpu_row_splits = 4 : i64}
// CHECK-NEXT:    %xt = graph.transpose %x
// CHECK-NEXT:    graph.reduce_sum %xt axes [0] keepdims false : tensor<512x2048xf32>
// CHECK-NEXT:    %e = graph.exp %x
// CHECK-NEXT:    %{{.*}} = graph.reshape %e : tensor<2048x512xf32> to tensor<8x256x512xf32>
// CHECK-NEXT:    %{{.*}} = graph.reduce_min %{{.*}} axes [1] keepdims false {mlc.cpu_row_splits = 8 : i64}
// CHECK-NEXT:    %{{.*}} = graph.reduce_min %{{.*}} axes [0] keepdims false : tensor<8x512xf32> to tensor<512xf32>
func.func @left_alone(%x: tensor<2048x512xf32>, %few: tensor<32x1024xf32>, %h: tensor<2048x512xf16>) -> (tensor<2048xf32>, tensor<1024xf32>, tensor<512xf32>, tensor<512xf16>, tensor<f32>, tensor<512xf32>, tensor<512xf32>, tensor<2048x512xf32>, tensor<2048xf32>) {
  %0 = graph.reduce_sum %x axes [1] keepdims false : tensor<2048x512xf32> to tensor<2048xf32>
  %1 = graph.reduce_sum %few axes [0] keepdims false : tensor<32x1024xf32> to tensor<1024xf32>
  %2 = graph.reduce_mean %x axes [0] keepdims false : tensor<2048x512xf32> to tensor<512xf32>
  %3 = graph.reduce_sum %h axes [0] keepdims false : tensor<2048x512xf16> to tensor<512xf16>
  %4 = graph.reduce_sum %x axes [0, 1] keepdims false : tensor<2048x512xf32> to tensor<f32>
  %5 = graph.reduce_sum %x axes [0] keepdims false {mlc.cpu_row_splits = 4 : i64} : tensor<2048x512xf32> to tensor<512xf32>
  %xt = graph.transpose %x perm [1, 0] : tensor<2048x512xf32> to tensor<512x2048xf32>
  %7 = graph.reduce_sum %xt axes [0] keepdims false : tensor<512x2048xf32> to tensor<2048xf32>
  %e = graph.exp %x : tensor<2048x512xf32>
  %6 = graph.reduce_min %e axes [0] keepdims false : tensor<2048x512xf32> to tensor<512xf32>
  func.return %0, %1, %2, %3, %4, %5, %6, %e, %7 : tensor<2048xf32>, tensor<1024xf32>, tensor<512xf32>, tensor<512xf16>, tensor<f32>, tensor<512xf32>, tensor<512xf32>, tensor<2048x512xf32>, tensor<2048xf32>
}

// -----

// `block-bytes` bounds a block: 16 rows of 4 columns in 256 bytes, 4 blocks of 64 rows.
// SMALL-LABEL: func.func @small
// SMALL-NEXT:    graph.reshape %x : tensor<64x4xf32> to tensor<4x16x4xf32>
// SMALL-NEXT:    graph.reduce_max %{{.*}} axes [1] keepdims false {mlc.cpu_row_splits = 4 : i64}
// OPTION: block-bytes must hold 16 f32 rows of one element at least, got 32
func.func @small(%x: tensor<64x4xf32>) -> tensor<4xf32> {
  %m = graph.reduce_max %x axes [0] keepdims false : tensor<64x4xf32> to tensor<4xf32>
  func.return %m : tensor<4xf32>
}
