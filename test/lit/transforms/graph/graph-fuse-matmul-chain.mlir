// Plain two-matmul chains (graph-fuse's opt-in matmul-chains): a two-layer MLP as one chain
// region (mlc.chain = "matmul"), its one tile kernel walking the hidden dimension with only the
// accumulator carried (no softmax), and nothing formed without the option.
// RUN: mlc-opt %s -p 'graph-decompose,graph-fuse{matmul-chains=true}' | filecheck %s
// RUN: mlc-opt %s -p 'graph-decompose,graph-fuse' | filecheck %s --check-prefix=DEFAULT
// RUN: mlc-opt %s -p 'graph-decompose,graph-fuse{matmul-chains=true},convert-graph-to-tile' | filecheck %s --check-prefix=TILE
// RUN: mlc-opt %s -p 'graph-decompose,graph-fuse{compute-model=gpu matmul-chains=true},convert-graph-to-tile,convert-tile-to-loop{tensor-cores=true}' | filecheck %s --check-prefix=TENSOR

// CHECK-LABEL: func.func @mlp
// CHECK:         graph.fusion chain "mlp_chain0_matmul"
// CHECK-SAME:      attributes {mlc.chain = "matmul", mlc.chain_plan = {order = "rows-outer"
// CHECK-NEXT:      graph.matmul
// CHECK-NEXT:      graph.add
// CHECK-NEXT:      graph.relu
// CHECK-NEXT:      %[[R:[a-z0-9_]+]] = graph.matmul
// CHECK-NEXT:      graph.yield %[[R]] : tensor<200x32xf16>

// DEFAULT-NOT:   graph.fusion chain
// DEFAULT-COUNT-2: graph.fusion matmul

// TILE:          tile.kernel @mlp_chain0_matmul(%x: memref<200x64xf16>, %w1: memref<64x300xf16>, %w2: memref<300x32xf16>, %b: memref<1x300xf16>, %o: memref<200x32xf16>)
// TILE-SAME:       mlc.chain = "matmul"
// TILE:            scf.for %n = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%acc = %acc0) -> (!tile.tile<{{.*}}x32xf32>)
// TILE:              %s = tile.dot
// TILE:              %t = tile.map %s, %{{.*}} : !tile.tile<128x16xf32>, !tile.tile<128x16xf16>, !tile.tile<128x16xi1>
// TILE-NOT:          tile.reduce
// TILE:              %t_narrow = tile.map %t
// TILE:              %new_acc = tile.dot %t_narrow, %v
// TILE:              scf.yield %new_acc
// TILE-NOT:        arith.divf
// TILE:            tile.store

// TENSOR:        loop.kernel @mlp_chain0_matmul
// TENSOR-SAME:     mlc.chain = "matmul"
// TENSOR:            loop.mma_sync m16n8k16
// TENSOR-NOT:        loop.all_reduce
// TENSOR:            loop.mma_sync m16n8k16
func.func @mlp(%x: tensor<200x64xf16>, %w1: tensor<64x300xf16>, %b: tensor<300xf16>, %w2: tensor<300x32xf16>) -> tensor<200x32xf16> {
  %h = graph.matmul %x, %w1 : (tensor<200x64xf16>, tensor<64x300xf16>) -> tensor<200x300xf16>
  %biased = graph.add %h, %b : (tensor<200x300xf16>, tensor<300xf16>) -> tensor<200x300xf16>
  %r = graph.relu %biased : tensor<200x300xf16>
  %o = graph.matmul %r, %w2 : (tensor<200x300xf16>, tensor<300x32xf16>) -> tensor<200x32xf16>
  func.return %o : tensor<200x32xf16>
}
