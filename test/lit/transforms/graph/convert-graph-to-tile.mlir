// RUN: mlc-opt %s --split-input-file -p graph-decompose,graph-fuse,convert-graph-to-tile | filecheck %s
// RUN: mlc-opt %s --split-input-file -p 'graph-decompose,graph-fuse,convert-graph-to-tile{elements-per-program=256 num-warps=8 reduction-warps=2}' | filecheck %s --check-prefix=OPTIONS
// RUN: mlc-opt %s --split-input-file -p graph-decompose,graph-fuse,convert-graph-to-tile | mlc-opt --split-input-file | filecheck %s
// RUN: mlc-opt %s --split-input-file -p 'graph-decompose,graph-fuse,convert-graph-to-tile{matmul-tile=16,16,8}' | filecheck %s --check-prefix=BLOCK
// RUN: mlc-opt %s --split-input-file -p 'graph-decompose,graph-fuse,convert-graph-to-tile{precision=tf32}' | filecheck %s --check-prefix=PRECISION

// A plain elementwise op: one 1-d kernel, tiles rounded up to a power of two, masked by the
// memref bounds (1000 is not a multiple of 1024).
// CHECK-LABEL: tile.kernel @add_0_add
// CHECK-SAME:    (%x: memref<1000xf32>, %y: memref<1000xf32>, %output0: memref<1000xf32>) grid [1] num_warps 4
// CHECK:         tile.load %x[{{.*}}] : memref<1000xf32> -> !tile.tile<1024xf32>
// CHECK:         tile.map {{.*}} -> !tile.tile<1024xf32> {
// CHECK:           arith.addf
// CHECK:         tile.store {{.*}}, %output0
// CHECK-LABEL: func.func @add(%x: memref<1000xf32>, %y: memref<1000xf32>) -> memref<1000xf32>
// CHECK-NEXT:    %[[OUT:.*]] = memref.alloc() {alignment = 256 : i64} : memref<1000xf32>
// CHECK-NEXT:    tile.launch @add_0_add(%x, %y, %[[OUT]])
// CHECK-NEXT:    func.return %[[OUT]]
// OPTIONS-LABEL: tile.kernel @add_0_add
// OPTIONS-SAME:    grid [4] num_warps 8
// OPTIONS:         tile.load {{.*}} -> !tile.tile<256xf32>
func.func @add(%x: tensor<1000xf32>, %y: tensor<1000xf32>) -> tensor<1000xf32> {
  %0 = graph.add %x, %y : (tensor<1000xf32>, tensor<1000xf32>) -> tensor<1000xf32>
  func.return %0 : tensor<1000xf32>
}

// -----

// A bias add and relu fuse into one kernel. The bias broadcasts along the rows, so the domain
// stays 2-d; the bias parameter is the 1024-element buffer seen as 1x1024, loaded as a 1x1024
// tile and broadcast.
// CHECK-LABEL: tile.kernel @bias_0_add_relu
// CHECK-SAME:    (%x: memref<64x1024xf32>, %b: memref<1x1024xf32>, %output0: memref<64x1024xf32>) grid [32]
// CHECK:         %[[ROW:.*]] = arith.muli %{{.*}}, %{{.*}} : index
// CHECK:         %[[X:.*]] = tile.load %x[%[[ROW]], %{{.*}}] : memref<64x1024xf32> -> !tile.tile<2x1024xf32>
// CHECK:         %[[B:.*]] = tile.load %b[%{{.*}}, %{{.*}}] : memref<1x1024xf32> -> !tile.tile<1x1024xf32>
// CHECK:         %[[BB:.*]] = tile.broadcast %[[B]] : !tile.tile<1x1024xf32> -> !tile.tile<2x1024xf32>
// CHECK:         tile.map %[[X]], %[[BB]]
// CHECK:           arith.addf
// CHECK:           arith.maximumf
// CHECK-NOT:   tile.kernel
// CHECK-LABEL: func.func @bias
// CHECK:         tile.launch @bias_0_add_relu(%x, %b, %{{.*}}) : memref<64x1024xf32>, memref<1024xf32>, memref<64x1024xf32>
func.func @bias(%x: tensor<64x1024xf32>, %b: tensor<1024xf32>) -> tensor<64x1024xf32> {
  %0 = graph.add %x, %b : (tensor<64x1024xf32>, tensor<1024xf32>) -> tensor<64x1024xf32>
  %1 = graph.relu %0 : tensor<64x1024xf32>
  func.return %1 : tensor<64x1024xf32>
}

// -----

// A value that is both returned and used inside the group becomes a second output of the same
// kernel: x is read once, both results written once. The 8x16 domain collapses to 128.
// CHECK-LABEL: tile.kernel @two_outputs_0_exp_neg
// CHECK-SAME:    (%x: memref<128xf32>, %output0: memref<128xf32>, %output1: memref<128xf32>)
// CHECK:         %{{.*}}, %{{.*}} = tile.map
// CHECK:           %[[E:.*]] = math.exp
// CHECK:           %[[N:.*]] = arith.negf %[[E]]
// CHECK:           tile.yield %[[E]], %[[N]] : f32, f32
// CHECK-NOT:   tile.kernel
// CHECK-LABEL: func.func @two_outputs
// CHECK-COUNT-2: memref.alloc
// CHECK:         tile.launch @two_outputs_0_exp_neg(%x, %{{.*}}, %{{.*}}) : memref<8x16xf32>, memref<8x16xf32>, memref<8x16xf32>
func.func @two_outputs(%x: tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<8x16xf32>) {
  %0 = graph.exp %x : tensor<8x16xf32>
  %1 = graph.neg %0 : tensor<8x16xf32>
  func.return %0, %1 : tensor<8x16xf32>, tensor<8x16xf32>
}

