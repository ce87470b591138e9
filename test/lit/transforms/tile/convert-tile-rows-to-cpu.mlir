// RUN: mlc-opt %s --split-input-file -p 'convert-tile-rows-to-cpu{vector-width=8 accumulators=2 prefetch-bytes=4096 store-prefetch-bytes=4096},canonicalize,cse' | filecheck %s
// RUN: not mlc-opt %s -p 'convert-tile-rows-to-cpu{accumulators=3}' 2>&1 | filecheck %s --check-prefix=OPTION

// RUN: not mlc-opt %s -p 'convert-tile-rows-to-cpu{store-prefetch-bytes=-64}' 2>&1 | filecheck %s --check-prefix=PREFETCH
// RUN: not mlc-opt %s -p 'convert-tile-rows-to-cpu{interleaved-rows=0}' 2>&1 | filecheck %s --check-prefix=INTERLEAVE
// RUN: mlc-opt %s --split-input-file -p 'convert-tile-rows-to-cpu{vector-width=8 accumulators=2 interleaved-rows=2 prefetch-bytes=0 store-prefetch-bytes=0},canonicalize,cse' | filecheck %s --check-prefix=TWO
// RUN: mlc-opt %s --split-input-file -p 'convert-tile-rows-to-cpu{vector-width=8 nontemporal-stores=on prefetch-bytes=0 store-prefetch-bytes=4096},canonicalize,cse' | filecheck %s --check-prefix=NT
// RUN: mlc-opt %s --split-input-file -p 'convert-tile-rows-to-cpu{vector-width=8 nontemporal-stores=off},canonicalize,cse' | filecheck %s --check-prefix=ORDINARY
// RUN: not mlc-opt %s -p 'convert-tile-rows-to-cpu{nontemporal-stores=always}' 2>&1 | filecheck %s --check-prefix=STORE-KIND

// OPTION: accumulators must be a power of two, got 3
// PREFETCH: store-prefetch-bytes must not be negative, got -64
// INTERLEAVE: interleaved-rows must be positive, got 0
// STORE-KIND: nontemporal-stores must be one of auto, on, off, got 'always'

