// RUN: mlc-opt %s --split-input-file -p convert-tile-to-loop,canonicalize,cse | filecheck %s
// RUN: mlc-opt %s --split-input-file -p convert-tile-to-loop | mlc-opt --split-input-file -p canonicalize,cse | filecheck %s
// RUN: mlc-opt %s --split-input-file -p 'convert-tile-to-loop{tensor-cores=true},canonicalize,cse' | filecheck %s --check-prefix=MMA

// A tile that divides the memref: no masks (the origin is provably in bounds), 128 threads each
// moving 4 contiguous floats per access (16 bytes, coalesced), 4 repetitions, the map body
// cloned per element. The launch becomes a loop.launch.
// CHECK-LABEL: loop.kernel @exact(%x: memref<4096xf32>, %out: memref<4096xf32>)
// CHECK-SAME:    attributes {mlc.arg_alignment = array<i64: 16, 16>}
// CHECK-NEXT:    loop.parallel %program < 2 mapping block.x {
// CHECK-NEXT:      loop.parallel %thread < 128 mapping thread.x {
// CHECK:             scf.for %repetition =
// CHECK-NOT:           scf.if
// CHECK:               %[[V:.*]] = vector.load %x[%{{.*}}] {alignment = 16 : i64} : memref<4096xf32>, vector<4xf32>
// CHECK-COUNT-4:       math.exp
// CHECK:               vector.store %{{.*}}, %out[%{{.*}}] {alignment = 16 : i64} : memref<4096xf32>, vector<4xf32>
// CHECK:         loop.return
// CHECK-LABEL: func.func @exact_host
// CHECK:         loop.launch @exact(%x, %{{.*}}) : memref<4096xf32>, memref<4096xf32>

tile.kernel @exact(%x: memref<4096xf32>, %out: memref<4096xf32>) grid [2] num_warps 4 {
  %pid = tile.program_id 0
  %c2048 = arith.constant 2048 : index
  %origin = arith.muli %pid, %c2048 : index
  %t = tile.load %x[%origin] : memref<4096xf32> -> !tile.tile<2048xf32>
  %r = tile.map %t : !tile.tile<2048xf32> -> !tile.tile<2048xf32> {
  ^bb0(%v: f32):
    %e = math.exp %v : f32
    tile.yield %e : f32
  }
  tile.store %r, %out[%origin] : !tile.tile<2048xf32>, memref<4096xf32>
  tile.return
}
func.func @exact_host(%x: memref<4096xf32>) -> memref<4096xf32> {
  %o = memref.alloc() : memref<4096xf32>
  tile.launch @exact(%x, %o) : memref<4096xf32>, memref<4096xf32>
  func.return %o : memref<4096xf32>
}

// -----

// 1000 is a multiple of the 4-wide chunk: a chunk is all in or all out, so one bounds check
// guards the vector access; masked-off lanes read the padding.
// CHECK-LABEL: loop.kernel @masked
// CHECK:         loop.parallel %thread < 32 mapping thread.x
// CHECK:           %[[IN:.*]] = arith.cmpi ult, %[[I:.*]], %{{.*}} : index
// CHECK-NEXT:      %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} = scf.if %[[IN]] -> (f32, f32, f32, f32) {
// CHECK-NEXT:        vector.load %x[%[[I]]] {alignment = 16 : i64}
// CHECK:           } else {
// CHECK-NEXT:        %[[PAD:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:        scf.yield %[[PAD]], %[[PAD]], %[[PAD]], %[[PAD]]
// CHECK:           scf.if %[[IN]] {
// CHECK:             vector.store

tile.kernel @masked(%x: memref<1000xf32>, %out: memref<1000xf32>) grid [1] num_warps 1 {
  %c0 = arith.constant 0 : index
  %t = tile.load %x[%c0] padding 1.0 : f32 : memref<1000xf32> -> !tile.tile<1024xf32>
  tile.store %t, %out[%c0] : !tile.tile<1024xf32>, memref<1000xf32>
  tile.return
}

// -----

// 1001 is not a multiple of the 8-wide f16 chunk: full chunks take the vector path, the last
// partial one falls back to one guarded scalar access per element.
// CHECK-LABEL: loop.kernel @partial
// CHECK:         scf.for
// CHECK:           arith.addi %{{.*}}, %thread : index
// CHECK:           %[[LAST:.*]] = arith.addi %[[I:.*]], %{{.*}} : index
// CHECK-NEXT:      %[[FULL:.*]] = arith.cmpi ult, %[[LAST]], %{{.*}} : index
// CHECK-NEXT:      scf.if %[[FULL]] -> (f16, f16, f16, f16, f16, f16, f16, f16) {
// CHECK-NEXT:        vector.load %x[%[[I]]] {alignment = 16 : i64} : memref<1001xf16>, vector<8xf16>
// CHECK:           } else {
// CHECK:             scf.if %{{.*}} -> (f16) {
// CHECK-NEXT:          memref.load %x[%[[I]]] : memref<1001xf16>
// CHECK:           scf.if %[[FULL]] {
// CHECK:             vector.store {{.*}} vector<8xf16>
// CHECK:           } else {
// CHECK:             scf.if
// CHECK-NEXT:          memref.store