// -----

// Reshaping an input costs nothing: the kernel reads the 32-element buffer as the reshaped value.
// CHECK-LABEL: tile.kernel @reshape_input_0_reshape_mul
// CHECK-SAME:    (%x: memref<32xf32>, %y: memref<32xf32>, %output0: memref<32xf32>)
// CHECK-LABEL: func.func @reshape_input
// CHECK:         tile.launch @reshape_input_0_reshape_mul(%x, %y, %{{.*}}) : memref<32xf32>, memref<4x8xf32>, memref<4x8xf32>
func.func @reshape_input(%x: tensor<32xf32>, %y: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = graph.reshape %x : tensor<32xf32> to tensor<4x8xf32>
  %1 = graph.mul %0, %y : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %1 : tensor<4x8xf32>
}

// -----

// A reshape between elementwise ops cuts the chain: the exp result is materialised and the
// second kernel reads that buffer reinterpreted.
// CHECK-LABEL: tile.kernel @reshape_between_0_exp
// CHECK:         math.exp
// CHECK-LABEL: tile.kernel @reshape_between_1_reshape_sqrt
// CHECK:         math.sqrt
// CHECK-LABEL: func.func @reshape_between
// CHECK:         %[[T:.*]] = memref.alloc() {{.*}} : memref<4x8xf32>
// CHECK-NEXT:    tile.launch @reshape_between_0_exp(%x, %[[T]])
// CHECK-NEXT:    %[[R:.*]] = memref.alloc() {{.*}} : memref<32xf32>
// CHECK-NEXT:    tile.launch @reshape_between_1_reshape_sqrt(%[[T]], %[[R]]) : memref<4x8xf32>, memref<32xf32>
func.func @reshape_between(%x: tensor<4x8xf32>) -> tensor<32xf32> {
  %0 = graph.exp %x : tensor<4x8xf32>
  %1 = graph.reshape %0 : tensor<4x8xf32> to tensor<32xf32>
  %2 = graph.sqrt %1 : tensor<32xf32>
  func.return %2 : tensor<32xf32>
}

// -----

// A non-splat constant becomes a memref.global read by the kernel; a returned splat constant a
// fill kernel. Integer division guards a zero divisor (the result is then 0) and INT_MIN / -1
// (divided by 1 instead, giving the wrapped INT_MIN): the hardware division sees neither.
// CHECK-LABEL: tile.kernel @constants_0_div
// CHECK-SAME:    (%x: memref<3xi32>, %c: memref<3xi32>, %output0: memref<3xi32>)
// CHECK:         ^bb0(%[[A:.*]]: i32, %[[B:.*]]: i32):
// CHECK:           %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK:           %[[ONE:.*]] = arith.constant 1 : i32
// CHECK:           %[[MIN:.*]] = arith.constant -2147483648 : i32
// CHECK:           %[[IS_ZERO:.*]] = arith.cmpi eq, %[[B]], %[[ZERO]] : i32
// CHECK:           %[[IS_MIN:.*]] = arith.cmpi eq, %[[A]], %[[MIN]] : i32
// CHECK:           %[[MINUS_ONE:.*]] = arith.constant -1 : i32
// CHECK:           %[[IS_MINUS_ONE:.*]] = arith.cmpi eq, %[[B]], %[[MINUS_ONE]] : i32
// CHECK:           %[[OVERFLOWS:.*]] = arith.andi %[[IS_MIN]], %[[IS_MINUS_ONE]] : i1
// CHECK:           %[[ONE_INSTEAD:.*]] = arith.ori %[[IS_ZERO]], %[[OVERFLOWS]] : i1
// CHECK:           %[[SAFE:.*]] = arith.select %[[ONE_INSTEAD]], %[[ONE]], %[[B]] : i32
// CHECK:           %[[Q:.*]] = arith.divsi %[[A]], %[[SAFE]] : i32
// CHECK:           arith.select %[[IS_ZERO]], %[[ZERO]], %[[Q]] : i32
// CHECK:       "memref.global"() <{sym_name = "constants_constant_0", type = memref<3xi32>, initial_value = dense<[1, 2, 3]> : tensor<3xi32>, sym_visibility = "private", constant, alignment = 256 : i64}>
// CHECK-LABEL: tile.kernel @constants_1_fill
// CHECK:         tile.map : -> !tile.tile<4xf16>
// CHECK-NEXT:      arith.constant 5.000000e-01 : f16
// CHECK-LABEL: func.func @constants
// CHECK:         %[[C:.*]] = memref.get_global @constants_constant_0 : memref<3xi32>
// CHECK:         tile.launch @constants_0_div(%x, %[[C]], %{{.*}})
// CHECK:         tile.launch @constants_1_fill(%{{.*}}) : memref<2x2xf16>
func.func @constants(%x: tensor<3xi32>) -> (tensor<3xi32>, tensor<2x2xf16>) {
  %c = graph.constant dense<[1, 2, 3]> : tensor<3xi32>
  %z = graph.constant dense<0.5> : tensor<2x2xf16>
  %0 = graph.div %x, %c : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
  func.return %0, %z : tensor<3xi32>, tensor<2x2xf16>
}

