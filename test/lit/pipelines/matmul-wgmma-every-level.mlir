// An f16 matmul with a bias-and-relu epilogue on Hopper tensor cores (wgmma), through every level
// of `mlc-lower-to-gpu{arch=sm_90}` (convert-graph-to-tile{wgmma=true} and
// convert-tile-to-loop{tensor-cores=true wgmma=true}), down to PTX for sm_90a (no GPU needed).
//
// RUN: mlc-opt %s -p 'graph-decompose,graph-fuse,convert-graph-to-tile{wgmma=true}' | mlc-opt -p 'convert-tile-to-loop{tensor-cores=true wgmma=true},canonicalize,cse' | tee %t.loop.mlir \
// RUN:   | mlc-opt -p loop-promote-shared,loop-unroll,convert-loop-to-gpu,gpu-insert-barriers | tee %t.gpu.mlir \
// RUN:   | mlc-opt -p convert-gpu-to-nvvm | tee %t.nvvm.mlir \
// RUN:   | mlc-opt -p convert-scf-to-cf,convert-vector-to-llvm,convert-memref-to-llvm,convert-math-to-llvm{library=\"libdevice\"},convert-arith-to-llvm,convert-cf-to-llvm,reconcile-unrealized-casts \
// RUN:   | mlc-translate --mlir-to-ptx --arch sm_90 | tee %t.ptx | filecheck %s --check-prefix=PTX
// RUN: filecheck %s --check-prefix=LOOP < %t.loop.mlir
// RUN: filecheck %s --check-prefix=GPU < %t.gpu.mlir
// RUN: filecheck %s --check-prefix=NVVM < %t.nvvm.mlir
// The named pipeline with the arch takes the same path (matmul-wgmma-tma.mlir's CP-ASYNC run
// checks it; mlc.compile's sm_90 default adds TMA, matmul-tf32-wgmma-every-level.mlir's DEFAULT);
// without the arch, mma.sync:
// RUN: mlc-opt %s --pass-pipeline='builtin.module(mlc-lower-to-gpu)' -t 'ptx{arch=sm_90}' | filecheck %s --check-prefix=MMA-SYNC
// A plain product (its accumulators only converted and stored) leaves each product in flight
// until the next iteration's wait (wait_group 1), the last one completed after the loop:
// RUN: mlc-opt %s -p 'graph-decompose,graph-fuse,convert-graph-to-tile{wgmma=true},convert-tile-to-loop{tensor-cores=true wgmma=true},canonicalize,cse,loop-promote-shared' | filecheck %s --check-prefix=PLAIN
// Where ptxas is installed, it assembles the PTX for sm_90a and keeps the deferred products
// asynchronous (no C7514: "wgmma.mma_async instructions are serialized"), relu epilogue included:
// RUN: %if ptxas %{ ptxas -v -arch=sm_90a %t.ptx -o %t.cubin 2>&1 | filecheck %s --check-prefix=PTXAS %}
// PTXAS-NOT:  C7514
// PTXAS:      Used {{[0-9]+}} registers

// Few blocks, so the heuristic's smallest wgmma block, 64x128x64 (K = 192: a K loop of 3 steps),
// one warpgroup: a 4x1 grid of 16x128 warp tiles (mma.sync's accumulator layout stacked: rows
// g, g + 8 of each warp's 16, column pairs 2t + 8q); per K step each warpgroup issues one
// m64n128k64 product at its 64 rows of A (`64 * (thread / 128)`) and the whole 64x128 block of B,
// then waits for it; the epilogue works on the accumulators as on mma.sync's.
// LOOP:       loop.kernel @dense_0_matmul_add_relu
// LOOP-SAME:    mlc.micro_tile = array<i64: 2, 32>, mlc.warp_tile = array<i64: 16, 128>, mlc.wgmma = array<i64: 64, 128, 16>, mlc.warp_grid = array<i64: 4, 1>, mlc.pipeline_stages = 4 : i64
// LOOP:         loop.parallel %thread < 128 mapping thread.x
// LOOP:           %warpgroup = arith.divui %thread, %c128
// LOOP:           %[[ROWS:.*]] = arith.muli %warpgroup, %c64
// LOOP:           scf.for %k
// LOOP:             %[[A_ROW:.*]] = arith.addi %{{.*}}, %[[ROWS]]
// LOOP:             %{{.*}} = loop.wgmma m64n128k64 %a[%[[A_ROW]], %k], %b[%k, %n], ({{.*}}) : memref<128x192xf16>, memref<192x256xf16>
// LOOP-NEXT:        loop.wgmma_wait 0 ({{.*}})
// LOOP:           arith.addf
// LOOP:           arith.maximumf

