// A value must be defined before it is used: its definition must dominate the use, as in MLIR
// (xDSL's verifier does not check this). In one block, the definition comes first; in a region of
// several blocks, the defining block dominates the using one; a nested region may use values from
// around it, defined before its op. Uses in unreachable blocks are exempt, as in MLIR.
//
// RUN: mlc-opt %s --split-input-file --verify-diagnostics
// RUN: not mlc-opt %s --split-input-file 2>&1 | filecheck %s

func.func @later_in_the_block(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'graph.relu' op operand #0 does not dominate this use}}
  %0 = graph.relu %1 : tensor<4xf32>
  %1 = graph.neg %a : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// The note points at the definition.
// CHECK:      dominance.mlir:11:3: error: 'graph.relu' op operand #0 does not dominate this use
// CHECK-NEXT:   %0 = graph.relu %1 : tensor<4xf32>
// CHECK-NEXT:   ^^
// CHECK-NEXT: dominance.mlir:12:3: note: operand defined here
// CHECK-NEXT:   %1 = graph.neg %a : tensor<4xf32>

// -----

func.func @own_result(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'graph.add' op operand #1 does not dominate this use}}
  %0 = graph.add %a, %0 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @later_than_the_region(%a: tensor<4xf32>, %c: i1) -> tensor<4xf32> {
  %0 = scf.if %c -> (tensor<4xf32>) {
    // expected-error @+1 {{'scf.yield' op operand #0 does not dominate this use}}
    scf.yield %1 : tensor<4xf32>
  } else {
    scf.yield %a : tensor<4xf32>
  }
  %1 = graph.neg %a : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @block_not_dominating(%a: tensor<4xf32>, %c: i1) -> tensor<4xf32> {
  cf.cond_br %c, ^bb1, ^bb2
^bb1:
  %0 = graph.relu %a : tensor<4xf32>
  cf.br ^bb2
^bb2:
  // expected-error @+1 {{'func.return' op operand #0 does not dominate this use}}
  func.return %0 : tensor<4xf32>
}

// -----

// Valid: the defining block dominates the use; a region uses a value defined before its op; an
// unreachable block uses anything.
// CHECK-LABEL: func.func @valid
func.func @valid(%a: tensor<4xf32>, %c: i1) -> tensor<4xf32> {
  %0 = graph.relu %a : tensor<4xf32>
  %1 = scf.if %c -> (tensor<4xf32>) {
    scf.yield %0 : tensor<4xf32>
  } else {
    scf.yield %a : tensor<4xf32>
  }
  cf.br ^bb1
^bb1:
  func.return %1 : tensor<4xf32>
^bb2:
  func.return %2 : tensor<4xf32>
^bb3:
  %2 = graph.neg %a : tensor<4xf32>
  cf.br ^bb2
}
