// RUN: mlc-opt %s -p 'convert-tile-to-loop{tensor-cores=true},canonicalize,cse' | filecheck %s

// An f32 dot of precision 3xtf32 (tf32 likewise, without the low parts): loop.mma_sync m16n8k8 on
// f32 registers (one warp, 2x2 instruction tiles), A and B fragments by scalar loads (ldmatrix
// moves 16-bit elements), each register split into its TF32 rounding and the rounding of the
// remainder, then three steps per tile: lo x hi, hi x lo, hi x hi.
// CHECK-LABEL: loop.kernel @tf32
// CHECK-SAME:    mlc.mma = array<i64: 16, 8, 8>, mlc.warp_grid = array<i64: 1, 1>
// CHECK:           scf.for %k
// CHECK-COUNT-8:     memref.load %a[{{.*}}] {mlc.operand = "lhs"} : memref<40x24xf32>
// CHECK-COUNT-4:     memref.load %b[{{.*}}] {mlc.operand = "rhs"} : memref<24x20xf32>
// CHECK:             loop.round_tf32 %{{.*}} : f32
// CHECK:             arith.subf
// CHECK:             loop.round_tf32 %{{.*}} : f32
// CHECK-COUNT-12:    loop.mma_sync m16n8k8 ({{.*}}) * ({{.*}}) + ({{.*}}) : f32 -> f32
// CHECK:             scf.yield
tile.kernel @tf32(%a: memref<40x24xf32>, %b: memref<24x20xf32>, %c: memref<40x20xf32>) grid [2, 2] num_warps 1 {
  %pm = tile.program_id 0
  %pn = tile.program_id 1
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c24 = arith.constant 24 : index
  %c32 = arith.constant 32 : index
  %c16 = arith.constant 16 : index
  %m = arith.muli %pm, %c32 : index
  %n = arith.muli %pn, %c16 : index
  %zero = arith.constant 0.0 : f32
  %zeros = tile.splat %zero : f32 -> !tile.tile<32x16xf32>
  %acc = scf.for %k = %c0 to %c24 step %c8 iter_args(%partial = %zeros) -> (!tile.tile<32x16xf32>) {
    %x = tile.load %a[%m, %k] : memref<40x24xf32> -> !tile.tile<32x8xf32>
    %y = tile.load %b[%k, %n] : memref<24x20xf32> -> !tile.tile<8x16xf32>
    %next = tile.dot %x, %y, %partial {precision = "3xtf32"} : !tile.tile<32x8xf32>, !tile.tile<8x16xf32> -> !tile.tile<32x16xf32>
    scf.yield %next : !tile.tile<32x16xf32>
  }
  tile.store %acc, %c[%m, %n] : !tile.tile<32x16xf32>, memref<40x20xf32>
  tile.return
}
