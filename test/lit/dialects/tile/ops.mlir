// Round trip of every tile op and of !tile.tile in the custom syntax, its generic form, and
// generic back to custom.
// RUN: mlc-opt %s | filecheck %s
// RUN: mlc-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC
// RUN: mlc-opt %s --print-op-generic | mlc-opt | filecheck %s

// CHECK:   builtin.module {
// GENERIC: "builtin.module"() ({

// The example of the dialect's docstring: a 1-d grid, loads (one with padding), a two-input map,
// a store.
// CHECK-LABEL: tile.kernel @add(%x: memref<1000xf32>, %y: memref<1000xf32>, %out: memref<1000xf32>) grid [4] {
// CHECK-NEXT:    %pid = tile.program_id 0
// CHECK-NEXT:    %c256 = arith.constant 256 : index
// CHECK-NEXT:    %offset = arith.muli %pid, %c256 : index
// CHECK-NEXT:    %a = tile.load %x[%offset] : memref<1000xf32> -> !tile.tile<256xf32>
// CHECK-NEXT:    %b = tile.load %y[%offset] padding 1.000000e+00 : f32 : memref<1000xf32> -> !tile.tile<256xf32>
// CHECK-NEXT:    %s = tile.map %a, %b : !tile.tile<256xf32>, !tile.tile<256xf32> -> !tile.tile<256xf32> {
// CHECK-NEXT:    ^bb0(%u: f32, %v: f32):
// CHECK-NEXT:      %w = arith.addf %u, %v : f32
// CHECK-NEXT:      tile.yield %w : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    tile.store %s, %out[%offset] : !tile.tile<256xf32>, memref<1000xf32>
// CHECK-NEXT:    tile.return
// CHECK-NEXT:  }
// GENERIC-LABEL: "tile.kernel"() <{sym_name = "add"
// GENERIC-SAME:  , function_type = (memref<1000xf32>, memref<1000xf32>, memref<1000xf32>) -> (), grid = array<i64: 4>}> ({
// GENERIC-NEXT:  ^bb0(%x: memref<1000xf32>, %y: memref<1000xf32>, %out: memref<1000xf32>):
// GENERIC-NEXT:    %pid = "tile.program_id"() <{axis = 0 : i64}> : () -> index
// GENERIC-NEXT:    %c256 = "arith.constant"() <{value = 256 : index}> : () -> index
// GENERIC-NEXT:    %offset = "arith.muli"(%pid, %c256) <{overflowFlags = #arith.overflow<none>}> : (index, index) -> index
// GENERIC-NEXT:    %a = "tile.load"(%x, %offset) : (memref<1000xf32>, index) -> !tile.tile<256xf32>
// GENERIC-NEXT:    %b = "tile.load"(%y, %offset) <{padding = 1.000000e+00 : f32}> : (memref<1000xf32>, index) -> !tile.tile<256xf32>
// GENERIC-NEXT:    %s = "tile.map"(%a, %b) ({
// GENERIC-NEXT:    ^bb0(%u: f32, %v: f32):
// GENERIC-NEXT:      %w = "arith.addf"(%u, %v) <{fastmath = #arith.fastmath<none>}> : (f32, f32) -> f32
// GENERIC-NEXT:      "tile.yield"(%w) : (f32) -> ()
// GENERIC-NEXT:    }) : (!tile.tile<256xf32>, !tile.tile<256xf32>) -> !tile.tile<256xf32>
// GENERIC-NEXT:    "tile.store"(%s, %out, %offset) : (!tile.tile<256xf32>, memref<1000xf32>, index) -> ()
// GENERIC-NEXT:    "tile.return"() : () -> ()
// GENERIC-NEXT:  }) : () -> ()
tile.kernel @add(%x: memref<1000xf32>, %y: memref<1000xf32>, %out: memref<1000xf32>) grid [4] {
  %pid = tile.program_id 0
  %c256 = arith.constant 256 : index
  %offset = arith.muli %pid, %c256 : index
  %a = tile.load %x[%offset] : memref<1000xf32> -> !tile.tile<256xf32>
  %b = tile.load %y[%offset] padding 1.0 : f32 : memref<1000xf32> -> !tile.tile<256xf32>
  %s = tile.map %a, %b : !tile.tile<256xf32>, !tile.tile<256xf32> -> !tile.tile<256xf32> {
  ^bb0(%u: f32, %v: f32):
    %w = arith.addf %u, %v : f32
    tile.yield %w : f32
  }
  tile.store %s, %out[%offset] : !tile.tile<256xf32>, memref<1000xf32>
  tile.return
}