tile.kernel @partial(%x: memref<1001xf16>, %out: memref<1001xf16>) grid [1] num_warps 1 {
  %c0 = arith.constant 0 : index
  %t = tile.load %x[%c0] : memref<1001xf16> -> !tile.tile<1024xf16>
  tile.store %t, %out[%c0] : !tile.tile<1024xf16>, memref<1001xf16>
  tile.return
}

// -----

// An origin shifted along the last dimension by a non-multiple of the chunk (here one element
// before the memref, as a padding or a slice produces) lets a chunk straddle either end: a chunk
// takes the fast path only if its first and its last element are inside, else each element is
// guarded and reads the padding outside.
// CHECK-LABEL: loop.kernel @shifted
// CHECK:           %[[FIRST:.*]] = arith.addi %{{.*}}, %before : index
// CHECK-NEXT:      %[[LAST:.*]] = arith.addi %[[FIRST]], %{{.*}} : index
// CHECK-NEXT:      %[[LAST_IN:.*]] = arith.cmpi ult, %[[LAST]], %{{.*}} : index
// CHECK-NEXT:      %[[FIRST_IN:.*]] = arith.cmpi ult, %[[FIRST]], %{{.*}} : index
// CHECK-NEXT:      %[[FULL:.*]] = arith.andi %[[FIRST_IN]], %[[LAST_IN]] : i1
// CHECK-NEXT:      scf.if %[[FULL]] -> (f32, f32, f32, f32) {
// CHECK:           } else {
// CHECK-NEXT:        scf.if %[[FIRST_IN]] -> (f32) {
// CHECK-NEXT:          memref.load %x[%[[FIRST]]] : memref<1000xf32>
// CHECK:             } else {
// CHECK-NEXT:          arith.constant 7.000000e+00 : f32

tile.kernel @shifted(%x: memref<1000xf32>, %out: memref<1000xf32>) grid [1] num_warps 1 {
  %c0 = arith.constant 0 : index
  %before = arith.constant -1 : index
  %t = tile.load %x[%before] padding 7.0 : f32 : memref<1000xf32> -> !tile.tile<1024xf32>
  tile.store %t, %out[%c0] : !tile.tile<1024xf32>, memref<1000xf32>
  tile.return
}

// -----

// A row broadcast is loaded as a vector along the row; a column broadcast (size 1 along the
// last dimension) is one scalar load shared by the whole chunk, so it needs only 4-byte alignment.
// CHECK-LABEL: loop.kernel @broadcasts
// CHECK-SAME:    mlc.arg_alignment = array<i64: 16, 4, 16>
// CHECK:           arith.remui
// CHECK-NEXT:      %[[COLUMN:.*]] = arith.muli %{{.*}}, %{{.*}} : index
// CHECK-NEXT:      %[[ROW:.*]] = arith.divui
// CHECK-NEXT:      %{{.*}} = vector.load %row[%{{.*}}, %[[COLUMN]]] {alignment = 16 : i64} : memref<1x16xf32>, vector<4xf32>
// CHECK:           %[[C:.*]] = memref.load %column[%[[ROW]], %{{.*}}] : memref<64x1xf32>
// CHECK-NEXT:      arith.mulf %{{.*}}, %[[C]] : f32
// CHECK-NEXT:      arith.mulf %{{.*}}, %[[C]] : f32
// CHECK-NEXT:      arith.mulf %{{.*}}, %[[C]] : f32
// CHECK-NEXT:      arith.mulf %{{.*}}, %[[C]] : f32
// CHECK:           vector.store %{{.*}}, %out[%[[ROW]], %[[COLUMN]]]

tile.kernel @broadcasts(%row: memref<1x16xf32>, %column: memref<64x1xf32>, %out: memref<64x16xf32>) grid [1] num_warps 1 {
  %c0 = arith.constant 0 : index
  %r = tile.load %row[%c0, %c0] : memref<1x16xf32> -> !tile.tile<1x16xf32>
  %rb = tile.broadcast %r : !tile.tile<1x16xf32> -> !tile.tile<64x16xf32>
  %c = tile.load %column[%c0, %c0] : memref<64x1xf32> -> !tile.tile<64x1xf32>
  %cb = tile.broadcast %c : !tile.tile<64x1xf32> -> !tile.tile<64x16xf32>
  %s = tile.map %rb, %cb : !tile.tile<64x16xf32>, !tile.tile<64x16xf32> -> !tile.tile<64x16xf32> {
  ^bb0(%a: f32, %b: f32):
    %p = arith.mulf %a, %b : f32
    tile.yield %p : f32
  }
  tile.store %s, %out[%c0, %c0] : !tile.tile<64x16xf32>, memref<64x16xf32>
  tile.return
}

