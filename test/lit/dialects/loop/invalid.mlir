// Every diagnostic of the loop dialect's verifiers (and the IRDL checks they rely on), one chunk each.
// RUN: mlc-opt %s --split-input-file --verify-diagnostics

// == loop.kernel ==

// expected-error @+1 {{'loop.kernel' op kernel argument #1 must be a memref, got f32}}
loop.kernel @scalar_argument(%x: memref<4xf32>, %alpha: f32) {
  loop.return
}

// -----

// expected-error @+1 {{'loop.kernel' op kernel argument #0 has a dynamic shape (memref<4x?xf32>)}}
loop.kernel @dynamic_argument(%x: memref<4x?xf32>) {
  loop.return
}

// -----

// expected-error @+1 {{'loop.kernel' op a kernel returns no values; write outputs through its memref arguments}}
"loop.kernel"() <{sym_name = "returns", function_type = (memref<4xf32>) -> index}> ({
^bb0(%x: memref<4xf32>):
  "loop.return"() : () -> ()
}) : () -> ()

// -----

// expected-error @+1 {{'loop.kernel' op the entry block's argument types must equal the kernel's argument types}}
"loop.kernel"() <{sym_name = "mismatch", function_type = (memref<4xf32>) -> ()}> ({
^bb0(%x: memref<4xf16>):
  "loop.return"() : () -> ()
}) : () -> ()

// -----

// A nest of thread loops multiplies: 32 x 64 = 2048 threads per block.
// expected-error @+1 {{'loop.kernel' op the thread loops ask for 2048 threads per block; at most 1024 are possible}}
loop.kernel @too_many_threads(%x: memref<2048xf32>) {
  loop.parallel %b < 4 mapping block.x {
    loop.parallel %ty < 32 mapping thread.y {
      loop.parallel %tx < 64 mapping thread.x {
      }
    }
  }
  loop.return
}

// -----

// expected-error @+1 {{'loop.kernel' op the thread loops ask for 1025 threads per block; at most 1024 are possible}}
loop.kernel @one_too_many(%x: memref<2048xf32>) {
  loop.parallel %t < 1024 mapping thread.x {
  }
  loop.parallel %u < 1025 mapping thread.x {
  }
  loop.return
}

// -----

func.func @return_outside() {
  // expected-error @+1 {{'loop.return' expects parent op 'loop.kernel'}}
  loop.return
}

// -----

// == loop.parallel ==

loop.kernel @zero_trip(%x: memref<4xf32>) {
  // expected-error @+1 {{'loop.parallel' op upper bound must be positive, got 0}}
  loop.parallel %i < 0 {
  }
  loop.return
}

// -----

loop.kernel @two_arguments(%x: memref<4xf32>) {
  // expected-error @+1 {{'loop.parallel' op the body takes exactly one index argument, got (index, index)}}
  "loop.parallel"() <{upper_bound = 4 : i64}> ({
  ^bb0(%i: index, %j: index):
    "loop.yield"() : () -> ()
  }) : () -> ()
  loop.return
}

// -----

loop.kernel @integer_argument(%x: memref<4xf32>) {
  // expected-error @+1 {{'loop.parallel' op the body takes exactly one index argument, got (i32)}}
  "loop.parallel"() <{upper_bound = 4 : i64}> ({
  ^bb0(%i: i32):
    "loop.yield"() : () -> ()
  }) : () -> ()
  loop.return
}

// -----

loop.kernel @bad_mapping(%x: memref<4xf32>) {
  // expected-error @+1 {{'loop.parallel' op unknown mapping 'warp.x'; expected one of block.x, block.y, block.z, thread.x, thread.y, thread.z}}
  loop.parallel %i < 4 mapping warp.x {
  }
  loop.return
}

// -----

