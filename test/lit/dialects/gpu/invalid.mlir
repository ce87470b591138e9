// Every diagnostic of the mlc_gpu dialect's verifiers (and the IRDL checks they rely on), one chunk
// each.
// RUN: mlc-opt %s --split-input-file --verify-diagnostics

// == Launch configuration of mlc_gpu.func ==

// expected-error @+1 {{'mlc_gpu.func' op grid must have three dimensions (x, y, z), got 4: [1, 1, 1, 2]}}
mlc_gpu.func @grid4(%x: memref<4xf32>) grid [1, 1, 1, 2] block [32, 1, 1] {
  mlc_gpu.return
}

// -----

// expected-error @+1 {{'mlc_gpu.func' op block must have three dimensions (x, y, z), got 0: []}}
"mlc_gpu.func"() <{sym_name = "block0", function_type = (memref<4xf32>) -> (), grid = array<i64: 1, 1, 1>, block = array<i64>}> ({
^bb0(%x: memref<4xf32>):
  "mlc_gpu.return"() : () -> ()
}) : () -> ()

// -----

// expected-error @+1 {{'mlc_gpu.func' op grid size along x must be in [1, 2147483647], got 0}}
mlc_gpu.func @grid_zero(%x: memref<4xf32>) grid [0, 1, 1] block [32, 1, 1] {
  mlc_gpu.return
}

// -----

// expected-error @+1 {{'mlc_gpu.func' op grid size along y must be in [1, 65535], got 65536}}
mlc_gpu.func @grid_y(%x: memref<4xf32>) grid [1, 65536, 1] block [32, 1, 1] {
  mlc_gpu.return
}

// -----

// expected-error @+1 {{'mlc_gpu.func' op block size along z must be in [1, 64], got 128}}
mlc_gpu.func @block_z(%x: memref<4xf32>) grid [1, 1, 1] block [1, 1, 128] {
  mlc_gpu.return
}

// -----

// expected-error @+1 {{'mlc_gpu.func' op block size along x must be in [1, 1024], got -32}}
mlc_gpu.func @block_negative(%x: memref<4xf32>) grid [1, 1, 1] block [-32, 1, 1] {
  mlc_gpu.return
}

// -----

// Each dimension is within its limit, but 64 x 32 = 2048 threads are too many.
// expected-error @+1 {{'mlc_gpu.func' op a block of [64, 32, 1] has 2048 threads; at most 1024 are possible}}
mlc_gpu.func @too_many_threads(%x: memref<4xf32>) grid [1, 1, 1] block [64, 32, 1] {
  mlc_gpu.return
}

// -----

// == Signature of mlc_gpu.func ==

// expected-error @+1 {{'mlc_gpu.func' op kernel argument #0 must be a memref, got i32}}
mlc_gpu.func @scalar_argument(%n: i32) grid [1, 1, 1] block [1, 1, 1] {
  mlc_gpu.return
}

// -----

// expected-error @+1 {{'mlc_gpu.func' op kernel argument #1 has a dynamic shape (memref<?xf32>)}}
mlc_gpu.func @dynamic_argument(%x: memref<4xf32>, %y: memref<?xf32>) grid [1, 1, 1] block [1, 1, 1] {
  mlc_gpu.return
}

// -----

// expected-error @+1 {{'mlc_gpu.func' op a kernel returns no values; write outputs through its memref arguments}}
"mlc_gpu.func"() <{sym_name = "returns", function_type = () -> i32, grid = array<i64: 1, 1, 1>, block = array<i64: 1, 1, 1>}> ({
  "mlc_gpu.return"() : () -> ()
}) : () -> ()

// -----

// expected-error @+1 {{'mlc_gpu.func' op the entry block's argument types must equal the kernel's argument types}}
"mlc_gpu.func"() <{sym_name = "mismatch", function_type = (memref<4xf32>) -> (), grid = array<i64: 1, 1, 1>, block = array<i64: 1, 1, 1>}> ({
^bb0(%x: memref<4xi32>):
  "mlc_gpu.return"() : () -> ()
}) : () -> ()

// -----

func.func @return_outside() {
  // expected-error @+1 {{'mlc_gpu.return' expects parent op 'mlc_gpu.func'}}
  mlc_gpu.return
}

// -----

// == Index queries and barrier ==

mlc_gpu.func @bad_dimension(%x: memref<4xf32>) grid [1, 1, 1] block [32, 1, 1] {
  // expected-error @+1 {{'mlc_gpu.thread_id' op dimension must be x, y or z, got 'w'}}
  %t = mlc_gpu.thread_id w
  mlc_gpu.return
}

