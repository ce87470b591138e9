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
// RUN: mlc-opt %s --pass-pipeline='builtin.module(mlc-lower-to-gpu)' -t ptx | filecheck %s --check-prefix=PTX
// RUN: mlc-opt %s -p graph-decompose,graph-fuse,convert-graph-to-tile,convert-tile-to-loop | filecheck %s --check-prefix=CUDA-CORES

// A 64x64 block of 8 warps: a 2x4 grid of 32x16 warp tiles, each 2x2 instruction tiles of
// 16x8; a thread holds rows g, g+8, g+16, g+24 and the column pairs 2t, 2t+8 of its warp tile.
// Per 16-deep K slice: one ldmatrix x4 per instruction row of A (lane l addresses row
// l % 8 + 8 ((l / 8) % 2), column 8 (l / 16)), one x4 trans for the two instruction columns of
// B; four mma steps; the epilogue (bias, relu, truncation) works on the accumulator registers
// and stores column pairs.
// LOOP:       loop.kernel @dense_0_matmul_add_relu
// LOOP-SAME:    mlc.micro_tile = array<i64: 4, 4>, mlc.warp_tile = array<i64: 32, 16>, mlc.mma = array<i64: 16, 8, 16>, mlc.warp_grid = array<i64: 2, 4>
// LOOP:         loop.parallel %thread < 256 mapping thread.x
// LOOP:           %warp = arith.divui %thread
// LOOP:           %lane = arith.remui %thread
// LOOP:           %group = arith.divui %lane
// LOOP:           scf.for %k
// LOOP-COUNT-2:     loop.ldmatrix x4 %a[{{.*}}] {mlc.operand = "lhs"} : memref<128x96xf16> -> vector<2xf16>
// LOOP:             loop.ldmatrix x4 trans %b[{{.*}}] {mlc.operand = "rhs"} : memref<96x128xf16> -> vector<2xf16>
// LOOP-COUNT-4:     loop.mma_sync m16n8k16 ({{.*}}) * ({{.*}}) + ({{.*}}) : vector<2xf16> -> f32
// LOOP:           arith.addf
// LOOP:           arith.maximumf
// LOOP:           arith.truncf
// LOOP:           vector.store {{.*}} : memref<128x128xf16>, vector<2xf16>

// GPU:        mlc_gpu.func @dense_0_matmul_add_relu
// Both operands are staged (ldmatrix reads only shared memory) as row-major copies, rows padded
// by 8 elements (16 bytes), which makes ldmatrix's 8-row phases free of bank conflicts; the
// copies are 16-byte vector loads and stores.
// GPU:          %a_shared = memref.alloca() {mlc.promoted = "%a: 64x96 elements {{.*}} read by ldmatrix; rows padded by 8: [[A_COST:[0-9]+]] shared-memory wavefronts per warp, {{[0-9]+}} unpadded"{{.*}} : memref<64x104xf16, 3 : i64>
// GPU:          %b_shared = memref.alloca() {mlc.promoted = "%b: 96x64 elements {{.*}} read by ldmatrix; rows padded by 8: {{.*}} : memref<96x72xf16, 3 : i64>
// GPU:          vector.load %a[{{.*}}] {alignment = 16 : i64} : memref<128x96xf16>, vector<8xf16>
// GPU:          vector.store {{.*}}, %a_shared[{{.*}}] {alignment = 16 : i64} : memref<64x104xf16, 3 : i64>, vector<8xf16>
// GPU:          mlc_gpu.barrier
// GPU-COUNT-2:  loop.ldmatrix x4 %a_shared
// GPU:          loop.ldmatrix x4 trans %b_shared
// GPU-COUNT-4:  loop.mma_sync m16n8k16

// NVVM:       llvm.call_intrinsic "llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16.p3"({{.*}}) : (!llvm.ptr<3>) -> !llvm.struct<(i32, i32, i32, i32)>
// NVVM:       llvm.bitcast {{.*}} : i32 to vector<2xf16>
// NVVM:       llvm.call_intrinsic "llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.trans.b16.p3"
// NVVM:       llvm.call_intrinsic "llvm.nvvm.mma.m16n8k16.row.col.f32.f32"({{.*}}) : (vector<2xf16>, vector<2xf16>, vector<2xf16>, vector<2xf16>, vector<2xf16>, vector<2xf16>, f32, f32, f32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// NVVM:       llvm.extractvalue

// PTX:        .visible .entry dense_0_matmul_add_relu(
// PTX:        ldmatrix.sync.aligned.m8n8.x4.shared.b16
// PTX:        ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
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