// A softmax of 4 rows of 64: the rows run one after another; the max and the sum each run a
// column loop of two 8-lane accumulators (16 columns an iteration), combined pairwise and then
// lane by lane; the exp, needed again by the normalising store, is saved to a scratch row by
// the sum's loop, which the store's loop reads. The max's loop, the first to read x, and the
// store prefetch 4096 bytes ahead (`mlc.cpu_prefetch_bytes`); the sum's loop re-reads x from L1.
// CHECK-LABEL: loop.kernel @softmax
// CHECK-SAME:    mlc.cpu_vector_width = 8 : i64, mlc.cpu_accumulators = 2 : i64, mlc.cpu_prefetch_bytes = 4096 : i64
// CHECK:         loop.parallel %program < 1 mapping block.x {
// CHECK:           loop.parallel %row < 4 {
// CHECK:             %exp_scratch = memref.alloca() {alignment = 64 : i64} : memref<64xf32>
// CHECK:             %[[LOWEST:.*]] = arith.constant 0xff800000 : f32
// CHECK:             %[[START:.*]] = vector.broadcast %[[LOWEST]] : f32 to vector<8xf32>
// CHECK:             %[[M0:.*]], %[[M1:.*]] = scf.for %column = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[A0:.*]] = %[[START]], %[[A1:.*]] = %[[START]]) -> (vector<8xf32>, vector<8xf32>) {
// CHECK:               %[[X0:.*]] = vector.load %x[%row, %column] {alignment = 16 : i64, mlc.cpu_prefetch_bytes = 4096 : i64} : memref<4x64xf32>, vector<8xf32>
// CHECK:               arith.maximumf %[[A0]], %[[X0]] : vector<8xf32>
// CHECK:               vector.load %x[%row, %{{.*}}] {alignment = 16 : i64, mlc.cpu_prefetch_bytes = 4096 : i64} : memref<4x64xf32>, vector<8xf32>
// CHECK:               arith.maximumf %[[A1]], %{{.*}} : vector<8xf32>
// CHECK:             %[[BOTH:.*]] = arith.maximumf %[[M0]], %[[M1]] : vector<8xf32>
// CHECK-COUNT-8:     vector.extract %[[BOTH]][{{.*}}] : f32 from vector<8xf32>
// CHECK:             %max = arith.maximumf
// CHECK:             scf.for %{{.*}} iter_args({{.*}}) -> (vector<8xf32>, vector<8xf32>) {
// CHECK:               vector.load %x[%row, %{{.*}}] {alignment = 16 : i64} : memref<4x64xf32>, vector<8xf32>
// CHECK:               %[[WIDE_MAX:.*]] = vector.broadcast %max : f32 to vector<8xf32>
// CHECK:               %[[D:.*]] = arith.subf %{{.*}}, %[[WIDE_MAX]] : vector<8xf32>
// CHECK:               %[[E:.*]] = math.exp %[[D]] : vector<8xf32>
// CHECK:               vector.store %[[E]], %exp_scratch[%{{.*}}] {alignment = 64 : i64} : memref<64xf32>, vector<8xf32>
// CHECK:               arith.addf %{{.*}}, %[[E]] : vector<8xf32>
// CHECK:             %sum = arith.addf
// CHECK:             %[[INVERSE:.*]] = arith.divf %{{.*}}, %sum : f32
// CHECK:             scf.for %[[C:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:               %[[SAVED:.*]] = vector.load %exp_scratch[%[[C]]] {alignment = 64 : i64} : memref<64xf32>, vector<8xf32>
// CHECK-NOT:           math.exp
// CHECK:               arith.mulf %[[SAVED]], %{{.*}} : vector<8xf32>
// CHECK:               vector.store %{{.*}}, %output0[%row, %[[C]]] {alignment = 16 : i64, mlc.cpu_prefetch_bytes = 4096 : i64} : memref<4x64xf32>, vector<8xf32>
// CHECK:         loop.launch @softmax(%x, %0)
builtin.module {
  tile.kernel @softmax(%x: memref<4x64xf32>, %output0: memref<4x64xf32>) grid [1] num_warps 1 {
    %c0 = arith.constant 0 : index
    %t = tile.load %x[%c0, %c0] : memref<4x64xf32> -> !tile.tile<4x64xf32>
    %max = tile.reduce %t axis 1 : !tile.tile<4x64xf32> -> !tile.tile<4x1xf32> {
    ^bb0(%a: f32, %b: f32):
      %m = arith.maximumf %a, %b : f32
      tile.yield %m : f32
    }
    %wide_max = tile.broadcast %max : !tile.tile<4x1xf32> -> !tile.tile<4x64xf32>
    %exp = tile.map %t, %wide_max : !tile.tile<4x64xf32>, !tile.tile<4x64xf32> -> !tile.tile<4x64xf32> {
    ^bb0(%e: f32, %m: f32):
      %d = arith.subf %e, %m : f32
      %y = math.exp %d : f32
      tile.yield %y : f32
    }
    %sum = tile.reduce %exp axis 1 : !tile.tile<4x64xf32> -> !tile.tile<4x1xf32> {
    ^bb0(%a: f32, %b: f32):
      %s = arith.addf %a, %b : f32
      tile.yield %s : f32
    }
    %inverse = tile.map %sum : !tile.tile<4x1xf32> -> !tile.tile<4x1xf32> {
    ^bb0(%s: f32):
      %one = arith.constant 1.0 : f32
      %r = arith.divf %one, %s : f32
      tile.yield %r : f32
    }
    %wide_inverse = tile.broadcast %inverse : !tile.tile<4x1xf32> -> !tile.tile<4x64xf32>
    %out = tile.map %exp, %wide_inverse : !tile.tile<4x64xf32>, !tile.tile<4x64xf32> -> !tile.tile<4x64xf32> {
    ^bb0(%e: f32, %r: f32):
      %y = arith.mulf %e, %r : f32
      tile.yield %y : f32
    }
    tile.store %out, %output0[%c0, %c0] : !tile.tile<4x64xf32>, memref<4x64xf32>
    tile.return
  }
  func.func @f(%x: memref<4x64xf32>) -> memref<4x64xf32> {
    %0 = memref.alloc() : memref<4x64xf32>
    tile.launch @softmax(%x, %0) : memref<4x64xf32>, memref<4x64xf32>
    func.return %0 : memref<4x64xf32>
  }
}

// -----

// Row sums of 3 rows of 21 columns in a 4x32 tile, masked with tile.in_bounds: the row is cut
// where the mask changes, so that no chunk needs a per-lane mask: columns [0, 16) in 8-lane
// chunks inside the mask (one iteration of two chunks, unrolled by canonicalize; the select
// keeps only the row's condition), [16, 21) one at a time inside, [21, 24) one at a time
// outside (the select gives 0 there), [24, 32) in chunks outside. Vector loads need not be
// aligned (a row of 21). The row outside the memref (row 3) is masked by a condition per row.
// The only loop, the first to read x, prefetches it (`mlc.cpu_prefetch_bytes`).
// CHECK-LABEL: loop.kernel @row_sums
// CHECK-SAME:    mlc.arg_alignment = array<i64: 4, 4>, mlc.cpu_vector_width = 8 : i64, mlc.cpu_accumulators = 2 : i64
// CHECK:         loop.parallel %row < 4 {
// CHECK:           %[[INSIDE:.*]] = arith.cmpi ult, %row, %{{.*}} : index
// CHECK:           scf.if %[[INSIDE]] -> (f32, f32, f32, f32, f32, f32, f32, f32) {
// CHECK:             vector.load %x[%row, %c0] {alignment = 4 : i64, mlc.cpu_prefetch_bytes = 4096 : i64} : memref<3x21xf32>, vector<8xf32>
// CHECK:           arith.select %[[INSIDE]], %{{.*}}, %{{.*}} : vector<8xf32>
// CHECK:           %[[SCALARS:.*]] = scf.for %column = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%{{.*}} = %{{.*}}) -> (f32) {
// CHECK:             memref.load %x[%row, %column] : memref<3x21xf32>
// CHECK:           %[[OUTSIDE:.*]] = scf.for %{{.*}} iter_args(%{{.*}} = %[[SCALARS]]) -> (f32) {
// CHECK-NEXT:        arith.addf %{{.*}}, %zero : f32
// CHECK:           %sum = arith.addf %{{.*}}, %[[OUTSIDE]] : f32
// CHECK:           scf.if %[[INSIDE]] {
// CHECK-NEXT:        memref.store %sum, %output0[%row, %c0] : memref<3x1xf32>
builtin.module {
  tile.kernel @row_sums(%x: memref<3x21xf32>, %output0: memref<3x1xf32>) grid [1] num_warps 1 {
    %c0 = arith.constant 0 : index
    %t = tile.load %x[%c0, %c0] : memref<3x21xf32> -> !tile.tile<4x32xf32>
    %inside = tile.in_bounds [%c0, %c0] within [3, 21] : !tile.tile<4x32xi1>
    %masked = tile.map %t, %inside : !tile.tile<4x32xf32>, !tile.tile<4x32xi1> -> !tile.tile<4x32xf32> {
    ^bb0(%e: f32, %in: i1):
      %zero = arith.constant 0.0 : f32
      %s = arith.select %in, %e, %zero : f32
      tile.yield %s : f32
    }
    %sum = tile.reduce %masked axis 1 : !tile.tile<4x32xf32> -> !tile.tile<4x1xf32> {
    ^bb0(%a: f32, %b: f32):
      %s = arith.addf %a, %b : f32
      tile.yield %s : f32
    }
    tile.store %sum, %output0[%c0, %c0] : !tile.tile<4x1xf32>, memref<3x1xf32>
    tile.return
  }
  func.func @f(%x: memref<3x21xf32>) -> memref<3x1xf32> {
    %0 = memref.alloc() : memref<3x1xf32>
    tile.launch @row_sums(%x, %0) : memref<3x21xf32>, memref<3x1xf32>
    func.return %0 : memref<3x1xf32>
  }
}