// A 3-d grid with num_warps and an attribute dictionary; rank-3 f16 tiles; program ids on all axes.
// CHECK-LABEL: tile.kernel @grid3(%x: memref<2x64x64xf16>, %out: memref<2x64x64xf16>) grid [2, 4, 4] num_warps 8 attributes {mlc.note = "3-d"} {
// CHECK-NEXT:    %z = tile.program_id 0
// CHECK-NEXT:    %y = tile.program_id 1
// CHECK-NEXT:    %x16 = tile.program_id 2
// CHECK-NEXT:    %c16 = arith.constant 16 : index
// CHECK-NEXT:    %row = arith.muli %y, %c16 : index
// CHECK-NEXT:    %col = arith.muli %x16, %c16 : index
// CHECK-NEXT:    %t = tile.load %x[%z, %row, %col] : memref<2x64x64xf16> -> !tile.tile<1x16x16xf16>
// CHECK-NEXT:    %r = tile.map %t : !tile.tile<1x16x16xf16> -> !tile.tile<1x16x16xf16> {
// CHECK-NEXT:    ^bb0(%e: f16):
// CHECK-NEXT:      %n = arith.negf %e : f16
// CHECK-NEXT:      tile.yield %n : f16
// CHECK-NEXT:    }
// CHECK-NEXT:    tile.store %r, %out[%z, %row, %col] : !tile.tile<1x16x16xf16>, memref<2x64x64xf16>
// CHECK-NEXT:    tile.return
// CHECK-NEXT:  }
// GENERIC-LABEL: "tile.kernel"() <{sym_name = "grid3"
// GENERIC-SAME:  , function_type = (memref<2x64x64xf16>, memref<2x64x64xf16>) -> (), grid = array<i64: 2, 4, 4>, num_warps = 8 : i64}> ({
// GENERIC-NEXT:  ^bb0(%x: memref<2x64x64xf16>, %out: memref<2x64x64xf16>):
// GENERIC-NEXT:    %z = "tile.program_id"() <{axis = 0 : i64}> : () -> index
// GENERIC-NEXT:    %y = "tile.program_id"() <{axis = 1 : i64}> : () -> index
// GENERIC-NEXT:    %x16 = "tile.program_id"() <{axis = 2 : i64}> : () -> index
// GENERIC-NEXT:    %c16 = "arith.constant"() <{value = 16 : index}> : () -> index
// GENERIC-NEXT:    %row = "arith.muli"(%y, %c16) <{overflowFlags = #arith.overflow<none>}> : (index, index) -> index
// GENERIC-NEXT:    %col = "arith.muli"(%x16, %c16) <{overflowFlags = #arith.overflow<none>}> : (index, index) -> index
// GENERIC-NEXT:    %t = "tile.load"(%x, %z, %row, %col) : (memref<2x64x64xf16>, index, index, index) -> !tile.tile<1x16x16xf16>
// GENERIC-NEXT:    %r = "tile.map"(%t) ({
// GENERIC-NEXT:    ^bb0(%e: f16):
// GENERIC-NEXT:      %n = "arith.negf"(%e) <{fastmath = #arith.fastmath<none>}> : (f16) -> f16
// GENERIC-NEXT:      "tile.yield"(%n) : (f16) -> ()
// GENERIC-NEXT:    }) : (!tile.tile<1x16x16xf16>) -> !tile.tile<1x16x16xf16>
// GENERIC-NEXT:    "tile.store"(%r, %out, %z, %row, %col) : (!tile.tile<1x16x16xf16>, memref<2x64x64xf16>, index, index, index) -> ()
// GENERIC-NEXT:    "tile.return"() : () -> ()
// GENERIC-NEXT:  }) {mlc.note = "3-d"} : () -> ()
tile.kernel @grid3(%x: memref<2x64x64xf16>, %out: memref<2x64x64xf16>) grid [2, 4, 4] num_warps 8 attributes {mlc.note = "3-d"} {
  %z = tile.program_id 0
  %y = tile.program_id 1
  %x16 = tile.program_id 2
  %c16 = arith.constant 16 : index
  %row = arith.muli %y, %c16 : index
  %col = arith.muli %x16, %c16 : index
  %t = tile.load %x[%z, %row, %col] : memref<2x64x64xf16> -> !tile.tile<1x16x16xf16>
  %r = tile.map %t : !tile.tile<1x16x16xf16> -> !tile.tile<1x16x16xf16> {
  ^bb0(%e: f16):
    %n = arith.negf %e : f16
    tile.yield %n : f16
  }
  tile.store %r, %out[%z, %row, %col] : !tile.tile<1x16x16xf16>, memref<2x64x64xf16>
  tile.return
}