// Both operands are staged in 4 stages of async copies in the 128-byte swizzled layout (no
// padding); per iteration: wait for this step's copies, one barrier, the product, then the copies
// of the step two ahead (issued while the tensor cores work), the commit and the wait for the
// previous step's product (wait_group 1: this one stays in flight, as in PLAIN); after the loop,
// wait_group 0, then the accumulators are rounded to f16 two at a time (one vector<2xf32>
// truncation per pair of adjacent columns), which keeps ptxas from serializing the products.
// GPU:        mlc_gpu.func @dense_0_matmul_add_relu
// GPU:          %a_shared = memref.alloca() {mlc.promoted = "%a: 64x64 elements {{.*}} read by wgmma; swizzled {{.*}}; 4 stages of async copies", mlc.swizzle = 128 : i64, {{.*}} : memref<4x64x64xf16, 3 : i64>
// GPU:          %b_shared = memref.alloca() {mlc.promoted = "%b: 64x128 elements {{.*}} read by wgmma; swizzled {{.*}}; 4 stages of async copies", mlc.swizzle = 128 : i64, {{.*}} : memref<4x64x128xf16, 3 : i64>
// GPU:          scf.for %k
// GPU:            loop.async_wait 1
// GPU:            mlc_gpu.barrier {inserted}
// GPU-NOT:        mlc_gpu.barrier
// GPU:            loop.wgmma m64n128k64 %a_shared[%stage{{.*}}], %b_shared[%stage{{.*}}]
// GPU-NOT:        mlc_gpu.barrier
// GPU:            loop.async_copy %a[{{.*}}] to %a_shared[%next_stage
// GPU-NOT:        mlc_gpu.barrier
// GPU:            loop.async_commit
// GPU-NEXT:       loop.wgmma_wait 1
// GPU:          loop.wgmma_wait 0
// GPU:          vector.broadcast
// GPU-NEXT:     vector.insert
// GPU-NEXT:     arith.truncf {{.*}} : vector<2xf32> to vector<2xf16>

// The swizzled buffers are 1024-byte aligned in dynamic shared memory; the copies land at
// XOR-swizzled addresses; each cp.async wait is followed by a proxy fence (wgmma reads through
// the async proxy); the kernel requires sm_90a.
// NVVM:       llvm.mlir.global external @dense_0_matmul_add_relu_dynamic_shared() {addr_space = 3 : i32, alignment = 1024 : i64, mlc.dynamic_shared_bytes = 98560 : i64}
// NVVM:       llvm.func @dense_0_matmul_add_relu
// NVVM-SAME:    mlc.required_arch = "sm_90a"
// NVVM:       builtin.unrealized_conversion_cast {{.*}} to memref<4x64x64xf16, 3 : i64> {mlc.swizzle = 128 : i64}
// NVVM:       llvm.call_intrinsic "llvm.nvvm.cp.async.wait.group"
// NVVM-NEXT:  llvm.inline_asm has_side_effects "fence.proxy.async.shared::cta;"
// NVVM:       llvm.inline_asm has_side_effects "wgmma.fence.sync.aligned;"
// NVVM:       llvm.ptrtoint
// NVVM-COUNT-4: wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16
// NVVM:       "wgmma.commit_group.sync.aligned;"
// NVVM:       arith.xori
// NVVM:       llvm.call_intrinsic "llvm.nvvm.cp.async.cg.shared.global.16"
// NVVM:       "wgmma.wait_group.sync.aligned 1;"
// NVVM:       "wgmma.wait_group.sync.aligned 0;"
// NVVM:       llvm.inline_asm "cvt.rn.f16x2.f32 $0, $1, $2;", "=r,f,f"

// PTX:        .target sm_90a
// PTX:        .visible .entry dense_0_matmul_add_relu(
// PTX:        wgmma.fence.sync.aligned;
// PTX-COUNT-4: wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16
// PTX:        wgmma.commit_group.sync.aligned;
// PTX:        cp.async.cg.shared.global
// PTX:        wgmma.wait_group.sync.aligned 1;
// PTX:        wgmma.wait_group.sync.aligned 0;
// PTX:        cvt.rn.f16x2.f32

// MMA-SYNC:     .target sm_90
// MMA-SYNC-NOT: wgmma
// MMA-SYNC:     mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// PLAIN-LABEL: loop.kernel @plain_0_matmul
// PLAIN:         scf.for %k
// PLAIN:           loop.async_wait 1
// PLAIN:           loop.wgmma m64n128k64
// PLAIN:           loop.async_commit
// PLAIN-NEXT:      loop.wgmma_wait 1
// PLAIN-NEXT:      scf.yield
// PLAIN:         loop.wgmma_wait 0
// PLAIN-NEXT:    loop.async_wait 0
func.func @plain(%a: tensor<128x192xf16>, %b: tensor<192x256xf16>) -> tensor<128x256xf16> {
  %0 = graph.matmul %a, %b : (tensor<128x192xf16>, tensor<192x256xf16>) -> tensor<128x256xf16>
  func.return %0 : tensor<128x256xf16>
}

func.func @dense(%a: tensor<128x192xf16>, %b: tensor<192x256xf16>, %bias: tensor<256xf16>) -> tensor<128x256xf16> {
  %0 = graph.matmul %a, %b : (tensor<128x192xf16>, tensor<192x256xf16>) -> tensor<128x256xf16>
  %1 = graph.add %0, %bias : (tensor<128x256xf16>, tensor<256xf16>) -> tensor<128x256xf16>
  %2 = graph.relu %1 : tensor<128x256xf16>
  func.return %2 : tensor<128x256xf16>
}
