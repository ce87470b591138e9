// Every diagnostic of the tile dialect's verifiers (and the IRDL checks they rely on), one chunk each.
// RUN: mlc-opt %s --split-input-file --verify-diagnostics

// == !tile.tile ==

tile.kernel @rank0(%x: memref<4xf32>) grid [1] {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{a tile has at least one dimension}}
  %t = tile.load %x[%c0] : memref<4xf32> -> !tile.tile<f32>
  tile.return
}

// -----

tile.kernel @dynamic_tile(%x: memref<4x4xf32>) grid [1] {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{tile dimensions must be static and positive, got ?x4}}
  %t = tile.load %x[%c0, %c0] : memref<4x4xf32> -> !tile.tile<?x4xf32>
  tile.return
}

// -----

tile.kernel @empty_tile(%x: memref<4x4xf32>) grid [1] {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{tile dimensions must be static and positive, got 0x4}}
  %t = tile.load %x[%c0, %c0] : memref<4x4xf32> -> !tile.tile<0x4xf32>
  tile.return
}

// -----

// == tile.kernel ==

// expected-error @+1 {{'tile.kernel' op grid must have 1 to 3 dimensions, got 0}}
tile.kernel @no_grid(%x: memref<4xf32>) grid [] {
  tile.return
}

// -----

// expected-error @+1 {{'tile.kernel' op grid must have 1 to 3 dimensions, got 4}}
tile.kernel @grid4(%x: memref<4xf32>) grid [1, 2, 3, 4] {
  tile.return
}

// -----

// expected-error @+1 {{'tile.kernel' op grid dimensions must be positive, got [4, 0]}}
tile.kernel @grid_zero(%x: memref<4xf32>) grid [4, 0] {
  tile.return
}

// -----

// expected-error @+1 {{'tile.kernel' op num_warps must be between 1 and 32, got 64}}
tile.kernel @warps(%x: memref<4xf32>) grid [1] num_warps 64 {
  tile.return
}

// -----

// expected-error @+1 {{'tile.kernel' op kernel argument #1 must be a memref, got index}}
tile.kernel @scalar_argument(%x: memref<4xf32>, %n: index) grid [1] {
  tile.return
}

// -----

// expected-error @+1 {{'tile.kernel' op kernel argument #0 has a dynamic shape (memref<?xf32>)}}
tile.kernel @dynamic_argument(%x: memref<?xf32>) grid [1] {
  tile.return
}

// -----

// expected-error @+1 {{'tile.kernel' op a kernel returns no values; write outputs through its memref arguments}}
"tile.kernel"() <{sym_name = "returns", function_type = (memref<4xf32>) -> memref<4xf32>, grid = array<i64: 1>}> ({
^bb0(%x: memref<4xf32>):
  "tile.return"() : () -> ()
}) : () -> ()

// -----

// expected-error @+1 {{'tile.kernel' op the entry block's argument types must equal the kernel's argument types}}
"tile.kernel"() <{sym_name = "mismatch", function_type = (memref<4xf32>) -> (), grid = array<i64: 1>}> ({
^bb0(%x: memref<8xf32>):
  "tile.return"() : () -> ()
}) : () -> ()

// -----

func.func @return_outside() {
  // expected-error @+1 {{'tile.return' expects parent op 'tile.kernel'}}
  tile.return
}

// -----

// == tile.program_id ==

tile.kernel @axis(%x: memref<4xf32>) grid [4, 2] {
  // expected-error @+1 {{'tile.program_id' op axis 2 is outside the kernel's 2-d grid}}
  %p = tile.program_id 2
  tile.return
}

// -----

tile.kernel @negative_axis(%x: memref<4xf32>) grid [4] {
  // expected-error @+1 {{'tile.program_id' op axis -1 is outside the kernel's 1-d grid}}
  %p = tile.program_id -1
  tile.return
}

// -----

func.func @program_id_outside() {
  // expected-error @+1 {{'tile.program_id' expects ancestor op 'tile.kernel'}}
  %p = tile.program_id 0
  func.return
}

// -----

// == tile.load and tile.store ==

tile.kernel @load_indices(%x: memref<4x8xf32>) grid [1] {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{'tile.load' op expected 2 indices for source of type memref<4x8xf32>, got 1}}
  %t = tile.load %x[%c0] : memref<4x8xf32> -> !tile.tile<4x8xf32>
  tile.return
}

