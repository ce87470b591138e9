// graph-fuse{store-layouts=true} (the GPU pipeline's): an implicit GEMM's kernel also takes the
// layout chain that alone reads its product (reshape to the padded grid, slice to the output
// pixels, transpose to NCHW), and convert-graph-to-tile stores its block through that chain's
// inverse maps with one tile.scatter: no layout kernel after the product.
// RUN: mlc-opt %s --split-input-file -p 'graph-decompose,graph-fuse{store-layouts=true}' | filecheck %s --check-prefix=FUSE
// RUN: mlc-opt %s --split-input-file -p 'graph-decompose,graph-fuse{store-layouts=true},convert-graph-to-tile,canonicalize,cse' | filecheck %s --check-prefix=TILE
// Without the option the chain is a kernel of its own (the CPU pipeline).
// RUN: mlc-opt %s --split-input-file -p 'graph-decompose,graph-fuse' | filecheck %s --check-prefix=CPU

// FUSE-LABEL: func.func @implicit
// FUSE:         %r = graph.fusion matmul "implicit_0_implicit_gemm_matmul"
// FUSE-SAME:      -> tensor<2x8x6x5xf32> attributes {mlc.implicit_gemm = array<i64: 0, 1, 2, 7, 8, 9, 14, 15, 16>}
// FUSE:           graph.matmul
// FUSE-NEXT:      graph.reshape %{{.*}} : tensor<112x8xf32> to tensor<2x8x7x8xf32>
// FUSE-NEXT:      graph.slice %{{.*}} starts [0, 0, 0, 0] ends [2, 6, 5, 8] steps [1, 1, 1, 1]
// FUSE-NEXT:      %r_1 = graph.transpose %{{.*}} perm [0, 3, 1, 2] : tensor<2x6x5x8xf32> to tensor<2x8x6x5xf32>
// FUSE-NEXT:      graph.yield %r_1 : tensor<2x8x6x5xf32>
// FUSE-NOT:     graph.fusion
// FUSE:         func.return %r

// The row r of the padded grid (2 images of 8x7 pixels) is pixel (r / 56, r / 7 % 8, r % 7):
// rows and columns past the output's 6x5 get -1, the channel is the column.
// TILE-LABEL: tile.kernel @implicit_0_implicit_gemm_matmul(%input0: memref<112x16xf32>, %input1: memref<144x8xf32>, %output0: memref<2x8x6x5xf32>)
// TILE:         %[[ROWS:.*]] = tile.range %m axis 0 : !tile.tile<64x1xindex>
// TILE-NEXT:    %[[COLUMNS:.*]] = tile.range %n axis 1 : !tile.tile<1x8xindex>
// TILE-NEXT:    %[[CHANNEL:.*]] = tile.broadcast %[[COLUMNS]] : !tile.tile<1x8xindex> -> !tile.tile<64x8xindex>
// TILE-NEXT:    %[[IMAGE:.*]], %[[Y:.*]], %[[X:.*]] = tile.map %[[ROWS]] : !tile.tile<64x1xindex> -> !tile.tile<64x1xindex>, !tile.tile<64x1xindex>, !tile.tile<64x1xindex> {
// TILE:           arith.constant 56 : index
// TILE-NEXT:      arith.divui
// TILE:           %[[GRID_Y:.*]] = arith.remui %{{.*}}, %c8
// TILE-NEXT:      %[[SIX:.*]] = arith.constant 6 : index
// TILE-NEXT:      %[[IN_Y:.*]] = arith.cmpi ult, %[[GRID_Y]], %[[SIX]] : index
// TILE-NEXT:      %[[DROP:.*]] = arith.constant -1 : index
// TILE-NEXT:      arith.select %[[IN_Y]], %[[GRID_Y]], %[[DROP]] : index
// TILE-NEXT:      %[[GRID_X:.*]] = arith.remui %{{.*}}, %c7
// TILE:           arith.cmpi ult, %[[GRID_X]]
// TILE:         tile.scatter %acc, %output0[%{{.*}}, %[[CHANNEL]], %{{.*}}, %{{.*}}] : !tile.tile<64x8xf32>, memref<2x8x6x5xf32>
// TILE-NEXT:    tile.return
// TILE-LABEL: func.func @implicit
// TILE-COUNT-3: tile.launch
// TILE-NOT:     tile.launch
// TILE:         func.return

// CPU-LABEL: func.func @implicit
// CPU:         graph.fusion elementwise "implicit_3_reshape_slice_transpose"
func.func @implicit(%x: tensor<2x16x6x5xf32>, %w: tensor<8x16x3x3xf32>) -> tensor<2x8x6x5xf32> {
  %r = graph.conv2d %x, %w strides [1, 1] pads [1, 1, 1, 1] dilations [1, 1] group 1 : (tensor<2x16x6x5xf32>, tensor<8x16x3x3xf32>) -> tensor<2x8x6x5xf32>
  func.return %r : tensor<2x8x6x5xf32>
}

