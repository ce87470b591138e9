// RUN: mlc-opt %s --split-input-file -p graph-fuse | filecheck %s
// Idempotent: fusing fused IR changes nothing; the printed groups read back.
// RUN: mlc-opt %s --split-input-file -p graph-fuse,graph-fuse | filecheck %s
// RUN: mlc-opt %s --split-input-file -p graph-fuse | mlc-opt --split-input-file | filecheck %s

// An elementwise chain is one group; the function's arguments enter as its operands.
// CHECK-LABEL: func.func @chain(%x: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
// CHECK-NEXT:    %[[G:[a-z0-9_]+]] = graph.fusion elementwise "chain_0_add_exp_neg_tanh" (%[[X:[a-z0-9_]+]] = %x : tensor<4x8xf32>, %[[B:[a-z0-9_]+]] = %b : tensor<8xf32>) -> tensor<4x8xf32> {
// CHECK-NEXT:      %[[A:[a-z0-9_]+]] = graph.add %[[X]], %[[B]]
// CHECK-NEXT:      %[[E:[a-z0-9_]+]] = graph.exp %[[A]]
// CHECK-NEXT:      %[[N:[a-z0-9_]+]] = graph.neg %[[E]]
// CHECK-NEXT:      %[[T:[a-z0-9_]+]] = graph.tanh %[[N]]
// CHECK-NEXT:      graph.yield %[[T]] : tensor<4x8xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[G]] : tensor<4x8xf32>
func.func @chain(%x: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = graph.add %x, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %1 = graph.exp %0 : tensor<4x8xf32>
  %2 = graph.neg %1 : tensor<4x8xf32>
  %3 = graph.tanh %2 : tensor<4x8xf32>
  func.return %3 : tensor<4x8xf32>
}

// -----

// A reduction absorbs its elementwise producers and consumers; two reductions over the same axes
// of the same shape (a softmax written out) share the group.
// CHECK-LABEL: func.func @softmax
// CHECK-NEXT:    %[[G:[a-z0-9_]+]] = graph.fusion reduction "softmax_0_add_reduce_max_sub_exp" (%[[X:[a-z0-9_]+]] = %x : tensor<4x8xf32>, %[[B:[a-z0-9_]+]] = %b : tensor<8xf32>) -> tensor<4x8xf32> {
// CHECK-NEXT:      graph.add
// CHECK-NEXT:      graph.reduce_max
// CHECK-NEXT:      graph.sub
// CHECK-NEXT:      graph.exp
// CHECK-NEXT:      graph.reduce_sum
// CHECK-NEXT:      graph.div
// CHECK-NEXT:      %[[R:[a-z0-9_]+]] = graph.relu
// CHECK-NEXT:      graph.yield %[[R]] : tensor<4x8xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[G]]
func.func @softmax(%x: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = graph.add %x, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %1 = graph.reduce_max %0 axes [1] keepdims true : tensor<4x8xf32> to tensor<4x1xf32>
  %2 = graph.sub %0, %1 : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %3 = graph.exp %2 : tensor<4x8xf32>
  %4 = graph.reduce_sum %3 axes [1] keepdims true : tensor<4x8xf32> to tensor<4x1xf32>
  %5 = graph.div %3, %4 : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %6 = graph.relu %5 : tensor<4x8xf32>
  func.return %6 : tensor<4x8xf32>
}

// -----

