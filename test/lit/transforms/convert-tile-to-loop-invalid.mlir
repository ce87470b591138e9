// RUN: mlc-opt %s --split-input-file --verify-diagnostics -p convert-tile-to-loop

// Tiles that do not broadcast to one shape are reported, not miscompiled.
tile.kernel @two_shapes(%x: memref<64xf32>, %out: memref<64xf32>) grid [1] {
  %c0 = arith.constant 0 : index
  %a = tile.load %x[%c0] : memref<64xf32> -> !tile.tile<64xf32>
  // expected-error @+1 {{its tile shape 32 does not broadcast to the kernel's 64: tiles of incompatible shapes in one kernel are not supported}}
  %b = tile.load %x[%c0] : memref<64xf32> -> !tile.tile<32xf32>
  tile.store %a, %out[%c0] : !tile.tile<64xf32>, memref<64xf32>
  tile.store %b, %out[%c0] : !tile.tile<32xf32>, memref<64xf32>
  tile.return
}

// -----

// Reductions keep every element in registers: tiles must be powers of two.
tile.kernel @odd_reduction(%x: memref<4x6xf32>, %out: memref<4x1xf32>) grid [1] {
  %c0 = arith.constant 0 : index
  %t = tile.load %x[%c0, %c0] : memref<4x6xf32> -> !tile.tile<4x6xf32>
  // expected-error @+1 {{reductions need power-of-two tile dimensions, got (4, 6)}}
  %r = tile.reduce %t axis 1 : !tile.tile<4x6xf32> -> !tile.tile<4x1xf32> {
  ^bb0(%a: f32, %b: f32):
    %c = arith.addf %a, %b : f32
    tile.yield %c : f32
  }
  tile.store %r, %out[%c0, %c0] : !tile.tile<4x1xf32>, memref<4x1xf32>
  tile.return
}
