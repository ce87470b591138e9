// Float constants that xDSL 0.74 cannot print as decimal text that parses back to the same bits
// (infinities, NaN, some 7-9 digit values) are printed in MLIR's raw hex form, which round-trips
// exactly. (The generic form still goes through xDSL's attribute printer: see the README's limits.)
// RUN: mlc-opt %s | filecheck %s
// RUN: mlc-opt %s | mlc-opt | filecheck %s

// CHECK-LABEL: func.func @special_values() {
// CHECK-NEXT:    %0 = graph.constant dense<"0x0000807F"> : tensor<2x3xf32>
// CHECK-NEXT:    %1 = graph.constant dense<"0x0000C07F000080FF0000803F"> : tensor<3xf32>
// CHECK-NEXT:    %2 = graph.constant dense<"0x007C00FE"> : tensor<2xf16>
// CHECK-NEXT:    %3 = graph.constant dense<[1.000000e+00, 2.500000e+00]> : tensor<2xf32>
// CHECK-NEXT:    func.return
func.func @special_values() {
  %0 = graph.constant dense<"0x0000807F"> : tensor<2x3xf32>
  %1 = graph.constant dense<"0x0000C07F000080FF0000803F"> : tensor<3xf32>
  %2 = graph.constant dense<"0x007C00FE"> : tensor<2xf16>
  %3 = graph.constant dense<"0x0000803F00002040"> : tensor<2xf32>
  func.return
}

// As in MLIR, a hexadecimal literal among the elements of a float constant is the element's bit
// pattern (mlir-opt prints infinities and NaN so).
// CHECK-LABEL: func.func @hex_literals() {
// CHECK-NEXT:    %0 = graph.constant dense<"0x0000807F"> : tensor<2xf32>
// CHECK-NEXT:    %1 = graph.constant dense<"0x0000C07F0000C03F000080FF"> : tensor<3xf32>
// CHECK-NEXT:    %2 = graph.constant dense<"0x007C"> : tensor<2xf16>
// CHECK-NEXT:    %3 = graph.constant dense<"0x80FF00C0"> : tensor<2xbf16>
// CHECK-NEXT:    %4 = graph.constant dense<[16, 255]> : tensor<2xi32>
func.func @hex_literals() {
  %0 = graph.constant dense<0x7F800000> : tensor<2xf32>
  %1 = graph.constant dense<[0x7FC00000, 1.5, 0xFF800000]> : tensor<3xf32>
  %2 = graph.constant dense<0x7C00> : tensor<2xf16>
  %3 = graph.constant dense<[0xFF80, -2.0]> : tensor<2xbf16>
  %4 = graph.constant dense<[0x10, 0xFF]> : tensor<2xi32>
  func.return
}
