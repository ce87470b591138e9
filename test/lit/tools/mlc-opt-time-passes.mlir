// --time-passes reports the time of every pass of the pipeline on stderr, after the output, and
// of the steps around the passes: parsing, verification (after every pass) and printing.
//
// RUN: mlc-opt %s -p cse,dce --time-passes 2> %t.stderr | filecheck %s --check-prefix=STDOUT
// RUN: filecheck %s --input-file=%t.stderr
// RUN: mlc-opt %s -p cse 2>&1 | filecheck %s --check-prefix=QUIET

func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = graph.exp %a : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// STDOUT-NOT:  Execution Time
// STDOUT:      func.func @f(
// STDOUT-NOT:  Execution Time

// CHECK:      ... Pass execution timing report ...
// CHECK:      Total Execution Time: {{[0-9]+\.[0-9]+}} seconds
// CHECK:      Wall Time  Name
// CHECK-NEXT: {{[0-9]+\.[0-9]+}} ({{ *[0-9]+\.[0-9]}}%)  (parse)
// CHECK-NEXT: {{[0-9]+\.[0-9]+}} ({{ *[0-9]+\.[0-9]}}%)  cse
// CHECK-NEXT: {{[0-9]+\.[0-9]+}} ({{ *[0-9]+\.[0-9]}}%)  dce
// CHECK-NEXT: {{[0-9]+\.[0-9]+}} ({{ *[0-9]+\.[0-9]}}%)  (verify)
// CHECK-NEXT: {{[0-9]+\.[0-9]+}} ({{ *[0-9]+\.[0-9]}}%)  (output)
// CHECK-NEXT: {{[0-9]+\.[0-9]+}} (100.0%)  Total

// Without the flag there is no report.
// QUIET-NOT:  Execution Time
