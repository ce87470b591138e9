// The example of spec/graph-dialect.md ("Example, generic form"), verbatim: the generic form of
// the spec must parse, round-trip, and print back in the custom syntax.
//
// RUN: mlc-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC
// RUN: mlc-opt %s --print-op-generic | mlc-opt | filecheck %s
// RUN: mlc-opt %s | filecheck %s

func.func @mlp(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>) -> tensor<8x32xf32> {
  %0 = "graph.matmul"(%x, %w) : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %1 = "graph.add"(%0, %b) : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  %2 = "graph.gelu"(%1) <{approximate = "tanh"}> : (tensor<8x32xf32>) -> tensor<8x32xf32>
  %3 = "graph.softmax"(%2) <{axis = 1 : i64}> : (tensor<8x32xf32>) -> tensor<8x32xf32>
  func.return %3 : tensor<8x32xf32>
}

// GENERIC-LABEL: "func.func"() <{sym_name = "mlp", function_type = (tensor<8x16xf32>, tensor<16x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>}> ({
// GENERIC-NEXT:  ^bb0(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>):
// GENERIC-NEXT:    %0 = "graph.matmul"(%x, %w) : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
// GENERIC-NEXT:    %1 = "graph.add"(%0, %b) : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
// GENERIC-NEXT:    %2 = "graph.gelu"(%1) <{approximate = "tanh"}> : (tensor<8x32xf32>) -> tensor<8x32xf32>
// GENERIC-NEXT:    %3 = "graph.softmax"(%2) <{axis = 1 : i64}> : (tensor<8x32xf32>) -> tensor<8x32xf32>
// GENERIC-NEXT:    "func.return"(%3) : (tensor<8x32xf32>) -> ()

// CHECK-LABEL: func.func @mlp(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>) -> tensor<8x32xf32> {
// CHECK-NEXT:    %0 = graph.matmul %x, %w : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
// CHECK-NEXT:    %1 = graph.add %0, %b : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
// CHECK-NEXT:    %2 = graph.gelu %1 {approximate = "tanh"} : tensor<8x32xf32>
// CHECK-NEXT:    %3 = graph.softmax %2 axis 1 : tensor<8x32xf32>
// CHECK-NEXT:    func.return %3 : tensor<8x32xf32>
// CHECK-NEXT:  }
