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

// -----

// A bulk tensor copy goes through a tensor map of a kernel parameter: a local buffer has none.
mlc_gpu.func @tma_from_a_local_buffer() grid [1, 1, 1] block [32, 1, 1] {
  %c0 = arith.constant 0 : index
  %local = memref.alloca() : memref<64x64xf16>
  %bars = memref.alloca() : memref<1xi64, 3 : i64>
  %stage = memref.alloca() : memref<64x64xf16, 3 : i64>
  // expected-error @+1 {{loop.tma_load reads a kernel parameter in global memory on the GPU}}
  loop.tma_load %local[%c0, %c0] to %stage[%c0, %c0], %bars[%c0] : memref<64x64xf16> to memref<64x64xf16, 3 : i64>, memref<1xi64, 3 : i64>
  mlc_gpu.return
}

// -----

// A swizzled destination is filled by whole matrices (the map's swizzle starts at row 0).
mlc_gpu.func @tma_into_the_middle_of_a_swizzled_matrix(%a: memref<64x64xf16>) grid [1, 1, 1] block [32, 1, 1] {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %bars = memref.alloca() : memref<1xi64, 3 : i64>
  %stage = memref.alloca() {mlc.swizzle = 128 : i64} : memref<128x64xf16, 3 : i64>
  // expected-error @+1 {{a bulk copy into a swizzled buffer copies whole R x C matrices (8k rows, 64m columns of f16) from row 0, column 0}}
  loop.tma_load %a[%c0, %c0] to %stage[%c8, %c0], %bars[%c0] : memref<64x64xf16> to memref<128x64xf16, 3 : i64>, memref<1xi64, 3 : i64>
  mlc_gpu.return
}
