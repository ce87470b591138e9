// RUN: mlc-opt %s --split-input-file -p convert-tile-to-loop,canonicalize,cse | filecheck %s
// RUN: mlc-opt %s --split-input-file -p convert-tile-to-loop | mlc-opt --split-input-file -p canonicalize,cse | filecheck %s

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
