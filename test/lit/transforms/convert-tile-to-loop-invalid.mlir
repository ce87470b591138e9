// RUN: mlc-opt %s --split-input-file --verify-diagnostics -p convert-tile-to-loop

// Tiles of different shapes in one kernel are reported, not miscompiled.
// expected-error @+1 {{tiles of several shapes in one kernel are not supported yet}}
tile.kernel @two_shapes(%x: memref<64xf32>, %out: memref<64xf32>) grid [1] {
  %c0 = arith.constant 0 : index
  %a = tile.load %x[%c0] : memref<64xf32> -> !tile.tile<64xf32>
  %b = tile.load %x[%c0] : memref<64xf32> -> !tile.tile<32xf32>
  tile.store %a, %out[%c0] : !tile.tile<64xf32>, memref<64xf32>
  tile.store %b, %out[%c0] : !tile.tile<32xf32>, memref<64xf32>
  tile.return
}
