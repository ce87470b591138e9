// xDSL's cse and dce on graph IR: every graph op is Pure, so equal ops merge and unused ops go.
// RUN: mlc-opt %s --split-input-file -p cse | filecheck %s --check-prefix=CSE
// RUN: mlc-opt %s --split-input-file -p dce | filecheck %s --check-prefix=DCE
// RUN: mlc-opt %s --split-input-file -p cse,dce | filecheck %s --check-prefix=BOTH

// Duplicate constants and ops (same operands, same properties, same types) merge, transitively.
// CSE-LABEL: func.func @duplicates
// CSE-NEXT:    %[[C:.*]] = graph.constant dense<2.000000e+00> : tensor<f32>
// CSE-NEXT:    %[[M:.*]] = graph.mul %x, %[[C]]
// CSE-NEXT:    %[[E:.*]] = graph.exp %[[M]]
// CSE-NEXT:    %[[S:.*]] = graph.add %[[E]], %[[E]]
// CSE-NEXT:    func.return %[[S]]
func.func @duplicates(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c0 = graph.constant dense<2.0> : tensor<f32>
  %c1 = graph.constant dense<2.0> : tensor<f32>
  %0 = graph.mul %x, %c0 : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %1 = graph.mul %x, %c1 : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %2 = graph.exp %0 : tensor<4xf32>
  %3 = graph.exp %1 : tensor<4xf32>
  %4 = graph.add %2, %3 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %4 : tensor<4xf32>
}

// -----

// Ops that differ in a property, an operand order, or a result type do not merge.
// CSE-LABEL: func.func @not_duplicates
// CSE-COUNT-2: graph.cmp
// CSE-COUNT-2: graph.sub
// CSE-COUNT-2: graph.transpose
// CSE-COUNT-2: graph.reshape
// CSE-COUNT-2: graph.constant
func.func @not_duplicates(%x: tensor<2x2xf32>, %y: tensor<2x2xf32>) -> (tensor<2x2xi1>, tensor<2x2xi1>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<4xf32>, tensor<1x4xf32>, tensor<f32>, tensor<f32>) {
  %0 = graph.cmp lt, %x, %y : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xi1>
  %1 = graph.cmp gt, %x, %y : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xi1>
  %2 = graph.sub %x, %y : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %3 = graph.sub %y, %x : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %4 = graph.transpose %x perm [1, 0] : tensor<2x2xf32> to tensor<2x2xf32>
  %5 = graph.transpose %x perm [0, 1] : tensor<2x2xf32> to tensor<2x2xf32>
  %6 = graph.reshape %x : tensor<2x2xf32> to tensor<4xf32>
  %7 = graph.reshape %x : tensor<2x2xf32> to tensor<1x4xf32>
  %8 = graph.constant dense<0.0> : tensor<f32>
  %9 = graph.constant dense<-0.0> : tensor<f32>
  func.return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9 : tensor<2x2xi1>, tensor<2x2xi1>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<4xf32>, tensor<1x4xf32>, tensor<f32>, tensor<f32>
}

// -----

// Unused ops go, and so do the ops only they used; dce alone keeps duplicates. (xDSL's cse also
// erases an op it finds unused, but not the producers that this leaves unused: run dce after it.)
// DCE-LABEL: func.func @dead
// DCE-NEXT:    %[[A:.*]] = graph.abs %x
// DCE-NEXT:    %[[B:.*]] = graph.abs %x
// DCE-NEXT:    %[[S:.*]] = graph.add %[[A]], %[[B]]
// DCE-NEXT:    func.return %[[S]]
// CSE-LABEL: func.func @dead
// CSE:         graph.exp
// CSE-NOT:     graph.neg
// BOTH-LABEL: func.func @dead
// BOTH-NEXT:    %[[A:.*]] = graph.abs %x
// BOTH-NEXT:    %[[S:.*]] = graph.add %[[A]], %[[A]]
// BOTH-NEXT:    func.return %[[S]]
func.func @dead(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c = graph.constant dense<3.0> : tensor<4xf32>
  %0 = graph.exp %c : tensor<4xf32>
  %1 = graph.neg %0 : tensor<4xf32>
  %2 = graph.abs %x : tensor<4xf32>
  %3 = graph.abs %x : tensor<4xf32>
  %4 = graph.add %2, %3 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %4 : tensor<4xf32>
}