// -----

// A reduction along the columns that also stores a value of every row is neither a row kernel
// nor a column kernel (columns_cpu.py stores per-column values only): left for
// convert-tile-to-loop.
// CHECK-LABEL: tile.kernel @column_sums
// CHECK:         tile.reduce %{{.*}} axis 0
// CHECK:         tile.launch @column_sums
builtin.module {
  tile.kernel @column_sums(%x: memref<64x32xf32>, %output0: memref<1x32xf32>, %output1: memref<64x32xf32>) grid [1] num_warps 4 {
    %c0 = arith.constant 0 : index
    %t = tile.load %x[%c0, %c0] : memref<64x32xf32> -> !tile.tile<64x32xf32>
    %sum = tile.reduce %t axis 0 : !tile.tile<64x32xf32> -> !tile.tile<1x32xf32> {
    ^bb0(%a: f32, %b: f32):
      %s = arith.addf %a, %b : f32
      tile.yield %s : f32
    }
    tile.store %sum, %output0[%c0, %c0] : !tile.tile<1x32xf32>, memref<1x32xf32>
    tile.store %t, %output1[%c0, %c0] : !tile.tile<64x32xf32>, memref<64x32xf32>
    tile.return
  }
  func.func @f(%x: memref<64x32xf32>) -> memref<1x32xf32> {
    %0 = memref.alloc() : memref<1x32xf32>
    %1 = memref.alloc() : memref<64x32xf32>
    tile.launch @column_sums(%x, %0, %1) : memref<64x32xf32>, memref<1x32xf32>, memref<64x32xf32>
    func.return %0 : memref<1x32xf32>
  }
}

// -----

