// --split-input-file handles the '// -----' separated chunks independently and separates their
// outputs with '// -----'. An error in one chunk is reported with its line in the whole file, the
// other chunks are still processed, and the exit code is non-zero.
//
// RUN: mlc-opt %s --split-input-file | filecheck %s
// RUN: mlc-opt %s | filecheck %s --check-prefix=WHOLE
// RUN: not mlc-opt %S/Inputs/split-with-error.mlir --split-input-file 2>&1 | filecheck %s --check-prefix=ERROR

func.func @first(%a: tensor<f32>) -> tensor<f32> {
  func.return %a : tensor<f32>
}

// -----

func.func @second(%a: tensor<2xf16>) -> tensor<2xf16> {
  %0 = graph.neg %a : tensor<2xf16>
  func.return %0 : tensor<2xf16>
}

// -----

func.func @third() {
  func.return
}

// Each chunk is its own module.
// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @first(
// CHECK:      {{^}}}
// CHECK-NEXT: // -----
// CHECK-NEXT: builtin.module {
// CHECK-NEXT:   func.func @second(
// CHECK-NEXT:     %0 = graph.neg %a : tensor<2xf16>
// CHECK:      {{^}}}
// CHECK-NEXT: // -----
// CHECK-NEXT: builtin.module {
// CHECK-NEXT:   func.func @third(
// CHECK-NOT:  // -----

// Without the flag the file is one module holding all three functions.
// WHOLE:      builtin.module {
// WHOLE-NEXT:   func.func @first(
// WHOLE-NOT:  builtin.module
// WHOLE:        func.func @second(
// WHOLE-NOT:  builtin.module
// WHOLE:        func.func @third(

// The error in the second chunk is at line 9 of the whole file; the third chunk is still printed.
// ERROR:      builtin.module {
// ERROR-NEXT:   func.func @ok(
// ERROR-DAG:  {{.*}}split-with-error.mlir:9:3: error: 'graph.add' op operand #1 (rhs) of shape 3 does not broadcast with lhs of shape 4
// ERROR-DAG:  func.func @also_ok(