// -----

// f16 arithmetic runs in f32 and is rounded once per graph op.
// CHECK-LABEL: tile.kernel @half_0_sigmoid
// CHECK:         ^bb0(%[[H:.*]]: f16):
// CHECK-NEXT:      %[[W:.*]] = arith.extf %[[H]] : f16 to f32
// CHECK:           math.exp
// CHECK:           %[[R:.*]] = arith.truncf %{{.*}} : f32 to f16
// CHECK-NEXT:      tile.yield %[[R]] : f16
func.func @half(%x: tensor<4x4xf16>) -> tensor<4x4xf16> {
  %0 = graph.sigmoid %x : tensor<4x4xf16>
  func.return %0 : tensor<4x4xf16>
}

// -----

// Two independent ops over one domain reading the same inputs: one kernel, two outputs, each
// input read once. A result returned through a reshape is written in place: the kernel's output
// buffer has the reshaped type, and there is no copy kernel.
// CHECK-LABEL: tile.kernel @siblings_0_cmp_div
// CHECK-SAME:    (%i: memref<256xi32>, %j: memref<256xi32>, %output0: memref<256xi1>, %output1: memref<256xi32>)
// CHECK-NOT:   tile.kernel
// CHECK-LABEL: func.func @siblings
// CHECK-NEXT:    %[[B:.*]] = memref.alloc() {{.*}} : memref<256xi1>
// CHECK-NEXT:    %[[Q:.*]] = memref.alloc() {{.*}} : memref<16x16xi32>
// CHECK-NEXT:    tile.launch @siblings_0_cmp_div(%i, %j, %[[B]], %[[Q]]) : memref<256xi32>, memref<256xi32>, memref<256xi1>, memref<16x16xi32>
// CHECK-NEXT:    func.return %[[B]], %[[Q]]
func.func @siblings(%i: tensor<256xi32>, %j: tensor<256xi32>) -> (tensor<256xi1>, tensor<16x16xi32>) {
  %gt = graph.cmp ge, %i, %j : (tensor<256xi32>, tensor<256xi32>) -> tensor<256xi1>
  %q = graph.div %i, %j : (tensor<256xi32>, tensor<256xi32>) -> tensor<256xi32>
  %m = graph.reshape %q : tensor<256xi32> to tensor<16x16xi32>
  func.return %gt, %m : tensor<256xi1>, tensor<16x16xi32>
}

// -----

// softmax(relu(2x + 1)) is one kernel over whole rows (1000 -> a 1024-wide tile, two rows per
// program, 8 warps). The relu output is computed once, masked with -inf outside the row for the
// maximum and kept for the exponentials, which are masked with 0 for the sum and reused by the
// product with the row's reciprocal (one division per row). x is read once and y written once.
// CHECK-LABEL: tile.kernel @softmax_0_mul_add_relu_reduce_max
// CHECK-SAME:    (%x: memref<64x1000xf32>, %output0: memref<64x1000xf32>) grid [32] num_warps 4
// CHECK:         %[[X:.*]] = tile.load %x[%[[ROW:.*]], %{{.*}}] : memref<64x1000xf32> -> !tile.tile<2x1024xf32>
// CHECK-NEXT:    %[[INSIDE:.*]] = tile.in_bounds [%[[ROW]], %{{.*}}] within [64, 1000] : !tile.tile<2x1024xi1>
// CHECK-NEXT:    %[[MASKED:.*]], %[[RELU:.*]] = tile.map %[[X]], %[[INSIDE]]
// CHECK:           arith.maximumf
// CHECK:           %[[NINF:.*]] = arith.constant 0xff800000 : f32
// CHECK-NEXT:      arith.select %{{.*}}, %{{.*}}, %[[NINF]] : f32
// CHECK:         %max = tile.reduce %[[MASKED]] axis 1 : !tile.tile<2x1024xf32> -> !tile.tile<2x1xf32> {
// CHECK:           arith.maximumf
// CHECK:         %[[MAX:.*]] = tile.broadcast %max : !tile.tile<2x1xf32> -> !tile.tile<2x1024xf32>
// CHECK-NEXT:    %[[EXP_MASKED:.*]], %exp = tile.map %[[RELU]], %[[MAX]], %[[INSIDE]]
// CHECK:           arith.subf
// CHECK-NEXT:      math.exp
// CHECK:         %sum = tile.reduce %[[EXP_MASKED]] axis 1
// CHECK:         %inverse_sum = tile.map %sum : !tile.tile<2x1xf32> -> !tile.tile<2x1xf32>
// CHECK:           arith.divf
// CHECK:         %[[INVERSE:.*]] = tile.broadcast %inverse_sum
// CHECK-NEXT:    %y = tile.map %exp, %[[INVERSE]]
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      arith.mulf
// CHECK:         tile.store %y, %output0
// CHECK-NOT:   tile.kernel
// CHECK-LABEL: func.func @softmax
// CHECK-NEXT:    memref.alloc
// CHECK-NEXT:    tile.launch
// CHECK-NEXT:    func.return
func.func @softmax(%x: tensor<64x1000xf32>) -> tensor<64x1000xf32> {
  %two = graph.constant dense<2.0> : tensor<f32>
  %one = graph.constant dense<1.0> : tensor<f32>
  %a = graph.mul %x, %two : (tensor<64x1000xf32>, tensor<f32>) -> tensor<64x1000xf32>
  %b = graph.add %a, %one : (tensor<64x1000xf32>, tensor<f32>) -> tensor<64x1000xf32>
  %r = graph.relu %b : tensor<64x1000xf32>
  %y = graph.softmax %r axis 1 : tensor<64x1000xf32>
  func.return %y : tensor<64x1000xf32>
}

