// RUN: mlc-opt %s --split-input-file --verify-diagnostics -p convert-loop-to-gpu

loop.kernel @private_at_block_level(%x: memref<64xf32>) {
  loop.parallel %b < 1 mapping block.x {
    // expected-error @+1 {{a buffer allocated outside thread loops must be in shared memory (memref space 3)}}
    %s = memref.alloca() : memref<64xf32>
    loop.parallel %t < 64 mapping thread.x {
      %v = memref.load %x[%t] : memref<64xf32>
      memref.store %v, %s[%t] : memref<64xf32>
    }
  }
  loop.return
}
