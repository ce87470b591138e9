// RUN: mlc-opt %s --split-input-file -p graph-inline-fusion | filecheck %s
// graph-fuse then graph-inline-fusion gives back the ops of the input, in a valid order.
// RUN: mlc-opt %s --split-input-file -p graph-inline-fusion,graph-fuse,graph-inline-fusion | filecheck %s

// Each fusion is replaced by its body: arguments become the operands, results the yielded values.
// CHECK-LABEL: func.func @groups(%x: tensor<4x8xf32>, %b: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x1xf32>) {
// CHECK-NEXT:    %c = graph.constant dense<2.000000e+00> : tensor<f32>
// CHECK-NEXT:    %[[A:[a-z0-9_]+]] = graph.add %x, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %[[M:[a-z0-9_]+]] = graph.mul %[[A]], %c : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %[[S:[a-z0-9_]+]] = graph.softmax %[[M]] axis 1 : tensor<4x8xf32>
// CHECK-NEXT:    %[[R:[a-z0-9_]+]] = graph.reduce_max %[[M]] axes [1] keepdims true : tensor<4x8xf32> to tensor<4x1xf32>
// CHECK-NEXT:    %[[E:[a-z0-9_]+]] = graph.exp %[[S]] : tensor<4x8xf32>
// CHECK-NEXT:    func.return %[[E]], %[[R]] : tensor<4x8xf32>, tensor<4x1xf32>
// CHECK-NOT:   graph.fusion
func.func @groups(%x: tensor<4x8xf32>, %b: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x1xf32>) {
  %c = graph.constant dense<2.0> : tensor<f32>
  %y, %m = graph.fusion reduction "groups_0" (%a = %x : tensor<4x8xf32>, %bias = %b : tensor<8xf32>, %two = %c : tensor<f32>) -> (tensor<4x8xf32>, tensor<4x1xf32>) {
    %0 = graph.add %a, %bias : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    %1 = graph.mul %0, %two : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
    %2 = graph.softmax %1 axis 1 : tensor<4x8xf32>
    %3 = graph.reduce_max %1 axes [1] keepdims true : tensor<4x8xf32> to tensor<4x1xf32>
    graph.yield %2, %3 : tensor<4x8xf32>, tensor<4x1xf32>
  }
  %z = graph.fusion elementwise (%p = %y : tensor<4x8xf32>) -> tensor<4x8xf32> {
    %4 = graph.exp %p : tensor<4x8xf32>
    graph.yield %4 : tensor<4x8xf32>
  }
  func.return %z, %m : tensor<4x8xf32>, tensor<4x1xf32>
}

// -----

// A fusion that yields its argument leaves the operand itself; the stale memory plan goes.
// CHECK-LABEL: func.func @passthrough(%x: tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT:    func.return %x : tensor<4xf32>
func.func @passthrough(%x: tensor<4xf32>) -> tensor<4xf32> attributes {mlc.memory_plan = {arena_bytes = 0 : i64}} {
  %0 = graph.fusion elementwise (%a = %x : tensor<4xf32>) -> tensor<4xf32> attributes {mlc.buffer = {offset = 0 : i64, size = 16 : i64}} {
    graph.yield %a : tensor<4xf32>
  }
  func.return %0 : tensor<4xf32>
}
