// RUN: mlc-opt %s --split-input-file -p "graph-pad-matmul-operands{wgmma=true}" | filecheck %s
// RUN: mlc-opt %s --split-input-file -p "graph-pad-matmul-operands{wgmma=true}" | mlc-opt --split-input-file -p "graph-pad-matmul-operands{wgmma=true}" | filecheck %s
// RUN: mlc-opt %s --split-input-file -p graph-pad-matmul-operands | filecheck %s --check-prefix=OFF

// Ragged K (1023) and N (4097): A gets a zero column, B seven zero columns then a zero row; the
// product of the padded operands is sliced back to N columns.
// CHECK-LABEL: func.func @odd
// CHECK-NEXT:    %0 = graph.constant dense<0.000000e+00> : tensor<95x1xf16>
// CHECK-NEXT:    %1 = graph.concat %a, %0 axis 1 : (tensor<95x1023xf16>, tensor<95x1xf16>) -> tensor<95x1024xf16>
// CHECK-NEXT:    %2 = graph.constant dense<0.000000e+00> : tensor<1023x7xf16>
// CHECK-NEXT:    %3 = graph.concat %b, %2 axis 1 : (tensor<1023x97xf16>, tensor<1023x7xf16>) -> tensor<1023x104xf16>
// CHECK-NEXT:    %4 = graph.constant dense<0.000000e+00> : tensor<1x104xf16>
// CHECK-NEXT:    %5 = graph.concat %3, %4 axis 0 : (tensor<1023x104xf16>, tensor<1x104xf16>) -> tensor<1024x104xf16>
// CHECK-NEXT:    %6 = graph.matmul %1, %5 : (tensor<95x1024xf16>, tensor<1024x104xf16>) -> tensor<95x104xf16>
// CHECK-NEXT:    %p = graph.slice %6 starts [0, 0] ends [95, 97] steps [1, 1] : tensor<95x104xf16> to tensor<95x97xf16>
// CHECK-NEXT:    %y = graph.relu %p : tensor<95x97xf16>
// OFF-LABEL: func.func @odd
// OFF-NEXT:    %p = graph.matmul %a, %b
func.func @odd(%a: tensor<95x1023xf16>, %b: tensor<1023x97xf16>) -> tensor<95x97xf16> {
  %p = graph.matmul %a, %b : (tensor<95x1023xf16>, tensor<1023x97xf16>) -> tensor<95x97xf16>
  %y = graph.relu %p : tensor<95x97xf16>
  func.return %y : tensor<95x97xf16>
}

// -----

// Only N ragged, with batch dimensions that broadcast: B's columns padded, K untouched.
// CHECK-LABEL: func.func @batched
// CHECK-NEXT:    %0 = graph.constant dense<0.000000e+00> : tensor<3x128x4xbf16>
// CHECK-NEXT:    %1 = graph.concat %b, %0 axis 2 : (tensor<3x128x20xbf16>, tensor<3x128x4xbf16>) -> tensor<3x128x24xbf16>
// CHECK-NEXT:    %2 = graph.matmul %a, %1 : (tensor<2x1x16x128xbf16>, tensor<3x128x24xbf16>) -> tensor<2x3x16x24xbf16>
// CHECK-NEXT:    %p = graph.slice %2 starts [0, 0, 0, 0] ends [2, 3, 16, 20] steps [1, 1, 1, 1] : tensor<2x3x16x24xbf16> to tensor<2x3x16x20xbf16>
func.func @batched(%a: tensor<2x1x16x128xbf16>, %b: tensor<3x128x20xbf16>) -> tensor<2x3x16x20xbf16> {
  %p = graph.matmul %a, %b : (tensor<2x1x16x128xbf16>, tensor<3x128x20xbf16>) -> tensor<2x3x16x20xbf16>
  func.return %p : tensor<2x3x16x20xbf16>
}

// -----

// Left alone: f32 operands, aligned rows, and a K too short for wgmma's K loop (K' = 64).
// CHECK-LABEL: func.func @untouched
// CHECK-NEXT:    %0 = graph.matmul %a, %b : (tensor<9x130xf32>, tensor<130x9xf32>) -> tensor<9x9xf32>
// CHECK-NEXT:    %1 = graph.matmul %c, %d : (tensor<9x128xf16>, tensor<128x16xf16>) -> tensor<9x16xf16>
// CHECK-NEXT:    %2 = graph.matmul %e, %f : (tensor<9x60xf16>, tensor<60x9xf16>) -> tensor<9x9xf16>
func.func @untouched(%a: tensor<9x130xf32>, %b: tensor<130x9xf32>, %c: tensor<9x128xf16>, %d: tensor<128x16xf16>, %e: tensor<9x60xf16>, %f: tensor<60x9xf16>) -> (tensor<9x9xf32>, tensor<9x16xf16>, tensor<9x9xf16>) {
  %0 = graph.matmul %a, %b : (tensor<9x130xf32>, tensor<130x9xf32>) -> tensor<9x9xf32>
  %1 = graph.matmul %c, %d : (tensor<9x128xf16>, tensor<128x16xf16>) -> tensor<9x16xf16>
  %2 = graph.matmul %e, %f : (tensor<9x60xf16>, tensor<60x9xf16>) -> tensor<9x9xf16>
  func.return %0, %1, %2 : tensor<9x9xf32>, tensor<9x16xf16>, tensor<9x9xf16>
}

// -----

// The products of an attention chain (ragged keys: 777) stay as they are: graph-fuse makes one
// tensor-core kernel of the chain, which masks them itself.
// CHECK-LABEL: func.func @attention
// CHECK-NOT:     graph.concat
// CHECK:         graph.matmul %p, %v : (tensor<2x64x777xf16>, tensor<2x777x72xf16>) -> tensor<2x64x72xf16>
func.func @attention(%q: tensor<2x64x72xf16>, %kt: tensor<2x72x777xf16>, %v: tensor<2x777x72xf16>) -> tensor<2x64x72xf16> {
  %s = graph.matmul %q, %kt : (tensor<2x64x72xf16>, tensor<2x72x777xf16>) -> tensor<2x64x777xf16>
  %p = graph.softmax %s axis -1 : tensor<2x64x777xf16>
  %o = graph.matmul %p, %v : (tensor<2x64x777xf16>, tensor<2x777x72xf16>) -> tensor<2x64x72xf16>
  func.return %o : tensor<2x64x72xf16>
}
