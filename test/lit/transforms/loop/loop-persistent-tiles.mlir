// loop-persistent-tiles: a warp-specialized TMA product (f16 256x512x192 at 64x128x64 blocks: 4 x 4
// tiles, 3 K steps, 4 stages, the staged epilogue) on a persistent grid of 3 blocks, each looping
// over the tiles b, b + 3, ... (16 = 5 * 3 + 1: block 0 runs 6 tiles, the others 5).
//
// RUN: mlc-opt %s -p 'graph-decompose,graph-fuse,convert-graph-to-tile{wgmma=true},convert-tile-to-loop{tensor-cores=true wgmma=true},canonicalize,cse,loop-stage-epilogue,loop-promote-shared{tma=true warp-specialize=true},loop-unroll' > %t.ws.mlir
// RUN: mlc-opt %t.ws.mlir -p 'loop-persistent-tiles{blocks=3}' | tee %t.loop.mlir | filecheck %s
// RUN: mlc-opt %t.loop.mlir -p 'loop-persistent-tiles{blocks=2}' | filecheck %s --check-prefix=AGAIN
// RUN: mlc-opt %t.ws.mlir -p 'loop-persistent-tiles{blocks=16}' | filecheck %s --check-prefix=FEW
// RUN: mlc-opt %t.loop.mlir -p 'convert-loop-to-gpu,gpu-insert-barriers' | filecheck %s --check-prefix=GPU
// RUN: not mlc-opt %t.ws.mlir -p 'loop-persistent-tiles{blocks=0}' 2>&1 | filecheck %s --check-prefix=BAD
// RUN: mlc-opt %s --pass-pipeline='builtin.module(mlc-lower-to-gpu{arch=sm_90 tma=true warp-specialize=true stage-epilogue=true l2-group-tiles=8 persistent-tiles=3})' --dump-pass-pipeline 2>&1 | filecheck %s --check-prefix=NAMED
// RUN: not mlc-opt %s --pass-pipeline='builtin.module(mlc-lower-to-gpu{arch=sm_90 tma=true persistent-tiles=3})' 2>&1 | filecheck %s --check-prefix=NO-WS