// -----

// i1 is stored byte by byte: never as an LLVM vector of i1, which would be bit-packed. Fewer
// chunks than threads: the block shrinks to 16 threads and there is no repetition loop.
// CHECK-LABEL: loop.kernel @booleans
// CHECK-SAME:    mlc.arg_alignment = array<i64: 16, 1>
// CHECK:         loop.parallel %thread < 16 mapping thread.x
// CHECK-NOT:       scf.for
// CHECK:           vector.load %x
// CHECK-COUNT-4:   memref.store %{{.*}}, %out[%{{.*}}] : memref<64xi1>
// CHECK-NOT:       vector.store

tile.kernel @booleans(%x: memref<64xf32>, %out: memref<64xi1>) grid [1] num_warps 4 {
  %c0 = arith.constant 0 : index
  %t = tile.load %x[%c0] : memref<64xf32> -> !tile.tile<64xf32>
  %b = tile.map %t : !tile.tile<64xf32> -> !tile.tile<64xi1> {
  ^bb0(%v: f32):
    %z = arith.constant 0.0 : f32
    %p = arith.cmpf ogt, %v, %z : f32
    tile.yield %p : i1
  }
  tile.store %b, %out[%c0] : !tile.tile<64xi1>, memref<64xi1>
  tile.return
}


// -----

// A row reduction: each row of the 4x1024 tile spans 8 repetitions of the 32 threads, 32 elements
// per thread combined in registers (a balanced tree of 31 ops), then across the 32 threads with
// loop.all_reduce (mask 31); the 4x1 result is stored by one thread per row.
// CHECK-LABEL: loop.kernel @row_max
// CHECK:         loop.parallel %thread < 32 mapping thread.x
// CHECK-NOT:       scf.for
// CHECK-COUNT-31:  arith.maximumf
// CHECK:           %[[ROW:.*]] = loop.all_reduce %{{.*}} mask 31 : f32 {
// CHECK-NEXT:      ^bb0(%{{.*}}: f32, %{{.*}}: f32):
// CHECK-NEXT:        arith.maximumf
// CHECK-NEXT:        loop.yield
// CHECK-NEXT:      }
// CHECK:           %[[OWNED:.*]] = arith.andi %thread, %{{.*}} : index
// CHECK-NEXT:      %[[FIRST:.*]] = arith.cmpi eq, %[[OWNED]], %{{.*}} : index
// CHECK-NEXT:      scf.if %[[FIRST]] {
// CHECK-NEXT:        memref.store %[[ROW]], %out[%{{.*}}, %{{.*}}] : memref<4x1xf32>
// CHECK-COUNT-3:   loop.all_reduce
tile.kernel @row_max(%x: memref<4x1000xf32>, %out: memref<4x1xf32>) grid [1] num_warps 1 {
  %c0 = arith.constant 0 : index
  %t = tile.load %x[%c0, %c0] padding 0xFF800000 : f32 : memref<4x1000xf32> -> !tile.tile<4x1024xf32>
  %r = tile.reduce %t axis 1 : !tile.tile<4x1024xf32> -> !tile.tile<4x1xf32> {
  ^bb0(%a: f32, %b: f32):
    %c = arith.maximumf %a, %b : f32
    tile.yield %c : f32
  }
  tile.store %r, %out[%c0, %c0] : !tile.tile<4x1xf32>, memref<4x1xf32>
  tile.return
}

// -----

