// The warp-specialized TMA staging of wgmma operands (`mlc-lower-to-gpu{arch=sm_90 tma=true
// warp-specialize=true}`, i.e. loop-promote-shared{tma=true warp-specialize=true},
// warp_specialization.py): an f16 matmul with a bias-and-relu epilogue, 64x128x64 blocks (one
// consumer warpgroup), K = 192 (3 K steps), 4 stages, through every level down to PTX for sm_90a.
//
// RUN: mlc-opt %s -p 'graph-decompose,graph-fuse,convert-graph-to-tile{wgmma=true},convert-tile-to-loop{tensor-cores=true wgmma=true},canonicalize,cse,loop-promote-shared{tma=true warp-specialize=true}' | tee %t.loop.mlir \
// RUN:   | mlc-opt -p loop-unroll,convert-loop-to-gpu,gpu-insert-barriers | tee %t.gpu.mlir \
// RUN:   | mlc-opt -p convert-gpu-to-nvvm | tee %t.nvvm.mlir \
// RUN:   | mlc-opt -p convert-scf-to-cf,convert-vector-to-llvm,convert-memref-to-llvm,convert-math-to-llvm{library=\"libdevice\"},convert-arith-to-llvm,convert-cf-to-llvm,reconcile-unrealized-casts \
// RUN:   | mlc-translate --mlir-to-ptx --arch sm_90 | tee %t.ptx | filecheck %s --check-prefix=PTX
// RUN: filecheck %s --check-prefix=LOOP < %t.loop.mlir
// RUN: filecheck %s --check-prefix=GPU < %t.gpu.mlir
// RUN: filecheck %s --check-prefix=NVVM < %t.nvvm.mlir
// RUN: mlc-opt %s --pass-pipeline='builtin.module(mlc-lower-to-gpu{arch=sm_90 tma=true warp-specialize=true})' | filecheck %s --check-prefix=NAMED
// RUN: not mlc-opt %s --pass-pipeline='builtin.module(mlc-lower-to-gpu{arch=sm_90 warp-specialize=true})' 2>&1 | filecheck %s --check-prefix=NO-TMA
// RUN: %if ptxas %{ ptxas -v -arch=sm_90a %t.ptx -o %t.cubin 2>&1 | filecheck %s --check-prefix=PTXAS %}

// Loop level: 128 consumer threads and a producer warpgroup (the thread loop 256 wide), one block
// per multiprocessor (setmaxnreg needs it); full barriers (%bars: one arrival with the bytes) and
// empty ones (one arrival per consumer warp, by its lane 0 after a warp_sync). The producer's elected thread (thread 128) loops
// over every K step: waits for the stage's release (parity (i / 4 + 1) mod 2: the first use of a
// stage passes at once), announces both boxes' bytes and issues them; the consumers wait on the
// full barrier, multiply, keep the product in flight (wgmma_wait 1) and then release the stage
// the previous product read. No copy is issued before the roles.
// LOOP:       loop.kernel @dense_0_matmul_add_relu
// LOOP-SAME:    mlc.tma
// LOOP-SAME:    mlc.min_blocks_per_multiprocessor = 1
// LOOP:         %bars = memref.alloca() {{.*}} : memref<4xi64, 3 : i64>
// LOOP-NEXT:    %empty = memref.alloca() {{.*}} : memref<4xi64, 3 : i64>
// LOOP:         loop.parallel %thread < 256 mapping thread.x {
// LOOP-NOT:       loop.tma_load
// LOOP:           scf.if %first {
// LOOP-COUNT-4:     loop.mbarrier_init %bars[%{{.*}}], 1 : memref<4xi64, 3 : i64>
// LOOP-COUNT-4:     loop.mbarrier_init %empty[%{{.*}}], 4 : memref<4xi64, 3 : i64>
// LOOP-NOT:       loop.tma_load
// LOOP:           %producer = arith.cmpi uge, %thread, %{{.*}} : index
// LOOP-NEXT:      scf.if %producer {
// LOOP:             %[[ELECTED:.*]] = arith.cmpi eq, %thread, %{{.*}} : index
// LOOP-NEXT:        scf.if %[[ELECTED]] {
// LOOP-NEXT:          scf.for %k = %{{.*}} to %{{.*}} step %{{.*}} {
// LOOP:                 loop.mbarrier_wait %empty[%stage], %released : memref<4xi64, 3 : i64>
// LOOP-NEXT:            loop.mbarrier_arrive %bars[%stage] expect_tx 24576 : memref<4xi64, 3 : i64>
// LOOP:                 loop.tma_load %a[%{{.*}}, %{{.*}}] to %a_shared[%stage, %{{.*}}, %{{.*}}], %bars[%stage]
// LOOP:                 loop.tma_load %b[%{{.*}}, %{{.*}}] to %b_shared[%stage, %{{.*}}, %{{.*}}], %bars[%stage]
// LOOP:           } else {
// LOOP:             scf.for %k_1 =
// LOOP:               loop.mbarrier_wait %bars[%[[STAGE:.*]]], %parity : memref<4xi64, 3 : i64>
// LOOP:               loop.wgmma m64n128k64
// LOOP-NOT:           loop.tma_load
// LOOP:               loop.wgmma_wait 1
// LOOP:               scf.if %{{.*}} {
// LOOP:                 loop.warp_sync
// LOOP:                 %[[LANE:.*]] = arith.remui %thread, %{{.*}} : index
// LOOP:                 %warp_leader = arith.cmpi eq, %[[LANE]], %{{.*}} : index
// LOOP-NEXT:            scf.if %warp_leader {
// LOOP-NEXT:              loop.mbarrier_arrive %empty[%{{.*}}] : memref<4xi64, 3 : i64>
// LOOP:             loop.wgmma_wait 0
// LOOP:           }{mlc.warp_roles = array<i64: 40, 232>}

