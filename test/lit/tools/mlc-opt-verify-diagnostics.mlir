// --verify-diagnostics checks the expected-error annotations of each chunk: the chunk must fail
// with that message at that line. This file passes (exit 0); it exercises every anchor. The
// inputs under Inputs/ must each make it fail (exit 1) and say why.
//
// RUN: mlc-opt %s --split-input-file --verify-diagnostics
// RUN: not mlc-opt %S/Inputs/expected-error-missing.mlir --split-input-file --verify-diagnostics 2>&1 | filecheck %s --check-prefix=MISSING
// RUN: not mlc-opt %S/Inputs/expected-error-different.mlir --verify-diagnostics 2>&1 | filecheck %s --check-prefix=DIFFERENT
// RUN: not mlc-opt %S/Inputs/expected-error-wrong-line.mlir --verify-diagnostics 2>&1 | filecheck %s --check-prefix=LINE
// RUN: not mlc-opt %S/Inputs/expected-error-parse.mlir --verify-diagnostics 2>&1 | filecheck %s --check-prefix=PARSE

func.func @below(%a: tensor<4xi32>) {
  // expected-error @below {{'graph.exp' op operand #0 (x) must have a float element type, got i32}}
  %0 = graph.exp %a : tensor<4xi32>
  func.return
}

// -----

func.func @above(%a: tensor<4xi32>) {
  %0 = graph.exp %a : tensor<4xi32>
  // expected-error @above {{must have a float element type}}
  func.return
}

// -----

func.func @same_line(%a: tensor<4xi32>) {
  %0 = graph.exp %a : tensor<4xi32> // expected-error {{'graph.exp' op}}
  func.return
}

// -----

// expected-error @+3 {{'graph.cmp' op unknown predicate 'lte'}}
func.func @plus(%a: tensor<4xf32>) {
  %c = graph.constant dense<0.0> : tensor<4xf32>
  %0 = graph.cmp lte, %a, %c : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  func.return
}

// -----

func.func @minus(%a: tensor<4xf32>) {
  %0 = graph.cmp lte, %a, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  func.return
  // expected-error @-2 {{unknown predicate 'lte'}}
}

// -----

// Parse errors are checked like verifier errors.
func.func @parse_error(%a: tensor<4xf32>) {
  // expected-error @+1 {{Operation graph.expo is not registered}}
  %0 = graph.expo %a : tensor<4xf32>
  func.return
}

// -----

// A chunk without annotations that verifies is printed as usual.
func.func @fine(%a: tensor<4xf32>) {
  func.return
}

// MISSING:     {{.*}}expected-error-missing.mlir:10: error: expected error "does not broadcast" was not produced
// MISSING-NOT: error:

// DIFFERENT:      {{.*}}expected-error-different.mlir:3: error: expected error "operand #1 (rhs) has element type f16" at line 3, got:
// DIFFERENT-NEXT: {{.*}}expected-error-different.mlir:3:3: error: 'graph.add' op operand #1 (rhs) of shape 3 does not broadcast with lhs of shape 4

// LINE:      {{.*}}expected-error-wrong-line.mlir:4: error: expected error "does not broadcast" at line 4, got:
// LINE-NEXT: {{.*}}expected-error-wrong-line.mlir:3:3: error: 'graph.add' op operand #1 (rhs) of shape 3

// PARSE:      {{.*}}expected-error-parse.mlir:3: error: expected error "does not broadcast" at line 3, got:
// PARSE-NEXT: {{.*}}expected-error-parse.mlir:3:{{[0-9]+}}: error: Expected ':'