// -----

tile.kernel @load_rank(%x: memref<4x8xf32>) grid [1] {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{'tile.load' op result tile rank 1 must equal the rank 2 of source of type memref<4x8xf32>}}
  %t = tile.load %x[%c0, %c0] : memref<4x8xf32> -> !tile.tile<32xf32>
  tile.return
}

// -----

tile.kernel @load_element_type(%x: memref<8xf32>) grid [1] {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{'tile.load' op result tile element type f16 must equal the element type f32 of source}}
  %t = tile.load %x[%c0] : memref<8xf32> -> !tile.tile<8xf16>
  tile.return
}

// -----

tile.kernel @load_padding(%x: memref<8xf32>) grid [1] {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{'tile.load' op padding 0 : i32 must have the element type f32 of source}}
  %t = tile.load %x[%c0] padding 0 : i32 : memref<8xf32> -> !tile.tile<8xf32>
  tile.return
}

// -----

tile.kernel @store_indices(%x: memref<8xi32>) grid [1] {
  %c0 = arith.constant 0 : index
  %t = tile.load %x[%c0] : memref<8xi32> -> !tile.tile<8xi32>
  // expected-error @+1 {{'tile.store' op expected 1 indices for dest of type memref<8xi32>, got 2}}
  tile.store %t, %x[%c0, %c0] : !tile.tile<8xi32>, memref<8xi32>
  tile.return
}

// -----

tile.kernel @store_rank(%x: memref<8xi32>, %y: memref<2x4xi32>) grid [1] {
  %c0 = arith.constant 0 : index
  %t = tile.load %x[%c0] : memref<8xi32> -> !tile.tile<8xi32>
  // expected-error @+1 {{'tile.store' op value tile rank 1 must equal the rank 2 of dest of type memref<2x4xi32>}}
  tile.store %t, %y[%c0, %c0] : !tile.tile<8xi32>, memref<2x4xi32>
  tile.return
}

// -----

tile.kernel @store_element_type(%x: memref<8xi32>, %y: memref<8xi1>) grid [1] {
  %c0 = arith.constant 0 : index
  %t = tile.load %x[%c0] : memref<8xi32> -> !tile.tile<8xi32>
  // expected-error @+1 {{'tile.store' op value tile element type i32 must equal the element type i1 of dest}}
  tile.store %t, %y[%c0] : !tile.tile<8xi32>, memref<8xi1>
  tile.return
}

// -----

// == tile.broadcast and tile.splat ==

tile.kernel @broadcast_element_type(%x: memref<8xf32>) grid [1] {
  %c0 = arith.constant 0 : index
  %t = tile.load %x[%c0] : memref<8xf32> -> !tile.tile<8xf32>
  // expected-error @+1 {{'tile.broadcast' op result element type f16 must equal the element type f32 of source}}
  %b = tile.broadcast %t : !tile.tile<8xf32> -> !tile.tile<4x8xf16>
  tile.return
}

// -----

tile.kernel @broadcast_shape(%x: memref<8xf32>) grid [1] {
  %c0 = arith.constant 0 : index
  %t = tile.load %x[%c0] : memref<8xf32> -> !tile.tile<8xf32>
  // expected-error @+1 {{'tile.broadcast' op source tile of shape 8 cannot be broadcast to 8x4}}
  %b = tile.broadcast %t : !tile.tile<8xf32> -> !tile.tile<8x4xf32>
  tile.return
}

// -----

tile.kernel @transpose_shape(%x: memref<8x4xf32>) grid [1] {
  %c0 = arith.constant 0 : index
  %t = tile.load %x[%c0, %c0] : memref<8x4xf32> -> !tile.tile<8x4xf32>
  // expected-error @+1 {{'tile.transpose' op result type !tile.tile<8x4xf32> must be the source's with its last two dimensions swapped (!tile.tile<4x8xf32>)}}
  %b = tile.transpose %t : !tile.tile<8x4xf32> -> !tile.tile<8x4xf32>
  tile.return
}

// -----

tile.kernel @transpose_rank(%x: memref<8xf32>) grid [1] {
  %c0 = arith.constant 0 : index
  %t = tile.load %x[%c0] : memref<8xf32> -> !tile.tile<8xf32>
  // expected-error @+1 {{'tile.transpose' op source tile of rank 1 has no two dimensions to swap}}
  %b = tile.transpose %t : !tile.tile<8xf32> -> !tile.tile<8xf32>
  tile.return
}

