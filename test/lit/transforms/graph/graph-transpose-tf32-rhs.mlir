// RUN: mlc-opt %s --split-input-file -p "graph-transpose-tf32-rhs{wgmma=true swap-operands=true}" | filecheck %s
// RUN: mlc-opt %s --split-input-file -p "graph-transpose-tf32-rhs{wgmma=true precision=tf32}" | filecheck %s --check-prefix=DEFAULT
// RUN: mlc-opt %s --split-input-file -p "graph-transpose-tf32-rhs{wgmma=true}" | filecheck %s --check-prefix=NOSWAP
// RUN: mlc-opt %s --split-input-file -p graph-transpose-tf32-rhs | filecheck %s --check-prefix=OFF

// A TF32 product on a row-major B that an elementwise op reads (its kernel's epilogue): B is
// transposed (a kernel of its own after graph-fuse) and read transposed back, K-major, the only
// layout TF32 wgmma reads from shared memory.
// CHECK-LABEL: func.func @row_major_relu
// CHECK-NEXT:    %0 = graph.transpose %b perm [1, 0] : tensor<96x72xf32> to tensor<72x96xf32>
// CHECK-NEXT:    %1 = graph.transpose %0 perm [1, 0] : tensor<72x96xf32> to tensor<96x72xf32>
// CHECK-NEXT:    %p = graph.matmul %a, %1 {precision = "tf32"} : (tensor<50x96xf32>, tensor<96x72xf32>) -> tensor<50x72xf32>
// OFF-LABEL: func.func @row_major_relu
// OFF-NEXT:    %p = graph.matmul %a, %b {precision = "tf32"}
func.func @row_major_relu(%a: tensor<50x96xf32>, %b: tensor<96x72xf32>) -> tensor<50x72xf32> {
  %p = graph.matmul %a, %b {precision = "tf32"} : (tensor<50x96xf32>, tensor<96x72xf32>) -> tensor<50x72xf32>
  %r = graph.relu %p : tensor<50x72xf32>
  func.return %r : tensor<50x72xf32>
}

// -----

// With swap-operands=true (opt-in) the plain product (no elementwise reader, N a multiple of 4
// too) is computed transposed instead, C^T = B^T A^T: marked, nothing materialised
// (convert-graph-to-tile builds its kernel). Without the option (NOSWAP) its B is transposed as above.
// CHECK-LABEL: func.func @row_major
// CHECK-NEXT:    %p = graph.matmul %a, %b {mlc.swap_operands, precision = "tf32"} : (tensor<50x96xf32>, tensor<96x72xf32>) -> tensor<50x72xf32>
// CHECK-NEXT:    func.return %p
// NOSWAP-LABEL: func.func @row_major
// NOSWAP-NEXT:    %0 = graph.transpose %b perm [1, 0]
// NOSWAP-NEXT:    %1 = graph.transpose %0 perm [1, 0]
// NOSWAP-NEXT:    %p = graph.matmul %a, %1 {precision = "tf32"}
// OFF-LABEL: func.func @row_major
// OFF-NEXT:    %p = graph.matmul %a, %b {precision = "tf32"} :
func.func @row_major(%a: tensor<50x96xf32>, %b: tensor<96x72xf32>) -> tensor<50x72xf32> {
  %p = graph.matmul %a, %b {precision = "tf32"} : (tensor<50x96xf32>, tensor<96x72xf32>) -> tensor<50x72xf32>
  func.return %p : tensor<50x72xf32>
}

// -----

// Left alone: the torch linear (B already a transpose, read in place), 3xtf32 (split in
// registers: mma.sync), IEEE f32, a K that is no 16-byte multiple (98) or fits one K step (32),
// a batched B. A matmul stating no precision takes the pass's option (DEFAULT).
// CHECK-LABEL: func.func @left_alone
// CHECK-NEXT:    %wt = graph.transpose %w
// CHECK-NEXT:    %0 = graph.matmul %a, %wt {precision = "tf32"}
// CHECK-NEXT:    %1 = graph.matmul %a, %b {precision = "3xtf32"}
// CHECK-NEXT:    %2 = graph.matmul %a, %b : (tensor<50x96xf32>
// CHECK-NEXT:    %3 = graph.matmul %c, %d {precision = "tf32"}
// CHECK-NEXT:    %4 = graph.matmul %e, %f {precision = "tf32"}
// CHECK-NEXT:    %5 = graph.matmul %g, %h {precision = "tf32"}
// DEFAULT-LABEL: func.func @left_alone
// DEFAULT:         %1 = graph.matmul %a, %b {precision = "3xtf32"}
// DEFAULT-NEXT:    %2 = graph.transpose %b perm [1, 0]
// DEFAULT-NEXT:    %3 = graph.transpose %2 perm [1, 0]
// DEFAULT-NEXT:    %4 = graph.matmul %a, %3 : (tensor<50x96xf32>
func.func @left_alone(%a: tensor<50x96xf32>, %b: tensor<96x72xf32>, %w: tensor<72x96xf32>, %c: tensor<50x98xf32>, %d: tensor<98x72xf32>,
                      %e: tensor<50x32xf32>, %f: tensor<32x72xf32>, %g: tensor<2x50x96xf32>, %h: tensor<2x96x72xf32>)
    -> (tensor<50x72xf32>, tensor<50x72xf32>, tensor<50x72xf32>, tensor<50x72xf32>, tensor<50x72xf32>, tensor<2x50x72xf32>) {
  %wt = graph.transpose %w perm [1, 0] : tensor<72x96xf32> to tensor<96x72xf32>
  %0 = graph.matmul %a, %wt {precision = "tf32"} : (tensor<50x96xf32>, tensor<96x72xf32>) -> tensor<50x72xf32>
  %1 = graph.matmul %a, %b {precision = "3xtf32"} : (tensor<50x96xf32>, tensor<96x72xf32>) -> tensor<50x72xf32>
  %2 = graph.matmul %a, %b : (tensor<50x96xf32>, tensor<96x72xf32>) -> tensor<50x72xf32>
  %3 = graph.matmul %c, %d {precision = "tf32"} : (tensor<50x98xf32>, tensor<98x72xf32>) -> tensor<50x72xf32>
  %4 = graph.matmul %e, %f {precision = "tf32"} : (tensor<50x32xf32>, tensor<32x72xf32>) -> tensor<50x72xf32>
  %5 = graph.matmul %g, %h {precision = "tf32"} : (tensor<2x50x96xf32>, tensor<2x96x72xf32>) -> tensor<2x50x72xf32>
  func.return %0, %1, %2, %3, %4, %5 : tensor<50x72xf32>, tensor<50x72xf32>, tensor<50x72xf32>, tensor<50x72xf32>, tensor<50x72xf32>, tensor<2x50x72xf32>
}
