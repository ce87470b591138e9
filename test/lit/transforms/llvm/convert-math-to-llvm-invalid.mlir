// RUN: mlc-opt %s --split-input-file --verify-diagnostics -p convert-math-to-llvm

// Refused lowerings name the op and the reason.

llvm.func @integer_power(%i: i32) {
  // expected-error @+1 {{cannot lower math.ipowi: LLVM has no integer power}}
  %p = math.ipowi %i, %i : i32
  llvm.return
}

// -----

llvm.func @expf(f64) -> f64

llvm.func @clash(%x: f32) {
  // expected-error @+1 {{cannot call 'expf': the module defines 'expf' with another type}}
  %e = math.exp %x : f32
  llvm.return
}
