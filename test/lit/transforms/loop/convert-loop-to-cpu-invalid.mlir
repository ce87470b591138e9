// RUN: mlc-opt %s --verify-diagnostics -p convert-loop-to-cpu

// Shared memory does not exist on the CPU.
loop.kernel @shared(%x: memref<64xf32>) {
  loop.parallel %b < 1 mapping block.x {
    // expected-error @+1 {{shared memory is not supported by the CPU lowering}}
    %s = memref.alloca() : memref<64xf32, 3>
    loop.parallel %t < 64 mapping thread.x {
      %v = memref.load %x[%t] : memref<64xf32>
      memref.store %v, %s[%t] : memref<64xf32, 3>
    }
  }
  loop.return
}
