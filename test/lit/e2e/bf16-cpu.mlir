// bf16 compiled for the CPU with seeded random inputs: kernels load bf16, compute in f32 and round
// each stored value to nearest even; every result must match the graph interpreter within the
// derived bound (mlc-run exits 1 otherwise).
// RUN: mlc-run %s --device cpu --check | filecheck %s

// CHECK:      @main on cpu: 2 kernel launches
// CHECK-NEXT:   result #0: bfloat16[4x64]
// CHECK:        result #1: bfloat16[4]
// CHECK:        result #2: float32[4x64]
// CHECK:        check #0: OK
// CHECK-NEXT:   check #1: OK
// CHECK-NEXT:   check #2: OK
func.func @main(%x: tensor<4x48xbf16>, %w: tensor<48x64xbf16>, %b: tensor<64xbf16>) -> (tensor<4x64xbf16>, tensor<4xbf16>, tensor<4x64xf32>) {
  %0 = graph.matmul %x, %w : (tensor<4x48xbf16>, tensor<48x64xbf16>) -> tensor<4x64xbf16>
  %1 = graph.add %0, %b : (tensor<4x64xbf16>, tensor<64xbf16>) -> tensor<4x64xbf16>
  %2 = graph.relu %1 : tensor<4x64xbf16>
  %3 = "graph.softmax"(%2) <{axis = 1 : i64}> : (tensor<4x64xbf16>) -> tensor<4x64xbf16>
  %4 = "graph.reduce_max"(%1) <{axes = array<i64: 1>, keepdims = false}> : (tensor<4x64xbf16>) -> tensor<4xbf16>
  %5 = graph.cast %3 : tensor<4x64xbf16> to tensor<4x64xf32>
  func.return %3, %4, %5 : tensor<4x64xbf16>, tensor<4xbf16>, tensor<4x64xf32>
}
