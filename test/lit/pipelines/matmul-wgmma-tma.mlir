// The opt-in TMA staging of wgmma operands (`mlc-lower-to-gpu{arch=sm_90 tma=true}`, i.e.
// loop-promote-shared{tma=true}): an f16 matmul with a bias-and-relu epilogue, 64x128x64 blocks,
// K = 192 (3 K steps), 4 stages, through every level down to PTX for sm_90a (no GPU needed).
//
// RUN: mlc-opt %s -p 'graph-decompose,graph-fuse,convert-graph-to-tile{wgmma=true},convert-tile-to-loop{tensor-cores=true wgmma=true},canonicalize,cse,loop-promote-shared{tma=true}' | tee %t.loop.mlir \
// RUN:   | mlc-opt -p loop-unroll,convert-loop-to-gpu,gpu-insert-barriers | tee %t.gpu.mlir \
// RUN:   | mlc-opt -p convert-gpu-to-nvvm | tee %t.nvvm.mlir \
// RUN:   | mlc-opt -p convert-scf-to-cf,convert-vector-to-llvm,convert-memref-to-llvm,convert-math-to-llvm{library=\"libdevice\"},convert-arith-to-llvm,convert-cf-to-llvm,reconcile-unrealized-casts \
// RUN:   | mlc-translate --mlir-to-ptx --arch sm_90 | tee %t.ptx | filecheck %s --check-prefix=PTX
// RUN: filecheck %s --check-prefix=LOOP < %t.loop.mlir
// RUN: filecheck %s --check-prefix=GPU < %t.gpu.mlir
// RUN: filecheck %s --check-prefix=NVVM < %t.nvvm.mlir
// The named pipeline with the option takes the same path; without it, cp.async:
// RUN: mlc-opt %s --pass-pipeline='builtin.module(mlc-lower-to-gpu{arch=sm_90 tma=true})' | filecheck %s --check-prefix=NAMED
// RUN: mlc-opt %s --pass-pipeline='builtin.module(mlc-lower-to-gpu{arch=sm_90})' | filecheck %s --check-prefix=CP-ASYNC
// RUN: not mlc-opt %s --pass-pipeline='builtin.module(mlc-lower-to-gpu{tma=true})' 2>&1 | filecheck %s --check-prefix=NO-ARCH
// RUN: %if ptxas %{ ptxas -v -arch=sm_90a %t.ptx -o %t.cubin 2>&1 | filecheck %s --check-prefix=PTXAS %}

// Loop level: the kernel is marked mlc.tma; one mbarrier per stage; thread 0 initializes them,
// then issues the first two K steps (4 stages, a product in flight: 2 ahead), each one arrival
// announcing both boxes' bytes (64x64 + 64x128 f16 = 24576) and one bulk copy per operand. In
// the K loop every thread waits on its stage's phase, the product reads the stage, then thread 0
// issues the step 2 ahead (only up to the last K step; after the product, as with cp.async) and
// the product stays in flight until the next step's wgmma_wait 1.
// LOOP:       loop.kernel @dense_0_matmul_add_relu
// LOOP-SAME:    mlc.tma
// LOOP:         %a_shared = memref.alloca() {mlc.promoted = "{{.*}}4 stages of bulk tensor copies", mlc.swizzle = 128 : i64{{.*}}} : memref<4x64x64xf16, 3 : i64>
// LOOP-NEXT:    %bars = memref.alloca() {{.*}} : memref<4xi64, 3 : i64>
// LOOP:         %first = arith.cmpi eq, %thread, %{{.*}} : index
// LOOP:         scf.if %first {
// LOOP-COUNT-4:   loop.mbarrier_init %bars[%{{.*}}], 1 : memref<4xi64, 3 : i64>
// LOOP-COUNT-2: loop.mbarrier_arrive %bars[%{{.*}}] expect_tx 24576
// LOOP:         scf.for %k =
// LOOP:           loop.mbarrier_wait %bars[%stage], %parity : memref<4xi64, 3 : i64>
// LOOP:           loop.wgmma m64n128k64 %a_shared[%stage, {{.*}}], %b_shared[%stage,
// LOOP:           %[[MORE:.*]] = arith.cmpi ule, %next, %{{.*}} : index
// LOOP:           %[[ISSUE:.*]] = arith.andi %first, %[[MORE]] : i1
// LOOP-NEXT:      scf.if %[[ISSUE]] {
// LOOP-NEXT:        loop.mbarrier_arrive %bars[%next_stage] expect_tx 24576 : memref<4xi64, 3 : i64>
// LOOP:             loop.tma_load %a[%{{.*}}, %{{.*}}] to %a_shared[%next_stage, %{{.*}}, %{{.*}}], %bars[%next_stage] : memref<128x192xf16> to memref<4x64x64xf16, 3 : i64>, memref<4xi64, 3 : i64>
// LOOP:             loop.tma_load %b[%{{.*}}, %{{.*}}] to %b_shared[%next_stage, %{{.*}}, %{{.*}}], %bars[%next_stage] : memref<192x256xf16> to memref<4x64x128xf16, 3 : i64>, memref<4xi64, 3 : i64>
// LOOP:           loop.wgmma_wait 1
// LOOP:         loop.wgmma_wait 0
// LOOP-NOT:     loop.async_copy

