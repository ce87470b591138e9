// Exit codes: 0 on success, non-zero (checked with `not`) on every kind of failure, each with a
// message on stderr and no traceback.
//
// RUN: mlc-opt %s -p cse > /dev/null
// RUN: not mlc-opt %s.does-not-exist 2>&1 | filecheck %s --check-prefix=NO-FILE
// RUN: not mlc-opt %s --no-such-flag 2>&1 | filecheck %s --check-prefix=FLAG
// RUN: not mlc-opt %s -p no-such-pass 2>&1 | filecheck %s --check-prefix=PASS
// RUN: not mlc-opt %S/Inputs/split-with-error.mlir --split-input-file 2>&1 | filecheck %s --check-prefix=VERIFY

func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  func.return %a : tensor<4xf32>
}

// NO-FILE-NOT: Traceback
// NO-FILE:     mlc-opt: error: cannot read {{.*}}mlc-opt-exit-codes.mlir.does-not-exist: No such file or directory
// NO-FILE-NOT: Traceback

// FLAG-NOT: Traceback
// FLAG:     mlc-opt: error: unrecognized arguments: --no-such-flag
// FLAG-NOT: Traceback

// PASS-NOT: Traceback
// PASS:     mlc-opt: error: unknown pass 'no-such-pass'
// PASS-NOT: Traceback

// VERIFY-NOT: Traceback
// VERIFY:     error: 'graph.add' op
// VERIFY-NOT: Traceback