// A column kernel (a mean over axis 0, 6 rows of a tile of 8, masked; the program's 32 columns):
// one block of 32 / 8 = 4 chunks of 8 lanes; the row loop reads rows two at a time (8 accumulator
// vectors: 4 chunks x 2 rows in flight), each row with one vector load per chunk (rows past the
// 6th read the padding), the mask one i1 per row selecting whole vectors; after the loop each
// chunk's two accumulators are added: the chunk's 8 column sums, no reduction across lanes; the
// mean's division and the store run on those vectors.
// CHECK-LABEL: loop.kernel @column_mean
// CHECK-SAME:    mlc.cpu_vector_width = 8 : i64, mlc.cpu_accumulators = 2 : i64
// CHECK:         loop.parallel %program < 2 mapping block.x {
// CHECK:           loop.parallel %column_block < 1 {
// CHECK:             %[[START:.*]] = vector.broadcast %{{.*}} : f32 to vector<8xf32>
// CHECK:             %[[S0:.*]], %[[S1:.*]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} = scf.for %row = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[A0:.*]] = %[[START]], %{{.*}} = %[[START]], %{{.*}} = %[[START]], %{{.*}} = %[[START]], %{{.*}} = %[[START]], %{{.*}} = %[[START]], %{{.*}} = %[[START]], %{{.*}} = %[[START]]) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>) {
// CHECK:               %[[INSIDE:.*]] = arith.cmpi ult, %row, %{{.*}} : index
// CHECK:               vector.load %x[%row, %{{.*}}] {alignment = 16 : i64} : memref<6x64xf32>, vector<8xf32>
// CHECK:               %[[ABS:.*]] = math.absf %{{.*}} : vector<8xf32>
// CHECK:               %[[KEPT:.*]] = arith.select %[[INSIDE]], %[[ABS]], %{{.*}} : vector<8xf32>
// CHECK:               arith.addf %[[A0]], %[[KEPT]] : vector<8xf32>
// CHECK-COUNT-3:       arith.addf %{{.*}}, %{{.*}} : vector<8xf32>
// CHECK:               arith.addi %row, %{{.*}} : index
// CHECK-COUNT-4:       arith.addf %{{.*}}, %{{.*}} : vector<8xf32>
// CHECK:               scf.yield
// CHECK:             %sum = arith.addf %[[S0]], %[[S1]] : vector<8xf32>
// CHECK-NOT:         vector.extract %sum
// CHECK:             %[[MEAN:.*]] = arith.divf %sum, %{{.*}} : vector<8xf32>
// CHECK:             vector.store %{{.*}}, %output0[%c0, %{{.*}}] {alignment = 16 : i64} : memref<1x64xf32>, vector<8xf32>
// CHECK-COUNT-3:     vector.store %{{.*}}, %output0
// CHECK:         loop.launch @column_mean(%x, %0)
builtin.module {
  tile.kernel @column_mean(%x: memref<6x64xf32>, %output0: memref<1x64xf32>) grid [2] num_warps 1 {
    %program = tile.program_id 0
    %c32 = arith.constant 32 : index
    %column = arith.muli %program, %c32 : index
    %c0 = arith.constant 0 : index
    %t = tile.load %x[%c0, %column] : memref<6x64xf32> -> !tile.tile<8x32xf32>
    %mask = tile.in_bounds [%c0, %column] within [6, 64] : !tile.tile<8x32xi1>
    %kept = tile.map %t, %mask : !tile.tile<8x32xf32>, !tile.tile<8x32xi1> -> !tile.tile<8x32xf32> {
    ^bb0(%v: f32, %inside: i1):
      %zero = arith.constant 0.0 : f32
      %a = math.absf %v : f32
      %s = arith.select %inside, %a, %zero : f32
      tile.yield %s : f32
    }
    %sum = tile.reduce %kept axis 0 : !tile.tile<8x32xf32> -> !tile.tile<1x32xf32> {
    ^bb0(%a: f32, %b: f32):
      %s = arith.addf %a, %b : f32
      tile.yield %s : f32
    }
    %mean = tile.map %sum : !tile.tile<1x32xf32> -> !tile.tile<1x32xf32> {
    ^bb0(%s: f32):
      %n = arith.constant 6.0 : f32
      %m = arith.divf %s, %n : f32
      tile.yield %m : f32
    }
    tile.store %mean, %output0[%c0, %column] : !tile.tile<1x32xf32>, memref<1x64xf32>
    tile.return
  }
  func.func @f(%x: memref<6x64xf32>) -> memref<1x64xf32> {
    %0 = memref.alloc() : memref<1x64xf32>
    tile.launch @column_mean(%x, %0) : memref<6x64xf32>, memref<1x64xf32>
    func.return %0 : memref<1x64xf32>
  }
}

// -----

// A map that has no vector form (a tangent: libm per element) in a column kernel runs once per lane
// of the chunk, on the lanes extracted from the loaded vector, and its results are packed back
// into the vector that the accumulator adds.
// CHECK-LABEL: loop.kernel @column_tangents
// CHECK:         scf.for %row = %{{.*}} to %{{.*}} step %{{.*}} iter_args
// CHECK:           %[[X:.*]] = vector.load %x[%row, %{{.*}}] {alignment = 16 : i64} : memref<16x8xf32>, vector<8xf32>
// CHECK-COUNT-8:   math.tan %{{.*}} : f32
// CHECK:           %[[PACKED:.*]] = vector.insert %{{.*}}, %{{.*}} [7] : f32 into vector<8xf32>
// CHECK-NEXT:      arith.addf %{{.*}}, %[[PACKED]] : vector<8xf32>
builtin.module {
  tile.kernel @column_tangents(%x: memref<16x8xf32>, %output0: memref<1x8xf32>) grid [1] num_warps 1 {
    %c0 = arith.constant 0 : index
    %t = tile.load %x[%c0, %c0] : memref<16x8xf32> -> !tile.tile<16x8xf32>
    %s = tile.map %t : !tile.tile<16x8xf32> -> !tile.tile<16x8xf32> {
    ^bb0(%v: f32):
      %y = math.tan %v : f32
      tile.yield %y : f32
    }
    %sum = tile.reduce %s axis 0 : !tile.tile<16x8xf32> -> !tile.tile<1x8xf32> {
    ^bb0(%a: f32, %b: f32):
      %r = arith.addf %a, %b : f32
      tile.yield %r : f32
    }
    tile.store %sum, %output0[%c0, %c0] : !tile.tile<1x8xf32>, memref<1x8xf32>
    tile.return
  }
  func.func @f(%x: memref<16x8xf32>) -> memref<1x8xf32> {
    %0 = memref.alloc() : memref<1x8xf32>
    tile.launch @column_tangents(%x, %0) : memref<16x8xf32>, memref<1x8xf32>
    func.return %0 : memref<1x8xf32>
  }
}

// -----

