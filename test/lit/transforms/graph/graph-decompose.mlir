// RUN: mlc-opt %s --split-input-file -p graph-decompose | filecheck %s
// RUN: mlc-opt %s --split-input-file -p 'graph-decompose{direct-layout-elements=0}' | filecheck %s --check-prefix=SHARED
// RUN: mlc-opt %s --split-input-file -p graph-decompose | mlc-opt --split-input-file -p graph-decompose | filecheck %s

// softmax: the row maximum is subtracted before exp (no overflow), then multiplied by the
// reciprocal of the row sum (one division per row).
// CHECK-LABEL: func.func @softmax
// CHECK-NEXT:    %max = graph.reduce_max %x axes [1] keepdims true : tensor<4x6xf32> to tensor<4x1xf32>
// CHECK-NEXT:    %shifted = graph.sub %x, %max : (tensor<4x6xf32>, tensor<4x1xf32>) -> tensor<4x6xf32>
// CHECK-NEXT:    %exp = graph.exp %shifted : tensor<4x6xf32>
// CHECK-NEXT:    %sum = graph.reduce_sum %exp axes [1] keepdims true : tensor<4x6xf32> to tensor<4x1xf32>
// CHECK-NEXT:    %inverse_sum = graph.reciprocal %sum : tensor<4x1xf32>
// CHECK-NEXT:    %y = graph.mul %exp, %inverse_sum : (tensor<4x6xf32>, tensor<4x1xf32>) -> tensor<4x6xf32>
// CHECK-NEXT:    func.return %y
func.func @softmax(%x: tensor<4x6xf32>) -> tensor<4x6xf32> {
  %y = graph.softmax %x axis -1 : tensor<4x6xf32>
  func.return %y : tensor<4x6xf32>
}

// -----

// f16 is computed in f32 and rounded once at the end.
// CHECK-LABEL: func.func @softmax_f16
// CHECK-NEXT:    %[[WIDE:.*]] = graph.cast %x : tensor<2x8xf16> to tensor<2x8xf32>
// CHECK-NEXT:    graph.reduce_max %[[WIDE]] axes [0] keepdims true : tensor<2x8xf32> to tensor<1x8xf32>
// CHECK:         graph.reduce_sum %exp axes [0] keepdims true : tensor<2x8xf32> to tensor<1x8xf32>
// CHECK:         %y = graph.cast %{{.*}} : tensor<2x8xf32> to tensor<2x8xf16>
func.func @softmax_f16(%x: tensor<2x8xf16>) -> tensor<2x8xf16> {
  %y = graph.softmax %x axis 0 : tensor<2x8xf16>
  func.return %y : tensor<2x8xf16>
}

// -----

