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