// An elementwise kernel (no reduction) streams its rows: the whole-chunk loads and stores of its
// operands carry `mlc.cpu_prefetch_bytes` (4096 from the RUN line's options; by default the
// host's, none for this elementwise kernel on AMD Zen cores; recorded on the loop kernel), for convert-vector-to-llvm's
// prefetches; the same attribute on a tile kernel overrides it (0: none),
// for the stores too unless `mlc.cpu_store_prefetch_bytes` gives theirs.
// CHECK-LABEL: loop.kernel @scaled
// CHECK-SAME:    mlc.cpu_prefetch_bytes = 4096 : i64, mlc.cpu_store_prefetch_bytes = 4096 : i64
// CHECK:         scf.for %[[C:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:           vector.load %x[%row, %[[C]]] {alignment = 16 : i64, mlc.cpu_prefetch_bytes = 4096 : i64} : memref<4x64xf32>, vector<8xf32>
// CHECK:           vector.store %{{.*}}, %output0[%row, %[[C]]] {alignment = 16 : i64, mlc.cpu_prefetch_bytes = 4096 : i64} : memref<4x64xf32>, vector<8xf32>
// CHECK-LABEL: loop.kernel @scaled_without_prefetch
// CHECK-NOT:     mlc.cpu_prefetch_bytes = 4096
// CHECK-LABEL: loop.kernel @scaled_stores_prefetched
// CHECK-SAME:    mlc.cpu_store_prefetch_bytes = 1024 : i64
// CHECK:           vector.load %x[%row, %[[C:.*]]] {alignment = 16 : i64} : memref<4x64xf32>, vector<8xf32>
// CHECK:           vector.store %{{.*}}, %output0[%row, %[[C]]] {alignment = 16 : i64, mlc.cpu_prefetch_bytes = 1024 : i64} : memref<4x64xf32>, vector<8xf32>
// A row that all rows share ([1, C], a bias) stays in L1: its loads prefetch nothing.
// CHECK-LABEL: loop.kernel @biased
// CHECK:           vector.load %x[%row, %[[C:.*]]] {alignment = 16 : i64, mlc.cpu_prefetch_bytes = 4096 : i64} : memref<4x64xf32>, vector<8xf32>
// CHECK:           vector.load %b[%c0, %[[C]]] {alignment = 16 : i64} : memref<1x64xf32>, vector<8xf32>
// CHECK:           vector.store %{{.*}}, %output0[%row, %[[C]]] {alignment = 16 : i64, mlc.cpu_prefetch_bytes = 4096 : i64} : memref<4x64xf32>, vector<8xf32>
// CHECK:         loop.launch @scaled
builtin.module {
  tile.kernel @scaled(%x: memref<4x64xf32>, %output0: memref<4x64xf32>) grid [1] num_warps 1 {
    %c0 = arith.constant 0 : index
    %t = tile.load %x[%c0, %c0] : memref<4x64xf32> -> !tile.tile<4x64xf32>
    %y = tile.map %t : !tile.tile<4x64xf32> -> !tile.tile<4x64xf32> {
    ^bb0(%e: f32):
      %two = arith.constant 2.0 : f32
      %d = arith.mulf %e, %two : f32
      tile.yield %d : f32
    }
    tile.store %y, %output0[%c0, %c0] : !tile.tile<4x64xf32>, memref<4x64xf32>
    tile.return
  }
  tile.kernel @scaled_without_prefetch(%x: memref<4x64xf32>, %output0: memref<4x64xf32>) grid [1] num_warps 1 attributes {mlc.cpu_prefetch_bytes = 0 : i64} {
    %c0 = arith.constant 0 : index
    %t = tile.load %x[%c0, %c0] : memref<4x64xf32> -> !tile.tile<4x64xf32>
    %y = tile.map %t : !tile.tile<4x64xf32> -> !tile.tile<4x64xf32> {
    ^bb0(%e: f32):
      %two = arith.constant 2.0 : f32
      %d = arith.mulf %e, %two : f32
      tile.yield %d : f32
    }
    tile.store %y, %output0[%c0, %c0] : !tile.tile<4x64xf32>, memref<4x64xf32>
    tile.return
  }
  tile.kernel @scaled_stores_prefetched(%x: memref<4x64xf32>, %output0: memref<4x64xf32>) grid [1] num_warps 1 attributes {mlc.cpu_prefetch_bytes = 0 : i64, mlc.cpu_store_prefetch_bytes = 1024 : i64} {
    %c0 = arith.constant 0 : index
    %t = tile.load %x[%c0, %c0] : memref<4x64xf32> -> !tile.tile<4x64xf32>
    %y = tile.map %t : !tile.tile<4x64xf32> -> !tile.tile<4x64xf32> {
    ^bb0(%e: f32):
      %two = arith.constant 2.0 : f32
      %d = arith.mulf %e, %two : f32
      tile.yield %d : f32
    }
    tile.store %y, %output0[%c0, %c0] : !tile.tile<4x64xf32>, memref<4x64xf32>
    tile.return
  }
  tile.kernel @biased(%x: memref<4x64xf32>, %b: memref<1x64xf32>, %output0: memref<4x64xf32>) grid [1] num_warps 1 {
    %c0 = arith.constant 0 : index
    %t = tile.load %x[%c0, %c0] : memref<4x64xf32> -> !tile.tile<4x64xf32>
    %r = tile.load %b[%c0, %c0] : memref<1x64xf32> -> !tile.tile<1x64xf32>
    %w = tile.broadcast %r : !tile.tile<1x64xf32> -> !tile.tile<4x64xf32>
    %y = tile.map %t, %w : !tile.tile<4x64xf32>, !tile.tile<4x64xf32> -> !tile.tile<4x64xf32> {
    ^bb0(%e: f32, %f: f32):
      %d = arith.addf %e, %f : f32
      tile.yield %d : f32
    }
    tile.store %y, %output0[%c0, %c0] : !tile.tile<4x64xf32>, memref<4x64xf32>
    tile.return
  }
  func.func @f(%x: memref<4x64xf32>, %b: memref<1x64xf32>) -> memref<4x64xf32> {
    %0 = memref.alloc() : memref<4x64xf32>
    tile.launch @biased(%x, %b, %0) : memref<4x64xf32>, memref<1x64xf32>, memref<4x64xf32>
    tile.launch @scaled(%x, %0) : memref<4x64xf32>, memref<4x64xf32>
    tile.launch @scaled_without_prefetch(%x, %0) : memref<4x64xf32>, memref<4x64xf32>
    func.return %0 : memref<4x64xf32>
  }
}

