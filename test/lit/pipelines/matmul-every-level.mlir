// A matmul with a bias-and-relu epilogue carried through every level of the GPU lowering, each
// level printed and parsed back in by the next mlc-opt, down to PTX (no GPU needed).
//
// RUN: mlc-opt %s -p graph-decompose,graph-fuse,convert-graph-to-tile | tee %t.tile.mlir | mlc-opt -p convert-tile-to-loop | tee %t.loop.mlir \
// RUN:   | mlc-opt -p loop-promote-shared | tee %t.shared.mlir | mlc-opt -p loop-unroll,convert-loop-to-gpu,gpu-insert-barriers | tee %t.gpu.mlir \
// RUN:   | mlc-opt -p convert-gpu-to-nvvm \
// RUN:   | mlc-opt -p convert-scf-to-cf,convert-vector-to-llvm,convert-memref-to-llvm,convert-math-to-llvm{library=\"libdevice\"},convert-arith-to-llvm,convert-cf-to-llvm,reconcile-unrealized-casts \
// RUN:   | mlc-translate --mlir-to-ptx | filecheck %s --check-prefix=PTX
// RUN: filecheck %s --check-prefix=TILE < %t.tile.mlir
// RUN: filecheck %s --check-prefix=LOOP < %t.loop.mlir
// RUN: filecheck %s --check-prefix=SHARED < %t.shared.mlir
// RUN: filecheck %s --check-prefix=GPU < %t.gpu.mlir
// The named pipelines give the same kernel, and the CPU one (vector micro-kernels of the host's
// width, convert-tile-dot-to-cpu) compiles for the host:
// RUN: mlc-opt %s --pass-pipeline='builtin.module(mlc-lower-to-gpu)' -t ptx | filecheck %s --check-prefix=PTX
// RUN: mlc-opt %s --pass-pipeline='builtin.module(mlc-lower-to-cpu)' | mlc-translate --mlir-to-llvmir | filecheck %s --check-prefix=CPU

// TILE:       tile.kernel @dense_0_matmul_add_relu({{.*}}) grid [4, 4] num_warps 8 attributes {mlc.matmul_tile = array<i64: 64, 64, 16>}
// TILE:         scf.for %k
// TILE:           tile.dot
// TILE:         tile.map %acc
// LOOP:       loop.kernel @dense_0_matmul_add_relu({{.*}}) attributes {mlc.arg_alignment = array<i64: 4, 16, 16, 16>, mlc.micro_tile = array<i64: 4, 4>, mlc.warp_tile = array<i64: 16, 32>}
// LOOP:         loop.parallel %thread < 256 mapping thread.x
// LOOP:           scf.for %k
// LOOP:             scf.for %kk
// LOOP:               memref.load {{.*}} {mlc.operand = "lhs"}
// LOOP:               vector.load {{.*}} {alignment = 16 : i64, mlc.operand = "rhs"}
// LOOP:               math.fma
// LOOP:             } {mlc.dot = array<i64: 4, 4>, mlc.unroll}
// LOOP:           arith.maximumf
// LOOP:           vector.store
// SHARED:     loop.kernel @dense_0_matmul_add_relu({{.*}}) attributes {mlc.arg_alignment = array<i64: 16, 16, 16, 16>
// The A panel of a block (64x128: all of K) fits in shared memory and is copied once, transposed
// so that a thread's four neighbouring rows are one vector; the B panel is staged per iteration of
// the K loop; the bias row, read by 16 rows of threads, too.
// SHARED:       %x_shared = memref.alloca() {mlc.promoted = "%x: 64x128 elements read 131072 times by 256 threads in the thread loop (16x reuse); stored transposed, read 4 neighbours at a time; rows padded by 4
// SHARED-SAME:    memref<128x68xf32, 3 : i64>
// SHARED:       %w_shared = memref.alloca() {mlc.promoted = "%w: 16x64 elements read 16384 times by 256 threads in each iteration of %k (16x reuse)
// SHARED:       %b_shared = memref.alloca() {mlc.promoted = "%b: 1x64 elements
// SHARED:         scf.for %k
// SHARED:           vector.load %x_shared[%{{.*}}, %{{.*}}] {alignment = 16 : i64, mlc.operand = "lhs"}
// SHARED:           vector.load %w_shared
// GPU:        mlc_gpu.func @dense_0_matmul_add_relu({{.*}}) grid [4, 4, 1] block [256, 1, 1]
// The dot's 16 K steps are unrolled: no loop inside the K loop. One barrier precedes the store of
// the carried B panel (write after read), one its first read (read after write); the A panel was
// copied before the loop, so the first step's A read needs no barrier.
// GPU:          scf.for %k
// GPU:            mlc_gpu.barrier {inserted}
// GPU-NEXT:       vector.store %{{.*}}, %w_shared
// GPU-NOT:        scf.for
// GPU:            vector.load %x_shared
// GPU:            mlc_gpu.barrier {inserted}
// GPU-NEXT:       vector.load %w_shared
// GPU-COUNT-15:   vector.load %x_shared
// GPU-NOT:        scf.for
// GPU:            scf.yield
// PTX:        .visible .entry dense_0_matmul_add_relu(
// PTX:        .maxntid 256, 1, 1
// PTX:        ld.global.nc.v4
// PTX:        st.shared.v4
// PTX:        bar.sync
// PTX:        ld.shared.v4
// PTX:        fma.rn.f32
// PTX:        st.global.v4
// CPU:        define void @dense_0_matmul_add_relu__programs(
// CPU:          call <{{[0-9]+}} x float> @llvm.fma.v{{[0-9]+}}f32(
func.func @dense(%x: tensor<256x128xf32>, %w: tensor<128x256xf32>, %b: tensor<256xf32>) -> tensor<256x256xf32> {
  %0 = graph.matmul %x, %w : (tensor<256x128xf32>, tensor<128x256xf32>) -> tensor<256x256xf32>
  %1 = graph.add %0, %b : (tensor<256x256xf32>, tensor<256xf32>) -> tensor<256x256xf32>
  %2 = graph.relu %1 : tensor<256x256xf32>
  func.return %2 : tensor<256x256xf32>
}
