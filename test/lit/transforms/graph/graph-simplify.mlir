// RUN: mlc-opt %s --split-input-file -p graph-simplify | filecheck %s
// RUN: mlc-opt %s --split-input-file -p graph-simplify | mlc-opt --split-input-file | filecheck %s

// x + (-0.0), x * 1, x / 1, x - (+0.0), x ** 1 are x; the constants they no longer use are erased.
// CHECK-LABEL: func.func @identities
// CHECK-SAME:    (%x: tensor<4xf32>, %i: tensor<4xi32>)
// CHECK-NOT:     graph.
// CHECK:         func.return %x, %x, %x, %x, %x, %i : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xi32>
func.func @identities(%x: tensor<4xf32>, %i: tensor<4xi32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xi32>) {
  %negative_zero = graph.constant dense<-0.0> : tensor<f32>
  %zero = graph.constant dense<0.0> : tensor<f32>
  %one = graph.constant dense<1.0> : tensor<4xf32>
  %integer_zero = graph.constant dense<0> : tensor<i32>
  %0 = graph.add %negative_zero, %x : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = graph.mul %x, %one : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %2 = graph.div %x, %one : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %3 = graph.sub %x, %zero : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %4 = graph.pow %x, %one : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %5 = graph.add %i, %integer_zero : (tensor<4xi32>, tensor<i32>) -> tensor<4xi32>
  func.return %0, %1, %2, %3, %4, %5 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xi32>
}

// -----

// When the constant is larger than x, the result type is kept: x is broadcast.
// CHECK-LABEL: func.func @keeps_the_result_type
// CHECK-NEXT:    %[[B:.*]] = graph.broadcast %x : tensor<4xf32> to tensor<3x4xf32>
// CHECK-NEXT:    func.return %[[B]] : tensor<3x4xf32>
func.func @keeps_the_result_type(%x: tensor<4xf32>) -> tensor<3x4xf32> {
  %one = graph.constant dense<1.0> : tensor<3x1xf32>
  %0 = graph.mul %one, %x : (tensor<3x1xf32>, tensor<4xf32>) -> tensor<3x4xf32>
  func.return %0 : tensor<3x4xf32>
}

// -----

