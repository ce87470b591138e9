// RUN: mlc-opt %s --split-input-file -p 'convert-tile-dot-to-cpu{micro-kernel=8,32,16},canonicalize,cse' | filecheck %s
// RUN: mlc-opt %s --split-input-file -p 'convert-tile-dot-to-cpu{micro-kernel=8,32,16}' | mlc-opt --split-input-file -p canonicalize,cse | filecheck %s
// RUN: not mlc-opt %s -p 'convert-tile-dot-to-cpu{micro-kernel=3,32,16}' 2>&1 | filecheck %s --check-prefix=OPTION

// OPTION: micro-kernel must be three powers of two MR,NR,W with W dividing NR, got 3,32,16

// A 100x50 @ 50x70 product with a bias-and-relu epilogue in one 128x128 block: the block's four
// 32-column panels each pack their rhs rows (all of K, rounded up to the K step: 64 rows, masked
// past 50 and past column 70) into a contiguous buffer, then 16 micro-tiles of 8x32 run over it,
// rows fastest, 16 vectors of 16 lanes each along K, with masked lhs loads (100 rows, K 50);
// masked K steps are one to an iteration.
// CHECK-LABEL: loop.kernel @dense_0_matmul_add_relu
// CHECK-SAME:    mlc.arg_alignment = array<i64: 4, 4, 4, 4>, mlc.cpu_micro_kernel = array<i64: 8, 32, 16>, mlc.cpu_packed = ["rhs"]
// CHECK:         loop.parallel %program0 < 1 mapping block.x
// CHECK:           loop.parallel %panel < 4 {
// CHECK:             %packed_rhs = memref.alloca() {alignment = 64 : i64} : memref<64x32xf32>
// CHECK:             scf.for %k =
// CHECK:               scf.for %kk =
// CHECK:                 scf.if
// CHECK:                   memref.load %w
// CHECK:                 vector.store %{{.*}}, %packed_rhs[%{{.*}}, %c0] {alignment = 64 : i64} : memref<64x32xf32>, vector<16xf32>
// CHECK:                 vector.store %{{.*}}, %packed_rhs[%{{.*}}, %c16] {alignment = 64 : i64} : memref<64x32xf32>, vector<16xf32>
// CHECK:             loop.parallel %row_tile < 16 {
// CHECK:               vector.broadcast %zero : f32 to vector<16xf32>
// CHECK:               scf.for %{{.*}} = %c0 to %c50 step %c16 iter_args({{.*}}) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) {
// CHECK:                 scf.for %kk{{.*}} = %c0 to %c16
// CHECK:                   %[[B0:.*]] = vector.load %packed_rhs[%{{.*}}, %c0] {alignment = 64 : i64} : memref<64x32xf32>, vector<16xf32>
// CHECK:                   %[[B1:.*]] = vector.load %packed_rhs[%{{.*}}, %c16] {alignment = 64 : i64} : memref<64x32xf32>, vector<16xf32>
// CHECK:                   scf.if
// CHECK:                     memref.load %x
// CHECK:                   %[[A:.*]] = vector.broadcast %{{.*}} : f32 to vector<16xf32>
// CHECK:                   vector.fma %[[A]], %[[B0]], %{{.*}} : vector<16xf32>
// CHECK:                   vector.fma %[[A]], %[[B1]], %{{.*}} : vector<16xf32>
// CHECK:                 } {mlc.dot = array<i64: 8, 32>}
// The epilogue runs in a loop over the micro-tile's rows and vectors of 16 columns, the
// accumulators passed through a scratch buffer, so that its code is that of one vector of outputs;
// its maps (bias, relu) are vector ops on that vector (the bias's elements packed into one).
// CHECK:               %accumulators = memref.alloca() {alignment = 64 : i64} : memref<8x32xf32>
// CHECK-COUNT-16:      vector.store %{{.*}}, %accumulators
// CHECK:               scf.for %r = %c0 to %{{.*}} step %{{.*}} {
// CHECK:                 scf.for %c = %c0 to %{{.*}} step %c16 {
// CHECK:                   %[[ACC:.*]] = vector.load %accumulators[%r, %c] {alignment = 64 : i64} : memref<8x32xf32>, vector<16xf32>
// CHECK:                   memref.load %b
// CHECK:                   %[[BIASED:.*]] = arith.addf %[[ACC]], %{{.*}} : vector<16xf32>
// CHECK:                   arith.maximumf %[[BIASED]], %{{.*}} : vector<16xf32>
// CHECK:                   memref.store {{.*}}, %output0
builtin.module {
  tile.kernel @dense_0_matmul_add_relu(%x: memref<100x50xf32>, %w: memref<50x70xf32>, %b: memref<1x70xf32>, %output0: memref<100x70xf32>) grid [1, 1] num_warps 8 attributes {mlc.matmul_tile = array<i64: 128, 128, 16>} {
    %c0 = arith.constant 0 : index
    %pm = tile.program_id 0
    %c128 = arith.constant 128 : index
    %m = arith.muli %pm, %c128 : index
    %pn = tile.program_id 1
    %n = arith.muli %pn, %c128 : index
    %zero = arith.constant 0.000000e+00 : f32
    %zeros = tile.splat %zero : f32 -> !tile.tile<128x128xf32>
    %c50 = arith.constant 50 : index
    %c16 = arith.constant 16 : index
    %acc = scf.for %k = %c0 to %c50 step %c16 iter_args(%partial = %zeros) -> (!tile.tile<128x128xf32>) {
      %a_tile = tile.load %x[%m, %k] : memref<100x50xf32> -> !tile.tile<128x16xf32>
      %b_tile = tile.load %w[%k, %n] : memref<50x70xf32> -> !tile.tile<16x128xf32>
      %next = tile.dot %a_tile, %b_tile, %partial : !tile.tile<128x16xf32>, !tile.tile<16x128xf32> -> !tile.tile<128x128xf32>
      scf.yield %next : !tile.tile<128x128xf32>
    }
    %0 = tile.load %b[%c0, %n] : memref<1x70xf32> -> !tile.tile<1x128xf32>
    %1 = tile.broadcast %0 : !tile.tile<1x128xf32> -> !tile.tile<128x128xf32>
    %result = tile.map %acc, %1 : !tile.tile<128x128xf32>, !tile.tile<128x128xf32> -> !tile.tile<128x128xf32> {
    ^bb0(%2: f32, %3: f32):
      %4 = arith.addf %2, %3 : f32
      %5 = arith.constant 0.000000e+00 : f32
      %6 = arith.maximumf %4, %5 : f32
      tile.yield %6 : f32
    }
    tile.store %result, %output0[%m, %n] : !tile.tile<128x128xf32>, memref<100x70xf32>
    tile.return
  }
  func.func @dense(%x: memref<100x50xf32>, %w: memref<50x70xf32>, %b: memref<70xf32>) -> memref<100x70xf32> {
    %0 = memref.alloc() {alignment = 256 : i64} : memref<100x70xf32>
    tile.launch @dense_0_matmul_add_relu(%x, %w, %b, %0) : memref<100x50xf32>, memref<50x70xf32>, memref<70xf32>, memref<100x70xf32>
    func.return %0 : memref<100x70xf32>
  }
}

