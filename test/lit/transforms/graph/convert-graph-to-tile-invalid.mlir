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

// -----

// A fusion group written by hand (or edited) must be one kernel; each reason is named.
func.func @two_matmuls(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %r = graph.fusion matmul "both" (%a = %x : tensor<8x8xf32>) -> tensor<8x8xf32> {
    %0 = graph.matmul %a, %a : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
    // expected-error @+1 {{'graph.matmul' op the fusion group 'both' cannot be one kernel: one kernel computes one matmul}}
    %1 = graph.matmul %0, %a : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
    graph.yield %1 : tensor<8x8xf32>
  }
  func.return %r : tensor<8x8xf32>
}

// -----

func.func @different_axes(%x: tensor<8x8xf32>) -> (tensor<8x1xf32>, tensor<1x8xf32>) {
  %r, %s = graph.fusion reduction "two_axes" (%a = %x : tensor<8x8xf32>) -> (tensor<8x1xf32>, tensor<1x8xf32>) {
    %0 = graph.reduce_sum %a axes [1] keepdims true : tensor<8x8xf32> to tensor<8x1xf32>
    // expected-error @+1 {{the fusion group 'two_axes' cannot be one kernel: the reductions of one kernel must reduce the same axes of the same shape}}
    %1 = graph.reduce_sum %a axes [0] keepdims true : tensor<8x8xf32> to tensor<1x8xf32>
    graph.yield %0, %1 : tensor<8x1xf32>, tensor<1x8xf32>
  }
  func.return %r, %s : tensor<8x1xf32>, tensor<1x8xf32>
}

// -----

func.func @unrelated_epilogue(%x: tensor<8x8xf32>, %y: tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>) {
  %r, %s = graph.fusion matmul "unrelated" (%a = %x : tensor<8x8xf32>, %b = %y : tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>) {
    // expected-error @+1 {{the fusion group 'unrelated' cannot be one kernel: its elementwise epilogue must read the product, have the product's shape and hold no reduction}}
    %0 = graph.matmul %a, %a : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
    %1 = graph.exp %b : tensor<8x8xf32>
    graph.yield %0, %1 : tensor<8x8xf32>, tensor<8x8xf32>
  }
  func.return %r, %s : tensor<8x8xf32>, tensor<8x8xf32>
}

// -----

func.func @reshape_inside(%x: tensor<4x8xf32>) -> tensor<32xf32> {
  %r = graph.fusion elementwise "reshaped" (%a = %x : tensor<4x8xf32>) -> tensor<32xf32> {
    %0 = graph.exp %a : tensor<4x8xf32>
    // expected-error @+1 {{the fusion group 'reshaped' cannot be one kernel: a reshape can only read a value from outside its group}}
    %1 = graph.reshape %0 : tensor<4x8xf32> to tensor<32xf32>
    %2 = graph.relu %1 : tensor<32xf32>
    graph.yield %2 : tensor<32xf32>
  }
  func.return %r : tensor<32xf32>
}

// -----

func.func @two_domains(%x: tensor<4x8xf32>, %y: tensor<3xf32>) -> (tensor<4x8xf32>, tensor<3xf32>) {
  %r, %s = graph.fusion elementwise "two_domains" (%a = %x : tensor<4x8xf32>, %b = %y : tensor<3xf32>) -> (tensor<4x8xf32>, tensor<3xf32>) {
    %0 = graph.exp %a : tensor<4x8xf32>
    // expected-error @+1 {{the fusion group 'two_domains' cannot be one kernel: its result does not broadcast with the group's shape [4, 8]}}
    %1 = graph.exp %b : tensor<3xf32>
    graph.yield %0, %1 : tensor<4x8xf32>, tensor<3xf32>
  }
  func.return %r, %s : tensor<4x8xf32>, tensor<3xf32>
}