// Integer and i1 tiles, integer padding, splat, broadcast (size-1 and leading dimensions), a map
// with two results that uses a scalar from above, and a map without operands.
// CHECK-LABEL: tile.kernel @ints(%a: memref<8x8xi32>, %m: memref<8xi1>, %out: memref<8x8xi32>, %flags: memref<8x8xi1>) grid [1, 1] {
// CHECK-NEXT:    %c0 = arith.constant 0 : index
// CHECK-NEXT:    %a0 = tile.load %a[%c0, %c0] padding -1 : i32 : memref<8x8xi32> -> !tile.tile<8x8xi32>
// CHECK-NEXT:    %col = tile.load %a[%c0, %c0] : memref<8x8xi32> -> !tile.tile<8x1xi32>
// CHECK-NEXT:    %colb = tile.broadcast %col : !tile.tile<8x1xi32> -> !tile.tile<8x8xi32>
// CHECK-NEXT:    %mask = tile.load %m[%c0] : memref<8xi1> -> !tile.tile<8xi1>
// CHECK-NEXT:    %maskb = tile.broadcast %mask : !tile.tile<8xi1> -> !tile.tile<8x8xi1>
// CHECK-NEXT:    %seven = arith.constant 7 : i32
// CHECK-NEXT:    %sevens = tile.splat %seven : i32 -> !tile.tile<8x8xi32>
// CHECK-NEXT:    %sum, %big = tile.map %a0, %colb, %sevens, %maskb : !tile.tile<8x8xi32>, !tile.tile<8x8xi32>, !tile.tile<8x8xi32>, !tile.tile<8x8xi1> -> !tile.tile<8x8xi32>, !tile.tile<8x8xi1> {
// CHECK-NEXT:    ^bb0(%p: i32, %q: i32, %r: i32, %keep: i1):
// CHECK-NEXT:      %s = arith.addi %p, %q : i32
// CHECK-NEXT:      %t = arith.addi %s, %seven : i32
// CHECK-NEXT:      %v = arith.select %keep, %t, %r : i32
// CHECK-NEXT:      %g = arith.cmpi sgt, %v, %seven : i32
// CHECK-NEXT:      tile.yield %v, %g : i32, i1
// CHECK-NEXT:    }
// CHECK-NEXT:    %ones = tile.map : -> !tile.tile<8x8xi32> {
// CHECK-NEXT:      %one = arith.constant 1 : i32
// CHECK-NEXT:      tile.yield %one : i32
// CHECK-NEXT:    }
// CHECK-NEXT:    tile.store %sum, %out[%c0, %c0] : !tile.tile<8x8xi32>, memref<8x8xi32>
// CHECK-NEXT:    tile.store %big, %flags[%c0, %c0] : !tile.tile<8x8xi1>, memref<8x8xi1>
// CHECK-NEXT:    tile.store %ones, %out[%c0, %c0] : !tile.tile<8x8xi32>, memref<8x8xi32>
// CHECK-NEXT:    tile.return
// CHECK-NEXT:  }
// GENERIC-LABEL: "tile.kernel"() <{sym_name = "ints"
// GENERIC-SAME:  , function_type = (memref<8x8xi32>, memref<8xi1>, memref<8x8xi32>, memref<8x8xi1>) -> (), grid = array<i64: 1, 1>}> ({
// GENERIC-NEXT:  ^bb0(%a: memref<8x8xi32>, %m: memref<8xi1>, %out: memref<8x8xi32>, %flags: memref<8x8xi1>):
// GENERIC-NEXT:    %c0 = "arith.constant"() <{value = 0 : index}> : () -> index
// GENERIC-NEXT:    %a0 = "tile.load"(%a, %c0, %c0) <{padding = -1 : i32}> : (memref<8x8xi32>, index, index) -> !tile.tile<8x8xi32>
// GENERIC-NEXT:    %col = "tile.load"(%a, %c0, %c0) : (memref<8x8xi32>, index, index) -> !tile.tile<8x1xi32>
// GENERIC-NEXT:    %colb = "tile.broadcast"(%col) : (!tile.tile<8x1xi32>) -> !tile.tile<8x8xi32>
// GENERIC-NEXT:    %mask = "tile.load"(%m, %c0) : (memref<8xi1>, index) -> !tile.tile<8xi1>
// GENERIC-NEXT:    %maskb = "tile.broadcast"(%mask) : (!tile.tile<8xi1>) -> !tile.tile<8x8xi1>
// GENERIC-NEXT:    %seven = "arith.constant"() <{value = 7 : i32}> : () -> i32
// GENERIC-NEXT:    %sevens = "tile.splat"(%seven) : (i32) -> !tile.tile<8x8xi32>
// GENERIC-NEXT:    %sum, %big = "tile.map"(%a0, %colb, %sevens, %maskb) ({
// GENERIC-NEXT:    ^bb0(%p: i32, %q: i32, %r: i32, %keep: i1):
// GENERIC-NEXT:      %s = "arith.addi"(%p, %q) <{overflowFlags = #arith.overflow<none>}> : (i32, i32) -> i32
// GENERIC-NEXT:      %t = "arith.addi"(%s, %seven) <{overflowFlags = #arith.overflow<none>}> : (i32, i32) -> i32
// GENERIC-NEXT:      %v = "arith.select"(%keep, %t, %r) : (i1, i32, i32) -> i32
// GENERIC-NEXT:      %g = "arith.cmpi"(%v, %seven) <{predicate = 4 : i64}> : (i32, i32) -> i1
// GENERIC-NEXT:      "tile.yield"(%v, %g) : (i32, i1) -> ()
// GENERIC-NEXT:    }) : (!tile.tile<8x8xi32>, !tile.tile<8x8xi32>, !tile.tile<8x8xi32>, !tile.tile<8x8xi1>) -> (!tile.tile<8x8xi32>, !tile.tile<8x8xi1>)
// GENERIC-NEXT:    %ones = "tile.map"() ({
// GENERIC-NEXT:      %one = "arith.constant"() <{value = 1 : i32}> : () -> i32
// GENERIC-NEXT:      "tile.yield"(%one) : (i32) -> ()
// GENERIC-NEXT:    }) : () -> !tile.tile<8x8xi32>
// GENERIC-NEXT:    "tile.store"(%sum, %out, %c0, %c0) : (!tile.tile<8x8xi32>, memref<8x8xi32>, index, index) -> ()
// GENERIC-NEXT:    "tile.store"(%big, %flags, %c0, %c0) : (!tile.tile<8x8xi1>, memref<8x8xi1>, index, index) -> ()
// GENERIC-NEXT:    "tile.store"(%ones, %out, %c0, %c0) : (!tile.tile<8x8xi32>, memref<8x8xi32>, index, index) -> ()
// GENERIC-NEXT:    "tile.return"() : () -> ()
// GENERIC-NEXT:  }) : () -> ()
tile.kernel @ints(%a: memref<8x8xi32>, %m: memref<8xi1>, %out: memref<8x8xi32>, %flags: memref<8x8xi1>) grid [1, 1] {
  %c0 = arith.constant 0 : index
  %a0 = tile.load %a[%c0, %c0] padding -1 : i32 : memref<8x8xi32> -> !tile.tile<8x8xi32>
  %col = tile.load %a[%c0, %c0] : memref<8x8xi32> -> !tile.tile<8x1xi32>
  %colb = tile.broadcast %col : !tile.tile<8x1xi32> -> !tile.tile<8x8xi32>
  %mask = tile.load %m[%c0] : memref<8xi1> -> !tile.tile<8xi1>
  %maskb = tile.broadcast %mask : !tile.tile<8xi1> -> !tile.tile<8x8xi1>
  %seven = arith.constant 7 : i32
  %sevens = tile.splat %seven : i32 -> !tile.tile<8x8xi32>
  %sum, %big = tile.map %a0, %colb, %sevens, %maskb : !tile.tile<8x8xi32>, !tile.tile<8x8xi32>, !tile.tile<8x8xi32>, !tile.tile<8x8xi1> -> !tile.tile<8x8xi32>, !tile.tile<8x8xi1> {
  ^bb0(%p: i32, %q: i32, %r: i32, %keep: i1):
    %s = arith.addi %p, %q : i32
    %t = arith.addi %s, %seven : i32
    %v = arith.select %keep, %t, %r : i32
    %g = arith.cmpi sgt, %v, %seven : i32
    tile.yield %v, %g : i32, i1
  }
  %ones = tile.map : -> !tile.tile<8x8xi32> {
    %one = arith.constant 1 : i32
    tile.yield %one : i32
  }
  tile.store %sum, %out[%c0, %c0] : !tile.tile<8x8xi32>, memref<8x8xi32>
  tile.store %big, %flags[%c0, %c0] : !tile.tile<8x8xi1>, memref<8x8xi1>
  tile.store %ones, %out[%c0, %c0] : !tile.tile<8x8xi32>, memref<8x8xi32>
  tile.return
}