// -----

// An aligned 64x64 product: the rhs panel is packed with plain vector copies, and
// `mlc.cpu_micro_kernel` on the tile kernel overrides the option (4x16 of 8 lanes); rows of the
// packed panel are 64 bytes apart, vectors 32: its accesses state 32-byte alignment.
// CHECK-LABEL: loop.kernel @f_0_matmul
// CHECK-SAME:    mlc.arg_alignment = array<i64: 4, 16, 16>, mlc.cpu_micro_kernel = array<i64: 4, 16, 8>, mlc.cpu_packed = ["rhs"]
// CHECK:         loop.parallel %panel < 4 {
// CHECK:           %packed_rhs = memref.alloca() {alignment = 64 : i64} : memref<64x16xf32>
// CHECK:           scf.for %k =
// CHECK:             scf.for %kk =
// CHECK-NEXT:          arith.addi
// CHECK-NEXT:          arith.addi
// CHECK-NEXT:          %[[V:.*]] = vector.load %b[{{.*}}] {alignment = 16 : i64} : memref<64x64xf32>, vector<8xf32>
// CHECK-NEXT:          vector.store %[[V]], %packed_rhs[{{.*}}] {alignment = 32 : i64} : memref<64x16xf32>, vector<8xf32>
// Unmasked K steps come four to an iteration of the dot's loop.
// CHECK:           loop.parallel %row_tile < 16 {
// CHECK:             %[[FOUR:.*]] = arith.constant 4 : index
// CHECK:             scf.for %kk{{.*}} = %c0 to %c16 step %[[FOUR]] iter_args
// CHECK-COUNT-4:       vector.load %packed_rhs[{{.*}}, %c0]
// CHECK:             } {mlc.dot = array<i64: 4, 16>}
// CHECK:             vector.store %{{.*}}, %output0[{{.*}}] {alignment = 16 : i64} : memref<64x64xf32>, vector<8xf32>
builtin.module {
  tile.kernel @f_0_matmul(%a: memref<64x64xf32>, %b: memref<64x64xf32>, %output0: memref<64x64xf32>) grid [1, 1] num_warps 8 attributes {mlc.matmul_tile = array<i64: 64, 64, 16>, mlc.cpu_micro_kernel = array<i64: 4, 16, 8>} {
    %c0 = arith.constant 0 : index
    %pm = tile.program_id 0
    %c64 = arith.constant 64 : index
    %m = arith.muli %pm, %c64 : index
    %pn = tile.program_id 1
    %n = arith.muli %pn, %c64 : index
    %zero = arith.constant 0.000000e+00 : f32
    %zeros = tile.splat %zero : f32 -> !tile.tile<64x64xf32>
    %c16 = arith.constant 16 : index
    %acc = scf.for %k = %c0 to %c64 step %c16 iter_args(%partial = %zeros) -> (!tile.tile<64x64xf32>) {
      %a_tile = tile.load %a[%m, %k] : memref<64x64xf32> -> !tile.tile<64x16xf32>
      %b_tile = tile.load %b[%k, %n] : memref<64x64xf32> -> !tile.tile<16x64xf32>
      %next = tile.dot %a_tile, %b_tile, %partial : !tile.tile<64x16xf32>, !tile.tile<16x64xf32> -> !tile.tile<64x64xf32>
      scf.yield %next : !tile.tile<64x64xf32>
    }
    tile.store %acc, %output0[%m, %n] : !tile.tile<64x64xf32>, memref<64x64xf32>
    tile.return
  }
  func.func @f(%a: memref<64x64xf32>, %b: memref<64x64xf32>) -> memref<64x64xf32> {
    %0 = memref.alloc() {alignment = 256 : i64} : memref<64x64xf32>
    tile.launch @f_0_matmul(%a, %b, %0) : memref<64x64xf32>, memref<64x64xf32>, memref<64x64xf32>
    func.return %0 : memref<64x64xf32>
  }
}