// -----

// A product read by something else too (here: returned) is stored as it is; the chain stays a kernel.
// FUSE-LABEL: func.func @read_twice
// FUSE:         graph.fusion matmul "read_twice_0_implicit_gemm_matmul"
// FUSE-SAME:      -> tensor<42x8xf32>
// FUSE:         graph.fusion elementwise "read_twice_{{[0-9]+}}_reshape_slice
func.func @read_twice(%x: tensor<1x8x5x4xf32>, %w: tensor<8x8x3x3xf32>) -> (tensor<1x8x5x4xf32>, tensor<42x8xf32>) {
  %zero = graph.constant dense<0.0> : tensor<f32>
  %t = graph.transpose %x perm [0, 2, 3, 1] : tensor<1x8x5x4xf32> to tensor<1x5x4x8xf32>
  %bh = graph.broadcast %zero : tensor<f32> to tensor<1x1x4x8xf32>
  %ph = graph.concat %bh, %t, %bh axis 1 : (tensor<1x1x4x8xf32>, tensor<1x5x4x8xf32>, tensor<1x1x4x8xf32>) -> tensor<1x7x4x8xf32>
  %bw = graph.broadcast %zero : tensor<f32> to tensor<1x7x1x8xf32>
  %p = graph.concat %bw, %ph, %bw axis 2 : (tensor<1x7x1x8xf32>, tensor<1x7x4x8xf32>, tensor<1x7x1x8xf32>) -> tensor<1x7x6x8xf32>
  %flat = graph.reshape %p : tensor<1x7x6x8xf32> to tensor<42x8xf32>
  %tail = graph.broadcast %zero : tensor<f32> to tensor<14x8xf32>
  %rows = graph.concat %flat, %tail axis 0 : (tensor<42x8xf32>, tensor<14x8xf32>) -> tensor<56x8xf32>
  %s0 = graph.slice %rows starts [0, 0] ends [42, 8] steps [1, 1] : tensor<56x8xf32> to tensor<42x8xf32>
  %s1 = graph.slice %rows starts [1, 0] ends [43, 8] steps [1, 1] : tensor<56x8xf32> to tensor<42x8xf32>
  %s2 = graph.slice %rows starts [2, 0] ends [44, 8] steps [1, 1] : tensor<56x8xf32> to tensor<42x8xf32>
  %s3 = graph.slice %rows starts [6, 0] ends [48, 8] steps [1, 1] : tensor<56x8xf32> to tensor<42x8xf32>
  %s4 = graph.slice %rows starts [7, 0] ends [49, 8] steps [1, 1] : tensor<56x8xf32> to tensor<42x8xf32>
  %s5 = graph.slice %rows starts [8, 0] ends [50, 8] steps [1, 1] : tensor<56x8xf32> to tensor<42x8xf32>
  %s6 = graph.slice %rows starts [12, 0] ends [54, 8] steps [1, 1] : tensor<56x8xf32> to tensor<42x8xf32>
  %s7 = graph.slice %rows starts [13, 0] ends [55, 8] steps [1, 1] : tensor<56x8xf32> to tensor<42x8xf32>
  %s8 = graph.slice %rows starts [14, 0] ends [56, 8] steps [1, 1] : tensor<56x8xf32> to tensor<42x8xf32>
  %a = graph.concat %s0, %s1, %s2, %s3, %s4, %s5, %s6, %s7, %s8 axis 1 : (tensor<42x8xf32>, tensor<42x8xf32>, tensor<42x8xf32>, tensor<42x8xf32>, tensor<42x8xf32>, tensor<42x8xf32>, tensor<42x8xf32>, tensor<42x8xf32>, tensor<42x8xf32>) -> tensor<42x72xf32>
  %wt = graph.transpose %w perm [2, 3, 1, 0] : tensor<8x8x3x3xf32> to tensor<3x3x8x8xf32>
  %b = graph.reshape %wt : tensor<3x3x8x8xf32> to tensor<72x8xf32>
  %y = graph.matmul %a, %b : (tensor<42x72xf32>, tensor<72x8xf32>) -> tensor<42x8xf32>
  %grid = graph.reshape %y : tensor<42x8xf32> to tensor<1x7x6x8xf32>
  %s = graph.slice %grid starts [0, 0, 0, 0] ends [1, 5, 4, 8] steps [1, 1, 1, 1] : tensor<1x7x6x8xf32> to tensor<1x5x4x8xf32>
  %o = graph.transpose %s perm [0, 3, 1, 2] : tensor<1x5x4x8xf32> to tensor<1x8x5x4xf32>
  func.return %o, %y : tensor<1x8x5x4xf32>, tensor<42x8xf32>
}
