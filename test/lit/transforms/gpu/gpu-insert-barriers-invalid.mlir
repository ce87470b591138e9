// RUN: mlc-opt %s --split-input-file --verify-diagnostics -p gpu-insert-barriers

// Two accesses inside one branch on the thread id: a barrier between them would not be reached
// by the threads that skip the branch, and one outside it cannot come between them.
mlc_gpu.func @hazard_inside_divergence(%x: memref<64xf32>) grid [1, 1, 1] block [64, 1, 1] {
  %t = mlc_gpu.thread_id x
  %s = memref.alloca() : memref<32xf32, 3>
  %c31 = arith.constant 31 : index
  %c32 = arith.constant 32 : index
  %low = arith.cmpi ult, %t, %c32 : index
  scf.if %low {
    %v = memref.load %x[%t] : memref<64xf32>
    memref.store %v, %s[%t] : memref<32xf32, 3>
    %r = arith.subi %c31, %t : index
    // expected-error @+1 {{shared-memory RAW hazard with 'memref.store' inside control flow that depends on the thread id ('scf.if'): no barrier there is reached by every thread of the block (move the accesses out of it, or split it between them)}}
    %w = memref.load %s[%r] : memref<32xf32, 3>
    memref.store %w, %x[%t] : memref<64xf32>
  }
  mlc_gpu.return
}

// -----

// A loop whose trip count depends on the thread id is divergent too: its loop-carried hazard has
// no place for a barrier.
mlc_gpu.func @hazard_in_divergent_loop(%x: memref<32xf32>) grid [1, 1, 1] block [32, 1, 1] {
  %t = mlc_gpu.thread_id x
  %s = memref.alloca() : memref<32xf32, 3>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c31 = arith.constant 31 : index
  %r = arith.subi %c31, %t : index
  scf.for %k = %c0 to %t step %c1 {
    %v = memref.load %s[%r] : memref<32xf32, 3>
    // expected-error @+1 {{shared-memory WAR hazard with 'memref.load' inside control flow that depends on the thread id ('scf.for'): no barrier there is reached by every thread of the block (move the accesses out of it, or split it between them)}}
    memref.store %v, %s[%t] : memref<32xf32, 3>
  }
  mlc_gpu.return
}