// -----

tile.kernel @splat_type(%x: memref<8xf32>) grid [1] {
  %one = arith.constant 1.0 : f16
  // expected-error @+1 {{'tile.splat' op splat value of type f16 must have the tile's element type f32}}
  %s = tile.splat %one : f16 -> !tile.tile<8xf32>
  tile.return
}

// -----

// == tile.map and tile.yield ==

tile.kernel @map_no_results(%x: memref<8xf32>) grid [1] {
  %c0 = arith.constant 0 : index
  %t = tile.load %x[%c0] : memref<8xf32> -> !tile.tile<8xf32>
  // expected-error @+1 {{'tile.map' op a map has at least one result}}
  "tile.map"(%t) ({
  ^bb0(%e: f32):
    "tile.yield"() : () -> ()
  }) : (!tile.tile<8xf32>) -> ()
  tile.return
}

// -----

tile.kernel @map_operand_shape(%x: memref<8xf32>) grid [1] {
  %c0 = arith.constant 0 : index
  %a = tile.load %x[%c0] : memref<8xf32> -> !tile.tile<8xf32>
  %b = tile.load %x[%c0] : memref<8xf32> -> !tile.tile<4xf32>
  // expected-error @+1 {{'tile.map' op operand #1 has shape 4, but the map's tiles are 8}}
  %s = tile.map %a, %b : !tile.tile<8xf32>, !tile.tile<4xf32> -> !tile.tile<8xf32> {
  ^bb0(%u: f32, %v: f32):
    %w = arith.addf %u, %v : f32
    tile.yield %w : f32
  }
  tile.return
}

// -----

tile.kernel @map_result_shape(%x: memref<8xf32>) grid [1] {
  %c0 = arith.constant 0 : index
  %a = tile.load %x[%c0] : memref<8xf32> -> !tile.tile<8xf32>
  // expected-error @+1 {{'tile.map' op result #1 has shape 1x8, but the map's tiles are 8}}
  %s, %t = tile.map %a : !tile.tile<8xf32> -> !tile.tile<8xf32>, !tile.tile<1x8xf32> {
  ^bb0(%u: f32):
    tile.yield %u, %u : f32, f32
  }
  tile.return
}

// -----

tile.kernel @map_arguments(%x: memref<8xf32>, %y: memref<8xi32>) grid [1] {
  %c0 = arith.constant 0 : index
  %a = tile.load %x[%c0] : memref<8xf32> -> !tile.tile<8xf32>
  %b = tile.load %y[%c0] : memref<8xi32> -> !tile.tile<8xi32>
  // expected-error @+1 {{'tile.map' op the body's arguments must be the element types of the operands: (f32, i32), got (f32)}}
  %s = tile.map %a, %b : !tile.tile<8xf32>, !tile.tile<8xi32> -> !tile.tile<8xf32> {
  ^bb0(%u: f32):
    tile.yield %u : f32
  }
  tile.return
}

// -----

tile.kernel @map_no_yield(%x: memref<8xf32>) grid [1] {
  %c0 = arith.constant 0 : index
  %a = tile.load %x[%c0] : memref<8xf32> -> !tile.tile<8xf32>
  // expected-error @+1 {{'tile.map' op the body must end with tile.yield}}
  %s = tile.map %a : !tile.tile<8xf32> -> !tile.tile<8xf32> {
  ^bb0(%u: f32):
    %w = arith.negf %u : f32
  }
  tile.return
}

// -----

tile.kernel @map_yield_types(%x: memref<8xf32>) grid [1] {
  %c0 = arith.constant 0 : index
  %a = tile.load %x[%c0] : memref<8xf32> -> !tile.tile<8xf32>
  // expected-error @+1 {{'tile.map' op tile.yield must give the element types of the results: (f32, i1), got (f32)}}
  %s, %m = tile.map %a : !tile.tile<8xf32> -> !tile.tile<8xf32>, !tile.tile<8xi1> {
  ^bb0(%u: f32):
    tile.yield %u : f32
  }
  tile.return
}

// -----

tile.kernel @yield_outside(%x: memref<8xf32>) grid [1] {
  // expected-error @+1 {{'tile.yield' expects parent op to be one of 'tile.map', 'tile.reduce'}}
  tile.yield
}

