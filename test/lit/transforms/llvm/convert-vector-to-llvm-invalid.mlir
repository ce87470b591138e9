// RUN: mlc-opt %s --split-input-file --verify-diagnostics -p convert-vector-to-llvm

// Refused lowerings name the op and the reason.

llvm.func @two_d(%p: !llvm.ptr) {
  %m = builtin.unrealized_conversion_cast %p : !llvm.ptr to memref<4x4xf32>
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{cannot convert type vector<2x2xf32> to an LLVM type}}
  %v = vector.load %m[%c0, %c0] : memref<4x4xf32>, vector<2x2xf32>
  llvm.return
}

// -----

llvm.func @mask(%n: i64) {
  %nn = builtin.unrealized_conversion_cast %n : i64 to index
  // expected-error @+1 {{has no lowering to LLVM in convert-vector-to-llvm}}
  %mask = vector.create_mask %nn : vector<4xi1>
  llvm.return
}