// GPU level: one barrier after the prologue (the barriers' initialization before the waits of
// other threads) and one per K step, before the issuing branch (every thread's wait for the
// product that read the stage it refills, two steps ago, before the copies); none between the
// mbarrier wait and the product.
// GPU:          loop.tma_load %b
// GPU:          mlc_gpu.barrier {inserted}
// GPU-NEXT:     scf.for %k =
// GPU:            loop.mbarrier_wait %bars[%stage], %parity
// GPU-NOT:        mlc_gpu.barrier
// GPU:            loop.wgmma m64n128k64
// GPU-NOT:        mlc_gpu.barrier
// GPU:            arith.andi %first
// GPU-NEXT:       mlc_gpu.barrier {inserted}
// GPU-NEXT:       scf.if
// GPU-NOT:        mlc_gpu.barrier
// GPU:            loop.wgmma_wait 1

// NVVM level: two trailing tensor-map parameters (A and B: 64x64 boxes, 128-byte swizzle),
// acquired at entry; the copies and mbarrier operations as NVVM intrinsics and inline PTX.
// NVVM:       llvm.func @dense_0_matmul_add_relu(%a: !llvm.ptr {llvm.noalias}, %b: !llvm.ptr {llvm.noalias}, %bias: !llvm.ptr {llvm.noalias}, %output0: !llvm.ptr {llvm.noalias}, %map0: !llvm.ptr, %map1: !llvm.ptr)
// NVVM-SAME:    mlc.tensor_maps = [array<i64: 0, 128, 64, 64>, array<i64: 1, 128, 64, 64>], mlc.required_arch = "sm_90a"
// NVVM-NEXT:    fence.proxy.tensormap::generic.acquire.gpu
// NVVM-NEXT:    fence.proxy.tensormap::generic.acquire.gpu
// NVVM:         "llvm.nvvm.mbarrier.init.shared"
// NVVM:         "llvm.nvvm.cp.async.bulk.tensor.g2s.tile.2d"({{.*}}, %map0,
// NVVM:         "llvm.nvvm.cp.async.bulk.tensor.g2s.tile.2d"({{.*}}, %map1,
// NVVM:         mbarrier.try_wait.parity.shared::cta.b64
// NVVM-NOT:     llvm.nvvm.cp.async.cg

// In the PTX, ISA 8.3 (the tensor-map fence), bulk tensor copies completing on mbarriers, no cp.async.
// PTX:        .version 8.3
// PTX:        .target sm_90a
// PTX:        .entry dense_0_matmul_add_relu(
// PTX:        fence.proxy.tensormap::generic.acquire.gpu
// PTX:        mbarrier.init.shared.b64
// PTX:        cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// PTX:        mbarrier.try_wait.parity.shared::cta.b64
// PTX:        wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16
// PTX-NOT:    cp.async.cg.shared.global
// NAMED:      mlc.tensor_maps = [array<i64: 0, 128, 64, 64>, array<i64: 1, 128, 64, 64>]
// NAMED:      llvm.nvvm.cp.async.bulk.tensor.g2s.tile.2d
// NAMED-NOT:  llvm.nvvm.cp.async.cg
// CP-ASYNC:   llvm.nvvm.cp.async.cg.shared.global
// CP-ASYNC-NOT: bulk.tensor
// NO-ARCH:    tma=true stages wgmma operands: it needs arch=sm_90 or sm_90a
// PTXAS-NOT:  C7514
// PTXAS:      0 bytes spill stores, 0 bytes spill loads

func.func @dense(%a: tensor<128x192xf16>, %b: tensor<192x256xf16>, %bias: tensor<256xf16>) -> tensor<128x256xf16> {
  %0 = graph.matmul %a, %b : (tensor<128x192xf16>, tensor<192x256xf16>) -> tensor<128x256xf16>
  %1 = graph.add %0, %bias : (tensor<128x256xf16>, tensor<256xf16>) -> tensor<128x256xf16>
  %2 = graph.relu %1 : tensor<128x256xf16>
  func.return %2 : tensor<128x256xf16>
}
