// RUN: mlc-opt %s --split-input-file --verify-diagnostics -p convert-graph-to-tile

func.func @bf16(%x: tensor<4xbf16>) -> tensor<4xbf16> {
  // expected-error @+1 {{bf16 tensors are not lowered to the tile level yet}}
  %0 = graph.exp %x : tensor<4xbf16>
  func.return %0 : tensor<4xbf16>
}

// -----

func.func @integer_pow(%x: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{integer pow is not supported by the elementwise lowering}}
  %0 = graph.pow %x, %x : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  func.return %0 : tensor<4xi32>
}

// -----

func.func @integer_matmul(%a: tensor<4x4xi32>, %b: tensor<4x4xi32>) -> tensor<4x4xi32> {
  // expected-error @+1 {{matmul of i32 is not lowered yet (f32 and f16 are)}}
  %0 = graph.matmul %a, %b : (tensor<4x4xi32>, tensor<4x4xi32>) -> tensor<4x4xi32>
  func.return %0 : tensor<4x4xi32>
}