// A matmul block with ragged M, N and K (17x33x65 in a 32x64 block, K steps of 16): 128 threads
// (4 warps) of 4x4 micro-tiles. A warp's 32 lanes form 4 rows by 8 columns of threads and the 4
// warps 2x2, so a warp tile is 16x32; a thread's rows are one 4-tall chunk at 4 * lane row (rows
// row, row + 1, row + 2, row + 3) and its columns one 4-wide chunk at 4 * lane column. The tile K
// loop carries the 16 accumulators; the dot is a loop over K in steps of one (one element of A per
// micro-tile row, one 4-wide chunk of B, 16 fused multiply-adds), its loads marked as the dot's
// operands, the loop marked for full unrolling (16 steps). 65 and 33 are not multiples
// of 4: full chunks take the fast path, partial ones fall back to guarded scalar loads; so do
// the stores.
// CHECK-LABEL: loop.kernel @ragged(%a: memref<17x65xf32>, %b: memref<65x33xf32>, %c: memref<17x33xf32>)
// CHECK-SAME:    attributes {mlc.arg_alignment = array<i64: 4, 4, 4>, mlc.micro_tile = array<i64: 4, 4>, mlc.warp_tile = array<i64: 16, 32>}
// CHECK-NEXT:    loop.parallel %program0 < 1 mapping block.x {
// CHECK-NEXT:      loop.parallel %program1 < 1 mapping block.y {
// CHECK-NEXT:        loop.parallel %thread < 128 mapping thread.x {
// CHECK:               %warp = arith.divui %thread, %{{.*}} : index
// CHECK-NEXT:          %lane = arith.remui %thread, %{{.*}} : index
// CHECK:               %[[WM:.*]] = arith.divui %warp, %{{.*}} : index
// CHECK:               %[[WROW:.*]] = arith.muli %[[WM]], %{{.*}} : index
// CHECK-NEXT:          %[[LM:.*]] = arith.divui %lane, %{{.*}} : index
// CHECK-NEXT:          %[[FOUR:.*]] = arith.constant 4 : index
// CHECK-NEXT:          %[[LROW:.*]] = arith.muli %[[LM]], %[[FOUR]] : index
// CHECK-NEXT:          %row = arith.addi %[[WROW]], %[[LROW]] : index
// CHECK-NEXT:          %[[WN:.*]] = arith.remui %warp, %{{.*}} : index
// CHECK:               %[[WCOL:.*]] = arith.muli %[[WN]], %{{.*}} : index
// CHECK-NEXT:          %[[LN:.*]] = arith.remui %lane, %{{.*}} : index
// CHECK:               %[[LCOL:.*]] = arith.muli %[[LN]], %{{.*}} : index
// CHECK-NEXT:          %column = arith.addi %[[WCOL]], %[[LCOL]] : index
// CHECK:               %[[ONE:.*]] = arith.constant 1 : index
// CHECK-NEXT:          %[[ROW1:.*]] = arith.addi %row, %[[ONE]] : index
// CHECK:               %acc, {{(%acc_[0-9]+, )+}}%acc_15 = scf.for %k = %c0 to %c65 step %c16 iter_args(%partial = %zero, {{.*}}) -> ({{(f32, )+}}f32) {
// CHECK:                 %next, {{.*}} = scf.for %kk = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%partial_16 = %partial, {{.*}}) -> ({{(f32, )+}}f32) {
// CHECK-NEXT:              %[[ROW:.*]] = arith.addi %m, %row : index
// CHECK:                   %[[IN:.*]] = arith.cmpi ult, %[[ROW]], %{{.*}} : index
// CHECK-NEXT:              %[[K:.*]] = arith.addi %k, %kk : index
// CHECK:                   scf.if
// CHECK-NEXT:                memref.load %a[%[[ROW]], %[[K]]] {mlc.operand = "lhs"} : memref<17x65xf32>
// CHECK:                   arith.addi %m, %[[ROW1]] : index
// CHECK:                   memref.load %b[%{{.*}}, %{{.*}}] {mlc.operand = "rhs"} : memref<65x33xf32>
// CHECK-COUNT-16:          math.fma
// CHECK-NEXT:              scf.yield
// CHECK-NEXT:            } {mlc.dot = array<i64: 4, 4>, mlc.unroll}
// CHECK-NEXT:            scf.yield %next, {{.*}} : {{(f32, )+}}f32
// CHECK-NEXT:          }
// CHECK:               scf.if
// CHECK-NEXT:            memref.store %acc, %c[%{{.*}}, %{{.*}}] : memref<17x33xf32>
// CHECK-LABEL: func.func @ragged_host
// CHECK-NEXT:    loop.launch @ragged(%a, %b, %c) : memref<17x65xf32>, memref<65x33xf32>, memref<17x33xf32>
// MMA-LABEL: loop.kernel @ragged
// MMA-NOT:     loop.mma_sync
// MMA:         math.fma
tile.kernel @ragged(%a: memref<17x65xf32>, %b: memref<65x33xf32>, %c: memref<17x33xf32>) grid [1, 1] num_warps 4 {
  %pm = tile.program_id 0
  %pn = tile.program_id 1
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %c65 = arith.constant 65 : index
  %m = arith.muli %pm, %c32 : index
  %n = arith.muli %pn, %c64 : index
  %zero = arith.constant 0.0 : f32
  %zeros = tile.splat %zero : f32 -> !tile.tile<32x64xf32>
  %acc = scf.for %k = %c0 to %c65 step %c16 iter_args(%partial = %zeros) -> (!tile.tile<32x64xf32>) {
    %x = tile.load %a[%m, %k] : memref<17x65xf32> -> !tile.tile<32x16xf32>
    %y = tile.load %b[%k, %n] : memref<65x33xf32> -> !tile.tile<16x64xf32>
    %next = tile.dot %x, %y, %partial : !tile.tile<32x16xf32>, !tile.tile<16x64xf32> -> !tile.tile<32x64xf32>
    scf.yield %next : !tile.tile<32x64xf32>
  }
  tile.store %acc, %c[%m, %n] : !tile.tile<32x64xf32>, memref<17x33xf32>
  tile.return
}
func.func @ragged_host(%a: memref<17x65xf32>, %b: memref<65x33xf32>, %c: memref<17x33xf32>) {
  tile.launch @ragged(%a, %b, %c) : memref<17x65xf32>, memref<65x33xf32>, memref<17x33xf32>
  func.return
}

