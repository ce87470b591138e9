// Pipeline errors name the culprit and the nearest valid spelling, print no traceback, and fail.
//
// RUN: not mlc-opt %s -p convert-grap-to-tile 2>&1 | filecheck %s --check-prefix=PASS
// RUN: not mlc-opt %s --pass-pipeline='builtin.module(func.func(cs))' 2>&1 | filecheck %s --check-prefix=ANCHORED
// RUN: not mlc-opt %s --pass-pipeline='builtin.module(convert-graph-to-tile{num-wraps=8})' 2>&1 | filecheck %s --check-prefix=OPTION
// RUN: not mlc-opt %s -p 'cse{max-depth=2}' 2>&1 | filecheck %s --check-prefix=NO-OPTIONS
// RUN: not mlc-opt %s --pass-pipeline='builtin.module(cse' 2>&1 | filecheck %s --check-prefix=SYNTAX
// RUN: not mlc-opt %s --pass-pipeline='builtin.module(cse) dce' 2>&1 | filecheck %s --check-prefix=TRAILING
// RUN: not mlc-opt %s -p 'convert-graph-to-tile{num-warps=many}' 2>&1 | filecheck %s --check-prefix=VALUE

func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  func.return %a : tensor<4xf32>
}

// PASS-NOT: Traceback
// PASS:     mlc-opt: error: unknown pass 'convert-grap-to-tile' (did you mean 'convert-graph-to-tile'{{.*}}?)
// PASS-NOT: Traceback
// PASS-NOT: builtin.module

// ANCHORED:     mlc-opt: error: unknown pass 'cs' (did you mean 'cse'{{.*}}?)
// ANCHORED-NOT: builtin.module

// OPTION:     mlc-opt: error: pass 'convert-graph-to-tile' has no option 'num-wraps' (did you mean 'num-warps' or 'reduction-warps'?); its options are: elements-per-program, num-warps, reduction-warps
// OPTION-NOT: builtin.module

// NO-OPTIONS: mlc-opt: error: pass 'cse' has no option 'max-depth'; its options are: none

// SYNTAX: mlc-opt: error: missing ')' for anchor 'builtin.module' in 'builtin.module(cse'

// TRAILING: mlc-opt: error: unexpected 'd' at column 21 of 'builtin.module(cse) dce'

// VALUE-NOT: Traceback
// VALUE:     mlc-opt: error: option 'num-warps' of pass 'convert-graph-to-tile' expects a value of type int, got 'many'
// VALUE-NOT: Traceback