// layer_norm over the last two dimensions: mean, centred values, population variance, rsqrt.
// CHECK-LABEL: func.func @layer_norm
// CHECK-NEXT:    %mean_sum = graph.reduce_sum %x axes [1, 2] keepdims true : tensor<2x3x4xf32> to tensor<2x1x1xf32>
// CHECK-NEXT:    %[[COUNT:.*]] = graph.constant dense<1.200000e+01> : tensor<f32>
// CHECK-NEXT:    %mean = graph.div %mean_sum, %[[COUNT]]
// CHECK-NEXT:    %centered = graph.sub %x, %mean
// CHECK-NEXT:    %squares = graph.mul %centered, %centered
// CHECK-NEXT:    %variance_sum = graph.reduce_sum %squares axes [1, 2] keepdims true
// CHECK:         %variance = graph.div %variance_sum
// CHECK-NEXT:    %[[EPSILON:.*]] = graph.constant dense<1.000000e-03> : tensor<f32>
// CHECK-NEXT:    %[[SHIFTED:.*]] = graph.add %variance, %[[EPSILON]]
// CHECK-NEXT:    %rstd = graph.rsqrt %[[SHIFTED]] : tensor<2x1x1xf32>
// CHECK-NEXT:    %normalized = graph.mul %centered, %rstd
// CHECK-NEXT:    %[[SCALED:.*]] = graph.mul %normalized, %scale
// CHECK-NEXT:    %y = graph.add %[[SCALED]], %bias
func.func @layer_norm(%x: tensor<2x3x4xf32>, %scale: tensor<3x4xf32>, %bias: tensor<3x4xf32>) -> tensor<2x3x4xf32> {
  %y = graph.layer_norm %x, %scale, %bias axis 1 epsilon 1.0e-03 : (tensor<2x3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<2x3x4xf32>
  func.return %y : tensor<2x3x4xf32>
}

// -----

// reduce_mean becomes a sum and a division; keepdims = false becomes a reshape of the kept form.
// CHECK-LABEL: func.func @mean_not_kept
// CHECK-NEXT:    %mean_sum = graph.reduce_sum %x axes [0, 2] keepdims true : tensor<3x4x5xf32> to tensor<1x4x1xf32>
// CHECK-NEXT:    graph.constant dense<1.500000e+01> : tensor<f32>
// CHECK-NEXT:    %mean = graph.div
// CHECK-NEXT:    %y = graph.reshape %mean : tensor<1x4x1xf32> to tensor<4xf32>
func.func @mean_not_kept(%x: tensor<3x4x5xf32>) -> tensor<4xf32> {
  %y = graph.reduce_mean %x axes [2, 0] keepdims false : tensor<3x4x5xf32> to tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

// An f16 maximum is taken in f32 (exact), and cast back.
// CHECK-LABEL: func.func @max_f16
// CHECK-NEXT:    %[[WIDE:.*]] = graph.cast %x : tensor<8x8xf16> to tensor<8x8xf32>
// CHECK-NEXT:    %[[MAX:.*]] = graph.reduce_max %[[WIDE]] axes [1] keepdims true
// CHECK-NEXT:    %y = graph.cast %[[MAX]] : tensor<8x1xf32> to tensor<8x1xf16>
func.func @max_f16(%x: tensor<8x8xf16>) -> tensor<8x1xf16> {
  %y = graph.reduce_max %x axes [1] keepdims true : tensor<8x8xf16> to tensor<8x1xf16>
  func.return %y : tensor<8x1xf16>
}

// -----

// Already primitive: unchanged. A reduction of one element is its input (reshaped when the rank
// drops). An empty reduction is a constant: its combiner's identity (+inf for min), as the
// interpreter defines it.
// CHECK-LABEL: func.func @unchanged_and_trivial
// CHECK-NEXT:    %s = graph.reduce_sum %x axes [0] keepdims true : tensor<4x1xi32> to tensor<1x1xi32>
// CHECK-NEXT:    %m = graph.reshape %x : tensor<4x1xi32> to tensor<4xi32>
// CHECK-NEXT:    %identity = graph.constant dense<"0x0000807F"> : tensor<2x1xf32>
// CHECK-NEXT:    func.return %s, %x, %m, %identity
func.func @unchanged_and_trivial(%x: tensor<4x1xi32>, %z: tensor<2x0xf32>) -> (tensor<1x1xi32>, tensor<4x1xi32>, tensor<4xi32>, tensor<2x1xf32>) {
  %s = graph.reduce_sum %x axes [0] keepdims true : tensor<4x1xi32> to tensor<1x1xi32>
  %k = graph.reduce_max %x axes [1] keepdims true : tensor<4x1xi32> to tensor<4x1xi32>
  %m = graph.reduce_max %x axes [1] keepdims false : tensor<4x1xi32> to tensor<4xi32>
  %e = graph.reduce_min %z axes [1] keepdims true : tensor<2x0xf32> to tensor<2x1xf32>
  func.return %s, %k, %m, %e : tensor<1x1xi32>, tensor<4x1xi32>, tensor<4xi32>, tensor<2x1xf32>
}

// -----

// conv2d as an explicit im2col and a matmul: x viewed as (N, G, C/G, 1, H, W), padded with zeros
// (concatenations of broadcast constants), one strided slice per kernel offset (stride 2 here),
// the slices concatenated along the size-1 axis and transposed to (G, N, OH, OW, C/G, kh*kw),
// viewed as the (G, N*OH*OW, C/G*kh*kw) column matrix; the weights as (G, K, O/G); the product
// transposed back to NCHW, the bias added per group and channel.
// CHECK-LABEL: func.func @conv
// CHECK:         %[[X:.*]] = graph.reshape %x : tensor<1x4x5x5xf32> to tensor<1x2x2x1x5x5xf32>
// CHECK:         %[[H:.*]] = graph.concat %{{.*}}, %[[X]], %{{.*}} axis 4
// CHECK:         %[[P:.*]] = graph.concat %{{.*}}, %[[H]], %{{.*}} axis 5 : {{.*}} -> tensor<1x2x2x1x7x7xf32>
// CHECK:         graph.slice %[[P]] starts [0, 0, 0, 0, 0, 0] ends [1, 2, 2, 1, 5, 5] steps [1, 1, 1, 1, 2, 2]
// CHECK-COUNT-7: graph.slice %[[P]]
// CHECK:         %[[LAST:.*]] = graph.slice %[[P]] starts [0, 0, 0, 0, 2, 2] ends [1, 2, 2, 1, 7, 7] steps [1, 1, 1, 1, 2, 2]
// CHECK:         %[[COLUMNS:.*]] = graph.concat {{.*}}, %[[LAST]] axis 3 : {{.*}} -> tensor<1x2x2x9x3x3xf32>
// CHECK:         %[[T:.*]] = graph.transpose %[[COLUMNS]] perm [1, 0, 4, 5, 2, 3] : tensor<1x2x2x9x3x3xf32> to tensor<2x1x3x3x2x9xf32>
// CHECK:         %[[W:.*]] = graph.reshape %w : tensor<6x2x3x3xf32> to tensor<2x3x18xf32>
// CHECK:         %[[A:.*]] = graph.reshape %[[T]] : tensor<2x1x3x3x2x9xf32> to tensor<2x9x18xf32>
// CHECK:         %[[B:.*]] = graph.transpose %[[W]] perm [0, 2, 1]
// CHECK:         %[[M:.*]] = graph.matmul %[[A]], %[[B]] : (tensor<2x9x18xf32>, tensor<2x18x3xf32>) -> tensor<2x9x3xf32>
// CHECK:         %[[M5:.*]] = graph.reshape %[[M]] : tensor<2x9x3xf32> to tensor<2x1x3x3x3xf32>
// CHECK:         %[[Y:.*]] = graph.transpose %[[M5]] perm [1, 0, 4, 2, 3]
// CHECK:         %[[BIAS:.*]] = graph.reshape %b : tensor<6xf32> to tensor<2x3x1x1xf32>
// CHECK:         %[[SUM:.*]] = graph.add %[[Y]], %[[BIAS]]
// CHECK:         graph.reshape %[[SUM]] : tensor<1x2x3x3x3xf32> to tensor<1x6x3x3xf32>
// CHECK-NOT:     graph.conv2d
func.func @conv(%x: tensor<1x4x5x5xf32>, %w: tensor<6x2x3x3xf32>, %b: tensor<6xf32>) -> tensor<1x6x3x3xf32> {
  %c = graph.conv2d %x, %w, %b strides [2, 2] pads [1, 1, 1, 1] dilations [1, 1] group 2 : (tensor<1x4x5x5xf32>, tensor<6x2x3x3xf32>, tensor<6xf32>) -> tensor<1x6x3x3xf32>
  func.return %c : tensor<1x6x3x3xf32>
}

// -----

// Pool windows: the input padded (zeros for an average), one strided slice per kernel offset,
// summed, divided by how many input elements each window covers (padding not counted: 1 at the
// corner, 4 inside).
// CHECK-LABEL: func.func @avg
// CHECK:         %[[P:.*]] = graph.concat %{{.*}}, %{{.*}} axis 3 : {{.*}} -> tensor<1x1x5x5xf32>
// CHECK-COUNT-4: graph.slice %[[P]]
// CHECK-COUNT-3: graph.add
// CHECK:         %[[COUNTS:.*]] = graph.constant dense<{{\[\[\[\[}}1.000000e+00, 2.000000e+00], [2.000000e+00, 4.000000e+00]]]]> : tensor<1x1x2x2xf32>
// CHECK:         graph.div %{{.*}}, %[[COUNTS]]
// CHECK-NOT:     graph.avg_pool2d
func.func @avg(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32> {
  %p = graph.avg_pool2d %x kernel [2, 2] strides [2, 2] pads [1, 1, 0, 0] : tensor<1x1x4x4xf32> to tensor<1x1x2x2xf32>
  func.return %p : tensor<1x1x2x2xf32>
}

// -----

// conv2d with stride 1, one group and channels a multiple of 8: the implicit GEMM over shifted
// rows. The input goes NHWC (a 4-D transpose) and is padded to (N, Hp, Wp, C) in the same layout
// kernel (on the GPU one windowed shared-memory transpose), flattened to (N*Hp*Wp, C) rows of
// pixels and continued by kh*dh*Wp + kw*dw = 16
// zero rows; kernel offset (kh, kw) is the slice of those rows starting kh*7 + kw further down
// (Wp = 7), the slices side by side are the lhs of one matmul with the weights as (kh*kw*C, O);
// the product, on the padded grid, goes back to NCHW (with a bias: a swap of (N, Hp*Wp, O)) and
// is sliced to the output's pixels in the bias's kernel (these are the SHARED checks,
// direct-layout-elements=0, as for products over 2^20 elements). An NHWC input or result (a
// transpose around the convolution) is transposed in one step instead, which composes with it
// (@conv_nhwc); without a bias or an elementwise consumer the product is sliced and transposed
// by one 4-D layout kernel (@conv_implicit_layout_only).
// SHARED-LABEL: func.func @conv_implicit
// SHARED:         %[[T:.*]] = graph.transpose %x perm [0, 2, 3, 1] : tensor<2x16x6x5xf32> to tensor<2x6x5x16xf32>
// SHARED:         %[[H:.*]] = graph.concat %{{.*}}, %[[T]], %{{.*}} axis 1
// SHARED:         %[[P:.*]] = graph.concat %{{.*}}, %[[H]], %{{.*}} axis 2 : {{.*}} -> tensor<2x8x7x16xf32>
// SHARED:         %[[FLAT:.*]] = graph.reshape %[[P]] : tensor<2x8x7x16xf32> to tensor<112x16xf32>
// SHARED:         %[[ROWS:.*]] = graph.concat %[[FLAT]], %{{.*}} axis 0 : (tensor<112x16xf32>, tensor<16x16xf32>) -> tensor<128x16xf32>
// SHARED:         graph.slice %[[ROWS]] starts [0, 0] ends [112, 16] steps [1, 1]
// SHARED:         graph.slice %[[ROWS]] starts [1, 0] ends [113, 16] steps [1, 1]
// SHARED:         graph.slice %[[ROWS]] starts [2, 0] ends [114, 16] steps [1, 1]
// SHARED:         graph.slice %[[ROWS]] starts [7, 0] ends [119, 16] steps [1, 1]
// SHARED-COUNT-4: graph.slice %[[ROWS]]
// SHARED:         %[[LAST:.*]] = graph.slice %[[ROWS]] starts [16, 0] ends [128, 16] steps [1, 1]
// SHARED:         %[[A:.*]] = graph.concat {{.*}}, %[[LAST]] axis 1 : {{.*}} -> tensor<112x144xf32>
// SHARED:         %[[WT:.*]] = graph.transpose %w perm [2, 3, 1, 0] : tensor<8x16x3x3xf32> to tensor<3x3x16x8xf32>
// SHARED:         %[[B:.*]] = graph.reshape %[[WT]] : tensor<3x3x16x8xf32> to tensor<144x8xf32>
// SHARED:         %[[M:.*]] = graph.matmul %[[A]], %[[B]] : (tensor<112x144xf32>, tensor<144x8xf32>) -> tensor<112x8xf32>
// SHARED:         %[[GRID:.*]] = graph.reshape %[[M]] : tensor<112x8xf32> to tensor<2x56x8xf32>
// SHARED:         %[[MT:.*]] = graph.transpose %[[GRID]] perm [0, 2, 1] : tensor<2x56x8xf32> to tensor<2x8x56xf32>
// SHARED:         %[[P:.*]] = graph.reshape %[[MT]] : tensor<2x8x56xf32> to tensor<2x8x8x7xf32>
// SHARED:         %[[Y:.*]] = graph.slice %[[P]] starts [0, 0, 0, 0] ends [2, 8, 6, 5] steps [1, 1, 1, 1]
// SHARED:         graph.add %[[Y]], %{{.*}}
// SHARED-NOT:     graph.conv2d
// Up to direct-layout-elements (2^20 by default) both transposes are 4-D permutations that the
// padding kernel and the epilogue read through (no transpose kernels of their own).
// CHECK-LABEL: func.func @conv_implicit
// CHECK:         %[[T:.*]] = graph.transpose %x perm [0, 2, 3, 1] : tensor<2x16x6x5xf32> to tensor<2x6x5x16xf32>
// CHECK:         %[[H:.*]] = graph.concat %{{.*}}, %[[T]], %{{.*}} axis 1
// CHECK:         %[[M:.*]] = graph.matmul %{{.*}}, %{{.*}} : (tensor<112x144xf32>, tensor<144x8xf32>) -> tensor<112x8xf32>
// CHECK:         %[[GRID:.*]] = graph.reshape %[[M]] : tensor<112x8xf32> to tensor<2x8x7x8xf32>
// CHECK:         %[[S:.*]] = graph.slice %[[GRID]] starts [0, 0, 0, 0] ends [2, 6, 5, 8] steps [1, 1, 1, 1]
// CHECK:         %[[Y:.*]] = graph.transpose %[[S]] perm [0, 3, 1, 2] : tensor<2x6x5x8xf32> to tensor<2x8x6x5xf32>
// CHECK:         graph.add %[[Y]], %{{.*}}
// CHECK-NOT:     graph.conv2d
func.func @conv_implicit(%x: tensor<2x16x6x5xf32>, %w: tensor<8x16x3x3xf32>, %b: tensor<8xf32>) -> tensor<2x8x6x5xf32> {
  %c = graph.conv2d %x, %w, %b strides [1, 1] pads [1, 1, 1, 1] dilations [1, 1] group 1 : (tensor<2x16x6x5xf32>, tensor<8x16x3x3xf32>, tensor<8xf32>) -> tensor<2x8x6x5xf32>
  func.return %c : tensor<2x8x6x5xf32>
}

// -----

// SHARED-LABEL: func.func @conv_implicit_layout_only
// SHARED:         %[[M:.*]] = graph.matmul %{{.*}}, %{{.*}} : (tensor<112x144xf32>, tensor<144x8xf32>) -> tensor<112x8xf32>
// SHARED:         %[[GRID:.*]] = graph.reshape %[[M]] : tensor<112x8xf32> to tensor<2x8x7x8xf32>
// SHARED:         %[[S:.*]] = graph.slice %[[GRID]] starts [0, 0, 0, 0] ends [2, 6, 5, 8] steps [1, 1, 1, 1]
// SHARED:         %[[Y:.*]] = graph.transpose %[[S]] perm [0, 3, 1, 2] : tensor<2x6x5x8xf32> to tensor<2x8x6x5xf32>
// SHARED:         func.return %[[Y]]
func.func @conv_implicit_layout_only(%x: tensor<2x16x6x5xf32>, %w: tensor<8x16x3x3xf32>) -> tensor<2x8x6x5xf32> {
  %c = graph.conv2d %x, %w strides [1, 1] pads [1, 1, 1, 1] dilations [1, 1] group 1 : (tensor<2x16x6x5xf32>, tensor<8x16x3x3xf32>) -> tensor<2x8x6x5xf32>
  func.return %c : tensor<2x8x6x5xf32>
}

// -----

// CHECK-LABEL: func.func @conv_nhwc
// CHECK:         %[[T:.*]] = graph.transpose %{{.*}} perm [0, 2, 3, 1] : tensor<1x8x4x4xf32> to tensor<1x4x4x8xf32>
// CHECK:         graph.concat %{{.*}}, %[[T]], %{{.*}} axis 1
// CHECK:         %[[M:.*]] = graph.matmul
// CHECK:         %[[GRID:.*]] = graph.reshape %[[M]] : tensor<36x8xf32> to tensor<1x6x6x8xf32>
// CHECK:         %[[S:.*]] = graph.slice %[[GRID]] starts [0, 0, 0, 0] ends [1, 4, 4, 8] steps [1, 1, 1, 1]
// CHECK:         %[[Y:.*]] = graph.transpose %[[S]] perm [0, 3, 1, 2] : tensor<1x4x4x8xf32> to tensor<1x8x4x4xf32>
// CHECK:         graph.transpose %[[Y]] perm [0, 2, 3, 1]
func.func @conv_nhwc(%x: tensor<1x4x4x8xf32>, %w: tensor<8x8x3x3xf32>) -> tensor<1x4x4x8xf32> {
  %t = graph.transpose %x perm [0, 3, 1, 2] : tensor<1x4x4x8xf32> to tensor<1x8x4x4xf32>
  %c = graph.conv2d %t, %w strides [1, 1] pads [1, 1, 1, 1] dilations [1, 1] group 1 : (tensor<1x8x4x4xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x4x4xf32>
  %r = graph.transpose %c perm [0, 2, 3, 1] : tensor<1x8x4x4xf32> to tensor<1x4x4x8xf32>
  func.return %r : tensor<1x4x4x8xf32>
}

// -----

// A depthwise conv2d (one input channel per group; two outputs each here) is direct: x viewed as
// (N, C, 1, H, W) and padded, one strided window slice per kernel offset times that offset's
// weights viewed as (1, C, multiplier, 1, 1), summed (one elementwise kernel, no column matrix).
// CHECK-LABEL: func.func @depthwise
// CHECK:         %[[X:.*]] = graph.reshape %x : tensor<2x6x7x7xf32> to tensor<2x6x1x7x7xf32>
// CHECK:         %[[P:.*]] = graph.concat %{{.*}}, %{{.*}}, %{{.*}} axis 4 : {{.*}} -> tensor<2x6x1x9x9xf32>
// CHECK-COUNT-9: graph.slice %[[P]]
// CHECK:         %[[W:.*]] = graph.reshape %w : tensor<12x1x3x3xf32> to tensor<1x6x2x3x3xf32>
// CHECK:         %[[W0:.*]] = graph.slice %[[W]] starts [0, 0, 0, 0, 0] ends [1, 6, 2, 1, 1] steps [1, 1, 1, 1, 1]
// CHECK:         graph.mul %{{.*}}, %[[W0]] : (tensor<2x6x1x4x4xf32>, tensor<1x6x2x1x1xf32>) -> tensor<2x6x2x4x4xf32>
// CHECK-COUNT-8: graph.add
// CHECK:         %[[B:.*]] = graph.reshape %b : tensor<12xf32> to tensor<1x6x2x1x1xf32>
// CHECK:         %[[Y:.*]] = graph.add %{{.*}}, %[[B]]
// CHECK:         graph.reshape %[[Y]] : tensor<2x6x2x4x4xf32> to tensor<2x12x4x4xf32>
// CHECK-NOT:     graph.conv2d
func.func @depthwise(%x: tensor<2x6x7x7xf32>, %w: tensor<12x1x3x3xf32>, %b: tensor<12xf32>) -> tensor<2x12x4x4xf32> {
  %c = graph.conv2d %x, %w, %b strides [2, 2] pads [1, 1, 1, 1] dilations [1, 1] group 6 : (tensor<2x6x7x7xf32>, tensor<12x1x3x3xf32>, tensor<12xf32>) -> tensor<2x12x4x4xf32>
  func.return %c : tensor<2x12x4x4xf32>
}

// -----

// An integer matmul: the products of (..., M, K, 1) and (..., 1, K, N) in i32, summed over K
// (wrapping, as the interpreter's result truncated), one reduction kernel.
// CHECK-LABEL: func.func @integer_matmul
// CHECK:         %[[A:.*]] = graph.reshape %a : tensor<2x3x5xi32> to tensor<2x3x5x1xi32>
// CHECK:         %[[B:.*]] = graph.reshape %b : tensor<5x4xi32> to tensor<1x5x4xi32>
// CHECK:         %[[P:.*]] = graph.mul %[[A]], %[[B]] : (tensor<2x3x5x1xi32>, tensor<1x5x4xi32>) -> tensor<2x3x5x4xi32>
// CHECK:         %[[S:.*]] = graph.reduce_sum %[[P]] axes [2] keepdims true : tensor<2x3x5x4xi32> to tensor<2x3x1x4xi32>
// CHECK:         graph.reshape %[[S]] : tensor<2x3x1x4xi32> to tensor<2x3x4xi32>
// CHECK-NOT:     graph.matmul
func.func @integer_matmul(%a: tensor<2x3x5xi32>, %b: tensor<5x4xi32>) -> tensor<2x3x4xi32> {
  %m = graph.matmul %a, %b : (tensor<2x3x5xi32>, tensor<5x4xi32>) -> tensor<2x3x4xi32>
  func.return %m : tensor<2x3x4xi32>
}