// A matmul absorbs its elementwise epilogue (bias add, activation): kind matmul.
// CHECK-LABEL: func.func @matmul_bias_relu
// CHECK-NEXT:    %[[G:[a-z0-9_]+]] = graph.fusion matmul "matmul_bias_relu_0_matmul_add_relu" (%[[X:[a-z0-9_]+]] = %x : tensor<8x16xf32>, %[[W:[a-z0-9_]+]] = %w : tensor<16x32xf32>, %[[B:[a-z0-9_]+]] = %b : tensor<32xf32>) -> tensor<8x32xf32> {
// CHECK-NEXT:      %[[M:[a-z0-9_]+]] = graph.matmul %[[X]], %[[W]]
// CHECK-NEXT:      %[[A:[a-z0-9_]+]] = graph.add %[[M]], %[[B]]
// CHECK-NEXT:      %[[R:[a-z0-9_]+]] = graph.relu %[[A]]
// CHECK-NEXT:      graph.yield %[[R]]
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[G]]
func.func @matmul_bias_relu(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>) -> tensor<8x32xf32> {
  %0 = graph.matmul %x, %w : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %1 = graph.add %0, %b : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  %2 = graph.relu %1 : tensor<8x32xf32>
  func.return %2 : tensor<8x32xf32>
}

// -----

// Two chained matmuls are two groups, each with its epilogue; a matmul takes no producers (the exp
// is a group of its own).
// CHECK-LABEL: func.func @two_matmuls
// CHECK-NEXT:    %[[E:[a-z0-9_]+]] = graph.fusion elementwise "two_matmuls_0_exp" (%{{[a-z0-9_]+}} = %x : tensor<8x8xf32>) -> tensor<8x8xf32> {
// CHECK-NEXT:      graph.exp
// CHECK-NEXT:      graph.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[M1:[a-z0-9_]+]] = graph.fusion matmul "two_matmuls_1_matmul_tanh" (%{{[a-z0-9_]+}} = %[[E]] : tensor<8x8xf32>, %{{[a-z0-9_]+}} = %w1 : tensor<8x8xf32>) -> tensor<8x8xf32> {
// CHECK-NEXT:      graph.matmul
// CHECK-NEXT:      graph.tanh
// CHECK-NEXT:      graph.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[M2:[a-z0-9_]+]] = graph.fusion matmul "two_matmuls_2_matmul_sigmoid" (%{{[a-z0-9_]+}} = %[[M1]] : tensor<8x8xf32>, %{{[a-z0-9_]+}} = %w2 : tensor<8x8xf32>) -> tensor<8x8xf32> {
// CHECK-NEXT:      graph.matmul
// CHECK-NEXT:      graph.sigmoid
// CHECK-NEXT:      graph.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[M2]]
func.func @two_matmuls(%x: tensor<8x8xf32>, %w1: tensor<8x8xf32>, %w2: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = graph.exp %x : tensor<8x8xf32>
  %1 = graph.matmul %0, %w1 : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %2 = graph.tanh %1 : tensor<8x8xf32>
  %3 = graph.matmul %2, %w2 : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %4 = graph.sigmoid %3 : tensor<8x8xf32>
  func.return %4 : tensor<8x8xf32>
}

// -----

// A diamond stays whole: the shared value never leaves the group.
// CHECK-LABEL: func.func @diamond
// CHECK-NEXT:    %d = graph.fusion elementwise "diamond_0_exp_neg_abs_add" (%[[X:[a-z0-9_]+]] = %x : tensor<1024xf32>) -> tensor<1024xf32> {
// CHECK-NEXT:      %a = graph.exp %[[X]]
// CHECK-NEXT:      %b = graph.neg %a
// CHECK-NEXT:      %c = graph.abs %a
// CHECK-NEXT:      %[[D:[a-z0-9_]+]] = graph.add %b, %c
// CHECK-NEXT:      graph.yield %[[D]]
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %d
func.func @diamond(%x: tensor<1024xf32>) -> tensor<1024xf32> {
  %a = graph.exp %x : tensor<1024xf32>
  %b = graph.neg %a : tensor<1024xf32>
  %c = graph.abs %a : tensor<1024xf32>
  %d = graph.add %b, %c : (tensor<1024xf32>, tensor<1024xf32>) -> tensor<1024xf32>
  func.return %d : tensor<1024xf32>
}

// -----