// -----

// == tile.launch ==

func.func @launch_unknown(%x: memref<8xf32>) {
  // expected-error @+1 {{'tile.launch' op 'nowhere' does not name a kernel in this module}}
  tile.launch @nowhere(%x) : memref<8xf32>
  func.return
}

// -----

func.func @not_a_kernel(%x: memref<8xf32>) {
  func.return
}

func.func @launch_function(%x: memref<8xf32>) {
  // expected-error @+1 {{'tile.launch' op 'not_a_kernel' is a 'func.func', but this launch takes 'tile.kernel'}}
  tile.launch @not_a_kernel(%x) : memref<8xf32>
  func.return
}

// -----

tile.kernel @two(%x: memref<8xf32>, %y: memref<8xf32>) grid [1] {
  tile.return
}

func.func @launch_arity(%x: memref<8xf32>) {
  // expected-error @+1 {{'tile.launch' op kernel 'two' takes 2 arguments, but the launch passes 1}}
  tile.launch @two(%x) : memref<8xf32>
  func.return
}

// -----

tile.kernel @k(%x: memref<2x4xf32>) grid [1] {
  tile.return
}

func.func @launch_element_count(%x: memref<9xf32>) {
  // expected-error @+1 {{'tile.launch' op launch argument #0 of type memref<9xf32> cannot be passed for kernel parameter of type memref<2x4xf32>}}
  tile.launch @k(%x) : memref<9xf32>
  func.return
}

// -----

tile.kernel @k(%x: memref<8xf32>) grid [1] {
  tile.return
}

func.func @launch_element_type(%x: memref<8xi32>) {
  // expected-error @+1 {{'tile.launch' op launch argument #0 of type memref<8xi32> cannot be passed for kernel parameter of type memref<8xf32>}}
  tile.launch @k(%x) : memref<8xi32>
  func.return
}

// -----

tile.kernel @k(%x: memref<8xf32>) grid [1] {
  tile.return
}

func.func @launch_memory_space(%x: memref<2x4xf32, 3>) {
  // expected-error @+1 {{'tile.launch' op launch argument #0 of type memref<2x4xf32, 3 : i64> cannot be passed for kernel parameter of type memref<8xf32>}}
  tile.launch @k(%x) : memref<2x4xf32, 3>
  func.return
}

// -----

tile.kernel @k(%x: memref<8xf32>) grid [1] {
  tile.return
}

func.func @launch_not_memref(%x: tensor<8xf32>) {
  // expected-error @+1 {{tensor<8xf32> should be of base attribute memref}}
  tile.launch @k(%x) : tensor<8xf32>
  func.return
}

// -----

// == tile.reduce ==

tile.kernel @reduce_axis(%x: memref<4x8xf32>) grid [1] {
  %c0 = arith.constant 0 : index
  %t = tile.load %x[%c0, %c0] : memref<4x8xf32> -> !tile.tile<4x8xf32>
  // expected-error @+1 {{axis 2 is outside the rank-2 tile !tile.tile<4x8xf32>}}
  %r = "tile.reduce"(%t) <{axis = 2 : i64}> ({
  ^bb0(%a: f32, %b: f32):
    tile.yield %a : f32
  }) : (!tile.tile<4x8xf32>) -> !tile.tile<4x1xf32>
  tile.return
}

// -----

tile.kernel @reduce_result(%x: memref<4x8xf32>) grid [1] {
  %c0 = arith.constant 0 : index
  %t = tile.load %x[%c0, %c0] : memref<4x8xf32> -> !tile.tile<4x8xf32>
  // expected-error @+1 {{result type !tile.tile<4xf32> must be !tile.tile<4x1xf32>: the operand with dimension 1 reduced to 1}}
  %r = tile.reduce %t axis 1 : !tile.tile<4x8xf32> -> !tile.tile<4xf32> {
  ^bb0(%a: f32, %b: f32):
    tile.yield %a : f32
  }
  tile.return
}

// -----

tile.kernel @reduce_combiner(%x: memref<4x8xf32>) grid [1] {
  %c0 = arith.constant 0 : index
  %t = tile.load %x[%c0, %c0] : memref<4x8xf32> -> !tile.tile<4x8xf32>
  // expected-error @+1 {{the combiner takes two f32 arguments, got (f32)}}
  %r = tile.reduce %t axis 1 : !tile.tile<4x8xf32> -> !tile.tile<4x1xf32> {
  ^bb0(%a: f32):
    tile.yield %a : f32
  }
  tile.return
}

