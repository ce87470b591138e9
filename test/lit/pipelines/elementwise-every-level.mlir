// One elementwise graph function carried through every level of the GPU lowering, each level
// printed and parsed back in by the next mlc-opt, down to PTX.
//
// RUN: mlc-opt %s -p graph-decompose,graph-fuse,convert-graph-to-tile | tee %t.tile.mlir | mlc-opt -p convert-tile-to-loop | tee %t.loop.mlir \
// RUN:   | mlc-opt -p convert-loop-to-gpu | tee %t.gpu.mlir | mlc-opt -p convert-gpu-to-nvvm | tee %t.nvvm.mlir \
// RUN:   | mlc-opt -p convert-scf-to-cf,convert-vector-to-llvm,convert-memref-to-llvm,convert-math-to-llvm{library=\"libdevice\"},convert-arith-to-llvm,convert-cf-to-llvm,reconcile-unrealized-casts \
// RUN:   | tee %t.llvm.mlir | mlc-translate --mlir-to-ptx | filecheck %s --check-prefix=PTX
// RUN: filecheck %s --check-prefix=TILE < %t.tile.mlir
// RUN: filecheck %s --check-prefix=LOOP < %t.loop.mlir
// RUN: filecheck %s --check-prefix=GPU < %t.gpu.mlir
// RUN: filecheck %s --check-prefix=NVVM < %t.nvvm.mlir
// RUN: filecheck %s --check-prefix=LLVM < %t.llvm.mlir
// The named pipeline gives the same kernels:
// RUN: mlc-opt %s --pass-pipeline='builtin.module(mlc-lower-to-gpu)' -t ptx | filecheck %s --check-prefix=PTX

// TILE:       tile.kernel @bias_gelu_0_add_gelu({{.*}}) grid [32] num_warps 4
// TILE:         tile.map
// TILE:       tile.launch @bias_gelu_0_add_gelu
// LOOP:       loop.kernel @bias_gelu_0_add_gelu
// LOOP:         loop.parallel %program < 32 mapping block.x
// LOOP:           loop.parallel %thread < 128 mapping thread.x
// LOOP:             vector.load {{.*}} {alignment = 16 : i64}
// LOOP:       loop.launch @bias_gelu_0_add_gelu
// GPU:        mlc_gpu.func @bias_gelu_0_add_gelu({{.*}}) grid [32, 1, 1] block [128, 1, 1]
// GPU:        mlc_gpu.launch @bias_gelu_0_add_gelu({{.*}}) grid [32, 1, 1] block [128, 1, 1]
// NVVM:       llvm.func @bias_gelu_0_add_gelu({{.*}}nvvm.kernel
// NVVM:         llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.tid.x"
// LLVM:       llvm.func @bias_gelu_0_add_gelu
// LLVM-NOT:   {{(arith|memref|vector|scf|cf|math)\.}}
// LLVM:       func.func @bias_gelu
// LLVM-NEXT:    memref.alloc
// LLVM-NEXT:    mlc_gpu.launch @bias_gelu_0_add_gelu
// PTX:        .visible .entry bias_gelu_0_add_gelu(
// PTX:        .maxntid 128, 1, 1
// PTX-DAG:    ld.global.nc.v4
// PTX-DAG:    st.global.v4
func.func @bias_gelu(%x: tensor<64x1024xf32>, %b: tensor<1024xf32>) -> tensor<64x1024xf32> {
  %0 = graph.add %x, %b : (tensor<64x1024xf32>, tensor<1024xf32>) -> tensor<64x1024xf32>
  %1 = graph.gelu %0 : tensor<64x1024xf32>
  func.return %1 : tensor<64x1024xf32>
}