// A kernel without arguments and with an empty body apart from its terminator.
// CHECK-LABEL: tile.kernel @empty() grid [1] {
// CHECK-NEXT:    tile.return
// CHECK-NEXT:  }
// GENERIC-LABEL: "tile.kernel"() <{sym_name = "empty"
// GENERIC-SAME:  , function_type = () -> (), grid = array<i64: 1>}> ({
// GENERIC-NEXT:    "tile.return"() : () -> ()
// GENERIC-NEXT:  }) : () -> ()
tile.kernel @empty() grid [1] {
  tile.return
}

// A transpose through an index map: tile.range gives coordinates, tile.gather reads at
// per-element positions (padding outside the memref).
// CHECK-LABEL: tile.kernel @transpose(%x: memref<5x3xf32>, %out: memref<3x5xf32>) grid [1] {
// CHECK:         %rows = tile.range %c0 axis 0 : !tile.tile<4x8xindex>
// CHECK-NEXT:    %columns = tile.range %c0 axis 1 : !tile.tile<4x8xindex>
// CHECK-NEXT:    %t = tile.gather %x[%columns, %rows] padding -1.000000e+00 : f32 : memref<5x3xf32>, !tile.tile<4x8xindex>, !tile.tile<4x8xindex> -> !tile.tile<4x8xf32>
// GENERIC:       "tile.range"(%c0) <{axis = 0 : i64}> : (index) -> !tile.tile<4x8xindex>
// GENERIC:       "tile.gather"(%x, %columns, %rows) <{padding = -1.000000e+00 : f32}> : (memref<5x3xf32>, !tile.tile<4x8xindex>, !tile.tile<4x8xindex>) -> !tile.tile<4x8xf32>
tile.kernel @transpose(%x: memref<5x3xf32>, %out: memref<3x5xf32>) grid [1] {
  %c0 = arith.constant 0 : index
  %rows = tile.range %c0 axis 0 : !tile.tile<4x8xindex>
  %columns = tile.range %c0 axis 1 : !tile.tile<4x8xindex>
  %t = tile.gather %x[%columns, %rows] padding -1.0 : f32 : memref<5x3xf32>, !tile.tile<4x8xindex>, !tile.tile<4x8xindex> -> !tile.tile<4x8xf32>
  tile.store %t, %out[%c0, %c0] : !tile.tile<4x8xf32>, memref<3x5xf32>
  tile.return
}

