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

// -----

// A dot's operands are read by each thread piece by piece inside the K steps: they must come
// straight from memory.
tile.kernel @dot_of_a_map(%x: memref<16x16xf32>, %out: memref<16x16xf32>) grid [1] {
  %c0 = arith.constant 0 : index
  %a = tile.load %x[%c0, %c0] : memref<16x16xf32> -> !tile.tile<16x16xf32>
  %n = tile.map %a : !tile.tile<16x16xf32> -> !tile.tile<16x16xf32> {
  ^bb0(%e: f32):
    %m = arith.negf %e : f32
    tile.yield %m : f32
  }
  %zero = arith.constant 0.0 : f32
  %zeros = tile.splat %zero : f32 -> !tile.tile<16x16xf32>
  // expected-error @+1 {{the lhs of a dot must be a tile.load (possibly broadcast or transposed) for convert-tile-to-loop, got 'tile.map'}}
  %d = tile.dot %n, %a, %zeros : !tile.tile<16x16xf32>, !tile.tile<16x16xf32> -> !tile.tile<16x16xf32>
  tile.store %d, %out[%c0, %c0] : !tile.tile<16x16xf32>, memref<16x16xf32>
  tile.return
}

// -----

// One program computes one matrix block.
// expected-error @+1 {{a dot's batch dimensions must have size 1 (one matrix per program), got 2x4x4}}
tile.kernel @two_matrices(%x: memref<2x4x4xf32>, %out: memref<2x4x4xf32>) grid [1] {
  %c0 = arith.constant 0 : index
  %a = tile.load %x[%c0, %c0, %c0] : memref<2x4x4xf32> -> !tile.tile<2x4x4xf32>
  %d = tile.dot %a, %a, %a : !tile.tile<2x4x4xf32>, !tile.tile<2x4x4xf32> -> !tile.tile<2x4x4xf32>
  tile.store %d, %out[%c0, %c0, %c0] : !tile.tile<2x4x4xf32>, memref<2x4x4xf32>
  tile.return
}

// -----

// The micro-tile is a power-of-two piece of the block.
// expected-error @+1 {{micro-tile 3x4 must be powers of two within the 16x16 block}}
tile.kernel @odd_micro_tile(%x: memref<16x16xf32>, %out: memref<16x16xf32>) grid [1] attributes {mlc.micro_tile = array<i64: 3, 4>} {
  %c0 = arith.constant 0 : index
  %a = tile.load %x[%c0, %c0] : memref<16x16xf32> -> !tile.tile<16x16xf32>
  %d = tile.dot %a, %a, %a : !tile.tile<16x16xf32>, !tile.tile<16x16xf32> -> !tile.tile<16x16xf32>
  tile.store %d, %out[%c0, %c0] : !tile.tile<16x16xf32>, memref<16x16xf32>
  tile.return
}

// -----

// Reductions are lowered by the other layout; a kernel does not mix them with dots yet.
tile.kernel @dot_and_reduce(%x: memref<16x16xf32>, %out: memref<16x1xf32>) grid [1] {
  %c0 = arith.constant 0 : index
  %a = tile.load %x[%c0, %c0] : memref<16x16xf32> -> !tile.tile<16x16xf32>
  %d = tile.dot %a, %a, %a : !tile.tile<16x16xf32>, !tile.tile<16x16xf32> -> !tile.tile<16x16xf32>
  // expected-error @+1 {{convert-tile-to-loop cannot lower this tile op in a kernel with tile.dot}}
  %r = tile.reduce %d axis 1 : !tile.tile<16x16xf32> -> !tile.tile<16x1xf32> {
  ^bb0(%l: f32, %m: f32):
    %s = arith.addf %l, %m : f32
    tile.yield %s : f32
  }
  tile.store %r, %out[%c0, %c0] : !tile.tile<16x1xf32>, memref<16x1xf32>
  tile.return
}

// -----

