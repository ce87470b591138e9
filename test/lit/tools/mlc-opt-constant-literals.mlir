// graph.constant reads its dense literal as MLIR does. A hexadecimal element of a float constant is
// the element's bit pattern (mlir-opt prints infinities and NaN so), in lists and splats, for f32,
// f16 and bf16; it must fit the element's bits and has no sign. Values that do not fit the element
// type are located errors (xDSL raised Python exceptions), and so are shape mismatches (xDSL
// pointed past the type). Special values print as raw hex, so the output parses back to the same
// bits.
//
// RUN: mlc-opt %s --split-input-file --verify-diagnostics
// RUN: mlc-opt %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: mlc-opt %s --split-input-file --verify-diagnostics | mlc-opt --split-input-file | filecheck %s

// CHECK-LABEL: func.func @special_values()
// CHECK-NEXT:    graph.constant dense<"0x0000C07F0000807F000080FF"> : tensor<3xf32>
// CHECK-NEXT:    graph.constant dense<"0x0000807F"> : tensor<2x2xf32>
// CHECK-NEXT:    graph.constant dense<"0x0000C07F0000803F000080FF00000040"> : tensor<2x2xf32>
// CHECK-NEXT:    graph.constant dense<"0xFFFF"> : tensor<3xf16>
// CHECK-NEXT:    graph.constant dense<"0x007E007C00FC"> : tensor<3xf16>
// CHECK-NEXT:    graph.constant dense<"0x807F"> : tensor<4xbf16>
// CHECK-NEXT:    graph.constant dense<"0xC07F803F80FF0040"> : tensor<2x2xbf16>
// CHECK-NEXT:    graph.constant dense<[1, 16, -1]> : tensor<3xi32>
func.func @special_values() {
  %0 = graph.constant dense<[0x7FC00000, 0x7F800000, 0xFF800000]> : tensor<3xf32>
  %1 = graph.constant dense<0x7F800000> : tensor<2x2xf32>
  %2 = graph.constant dense<[[0x7FC00000, 1.0], [0xFF800000, 2.0]]> : tensor<2x2xf32>
  %3 = graph.constant dense<0xFFFF> : tensor<3xf16>
  %4 = graph.constant dense<[0x7E00, 0x7C00, 0xFC00]> : tensor<3xf16>
  %5 = graph.constant dense<0x7F80> : tensor<4xbf16>
  %6 = graph.constant dense<[[0x7FC0, 1.0], [0xFF80, 2.0]]> : tensor<2x2xbf16>
  %7 = graph.constant dense<[0x1, 0x10, 0xFFFFFFFF]> : tensor<3xi32>
  func.return
}

// -----

func.func @too_wide_for_f16() {
  // expected-error @+1 {{hexadecimal literal 0x7F800000 does not fit the 16 bits of f16}}
  %0 = graph.constant dense<[0x7E00, 0x7F800000]> : tensor<2xf16>
  func.return
}

// -----

func.func @too_wide_splat() {
  // expected-error @+1 {{hexadecimal literal 0x1FF800000 does not fit the 32 bits of f32}}
  %0 = graph.constant dense<0x1FF800000> : tensor<2xf32>
  func.return
}

// -----

func.func @negative_hex() {
  // expected-error @+1 {{a hexadecimal float literal cannot have a leading minus}}
  %0 = graph.constant dense<[1.0, -0x7F800000]> : tensor<2xf32>
  func.return
}

// -----

func.func @too_large_for_f16() {
  // expected-error @+1 {{a value of the dense literal does not fit f16}}
  %0 = graph.constant dense<[1.0, 65536.0]> : tensor<2xf16>
  func.return
}

// -----

func.func @too_large_for_i1() {
  // expected-error @+1 {{a value of the dense literal does not fit i1}}
  %0 = graph.constant dense<[0, 2]> : tensor<2xi1>
  func.return
}

// -----

func.func @wrong_shape() {
  // expected-error @+1 {{Shape mismatch in dense literal. Expected [2, 2] shape from the type, but got [4] shape.}}
  %0 = graph.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<2x2xf32>
  func.return
}

// -----

func.func @not_a_tensor() {
  // expected-error @+1 {{expected a tensor type for the dense literal, got memref<2xf32>}}
  %0 = graph.constant dense<1.0> : memref<2xf32>
  func.return
}

// -----

// The generic form reads dense literals the same way (the spec's generic form must parse as MLIR
// means it), and a splat stays one element however many it stands for: a 10^12-element splat
// parses at once instead of being expanded (4 TB) before any verifier could look at it.
// CHECK-LABEL: func.func @generic_form()
// CHECK-NEXT:    graph.constant dense<"0x0000C07F0000807F000080FF"> : tensor<3xf32>
// CHECK-NEXT:    graph.constant dense<"0x007E"> : tensor<4x4xf16>
// CHECK-NEXT:    graph.constant dense<2.500000e-01> : tensor<1000000x1000000xf32>
// CHECK-NEXT:    graph.constant dense<true> : tensor<1000000x1000000xi1>
func.func @generic_form() {
  %0 = "graph.constant"() <{value = dense<[0x7FC00000, 0x7F800000, 0xFF800000]> : tensor<3xf32>}> : () -> tensor<3xf32>
  %1 = "graph.constant"() <{value = dense<0x7E00> : tensor<4x4xf16>}> : () -> tensor<4x4xf16>
  %2 = "graph.constant"() <{value = dense<0.25> : tensor<1000000x1000000xf32>}> : () -> tensor<1000000x1000000xf32>
  %3 = "graph.constant"() <{value = dense<true> : tensor<1000000x1000000xi1>}> : () -> tensor<1000000x1000000xi1>
  func.return
}

// -----

func.func @generic_hex_with_a_sign() {
  // expected-error @+1 {{a hexadecimal float literal cannot have a leading minus (it is the bit pattern)}}
  %0 = "graph.constant"() <{value = dense<[1.0, -0x7FC00000]> : tensor<2xf32>}> : () -> tensor<2xf32>
  func.return
}
