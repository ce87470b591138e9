// RUN: mlc-opt %s --split-input-file -p tile-merge-identical-kernels | filecheck %s

// @b is @a under another name, with other value names: it is erased and its launch runs @a.
// @c computes the same thing with another constant, and @d over another shape: both are kept.
// CHECK-LABEL: tile.kernel @a(%x: memref<256xf32>, %out: memref<256xf32>)
// CHECK-NOT:   tile.kernel @b
// CHECK:       tile.kernel @c(
// CHECK:       tile.kernel @d(
// CHECK-LABEL: func.func @host
// CHECK-NEXT:    %[[O1:.*]] = memref.alloc()
// CHECK-NEXT:    tile.launch @a(%x, %[[O1]])
// CHECK-NEXT:    %[[O2:.*]] = memref.alloc()
// CHECK-NEXT:    tile.launch @a(%y, %[[O2]])
// CHECK-NEXT:    %[[O3:.*]] = memref.alloc()
// CHECK-NEXT:    tile.launch @c(%y, %[[O3]])
// CHECK-NEXT:    %[[O4:.*]] = memref.alloc()
// CHECK-NEXT:    tile.launch @d(%z, %[[O4]])
tile.kernel @a(%x: memref<256xf32>, %out: memref<256xf32>) grid [2] num_warps 4 {
  %pid = tile.program_id 0
  %c128 = arith.constant 128 : index
  %origin = arith.muli %pid, %c128 : index
  %t = tile.load %x[%origin] : memref<256xf32> -> !tile.tile<128xf32>
  %r = tile.map %t : !tile.tile<128xf32> -> !tile.tile<128xf32> {
  ^bb0(%v: f32):
    %e = math.exp %v : f32
    tile.yield %e : f32
  }
  tile.store %r, %out[%origin] : !tile.tile<128xf32>, memref<256xf32>
  tile.return
}
tile.kernel @b(%in: memref<256xf32>, %result: memref<256xf32>) grid [2] num_warps 4 {
  %program = tile.program_id 0
  %size = arith.constant 128 : index
  %start = arith.muli %program, %size : index
  %loaded = tile.load %in[%start] : memref<256xf32> -> !tile.tile<128xf32>
  %mapped = tile.map %loaded : !tile.tile<128xf32> -> !tile.tile<128xf32> {
  ^bb0(%element: f32):
    %exp = math.exp %element : f32
    tile.yield %exp : f32
  }
  tile.store %mapped, %result[%start] : !tile.tile<128xf32>, memref<256xf32>
  tile.return
}
tile.kernel @c(%x: memref<256xf32>, %out: memref<256xf32>) grid [2] num_warps 4 {
  %pid = tile.program_id 0
  %c64 = arith.constant 64 : index
  %origin = arith.muli %pid, %c64 : index
  %t = tile.load %x[%origin] : memref<256xf32> -> !tile.tile<128xf32>
  %r = tile.map %t : !tile.tile<128xf32> -> !tile.tile<128xf32> {
  ^bb0(%v: f32):
    %e = math.exp %v : f32
    tile.yield %e : f32
  }
  tile.store %r, %out[%origin] : !tile.tile<128xf32>, memref<256xf32>
  tile.return
}
tile.kernel @d(%x: memref<512xf32>, %out: memref<512xf32>) grid [2] num_warps 4 {
  %pid = tile.program_id 0
  %c128 = arith.constant 128 : index
  %origin = arith.muli %pid, %c128 : index
  %t = tile.load %x[%origin] : memref<512xf32> -> !tile.tile<128xf32>
  %r = tile.map %t : !tile.tile<128xf32> -> !tile.tile<128xf32> {
  ^bb0(%v: f32):
    %e = math.exp %v : f32
    tile.yield %e : f32
  }
  tile.store %r, %out[%origin] : !tile.tile<128xf32>, memref<512xf32>
  tile.return
}
func.func @host(%x: memref<256xf32>, %y: memref<256xf32>, %z: memref<512xf32>) -> (memref<256xf32>, memref<256xf32>, memref<256xf32>, memref<512xf32>) {
  %o1 = memref.alloc() : memref<256xf32>
  tile.launch @a(%x, %o1) : memref<256xf32>, memref<256xf32>
  %o2 = memref.alloc() : memref<256xf32>
  tile.launch @b(%y, %o2) : memref<256xf32>, memref<256xf32>
  %o3 = memref.alloc() : memref<256xf32>
  tile.launch @c(%y, %o3) : memref<256xf32>, memref<256xf32>
  %o4 = memref.alloc() : memref<512xf32>
  tile.launch @d(%z, %o4) : memref<512xf32>, memref<512xf32>
  func.return %o1, %o2, %o3, %o4 : memref<256xf32>, memref<256xf32>, memref<256xf32>, memref<512xf32>
}

// -----

// Kernels that differ only in an attribute stay apart.
// CHECK-LABEL: tile.kernel @noted
// CHECK:       tile.kernel @plain
// CHECK:       tile.launch @noted
// CHECK:       tile.launch @plain
tile.kernel @noted(%x: memref<4xf32>) grid [1] attributes {mlc.note = "kept"} {
  tile.return
}
tile.kernel @plain(%x: memref<4xf32>) grid [1] {
  tile.return
}
func.func @host(%x: memref<4xf32>) {
  tile.launch @noted(%x) : memref<4xf32>
  tile.launch @plain(%x) : memref<4xf32>
  func.return
}