// -----

// layer_norm in one kernel, two passes over rows held in registers (512 is a power of two: no
// mask). Values per row (mean, rsqrt of the variance) are computed in 4x1 maps, once per row.
// With options: a row a program (elements-per-program=256 < 512), the reduction kernel's warps
// from reduction-warps (num-warps sizes elementwise kernels).
// OPTIONS-LABEL: tile.kernel @layer_norm_0_reduce_sum_div_sub_mul
// OPTIONS-SAME:    grid [8] num_warps 2 {
// CHECK-LABEL: tile.kernel @layer_norm_0_reduce_sum_div_sub_mul
// CHECK-SAME:    (%x: memref<8x512xf32>, %scale: memref<1x512xf32>, %bias: memref<1x512xf32>, %output0: memref<8x512xf32>) grid [2]
// CHECK-NOT:     tile.in_bounds
// CHECK:         %mean_sum = tile.reduce %{{.*}} axis 1 : !tile.tile<4x512xf32> -> !tile.tile<4x1xf32>
// CHECK:         %mean = tile.map %mean_sum : !tile.tile<4x1xf32> -> !tile.tile<4x1xf32>
// CHECK:         %squares, %centered = tile.map
// CHECK:         %variance_sum = tile.reduce %squares axis 1
// CHECK:         %rstd = tile.map %variance_sum : !tile.tile<4x1xf32> -> !tile.tile<4x1xf32>
// CHECK:           math.rsqrt
// CHECK:         %y = tile.map {{.*}}%centered
// CHECK:         tile.store %y, %output0
func.func @layer_norm(%x: tensor<8x512xf32>, %scale: tensor<512xf32>, %bias: tensor<512xf32>) -> tensor<8x512xf32> {
  %y = graph.layer_norm %x, %scale, %bias axis 1 epsilon 1.0e-05 : (tensor<8x512xf32>, tensor<512xf32>, tensor<512xf32>) -> tensor<8x512xf32>
  func.return %y : tensor<8x512xf32>
}

// -----

// A mean over the rows: each program holds whole columns (1000 -> 1024) and 32 of them, so that
// warps still read 128 contiguous bytes. The result, not kept, is written straight into the
// returned 4096-element buffer.
// CHECK-LABEL: tile.kernel @column_mean_0_reduce_sum_div
// CHECK-SAME:    (%x: memref<1000x4096xf32>, %output0: memref<1x4096xf32>) grid [128] num_warps 32
// CHECK:         tile.load %x{{.*}} -> !tile.tile<1024x32xf32>
// CHECK:         tile.in_bounds {{.*}} within [1000, 4096] : !tile.tile<1024x32xi1>
// CHECK:         arith.constant 0.000000e+00 : f32
// CHECK:         %mean_sum = tile.reduce %{{.*}} axis 0 : !tile.tile<1024x32xf32> -> !tile.tile<1x32xf32>
// CHECK:         %mean = tile.map %mean_sum
// CHECK:         tile.store %mean, %output0[%{{.*}}, %{{.*}}] : !tile.tile<1x32xf32>, memref<1x4096xf32>
// CHECK-LABEL: func.func @column_mean
// CHECK-NEXT:    %[[OUT:.*]] = memref.alloc() {{.*}} : memref<4096xf32>
// CHECK-NEXT:    tile.launch @column_mean_0_reduce_sum_div(%x, %[[OUT]]) : memref<1000x4096xf32>, memref<4096xf32>
func.func @column_mean(%x: tensor<1000x4096xf32>) -> tensor<4096xf32> {
  %y = graph.reduce_mean %x axes [0] keepdims false : tensor<1000x4096xf32> to tensor<4096xf32>
  func.return %y : tensor<4096xf32>
}

// -----

