// loop-stage-epilogue: a wgmma kernel's tile stored through shared memory, 16 bytes a lane. An f16
// matmul 70x72x200 with a bias and a relu at 128x64x64 blocks (8 warps, each a band of 16 x 64):
// the fragment's pairs go to %staging[warp, row mod 16, column mod 64] (rows padded to 72), then
// each warp stores its band in 4 steps of 32 lanes x 8 elements (8 chunks a row), masked by the
// output's 70 rows and 72 columns; the output 16-byte aligned (the last of mlc.arg_alignment).
//
// RUN: mlc-opt %s -p 'graph-decompose,graph-fuse,convert-graph-to-tile{wgmma=true matmul-tile=128,64,64},convert-tile-to-loop{tensor-cores=true wgmma=true},canonicalize,cse,loop-stage-epilogue' | tee %t.loop.mlir | filecheck %s
// RUN: mlc-opt %t.loop.mlir -p loop-stage-epilogue | filecheck %s --check-prefix=AGAIN
// RUN: mlc-opt %t.loop.mlir -p loop-promote-shared,loop-unroll,convert-loop-to-gpu,gpu-insert-barriers | filecheck %s --check-prefix=GPU
// RUN: mlc-opt %s --pass-pipeline='builtin.module(mlc-lower-to-gpu{arch=sm_90 tma=true warp-specialize=true stage-epilogue=true})' | tee %t.nvvm.mlir | filecheck %s --check-prefix=WS
// RUN: mlc-translate --mlir-to-ptx --arch sm_90 %t.nvvm.mlir | tee %t.ptx | filecheck %s --check-prefix=PTX
// RUN: not mlc-opt %s --pass-pipeline='builtin.module(mlc-lower-to-gpu{arch=sm_90 stage-epilogue=true})' 2>&1 | filecheck %s --check-prefix=NO-WS
// RUN: %if ptxas %{ ptxas -v -arch=sm_90a %t.ptx -o %t.cubin 2>&1 | filecheck %s --check-prefix=PTXAS %}
// RUN: sed -n 's|^// INPUT-QUARTER: ||p' %s | mlc-opt -p 'graph-decompose,graph-fuse,convert-graph-to-tile{wgmma=true matmul-tile=128,256,32},convert-tile-to-loop{tensor-cores=true wgmma=true},canonicalize,cse,loop-stage-epilogue' | filecheck %s --check-prefix=QUARTER

// CHECK-LABEL: loop.kernel @dense_0_matmul_add_relu
// CHECK-SAME:    mlc.arg_alignment = array<i64: 2, 2, 4, 16>
// CHECK-SAME:    mlc.staged_epilogue = array<i64: 16, 64, 72>
// CHECK:         %staging = memref.alloca() {mlc.epilogue_staging, alignment = 16 : i64} : memref<8x16x72xf16, 3 : i64>
// CHECK-NEXT:    loop.parallel %thread < 256 mapping thread.x {
// CHECK:           %band_warp = arith.divui %thread, %{{.*}} : index
// CHECK:           %band_lane = arith.remui %thread, %{{.*}} : index
// CHECK:           scf.for
// CHECK-NOT:       vector.store {{.*}} %output0
// CHECK:           vector.store %{{.*}}, %staging[%band_warp, %{{.*}}, %{{.*}}] : memref<8x16x72xf16, 3 : i64>, vector<2xf16>
// CHECK:           %band_row = arith.subi
// CHECK:           %band_column = arith.subi
// CHECK-COUNT-4:   vector.load %staging[%band_warp, %{{.*}}, %{{.*}}] : memref<8x16x72xf16, 3 : i64>, vector<8xf16>
// CHECK-NOT:       vector.load %staging
// CHECK:           loop.return
// AGAIN-COUNT-1:   memref.alloca() {mlc.epilogue_staging
// AGAIN-NOT:       mlc.epilogue_staging