// -----

// f16 operands in blocks that divide the matrices: no bounds checks at all (the K loop's range
// and step are known). Each step of K reads one half of A per micro-tile row and one 4-wide chunk
// of B (8 bytes), each element widened to f32 once; the f32 result is rounded back to f16 by the
// map and stored 4 at a time.
// CHECK-LABEL: loop.kernel @half
// CHECK-SAME:    attributes {mlc.arg_alignment = array<i64: 2, 8, 8>, mlc.micro_tile = array<i64: 4, 4>, mlc.warp_tile = array<i64: 16, 32>}
// CHECK:         loop.parallel %thread < 256 mapping thread.x {
// CHECK-NOT:       scf.if
// CHECK:           scf.for %kk = %{{.*}} to %{{.*}} step %{{.*}} iter_args(
// CHECK-COUNT-4:     memref.load %a[%{{.*}}, %{{.*}}] {mlc.operand = "lhs"} : memref<256x256xf16>
// CHECK:             vector.load %b[%{{.*}}, %{{.*}}] {alignment = 8 : i64, mlc.operand = "rhs"} : memref<256x256xf16>, vector<4xf16>
// CHECK-COUNT-4:     arith.extf %{{.*}} : f16 to f32
// CHECK-COUNT-16:    math.fma
// CHECK:           } {mlc.dot = array<i64: 4, 4>, mlc.unroll}
// CHECK-COUNT-16:  arith.truncf
// CHECK-COUNT-4:   vector.store %{{.*}}, %c[%{{.*}}, %{{.*}}] {alignment = 8 : i64} : memref<256x256xf16>, vector<4xf16>
// CHECK-NOT:       scf.if
// CHECK:         loop.return
// With tensor-cores=true (the GPU pipeline): 8 warps in a 2x4 grid of 32x16 warp tiles, each
// thread holding rows g + 8i (g = lane / 4) and the column pairs 2t, 2t + 8 (t = lane % 4) of its
// warp's tile; per K step, one ldmatrix x4 per instruction row of A (two) and one x4 trans for
// the warp's two instruction columns of B, each lane addressing row (l % 8) + 8 ((l / 8) % 2) and
// column 8 (l / 16) of an instruction tile, then 4 loop.mma_sync; the epilogue rounds the
// accumulators and stores column pairs.
// MMA-LABEL: loop.kernel @half
// MMA-SAME:    mlc.micro_tile = array<i64: 4, 4>, mlc.warp_tile = array<i64: 32, 16>, mlc.mma = array<i64: 16, 8, 16>, mlc.warp_grid = array<i64: 2, 4>
// MMA:         loop.parallel %thread < 256 mapping thread.x {
// MMA:           %[[EIGHTH:[0-9]+]] = arith.divui %lane, %[[C8:[0-9]+]] : index
// MMA:           %[[LOW:[0-9]+]] = arith.remui %lane, %[[C8]] : index
// MMA:           %[[ODD:.*]] = arith.remui %[[EIGHTH]], %{{.*}} : index
// MMA:           %[[HIGH:.*]] = arith.muli %[[ODD]], %[[C8]] : index
// MMA:           %ldmatrix_row = arith.addi %[[LOW]], %[[HIGH]] : index
// MMA:           %[[HALF:.*]] = arith.divui %lane, %c16 : index
// MMA:           %ldmatrix_column = arith.muli %[[HALF]], %[[C8]] : index
// MMA-NOT:       scf.if
// MMA:           scf.for %k
// MMA-COUNT-2:     loop.ldmatrix x4 %a[{{.*}}] {mlc.operand = "lhs"} : memref<256x256xf16> -> vector<2xf16>
// MMA:             loop.ldmatrix x4 trans %b[{{.*}}] {mlc.operand = "rhs"} : memref<256x256xf16> -> vector<2xf16>
// MMA-COUNT-4:     loop.mma_sync m16n8k16
// MMA:             scf.yield
// MMA-COUNT-16:  arith.truncf
// MMA-COUNT-8:   vector.store {{.*}} : memref<256x256xf16>, vector<2xf16>
tile.kernel @half(%a: memref<256x256xf16>, %b: memref<256x256xf16>, %c: memref<256x256xf16>) grid [4, 4] num_warps 8 {
  %pm = tile.program_id 0
  %pn = tile.program_id 1
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %c256 = arith.constant 256 : index
  %m = arith.muli %pm, %c64 : index
  %n = arith.muli %pn, %c64 : index
  %zero = arith.constant 0.0 : f32
  %zeros = tile.splat %zero : f32 -> !tile.tile<64x64xf32>
  %acc = scf.for %k = %c0 to %c256 step %c16 iter_args(%partial = %zeros) -> (!tile.tile<64x64xf32>) {
    %x = tile.load %a[%m, %k] : memref<256x256xf16> -> !tile.tile<64x16xf16>
    %y = tile.load %b[%k, %n] : memref<256x256xf16> -> !tile.tile<16x64xf16>
    %next = tile.dot %x, %y, %partial : !tile.tile<64x16xf16>, !tile.tile<16x64xf16> -> !tile.tile<64x64xf32>
    scf.yield %next : !tile.tile<64x64xf32>
  }
  %result = tile.map %acc : !tile.tile<64x64xf32> -> !tile.tile<64x64xf16> {
  ^bb0(%e: f32):
    %h = arith.truncf %e : f32 to f16
    tile.yield %h : f16
  }
  tile.store %result, %c[%m, %n] : !tile.tile<64x64xf16>, memref<256x256xf16>
  tile.return
}