// Rows of 100000 elements do not fit a program's registers (65536 at most): each program holds a
// 16384-element chunk of its row (32 warps) and every stage loops over the chunks. A reduction
// carries an accumulator tile that starts as the identity and takes the chunk's (masked) values
// lane by lane with the combiner; one tile.reduce after the loop finishes it. x is read three
// times: for the maximum, for the sum of exponentials, and by the loop that computes and stores y.
// CHECK-LABEL: tile.kernel @long_softmax_0_reduce_max_sub_exp_reduce_sum
// CHECK-SAME:    (%x: memref<2x100000xf32>, %output0: memref<2x100000xf32>) grid [2] num_warps 32
// CHECK:         %[[ROW:.*]] = tile.program_id 0
// CHECK:         %[[NINF:.*]] = arith.constant 0xff800000 : f32
// CHECK-NEXT:    %[[MAX_START:.*]] = tile.splat %[[NINF]] : f32 -> !tile.tile<1x16384xf32>
// CHECK-NEXT:    %[[LENGTH:.*]] = arith.constant 100000 : index
// CHECK-NEXT:    %[[CHUNK:.*]] = arith.constant 16384 : index
// CHECK-NEXT:    %[[MAX_PARTIALS:.*]] = scf.for %[[AT:.*]] = %[[ZERO:.*]] to %[[LENGTH]] step %[[CHUNK]] iter_args(%[[ACC:.*]] = %[[MAX_START]]) -> (!tile.tile<1x16384xf32>) {
// CHECK-NEXT:      %[[X:.*]] = tile.load %x[%[[ROW]], %[[AT]]] : memref<2x100000xf32> -> !tile.tile<1x16384xf32>
// CHECK-NEXT:      %[[INSIDE:.*]] = tile.in_bounds [%[[ZERO]], %[[AT]]] within [1, 100000] : !tile.tile<1x16384xi1>
// CHECK-NEXT:      %[[MASKED:.*]] = tile.map %[[X]], %[[INSIDE]]
// CHECK:             arith.select
// CHECK:           %[[NEXT:.*]] = tile.map %[[ACC]], %[[MASKED]] : !tile.tile<1x16384xf32>, !tile.tile<1x16384xf32> -> !tile.tile<1x16384xf32> {
// CHECK-NEXT:      ^bb0(%[[A:.*]]: f32, %[[B:.*]]: f32):
// CHECK-NEXT:        %[[M:.*]] = arith.maximumf %[[A]], %[[B]] : f32
// CHECK-NEXT:        tile.yield %[[M]] : f32
// CHECK-NEXT:      }
// CHECK-NEXT:      scf.yield %[[NEXT]] : !tile.tile<1x16384xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    %max = tile.reduce %[[MAX_PARTIALS]] axis 1 : !tile.tile<1x16384xf32> -> !tile.tile<1x1xf32>
// CHECK:         %[[SUM_START:.*]] = tile.splat %{{.*}} : f32 -> !tile.tile<1x16384xf32>
// CHECK:         %[[SUM_PARTIALS:.*]] = scf.for %[[AT2:.*]] = %[[ZERO]] to %{{.*}} step %{{.*}} iter_args(%[[ACC2:.*]] = %[[SUM_START]]) -> (!tile.tile<1x16384xf32>) {
// CHECK-NEXT:      %[[X2:.*]] = tile.load %x[%[[ROW]], %[[AT2]]]
// CHECK-NEXT:      %[[MAX2:.*]] = tile.broadcast %max : !tile.tile<1x1xf32> -> !tile.tile<1x16384xf32>
// CHECK:           math.exp
// CHECK:           arith.addf
// CHECK:           scf.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    %sum = tile.reduce %[[SUM_PARTIALS]] axis 1 : !tile.tile<1x16384xf32> -> !tile.tile<1x1xf32>
// CHECK:         %inverse_sum = tile.map %sum : !tile.tile<1x1xf32> -> !tile.tile<1x1xf32>
// CHECK:         scf.for %[[AT3:.*]] = %[[ZERO]] to %{{.*}} step %{{.*}} {
// CHECK-NEXT:      tile.load %x[%[[ROW]], %[[AT3]]]
// CHECK:           %y = tile.map
// CHECK:             math.exp
// CHECK:             arith.mulf
// CHECK:           tile.store %y, %output0[%[[ROW]], %[[AT3]]] : !tile.tile<1x16384xf32>, memref<2x100000xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    tile.return
func.func @long_softmax(%x: tensor<2x100000xf32>) -> tensor<2x100000xf32> {
  %y = graph.softmax %x axis 1 : tensor<2x100000xf32>
  func.return %y : tensor<2x100000xf32>
}

// -----