// A tile broadcast along the block's rows is the same in every micro-tile row: storing it would
// need the ownership rules of the elementwise layout.
tile.kernel @broadcast_store(%x: memref<16x16xf32>, %out: memref<1x16xf32>) grid [1] {
  %c0 = arith.constant 0 : index
  %a = tile.load %x[%c0, %c0] : memref<16x16xf32> -> !tile.tile<16x16xf32>
  %d = tile.dot %a, %a, %a : !tile.tile<16x16xf32>, !tile.tile<16x16xf32> -> !tile.tile<16x16xf32>
  tile.store %d, %x[%c0, %c0] : !tile.tile<16x16xf32>, memref<16x16xf32>
  %row = tile.load %x[%c0, %c0] : memref<16x16xf32> -> !tile.tile<1x16xf32>
  // expected-error @+1 {{stores of tiles broadcast along a dimension are not supported in a kernel with tile.dot}}
  tile.store %row, %out[%c0, %c0] : !tile.tile<1x16xf32>, memref<1x16xf32>
  tile.return
}

// -----

// A loop carries tiles, which become each thread's elements of them; scalars are not carried.
tile.kernel @loop_carrying_a_scalar(%x: memref<4x64xf32>, %out: memref<4x64xf32>) grid [1] {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  // expected-error @+1 {{convert-tile-to-loop only lowers loops that carry tiles}}
  %s = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %zero) -> (f32) {
    %t = tile.load %x[%i, %c0] : memref<4x64xf32> -> !tile.tile<1x64xf32>
    tile.store %t, %out[%i, %c0] : !tile.tile<1x64xf32>, memref<4x64xf32>
    scf.yield %acc : f32
  }
  tile.return
}

// -----

// A reduction across threads inside a loop would make every thread wait in every iteration (and
// the CPU's loop fission cannot cut a loop): reduce the tile the loop carries, after it.
tile.kernel @reduce_in_a_loop(%x: memref<4x64xf32>, %out: memref<4x1xf32>) grid [1] {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.for %i = %c0 to %c4 step %c1 {
    %t = tile.load %x[%i, %c0] : memref<4x64xf32> -> !tile.tile<1x64xf32>
    // expected-error @+1 {{a tile.reduce inside a loop is not supported: reduce the tile the loop carries after it}}
    %r = tile.reduce %t axis 1 : !tile.tile<1x64xf32> -> !tile.tile<1x1xf32> {
    ^bb0(%a: f32, %b: f32):
      %c = arith.addf %a, %b : f32
      tile.yield %c : f32
    }
    tile.store %r, %out[%i, %c0] : !tile.tile<1x1xf32>, memref<4x1xf32>
  }
  tile.return
}

// -----

// The f32 FMA lowering (no tensor cores) computes IEEE products only: a dot asking for TF32 is
// refused, not computed at another precision.
tile.kernel @tf32_dot(%x: memref<16x16xf32>, %out: memref<16x16xf32>) grid [1] {
  %c0 = arith.constant 0 : index
  %a = tile.load %x[%c0, %c0] : memref<16x16xf32> -> !tile.tile<16x16xf32>
  %zero = arith.constant 0.0 : f32
  %acc = tile.splat %zero : f32 -> !tile.tile<16x16xf32>
  // expected-error @+1 {{precision 'tf32' cannot be honoured by convert-tile-to-loop: tile.dot is lowered to f32 fused multiply-adds (the CPU, or CUDA cores without the tensor-core lowering), which compute 'ieee' only; TF32 needs tensor cores (convert-tile-to-loop{tensor-cores=true}, the GPU pipeline) (ask for precision 'ieee')}}
  %d = tile.dot %a, %a, %acc {precision = "tf32"} : !tile.tile<16x16xf32>, !tile.tile<16x16xf32> -> !tile.tile<16x16xf32>
  tile.store %d, %out[%c0, %c0] : !tile.tile<16x16xf32>, memref<16x16xf32>
  tile.return
}

// -----

// A tile that the threads' repetitions do not cover exactly would leave chunks past its end
// unguarded: reported, not miscompiled.
// expected-error @+1 {{the tile shape (1000,) is not a whole number of 32-thread repetitions of 4-element chunks; use power-of-two tile dimensions}}
tile.kernel @ragged(%x: memref<1000xf32>, %out: memref<1000xf32>) grid [1] num_warps 1 {
  %c0 = arith.constant 0 : index
  %t = tile.load %x[%c0] : memref<1000xf32> -> !tile.tile<1000xf32>
  tile.store %t, %out[%c0] : !tile.tile<1000xf32>, memref<1000xf32>
  tile.return
}
