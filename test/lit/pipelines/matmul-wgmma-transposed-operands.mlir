// Transposed matmul operands read in place on Hopper tensor cores (`mlc.operand_major`): the torch
// linear x @ transpose(w) (w stored N x K) and a product of two transposed operands, through
// every level of `mlc-lower-to-gpu{arch=sm_90}` down to PTX for sm_90a (no GPU needed).
//
// RUN: mlc-opt %s -p 'graph-decompose,graph-fuse,convert-graph-to-tile{wgmma=true}' | tee %t.tile.mlir \
// RUN:   | mlc-opt -p 'convert-tile-to-loop{tensor-cores=true wgmma=true},canonicalize,cse' | tee %t.loop.mlir \
// RUN:   | mlc-opt -p loop-promote-shared,loop-unroll,convert-loop-to-gpu,gpu-insert-barriers | tee %t.gpu.mlir \
// RUN:   | mlc-opt -p convert-gpu-to-nvvm | tee %t.nvvm.mlir \
// RUN:   | mlc-opt -p convert-scf-to-cf,convert-vector-to-llvm,convert-memref-to-llvm,convert-math-to-llvm{library=\"libdevice\"},convert-arith-to-llvm,convert-cf-to-llvm,reconcile-unrealized-casts \
// RUN:   | mlc-translate --mlir-to-ptx --arch sm_90 | tee %t.ptx | filecheck %s --check-prefix=PTX
// RUN: filecheck %s --check-prefix=TILE < %t.tile.mlir
// RUN: filecheck %s --check-prefix=LOOP < %t.loop.mlir
// RUN: filecheck %s --check-prefix=GPU < %t.gpu.mlir
// RUN: filecheck %s --check-prefix=NVVM < %t.nvvm.mlir
// RUN: %if ptxas %{ ptxas -arch=sm_90a %t.ptx -o %t.cubin %}

// One kernel each, no transpose kernel: the stored blocks are loaded and transposed as tiles.
// TILE-NOT:   tile.kernel @{{[a-z]+}}_{{[0-9]+}}_transpose(
// TILE:       tile.kernel @linear_0_transpose_matmul(%x: memref<256x192xf16>, %w: memref<512x192xf16>, %output0: memref<256x512xf16>)
// TILE-SAME:    mlc.operand_major = ["k", "k"]
// TILE:         %[[W:.*]] = tile.load %w[%{{.*}}, %k]
// TILE-NEXT:    tile.transpose %[[W]]
// TILE:       tile.kernel @both_0_transpose_transpose_matmul(%x: memref<192x256xf16>, %w: memref<512x192xf16>, %output0: memref<256x512xf16>)
// TILE-SAME:    mlc.operand_major = ["m", "k"]

// The warpgroup product reads the stored buffers at the stored origins: the weight's N x K block
// at [n, k]; a transposed lhs's K x 64 block at [k, m + 64 * warpgroup].
// LOOP:       loop.kernel @linear_0_transpose_matmul
// LOOP:         loop.wgmma m64n{{[0-9]+}}k64 %x[%{{.*}}, %k], %w[%n, %k], ({{.*}}) {mlc.operand_major = ["k", "k"]} : memref<256x192xf16>, memref<512x192xf16>
// LOOP:       loop.kernel @both_0_transpose_transpose_matmul
// LOOP:         loop.wgmma m64n{{[0-9]+}}k64 %x[%k, %{{.*}}], %w[%n, %k], ({{.*}}) {mlc.operand_major = ["m", "k"]} : memref<192x256xf16>, memref<512x192xf16>

// Staged in their stored layouts, swizzled: the weight as N rows of 64 K (K-major, like A), the
// transposed lhs as 64 rows of K by the block's M (M-major, like a row-major B).
// GPU:        mlc_gpu.func @linear_0_transpose_matmul
// GPU:          %w_shared = memref.alloca() {mlc.promoted = "%w: {{[0-9]+}}x64 elements {{.*}} read by wgmma; swizzled {{.*}}
// GPU:        mlc_gpu.func @both_0_transpose_transpose_matmul
// GPU:          %x_shared = memref.alloca() {mlc.promoted = "%x: 64x{{[0-9]+}} elements {{.*}} read by wgmma; swizzled {{.*}}

// The instruction's transpose immediates (imm-trans-a, imm-trans-b): K-major B without its
// transpose, M-major A with its transpose.
// NVVM:       llvm.func @linear_0_transpose_matmul
// NVVM:         wgmma.mma_async.sync.aligned.m64n{{[0-9]+}}k16.f32.f16.f16 {{.*}}, p, 1, 1, 0, 0;
// NVVM:       llvm.func @both_0_transpose_transpose_matmul
// NVVM:         wgmma.mma_async.sync.aligned.m64n{{[0-9]+}}k16.f32.f16.f16 {{.*}}, p, 1, 1, 1, 0;

// PTX:        .target sm_90a
// PTX:        .visible .entry linear_0_transpose_matmul(
// PTX:        wgmma.mma_async.sync.aligned.m64n{{[0-9]+}}k16.f32.f16.f16 {{.*}}, p, 1, 1, 0, 0;
// PTX:        .visible .entry both_0_transpose_transpose_matmul(
// PTX:        wgmma.mma_async.sync.aligned.m64n{{[0-9]+}}k16.f32.f16.f16 {{.*}}, p, 1, 1, 1, 0;

func.func @linear(%x: tensor<256x192xf16>, %w: tensor<512x192xf16>) -> tensor<256x512xf16> {
  %wt = graph.transpose %w perm [1, 0] : tensor<512x192xf16> to tensor<192x512xf16>
  %y = graph.matmul %x, %wt : (tensor<256x192xf16>, tensor<192x512xf16>) -> tensor<256x512xf16>
  func.return %y : tensor<256x512xf16>
}

func.func @both(%x: tensor<192x256xf16>, %w: tensor<512x192xf16>) -> tensor<256x512xf16> {
  %xt = graph.transpose %x perm [1, 0] : tensor<192x256xf16> to tensor<256x192xf16>
  %wt = graph.transpose %w perm [1, 0] : tensor<512x192xf16> to tensor<192x512xf16>
  %y = graph.matmul %xt, %wt : (tensor<256x192xf16>, tensor<192x512xf16>) -> tensor<256x512xf16>
  func.return %y : tensor<256x512xf16>
}
