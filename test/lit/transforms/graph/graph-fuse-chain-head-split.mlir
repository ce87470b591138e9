// Multi-head self-attention after its in-projection, as PyTorch's slow path writes it: the
// projection P [S*B, 3E] viewed as (S, B, 3H, d), q, k and v sliced and transposed to (B, H, S, d),
// O transposed back to (S, B, H, d) for the out-projection. graph-fuse puts the head split and
// O's transpose into the chain region (analysis/chain_operand_views.py): the kernel reads q, k and
// v as [BM or BN, d] blocks of P viewed as [1, 1, S, B*3E] (head (b, h) at column b*3E + h*d, + E
// for k, + 2E for v) and writes O's blocks into the (S, B, H, d) result viewed as [1, 1, S, B*E]:
// one kernel, no gather of q, k, v and no transpose of O.
// RUN: mlc-opt %s -p 'graph-fuse{compute-model=gpu}' | filecheck %s
// RUN: mlc-opt %s -p 'graph-fuse{compute-model=gpu},convert-graph-to-tile' | filecheck %s --check-prefix=TILE

func.func @head_split(%p: tensor<80x384xf16>) -> tensor<80x128xf16> {
  %split = graph.reshape %p : tensor<80x384xf16> to tensor<40x2x6x64xf16>
  %q_part = graph.slice %split starts [0, 0, 0, 0] ends [40, 2, 2, 64] steps [1, 1, 1, 1] : tensor<40x2x6x64xf16> to tensor<40x2x2x64xf16>
  %q = graph.transpose %q_part perm [1, 2, 0, 3] : tensor<40x2x2x64xf16> to tensor<2x2x40x64xf16>
  %k_part = graph.slice %split starts [0, 0, 2, 0] ends [40, 2, 4, 64] steps [1, 1, 1, 1] : tensor<40x2x6x64xf16> to tensor<40x2x2x64xf16>
  %k = graph.transpose %k_part perm [1, 2, 3, 0] : tensor<40x2x2x64xf16> to tensor<2x2x64x40xf16>
  %v_part = graph.slice %split starts [0, 0, 4, 0] ends [40, 2, 6, 64] steps [1, 1, 1, 1] : tensor<40x2x6x64xf16> to tensor<40x2x2x64xf16>
  %v = graph.transpose %v_part perm [1, 2, 0, 3] : tensor<40x2x2x64xf16> to tensor<2x2x40x64xf16>
  %s = graph.matmul %q, %k : (tensor<2x2x40x64xf16>, tensor<2x2x64x40xf16>) -> tensor<2x2x40x40xf16>
  %scale = graph.constant dense<0.125> : tensor<f16>
  %scaled = graph.mul %s, %scale : (tensor<2x2x40x40xf16>, tensor<f16>) -> tensor<2x2x40x40xf16>
  %probabilities = graph.softmax %scaled axis -1 : tensor<2x2x40x40xf16>
  %o = graph.matmul %probabilities, %v : (tensor<2x2x40x40xf16>, tensor<2x2x40x64xf16>) -> tensor<2x2x40x64xf16>
  %o_rows = graph.transpose %o perm [2, 0, 1, 3] : tensor<2x2x40x64xf16> to tensor<40x2x2x64xf16>
  %merged = graph.reshape %o_rows : tensor<40x2x2x64xf16> to tensor<80x128xf16>
  func.return %merged : tensor<80x128xf16>
}


// CHECK-LABEL: func.func @head_split
// CHECK-NOT:     graph.fusion elementwise
// CHECK:         %[[O:[a-z0-9_]+]] = graph.fusion chain "head_split_chain0_attention" (%[[P:[a-z0-9_]+]] = %p : tensor<80x384xf16>, %{{.*}} = %scale : tensor<f16>) -> tensor<40x2x2x64xf16>
// CHECK-NEXT:      %split = graph.reshape %[[P]] : tensor<80x384xf16> to tensor<40x2x6x64xf16>
// CHECK-NEXT:      %q_part = graph.slice %split starts [0, 0, 0, 0]
// CHECK-NEXT:      %q = graph.transpose %q_part perm [1, 2, 0, 3]
// CHECK:           %o = graph.matmul %probabilities, %v
// CHECK-NEXT:      %[[ROWS:[a-z0-9_]+]] = graph.transpose %o perm [2, 0, 1, 3] : tensor<2x2x40x64xf16> to tensor<40x2x2x64xf16>
// CHECK-NEXT:      graph.yield %[[ROWS]] : tensor<40x2x2x64xf16>
// CHECK:         graph.reshape %[[O]] : tensor<40x2x2x64xf16> to tensor<80x128xf16>
// CHECK-NOT:     graph.fusion

// TILE:      tile.kernel @head_split_chain0_attention(%{{[a-z0-9_]+}}: memref<1x1x40x768xf16>, %{{[a-z0-9_]+}}: memref<1x1x40x768xf16>, %{{[a-z0-9_]+}}: memref<1x1x40x768xf16>, %o_rows: memref<1x1x40x256xf16>) grid [4, 1]
// TILE:        %q = tile.load %{{.*}} : memref<1x1x40x768xf16> -> !tile.tile<1x1x64x64xf16>
// TILE:        %k = tile.load %{{.*}}[%{{.*}}, %{{.*}}, %n, %{{.*}}] : memref<1x1x40x768xf16> -> !tile.tile<1x1x64x64xf16>
// TILE:        %v = tile.load %{{.*}}[%{{.*}}, %{{.*}}, %n, %{{.*}}] : memref<1x1x40x768xf16> -> !tile.tile<1x1x64x64xf16>
// TILE:        tile.store %o, %o_rows[%{{.*}}, %{{.*}}, %m, %{{.*}}] : !tile.tile<1x1x64x64xf16>, memref<1x1x40x256xf16>
// TILE-NOT:  tile.kernel
// TILE:      tile.launch @head_split_chain0_attention(%p, %p, %p, %{{.*}}) : memref<80x384xf16>, memref<80x384xf16>, memref<80x384xf16>, memref<80x128xf16>