// A transpose written through an index map: tile.scatter writes each element at its own
// position (index -1, or one past the memref, drops it).
// CHECK-LABEL: tile.kernel @scatter_transpose(%x: memref<4x8xf32>, %out: memref<8x3xf32>) grid [1] {
// CHECK:         tile.scatter %t, %out[%columns, %rows] : !tile.tile<4x8xf32>, memref<8x3xf32>, !tile.tile<4x8xindex>, !tile.tile<4x8xindex>
// GENERIC:       "tile.scatter"(%t, %out, %columns, %rows) : (!tile.tile<4x8xf32>, memref<8x3xf32>, !tile.tile<4x8xindex>, !tile.tile<4x8xindex>) -> ()
tile.kernel @scatter_transpose(%x: memref<4x8xf32>, %out: memref<8x3xf32>) grid [1] {
  %c0 = arith.constant 0 : index
  %t = tile.load %x[%c0, %c0] : memref<4x8xf32> -> !tile.tile<4x8xf32>
  %rows = tile.range %c0 axis 0 : !tile.tile<4x8xindex>
  %columns = tile.range %c0 axis 1 : !tile.tile<4x8xindex>
  tile.scatter %t, %out[%columns, %rows] : !tile.tile<4x8xf32>, memref<8x3xf32>, !tile.tile<4x8xindex>, !tile.tile<4x8xindex>
  tile.return
}

