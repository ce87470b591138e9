// RUN: mlc-opt %s --split-input-file --verify-diagnostics -p convert-gpu-to-nvvm

// ldmatrix reads only shared memory: a global buffer (loop-promote-shared did not stage it) is
// an error at the op, not a wrong address.
mlc_gpu.func @ldmatrix_global(%x: memref<32x8xf16>) grid [1, 1, 1] block [32, 1, 1] {
  %t = mlc_gpu.thread_id x
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{loop.ldmatrix reads only shared memory on the GPU: its buffer must be a shared allocation (run loop-promote-shared)}}
  %a:4 = loop.ldmatrix x4 %x[%t, %c0] : memref<32x8xf16> -> vector<2xf16>
  mlc_gpu.return
}