// -----

mlc_gpu.func @upper_case_dimension(%x: memref<4xf32>) grid [1, 1, 1] block [32, 1, 1] {
  // expected-error @+1 {{'mlc_gpu.grid_dim' op dimension must be x, y or z, got 'X'}}
  %g = "mlc_gpu.grid_dim"() <{dimension = "X"}> : () -> index
  mlc_gpu.return
}

// -----

func.func @thread_id_outside() {
  // expected-error @+1 {{'mlc_gpu.thread_id' expects ancestor op 'mlc_gpu.func'}}
  %t = mlc_gpu.thread_id x
  func.return
}

// -----

func.func @barrier_outside() {
  // expected-error @+1 {{'mlc_gpu.barrier' expects ancestor op 'mlc_gpu.func'}}
  mlc_gpu.barrier
  func.return
}

// -----

// == mlc_gpu.launch ==

mlc_gpu.func @k(%x: memref<8xf32>) grid [4, 1, 1] block [256, 1, 1] {
  mlc_gpu.return
}

func.func @launch_configuration(%x: memref<8xf32>) {
  // expected-error @+1 {{'mlc_gpu.launch' op launch configuration grid [4, 1, 1] block [128, 1, 1] differs from the kernel's grid [4, 1, 1] block [256, 1, 1]}}
  mlc_gpu.launch @k(%x) grid [4, 1, 1] block [128, 1, 1] : memref<8xf32>
  func.return
}

// -----

llvm.func @lowered(%p: !llvm.ptr) {
  llvm.return
}

func.func @launch_invalid_configuration(%x: memref<8xf32>) {
  // expected-error @+1 {{'mlc_gpu.launch' op block size along y must be in [1, 1024], got 0}}
  mlc_gpu.launch @lowered(%x) grid [1, 1, 1] block [32, 0, 1] : memref<8xf32>
  func.return
}

// -----

func.func @launch_unknown(%x: memref<8xf32>) {
  // expected-error @+1 {{'mlc_gpu.launch' op 'nothing' does not name a kernel in this module}}
  mlc_gpu.launch @nothing(%x) grid [1, 1, 1] block [1, 1, 1] : memref<8xf32>
  func.return
}

// -----

loop.kernel @looped(%x: memref<8xf32>) {
  loop.return
}

func.func @launch_loop_kernel(%x: memref<8xf32>) {
  // expected-error @+1 {{'mlc_gpu.launch' op 'looped' is a 'loop.kernel', but this launch takes 'mlc_gpu.func', 'llvm.func'}}
  mlc_gpu.launch @looped(%x) grid [1, 1, 1] block [1, 1, 1] : memref<8xf32>
  func.return
}

// -----

mlc_gpu.func @k(%x: memref<8xf32>, %y: memref<8xf32>) grid [1, 1, 1] block [1, 1, 1] {
  mlc_gpu.return
}

func.func @launch_arity(%x: memref<8xf32>) {
  // expected-error @+1 {{'mlc_gpu.launch' op kernel 'k' takes 2 arguments, but the launch passes 3}}
  mlc_gpu.launch @k(%x, %x, %x) grid [1, 1, 1] block [1, 1, 1] : memref<8xf32>, memref<8xf32>, memref<8xf32>
  func.return
}

// -----

mlc_gpu.func @k(%x: memref<8xf32>, %y: memref<8xf32>) grid [1, 1, 1] block [1, 1, 1] {
  mlc_gpu.return
}

func.func @launch_buffer(%x: memref<8xf32>, %h: memref<8xf16>) {
  // expected-error @+1 {{'mlc_gpu.launch' op launch argument #1 of type memref<8xf16> cannot be passed for kernel parameter of type memref<8xf32>}}
  mlc_gpu.launch @k(%x, %h) grid [1, 1, 1] block [1, 1, 1] : memref<8xf32>, memref<8xf16>
  func.return
}

// -----

mlc_gpu.func @k(%x: memref<8xf32>) grid [1, 1, 1] block [1, 1, 1] {
  mlc_gpu.return
}

// Same shape and element type, but shared memory (space 3) cannot be passed for a global buffer.
func.func @launch_memory_space(%x: memref<8xf32, 3>) {
  // expected-error @+1 {{'mlc_gpu.launch' op launch argument #0 of type memref<8xf32, 3 : i64> cannot be passed for kernel parameter of type memref<8xf32>}}
  mlc_gpu.launch @k(%x) grid [1, 1, 1] block [1, 1, 1] : memref<8xf32, 3>
  func.return
}