// A row sum over a masked block: tile.in_bounds gives the mask, tile.reduce keeps the reduced
// dimension with size 1.
// CHECK-LABEL: tile.kernel @row_sum(%x: memref<4x1000xf32>, %out: memref<4x1xf32>) grid [1] {
// CHECK:         %m = tile.in_bounds [%c0, %c0] within [4, 1000] : !tile.tile<4x1024xi1>
// CHECK:         %r = tile.reduce %z axis 1 : !tile.tile<4x1024xf32> -> !tile.tile<4x1xf32> {
// CHECK-NEXT:    ^bb0(%a: f32, %b: f32):
// CHECK-NEXT:      %c = arith.addf %a, %b : f32
// CHECK-NEXT:      tile.yield %c : f32
// CHECK-NEXT:    }
// GENERIC:       "tile.in_bounds"(%c0, %c0) <{bounds = array<i64: 4, 1000>}> : (index, index) -> !tile.tile<4x1024xi1>
// GENERIC:       "tile.reduce"(%z) <{axis = 1 : i64}> ({
tile.kernel @row_sum(%x: memref<4x1000xf32>, %out: memref<4x1xf32>) grid [1] {
  %c0 = arith.constant 0 : index
  %t = tile.load %x[%c0, %c0] : memref<4x1000xf32> -> !tile.tile<4x1024xf32>
  %m = tile.in_bounds [%c0, %c0] within [4, 1000] : !tile.tile<4x1024xi1>
  %z = tile.map %m, %t : !tile.tile<4x1024xi1>, !tile.tile<4x1024xf32> -> !tile.tile<4x1024xf32> {
  ^bb0(%v: i1, %e: f32):
    %zero = arith.constant 0.0 : f32
    %s = arith.select %v, %e, %zero : f32
    tile.yield %s : f32
  }
  %r = tile.reduce %z axis 1 : !tile.tile<4x1024xf32> -> !tile.tile<4x1xf32> {
  ^bb0(%a: f32, %b: f32):
    %c = arith.addf %a, %b : f32
    tile.yield %c : f32
  }
  tile.store %r, %out[%c0, %c0] : !tile.tile<4x1xf32>, memref<4x1xf32>
  tile.return
}

