// RUN: not mlc-opt %s 2>&1 | filecheck %s --strict-whitespace
func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = graph.sigmod %a : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// An unregistered op is a located parse error that suggests the nearest registered names.

// CHECK-NOT: Traceback
// CHECK:      {{^}}{{.*}}mlc-opt-unknown-op.mlir:3:{{[0-9]+}}: error: Operation graph.sigmod is not registered{{$}}
// CHECK-NEXT: {{^}}  %0 = graph.sigmod %a : tensor<4xf32>{{$}}
// CHECK-NEXT: {{^ +\^+$}}
// CHECK-NEXT: {{^}}note: did you mean 'graph.sigmoid'{{.*}}?{{$}}
// CHECK-NOT:  Traceback
