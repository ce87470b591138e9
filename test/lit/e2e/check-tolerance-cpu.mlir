// RUN: mlc-run %s --device cpu --check --seed 3 | filecheck %s

// --check compares within an error bound derived from the computation: an f32 matmul with
// K = 2048 may differ from the interpreter's float64-then-rounded result by far more than a
// fixed relative tolerance allows where a dot product cancels, and still be right.
// CHECK:      @main on cpu: 2 kernel launches
// CHECK:      check #0: OK (max abs error {{.*}} within the derived bound
// CHECK-NEXT: check #1: OK (max abs error {{.*}} within the derived bound
func.func @main(%a: tensor<32x2048xf32>, %b: tensor<2048x48xf32>, %c: tensor<32x48xf32>) -> (tensor<32x48xf32>, tensor<32x48xf32>) {
  %0 = graph.matmul %a, %b : (tensor<32x2048xf32>, tensor<2048x48xf32>) -> tensor<32x48xf32>
  %1 = graph.sub %0, %c : (tensor<32x48xf32>, tensor<32x48xf32>) -> tensor<32x48xf32>
  %2 = graph.softmax %1 axis 1 : tensor<32x48xf32>
  func.return %1, %2 : tensor<32x48xf32>, tensor<32x48xf32>
}
