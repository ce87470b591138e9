// Attention whose Kt is a transpose of a stored K (the head split of PyTorch's multi-head
// attention, K as (S, B, H, d)): graph-fuse splits the transpose into a gather that keeps the head
// dim last (B, H, S, d) and a swap of the last two axes that joins the chain, whose kernel reads K
// in place (a tile.transpose of its [BN, D] block; ldmatrix without .trans on tensor cores). A
// scores product marked mlc.fused_attention (the torch frontend's SDPA) gets fast_math in its plan.
// RUN: mlc-opt %s -p 'graph-fuse{compute-model=gpu}' | filecheck %s
// RUN: mlc-opt %s -p 'graph-fuse{compute-model=gpu},convert-graph-to-tile' | filecheck %s --check-prefix=TILE
// RUN: mlc-opt %s -p 'graph-fuse{compute-model=gpu},convert-graph-to-tile,convert-tile-to-loop{tensor-cores=true}' | filecheck %s --check-prefix=TENSOR

func.func @stored_keys(%q: tensor<2x4x40x64xf16>, %k: tensor<50x2x4x64xf16>, %v: tensor<2x4x50x64xf16>) -> tensor<2x4x40x64xf16> {
  %kt = graph.transpose %k perm [1, 2, 3, 0] : tensor<50x2x4x64xf16> to tensor<2x4x64x50xf16>
  %s = graph.matmul %q, %kt {mlc.fused_attention} : (tensor<2x4x40x64xf16>, tensor<2x4x64x50xf16>) -> tensor<2x4x40x50xf16>
  %c = graph.constant dense<0.125> : tensor<f16>
  %t = graph.mul %s, %c : (tensor<2x4x40x50xf16>, tensor<f16>) -> tensor<2x4x40x50xf16>
  %p = graph.softmax %t axis -1 : tensor<2x4x40x50xf16>
  %o = graph.matmul %p, %v : (tensor<2x4x40x50xf16>, tensor<2x4x50x64xf16>) -> tensor<2x4x40x64xf16>
  func.return %o : tensor<2x4x40x64xf16>
}

// CHECK-LABEL: func.func @stored_keys
// CHECK:         %[[K:[a-z0-9_]+]] = graph.fusion elementwise "stored_keys_1_transpose" (%{{.*}} = %k : tensor<50x2x4x64xf16>) -> tensor<2x4x50x64xf16>
// CHECK-NEXT:      graph.transpose %{{.*}} perm [1, 2, 0, 3] : tensor<50x2x4x64xf16> to tensor<2x4x50x64xf16>
// CHECK:         graph.fusion chain "stored_keys_chain0_attention" (%{{.*}} = %[[K]] : tensor<2x4x50x64xf16>, %{{.*}} = %q : tensor<2x4x40x64xf16>
// CHECK-SAME:      mlc.chain_plan = {{{.*}}fast_math}
// CHECK-NEXT:      %[[KT:[a-z0-9_]+]] = graph.transpose %{{.*}} perm [0, 1, 3, 2] : tensor<2x4x50x64xf16> to tensor<2x4x64x50xf16>
// CHECK-NEXT:      graph.matmul %{{.*}}, %[[KT]] {mlc.fused_attention}

// TILE:      tile.kernel @stored_keys_chain0_attention(%q: memref<8x40x64xf16>, %[[K:[a-z0-9_]+]]: memref<8x50x64xf16>, %v: memref<8x50x64xf16>
// TILE:        %[[BLOCK:[a-z0-9_]+]] = tile.load %[[K]][%batch, %n, %{{.*}}] : memref<8x50x64xf16> -> !tile.tile<1x64x64xf16>
// TILE-NEXT:   %[[KT:[a-z0-9_]+]] = tile.transpose %[[BLOCK]]
// TILE:        tile.dot %{{.*}}, %[[KT]], %zeros

// TENSOR:      loop.ldmatrix x4 %{{.*}} {mlc.operand = "rhs"} : memref<8x50x64xf16> -> vector<2xf16>
// TENSOR:      loop.ldmatrix x4 trans %v
