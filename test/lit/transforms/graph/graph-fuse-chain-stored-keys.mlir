// Attention whose Kt is a transpose of a stored K (the head split of PyTorch's multi-head
// attention, K as (S, B, H, d)): graph-fuse splits the transpose into one that keeps the head dim
// last (B, H, S, d) and a swap of the last two axes; both join the chain, whose kernel reads K in
// place: the first as rows of K viewed as [1, 1, S, B*H*d] (chain_operand_views.py: the block of
// head (b, h) at column b*H*d + h*d), the swap as a tile.transpose of its [BN, D] block (ldmatrix
// without .trans on tensor cores). A scores product marked mlc.fused_attention (the torch
// frontend's SDPA) gets fast_math in its plan; its blocks (64 rows, 64 keys, d 64) fit warpgroup
// products, so the plan asks for them (products = "wgmma"): with convert-tile-to-loop{wgmma=true}
// (sm_90) each product is one loop.wgmma per warpgroup with A from registers (Q, then P), B the
// stored K block read K-major (mlc.operand_major) and V's block (chain_wgmma.py).
// RUN: mlc-opt %s -p 'graph-fuse{compute-model=gpu}' | filecheck %s
// RUN: mlc-opt %s -p 'graph-fuse{compute-model=gpu},convert-graph-to-tile' | filecheck %s --check-prefix=TILE
// RUN: mlc-opt %s -p 'graph-fuse{compute-model=gpu},convert-graph-to-tile,convert-tile-to-loop{tensor-cores=true}' | filecheck %s --check-prefix=TENSOR
// RUN: mlc-opt %s -p 'graph-fuse{compute-model=gpu},convert-graph-to-tile,convert-tile-to-loop{tensor-cores=true wgmma=true}' | filecheck %s --check-prefix=WGMMA

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
// CHECK-NOT:     graph.fusion elementwise
// CHECK:         graph.fusion chain "stored_keys_chain0_attention" (%[[K:[a-z0-9_]+]] = %k : tensor<50x2x4x64xf16>, %{{.*}} = %q : tensor<2x4x40x64xf16>
// CHECK-SAME:      mlc.chain_plan = {{{.*}}fast_math, products = "wgmma"}
// CHECK-NEXT:      %[[HEADS:[a-z0-9_]+]] = graph.transpose %[[K]] perm [1, 2, 0, 3] : tensor<50x2x4x64xf16> to tensor<2x4x50x64xf16>
// CHECK-NEXT:      %[[KT:[a-z0-9_]+]] = graph.transpose %[[HEADS]] perm [0, 1, 3, 2] : tensor<2x4x50x64xf16> to tensor<2x4x64x50xf16>
// CHECK-NEXT:      graph.matmul %{{.*}}, %[[KT]] {mlc.fused_attention}

// TILE:      tile.kernel @stored_keys_chain0_attention(%q: memref<2x4x40x64xf16>, %k: memref<1x1x50x512xf16>, %v: memref<2x4x50x64xf16>
// TILE:        %[[BATCH:[a-z0-9_]+]] = arith.constant 256 : index
// TILE-NEXT:   %[[B:[a-z0-9_]+]] = arith.muli %{{.*}}, %[[BATCH]] : index
// TILE-NEXT:   %[[SUM:[a-z0-9_]+]] = arith.addi %{{.*}}, %[[B]] : index
// TILE-NEXT:   %[[HEAD:[a-z0-9_]+]] = arith.constant 64 : index
// TILE-NEXT:   %[[H:[a-z0-9_]+]] = arith.muli %{{.*}}, %[[HEAD]] : index
// TILE-NEXT:   %[[COLUMN:[a-z0-9_]+]] = arith.addi %[[SUM]], %[[H]] : index
// TILE-NEXT:   %[[BLOCK:[a-z0-9_]+]] = tile.load %k[%{{.*}}, %{{.*}}, %n, %[[COLUMN]]] : memref<1x1x50x512xf16> -> !tile.tile<1x1x64x64xf16>
// TILE-NEXT:   %[[KT:[a-z0-9_]+]] = tile.transpose %[[BLOCK]]
// TILE:        tile.dot %{{.*}}, %[[KT]], %zeros

// TENSOR:      loop.ldmatrix x4 %{{.*}} {mlc.operand = "rhs"} : memref<1x1x50x512xf16> -> vector<2xf16>
// TENSOR:      loop.ldmatrix x4 trans %v

// WGMMA:      loop.kernel @stored_keys_chain0_attention
// WGMMA-SAME:   mlc.warp_grid = array<i64: 4, 1>
// WGMMA-SAME:   mlc.wgmma = array<i64: 64, 64, 16>
// WGMMA-NOT:  loop.ldmatrix
// WGMMA:      scf.for %n
// WGMMA:      loop.wgmma m64n64k64 ({{(%[0-9]+, )+}}%{{[0-9]+}}), %k[{{.*}}, %n, {{.*}}], ({{.*}}) {mlc.operand_major = ["k", "k"]} : memref<1x1x50x512xf16>
// WGMMA-NEXT: %s{{.*}} = loop.wgmma_wait 0
// WGMMA:      math.exp2
// WGMMA:      loop.wgmma m64n64k64 ({{(%[0-9]+, )+}}%{{[0-9]+}}), %v[{{.*}}, %n, {{.*}}], ({{.*}}) : memref<2x4x50x64xf16>
// WGMMA-NEXT: %new_acc{{.*}} = loop.wgmma_wait 0