// Float rules that are not equivalences stay: NaN * 0 is NaN, -0.0 + (+0.0) is +0.0,
// inf - inf is NaN, +0.0 - (+0.0) is +0.0 (not -0.0), and 2 * x is no identity at all.
// CHECK-LABEL: func.func @float_rules_that_do_not_hold
// CHECK:         graph.mul %x, %zero
// CHECK:         graph.add %x, %zero
// CHECK:         graph.sub %x, %x
// CHECK:         graph.sub %zero, %x
// CHECK:         graph.mul %x, %two
func.func @float_rules_that_do_not_hold(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %zero = graph.constant dense<0.0> : tensor<f32>
  %two = graph.constant dense<2.0> : tensor<f32>
  %0 = graph.mul %x, %zero : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %1 = graph.add %x, %zero : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %2 = graph.sub %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %3 = graph.sub %zero, %x : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
  %4 = graph.mul %x, %two : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  func.return %0, %1, %2, %3, %4 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// For integers they hold: x * 0 and x - x are 0, 0 - x is -x.
// CHECK-LABEL: func.func @integer_zeros
// CHECK-DAG:     %[[ZERO:.*]] = graph.constant dense<0> : tensor<2x4xi64>
// CHECK-DAG:     %[[SELF:.*]] = graph.constant dense<0> : tensor<4xi64>
// CHECK-DAG:     %[[NEG:.*]] = graph.neg %x : tensor<4xi64>
// CHECK:         func.return %[[ZERO]], %[[SELF]], %[[NEG]]
func.func @integer_zeros(%x: tensor<4xi64>) -> (tensor<2x4xi64>, tensor<4xi64>, tensor<4xi64>) {
  %zero = graph.constant dense<0> : tensor<2x1xi64>
  %0 = graph.mul %x, %zero : (tensor<4xi64>, tensor<2x1xi64>) -> tensor<2x4xi64>
  %1 = graph.sub %x, %x : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  %scalar_zero = graph.constant dense<0> : tensor<i64>
  %2 = graph.sub %scalar_zero, %x : (tensor<i64>, tensor<4xi64>) -> tensor<4xi64>
  func.return %0, %1, %2 : tensor<2x4xi64>, tensor<4xi64>, tensor<4xi64>
}

// -----

// x * -1 and x / -1 are -x; -(-x) is x; |-x| is |x|; relu and abs are idempotent.
// CHECK-LABEL: func.func @signs
// CHECK-NEXT:    %[[N:.*]] = graph.neg %x : tensor<4xf16>
// CHECK-NEXT:    %[[A:.*]] = graph.abs %x : tensor<4xf16>
// CHECK-NEXT:    %[[R:.*]] = graph.relu %x : tensor<4xf16>
// CHECK-NEXT:    func.return %[[N]], %x, %[[A]], %[[R]]
func.func @signs(%x: tensor<4xf16>) -> (tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>) {
  %minus_one = graph.constant dense<-1.0> : tensor<f16>
  %0 = graph.mul %x, %minus_one : (tensor<4xf16>, tensor<f16>) -> tensor<4xf16>
  %1 = graph.div %0, %minus_one : (tensor<4xf16>, tensor<f16>) -> tensor<4xf16>
  %2 = graph.neg %x : tensor<4xf16>
  %3 = graph.abs %2 : tensor<4xf16>
  %4 = graph.abs %3 : tensor<4xf16>
  %5 = graph.relu %x : tensor<4xf16>
  %6 = graph.relu %5 : tensor<4xf16>
  func.return %0, %1, %4, %6 : tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>
}

// -----

// relu(|x|) is |x| for floats, but not for integers: |INT_MIN| wraps to INT_MIN < 0.
// CHECK-LABEL: func.func @relu_of_abs
// CHECK-NEXT:    %[[A:.*]] = graph.abs %x : tensor<4xf32>
// CHECK-NEXT:    %[[I:.*]] = graph.abs %i : tensor<4xi32>
// CHECK-NEXT:    %[[R:.*]] = graph.relu %[[I]] : tensor<4xi32>
// CHECK-NEXT:    func.return %[[A]], %[[R]]
func.func @relu_of_abs(%x: tensor<4xf32>, %i: tensor<4xi32>) -> (tensor<4xf32>, tensor<4xi32>) {
  %0 = graph.abs %x : tensor<4xf32>
  %1 = graph.relu %0 : tensor<4xf32>
  %2 = graph.abs %i : tensor<4xi32>
  %3 = graph.relu %2 : tensor<4xi32>
  func.return %1, %3 : tensor<4xf32>, tensor<4xi32>
}

// -----

// max(x, x), min(x, x) and where(c, x, x) are x (broadcast to the condition's shape); a splat
// condition picks a branch; x ** 0 is 1.
// CHECK-LABEL: func.func @selections
// CHECK-DAG:     %[[B:.*]] = graph.broadcast %x : tensor<4xf32> to tensor<2x4xf32>
// CHECK-DAG:     %[[ONE:.*]] = graph.constant dense<1.000000e+00> : tensor<4xf32>
// CHECK:         func.return %x, %x, %[[B]], %y, %[[ONE]]
func.func @selections(%x: tensor<4xf32>, %y: tensor<4xf32>, %c: tensor<2x4xi1>) -> (tensor<4xf32>, tensor<4xf32>, tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %0 = graph.max %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = graph.min %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %2 = graph.where %c, %x, %x : (tensor<2x4xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %false = graph.constant dense<false> : tensor<4xi1>
  %3 = graph.where %false, %x, %y : (tensor<4xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %zero = graph.constant dense<0.0> : tensor<f32>
  %4 = graph.pow %x, %zero : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  func.return %0, %1, %2, %3, %4 : tensor<4xf32>, tensor<4xf32>, tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// Reshapes, broadcasts and casts to their own type vanish; chains of them compose.
// CHECK-LABEL: func.func @layout_chains
// CHECK-NEXT:    %[[R:.*]] = graph.reshape %x : tensor<2x6xf32> to tensor<3x4xf32>
// CHECK-NEXT:    %[[B:.*]] = graph.broadcast %b : tensor<4xf32> to tensor<2x3x4xf32>
// CHECK-NEXT:    func.return %x, %[[R]], %[[B]]
func.func @layout_chains(%x: tensor<2x6xf32>, %b: tensor<4xf32>) -> (tensor<2x6xf32>, tensor<3x4xf32>, tensor<2x3x4xf32>) {
  %0 = graph.reshape %x : tensor<2x6xf32> to tensor<2x6xf32>
  %1 = graph.broadcast %0 : tensor<2x6xf32> to tensor<2x6xf32>
  %2 = graph.cast %1 : tensor<2x6xf32> to tensor<2x6xf32>
  %3 = graph.reshape %x : tensor<2x6xf32> to tensor<12xf32>
  %4 = graph.reshape %3 : tensor<12xf32> to tensor<3x4xf32>
  %5 = graph.broadcast %b : tensor<4xf32> to tensor<3x4xf32>
  %6 = graph.broadcast %5 : tensor<3x4xf32> to tensor<2x3x4xf32>
  func.return %2, %4, %6 : tensor<2x6xf32>, tensor<3x4xf32>, tensor<2x3x4xf32>
}

// -----

// A reshape back to the original shape composes to nothing; an inner op that has other users stays.
// CHECK-LABEL: func.func @round_trip_reshape
// CHECK-NEXT:    %[[R:.*]] = graph.reshape %x : tensor<2x6xf32> to tensor<12xf32>
// CHECK-NEXT:    func.return %x, %[[R]]
func.func @round_trip_reshape(%x: tensor<2x6xf32>) -> (tensor<2x6xf32>, tensor<12xf32>) {
  %0 = graph.reshape %x : tensor<2x6xf32> to tensor<12xf32>
  %1 = graph.reshape %0 : tensor<12xf32> to tensor<2x6xf32>
  func.return %1, %0 : tensor<2x6xf32>, tensor<12xf32>
}

// -----

// Lossless inner casts drop out (f16 -> f32 -> f16 is x; f16 -> f32 -> i32 is f16 -> i32);
// lossy ones stay (f32 -> f16 -> f32 rounds, i32 -> f32 -> i32 rounds large integers).
// CHECK-LABEL: func.func @casts
// CHECK-NEXT:    %[[DIRECT:.*]] = graph.cast %h : tensor<4xf16> to tensor<4xi32>
// CHECK-NEXT:    %[[LOSSY1:.*]] = graph.cast %x : tensor<4xf32> to tensor<4xf16>
// CHECK-NEXT:    %[[LOSSY2:.*]] = graph.cast %[[LOSSY1]] : tensor<4xf16> to tensor<4xf32>
// CHECK-NEXT:    %[[LOSSY3:.*]] = graph.cast %i : tensor<4xi32> to tensor<4xf32>
// CHECK-NEXT:    %[[LOSSY4:.*]] = graph.cast %[[LOSSY3]] : tensor<4xf32> to tensor<4xi32>
// CHECK-NEXT:    func.return %h, %[[DIRECT]], %[[LOSSY2]], %[[LOSSY4]]
func.func @casts(%h: tensor<4xf16>, %x: tensor<4xf32>, %i: tensor<4xi32>) -> (tensor<4xf16>, tensor<4xi32>, tensor<4xf32>, tensor<4xi32>) {
  %0 = graph.cast %h : tensor<4xf16> to tensor<4xf32>
  %1 = graph.cast %0 : tensor<4xf32> to tensor<4xf16>
  %2 = graph.cast %0 : tensor<4xf32> to tensor<4xi32>
  %3 = graph.cast %x : tensor<4xf32> to tensor<4xf16>
  %4 = graph.cast %3 : tensor<4xf16> to tensor<4xf32>
  %5 = graph.cast %i : tensor<4xi32> to tensor<4xf32>
  %6 = graph.cast %5 : tensor<4xf32> to tensor<4xi32>
  func.return %1, %2, %4, %6 : tensor<4xf16>, tensor<4xi32>, tensor<4xf32>, tensor<4xi32>
}

// -----

// Transposes compose (perm [1, 2, 0] after [2, 0, 1] is the identity; negative axes count from
// the end); a transpose by the identity permutation vanishes.
// CHECK-LABEL: func.func @transposes
// CHECK-NEXT:    %[[T:.*]] = graph.transpose %x perm [1, 0, 2] : tensor<2x3x4xf32> to tensor<3x2x4xf32>
// CHECK-NEXT:    func.return %x, %[[T]], %x
func.func @transposes(%x: tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<3x2x4xf32>, tensor<2x3x4xf32>) {
  %0 = "graph.transpose"(%x) <{perm = array<i64: 2, 0, 1>}> : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  %1 = "graph.transpose"(%0) <{perm = array<i64: 1, -1, 0>}> : (tensor<4x2x3xf32>) -> tensor<2x3x4xf32>
  %2 = "graph.transpose"(%0) <{perm = array<i64: 2, 1, 0>}> : (tensor<4x2x3xf32>) -> tensor<3x2x4xf32>
  %3 = "graph.transpose"(%x) <{perm = array<i64: 0, 1, 2>}> : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  func.return %1, %2, %3 : tensor<2x3x4xf32>, tensor<3x2x4xf32>, tensor<2x3x4xf32>
}

// -----

// A transpose that moves only axes of size 1 (a batch of one behind the sequence) is a reshape;
// one that reorders two longer axes stays.
// CHECK-LABEL: func.func @unit_axis_transposes
// CHECK-NEXT:    %[[R:.*]] = graph.reshape %x : tensor<1x8x4xf16> to tensor<8x1x4xf16>
// CHECK-NEXT:    %[[T:.*]] = graph.transpose %x perm [2, 0, 1] : tensor<1x8x4xf16> to tensor<4x1x8xf16>
// CHECK-NEXT:    func.return %[[R]], %[[T]]
func.func @unit_axis_transposes(%x: tensor<1x8x4xf16>) -> (tensor<8x1x4xf16>, tensor<4x1x8xf16>) {
  %0 = "graph.transpose"(%x) <{perm = array<i64: 1, 0, 2>}> : (tensor<1x8x4xf16>) -> tensor<8x1x4xf16>
  %1 = "graph.transpose"(%x) <{perm = array<i64: 2, 0, 1>}> : (tensor<1x8x4xf16>) -> tensor<4x1x8xf16>
  func.return %0, %1 : tensor<8x1x4xf16>, tensor<4x1x8xf16>
}

// -----

// PyTorch's head split (S=4, B=2, H=2, d=8): the projection's (S*B, 3*H*d) rows viewed as
// (S, B, 3, H*d), the k third selected, viewed as (S, B*H, d), transposed, viewed as (B, H, S, d):
// one strided view of the projection, written as reshape, slice, transpose.
// CHECK-LABEL: func.func @head_split
// CHECK-NEXT:    %[[R:.*]] = graph.reshape %p : tensor<8x48xf16> to tensor<4x2x6x8xf16>
// CHECK-NEXT:    %[[S:.*]] = graph.slice %[[R]] starts [0, 0, 2, 0] ends [4, 2, 4, 8] steps [1, 1, 1, 1] : tensor<4x2x6x8xf16> to tensor<4x2x2x8xf16>
// CHECK-NEXT:    %[[T:.*]] = graph.transpose %[[S]] perm [1, 2, 0, 3] : tensor<4x2x2x8xf16> to tensor<2x2x4x8xf16>
// CHECK-NEXT:    func.return %[[T]]
func.func @head_split(%p: tensor<8x48xf16>) -> tensor<2x2x4x8xf16> {
  %0 = graph.reshape %p : tensor<8x48xf16> to tensor<4x2x3x16xf16>
  %1 = "graph.transpose"(%0) <{perm = array<i64: 2, 0, 1, 3>}> : (tensor<4x2x3x16xf16>) -> tensor<3x4x2x16xf16>
  %2 = graph.slice %1 starts [1, 0, 0, 0] ends [2, 4, 2, 16] steps [1, 1, 1, 1] : tensor<3x4x2x16xf16> to tensor<1x4x2x16xf16>
  %3 = graph.reshape %2 : tensor<1x4x2x16xf16> to tensor<4x4x8xf16>
  %4 = "graph.transpose"(%3) <{perm = array<i64: 1, 0, 2>}> : (tensor<4x4x8xf16>) -> tensor<4x4x8xf16>
  %5 = graph.reshape %4 : tensor<4x4x8xf16> to tensor<2x2x4x8xf16>
  func.return %5 : tensor<2x2x4x8xf16>
}

// -----

// A bias per column and a relu after a reshape that keeps the last axis move before it (where a
// matmul's epilogue can take them); a bias varying along another axis stays.
// CHECK-LABEL: func.func @elementwise_before_reshape
// CHECK-NEXT:    %[[A:.*]] = graph.add %x, %b : (tensor<6x4xf32>, tensor<4xf32>) -> tensor<6x4xf32>
// CHECK-NEXT:    %[[R:.*]] = graph.relu %[[A]] : tensor<6x4xf32>
// CHECK-NEXT:    %[[V:.*]] = graph.reshape %[[R]] : tensor<6x4xf32> to tensor<3x2x4xf32>
// CHECK-NEXT:    %[[W:.*]] = graph.reshape %x : tensor<6x4xf32> to tensor<3x2x4xf32>
// CHECK-NEXT:    %[[C:.*]] = graph.add %[[W]], %c : (tensor<3x2x4xf32>, tensor<2x1xf32>) -> tensor<3x2x4xf32>
// CHECK-NEXT:    func.return %[[V]], %[[C]]
func.func @elementwise_before_reshape(%x: tensor<6x4xf32>, %b: tensor<4xf32>, %c: tensor<2x1xf32>) -> (tensor<3x2x4xf32>, tensor<3x2x4xf32>) {
  %0 = graph.reshape %x : tensor<6x4xf32> to tensor<3x2x4xf32>
  %1 = graph.add %0, %b : (tensor<3x2x4xf32>, tensor<4xf32>) -> tensor<3x2x4xf32>
  %2 = graph.relu %1 : tensor<3x2x4xf32>
  %3 = graph.reshape %x : tensor<6x4xf32> to tensor<3x2x4xf32>
  %4 = graph.add %3, %c : (tensor<3x2x4xf32>, tensor<2x1xf32>) -> tensor<3x2x4xf32>
  func.return %2, %4 : tensor<3x2x4xf32>, tensor<3x2x4xf32>
}

// -----

// A reshape to or from a rank-0 tensor has no last axis to keep: an elementwise op after it stays
// where it is (found by random programs; it was an internal compiler error).
// CHECK-LABEL: func.func @elementwise_after_reshape_of_rank_zero
// CHECK-NEXT:    %[[R:.*]] = graph.reshape %x : tensor<1xf32> to tensor<f32>
// CHECK-NEXT:    %[[N:.*]] = graph.neg %[[R]] : tensor<f32>
// CHECK-NEXT:    %[[S:.*]] = graph.reshape %y : tensor<f32> to tensor<1x1xf32>
// CHECK-NEXT:    %[[E:.*]] = graph.exp %[[S]] : tensor<1x1xf32>
// CHECK-NEXT:    func.return %[[N]], %[[E]]
func.func @elementwise_after_reshape_of_rank_zero(%x: tensor<1xf32>, %y: tensor<f32>) -> (tensor<f32>, tensor<1x1xf32>) {
  %0 = graph.reshape %x : tensor<1xf32> to tensor<f32>
  %1 = graph.neg %0 : tensor<f32>
  %2 = graph.reshape %y : tensor<f32> to tensor<1x1xf32>
  %3 = graph.exp %2 : tensor<1x1xf32>
  func.return %1, %3 : tensor<f32>, tensor<1x1xf32>
}

// -----

// Ops no rule applies to are left exactly as they are.
// CHECK-LABEL: func.func @nothing_to_do
// CHECK-NEXT:    %[[E:.*]] = graph.exp %x : tensor<4xf32>
// CHECK-NEXT:    %[[S:.*]] = graph.add %[[E]], %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    func.return %[[S]]
func.func @nothing_to_do(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = graph.exp %x : tensor<4xf32>
  %1 = graph.add %0, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %1 : tensor<4xf32>
}

// -----

// A batch-first input transposed to (S, B, K) for a linear layer whose result layout ops read
// (the head split of multi-head attention): the product reads the rows in place, its bias moves
// before the permutation, and the permutation composes with the head split into one view.
// CHECK-LABEL: func.func @rows_permuted
// CHECK-NEXT:    %[[X:.*]] = graph.reshape %x : tensor<2x3x4xf32> to tensor<6x4xf32>
// CHECK-NEXT:    %[[P:.*]] = graph.matmul %[[X]], %w
// CHECK-NEXT:    %[[B:.*]] = graph.add %[[P]], %b : (tensor<6x6xf32>, tensor<6xf32>) -> tensor<6x6xf32>
// CHECK-NEXT:    %[[V:.*]] = graph.reshape %[[B]] : tensor<6x6xf32> to tensor<1x2x3x6xf32>
// CHECK-NEXT:    graph.slice %[[V]] starts [0, 0, 0, 3]
// CHECK-NOT:     graph.transpose
func.func @rows_permuted(%x: tensor<2x3x4xf32>, %w: tensor<4x6xf32>, %b: tensor<6xf32>) -> tensor<2x1x3x3xf32> {
  %0 = graph.transpose %x perm [1, 0, 2] : tensor<2x3x4xf32> to tensor<3x2x4xf32>
  %1 = graph.reshape %0 : tensor<3x2x4xf32> to tensor<6x4xf32>
  %2 = graph.matmul %1, %w : (tensor<6x4xf32>, tensor<4x6xf32>) -> tensor<6x6xf32>
  %3 = graph.reshape %2 : tensor<6x6xf32> to tensor<3x2x6xf32>
  %4 = graph.add %3, %b : (tensor<3x2x6xf32>, tensor<6xf32>) -> tensor<3x2x6xf32>
  %5 = graph.reshape %4 : tensor<3x2x6xf32> to tensor<3x2x2x3xf32>
  %6 = graph.slice %5 starts [0, 0, 1, 0] ends [3, 2, 2, 3] steps [1, 1, 1, 1] : tensor<3x2x2x3xf32> to tensor<3x2x1x3xf32>
  %7 = graph.transpose %6 perm [1, 2, 0, 3] : tensor<3x2x1x3xf32> to tensor<2x1x3x3xf32>
  func.return %7 : tensor<2x1x3x3xf32>
}

// -----

// A product read by other ops than layout ops keeps its permuted operand (moving the permutation
// to the result would write a transposed copy there instead).
// CHECK-LABEL: func.func @rows_permuted_kept
// CHECK-NEXT:    graph.transpose %x perm [1, 0, 2]
func.func @rows_permuted_kept(%x: tensor<2x3x4xf32>, %w: tensor<4x6xf32>) -> tensor<6x6xf32> {
  %0 = graph.transpose %x perm [1, 0, 2] : tensor<2x3x4xf32> to tensor<3x2x4xf32>
  %1 = graph.reshape %0 : tensor<3x2x4xf32> to tensor<6x4xf32>
  %2 = graph.matmul %1, %w : (tensor<6x4xf32>, tensor<4x6xf32>) -> tensor<6x6xf32>
  %3 = graph.relu %2 : tensor<6x6xf32>
  func.return %3 : tensor<6x6xf32>
}