// -----

// Two rows interleaved (prefix TWO, interleaved-rows=2) in a program of 3 rows of 32: the row loop runs
// one step of rows 2 * step and 2 * step + 1, whose sum loop carries two accumulators for each
// (four), loading both rows' chunks in every iteration; each row's accumulators are combined in
// a tree of its own (%sum, %sum_1), and one store loop writes both rows' chunks. The row that 2
// leaves over (row 2) runs after them, alone, in a second row loop. Without the option (CHECK)
// the rows run one at a time in one loop.
// CHECK-LABEL: loop.kernel @centered
// CHECK-SAME:    mlc.cpu_interleaved_rows = 1 : i64
// CHECK:         loop.parallel %row < 3 {
// CHECK-NOT:     loop.parallel
// CHECK:         loop.launch @centered
// TWO-LABEL: loop.kernel @centered
// TWO-SAME:    mlc.cpu_interleaved_rows = 2 : i64
// TWO:         loop.parallel %[[STEP:.*]] < 1 {
// TWO:           %[[FIRST:.*]] = arith.muli %[[STEP]], %{{.*}} : index
// TWO:           %[[SECOND:.*]] = arith.addi %[[FIRST]], %{{.*}} : index
// TWO:           scf.for %{{.*}} iter_args(%[[A0:.*]] = %{{.*}}, %[[A1:.*]] = %{{.*}}, %[[B0:.*]] = %{{.*}}, %[[B1:.*]] = %{{.*}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>) {
// TWO:             vector.load %x[%[[FIRST]], %{{.*}}] {alignment = 16 : i64} : memref<3x32xf32>, vector<8xf32>
// TWO:             arith.addf %[[A0]], %{{.*}} : vector<8xf32>
// TWO:             vector.load %x[%[[SECOND]], %{{.*}}] {alignment = 16 : i64} : memref<3x32xf32>, vector<8xf32>
// TWO:             arith.addf %[[B0]], %{{.*}} : vector<8xf32>
// TWO:             arith.addf %[[A1]], %{{.*}} : vector<8xf32>
// TWO:             arith.addf %[[B1]], %{{.*}} : vector<8xf32>
// TWO:           %sum = arith.addf
// TWO:           %sum_1 = arith.addf
// TWO:           scf.for %[[C:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// TWO:             vector.broadcast %sum : f32 to vector<8xf32>
// TWO:             vector.store %{{.*}}, %output0[%[[FIRST]], %[[C]]]
// TWO:             vector.broadcast %sum_1 : f32 to vector<8xf32>
// TWO:             vector.store %{{.*}}, %output0[%[[SECOND]], %[[C]]]
// TWO:         loop.parallel %[[LEFT:.*]] < 1 {
// TWO:           %[[LAST:.*]] = arith.addi %[[LEFT]], %{{.*}} : index
// TWO:           scf.for %{{.*}} iter_args(%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) -> (vector<8xf32>, vector<8xf32>) {
// TWO:             vector.load %x[%[[LAST]], %{{.*}}]
// TWO:           %sum_2 = arith.addf
// TWO:           scf.for
// TWO:             vector.store %{{.*}}, %output0[%[[LAST]], %{{.*}}]
// TWO:         loop.launch @centered
builtin.module {
  tile.kernel @centered(%x: memref<3x32xf32>, %output0: memref<3x32xf32>) grid [1] num_warps 1 {
    %c0 = arith.constant 0 : index
    %t = tile.load %x[%c0, %c0] : memref<3x32xf32> -> !tile.tile<3x32xf32>
    %sum = tile.reduce %t axis 1 : !tile.tile<3x32xf32> -> !tile.tile<3x1xf32> {
    ^bb0(%a: f32, %b: f32):
      %s = arith.addf %a, %b : f32
      tile.yield %s : f32
    }
    %wide_sum = tile.broadcast %sum : !tile.tile<3x1xf32> -> !tile.tile<3x32xf32>
    %out = tile.map %t, %wide_sum : !tile.tile<3x32xf32>, !tile.tile<3x32xf32> -> !tile.tile<3x32xf32> {
    ^bb0(%e: f32, %s: f32):
      %y = arith.subf %e, %s : f32
      tile.yield %y : f32
    }
    tile.store %out, %output0[%c0, %c0] : !tile.tile<3x32xf32>, memref<3x32xf32>
    tile.return
  }
  func.func @f(%x: memref<3x32xf32>) -> memref<3x32xf32> {
    %0 = memref.alloc() : memref<3x32xf32>
    tile.launch @centered(%x, %0) : memref<3x32xf32>, memref<3x32xf32>
    func.return %0 : memref<3x32xf32>
  }
}