// -----

// An operand padded with something other than zero (so not a plain copy of a shared tile) keeps
// the per-thread loads: 8 A registers (K-neighbour pairs, proven in bounds and 4-byte aligned),
// 4 B registers (pairs of one column), then 4 loop.mma_sync.
// MMA-LABEL: loop.kernel @half_padded
// MMA-NOT:       loop.ldmatrix
// MMA:           scf.for %k
// MMA-COUNT-8:     vector.load %a[{{.*}}] {alignment = 4 : i64, mlc.operand = "lhs"} : memref<256x256xf16>, vector<2xf16>
// MMA-COUNT-8:     memref.load %b[{{.*}}] {mlc.operand = "rhs"} : memref<256x256xf16>
// MMA-COUNT-4:     loop.mma_sync m16n8k16
// MMA:             scf.yield
tile.kernel @half_padded(%a: memref<256x256xf16>, %b: memref<256x256xf16>, %c: memref<256x256xf16>) grid [4, 4] num_warps 8 {
  %pm = tile.program_id 0
  %pn = tile.program_id 1
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %c256 = arith.constant 256 : index
  %m = arith.muli %pm, %c64 : index
  %n = arith.muli %pn, %c64 : index
  %zero = arith.constant 0.0 : f32
  %zeros = tile.splat %zero : f32 -> !tile.tile<64x64xf32>
  %acc = scf.for %k = %c0 to %c256 step %c16 iter_args(%partial = %zeros) -> (!tile.tile<64x64xf32>) {
    %x = tile.load %a[%m, %k] padding 1.000000e+00 : f16 : memref<256x256xf16> -> !tile.tile<64x16xf16>
    %y = tile.load %b[%k, %n] : memref<256x256xf16> -> !tile.tile<16x64xf16>
    %next = tile.dot %x, %y, %partial : !tile.tile<64x16xf16>, !tile.tile<16x64xf16> -> !tile.tile<64x64xf32>
    scf.yield %next : !tile.tile<64x64xf32>
  }
  %result = tile.map %acc : !tile.tile<64x64xf32> -> !tile.tile<64x64xf16> {
  ^bb0(%e: f32):
    %h = arith.truncf %e : f32 to f16
    tile.yield %h : f16
  }
  tile.store %result, %c[%m, %n] : !tile.tile<64x64xf16>, memref<256x256xf16>
  tile.return
}

// -----

