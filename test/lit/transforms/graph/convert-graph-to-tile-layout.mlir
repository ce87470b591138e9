// RUN: mlc-opt %s --split-input-file -p 'graph-decompose{direct-layout-elements=0},graph-fuse,convert-graph-to-tile,canonicalize,cse' | filecheck %s
// RUN: mlc-opt %s --split-input-file -p 'graph-decompose{direct-layout-elements=0},graph-fuse,convert-graph-to-tile' | mlc-opt --split-input-file -p canonicalize,cse | filecheck %s

// Layout ops are index maps: a transpose feeding an add is read through its map, in the add's
// kernel (no copy): coordinates (tile.range), the source position of each element (a map of
// index arithmetic: the transpose swaps them), one gather, then the add.
// CHECK-LABEL: tile.kernel @transpose_add_0_transpose_add
// CHECK-SAME:    (%x: memref<8x4xf32>, %y: memref<4x8xf32>, %output0: memref<4x8xf32>)
// CHECK:         %[[Y:.*]] = tile.load %y
// CHECK-DAG:     %[[R0:.*]] = tile.range %{{.*}} axis 0 : !tile.tile<4x8xindex>
// CHECK-DAG:     %[[R1:.*]] = tile.range %{{.*}} axis 1 : !tile.tile<4x8xindex>
// CHECK:         %[[I0:.*]], %[[I1:.*]] = tile.map %[[R0]], %[[R1]]
// CHECK-NEXT:    ^bb0(%[[C0:.*]]: index, %[[C1:.*]]: index):
// CHECK-NEXT:      tile.yield %[[C1]], %[[C0]] : index, index
// CHECK:         %[[T:.*]] = tile.gather %x[%[[I0]], %[[I1]]] : memref<8x4xf32>
// CHECK:         tile.map %[[Y]], %[[T]]
// CHECK:           arith.addf
// CHECK-LABEL: func.func @transpose_add
// CHECK-COUNT-1: tile.launch
// CHECK-NEXT:    func.return
func.func @transpose_add(%x: tensor<8x4xf32>, %y: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %t = graph.transpose %x perm [1, 0] : tensor<8x4xf32> to tensor<4x8xf32>
  %s = graph.add %t, %y : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %s : tensor<4x8xf32>
}

// -----

// A negative step: x[9::-3] reads 9 - 3c.
// CHECK-LABEL: tile.kernel @reversed_0_slice
// CHECK:         tile.map
// CHECK-NEXT:    ^bb0(%[[C:.*]]: index):
// CHECK-NEXT:      %[[STEP:.*]] = arith.constant -3 : index
// CHECK-NEXT:      %[[SCALED:.*]] = arith.muli %[[C]], %[[STEP]] : index
// CHECK-NEXT:      %[[START:.*]] = arith.constant 9 : index
// CHECK-NEXT:      %[[AT:.*]] = arith.addi %[[SCALED]], %[[START]] : index
// CHECK-NEXT:      tile.yield %[[AT]] : index
// CHECK:         tile.gather %x
func.func @reversed(%x: tensor<10xf32>) -> tensor<4xf32> {
  %s = graph.slice %x starts [9] ends [-100] steps [-3] : tensor<10xf32> to tensor<4xf32>
  func.return %s : tensor<4xf32>
}

// -----

// A concatenation reads each operand where its range applies (-1, read as padding, elsewhere)
// and selects by the coordinate along the axis.
// CHECK-LABEL: tile.kernel @concat_0_concat
// CHECK:         tile.map
// CHECK:           arith.cmpi ult, %{{.*}}, %{{.*}} : index
// CHECK:           arith.select
// CHECK:         %[[X:.*]] = tile.gather %x
// CHECK:         %[[Y:.*]] = tile.gather %y
// CHECK:         tile.map %[[X]], %[[Y]]
// CHECK:           %[[FIRST:.*]] = arith.cmpi ult
// CHECK-NEXT:      arith.select %[[FIRST]]
func.func @concat(%x: tensor<2x3xf32>, %y: tensor<2x5xf32>) -> tensor<2x8xf32> {
  %c = graph.concat %x, %y axis 1 : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
  func.return %c : tensor<2x8xf32>
}