// -----

// A comparison deciding a select (leaky ReLU, where(x > 0, x, 0.01 x)) is computed on vectors:
// llvm.fcmp of the chunk against the broadcast constant into a vector of i1, then llvm.select lane
// by lane (xDSL's arith types both scalar only: vector_maps.py).
// CHECK-LABEL: loop.kernel @leaky
// CHECK-SAME:    mlc.cpu_vector_width = 8 : i64
// CHECK:           %[[X:.*]] = vector.load %x[%row, %{{.*}}] {{.*}} : memref<2x64xf32>, vector<8xf32>
// CHECK:           %[[M:.*]] = llvm.fcmp "ogt" %[[X]], %{{.*}} : vector<8xf32>
// CHECK:           %[[S:.*]] = arith.mulf %[[X]], %{{.*}} : vector<8xf32>
// CHECK:           %[[Y:.*]] = llvm.select %[[M]], %[[X]], %[[S]] : vector<8xi1>, vector<8xf32>
// CHECK:           vector.extract %[[Y]][0] : f32 from vector<8xf32>
// CHECK:           vector.store %{{.*}}, %output0[%row, %{{.*}}]
// CHECK:         loop.launch @leaky
builtin.module {
  tile.kernel @leaky(%x: memref<2x64xf32>, %output0: memref<2x64xf32>) grid [1] num_warps 1 {
    %c0 = arith.constant 0 : index
    %t = tile.load %x[%c0, %c0] : memref<2x64xf32> -> !tile.tile<2x64xf32>
    %y = tile.map %t : !tile.tile<2x64xf32> -> !tile.tile<2x64xf32> {
    ^bb0(%e: f32):
      %zero = arith.constant 0.0 : f32
      %m = arith.cmpf ogt, %e, %zero : f32
      %slope = arith.constant 0.01 : f32
      %s = arith.mulf %e, %slope : f32
      %r = arith.select %m, %e, %s : f32
      tile.yield %r : f32
    }
    tile.store %y, %output0[%c0, %c0] : !tile.tile<2x64xf32>, memref<2x64xf32>
    tile.return
  }
  func.func @f(%x: memref<2x64xf32>) -> memref<2x64xf32> {
    %0 = memref.alloc() : memref<2x64xf32>
    tile.launch @leaky(%x, %0) : memref<2x64xf32>, memref<2x64xf32>
    func.return %0 : memref<2x64xf32>
  }
}

// -----

// A comparison cast to f32 ((x > y).astype(f32) * x) is a select of 1.0 and 0.0 on the
// comparison's vector; a comparison stored as a bool (an i1 tile that only a store uses) is
// stored as that vector of i1 (convert-vector-to-llvm writes it as bytes, one a boolean).
// CHECK-LABEL: loop.kernel @compare_cast_and_store
// CHECK-SAME:    mlc.cpu_vector_width = 8 : i64
// CHECK:           %[[M:.*]] = llvm.fcmp "ogt" %{{.*}}, %{{.*}} : vector<8xf32>
// CHECK-DAG:       %[[ONE:.*]] = vector.broadcast %{{.*}} : f32 to vector<8xf32>
// CHECK-DAG:       %[[ZERO:.*]] = vector.broadcast %{{.*}} : f32 to vector<8xf32>
// CHECK:           %[[F:.*]] = llvm.select %[[M]], %[[ONE]], %[[ZERO]] : vector<8xi1>, vector<8xf32>
// CHECK:           arith.mulf %[[F]], %{{.*}} : vector<8xf32>
// CHECK:           %[[B:.*]] = llvm.fcmp "ogt" %{{.*}}, %{{.*}} : vector<8xf32>
// CHECK:           vector.extract %[[B]][0] : i1 from vector<8xi1>
// CHECK:           vector.store %{{.*}}, %output1[%row, %{{.*}}] {{.*}} : memref<2x64xi1>, vector<8xi1>
// CHECK-NOT:       memref.store
builtin.module {
  tile.kernel @compare_cast_and_store(%x: memref<2x64xf32>, %y: memref<2x64xf32>, %output0: memref<2x64xf32>, %output1: memref<2x64xi1>) grid [1] num_warps 1 {
    %c0 = arith.constant 0 : index
    %t = tile.load %x[%c0, %c0] : memref<2x64xf32> -> !tile.tile<2x64xf32>
    %u = tile.load %y[%c0, %c0] : memref<2x64xf32> -> !tile.tile<2x64xf32>
    %p = tile.map %t, %u : !tile.tile<2x64xf32>, !tile.tile<2x64xf32> -> !tile.tile<2x64xf32> {
    ^bb0(%a: f32, %b: f32):
      %m = arith.cmpf ogt, %a, %b : f32
      %f = arith.uitofp %m : i1 to f32
      %r = arith.mulf %f, %a : f32
      tile.yield %r : f32
    }
    %q = tile.map %t, %u : !tile.tile<2x64xf32>, !tile.tile<2x64xf32> -> !tile.tile<2x64xi1> {
    ^bb0(%a: f32, %b: f32):
      %m = arith.cmpf ogt, %a, %b : f32
      tile.yield %m : i1
    }
    tile.store %p, %output0[%c0, %c0] : !tile.tile<2x64xf32>, memref<2x64xf32>
    tile.store %q, %output1[%c0, %c0] : !tile.tile<2x64xi1>, memref<2x64xi1>
    tile.return
  }
}