// A K loop: scf.for carries the f32 accumulator tile; tile.dot multiplies f16 tiles into it. A
// batched dot (leading dimensions of size 1 here) takes a broadcast rhs.
// CHECK-LABEL: tile.kernel @matmul(%x: memref<17x65xf16>, %y: memref<65x33xf16>, %out: memref<17x33xf32>) grid [1] attributes {mlc.matmul_tile = array<i64: 32, 64, 16>} {
// CHECK:         %init = tile.splat %zero : f32 -> !tile.tile<32x64xf32>
// CHECK-NEXT:    %acc = scf.for %k = %c0 to %c65 step %c16 iter_args(%partial = %init) -> (!tile.tile<32x64xf32>) {
// CHECK-NEXT:      %a = tile.load %x[%c0, %k] : memref<17x65xf16> -> !tile.tile<32x16xf16>
// CHECK-NEXT:      %b = tile.load %y[%k, %c0] : memref<65x33xf16> -> !tile.tile<16x64xf16>
// CHECK-NEXT:      %next = tile.dot %a, %b, %partial : !tile.tile<32x16xf16>, !tile.tile<16x64xf16> -> !tile.tile<32x64xf32>
// CHECK-NEXT:      scf.yield %next : !tile.tile<32x64xf32>
// CHECK-NEXT:    }
// CHECK:         %d = tile.dot %a3, %b3, %z3 : !tile.tile<1x4x8xf32>, !tile.tile<1x8x2xf32> -> !tile.tile<1x4x2xf32>
// CHECK:         %t = tile.dot %a3, %b3, %z3 {precision = "tf32"} : !tile.tile<1x4x8xf32>, !tile.tile<1x8x2xf32> -> !tile.tile<1x4x2xf32>
// CHECK:         %h = tile.dot %a16, %b16, %z2 : !tile.tile<4x8xbf16>, !tile.tile<8x2xbf16> -> !tile.tile<4x2xf32>
// GENERIC:       "tile.dot"(%a, %b, %partial) : (!tile.tile<32x16xf16>, !tile.tile<16x64xf16>, !tile.tile<32x64xf32>) -> !tile.tile<32x64xf32>
// GENERIC:       "tile.dot"(%a3, %b3, %z3) <{precision = "tf32"}> : (!tile.tile<1x4x8xf32>, !tile.tile<1x8x2xf32>, !tile.tile<1x4x2xf32>) -> !tile.tile<1x4x2xf32>
tile.kernel @matmul(%x: memref<17x65xf16>, %y: memref<65x33xf16>, %out: memref<17x33xf32>) grid [1] attributes {mlc.matmul_tile = array<i64: 32, 64, 16>} {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c65 = arith.constant 65 : index
  %zero = arith.constant 0.0 : f32
  %init = tile.splat %zero : f32 -> !tile.tile<32x64xf32>
  %acc = scf.for %k = %c0 to %c65 step %c16 iter_args(%partial = %init) -> (!tile.tile<32x64xf32>) {
    %a = tile.load %x[%c0, %k] : memref<17x65xf16> -> !tile.tile<32x16xf16>
    %b = tile.load %y[%k, %c0] : memref<65x33xf16> -> !tile.tile<16x64xf16>
    %next = tile.dot %a, %b, %partial : !tile.tile<32x16xf16>, !tile.tile<16x64xf16> -> !tile.tile<32x64xf32>
    scf.yield %next : !tile.tile<32x64xf32>
  }
  tile.store %acc, %out[%c0, %c0] : !tile.tile<32x64xf32>, memref<17x33xf32>
  tile.return
}
tile.kernel @batched(%x: memref<3x4x8xf32>, %y: memref<8x2xf32>, %out: memref<3x4x2xf32>) grid [3] {
  %batch = tile.program_id 0
  %c0 = arith.constant 0 : index
  %a3 = tile.load %x[%batch, %c0, %c0] : memref<3x4x8xf32> -> !tile.tile<1x4x8xf32>
  %b2 = tile.load %y[%c0, %c0] : memref<8x2xf32> -> !tile.tile<8x2xf32>
  %b3 = tile.broadcast %b2 : !tile.tile<8x2xf32> -> !tile.tile<1x8x2xf32>
  %zero = arith.constant 0.0 : f32
  %z3 = tile.splat %zero : f32 -> !tile.tile<1x4x2xf32>
  %d = tile.dot %a3, %b3, %z3 : !tile.tile<1x4x8xf32>, !tile.tile<1x8x2xf32> -> !tile.tile<1x4x2xf32>
  %t = tile.dot %a3, %b3, %z3 {precision = "tf32"} : !tile.tile<1x4x8xf32>, !tile.tile<1x8x2xf32> -> !tile.tile<1x4x2xf32>
  %one = arith.constant 1.0 : bf16
  %a16 = tile.splat %one : bf16 -> !tile.tile<4x8xbf16>
  %b16 = tile.splat %one : bf16 -> !tile.tile<8x2xbf16>
  %z2 = tile.splat %zero : f32 -> !tile.tile<4x2xf32>
  %h = tile.dot %a16, %b16, %z2 : !tile.tile<4x8xbf16>, !tile.tile<8x2xbf16> -> !tile.tile<4x2xf32>
  tile.store %d, %out[%batch, %c0, %c0] : !tile.tile<1x4x2xf32>, memref<3x4x2xf32>
  tile.return
}

