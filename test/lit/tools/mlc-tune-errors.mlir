// mlc-tune's bad inputs: a message on stderr, exit code 1 (argparse's usage errors: 2), no
// traceback. (Tuning itself is tested in test/python/tuning/.)
//
// RUN: not mlc-tune %s.does-not-exist 2>&1 | filecheck %s --check-prefix=NO-FILE
// RUN: not mlc-tune %s --target tpu 2>&1 | filecheck %s --check-prefix=TARGET
// RUN: not mlc-tune %s --ray-address 127.0.0.1:9 --db %t.sqlite 2>&1 | filecheck %s --check-prefix=RAY
// RUN: not mlc-tune db import %s --db %t.sqlite 2>&1 | filecheck %s --check-prefix=IMPORT

func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  func.return %a : tensor<4xf32>
}

// NO-FILE-NOT: Traceback
// NO-FILE:     mlc-tune: error: {{.*}}mlc-tune-errors.mlir.does-not-exist: no such file
// TARGET:      mlc-tune: error: argument --target: invalid choice: 'tpu' (choose from 'cpu', 'cuda')
// RAY-NOT:     Traceback
// RAY:         mlc-tune: error: cannot reach the Ray cluster at 127.0.0.1:9: Connection refused
// IMPORT-NOT:  Traceback
// IMPORT:      mlc-tune: error: {{.*}}mlc-tune-errors.mlir:1: not a tuning record