// The grid is 3 blocks (block.y gone); the mbarriers are initialized once per block, before the
// roles. The producer's elected thread loops over its tiles (t = b, b + 3, ... < 16; row block t
// mod 4, column block t / 4) and within each over the K steps, its stage and phase counting the
// K steps of its earlier tiles too (g = j * 3 + i): stage g mod 4, released phase (g / 4 + 1) mod 2.
// CHECK:       loop.kernel @dense_0_matmul
// CHECK-SAME:    mlc.persistent_tiles = 3 : i64
// CHECK:         loop.parallel %program0 < 3 mapping block.x {
// CHECK-NOT:       mapping block.y
// CHECK:           loop.parallel %thread < 256 mapping thread.x {
// CHECK:             scf.if %first {
// CHECK:               loop.mbarrier_init %empty
// CHECK:             scf.if %producer {
// CHECK:                 scf.for %tile = %program0 to %[[TILES:.*]] step %[[BLOCKS:.*]] {
// CHECK-NEXT:              %[[ROWS:.*]] = arith.constant 4 : index
// CHECK-NEXT:              %[[ROW:.*]] = arith.remui %tile, %[[ROWS]] : index
// CHECK-NEXT:              %[[ROWS_AGAIN:.*]] = arith.constant 4 : index
// CHECK-NEXT:              %[[COLUMN:.*]] = arith.divui %tile, %[[ROWS_AGAIN]] : index
// CHECK-NEXT:              %m = arith.muli %[[ROW]], %c64 : index
// CHECK:                   %[[LAP:.*]] = arith.subi %tile, %program0 : index
// CHECK-NEXT:              %[[P:.*]] = arith.constant 3 : index
// CHECK-NEXT:              %[[EARLIER:.*]] = arith.divui %[[LAP]], %[[P]] : index
// CHECK-NEXT:              %[[STEPS:.*]] = arith.constant 3 : index
// CHECK-NEXT:              %earlier_steps = arith.muli %[[EARLIER]], %[[STEPS]] : index
// CHECK-NEXT:              scf.for %k = %c0 to %c192 step %c64 {
// CHECK:                     %step_use = arith.addi %earlier_steps, %{{.*}} : index
// CHECK:                     %stage = arith.remui %step_use, %{{.*}} : index
// CHECK:                     %phase = arith.remui %{{.*}}, %{{.*}} : index
// CHECK-NEXT:                loop.mbarrier_wait %empty[%stage], %phase : memref<4xi64, 3 : i64>
// CHECK-NEXT:                loop.mbarrier_arrive %bars[%stage] expect_tx 24576
// CHECK:                     loop.tma_load %a[%{{.*}}] to %a_shared[%stage,
// CHECK:                     loop.tma_load %b[%{{.*}}] to %b_shared[%stage,
// The consumers loop over the same tiles: wait on the full barrier's phase (g / 4) mod 2, multiply,
// release the previous K step's stage; after the last product (wgmma_wait 0) each warp releases
// the tile's last stage (g = j * 3 + 2) after a warp sync, which also orders the warp's reads of
// its staging band in the previous tile before its writes of this one; then the staged epilogue.
// CHECK:           } else {
// CHECK-NEXT:        %{{.*}} = arith.constant 16 : index
// CHECK-NEXT:        %{{.*}} = arith.constant 3 : index
// CHECK-NEXT:        scf.for %tile_1 = %program0 to %{{.*}} step %{{.*}} {
// CHECK:               %earlier_steps_1 = arith.muli
// CHECK:                 %step_use_1 = arith.addi %earlier_steps_1, %{{.*}} : index
// CHECK:                 %stage_1 = arith.remui %step_use_1, %{{.*}} : index
// CHECK:                 loop.mbarrier_wait %bars[%stage_1], %phase_1 : memref<4xi64, 3 : i64>
// CHECK:                 loop.wgmma m64n128k64 %a_shared[%stage_1,
// CHECK:                 loop.wgmma_wait 1
// CHECK:                   loop.mbarrier_arrive %empty[%{{.*}}] : memref<4xi64, 3 : i64>
// CHECK:               loop.wgmma_wait 0
// CHECK-NEXT:          %[[LAST:.*]] = arith.constant 2 : index
// CHECK-NEXT:          %[[LAST_USE:.*]] = arith.addi %earlier_steps_1, %[[LAST]] : index
// CHECK-NEXT:          %[[S:.*]] = arith.constant 4 : index
// CHECK-NEXT:          %[[LAST_STAGE:.*]] = arith.remui %[[LAST_USE]], %[[S]] : index
// CHECK-NEXT:          loop.warp_sync
// CHECK:               scf.if %{{.*}} {
// CHECK-NEXT:            loop.mbarrier_arrive %empty[%[[LAST_STAGE]]] : memref<4xi64, 3 : i64>
// CHECK:               vector.store %{{.*}}, %staging[
// CHECK:           }{mlc.warp_roles = array<i64: 40, 232>}

// A kernel that has the attribute is left alone (its blocks already loop).
// AGAIN:       mlc.persistent_tiles = 3 : i64
// AGAIN:       loop.parallel %program0 < 3 mapping block.x {

// No more tiles than blocks: each block would run one tile; the grid stays.
// FEW-NOT:     mlc.persistent_tiles
// FEW:         loop.parallel %program0 < 4 mapping block.x {
// FEW-NEXT:      loop.parallel %program1 < 4 mapping block.y {

// GPU level: a 1-D grid of 3 blocks; one block barrier, before the roles, none inside them.
// GPU:         mlc_gpu.func @dense_0_matmul({{.*}}) grid [3, 1, 1] block [256, 1, 1]
// GPU:         mlc_gpu.barrier {inserted}
// GPU-NEXT:    scf.if %producer {
// GPU-NOT:     mlc_gpu.barrier
// GPU:         }{mlc.warp_roles = array<i64: 40, 232>}

// BAD: loop-persistent-tiles needs blocks >= 1, got 0

// NAMED:       loop-unroll, loop-group-tiles{l2-bytes=52428800}, loop-persistent-tiles{blocks=3}, convert-loop-to-gpu

// NO-WS: persistent-tiles=P loops the warp-specialized product over tiles: it needs tma=true warp-specialize=true

func.func @dense(%a: tensor<256x192xf16>, %b: tensor<192x512xf16>) -> tensor<256x512xf16> {
  %0 = graph.matmul %a, %b : (tensor<256x192xf16>, tensor<192x512xf16>) -> tensor<256x512xf16>
  func.return %0 : tensor<256x512xf16>
}
