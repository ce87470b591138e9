// TF32 products on Hopper tensor cores through every level of `mlc-lower-to-gpu{arch=sm_90}` down
// to PTX for sm_90a (no GPU needed): wgmma reads a 32-bit B from shared memory K-major only, so a
// row-major B that an epilogue reads is transposed by a kernel of its own
// (graph-transpose-tf32-rhs) and read back K-major, like the torch linear's stored weight, which
// needs no transpose kernel; with swap-operands / tf32-swap (opt-in) a plain product on a row-major
// B is computed transposed instead, C^T = B^T A^T (`mlc.swap_operands`): B's K x N block is wgmma's
// A, loaded into registers.
//
// RUN: mlc-opt %s -p 'graph-decompose,graph-transpose-tf32-rhs{wgmma=true swap-operands=true},graph-fuse,convert-graph-to-tile{wgmma=true}' | tee %t.tile.mlir \
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
// RUN: mlc-opt %s -p 'mlc-lower-to-gpu{arch=sm_90 tma=true warp-specialize=true stage-epilogue=true tf32-swap=true}' | tee %t.default.mlir \
// RUN:   | mlc-translate --mlir-to-ptx --arch sm_90 > %t.default.ptx
// RUN: filecheck %s --check-prefix=DEFAULT < %t.default.mlir
// RUN: filecheck %s --check-prefix=DEFAULT-PTX < %t.default.ptx
// RUN: %if ptxas %{ ptxas -arch=sm_90a %t.default.ptx -o %t.default.cubin %}

// The row-major B: a transpose kernel writes it N x K, the product reads that K-major with the
// bias and relu fused; TF32 wgmma blocks have a K step of 32 f32 (one 128-byte swizzle row).
// TILE:       tile.kernel @row_major_0_transpose(%b: memref<192x512xf32>, %output0: memref<512x192xf32>)
// TILE:       tile.kernel @row_major_1_transpose_matmul_add_relu(%a: memref<256x192xf32>, %input1: memref<512x192xf32>, %bias: memref<{{.*}}xf32>, %output0: memref<256x512xf32>)
// TILE-SAME:    mlc.matmul_tile = array<i64: 64, 128, 32>, mlc.operand_major = ["k", "k"]
// TILE:         tile.dot {{.*}} {precision = "tf32"}
// TILE:       tile.kernel @linear_0_transpose_matmul(%x: memref<256x192xf32>, %w: memref<512x192xf32>, %output0: memref<256x512xf32>)
// The plain product, computed transposed: B's stored 32 x BN block is the dot's lhs (M-major),
// A's BM x 32 block its K-major rhs, the 64 x 64 accumulator C^T's block, scattered into C.
// TILE:       tile.kernel @plain_0_matmul(%a: memref<64x96xf32>, %b: memref<96x128xf32>, %output0: memref<64x128xf32>)
// TILE-SAME:    mlc.matmul_tile = array<i64: 64, 64, 32>, mlc.operand_major = ["m", "k"], mlc.swap_operands
// TILE:         tile.load %b[%k, %n] : memref<96x128xf32> -> !tile.tile<32x64xf32>
// TILE:         tile.load %a[%m, %k] : memref<64x96xf32> -> !tile.tile<64x32xf32>
// TILE:         tile.dot {{.*}} {precision = "tf32"} : !tile.tile<64x32xf32>, !tile.tile<32x64xf32> -> !tile.tile<64x64xf32>
// TILE:         tile.scatter %acc, %output0
// TILE-NOT:   tile.kernel

// One warpgroup product per K step on f32 buffers, both read K-major; the instruction is m64nNk8.
// LOOP:       loop.kernel @row_major_1_transpose_matmul_add_relu
// LOOP-SAME:    mlc.wgmma = array<i64: 64, 128, 8>
// LOOP:         loop.wgmma m64n128k32 %a[%{{.*}}, %k], %input1[%n, %k], ({{.*}}) {mlc.operand_major = ["k", "k"]} : memref<256x192xf32>, memref<512x192xf32>
// LOOP:       loop.kernel @linear_0_transpose_matmul
// LOOP:         loop.wgmma m64n128k32 %x[%{{.*}}, %k], %w[%n, %k], ({{.*}}) {mlc.operand_major = ["k", "k"]} : memref<256x192xf32>, memref<512x192xf32>
// The swapped product: wgmma's A is B's block at [k, n + 64 warpgroup] (M-major), its B A's rows.
// LOOP:       loop.kernel @plain_0_matmul
// LOOP-SAME:    mlc.swap_operands
// LOOP:         loop.wgmma m64n64k32 %b[%k, %{{.*}}], %a[%m, %k], ({{.*}}) {mlc.operand_major = ["m", "k"], mlc.a_register_sets = 2 : i64} : memref<96x128xf32>, memref<64x96xf32>
// LOOP:         memref.store {{.*}}, %output0