// -----

// Non-temporal stores (prefix NT with nontemporal-stores=on, prefix ORDINARY with off, the default
// prefix with auto, which keeps these small kernels' stores ordinary). The whole-chunk stores to the output parameter become
// `nontemporal` and lose their prefetch (a prefetchw is the read-for-ownership they save); the
// kernel records `mlc.cpu_store_kind`. A tile kernel's `mlc.cpu_store_kind = "ordinary"` overrides
// the option; rows of 6 (one vector of 6 lanes a row, only known 4-byte aligned: LLVM would split
// such a store into `movnti`s) stay ordinary and carry no attribute.
// NT-LABEL:    loop.kernel @streamed
// NT-SAME:       mlc.cpu_store_kind = "nontemporal"
// NT:            vector.load %x[%row, %[[C:.*]]] {alignment = 16 : i64} : memref<4x64xf32>, vector<8xf32>
// NT:            vector.store %{{.*}}, %output0[%row, %[[C]]] {alignment = 16 : i64, nontemporal = true} : memref<4x64xf32>, vector<8xf32>
// NT-LABEL:    loop.kernel @kept_ordinary
// NT-NOT:        nontemporal
// NT:            vector.store %{{.*}}, %output0[%row, %{{.*}}] {alignment = 16 : i64, mlc.cpu_prefetch_bytes = 4096 : i64} : memref<4x64xf32>, vector<8xf32>
// NT-LABEL:    loop.kernel @narrow
// NT-NOT:        nontemporal
// NT:            vector.store %{{.*}}, %output0[%row, %{{.*}}] {alignment = 4 : i64, mlc.cpu_prefetch_bytes = 4096 : i64} : memref<4x6xf32>, vector<6xf32>
// NT-NOT:        nontemporal
// NT:          func.func @f
// ORDINARY-LABEL: loop.kernel @streamed
// ORDINARY-NOT:   nontemporal
// ORDINARY:       func.func @f
// CHECK-LABEL: loop.kernel @streamed
// CHECK-NOT:     nontemporal
// CHECK:       func.func @f
builtin.module {
  tile.kernel @streamed(%x: memref<4x64xf32>, %output0: memref<4x64xf32>) grid [1] num_warps 1 {
    %c0 = arith.constant 0 : index
    %t = tile.load %x[%c0, %c0] : memref<4x64xf32> -> !tile.tile<4x64xf32>
    %y = tile.map %t : !tile.tile<4x64xf32> -> !tile.tile<4x64xf32> {
    ^bb0(%e: f32):
      %d = arith.negf %e : f32
      tile.yield %d : f32
    }
    tile.store %y, %output0[%c0, %c0] : !tile.tile<4x64xf32>, memref<4x64xf32>
    tile.return
  }
  tile.kernel @kept_ordinary(%x: memref<4x64xf32>, %output0: memref<4x64xf32>) grid [1] num_warps 1 attributes {mlc.cpu_store_kind = "ordinary"} {
    %c0 = arith.constant 0 : index
    %t = tile.load %x[%c0, %c0] : memref<4x64xf32> -> !tile.tile<4x64xf32>
    %y = tile.map %t : !tile.tile<4x64xf32> -> !tile.tile<4x64xf32> {
    ^bb0(%e: f32):
      %d = arith.negf %e : f32
      tile.yield %d : f32
    }
    tile.store %y, %output0[%c0, %c0] : !tile.tile<4x64xf32>, memref<4x64xf32>
    tile.return
  }
  tile.kernel @narrow(%x: memref<4x6xf32>, %output0: memref<4x6xf32>) grid [1] num_warps 1 {
    %c0 = arith.constant 0 : index
    %t = tile.load %x[%c0, %c0] : memref<4x6xf32> -> !tile.tile<4x6xf32>
    %y = tile.map %t : !tile.tile<4x6xf32> -> !tile.tile<4x6xf32> {
    ^bb0(%e: f32):
      %d = arith.negf %e : f32
      tile.yield %d : f32
    }
    tile.store %y, %output0[%c0, %c0] : !tile.tile<4x6xf32>, memref<4x6xf32>
    tile.return
  }
  func.func @f(%x: memref<4x64xf32>, %n: memref<4x6xf32>) -> (memref<4x64xf32>, memref<4x6xf32>) {
    %0 = memref.alloc() : memref<4x64xf32>
    %1 = memref.alloc() : memref<4x6xf32>
    tile.launch @streamed(%x, %0) : memref<4x64xf32>, memref<4x64xf32>
    tile.launch @kept_ordinary(%x, %0) : memref<4x64xf32>, memref<4x64xf32>
    tile.launch @narrow(%n, %1) : memref<4x6xf32>, memref<4x6xf32>
    func.return %0, %1 : memref<4x64xf32>, memref<4x6xf32>
  }
}