loop.kernel @repeated_mapping(%x: memref<4xf32>) {
  loop.parallel %i < 4 mapping thread.x {
    // An unmapped loop in between does not hide the repetition.
    loop.parallel %j < 2 {
      // expected-error @+1 {{'loop.parallel' op 'thread.x' is already mapped by an enclosing loop}}
      loop.parallel %k < 4 mapping thread.x {
      }
    }
  }
  loop.return
}

// -----

loop.kernel @repeated_block_mapping(%x: memref<4xf32>) {
  loop.parallel %i < 4 mapping block.y {
    // expected-error @+1 {{'loop.parallel' op 'block.y' is already mapped by an enclosing loop}}
    loop.parallel %j < 4 mapping block.y {
    }
  }
  loop.return
}

// -----

loop.kernel @block_in_thread(%x: memref<4xf32>) {
  loop.parallel %t < 32 mapping thread.x {
    // expected-error @+1 {{'loop.parallel' op a 'block.x' loop cannot be nested in a thread loop ('thread.x')}}
    loop.parallel %b < 4 mapping block.x {
    }
  }
  loop.return
}

// -----

loop.kernel @yield_outside(%x: memref<4xf32>) {
  // expected-error @+1 {{'loop.yield' expects parent op to be one of 'loop.parallel', 'loop.all_reduce'}}
  loop.yield
}

// -----

// == loop.launch ==

func.func @launch_unknown(%x: memref<8xf32>) {
  // expected-error @+1 {{'loop.launch' op 'missing' does not name a kernel in this module}}
  loop.launch @missing(%x) : memref<8xf32>
  func.return
}

// -----

tile.kernel @tiled(%x: memref<8xf32>) grid [1] {
  tile.return
}

func.func @launch_tile_kernel(%x: memref<8xf32>) {
  // expected-error @+1 {{'loop.launch' op 'tiled' is a 'tile.kernel', but this launch takes 'loop.kernel', 'llvm.func'}}
  loop.launch @tiled(%x) : memref<8xf32>
  func.return
}

// -----

loop.kernel @one(%x: memref<8xf32>) {
  loop.return
}

func.func @launch_arity(%x: memref<8xf32>) {
  // expected-error @+1 {{'loop.launch' op kernel 'one' takes 1 arguments, but the launch passes 2}}
  loop.launch @one(%x, %x) : memref<8xf32>, memref<8xf32>
  func.return
}

// -----

loop.kernel @one(%x: memref<8xf32>) {
  loop.return
}

func.func @launch_buffer(%x: memref<4x4xf32>) {
  // expected-error @+1 {{'loop.launch' op launch argument #0 of type memref<4x4xf32> cannot be passed for kernel parameter of type memref<8xf32>}}
  loop.launch @one(%x) : memref<4x4xf32>
  func.return
}

// -----

// A kernel lowered to llvm.func takes pointers: only the number of buffers is checked.
llvm.func @lowered(%p: !llvm.ptr) {
  llvm.return
}

func.func @launch_lowered_arity(%x: memref<8xf32>) {
  // expected-error @+1 {{'loop.launch' op kernel 'lowered' takes 1 arguments, but the launch passes 0}}
  loop.launch @lowered()
  func.return
}

// -----

// A parameter that is not a pointer cannot take a buffer.
llvm.func @lowered(%n: i64) {
  llvm.return
}

func.func @launch_lowered_scalar(%x: memref<8xf32>) {
  // expected-error @+1 {{'loop.launch' op launch argument #0 of type memref<8xf32> cannot be passed for kernel parameter of type i64}}
  loop.launch @lowered(%x) : memref<8xf32>
  func.return
}

// -----

loop.kernel @one(%x: memref<8xf32>) {
  loop.return
}

func.func @launch_scalar(%n: index) {
  // expected-error @+1 {{index should be of base attribute memref}}
  loop.launch @one(%n) : index
  func.return
}

// -----

// == loop.all_reduce ==

