// A verifier failure names the op, the file, line and column where the op starts, and shows the
// source line; nothing is printed to stdout and the exit code is non-zero.
// RUN: not mlc-opt %s 2>&1 | filecheck %s --strict-whitespace
// RUN: not mlc-opt %s -p cse 2>&1 | filecheck %s --strict-whitespace
func.func @f(%a: tensor<4xf32>, %b: tensor<3x4xf32>) -> tensor<4xf32> {
  %0 = graph.exp %a : tensor<4xf32>
  %1 = graph.add %0, %b : (tensor<4xf32>, tensor<3x4xf32>) -> tensor<4xf32>
  func.return %1 : tensor<4xf32>
}

// CHECK-NOT: Traceback
// CHECK:      {{^}}{{.*}}mlc-opt-verify-error.mlir:7:3: error: 'graph.add' op result type tensor<4xf32> does not match the broadcast of the operands; expected tensor<3x4xf32>{{$}}
// CHECK-NEXT: {{^}}  %1 = graph.add %0, %b : (tensor<4xf32>, tensor<3x4xf32>) -> tensor<4xf32>{{$}}
// CHECK-NEXT: {{^}}  ^
// CHECK-NOT:  builtin.module
// CHECK-NOT:  Traceback