// A warp sync, no block barrier, between the fragment writes and the chunk reads: the staging's
// first index is the warp (the remainders drop the block's origin, so the analysis knows each
// thread's elements), and gpu-insert-barriers knows a warp sync orders a warp's lanes.
// GPU:         vector.store {{.*}} %staging
// GPU-NOT:     mlc_gpu.barrier
// GPU:         loop.warp_sync
// GPU-NOT:     mlc_gpu.barrier
// GPU:         vector.load %staging
// GPU-NOT:     mlc_gpu.barrier
// GPU:         mlc_gpu.return

// Inside warp roles: the epilogue in the consumers' branch, after the roles' register moves.
// WS:          setmaxnreg.inc.sync.aligned.u32 232
// WS:          llvm.nvvm.bar.warp.sync
// WS:          vector<8xf16>
// PTX: st.shared.v2.b16
// PTX: ld.shared.v4.b32
// PTX: st.global.v4.b32
// NO-WS: stage-epilogue=true stages the tiles of warp-specialized kernels: it needs tma=true warp-specialize=true
// PTXAS: 0 bytes spill stores, 0 bytes spill loads

func.func @dense(%a: tensor<70x200xf16>, %b: tensor<200x72xf16>, %bias: tensor<72xf16>) -> tensor<70x72xf16> {
  %0 = graph.matmul %a, %b : (tensor<70x200xf16>, tensor<200x72xf16>) -> tensor<70x72xf16>
  %1 = graph.add %0, %bias : (tensor<70x72xf16>, tensor<72xf16>) -> tensor<70x72xf16>
  %2 = graph.relu %1 : tensor<70x72xf16>
  func.return %2 : tensor<70x72xf16>
}

// A quarter band, where a half would cost a stage: a TF32 linear at 128x256x32 blocks (f32
// outputs, 48 KiB a stage; 8 warps, each a band of 16 x 256). Half a band (8 x 8 x 260 f32, 65
// KiB) would leave room for 3 stages, a quarter for the kernel's 4: rows 0-7 then 8-15, each in
// two column parts of 128 (8 x 8 x 132 f32, 33 KiB), four rounds: each fragment store under its
// round's row half and column part, each round's 8 steps of 32 lanes x 4 f32 at the band's origin
// plus the part's (rows + 0 or 8, columns + 0 or 128), a warp sync before each round's reads and
// before each later round's writes. The input (a second module, read by the RUN line's sed):
// INPUT-QUARTER: func.func @linear(%x: tensor<200x96xf32>, %w: tensor<264x96xf32>) -> tensor<200x264xf32> {
// INPUT-QUARTER:   %wt = graph.transpose %w perm [1, 0] : tensor<264x96xf32> to tensor<96x264xf32>
// INPUT-QUARTER:   %0 = graph.matmul %x, %wt {precision = "tf32"} : (tensor<200x96xf32>, tensor<96x264xf32>) -> tensor<200x264xf32>
// INPUT-QUARTER:   func.return %0 : tensor<200x264xf32>
// INPUT-QUARTER: }
// QUARTER-LABEL: loop.kernel @linear_0_transpose_matmul
// QUARTER-SAME:    mlc.pipeline_stages = 4
// QUARTER-SAME:    mlc.staged_epilogue = array<i64: 8, 128, 132>
// QUARTER:         %staging = memref.alloca() {mlc.epilogue_staging, alignment = 16 : i64} : memref<8x8x132xf32, 3 : i64>
// QUARTER:         vector.store %{{.*}}, %staging[%band_warp, %{{.*}}, %{{.*}}] : memref<8x8x132xf32, 3 : i64>, vector<2xf32>
// QUARTER-COUNT-8: vector.load %staging[%band_warp, %{{.*}}, %{{.*}}] : memref<8x8x132xf32, 3 : i64>, vector<4xf32>
// QUARTER:         loop.warp_sync
// QUARTER:         vector.store %{{.*}}, %staging
// QUARTER:         loop.warp_sync
// QUARTER-COUNT-8: vector.load %staging
// QUARTER:         loop.warp_sync
// QUARTER:         loop.warp_sync
// QUARTER-COUNT-8: vector.load %staging
// QUARTER:         loop.warp_sync
// QUARTER:         loop.warp_sync
// QUARTER-COUNT-8: vector.load %staging
// QUARTER-NOT:     vector.load %staging
// QUARTER-NOT:     loop.warp_sync
// QUARTER:         loop.return