loop.kernel @all_reduce_outside(%x: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %v = memref.load %x[%c0] : memref<4xf32>
  // expected-error @+1 {{must be inside a loop.parallel}}
  %s = loop.all_reduce %v mask 1 : f32 {
  ^bb0(%l: f32, %r: f32):
    loop.yield %l : f32
  }
  loop.return
}

// -----

loop.kernel @all_reduce_power_of_two(%x: memref<48xf32>) {
  loop.parallel %t < 48 mapping thread.x {
    %v = memref.load %x[%t] : memref<48xf32>
    // expected-error @+1 {{the enclosing loop's trip count 48 must be a power of two}}
    %s = loop.all_reduce %v mask 1 : f32 {
    ^bb0(%l: f32, %r: f32):
      loop.yield %l : f32
    }
  }
  loop.return
}

// -----

loop.kernel @all_reduce_mask(%x: memref<64xf32>) {
  loop.parallel %t < 64 mapping thread.x {
    %v = memref.load %x[%t] : memref<64xf32>
    // expected-error @+1 {{mask 64 has bits outside the enclosing loop's 64 iterations}}
    %s = loop.all_reduce %v mask 64 : f32 {
    ^bb0(%l: f32, %r: f32):
      loop.yield %l : f32
    }
  }
  loop.return
}

// -----

loop.kernel @all_reduce_combiner(%x: memref<64xf32>) {
  loop.parallel %t < 64 mapping thread.x {
    %v = memref.load %x[%t] : memref<64xf32>
    // expected-error @+1 {{the combiner must end with loop.yield of one f32}}
    %s = loop.all_reduce %v mask 1 : f32 {
    ^bb0(%l: f32, %r: f32):
      loop.yield
    }
  }
  loop.return
}

// -----

loop.kernel @mma_operand_type(%x: memref<64xf32>) {
  loop.parallel %t < 32 mapping thread.x {
    %a = vector.load %x[%t] : memref<64xf32>, vector<2xf32>
    %z = arith.constant 0.0 : f32
    // expected-error @+1 {{A and B registers must be vector<2xf16>, vector<2xbf16> (m16n8k16) or f32 (TF32, m16n8k8), got vector<2xf32>}}
    %d:4 = loop.mma_sync m16n8k16 (%a, %a, %a, %a) * (%a, %a) + (%z, %z, %z, %z) : vector<2xf32> -> f32
  }
  loop.return
}

// -----

loop.kernel @mma_register_count(%x: memref<64xf16>) {
  loop.parallel %t < 32 mapping thread.x {
    %a = vector.load %x[%t] : memref<64xf16>, vector<2xf16>
    %z = arith.constant 0.0 : f32
    // expected-error @+1 {{an mma_sync step takes 4 A registers, 2 B registers and 4 accumulators, and gives 4}}
    %d:4 = loop.mma_sync m16n8k16 (%a, %a) * (%a, %a) + (%z, %z, %z, %z) : vector<2xf16> -> f32
  }
  loop.return
}

// -----

// The shape names the operand type: m16n8k8 is the TF32 step, on f32 registers.
loop.kernel @mma_shape_and_type(%x: memref<64xf16>) {
  loop.parallel %t < 32 mapping thread.x {
    %a = vector.load %x[%t] : memref<64xf16>, vector<2xf16>
    %z = arith.constant 0.0 : f32
    // expected-error @+1 {{shape 'm16n8k8' does not take vector<2xf16> registers (m16n8k16: vector<2xf16|bf16>, m16n8k8: f32)}}
    %d:4 = loop.mma_sync m16n8k8 (%a, %a, %a, %a) * (%a, %a) + (%z, %z, %z, %z) : vector<2xf16> -> f32
  }
  loop.return
}

// -----

loop.kernel @ldmatrix_f32(%x: memref<32x8xf32>) {
  loop.parallel %t < 32 mapping thread.x {
    %c0 = arith.constant 0 : index
    // expected-error @+1 {{ldmatrix reads 16-bit f16 or bf16 elements, not f32}}
    %a:4 = loop.ldmatrix x4 %x[%t, %c0] : memref<32x8xf32> -> vector<2xf32>
  }
  loop.return
}