// -----

// Pool windows: graph-decompose pads with -inf and takes one strided slice per kernel offset;
// the padding folds into the gathers' out-of-bounds value, so each offset is one gather at
// 2 * c - 1 + offset (stride 2, pad 1), and the maximum is one map: one kernel.
// CHECK-LABEL: tile.kernel @max_pool_0_
// CHECK-COUNT-4: tile.gather %x[{{.*}}] padding 0xff800000 : f32
// CHECK:         tile.map
// CHECK-COUNT-3:   arith.maximumf
// CHECK-LABEL: func.func @max_pool
// CHECK-COUNT-1: tile.launch
// CHECK-NEXT:    func.return
func.func @max_pool(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32> {
  %p = graph.max_pool2d %x kernel [2, 2] strides [2, 2] pads [1, 1, 0, 0] : tensor<1x1x4x4xf32> to tensor<1x1x2x2xf32>
  func.return %p : tensor<1x1x2x2xf32>
}

// -----

// conv2d: the column matrix is one gather per element from x (the window's slices share it,
// the zero padding is its out-of-bounds value), the weights are transposed to K x O, the matmul
// kernel multiplies, and a last kernel transposes the product back to NCHW and adds the bias.
// CHECK-LABEL: tile.kernel @conv_0_
// CHECK-SAME:    (%x: memref<1x1x2x1x5x5xf32>, %output0: memref<1x1x5x5x2x9xf32>)
// CHECK:         tile.gather %x[{{.*}}] padding 0.000000e+00 : f32
// CHECK-NOT:     tile.gather
// CHECK:         tile.store
// CHECK:       tile.kernel @conv_1_reshape_transpose(%x: memref<3x18xf32>, %output0: memref<18x3xf32>) {{.*}} attributes {mlc.transpose_block = 32 : i64}
// CHECK:       tile.kernel @conv_2_matmul(%input0: memref<25x18xf32>, %input1: memref<18x3xf32>, %output0: memref<25x3xf32>)
// CHECK:         tile.dot
// CHECK:       tile.kernel @conv_3_reshape_transpose_reshape_add(%input0: memref<1x5x5x3xf32>, %b: memref<1x3x1x1xf32>, %output0: memref<1x3x5x5xf32>)
// CHECK:         tile.gather %input0
// CHECK:         arith.addf
// CHECK-LABEL: func.func @conv
// CHECK-COUNT-4: tile.launch
func.func @conv(%x: tensor<1x2x5x5xf32>, %w: tensor<3x2x3x3xf32>, %b: tensor<3xf32>) -> tensor<1x3x5x5xf32> {
  %c = graph.conv2d %x, %w, %b strides [1, 1] pads [1, 1, 1, 1] dilations [1, 1] group 1 : (tensor<1x2x5x5xf32>, tensor<3x2x3x3xf32>, tensor<3xf32>) -> tensor<1x3x5x5xf32>
  func.return %c : tensor<1x3x5x5xf32>
}

// -----

// A stride-1 convolution with 16 channels is an implicit GEMM (the RUN lines ask graph-decompose
// for the layout kernels that larger layers get). x goes NHWC and padded in one windowed
// shared-memory transpose: the (1, T, T) block of x viewed as (N, C, H*W) is gathered with its
// pixel index through the window map (padded pixel q = (q / Wp, q % Wp) reads (q / 7 - 1) * 5 +
// q % 7 - 1, index -1 outside the input: the padding), transposed and stored to the padded
// (N, Hp*Wp, C). The matmul kernel reads the padded input, flattened to (N*Hp*Wp, C) = 112x16, at the
// row of its block plus the shift of the K step's kernel offset (piece = k / C,
// (piece / 3) * Wp + piece % 3 with Wp = 7) and the channel k % C: no kernel writes the 112x144
// column matrix, and rows past the input read zeros (the tile load's bounds). The product goes
// back to NCHW by a second windowed transpose, which reads only the output's pixels of the
// padded grid (q / 5 * 7 + q % 5: a slice, no padding to select).
// CHECK-LABEL: tile.kernel @implicit_1_transpose_broadcast_broadcast_concat(%x: memref<2x16x30xf32>, %output0: memref<2x56x16xf32>)
// CHECK-SAME:    mlc.transpose_block = 64
// CHECK:         tile.map
// CHECK-DAG:       %[[WP:.*]] = arith.constant 7 : index
// CHECK-DAG:       %[[ROW:.*]] = arith.divui %{{.*}}, %[[WP]] : index
// CHECK-DAG:       %[[COLUMN:.*]] = arith.remui %{{.*}}, %[[WP]] : index
// CHECK:           %[[INSIDE:.*]] = arith.andi
// CHECK:           arith.select %[[INSIDE]]
// CHECK:         %[[GATHERED:.*]] = tile.gather %x
// CHECK-NEXT:    %[[SWAPPED:.*]] = tile.transpose %[[GATHERED]] : !tile.tile<1x64x64xf32> -> !tile.tile<1x64x64xf32>
// CHECK-NEXT:    tile.store %[[SWAPPED]], %output0
// CHECK:       tile.kernel @implicit_0_implicit_gemm_matmul(%input0: memref<112x16xf32>, %input1: memref<144x8xf32>, %output0: memref<112x8xf32>)
// CHECK-SAME:    mlc.implicit_gemm = array<i64: 0, 1, 2, 7, 8, 9, 14, 15, 16>
// CHECK-DAG:     %[[C16:.*]] = arith.constant 16 : index
// CHECK-DAG:     %[[C3:.*]] = arith.constant 3 : index
// CHECK-DAG:     %[[C7:.*]] = arith.constant 7 : index
// CHECK:         scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %[[C16]]
// CHECK-NEXT:      %[[PIECE:.*]] = arith.divui %[[K]], %[[C16]] : index
// CHECK-NEXT:      %[[CHANNEL:.*]] = arith.remui %[[K]], %[[C16]] : index
// CHECK-NEXT:      %[[KH:.*]] = arith.divui %[[PIECE]], %[[C3]] : index
// CHECK-NEXT:      %[[KW:.*]] = arith.remui %[[PIECE]], %[[C3]] : index
// CHECK-NEXT:      %[[DOWN:.*]] = arith.muli %[[KH]], %[[C7]] : index
// CHECK-NEXT:      %[[ROW:.*]] = arith.addi %[[M:.*]], %[[DOWN]] : index
// CHECK-NEXT:      %[[SHIFTED:.*]] = arith.addi %[[ROW]], %[[KW]] : index
// CHECK-NEXT:      tile.load %input0[%[[SHIFTED]], %[[CHANNEL]]] : memref<112x16xf32> -> !tile.tile<64x16xf32>
// CHECK-NEXT:      tile.load %input1[%[[K]], %{{.*}}] : memref<144x8xf32> -> !tile.tile<16x8xf32>
// CHECK-NEXT:      tile.dot
// CHECK:       tile.kernel @implicit_3_reshape_slice_transpose(%x: memref<2x56x8xf32>, %output0: memref<2x8x30xf32>)
// CHECK-SAME:    mlc.transpose_block = 32
// CHECK:         tile.map
// CHECK-NOT:       arith.select
// CHECK:         tile.yield
// CHECK:         tile.gather %x
// CHECK-NEXT:    tile.transpose
// CHECK-NEXT:    tile.store
// CHECK-LABEL: func.func @implicit
// CHECK-COUNT-4: tile.launch
func.func @implicit(%x: tensor<2x16x6x5xf32>, %w: tensor<8x16x3x3xf32>) -> tensor<2x8x6x5xf32> {
  %c = graph.conv2d %x, %w strides [1, 1] pads [1, 1, 1, 1] dilations [1, 1] group 1 : (tensor<2x16x6x5xf32>, tensor<8x16x3x3xf32>) -> tensor<2x8x6x5xf32>
  func.return %c : tensor<2x8x6x5xf32>
}

// -----

// On the GPU a lone transpose of the last two dimensions is a shared-memory transpose: the block
// of the source (rows of x: coalesced) is loaded, swapped by tile.transpose, stored (rows of the
// result: coalesced). Leading dimensions collapse into one grid axis; T = 64 for f32, cut to the
// matrix (here 32). On the CPU (target=cpu) it stays a gather.
// CHECK-LABEL: tile.kernel @matrix_transpose_0_transpose(%x: memref<6x20x30xf32>, %output0: memref<6x30x20xf32>) grid [6, 1, 1] num_warps 8 attributes {mlc.transpose_block = 32 : i64} {
// CHECK:         %[[T:.*]] = arith.constant 32 : index
// CHECK:         %[[B:.*]] = tile.program_id 0
// CHECK:         %[[I:.*]] = arith.muli %{{.*}}, %[[T]] : index
// CHECK:         %[[J:.*]] = arith.muli %{{.*}}, %[[T]] : index
// CHECK:         %[[TILE:.*]] = tile.load %x[%[[B]], %[[J]], %[[I]]] : memref<6x20x30xf32> -> !tile.tile<1x32x32xf32>
// CHECK-NEXT:    %[[SWAPPED:.*]] = tile.transpose %[[TILE]] : !tile.tile<1x32x32xf32> -> !tile.tile<1x32x32xf32>
// CHECK-NEXT:    tile.store %[[SWAPPED]], %output0[%[[B]], %[[I]], %[[J]]] : !tile.tile<1x32x32xf32>, memref<6x30x20xf32>
func.func @matrix_transpose(%x: tensor<2x3x20x30xf32>) -> tensor<2x3x30x20xf32> {
  %t = graph.transpose %x perm [0, 1, 3, 2] : tensor<2x3x20x30xf32> to tensor<2x3x30x20xf32>
  func.return %t : tensor<2x3x30x20xf32>
}

// -----

// A matmul's transposed rhs (the torch linear weight, N x K) is read in its stored layout: the
// K loop loads the weight's BN x BK block at (n, k) and transposes it as a tile; no kernel writes
// the transposed weight.
// CHECK-LABEL: tile.kernel @linear_0_transpose_matmul_add(%x: memref<64x96xf32>, %w: memref<128x96xf32>, %bias: memref<1x128xf32>, %output0: memref<64x128xf32>)
// CHECK-SAME:    mlc.operand_major = ["k", "k"]
// CHECK:         scf.for %[[K:.*]] = %{{.*}} iter_args
// CHECK-NEXT:      %[[A:.*]] = tile.load %x[%{{.*}}, %[[K]]] : memref<64x96xf32> -> !tile.tile<64x16xf32>
// CHECK-NEXT:      %[[S:.*]] = tile.load %w[%{{.*}}, %[[K]]] : memref<128x96xf32> -> !tile.tile<64x16xf32>
// CHECK-NEXT:      %[[B:.*]] = tile.transpose %[[S]] : !tile.tile<64x16xf32> -> !tile.tile<16x64xf32>
// CHECK-NEXT:      tile.dot %[[A]], %[[B]]
// CHECK-NOT:     tile.kernel
// CHECK:         func.func @linear
// CHECK-NEXT:      memref.alloc
// CHECK-NEXT:      tile.launch @linear_0_transpose_matmul_add
func.func @linear(%x: tensor<64x96xf32>, %w: tensor<128x96xf32>, %bias: tensor<128xf32>) -> tensor<64x128xf32> {
  %wt = graph.transpose %w perm [1, 0] : tensor<128x96xf32> to tensor<96x128xf32>
  %y = graph.matmul %x, %wt : (tensor<64x96xf32>, tensor<96x128xf32>) -> tensor<64x128xf32>
  %z = graph.add %y, %bias : (tensor<64x128xf32>, tensor<128xf32>) -> tensor<64x128xf32>
  func.return %z : tensor<64x128xf32>
}