// Both staged as rows of 32 f32 (128 bytes), swizzled, by async copies.
// GPU:        mlc_gpu.func @row_major_1_transpose_matmul_add_relu
// GPU:          %a_shared = memref.alloca() {mlc.promoted = "%a: 64x32 elements {{.*}} read by wgmma; swizzled {{.*}}, mlc.swizzle = 128 : i64{{.*}} : memref<{{[0-9]+}}x64x32xf32, 3 : i64>
// GPU:          %input1_shared = memref.alloca() {mlc.promoted = "%input1: 128x32 elements {{.*}} read by wgmma; swizzled {{.*}} : memref<{{[0-9]+}}x128x32xf32, 3 : i64>
// GPU:          loop.async_copy
// GPU:        mlc_gpu.func @plain_0_matmul
// GPU:          %a_shared = memref.alloca() {{.*}} mlc.swizzle = 128 : i64{{.*}} : memref<4x64x32xf32, 3 : i64>
// GPU:          %b_shared = memref.alloca() {{.*}} mlc.swizzle = 128 : i64{{.*}} : memref<4x32x64xf32, 3 : i64>
// Its K loop (3 steps of 32) runs two copies of the product an iteration, so that the A registers
// alternate (mlc.a_register_sets = 2), and the third step after it.
// GPU:          scf.for %k = %{{.*}} to %{{.*}} step %{{.*}} iter_args(
// GPU-COUNT-2:    loop.wgmma m64n64k32 %b_shared{{.*}} mlc.a_register_sets = 2 : i64
// GPU:            scf.yield
// GPU-NEXT:     }
// GPU:          loop.wgmma m64n64k32 %b_shared{{.*}} mlc.a_register_sets = 2 : i64
// GPU-NOT:      loop.wgmma m64

// TF32 wgmma has no transpose immediates: d, a-desc, b-desc, scale-d, imm-scale-a, imm-scale-b.
// NVVM:       llvm.func @row_major_1_transpose_matmul_add_relu
// NVVM:         wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {{.*}}, p, 1, 1; }
// The swapped product's A from registers: 4 32-bit shared loads a step of 8 (16 for K = 32), then
// the register-A form.
// Each copy's loads wait only until one product group is in flight: the registers they rewrite
// were read by the product two steps back.
// NVVM:       llvm.func @plain_0_matmul
// NVVM:         llvm.nvvm.read.ptx.sreg.tid.x
// NVVM:         "wgmma.wait_group.sync.aligned 1;", ""
// NVVM-COUNT-16: llvm.load %{{.*}} : !llvm.ptr<3> -> i32
// NVVM:         wgmma.fence.sync.aligned;
// NVVM:         wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 {{.*}}, {$64,$65,$66,$67}, $68, p, 1, 1; }

// PTX:        .target sm_90a
// PTX:        .visible .entry row_major_1_transpose_matmul_add_relu(
// PTX-COUNT-4: wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32
// PTX:        .visible .entry linear_0_transpose_matmul(
// PTX:        wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32
// PTX:        .visible .entry plain_0_matmul(
// PTX:        ld.shared.b32
// PTX:        wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 {{.*}}, {%r{{[0-9]+}},%r{{[0-9]+}},%r{{[0-9]+}},%r{{[0-9]+}}}, %rd{{[0-9]+}}, p, 1, 1;

