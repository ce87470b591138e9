// Input from stdin when no file is given or the file is '-'; output to a file with -o ('-o -' is
// stdout).
// RUN: mlc-opt < %s | filecheck %s
// RUN: mlc-opt - -o - < %s | filecheck %s
// RUN: mlc-opt -p cse < %s | filecheck %s --check-prefix=CSE
// RUN: mlc-opt %s -p cse -o %t && filecheck %s --check-prefix=CSE --input-file=%t

func.func @twice(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = graph.exp %a : tensor<4xf32>
  %1 = graph.exp %a : tensor<4xf32>
  %2 = graph.add %0, %1 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %2 : tensor<4xf32>
}

// CHECK:      builtin.module {
// CHECK-NEXT:   func.func @twice(%a: tensor<4xf32>) -> tensor<4xf32> {
// CHECK-NEXT:     %0 = graph.exp %a : tensor<4xf32>
// CHECK-NEXT:     %1 = graph.exp %a : tensor<4xf32>
// CHECK-NEXT:     %2 = graph.add %0, %1 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>

// The pass ran on the input: cse merged the two (pure) exps.
// CSE:        func.func @twice(%a: tensor<4xf32>) -> tensor<4xf32> {
// CSE-NEXT:     %0 = graph.exp %a : tensor<4xf32>
// CSE-NEXT:     %1 = graph.add %0, %0 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CSE-NEXT:     func.return %1 : tensor<4xf32>
