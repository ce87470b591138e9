// Pipelines follow MLIR's nesting rules. The input is a module, so passes sit in
// 'builtin.module(...)'; 'func.func(...)' inside it runs function passes (cse, canonicalize, the
// graph rewrites, ...) on each function in turn; whole-module passes (conversions, named
// pipelines) cannot nest in 'func.func', and a pipeline cannot start at 'func.func'. Each refusal
// names the pass and the anchor.
//
// RUN: mlc-opt %s --pass-pipeline='builtin.module(func.func(cse))' | filecheck %s
// RUN: mlc-opt %s --pass-pipeline='builtin.module(func.func(cse), func.func(graph-simplify))' | filecheck %s --check-prefix=TWO
// RUN: not mlc-opt %s --pass-pipeline='func.func(cse)' 2>&1 | filecheck %s --check-prefix=TOP
// RUN: not mlc-opt %s --pass-pipeline='builtin.module(func.func(convert-graph-to-tile))' 2>&1 | filecheck %s --check-prefix=MODULE-PASS
// RUN: not mlc-opt %s --pass-pipeline='cse' 2>&1 | filecheck %s --check-prefix=BARE

func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = graph.exp %a : tensor<4xf32>
  %1 = graph.exp %a : tensor<4xf32>
  %2 = graph.add %0, %1 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %2 : tensor<4xf32>
}

func.func @g(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = graph.neg %a : tensor<4xf32>
  %1 = graph.neg %a : tensor<4xf32>
  %2 = graph.neg %1 : tensor<4xf32>
  %3 = graph.mul %0, %2 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %3 : tensor<4xf32>
}

// cse ran on both functions.
// CHECK-LABEL: func.func @f(
// CHECK-NEXT:    %0 = graph.exp %a : tensor<4xf32>
// CHECK-NEXT:    %1 = graph.add %0, %0
// CHECK-LABEL: func.func @g(
// CHECK-NEXT:    %0 = graph.neg %a : tensor<4xf32>
// CHECK-NEXT:    %1 = graph.neg %0 : tensor<4xf32>
// CHECK-NEXT:    %2 = graph.mul %0, %1

// Then graph-simplify, in a second anchor, removed the double negation.
// TWO-LABEL: func.func @g(
// TWO-NEXT:    %0 = graph.neg %a : tensor<4xf32>
// TWO-NEXT:    %1 = graph.mul %0, %a

// TOP:         mlc-opt: error: 'func.func(...)' cannot run on the input, which is a 'builtin.module'; nest it: 'builtin.module(func.func(...))'
// MODULE-PASS: mlc-opt: error: pass 'convert-graph-to-tile' runs on the whole module and cannot be nested in 'func.func'
// BARE:        mlc-opt: error: pass 'cse' is not nested in an anchor; the input is a module, so write 'builtin.module(cse)'
