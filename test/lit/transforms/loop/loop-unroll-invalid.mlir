// RUN: mlc-opt %s --split-input-file --verify-diagnostics -p loop-unroll

// A marked loop needs constant bounds.
loop.kernel @unknown_bound(%x: memref<8xf32>, %sizes: memref<1xindex>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.load %sizes[%c0] : memref<1xindex>
  // expected-error @+1 {{loop-unroll needs constant bounds and step on a loop marked mlc.unroll}}
  scf.for %i = %c0 to %n step %c1 {
    %v = memref.load %x[%i] : memref<8xf32>
    memref.store %v, %x[%c0] : memref<8xf32>
  } {mlc.unroll}
  loop.return
}

// -----

// Unrolling stops at 64 clones.
loop.kernel @too_long(%x: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c65 = arith.constant 65 : index
  // expected-error @+1 {{loop-unroll unrolls at most 64 iterations; this loop marked mlc.unroll runs 65}}
  scf.for %i = %c0 to %c65 step %c1 {
    %v = memref.load %x[%c0] : memref<8xf32>
    memref.store %v, %x[%c1] : memref<8xf32>
  } {mlc.unroll}
  loop.return
}

// -----

// A loop unrolled by N needs constant bounds too.
loop.kernel @unknown_bound_by(%x: memref<8xf32>, %sizes: memref<1xindex>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.load %sizes[%c0] : memref<1xindex>
  // expected-error @+1 {{loop-unroll needs constant bounds and a positive step on a loop marked mlc.unroll_by}}
  scf.for %i = %c0 to %n step %c1 {
    %v = memref.load %x[%i] : memref<8xf32>
    memref.store %v, %x[%c0] : memref<8xf32>
  } {mlc.unroll_by = 2 : i64}
  loop.return
}