// mlc.compile's sm_90 default: the f32 operands arrive by bulk tensor copies, boxes of 32 f32 (one
// 128-byte swizzle row) of A and of B's N x K rows (the transpose kernel's output, 512 x 192).
// The bias and relu compute on the f32 accumulators, so the products wait in each K step: a
// lockstep TMA pipeline of 4 stages, fragment stores. The linear's products stay in flight: a
// producer warpgroup (256 threads), its tile stored through shared memory.
// DEFAULT:      llvm.func @row_major_1_transpose_matmul_add_relu
// DEFAULT-NOT:    mlc.staged_epilogue
// DEFAULT-SAME:   mlc.pipeline_stages = 4 : i64, mlc.tma,
// DEFAULT-NOT:    mlc.staged_epilogue
// DEFAULT-SAME:   nvvm.maxntid = array<i32: 128, 1, 1>, mlc.tensor_map_views = [array<i64: 256, 192>, array<i64: 512, 192>], mlc.tensor_maps = [array<i64: 0, 128, 64, 32>, array<i64: 1, 128, 128, 32>]
// DEFAULT:      llvm.func @linear_0_transpose_matmul
// DEFAULT-SAME:   mlc.staged_epilogue = array<i64: 16, 128, 132>, mlc.tma
// DEFAULT-SAME:   nvvm.maxntid = array<i32: 256, 1, 1>
// DEFAULT-SAME:   mlc.tensor_maps = [array<i64: 0, 128, 64, 32>, array<i64: 1, 128, 128, 32>]
// DEFAULT:        setmaxnreg.dec.sync.aligned.u32
// DEFAULT:        llvm.nvvm.cp.async.bulk.tensor.g2s.tile.2d
// The swapped product: a producer warpgroup, B's K x 64 block in boxes of 32 x 32 f32 (one
// swizzle row of M each), A's in boxes of 64 rows of 32 f32; no staged epilogue (scattered stores).
// DEFAULT:      llvm.func @plain_0_matmul
// DEFAULT-NOT:    mlc.staged_epilogue
// DEFAULT-SAME:   mlc.pipeline_stages = 4 : i64, mlc.swap_operands, mlc.tma,
// DEFAULT-SAME:   nvvm.maxntid = array<i32: 256, 1, 1>
// DEFAULT-SAME:   mlc.tensor_maps = [array<i64: 0, 128, 64, 32>, array<i64: 1, 128, 32, 32>]
// DEFAULT-PTX:  .visible .entry row_major_1_transpose_matmul_add_relu(
// DEFAULT-PTX:    cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// DEFAULT-PTX:    wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32
// DEFAULT-PTX:  .visible .entry linear_0_transpose_matmul(
// DEFAULT-PTX:    cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// DEFAULT-PTX:    wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32
// DEFAULT-PTX:    st.global.v4.b32
// DEFAULT-PTX:  .visible .entry plain_0_matmul(
// DEFAULT-PTX:    cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// DEFAULT-PTX:    ld.shared.b32
// DEFAULT-PTX:    wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32

func.func @row_major(%a: tensor<256x192xf32>, %b: tensor<192x512xf32>, %bias: tensor<512xf32>) -> tensor<256x512xf32> {
  %p = graph.matmul %a, %b {precision = "tf32"} : (tensor<256x192xf32>, tensor<192x512xf32>) -> tensor<256x512xf32>
  %s = graph.add %p, %bias : (tensor<256x512xf32>, tensor<512xf32>) -> tensor<256x512xf32>
  %r = graph.relu %s : tensor<256x512xf32>
  func.return %r : tensor<256x512xf32>
}

func.func @linear(%x: tensor<256x192xf32>, %w: tensor<512x192xf32>) -> tensor<256x512xf32> {
  %wt = graph.transpose %w perm [1, 0] : tensor<512x192xf32> to tensor<192x512xf32>
  %y = graph.matmul %x, %wt {precision = "tf32"} : (tensor<256x192xf32>, tensor<192x512xf32>) -> tensor<256x512xf32>
  func.return %y : tensor<256x512xf32>
}

func.func @plain(%a: tensor<64x96xf32>, %b: tensor<96x128xf32>) -> tensor<64x128xf32> {
  %p = graph.matmul %a, %b {precision = "tf32"} : (tensor<64x96xf32>, tensor<96x128xf32>) -> tensor<64x128xf32>
  func.return %p : tensor<64x128xf32>
}