// GPU level: a block of 256 threads; one barrier, before the roles (the mbarriers' and the bias's
// initialization before their use); none in either role.
// GPU:          mlc_gpu.func @dense_0_matmul_add_relu({{.*}}) grid [2, 2, 1] block [256, 1, 1]
// GPU:          mlc_gpu.barrier {inserted}
// GPU-NEXT:     scf.if %producer {
// GPU-NOT:      mlc_gpu.barrier
// GPU:          }{mlc.warp_roles = array<i64: 40, 232>}

// NVVM level: the producer gives registers back, the consumers take them.
// NVVM:         scf.if %producer {
// NVVM-NEXT:      llvm.inline_asm has_side_effects "setmaxnreg.dec.sync.aligned.u32 40;"
// NVVM:         } else {
// NVVM-NEXT:      llvm.inline_asm has_side_effects "setmaxnreg.inc.sync.aligned.u32 232;"

// PTX:        .maxntid 256, 1, 1
// PTX:        .minnctapersm 1
// PTX:        bar.sync
// PTX-NOT:    bar.sync
// PTX:        setmaxnreg.dec.sync.aligned.u32 40;
// PTX:        mbarrier.try_wait.parity.shared::cta.b64
// PTX:        cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// PTX:        setmaxnreg.inc.sync.aligned.u32 232;
// PTX:        wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16
// PTX:        bar.warp.sync -1;
// PTX:        mbarrier.arrive.shared::cta.b64
// NAMED:      setmaxnreg.dec.sync.aligned.u32 40;
// NO-TMA:     warp-specialize=true splits the TMA pipeline: it needs tma=true
// PTXAS-NOT:  C7508
// PTXAS:      0 bytes spill stores, 0 bytes spill loads

func.func @dense(%a: tensor<128x192xf16>, %b: tensor<192x256xf16>, %bias: tensor<256xf16>) -> tensor<128x256xf16> {
  %0 = graph.matmul %a, %b : (tensor<128x192xf16>, tensor<192x256xf16>) -> tensor<128x256xf16>
  %1 = graph.add %0, %bias : (tensor<128x256xf16>, tensor<256xf16>) -> tensor<128x256xf16>
  %2 = graph.relu %1 : tensor<128x256xf16>
  func.return %2 : tensor<128x256xf16>
}