// One dot with K = 4 in one block, a batch dimension of size 1 with a broadcast operand, a
// bias-and-relu epilogue, and the micro-tile chosen by the kernel's attribute (2x8: 16 threads in
// 8 rows by 2 columns; a thread's two 4-wide column chunks are 8 apart). The bias row is loaded
// once per thread (its two chunks, broadcast over the micro-tile rows).
// CHECK-LABEL: loop.kernel @epilogue
// CHECK-SAME:    mlc.micro_tile = array<i64: 2, 8>
// CHECK:         loop.parallel %thread < 16 mapping thread.x {
// CHECK:           scf.for %kk
// CHECK-COUNT-2:     memref.load %x[%{{.*}}, %{{.*}}, %{{.*}}] {mlc.operand = "lhs"} : memref<3x16x4xf32>
// CHECK:             vector.load %y[%{{.*}}, %{{.*}}] {alignment = 16 : i64, mlc.operand = "rhs"} : memref<4x16xf32>, vector<4xf32>
// CHECK:             vector.load %y[%{{.*}}, %{{.*}}] {alignment = 16 : i64, mlc.operand = "rhs"} : memref<4x16xf32>, vector<4xf32>
// CHECK-COUNT-16:    math.fma
// CHECK:           } {mlc.dot = array<i64: 2, 8>, mlc.unroll}
// CHECK:           vector.load %bias[%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<1x16xf32>, vector<4xf32>
// CHECK:           vector.load %bias[%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<1x16xf32>, vector<4xf32>
// CHECK-NOT:       vector.load
// CHECK-COUNT-16:  arith.maximumf
// CHECK-COUNT-4:   vector.store %{{.*}}, %out[%{{.*}}, %{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<3x16x16xf32>, vector<4xf32>
tile.kernel @epilogue(%x: memref<3x16x4xf32>, %y: memref<4x16xf32>, %bias: memref<1x16xf32>, %out: memref<3x16x16xf32>) grid [3] num_warps 1 attributes {mlc.micro_tile = array<i64: 2, 8>} {
  %batch = tile.program_id 0
  %c0 = arith.constant 0 : index
  %a = tile.load %x[%batch, %c0, %c0] : memref<3x16x4xf32> -> !tile.tile<1x16x4xf32>
  %b2 = tile.load %y[%c0, %c0] : memref<4x16xf32> -> !tile.tile<4x16xf32>
  %b = tile.broadcast %b2 : !tile.tile<4x16xf32> -> !tile.tile<1x4x16xf32>
  %zero = arith.constant 0.0 : f32
  %zeros = tile.splat %zero : f32 -> !tile.tile<1x16x16xf32>
  %d = tile.dot %a, %b, %zeros : !tile.tile<1x16x4xf32>, !tile.tile<1x4x16xf32> -> !tile.tile<1x16x16xf32>
  %row = tile.load %bias[%c0, %c0] : memref<1x16xf32> -> !tile.tile<1x16xf32>
  %wide = tile.broadcast %row : !tile.tile<1x16xf32> -> !tile.tile<1x16x16xf32>
  %r = tile.map %d, %wide : !tile.tile<1x16x16xf32>, !tile.tile<1x16x16xf32> -> !tile.tile<1x16x16xf32> {
  ^bb0(%u: f32, %v: f32):
    %s = arith.addf %u, %v : f32
    %p = arith.maximumf %s, %zero : f32
    tile.yield %p : f32
  }
  tile.store %r, %out[%batch, %c0, %c0] : !tile.tile<1x16x16xf32>, memref<3x16x16xf32>
  tile.return
}

// -----

// A sum along the last axis of a tile broadcast along it: a thread's chunk holds one loaded
// scalar standing for its 4 equal elements, and each of them is a term (x + x, then + (x + x)).
// CHECK-LABEL: loop.kernel @sum_of_broadcast
// CHECK:         %[[X:.*]] = memref.load %x
// CHECK:         %[[PAIR:.*]] = arith.addf %[[X]], %[[X]] : f32
// CHECK-NEXT:    %[[SUM:.*]] = arith.addf %[[PAIR]], %[[PAIR]] : f32
// CHECK:         memref.store %[[SUM]], %out
tile.kernel @sum_of_broadcast(%x: memref<4x1xf32>, %out: memref<4x1xf32>) grid [1] num_warps 1 {
  %c0 = arith.constant 0 : index
  %t = tile.load %x[%c0, %c0] : memref<4x1xf32> -> !tile.tile<4x1xf32>
  %b = tile.broadcast %t : !tile.tile<4x1xf32> -> !tile.tile<4x4xf32>
  %r = tile.reduce %b axis 1 : !tile.tile<4x4xf32> -> !tile.tile<4x1xf32> {
  ^bb0(%a: f32, %c: f32):
    %s = arith.addf %a, %c : f32
    tile.yield %s : f32
  }
  tile.store %r, %out[%c0, %c0] : !tile.tile<4x1xf32>, memref<4x1xf32>
  tile.return
}

// -----

// A gather is one read per element: each thread's chunk has 4 consecutive coordinates along the
// last dimension (tile.range), each index outside its dimension is replaced by 0 before the
// read and the element selected away (padding) after it; no branch, no vector.
// CHECK-LABEL: loop.kernel @gather_transpose
// CHECK:         %[[COLUMN:.*]] = arith.muli
// CHECK:         %[[ROW:.*]] = arith.divui %thread
// CHECK:         %[[IN0:.*]] = arith.cmpi ult, %[[COLUMN]], %{{.*}} : index
// CHECK-NEXT:    %[[IN1:.*]] = arith.cmpi ult, %[[ROW]], %{{.*}} : index
// CHECK-NEXT:    %[[SAFE0:.*]] = arith.select %[[IN0]], %[[COLUMN]], %{{.*}} : index
// CHECK-NEXT:    %[[SAFE1:.*]] = arith.select %[[IN1]], %[[ROW]], %{{.*}} : index
// CHECK-NEXT:    %[[READ:.*]] = memref.load %x[%[[SAFE0]], %[[SAFE1]]] : memref<5x3xf32>
// CHECK-NEXT:    %[[INSIDE:.*]] = arith.andi %[[IN0]], %[[IN1]] : i1
// CHECK-NEXT:    %[[PAD:.*]] = arith.constant -1.000000e+00 : f32
// CHECK-NEXT:    arith.select %[[INSIDE]], %[[READ]], %[[PAD]] : f32
// CHECK-COUNT-3: memref.load %x
// CHECK-NOT:     vector.load
tile.kernel @gather_transpose(%x: memref<5x3xf32>, %out: memref<3x5xf32>) grid [1] num_warps 1 {
  %c0 = arith.constant 0 : index
  %rows = tile.range %c0 axis 0 : !tile.tile<4x8xindex>
  %columns = tile.range %c0 axis 1 : !tile.tile<4x8xindex>
  %t = tile.gather %x[%columns, %rows] padding -1.0 : f32 : memref<5x3xf32>, !tile.tile<4x8xindex>, !tile.tile<4x8xindex> -> !tile.tile<4x8xf32>
  tile.store %t, %out[%c0, %c0] : !tile.tile<4x8xf32>, memref<3x5xf32>
  tile.return
}

