// RUN: not mlc-opt %s 2>&1 | filecheck %s --strict-whitespace
// RUN: not mlc-opt < %s 2>&1 | filecheck %s --strict-whitespace --check-prefix=STDIN
func.func @f(%a: tensor<4xf32>) {
  %0 = graph.relu %a tensor<4xf32>
  func.return
}

// A parse error prints file:line:col, the source line and a caret under the offending token, and
// no Python traceback; the exit code is non-zero (`not`) and nothing reaches stdout.

// CHECK-NOT: Traceback
// CHECK:      {{^}}{{.*}}mlc-opt-parse-error.mlir:4:22: error: Expected ':'{{$}}
// CHECK-NEXT: {{^}}  %0 = graph.relu %a tensor<4xf32>{{$}}
// CHECK-NEXT: {{^}}                     ^^^^^^{{$}}
// CHECK-NOT:  Traceback
// CHECK-NOT:  builtin.module

// Read from stdin, the file is called <stdin>.
// STDIN:      {{^}}<stdin>:4:22: error: Expected ':'{{$}}
// STDIN-NEXT: {{^}}  %0 = graph.relu %a tensor<4xf32>{{$}}
// STDIN-NEXT: {{^}}                     ^^^^^^{{$}}