// -----

tile.kernel @reduce_yield(%x: memref<4x8xf32>) grid [1] {
  %c0 = arith.constant 0 : index
  %t = tile.load %x[%c0, %c0] : memref<4x8xf32> -> !tile.tile<4x8xf32>
  // expected-error @+1 {{the combiner must end with tile.yield of one f32}}
  %r = tile.reduce %t axis 1 : !tile.tile<4x8xf32> -> !tile.tile<4x1xf32> {
  ^bb0(%a: f32, %b: f32):
    tile.yield
  }
  tile.return
}

// -----

// == tile.in_bounds ==

tile.kernel @in_bounds_type(%x: memref<4x8xf32>) grid [1] {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{result must be a tile of i1, got !tile.tile<4x8xf32>}}
  %m = tile.in_bounds [%c0, %c0] within [4, 8] : !tile.tile<4x8xf32>
  tile.return
}

// -----

tile.kernel @in_bounds_indices(%x: memref<4x8xf32>) grid [1] {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{expected 2 indices for bounds [4, 8], got 1}}
  %m = tile.in_bounds [%c0] within [4, 8] : !tile.tile<4x8xi1>
  tile.return
}

// -----

tile.kernel @in_bounds_rank(%x: memref<4x8xf32>) grid [1] {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{result rank 1 must equal the rank of the bounds 2}}
  %m = tile.in_bounds [%c0, %c0] within [4, 8] : !tile.tile<8xi1>
  tile.return
}

// -----

// == tile.dot ==

tile.kernel @dot_rank(%x: memref<4xf32>) grid [1] {
  %zero = arith.constant 0.0 : f32
  %a = tile.splat %zero : f32 -> !tile.tile<4xf32>
  %acc = tile.splat %zero : f32 -> !tile.tile<4xf32>
  // expected-error @+1 {{lhs, rhs and accumulator must have one rank of at least 2, got 4, 4 and 4}}
  %d = tile.dot %a, %a, %acc : !tile.tile<4xf32>, !tile.tile<4xf32> -> !tile.tile<4xf32>
  tile.return
}

// -----

tile.kernel @dot_inner(%x: memref<4xf32>) grid [1] {
  %zero = arith.constant 0.0 : f32
  %a = tile.splat %zero : f32 -> !tile.tile<4x8xf32>
  %b = tile.splat %zero : f32 -> !tile.tile<4x2xf32>
  %acc = tile.splat %zero : f32 -> !tile.tile<4x2xf32>
  // expected-error @+1 {{lhs 4x8 has 8 columns but rhs 4x2 has 4 rows}}
  %d = tile.dot %a, %b, %acc : !tile.tile<4x8xf32>, !tile.tile<4x2xf32> -> !tile.tile<4x2xf32>
  tile.return
}

// -----

tile.kernel @dot_accumulator_shape(%x: memref<4xf32>) grid [1] {
  %zero = arith.constant 0.0 : f32
  %a = tile.splat %zero : f32 -> !tile.tile<4x8xf32>
  %b = tile.splat %zero : f32 -> !tile.tile<8x2xf32>
  %acc = tile.splat %zero : f32 -> !tile.tile<2x4xf32>
  // expected-error @+1 {{accumulator shape 2x4 must be 4x2: the batch dimensions of lhs 4x8 and rhs 8x2 (equal), then M and N}}
  %d = tile.dot %a, %b, %acc : !tile.tile<4x8xf32>, !tile.tile<8x2xf32> -> !tile.tile<2x4xf32>
  tile.return
}

// -----

tile.kernel @dot_batch(%x: memref<4xf32>) grid [1] {
  %zero = arith.constant 0.0 : f32
  %a = tile.splat %zero : f32 -> !tile.tile<2x4x8xf32>
  %b = tile.splat %zero : f32 -> !tile.tile<1x8x2xf32>
  %acc = tile.splat %zero : f32 -> !tile.tile<2x4x2xf32>
  // expected-error @+1 {{accumulator shape 2x4x2 must be 2x4x2: the batch dimensions of lhs 2x4x8 and rhs 1x8x2 (equal), then M and N}}
  %d = tile.dot %a, %b, %acc : !tile.tile<2x4x8xf32>, !tile.tile<1x8x2xf32> -> !tile.tile<2x4x2xf32>
  tile.return
}