// A group has as many results as values used after it: the reduced sum and the quotient are
// returned, and the quotient also feeds a transpose (a layout op reads its operand from memory,
// so it starts a group of its own).
// CHECK-LABEL: func.func @outputs
// CHECK-NEXT:    %[[S:[a-z0-9_]+]], %[[Q:[a-z0-9_]+]] = graph.fusion reduction "outputs_0_exp_reduce_sum_div" (%{{[a-z0-9_]+}} = %x : tensor<4x8xf32>) -> (tensor<4x1xf32>, tensor<4x8xf32>) {
// CHECK-NEXT:      graph.exp
// CHECK-NEXT:      %[[SUM:[a-z0-9_]+]] = graph.reduce_sum
// CHECK-NEXT:      %[[DIV:[a-z0-9_]+]] = graph.div
// CHECK-NEXT:      graph.yield %[[SUM]], %[[DIV]] : tensor<4x1xf32>, tensor<4x8xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[T:[a-z0-9_]+]] = graph.fusion elementwise "outputs_1_transpose" (%{{[a-z0-9_]+}} = %[[Q]] : tensor<4x8xf32>) -> tensor<4x8xf32> {
// CHECK-NEXT:      graph.transpose
// CHECK-NEXT:      graph.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[Q]], %[[S]], %[[T]]
func.func @outputs(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x1xf32>, tensor<4x8xf32>) {
  %0 = graph.exp %x : tensor<4x8xf32>
  %1 = graph.reduce_sum %0 axes [1] keepdims true : tensor<4x8xf32> to tensor<4x1xf32>
  %2 = graph.div %0, %1 : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %3 = graph.transpose %2 perm [0, 1] : tensor<4x8xf32> to tensor<4x8xf32>
  func.return %2, %1, %3 : tensor<4x8xf32>, tensor<4x1xf32>, tensor<4x8xf32>
}

// -----

// Constants stay outside and enter as operands (once each, however often they are used).
// CHECK-LABEL: func.func @constants
// CHECK-NEXT:    %half = graph.constant dense<5.000000e-01> : tensor<f32>
// CHECK-NEXT:    %row = graph.constant
// CHECK-NEXT:    %[[G:[a-z0-9_]+]] = graph.fusion elementwise "constants_0_mul_add_mul" (%{{[a-z0-9_]+}} = %x : tensor<4x8xf32>, %[[H:[a-z0-9_]+]] = %half : tensor<f32>, %[[R:[a-z0-9_]+]] = %row : tensor<8xf32>) -> tensor<4x8xf32> {
// CHECK-NEXT:      %[[M:[a-z0-9_]+]] = graph.mul %{{[a-z0-9_]+}}, %[[H]]
// CHECK-NEXT:      %[[A:[a-z0-9_]+]] = graph.add %[[M]], %[[R]]
// CHECK-NEXT:      graph.mul %[[A]], %[[H]]
// CHECK-NEXT:      graph.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[G]]
func.func @constants(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %half = graph.constant dense<0.5> : tensor<f32>
  %row = graph.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]> : tensor<8xf32>
  %0 = graph.mul %x, %half : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %1 = graph.add %0, %row : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %2 = graph.mul %1, %half : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  func.return %2 : tensor<4x8xf32>
}

// -----

// Unused ops are erased; pooling is an opaque group of its own; a lone reshape is no group (it is
// a view of its operand's buffer).
// CHECK-LABEL: func.func @leftovers
// CHECK-NOT:     graph.exp
// CHECK-NEXT:    %[[P:[a-z0-9_]+]] = graph.fusion opaque "leftovers_0_max_pool2d" (%{{[a-z0-9_]+}} = %x : tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32> {
// CHECK-NEXT:      graph.max_pool2d
// CHECK-NEXT:      graph.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[A:[a-z0-9_]+]] = graph.fusion elementwise "leftovers_1_add" (%{{[a-z0-9_]+}} = %[[P]] : tensor<1x2x2x2xf32>, %{{[a-z0-9_]+}} = %y : tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32> {
// CHECK-NEXT:      graph.add
// CHECK-NEXT:      graph.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[R:[a-z0-9_]+]] = graph.reshape %[[A]] : tensor<1x2x2x2xf32> to tensor<1x8xf32>
// CHECK-NEXT:    func.return %[[R]]
func.func @leftovers(%x: tensor<1x2x4x4xf32>, %y: tensor<1x2x2x2xf32>) -> tensor<1x8xf32> {
  %dead = graph.exp %y : tensor<1x2x2x2xf32>
  %0 = graph.max_pool2d %x kernel [2, 2] strides [2, 2] pads [0, 0, 0, 0] : tensor<1x2x4x4xf32> to tensor<1x2x2x2xf32>
  %1 = graph.add %0, %y : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %2 = graph.reshape %1 : tensor<1x2x2x2xf32> to tensor<1x8xf32>
  func.return %2 : tensor<1x8xf32>
}