// Host side: launches pass buffers of the kernel's type, or of another shape with the same
// element type and count (a free reshape), or none.
// CHECK-LABEL: func.func @host(%x: memref<1000xf32>, %y: memref<1000xf32>, %out: memref<1000xf32>, %flat: memref<8192xf16>) {
// CHECK-NEXT:    tile.launch @add(%x, %y, %out) : memref<1000xf32>, memref<1000xf32>, memref<1000xf32>
// CHECK-NEXT:    tile.launch @grid3(%flat, %flat) : memref<8192xf16>, memref<8192xf16>
// CHECK-NEXT:    tile.launch @empty()
// CHECK-NEXT:    func.return
// CHECK-NEXT:  }
// GENERIC-LABEL: "func.func"() <{sym_name = "host"
// GENERIC-SAME:  , function_type = (memref<1000xf32>, memref<1000xf32>, memref<1000xf32>, memref<8192xf16>) -> ()}> ({
// GENERIC-NEXT:  ^bb0(%x: memref<1000xf32>, %y: memref<1000xf32>, %out: memref<1000xf32>, %flat: memref<8192xf16>):
// GENERIC-NEXT:    "tile.launch"(%x, %y, %out) <{kernel = @add}> : (memref<1000xf32>, memref<1000xf32>, memref<1000xf32>) -> ()
// GENERIC-NEXT:    "tile.launch"(%flat, %flat) <{kernel = @grid3}> : (memref<8192xf16>, memref<8192xf16>) -> ()
// GENERIC-NEXT:    "tile.launch"() <{kernel = @empty}> : () -> ()
// GENERIC-NEXT:    "func.return"() : () -> ()
// GENERIC-NEXT:  }) : () -> ()
func.func @host(%x: memref<1000xf32>, %y: memref<1000xf32>, %out: memref<1000xf32>, %flat: memref<8192xf16>) {
  tile.launch @add(%x, %y, %out) : memref<1000xf32>, memref<1000xf32>, memref<1000xf32>
  tile.launch @grid3(%flat, %flat) : memref<8192xf16>, memref<8192xf16>
  tile.launch @empty()
  func.return
}

// tile.transpose swaps the last two dimensions (the shared-memory exchange on the GPU).
// CHECK-LABEL: tile.kernel @swap_last_dims(%x: memref<2x8x4xf16>, %y: memref<2x4x8xf16>) grid [2] {
// CHECK:         %t = tile.load %x[%b, %c0, %c0] : memref<2x8x4xf16> -> !tile.tile<1x8x4xf16>
// CHECK-NEXT:    %u = tile.transpose %t : !tile.tile<1x8x4xf16> -> !tile.tile<1x4x8xf16>
// CHECK-NEXT:    tile.store %u, %y[%b, %c0, %c0] : !tile.tile<1x4x8xf16>, memref<2x4x8xf16>
// GENERIC:       %u = "tile.transpose"(%t) : (!tile.tile<1x8x4xf16>) -> !tile.tile<1x4x8xf16>
tile.kernel @swap_last_dims(%x: memref<2x8x4xf16>, %y: memref<2x4x8xf16>) grid [2] {
  %b = tile.program_id 0
  %c0 = arith.constant 0 : index
  %t = tile.load %x[%b, %c0, %c0] : memref<2x8x4xf16> -> !tile.tile<1x8x4xf16>
  %u = tile.transpose %t : !tile.tile<1x8x4xf16> -> !tile.tile<1x4x8xf16>
  tile.store %u, %y[%b, %c0, %c0] : !tile.tile<1x4x8xf16>, memref<2x4x8xf16>
  tile.return
}
