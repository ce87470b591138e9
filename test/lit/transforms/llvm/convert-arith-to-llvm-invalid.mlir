// RUN: mlc-opt %s --split-input-file --verify-diagnostics -p convert-arith-to-llvm

// Refused lowerings name the op and the reason.

llvm.func @vector_compare(%a: vector<4xf32>, %b: vector<4xf32>) {
  // expected-error @+1 {{cannot lower a comparison of vectors: xDSL types its result i1, not a vector of i1}}
  %0 = arith.cmpf olt, %a, %b : vector<4xf32>
  llvm.return
}

// -----

llvm.func @two_d() {
  // expected-error @+1 {{cannot convert type vector<2x2xf32> to an LLVM type}}
  %a = arith.constant dense<1.0> : vector<2x2xf32>
  %0 = arith.addf %a, %a : vector<2x2xf32>
  llvm.return
}

// -----

llvm.func @rounding(%a: f64) {
  // expected-error @+1 {{cannot lower a rounding mode other than the default}}
  %0 = arith.truncf %a {roundingmode = 1 : i32} : f64 to f32
  llvm.return
}
