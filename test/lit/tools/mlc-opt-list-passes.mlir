// --list-passes lists every registered pass, sorted by name, with a one-line summary, and exits 0
// without reading any input.
// RUN: mlc-opt --list-passes | filecheck %s --match-full-lines

// The xDSL passes mlc offers, with mlc's own summaries.
// CHECK:      {{ +}}canonicalize{{ +}}Fold constants and apply each op's canonicalization patterns.
// mlc's lowering passes, each with its summary (the first sentence of its docstring).
// CHECK:      {{ +}}convert-graph-to-tile{{ +}}{{[A-Z].*\.}}
// CHECK:      {{ +}}convert-loop-to-cpu{{ +}}{{[A-Z].*\.}}
// CHECK-NEXT: {{ +}}convert-loop-to-gpu{{ +}}{{[A-Z].*\.}}
// CHECK:      {{ +}}convert-tile-dot-to-cpu{{ +}}{{[A-Z].*\.}}
// CHECK-NEXT: {{ +}}convert-tile-rows-to-cpu{{ +}}{{[A-Z].*\.}}
// CHECK-NEXT: {{ +}}convert-tile-to-loop{{ +}}{{[A-Z].*\.}}
// CHECK:      {{ +}}cse{{ +}}Eliminate common subexpressions.
// CHECK-NEXT: {{ +}}dce{{ +}}Remove operations whose results are unused and that have no side effects.
// CHECK-NEXT: {{ +}}expand-math-for-cpu{{ +}}{{[A-Z].*\.}}
// CHECK-NEXT: {{ +}}gpu-insert-barriers{{ +}}{{[A-Z].*\.}}
// CHECK:      {{ +}}graph-decompose{{ +}}{{[A-Z].*\.}}
// CHECK-NEXT: {{ +}}graph-fold-constants{{ +}}{{[A-Z].*\.}}
// CHECK-NEXT: {{ +}}graph-fuse{{ +}}{{[A-Z].*\.}}
// CHECK-NEXT: {{ +}}graph-inline-fusion{{ +}}{{[A-Z].*\.}}
// CHECK-NEXT: {{ +}}graph-pad-matmul-operands{{ +}}{{[A-Z].*\.}}
// CHECK-NEXT: {{ +}}graph-plan-memory{{ +}}{{[A-Z].*\.}}
// CHECK-NEXT: {{ +}}graph-simplify{{ +}}{{[A-Z].*\.}}
// CHECK-NEXT: {{ +}}graph-split-column-reductions{{ +}}{{[A-Z].*\.}}
// CHECK-NEXT: {{ +}}graph-transpose-tf32-rhs{{ +}}{{[A-Z].*\.}}
// CHECK-NEXT: {{ +}}licm{{ +}}Move loop-invariant operations without side effects out of loops.
// CHECK-NEXT: {{ +}}loop-double-buffer{{ +}}{{[A-Z].*\.}}
// CHECK-NEXT: {{ +}}loop-group-tiles{{ +}}{{[A-Z].*\.}}
// CHECK-NEXT: {{ +}}loop-persistent-tiles{{ +}}{{[A-Z].*\.}}
// CHECK-NEXT: {{ +}}loop-promote-shared{{ +}}{{[A-Z].*\.}}
// CHECK-NEXT: {{ +}}loop-stage-epilogue{{ +}}{{[A-Z].*\.}}
// CHECK-NEXT: {{ +}}loop-unroll{{ +}}{{[A-Z].*\.}}
// The named pipelines are passes too.
// CHECK-NEXT: {{ +}}mlc-lower-to-cpu{{ +}}{{[A-Z].*\.}}
// CHECK-NEXT: {{ +}}mlc-lower-to-gpu{{ +}}{{[A-Z].*\.}}
// CHECK-NEXT: {{ +}}reconcile-unrealized-casts{{ +}}Remove pairs of unrealized conversion casts that cancel out.
// CHECK-NOT:  {{.}}