// Two reduced dimensions that do not merge (0 and 2), the inner one long: a program per kept
// index, one chunk loop per reduced dimension (nested, carrying the accumulator through both).
// The outer loop steps one row at a time, so only the inner dimension needs a mask.
// CHECK-LABEL: tile.kernel @two_long_axes_0_reduce_sum
// CHECK-SAME:    (%x: memref<3x2x70001xf32>, %output0: memref<1x2x1xf32>) grid [2] num_warps 32
// CHECK:         %[[THREE:.*]] = arith.constant 3 : index
// CHECK-NEXT:    %[[ONE:.*]] = arith.constant 1 : index
// CHECK:         %[[PLANE:.*]] = scf.for %[[I:.*]] = %{{.*}} to %[[THREE]] step %[[ONE]] iter_args(%[[OUTER:.*]] = %{{.*}}) -> (!tile.tile<1x1x16384xf32>) {
// CHECK-NEXT:      %[[LENGTH:.*]] = arith.constant 70001 : index
// CHECK-NEXT:      %[[CHUNK:.*]] = arith.constant 16384 : index
// CHECK-NEXT:      %[[ROW:.*]] = scf.for %[[J:.*]] = %{{.*}} to %[[LENGTH]] step %[[CHUNK]] iter_args(%[[INNER:.*]] = %[[OUTER]]) -> (!tile.tile<1x1x16384xf32>) {
// CHECK-NEXT:        tile.load %x[%[[I]], %{{.*}}, %[[J]]] : memref<3x2x70001xf32> -> !tile.tile<1x1x16384xf32>
// CHECK-NEXT:        tile.in_bounds [%{{.*}}, %{{.*}}, %[[J]]] within [1, 1, 70001]
// CHECK:             tile.map %[[INNER]]
// CHECK:             scf.yield
// CHECK-NEXT:      }
// CHECK-NEXT:      scf.yield %[[ROW]] : !tile.tile<1x1x16384xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[R0:.*]] = tile.reduce %[[PLANE]] axis 0
// CHECK-NEXT:    ^bb0
// CHECK:         %[[R2:.*]] = tile.reduce %[[R0]] axis 2 : !tile.tile<1x1x16384xf32> -> !tile.tile<1x1x1xf32>
// CHECK:         tile.store %[[R2]], %output0
func.func @two_long_axes(%x: tensor<3x2x70001xf32>) -> tensor<2xf32> {
  %y = graph.reduce_sum %x axes [0, 2] keepdims false : tensor<3x2x70001xf32> to tensor<2xf32>
  func.return %y : tensor<2xf32>
}

// -----

// A matmul is one kernel: a 2-d grid of 32x64 blocks (the smallest powers of two covering 17x33,
// at most 64x64), a K loop in steps of 16 carrying the f32 accumulator, masked loads of the A and
// B blocks, tile.dot, a masked store. Four warps: one thread per 16 outputs.
// CHECK-LABEL: tile.kernel @matmul_0_matmul(%a: memref<17x65xf32>, %b: memref<65x33xf32>, %output0: memref<17x33xf32>)
// CHECK-SAME:    grid [1, 1] num_warps 4 attributes {mlc.matmul_tile = array<i64: 32, 64, 16>} {
// CHECK:         %pm = tile.program_id 0
// CHECK:         %m = arith.muli %pm, %c32 : index
// CHECK:         %pn = tile.program_id 1
// CHECK:         %n = arith.muli %pn, %c64 : index
// CHECK:         %zeros = tile.splat %zero : f32 -> !tile.tile<32x64xf32>
// CHECK:         %acc = scf.for %k = %c0 to %c65 step %c16 iter_args(%partial = %zeros) -> (!tile.tile<32x64xf32>) {
// CHECK-NEXT:      %a_tile = tile.load %a[%m, %k] : memref<17x65xf32> -> !tile.tile<32x16xf32>
// CHECK-NEXT:      %b_tile = tile.load %b[%k, %n] : memref<65x33xf32> -> !tile.tile<16x64xf32>
// CHECK-NEXT:      %next = tile.dot %a_tile, %b_tile, %partial : !tile.tile<32x16xf32>, !tile.tile<16x64xf32> -> !tile.tile<32x64xf32>
// CHECK-NEXT:      scf.yield %next : !tile.tile<32x64xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    tile.store %acc, %output0[%m, %n] : !tile.tile<32x64xf32>, memref<17x33xf32>
// CHECK-LABEL: func.func @matmul
// CHECK-NEXT:    %[[C:.*]] = memref.alloc() {alignment = 256 : i64} : memref<17x33xf32>
// CHECK-NEXT:    tile.launch @matmul_0_matmul(%a, %b, %[[C]])
// BLOCK-LABEL: tile.kernel @matmul_0_matmul
// BLOCK-SAME:    grid [2, 3] num_warps 1 attributes {mlc.matmul_tile = array<i64: 16, 16, 8>}
// BLOCK:         tile.dot {{.*}} : !tile.tile<16x8xf32>, !tile.tile<8x16xf32> -> !tile.tile<16x16xf32>
func.func @matmul(%a: tensor<17x65xf32>, %b: tensor<65x33xf32>) -> tensor<17x33xf32> {
  %0 = graph.matmul %a, %b : (tensor<17x65xf32>, tensor<65x33xf32>) -> tensor<17x33xf32>
  func.return %0 : tensor<17x33xf32>
}

// -----