// -----

tile.kernel @dot_inputs(%x: memref<4xf32>) grid [1] {
  %zero = arith.constant 0.0 : f32
  %half = arith.constant 0.0 : f16
  %a = tile.splat %half : f16 -> !tile.tile<4x8xf16>
  %b = tile.splat %zero : f32 -> !tile.tile<8x2xf32>
  %acc = tile.splat %zero : f32 -> !tile.tile<4x2xf32>
  // expected-error @+1 {{lhs and rhs must have one element type, f16, bf16 or f32, got f16 and f32}}
  %d = tile.dot %a, %b, %acc : !tile.tile<4x8xf16>, !tile.tile<8x2xf32> -> !tile.tile<4x2xf32>
  tile.return
}

// -----

tile.kernel @dot_integer(%x: memref<4xf32>) grid [1] {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1 : i32
  %a = tile.splat %one : i32 -> !tile.tile<4x8xi32>
  %b = tile.splat %one : i32 -> !tile.tile<8x2xi32>
  %acc = tile.splat %zero : f32 -> !tile.tile<4x2xf32>
  // expected-error @+1 {{lhs and rhs must have one element type, f16, bf16 or f32, got i32 and i32}}
  %d = tile.dot %a, %b, %acc : !tile.tile<4x8xi32>, !tile.tile<8x2xi32> -> !tile.tile<4x2xf32>
  tile.return
}

// -----

tile.kernel @dot_accumulator_type(%x: memref<4xf32>) grid [1] {
  %half = arith.constant 0.0 : f16
  %a = tile.splat %half : f16 -> !tile.tile<4x8xf16>
  %b = tile.splat %half : f16 -> !tile.tile<8x2xf16>
  %acc = tile.splat %half : f16 -> !tile.tile<4x2xf16>
  // expected-error @+1 {{the accumulator must be a tile of f32, got !tile.tile<4x2xf16>}}
  %d = tile.dot %a, %b, %acc : !tile.tile<4x8xf16>, !tile.tile<8x2xf16> -> !tile.tile<4x2xf16>
  tile.return
}

// -----

tile.kernel @dot_result(%x: memref<4xf32>) grid [1] {
  %zero = arith.constant 0.0 : f32
  %a = tile.splat %zero : f32 -> !tile.tile<4x8xf32>
  %b = tile.splat %zero : f32 -> !tile.tile<8x2xf32>
  %acc = tile.splat %zero : f32 -> !tile.tile<4x2xf32>
  // expected-error @+1 {{attribute !tile.tile<4x2xf32> expected from variable 'T', but got !tile.tile<4x4xf32>}}
  %d = "tile.dot"(%a, %b, %acc) : (!tile.tile<4x8xf32>, !tile.tile<8x2xf32>, !tile.tile<4x2xf32>) -> !tile.tile<4x4xf32>
  tile.return
}

// -----

tile.kernel @dot_precision_of_f16(%x: memref<4xf32>) grid [1] {
  %zero = arith.constant 0.0 : f32
  %half = arith.constant 0.0 : f16
  %a = tile.splat %half : f16 -> !tile.tile<4x8xf16>
  %b = tile.splat %half : f16 -> !tile.tile<8x2xf16>
  %acc = tile.splat %zero : f32 -> !tile.tile<4x2xf32>
  // expected-error @+1 {{precision '3xtf32' applies to f32 operands only}}
  %d = tile.dot %a, %b, %acc {precision = "3xtf32"} : !tile.tile<4x8xf16>, !tile.tile<8x2xf16> -> !tile.tile<4x2xf32>
  tile.return
}

// -----

tile.kernel @dot_unknown_precision(%x: memref<4xf32>) grid [1] {
  %zero = arith.constant 0.0 : f32
  %a = tile.splat %zero : f32 -> !tile.tile<4x8xf32>
  %b = tile.splat %zero : f32 -> !tile.tile<8x2xf32>
  %acc = tile.splat %zero : f32 -> !tile.tile<4x2xf32>
  // expected-error @+1 {{precision must be one of 'ieee', 'tf32', '3xtf32', got 'highest'}}
  %d = tile.dot %a, %b, %acc {precision = "highest"} : !tile.tile<4x8xf32>, !tile.tile<8x2xf32> -> !tile.tile<4x2xf32>
  tile.return
}

