// --print-ir-after-all prints the module to stderr after every pass (in the generic form with
// --print-op-generic); stdout holds only the final result.
//
// RUN: mlc-opt %s -p dce,cse --print-ir-after-all 2> %t.stderr | filecheck %s --check-prefix=STDOUT
// RUN: filecheck %s --input-file=%t.stderr
// RUN: mlc-opt %s -p cse --print-ir-after-all --print-op-generic 2>&1 >/dev/null | filecheck %s --check-prefix=GENERIC

func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = graph.exp %a : tensor<4xf32>
  %1 = graph.exp %a : tensor<4xf32>
  %dead = graph.neg %a : tensor<4xf32>
  %2 = graph.add %0, %1 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %2 : tensor<4xf32>
}

// STDOUT-NOT:  IR Dump
// STDOUT:      func.func @f(
// STDOUT-NEXT:   %0 = graph.exp %a : tensor<4xf32>
// STDOUT-NEXT:   %1 = graph.add %0, %0 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// STDOUT-NEXT:   func.return %1 : tensor<4xf32>
// STDOUT-NOT:  IR Dump

// After dce the dead neg is gone but both exps are left; after cse they are merged.
// CHECK:      // -----// IR Dump After dce //----- //
// CHECK-NEXT: builtin.module {
// CHECK-NEXT:   func.func @f(
// CHECK-NEXT:     %0 = graph.exp %a : tensor<4xf32>
// CHECK-NEXT:     %1 = graph.exp %a : tensor<4xf32>
// CHECK-NEXT:     %2 = graph.add %0, %1
// CHECK:      // -----// IR Dump After cse //----- //
// CHECK-NEXT: builtin.module {
// CHECK-NEXT:   func.func @f(
// CHECK-NEXT:     %0 = graph.exp %a : tensor<4xf32>
// CHECK-NEXT:     %1 = graph.add %0, %0
// CHECK-NOT:  IR Dump

// GENERIC:      // -----// IR Dump After cse //----- //
// GENERIC-NEXT: "builtin.module"() ({
// GENERIC:        %0 = "graph.exp"(%a) : (tensor<4xf32>) -> tensor<4xf32>
// GENERIC-NOT:  func.func @f
