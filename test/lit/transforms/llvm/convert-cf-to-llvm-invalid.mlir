// RUN: mlc-opt %s --split-input-file --verify-diagnostics -p convert-cf-to-llvm

// Refused lowerings name the op and the reason.

llvm.func @assert(%c: i1) {
  // expected-error @+1 {{cannot lower cf.assert: kernels have no way to abort yet}}
  cf.assert %c, "boom"
  llvm.return
}