// -----

// == tile.range ==

tile.kernel @range_type() grid [1] {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{result must be a tile of index, got !tile.tile<4xf32>}}
  %r = tile.range %c0 axis 0 : !tile.tile<4xf32>
  tile.return
}

// -----

tile.kernel @range_axis() grid [1] {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{axis 2 is outside the result's 2 dimensions}}
  %r = tile.range %c0 axis 2 : !tile.tile<4x8xindex>
  tile.return
}

// -----

// == tile.scatter ==

tile.kernel @scatter_count(%x: memref<4x8xf32>) grid [1] {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1.0 : f32
  %r = tile.range %c0 axis 0 : !tile.tile<4xindex>
  %v = tile.splat %c1 : f32 -> !tile.tile<4xf32>
  // expected-error @+1 {{expected 2 index tiles for dest of type memref<4x8xf32>, got 1}}
  tile.scatter %v, %x[%r] : !tile.tile<4xf32>, memref<4x8xf32>, !tile.tile<4xindex>
  tile.return
}

// -----

tile.kernel @scatter_shape(%x: memref<4xf32>) grid [1] {
  %c0 = arith.constant 0 : index
  %r = tile.range %c0 axis 0 : !tile.tile<8xindex>
  %v = tile.load %x[%c0] : memref<4xf32> -> !tile.tile<4xf32>
  // expected-error @+1 {{index tile #0 must be a tile of index of the value's shape 4, got !tile.tile<8xindex>}}
  tile.scatter %v, %x[%r] : !tile.tile<4xf32>, memref<4xf32>, !tile.tile<8xindex>
  tile.return
}

// -----

tile.kernel @scatter_element(%x: memref<4xf32>, %y: memref<4xf16>) grid [1] {
  %c0 = arith.constant 0 : index
  %r = tile.range %c0 axis 0 : !tile.tile<4xindex>
  %v = tile.load %y[%c0] : memref<4xf16> -> !tile.tile<4xf16>
  // expected-error @+1 {{value tile element type f16 must equal the element type f32 of dest}}
  tile.scatter %v, %x[%r] : !tile.tile<4xf16>, memref<4xf32>, !tile.tile<4xindex>
  tile.return
}

// -----

// == tile.gather ==

tile.kernel @gather_count(%x: memref<4x8xf32>) grid [1] {
  %c0 = arith.constant 0 : index
  %r = tile.range %c0 axis 0 : !tile.tile<4xindex>
  // expected-error @+1 {{expected 2 index tiles for source of type memref<4x8xf32>, got 1}}
  %g = tile.gather %x[%r] : memref<4x8xf32>, !tile.tile<4xindex> -> !tile.tile<4xf32>
  tile.return
}

// -----

tile.kernel @gather_shape(%x: memref<4xf32>) grid [1] {
  %c0 = arith.constant 0 : index
  %r = tile.range %c0 axis 0 : !tile.tile<8xindex>
  // expected-error @+1 {{index tile #0 must be a tile of index of the result's shape 4, got !tile.tile<8xindex>}}
  %g = tile.gather %x[%r] : memref<4xf32>, !tile.tile<8xindex> -> !tile.tile<4xf32>
  tile.return
}

// -----

tile.kernel @gather_element(%x: memref<4xf32>) grid [1] {
  %c0 = arith.constant 0 : index
  %r = tile.range %c0 axis 0 : !tile.tile<4xindex>
  // expected-error @+1 {{result tile element type f16 must equal the element type f32 of source}}
  %g = tile.gather %x[%r] : memref<4xf32>, !tile.tile<4xindex> -> !tile.tile<4xf16>
  tile.return
}

// -----

tile.kernel @gather_padding(%x: memref<4xf32>) grid [1] {
  %c0 = arith.constant 0 : index
  %r = tile.range %c0 axis 0 : !tile.tile<4xindex>
  // expected-error @+1 {{padding 1 : i32 must have the element type f32 of source}}
  %g = tile.gather %x[%r] padding 1 : i32 : memref<4xf32>, !tile.tile<4xindex> -> !tile.tile<4xf32>
  tile.return
}