// -----

// A transpose kernel: per program, a 32x33 shared tile (one column of padding: the transposed
// reads of a warp hit 32 different banks); thread t takes column t mod 32 of rows t div 32 + 8 s
// (s < 4, unrolled): it reads rows of the source block into the tile (coalesced; guarded only
// along the dimension that 32 does not divide: x has 40 rows), then writes rows of the result
// block from columns of the tile (coalesced; the result's 40 columns guarded).
// CHECK-LABEL: loop.kernel @swap(%x: memref<40x64xf32>, %y: memref<64x40xf32>) attributes {mlc.arg_alignment = array<i64: 4, 4>, mlc.transpose_block = 32 : i64} {
// CHECK:         loop.parallel %program0 < 2 mapping block.x {
// CHECK-NEXT:      loop.parallel %program1 < 2 mapping block.y {
// CHECK:             %[[STAGE:.*]] = memref.alloca() {alignment = 16 : i64} : memref<32x33xf32, 3 : i64>
// CHECK-NEXT:        loop.parallel %thread < 256 mapping thread.x {
// CHECK:               %[[ROW:.*]] = arith.divui %thread, %{{.*}} : index
// CHECK-NEXT:          %[[COLUMN:.*]] = arith.remui %thread, %{{.*}} : index
// CHECK:               %[[SOURCE_ROW:.*]] = arith.addi %j, %[[ROW]] : index
// CHECK-NEXT:          %[[SOURCE_COLUMN:.*]] = arith.addi %i, %[[COLUMN]] : index
// CHECK:               %[[INSIDE:.*]] = arith.cmpi ult, %[[SOURCE_ROW]], %{{.*}} : index
// CHECK-NEXT:          %[[VALUE:.*]] = scf.if %[[INSIDE]] -> (f32) {
// CHECK-NEXT:            %[[LOADED:.*]] = memref.load %x[%[[SOURCE_ROW]], %[[SOURCE_COLUMN]]] : memref<40x64xf32>
// CHECK-NEXT:            scf.yield %[[LOADED]] : f32
// CHECK-NEXT:          } else {
// CHECK:               memref.store %[[VALUE]], %[[STAGE]][%[[ROW]], %[[COLUMN]]] : memref<32x33xf32, 3 : i64>
// CHECK-COUNT-3:       memref.store %{{.*}}, %[[STAGE]]
// CHECK:               %[[RESULT_ROW:.*]] = arith.addi %i, %[[ROW]] : index
// CHECK-NEXT:          %[[RESULT_COLUMN:.*]] = arith.addi %j, %[[COLUMN]] : index
// CHECK-NEXT:          %[[KEEP:.*]] = arith.cmpi ult, %[[RESULT_COLUMN]], %{{.*}} : index
// CHECK-NEXT:          scf.if %[[KEEP]] {
// CHECK-NEXT:            %[[MOVED:.*]] = memref.load %[[STAGE]][%[[COLUMN]], %[[ROW]]] : memref<32x33xf32, 3 : i64>
// CHECK-NEXT:            memref.store %[[MOVED]], %y[%[[RESULT_ROW]], %[[RESULT_COLUMN]]] : memref<64x40xf32>
// CHECK-NEXT:          }
// CHECK-COUNT-3:       memref.load %[[STAGE]]
tile.kernel @swap(%x: memref<40x64xf32>, %y: memref<64x40xf32>) grid [2, 2] num_warps 8 attributes {mlc.transpose_block = 32 : i64} {
  %c32 = arith.constant 32 : index
  %p0 = tile.program_id 0
  %p1 = tile.program_id 1
  %i = arith.muli %p0, %c32 : index
  %j = arith.muli %p1, %c32 : index
  %t = tile.load %x[%j, %i] : memref<40x64xf32> -> !tile.tile<32x32xf32>
  %u = tile.transpose %t : !tile.tile<32x32xf32> -> !tile.tile<32x32xf32>
  tile.store %u, %y[%i, %j] : !tile.tile<32x32xf32>, memref<64x40xf32>
  tile.return
}
