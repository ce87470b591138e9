// RUN: mlc-opt %s --split-input-file -p graph-fold-constants | filecheck %s
// RUN: mlc-opt %s --split-input-file -p 'graph-fold-constants{max-elements=4}' | filecheck %s --check-prefix=CAP
// RUN: mlc-opt %s --split-input-file -p graph-fold-constants | mlc-opt --split-input-file | filecheck %s

// A constant subgraph folds to one constant; the constants it used are erased, and the op that
// also reads an argument stays. An unused op is not folded (dce removes it).
// CHECK-LABEL: func.func @subgraph
// CHECK-NEXT:    %one = graph.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT:    %[[C:.*]] = graph.constant dense<[3.000000e+00, 5.000000e+00, 7.000000e+00, 9.000000e+00]> : tensor<4xf32>
// CHECK-NEXT:    %[[S:.*]] = graph.add %[[C]], %x
// CHECK-NEXT:    %[[DEAD:.*]] = graph.neg %one
// CHECK-NEXT:    func.return %[[S]]
func.func @subgraph(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = graph.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %two = graph.constant dense<2.0> : tensor<f32>
  %one = graph.constant dense<1.0> : tensor<f32>
  %0 = graph.mul %a, %two : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %1 = graph.add %0, %one : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %2 = graph.add %1, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %dead = graph.neg %one : tensor<f32>
  func.return %2 : tensor<4xf32>
}

// -----

// Splats stay splats, whatever the size (the cap does not apply to them): a broadcast of a splat,
// and elementwise ops of splats, are computed on the scalar.
// CHECK-LABEL: func.func @splats
// CHECK-NEXT:    %[[S:.*]] = graph.constant dense<1.41421354> : tensor<1024x1024xf32>
// CHECK-NEXT:    %[[I:.*]] = graph.constant dense<-3> : tensor<8x8xi32>
// CHECK-NEXT:    %[[C:.*]] = graph.constant dense<false> : tensor<1024x1024xi1>
// CHECK-NEXT:    %[[R:.*]] = graph.constant dense<7> : tensor<64xi32>
// CHECK-NEXT:    %[[B:.*]] = graph.constant dense<true> : tensor<4xi1>
// CHECK-NEXT:    func.return %[[S]], %[[I]], %[[C]], %[[R]], %[[B]]
// CAP-LABEL: func.func @splats
// CAP-NEXT:    graph.constant dense<1.41421354> : tensor<1024x1024xf32>
func.func @splats() -> (tensor<1024x1024xf32>, tensor<8x8xi32>, tensor<1024x1024xi1>, tensor<64xi32>, tensor<4xi1>) {
  %two = graph.constant dense<2.0> : tensor<f32>
  %0 = graph.broadcast %two : tensor<f32> to tensor<1024x1024xf32>
  %1 = graph.sqrt %0 : tensor<1024x1024xf32>
  %seven = graph.constant dense<7> : tensor<8x8xi32>
  %minus_two = graph.constant dense<-2> : tensor<i32>
  %2 = graph.div %seven, %minus_two : (tensor<8x8xi32>, tensor<i32>) -> tensor<8x8xi32>
  %3 = graph.cmp lt, %two, %0 : (tensor<f32>, tensor<1024x1024xf32>) -> tensor<1024x1024xi1>
  %4 = graph.reshape %seven : tensor<8x8xi32> to tensor<64xi32>
  %5 = graph.cast %minus_two : tensor<i32> to tensor<i1>
  %6 = graph.broadcast %5 : tensor<i1> to tensor<4xi1>
  func.return %1, %2, %3, %4, %6 : tensor<1024x1024xf32>, tensor<8x8xi32>, tensor<1024x1024xi1>, tensor<64xi32>, tensor<4xi1>
}

// -----

// Layout ops and reductions fold through the interpreter too. With max-elements=4 neither does:
// the transpose's result has 6 elements, and so has the operand the reduction would have to read.
// CHECK-LABEL: func.func @layout_and_reduction
// CHECK-NEXT:    %[[T:.*]] = graph.constant dense<{{\[}}[1, 4], [2, 5], [3, 6]]> : tensor<3x2xi32>
// CHECK-NEXT:    %[[R:.*]] = graph.constant dense<[6, 15]> : tensor<2xi32>
// CHECK-NEXT:    func.return %[[T]], %[[R]]
// CAP-LABEL: func.func @layout_and_reduction
// CAP-NEXT:    graph.constant dense<{{\[}}[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi32>
// CAP-NEXT:    graph.transpose
// CAP-NEXT:    graph.reduce_sum
func.func @layout_and_reduction() -> (tensor<3x2xi32>, tensor<2xi32>) {
  %c = graph.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi32>
  %0 = graph.transpose %c perm [1, 0] : tensor<2x3xi32> to tensor<3x2xi32>
  %1 = graph.reduce_sum %c axes [1] keepdims false : tensor<2x3xi32> to tensor<2xi32>
  func.return %0, %1 : tensor<3x2xi32>, tensor<2xi32>
}

// -----

// A transpose or reshape of a constant that nothing else reads folds whatever max-elements says:
// the folded constant replaces the old one, the same size (a linear layer's transposed weight).
// CAP-LABEL: func.func @single_use_layout
// CAP-NEXT:    %[[T:.*]] = graph.constant dense<{{\[}}[1, 4], [2, 5], [3, 6]]> : tensor<3x2xi32>
// CAP-NEXT:    func.return %[[T]]
func.func @single_use_layout() -> tensor<3x2xi32> {
  %c = graph.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi32>
  %0 = graph.transpose %c perm [1, 0] : tensor<2x3xi32> to tensor<3x2xi32>
  func.return %0 : tensor<3x2xi32>
}

// -----

// Results that the text form cannot hold exactly (NaN, infinities) are not folded: 1/0 stays.
// Ops with a non-constant operand are not touched.
// CHECK-LABEL: func.func @not_folded
// CHECK:         graph.div %one, %zero
// CHECK:         graph.log %zero
// CHECK:         graph.mul %one, %x
func.func @not_folded(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %one = graph.constant dense<1.0> : tensor<4xf32>
  %zero = graph.constant dense<0.0> : tensor<4xf32>
  %0 = graph.div %one, %zero : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = graph.log %zero : tensor<4xf32>
  %2 = graph.mul %one, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %0, %1, %2 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// Integer arithmetic wraps around, division truncates toward zero, float-to-integer casts
// truncate, f16 rounds: exactly as the interpreter says.
// CHECK-LABEL: func.func @exact_semantics
// CHECK-NEXT:    graph.constant dense<[-2147483648, -3]> : tensor<2xi32>
// CHECK-NEXT:    graph.constant dense<[-2, 2]> : tensor<2xi32>
// CHECK-NEXT:    graph.constant dense<[1.000000e+00, 1.000980e+00]> : tensor<2xf16>
func.func @exact_semantics() -> (tensor<2xi32>, tensor<2xi32>, tensor<2xf16>) {
  %big = graph.constant dense<[2147483647, -7]> : tensor<2xi32>
  %small = graph.constant dense<[1, 4]> : tensor<2xi32>
  %0 = graph.add %big, %small : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
  %f = graph.constant dense<[-2.7, 2.7]> : tensor<2xf32>
  %1 = graph.cast %f : tensor<2xf32> to tensor<2xi32>
  %g = graph.constant dense<[1.0001, 1.001]> : tensor<2xf32>
  %2 = graph.cast %g : tensor<2xf32> to tensor<2xf16>
  func.return %0, %1, %2 : tensor<2xi32>, tensor<2xi32>, tensor<2xf16>
}