// -----

// What a matmul does not absorb: an epilogue of a larger shape (the matmul's result would be
// broadcast), a reduction, and the consumer of a reduction that drops its axes.
// CHECK-LABEL: func.func @epilogue_limits
// CHECK-NEXT:    %[[M:[a-z0-9_]+]] = graph.fusion matmul "epilogue_limits_0_matmul" (
// CHECK-NEXT:      graph.matmul
// CHECK-NEXT:      graph.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[A:[a-z0-9_]+]] = graph.fusion elementwise "epilogue_limits_1_add" (%{{[a-z0-9_]+}} = %[[M]] : tensor<8x32xf32>, %{{[a-z0-9_]+}} = %z : tensor<4x8x32xf32>) -> tensor<4x8x32xf32> {
// CHECK-NEXT:      graph.add
// CHECK-NEXT:      graph.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[S:[a-z0-9_]+]] = graph.fusion reduction "epilogue_limits_2_reduce_sum" (%{{[a-z0-9_]+}} = %[[M]] : tensor<8x32xf32>) -> tensor<8xf32> {
// CHECK-NEXT:      graph.reduce_sum
// CHECK-NEXT:      graph.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[E:[a-z0-9_]+]] = graph.fusion elementwise "epilogue_limits_3_exp" (%{{[a-z0-9_]+}} = %[[S]] : tensor<8xf32>) -> tensor<8xf32> {
// CHECK-NEXT:      graph.exp
// CHECK-NEXT:      graph.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[A]], %[[E]]
func.func @epilogue_limits(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %z: tensor<4x8x32xf32>) -> (tensor<4x8x32xf32>, tensor<8xf32>) {
  %0 = graph.matmul %x, %w : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %1 = graph.add %0, %z : (tensor<8x32xf32>, tensor<4x8x32xf32>) -> tensor<4x8x32xf32>
  %2 = graph.reduce_sum %0 axes [1] keepdims false : tensor<8x32xf32> to tensor<8xf32>
  %3 = graph.exp %2 : tensor<8xf32>
  func.return %1, %3 : tensor<4x8x32xf32>, tensor<8xf32>
}

// -----

// A memory plan made before fusion no longer describes the function: it is removed.
// CHECK-LABEL: func.func @planned(%x: tensor<1024xf32>) -> tensor<1024xf32> {
// CHECK-NEXT:    graph.fusion elementwise "planned_0_exp_neg"
// CHECK-NEXT:      graph.exp %{{[^ ]+}} : tensor<1024xf32>
// CHECK-NOT:     mlc.buffer
func.func @planned(%x: tensor<1024xf32>) -> tensor<1024xf32> attributes {mlc.memory_plan = {arena_bytes = 4096 : i64}} {
  %0 = graph.exp %x {mlc.buffer = {offset = 0 : i64, size = 4096 : i64}} : tensor<1024xf32>
  %1 = graph.neg %0 : tensor<1024xf32>
  func.return %1 : tensor<1024xf32>
}

// -----

// Declarations and functions of other levels are left alone.
// CHECK-LABEL: func.func private @declaration(tensor<4xf32>) -> tensor<4xf32>
// CHECK-LABEL: func.func @host(%a: memref<4xf32>) -> memref<4xf32> {
// CHECK-NEXT:    func.return %a : memref<4xf32>
func.func private @declaration(tensor<4xf32>) -> tensor<4xf32>
func.func @host(%a: memref<4xf32>) -> memref<4xf32> {
  func.return %a : memref<4xf32>
}

