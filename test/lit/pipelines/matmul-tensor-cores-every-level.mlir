// An f16 matmul with a bias-and-relu epilogue on tensor cores, through every level of the GPU
// lowering (convert-tile-to-loop{tensor-cores=true}, as mlc-lower-to-gpu runs it), down to PTX
// that ptxas assembles for sm_80 and sm_90a (no GPU needed).
//
// RUN: mlc-opt %s -p graph-decompose,graph-fuse,convert-graph-to-tile | mlc-opt -p 'convert-tile-to-loop{tensor-cores=true},canonicalize,cse' | tee %t.loop.mlir \
// RUN:   | mlc-opt -p loop-promote-shared,loop-unroll,convert-loop-to-gpu,gpu-insert-barriers | tee %t.gpu.mlir \
// RUN:   | mlc-opt -p convert-gpu-to-nvvm | tee %t.nvvm.mlir \
// RUN:   | mlc-opt -p convert-scf-to-cf,convert-vector-to-llvm,convert-memref-to-llvm,convert-math-to-llvm{library=\"libdevice\"},convert-arith-to-llvm,convert-cf-to-llvm,reconcile-unrealized-casts \
// RUN:   | mlc-translate --mlir-to-ptx --arch sm_80 | tee %t.ptx | filecheck %s --check-prefix=PTX
// RUN: filecheck %s --check-prefix=LOOP < %t.loop.mlir
// RUN: filecheck %s --check-prefix=GPU < %t.gpu.mlir
// RUN: filecheck %s --check-prefix=NVVM < %t.nvvm.mlir
// The named GPU pipeline takes the tensor-core path; the CPU one keeps the CUDA-core lowering:
// RUN: mlc-opt %s --pass-pipeline='builtin.module(mlc-lower-to-gpu)' | mlc-translate --mlir-to-ptx | filecheck %s --check-prefix=PTX
// RUN: mlc-opt %s -p graph-decompose,graph-fuse,convert-graph-to-tile,convert-tile-to-loop | filecheck %s --check-prefix=CUDA-CORES

// A 64x64 block of 8 warps: a 2x4 grid of 32x16 warp tiles, each 2x2 instruction tiles of
// 16x8; a thread holds rows g, g+8, g+16, g+24 and the column pairs 2t, 2t+8 of its warp tile.
// Per 16-deep K slice: A registers are K-neighbour pairs (vector<2xf16>) of rows, B registers
// pairs of one column; four mma steps; the epilogue (bias, relu, truncation) works on the
// accumulator registers and stores column pairs.
// LOOP:       loop.kernel @dense_0_matmul_add_relu
// LOOP-SAME:    mlc.micro_tile = array<i64: 4, 4>, mlc.warp_tile = array<i64: 32, 16>, mlc.mma = array<i64: 16, 8, 16>, mlc.warp_grid = array<i64: 2, 4>
// LOOP:         loop.parallel %thread < 256 mapping thread.x
// LOOP:           %warp = arith.divui %thread
// LOOP:           %lane = arith.remui %thread
// LOOP:           %group = arith.divui %lane
// LOOP:           scf.for %k
// LOOP:             vector.load %a[{{.*}}] {alignment = 4 : i64, mlc.operand = "lhs"} : memref<128x96xf16>, vector<2xf16>
// LOOP:             memref.load %b[{{.*}}] {mlc.operand = "rhs"} : memref<96x128xf16>
// LOOP-COUNT-4:     loop.mma_sync m16n8k16 ({{.*}}) * ({{.*}}) + ({{.*}}) : vector<2xf16> -> f32
// LOOP:           arith.addf
// LOOP:           arith.maximumf
// LOOP:           arith.truncf
// LOOP:           vector.store {{.*}} : memref<128x128xf16>, vector<2xf16>

// GPU:        mlc_gpu.func @dense_0_matmul_add_relu
// A (read by the 4 warps of a warp row) is staged in shared memory, B (read by 2) is not: see
// BENCHMARKS.md for why staging it transposed cost more than it saved.
// GPU:          %a_shared = memref.alloca() {mlc.promoted = "%a: 64x96 elements read 24576 times by 256 threads in the thread loop (4x reuse)
// GPU:          mlc_gpu.barrier
// GPU-COUNT-4:  loop.mma_sync m16n8k16

// NVVM:       llvm.call_intrinsic "llvm.nvvm.mma.m16n8k16.row.col.f32.f32"({{.*}}) : (vector<2xf16>, vector<2xf16>, vector<2xf16>, vector<2xf16>, vector<2xf16>, vector<2xf16>, f32, f32, f32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// NVVM:       llvm.extractvalue

// PTX:        .visible .entry dense_0_matmul_add_relu(
// PTX:        mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32

// CUDA-CORES-NOT: loop.mma_sync
// CUDA-CORES:     math.fma

// Where ptxas is installed, it assembles the PTX for sm_80, and the named pipeline's for sm_90a:
// RUN: %if ptxas %{ ptxas -arch=sm_80 %t.ptx -o %t.cubin %}
// RUN: %if ptxas %{ mlc-opt %s --pass-pipeline='builtin.module(mlc-lower-to-gpu)' | mlc-translate --mlir-to-ptx --arch sm_90a > %t.90a.ptx %}
// RUN: %if ptxas %{ ptxas -arch=sm_90a %t.90a.ptx -o %t.90a.cubin %}
func.func @dense(%a: tensor<128x96xf16>, %b: tensor<96x128xf16>, %bias: tensor<128xf16>) -> tensor<128x128xf16> {
  %0 = graph.matmul %a, %b : (tensor<128x96xf16>, tensor<96x128xf16>) -> tensor<128x128xf16>
  %1 = graph.add %0, %bias : (tensor<128x128xf16>, tensor<128xf16>) -> tensor<128x128xf16>
  %2 = graph.relu %1 : tensor<128x128xf16>
  func.return %2 : tensor<128x128xf16>
}