// A batch with a broadcast operand: the grid's first axis is the batch; B is read as 1x48x80 at
// batch index 0 (the host passes its 48x80 buffer). f16 operands accumulate in f32; the result is
// rounded to f16 once, by a map before the store.
// CHECK-LABEL: tile.kernel @batched_0_matmul(%a: memref<3x64x48xf16>, %b: memref<1x48x80xf16>, %output0: memref<3x64x80xf16>)
// CHECK-SAME:    grid [3, 1, 2] num_warps 8 attributes {mlc.matmul_tile = array<i64: 64, 64, 16>}
// CHECK:         %batch = tile.program_id 0
// CHECK:         %acc = scf.for %k = %c0 to %c48 step %c16 iter_args(%partial = %zeros) -> (!tile.tile<1x64x64xf32>) {
// CHECK-NEXT:      %a_tile = tile.load %a[%batch, %m, %k] : memref<3x64x48xf16> -> !tile.tile<1x64x16xf16>
// CHECK-NEXT:      %b_tile = tile.load %b[%c0, %k, %n] : memref<1x48x80xf16> -> !tile.tile<1x16x64xf16>
// CHECK-NEXT:      tile.dot %a_tile, %b_tile, %partial : !tile.tile<1x64x16xf16>, !tile.tile<1x16x64xf16> -> !tile.tile<1x64x64xf32>
// CHECK:         %result = tile.map %acc : !tile.tile<1x64x64xf32> -> !tile.tile<1x64x64xf16> {
// CHECK:           arith.truncf %{{.*}} : f32 to f16
// CHECK:         tile.store %result, %output0[%batch, %m, %n] : !tile.tile<1x64x64xf16>, memref<3x64x80xf16>
// CHECK-LABEL: func.func @batched
// CHECK:         tile.launch @batched_0_matmul(%a, %b, %{{.*}}) : memref<3x64x48xf16>, memref<48x80xf16>, memref<3x64x80xf16>
func.func @batched(%a: tensor<3x64x48xf16>, %b: tensor<48x80xf16>) -> tensor<3x64x80xf16> {
  %0 = graph.matmul %a, %b : (tensor<3x64x48xf16>, tensor<48x80xf16>) -> tensor<3x64x80xf16>
  func.return %0 : tensor<3x64x80xf16>
}

// -----

// The matmul reads the relu kernel's output; the bias add is its epilogue: the bias row is loaded
// at the block's columns and broadcast over its rows, added to the accumulator in the map after
// the K loop, and only the sum is stored. The K loop has one iteration here (K = BK = 16).
// CHECK-LABEL: tile.kernel @mlp_0_relu
// CHECK-LABEL: tile.kernel @mlp_1_matmul_add(%r: memref<8x16xf32>, %w: memref<16x32xf32>, %b: memref<1x32xf32>, %output0: memref<8x32xf32>)
// CHECK-SAME:    grid [1, 1] num_warps 1
// CHECK:         %acc = scf.for
// CHECK:           tile.dot
// CHECK:         %[[BIAS:.*]] = tile.load %b[%c0, %n] : memref<1x32xf32> -> !tile.tile<1x32xf32>
// CHECK-NEXT:    %[[ROWS:.*]] = tile.broadcast %[[BIAS]] : !tile.tile<1x32xf32> -> !tile.tile<8x32xf32>
// CHECK-NEXT:    %{{.*}} = tile.map %acc, %[[ROWS]] : !tile.tile<8x32xf32>, !tile.tile<8x32xf32> -> !tile.tile<8x32xf32> {
// CHECK-NEXT:    ^bb0(%[[P:.*]]: f32, %[[Q:.*]]: f32):
// CHECK-NEXT:      %[[S:.*]] = arith.addf %[[P]], %[[Q]] : f32
// CHECK-NEXT:      tile.yield %[[S]] : f32
// CHECK-NOT:   tile.kernel
// CHECK-LABEL: func.func @mlp
// CHECK:         tile.launch @mlp_0_relu(%x, %[[R:.*]]) :
// CHECK-NEXT:    %[[Y:.*]] = memref.alloc()
// CHECK-NEXT:    tile.launch @mlp_1_matmul_add(%[[R]], %w, %b, %[[Y]]) : memref<8x16xf32>, memref<16x32xf32>, memref<32xf32>, memref<8x32xf32>
// CHECK-NEXT:    func.return %[[Y]]
func.func @mlp(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>) -> tensor<8x32xf32> {
  %r = graph.relu %x : tensor<8x16xf32>
  %0 = graph.matmul %r, %w : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %1 = graph.add %0, %b : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  func.return %1 : tensor<8x32xf32>
}

// -----

// A returned product is stored, and the consumer reads it back (no epilogue).
// CHECK-LABEL: tile.kernel @returned_0_matmul
// CHECK:         tile.store %acc, %output0
// CHECK-LABEL: tile.kernel @returned_1_exp
// CHECK-LABEL: func.func @returned
func.func @returned(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>) {
  %0 = graph.matmul %a, %b : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %1 = graph.exp %0 : tensor<4x4xf32>
  func.return %0, %1 : tensor<4x4xf32>, tensor<4x4xf32>
}

// -----