// -----

// An implicit GEMM: a matmul whose lhs is row-shifted slices of one 2-D value (continued by zero
// rows), side by side along K, takes those layout ops into its own region (its kernel reads the
// value at shifted origins), marked with the shifts; a layout op read elsewhere too would not.
// CHECK-LABEL: func.func @shifted
// CHECK:         graph.fusion matmul "shifted_0_implicit_gemm_matmul" ({{.*}}) -> tensor<12x4xf32> attributes {mlc.implicit_gemm = array<i64: 0, 1, 3, 4>} {
// CHECK:           graph.concat %{{.*}}, %{{.*}} axis 0
// CHECK-COUNT-4:   graph.slice
// CHECK:           graph.concat {{.*}} axis 1
// CHECK:           graph.matmul
// CHECK:         graph.fusion elementwise "shifted_1_relu"
func.func @shifted(%x: tensor<12x8xf32>, %w: tensor<32x4xf32>) -> tensor<12x4xf32> {
  %zero = graph.constant dense<0.0> : tensor<f32>
  %zeros = graph.broadcast %zero : tensor<f32> to tensor<4x8xf32>
  %rows = graph.concat %x, %zeros axis 0 : (tensor<12x8xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
  %s0 = graph.slice %rows starts [0, 0] ends [12, 8] steps [1, 1] : tensor<16x8xf32> to tensor<12x8xf32>
  %s1 = graph.slice %rows starts [1, 0] ends [13, 8] steps [1, 1] : tensor<16x8xf32> to tensor<12x8xf32>
  %s2 = graph.slice %rows starts [3, 0] ends [15, 8] steps [1, 1] : tensor<16x8xf32> to tensor<12x8xf32>
  %s3 = graph.slice %rows starts [4, 0] ends [16, 8] steps [1, 1] : tensor<16x8xf32> to tensor<12x8xf32>
  %a = graph.concat %s0, %s1, %s2, %s3 axis 1 : (tensor<12x8xf32>, tensor<12x8xf32>, tensor<12x8xf32>, tensor<12x8xf32>) -> tensor<12x32xf32>
  %m = graph.matmul %a, %w : (tensor<12x32xf32>, tensor<32x4xf32>) -> tensor<12x4xf32>
  %r = graph.relu %m : tensor<12x4xf32>
  func.return %r : tensor<12x4xf32>
}

// -----

// Shifts that are not two digits of the piece number (0, 1, 5 over three pieces) are no implicit
// GEMM: the lhs is its own kernel.
// CHECK-LABEL: func.func @irregular
// CHECK:         graph.fusion elementwise "irregular_0_broadcast_concat_slice_slice"
// CHECK:         graph.fusion matmul "irregular_1_matmul"
func.func @irregular(%x: tensor<12x8xf32>, %w: tensor<24x4xf32>) -> tensor<12x4xf32> {
  %zero = graph.constant dense<0.0> : tensor<f32>
  %zeros = graph.broadcast %zero : tensor<f32> to tensor<5x8xf32>
  %rows = graph.concat %x, %zeros axis 0 : (tensor<12x8xf32>, tensor<5x8xf32>) -> tensor<17x8xf32>
  %s0 = graph.slice %rows starts [0, 0] ends [12, 8] steps [1, 1] : tensor<17x8xf32> to tensor<12x8xf32>
  %s1 = graph.slice %rows starts [1, 0] ends [13, 8] steps [1, 1] : tensor<17x8xf32> to tensor<12x8xf32>
  %s2 = graph.slice %rows starts [5, 0] ends [17, 8] steps [1, 1] : tensor<17x8xf32> to tensor<12x8xf32>
  %a = graph.concat %s0, %s1, %s2 axis 1 : (tensor<12x8xf32>, tensor<12x8xf32>, tensor<12x8xf32>) -> tensor<12x24xf32>
  %m = graph.matmul %a, %w : (tensor<12x24xf32>, tensor<24x4xf32>) -> tensor<12x4xf32>
  func.return %m : tensor<12x4xf32>
}

// -----

// A transpose of the last two dimensions feeding a matmul is an operand layout of the matmul's
// kernel: the transpose joins the group (with the epilogue), `mlc.operand_major` says which
// dimension of each operand is contiguous in memory (the torch linear: both K).
// CHECK-LABEL: func.func @linear
// CHECK-NEXT:    %{{.*}} = graph.fusion matmul "linear_0_transpose_matmul_broadcast_add" (%w_1 = %w : tensor<128x96xf32>, %x_1 = %x : tensor<64x96xf32>, %bias_1 = %bias : tensor<128xf32>) -> tensor<64x128xf32> attributes {mlc.operand_major = ["k", "k"]} {
// CHECK-NEXT:      %wt = graph.transpose %w_1 perm [1, 0]
// CHECK-NEXT:      %y = graph.matmul %x_1, %wt
// CHECK-NEXT:      graph.broadcast
// CHECK-NEXT:      graph.add
// CHECK-NEXT:      graph.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return
func.func @linear(%x: tensor<64x96xf32>, %w: tensor<128x96xf32>, %bias: tensor<128xf32>) -> tensor<64x128xf32> {
  %wt = graph.transpose %w perm [1, 0] : tensor<128x96xf32> to tensor<96x128xf32>
  %y = graph.matmul %x, %wt : (tensor<64x96xf32>, tensor<96x128xf32>) -> tensor<64x128xf32>
  %b = graph.broadcast %bias : tensor<128xf32> to tensor<64x128xf32>
  %z = graph.add %y, %b : (tensor<64x128xf32>, tensor<64x128xf32>) -> tensor<64x128xf32>
  func.return %z : tensor<64x128xf32>
}

// -----

// Both operands transposed, with a batch dimension: the lhs is M-major, the rhs K-major. A
// transpose that also swaps the batch dimension, or that something else reads, keeps its kernel.
// CHECK-LABEL: func.func @batched
// CHECK:         graph.fusion matmul "batched_0_transpose_transpose_matmul" {{.*}} attributes {mlc.operand_major = ["m", "k"]}
// CHECK:         graph.fusion elementwise "batched_1_transpose"
// CHECK:         graph.fusion matmul "batched_2_matmul"
// CHECK-NOT:       mlc.operand_major
// CHECK:         graph.fusion elementwise "batched_3_transpose"
// CHECK:         graph.fusion matmul "batched_4_matmul_add"
// CHECK-NOT:       mlc.operand_major
func.func @batched(%a: tensor<2x8x4xf32>, %b: tensor<2x6x8xf32>, %c: tensor<8x2x4xf32>, %d: tensor<2x4x4xf32>) -> (tensor<2x4x6xf32>, tensor<2x4x4xf32>, tensor<2x4x4xf32>) {
  %at = graph.transpose %a perm [0, 2, 1] : tensor<2x8x4xf32> to tensor<2x4x8xf32>
  %bt = graph.transpose %b perm [0, 2, 1] : tensor<2x6x8xf32> to tensor<2x8x6xf32>
  %p = graph.matmul %at, %bt : (tensor<2x4x8xf32>, tensor<2x8x6xf32>) -> tensor<2x4x6xf32>
  %ct = graph.transpose %c perm [1, 2, 0] : tensor<8x2x4xf32> to tensor<2x4x8xf32>
  %q = graph.matmul %ct, %a : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
  %dt = graph.transpose %d perm [0, 2, 1] : tensor<2x4x4xf32> to tensor<2x4x4xf32>
  %r = graph.matmul %dt, %d : (tensor<2x4x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %s = graph.add %r, %dt : (tensor<2x4x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  func.return %p, %q, %s : tensor<2x4x6xf32>, tensor<2x4x4xf32>, tensor<2x4x4xf32>
}