// -----

loop.kernel @ldmatrix_count(%x: memref<32x8xf16>) {
  loop.parallel %t < 32 mapping thread.x {
    %c0 = arith.constant 0 : index
    // expected-error @+1 {{ldmatrix loads 1, 2 or 4 matrices, not 3}}
    %a:3 = loop.ldmatrix x3 %x[%t, %c0] : memref<32x8xf16> -> vector<2xf16>
  }
  loop.return
}

// -----

loop.kernel @mbarrier_in_global_memory(%bars: memref<2xi64>) {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{an mbarrier is an i64 of a shared buffer (memref<..xi64, 3>), not memref<2xi64>}}
  loop.mbarrier_init %bars[%c0], 1 : memref<2xi64>
  loop.return
}

// -----

loop.kernel @mbarrier_count() {
  %bars = memref.alloca() : memref<2xi64, 3>
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{an mbarrier's arrival count is between 1 and 2^20 - 1, got 0}}
  loop.mbarrier_init %bars[%c0], 0 : memref<2xi64, 3>
  loop.return
}

// -----

loop.kernel @tma_box_too_large(%a: memref<512x64xf16>) {
  %bars = memref.alloca() : memref<1xi64, 3>
  %stage = memref.alloca() : memref<512x64xf16, 3>
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{a bulk tensor copy's box spans 1 to 256 elements of a scalar type per dimension, not [512, 64]}}
  loop.tma_load %a[%c0, %c0] to %stage[%c0, %c0], %bars[%c0] : memref<512x64xf16> to memref<512x64xf16, 3>, memref<1xi64, 3>
  loop.return
}

// -----

loop.kernel @tma_short_rows(%a: memref<64x64xf16>) {
  %bars = memref.alloca() : memref<1xi64, 3>
  %stage = memref.alloca() : memref<64x4xf16, 3>
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{a bulk tensor copy's box rows are multiples of 16 bytes}}
  loop.tma_load %a[%c0, %c0] to %stage[%c0, %c0], %bars[%c0] : memref<64x64xf16> to memref<64x4xf16, 3>, memref<1xi64, 3>
  loop.return
}

// -----

loop.kernel @tma_into_global(%a: memref<64x64xf16>, %b: memref<64x64xf16>) {
  %bars = memref.alloca() : memref<1xi64, 3>
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{the destination of a bulk tensor copy must be shared memory (memory space 3)}}
  loop.tma_load %a[%c0, %c0] to %b[%c0, %c0], %bars[%c0] : memref<64x64xf16> to memref<64x64xf16>, memref<1xi64, 3>
  loop.return
}

// -----

loop.kernel @tma_unaligned_column(%a: memref<6x56xf16>) {
  %bars = memref.alloca() : memref<1xi64, 3>
  %stage = memref.alloca() : memref<1x64xf16, 3>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{a bulk tensor copy's innermost start coordinate is a multiple of 16 bytes, not 1 elements}}
  loop.tma_load %a[%c0, %c1] to %stage[%c0, %c0], %bars[%c0] : memref<6x56xf16> to memref<1x64xf16, 3>, memref<1xi64, 3>
  loop.return
}

// -----

loop.kernel @wgmma_register_a_count(%x: memref<256xf16>) {
  %s = memref.alloca() : memref<32x8xf16, 3>
  loop.parallel %t < 128 mapping thread.x {
    %c0 = arith.constant 0 : index
    %z = arith.constant 0.0 : f32
    %a = vector.load %x[%t] : memref<256xf16>, vector<2xf16>
    // expected-error @+1 {{an m64n8k32 product takes 8 A registers per thread, got 4}}
    %d:4 = loop.wgmma m64n8k32 (%a, %a, %a, %a), %s[%c0, %c0], (%z, %z, %z, %z) : memref<32x8xf16, 3>
  }
  loop.return
}