// A residual block, x + relu(x) @ w: the relu and add groups both read x, but the add depends on
// the relu through the matmul, so they are not merged as siblings (that group would both feed and
// consume the matmul). The add becomes the matmul's epilogue.
// CHECK-LABEL: tile.kernel @residual_0_relu
// CHECK-LABEL: tile.kernel @residual_1_matmul_add(%r: memref<8x8xf32>, %w: memref<8x8xf32>, %x: memref<8x8xf32>, %output0: memref<8x8xf32>)
// CHECK-LABEL: func.func @residual
// CHECK:         tile.launch @residual_0_relu(%x, %[[R:.*]]) :
// CHECK:         tile.launch @residual_1_matmul_add(%[[R]], %w, %x, %{{.*}}) :
func.func @residual(%x: tensor<8x8xf32>, %w: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %r = graph.relu %x : tensor<8x8xf32>
  %y = graph.matmul %r, %w : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %z = graph.add %y, %x : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  func.return %z : tensor<8x8xf32>
}

// -----

// Large products take 128x128 blocks in steps of 16 when there are at least 128 of them.
// CHECK-LABEL: tile.kernel @large_0_matmul
// CHECK-SAME:    grid [16, 8] num_warps 8 attributes {mlc.matmul_tile = array<i64: 128, 128, 16>}
func.func @large(%a: tensor<2048x16xf32>, %b: tensor<16x1024xf32>) -> tensor<2048x1024xf32> {
  %0 = graph.matmul %a, %b : (tensor<2048x16xf32>, tensor<16x1024xf32>) -> tensor<2048x1024xf32>
  func.return %0 : tensor<2048x1024xf32>
}

// -----

// Functions without graph ops are left alone.
// CHECK-LABEL: func.func @host_only(%arg0: memref<4xf32>) -> memref<4xf32>
// CHECK-NEXT:    func.return %arg0
func.func @host_only(%arg0: memref<4xf32>) -> memref<4xf32> {
  func.return %arg0 : memref<4xf32>
}

// -----

// A matmul's precision is written on its tile.dot; convert-graph-to-tile{precision=...} gives one
// to the f32 matmuls that state none, never to bf16 ones (their products are exact in f32). A bf16
// matmul loads bf16 tiles, accumulates in f32 and rounds each output to bf16 once. A TF32 dot's
// block has at least 16 rows (one m16n8k8 tensor-core step), even for a matrix of 8.
// CHECK-LABEL: tile.kernel @choices_0_matmul
// CHECK:         tile.dot %a_tile, %b_tile, %partial {precision = "3xtf32"} : !tile.tile<16x16xf32>, !tile.tile<16x32xf32> -> !tile.tile<16x32xf32>
// CHECK-LABEL: tile.kernel @choices_1_matmul
// CHECK:         tile.dot %a_tile, %b_tile, %partial : !tile.tile<8x16xf32>, !tile.tile<16x32xf32> -> !tile.tile<8x32xf32>
// CHECK-LABEL: tile.kernel @choices_2_matmul(%c: memref<8x16xbf16>, %d: memref<16x32xbf16>, %output0: memref<8x32xbf16>)
// CHECK:         tile.dot %a_tile, %b_tile, %partial : !tile.tile<8x16xbf16>, !tile.tile<16x32xbf16> -> !tile.tile<8x32xf32>
// CHECK:         tile.map %acc : !tile.tile<8x32xf32> -> !tile.tile<8x32xbf16>
// CHECK:           arith.truncf %{{.*}} : f32 to bf16
// PRECISION-LABEL: tile.kernel @choices_0_matmul
// PRECISION:         tile.dot {{.*}} {precision = "3xtf32"}
// PRECISION-LABEL: tile.kernel @choices_1_matmul
// PRECISION:         tile.dot {{.*}} {precision = "tf32"}
// PRECISION-LABEL: tile.kernel @choices_2_matmul
// PRECISION:         tile.dot %a_tile, %b_tile, %partial : !tile.tile<8x16xbf16>
func.func @choices(%a: tensor<8x16xf32>, %b: tensor<16x32xf32>, %c: tensor<8x16xbf16>, %d: tensor<16x32xbf16>) -> (tensor<8x32xf32>, tensor<8x32xf32>, tensor<8x32xbf16>) {
  %0 = graph.matmul %a, %b {precision = "3xtf32"} : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %1 = graph.matmul %a, %b : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %2 = graph.matmul %c, %d : (tensor<8x16xbf16>, tensor<16x32xbf16>) -> tensor<8x32xbf16>
  func.return %0, %1, %2 : tensor<8x32xf32>, tensor<8x32xf32>, tensor<8x32xbf16>
}

// -----

// Integer pow: square-and-multiply over the exponent's bits (31 steps for i32, each a select of
// the product by the running square), then the truncated reciprocal for negative exponents.
// CHECK-LABEL: tile.kernel @integer_pow_0_pow
// CHECK:         tile.map
// CHECK-COUNT-31:  arith.select %{{.*}}, %{{.*}}, %{{.*}} : i32
// CHECK:           %[[NEGATIVE:.*]] = arith.cmpi slt, %{{.*}}, %{{.*}} : i32
// CHECK-NEXT:      arith.select %[[NEGATIVE]], %{{.*}}, %{{.*}} : i32
func.func @integer_pow(%x: tensor<4xi32>, %y: tensor<4xi32>) -> tensor<4xi32> {
  %0 = graph.pow %x, %y : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  func.return %0 : tensor<4xi32>
}
