// The NaN guard of PyTorch's ONNX export of SDPA with a boolean mask (opset 17:
// Where(IsNaN(P), 0, P) after the softmax) is part of the attention chain (gemm_chain.py), and
// the chain kernel writes 0 for the rows whose running sum is 0 (every key masked) or NaN, as the
// guarded softmax does: the quotient replaced where `sum ueq 0` (with fast math: where the
// reciprocal of the sum `ueq +inf`). Core ATen's guard (torch.compile's SDPA:
// where(not(any(not(T == -inf))), 0, P), logical_not a where, any a max over a cast) joins the
// chain too, its rows (every score -inf) those whose sum is 0: `oeq`. An unguarded chain keeps
// 0/0 = NaN (no select).
// RUN: mlc-opt %s -p graph-decompose,graph-fuse | filecheck %s
// RUN: mlc-opt %s -p graph-decompose,graph-fuse,convert-graph-to-tile | filecheck %s --check-prefix=TILE
// RUN: mlc-opt %s -p 'graph-decompose,graph-fuse{fast-math=true},convert-graph-to-tile' | filecheck %s --check-prefix=FAST

// CHECK-LABEL: func.func @guarded
// CHECK:         %[[O:[a-z0-9_]+]] = graph.fusion chain "guarded_chain0_attention"
// CHECK-SAME:      mlc.chain = "attention"
// CHECK:           graph.reduce_sum
// CHECK:           %[[P:[a-z0-9_]+]] = graph.mul %exp, %inverse_sum
// CHECK-NEXT:      %[[NAN:[a-z0-9_]+]] = graph.cmp ne, %[[P]], %[[P]]
// CHECK-NEXT:      %[[G:[a-z0-9_]+]] = graph.where %[[NAN]], %{{.*}}, %[[P]]
// CHECK-NEXT:      %[[R:[a-z0-9_]+]] = graph.matmul %[[G]], %v_1
// CHECK-NEXT:      graph.yield %[[R]]
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[O]]
// CHECK-LABEL: func.func @unguarded
// CHECK:         graph.fusion chain "unguarded_chain0_attention"
// CHECK-LABEL: func.func @aten_guarded
// CHECK:         %[[O:[a-z0-9_]+]] = graph.fusion chain "aten_guarded_chain0_attention"
// CHECK:           %[[MASKED:[a-z0-9_]+]] = graph.where %keep_1
// CHECK:           %[[P:[a-z0-9_]+]] = graph.mul %exp, %inverse_sum
// CHECK-NEXT:      %[[IS:[a-z0-9_]+]] = graph.cmp eq, %[[MASKED]]
// CHECK:           %[[ANY:[a-z0-9_]+]] = graph.reduce_max
// CHECK:           %[[FULLY:[a-z0-9_]+]] = graph.where %{{.*}}, %false_1, %true_1 : (tensor<2x40x1xi1>
// CHECK-NEXT:      %[[G:[a-z0-9_]+]] = graph.where %[[FULLY]], %{{.*}}, %[[P]]
// CHECK-NEXT:      %[[R:[a-z0-9_]+]] = graph.matmul %[[G]], %v_1
// CHECK-NEXT:      graph.yield %[[R]]
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[O]]

// TILE-LABEL:   tile.kernel @guarded_chain0_attention(%q: memref<2x40x16xf32>, %kt: memref<2x16x50xf32>, %v: memref<2x50x8xf32>, %keep: memref<2x1x50xi1>, %o: memref<2x40x8xf32>)
// TILE:           scf.for %n =
// TILE:           %o_1 = tile.map %{{.*}}, %{{.*}} : !tile.tile<1x64x8xf32>, !tile.tile<1x64x8xf32> -> !tile.tile<1x64x8xf32> {
// TILE-NEXT:      ^bb0(%[[ACC:[0-9]+]]: f32, %[[SUM:[0-9]+]]: f32):
// TILE-NEXT:        %[[Q:[0-9]+]] = arith.divf %[[ACC]], %[[SUM]] : f32
// TILE-NEXT:        %[[ZERO:[0-9]+]] = arith.constant 0.000000e+00 : f32
// TILE-NEXT:        %[[EMPTY:[0-9]+]] = arith.cmpf ueq, %[[SUM]], %[[ZERO]] : f32
// TILE-NEXT:        %[[Z:[0-9]+]] = arith.constant 0.000000e+00 : f32
// TILE-NEXT:        %[[R:[0-9]+]] = arith.select %[[EMPTY]], %[[Z]], %[[Q]] : f32
// TILE-NEXT:        tile.yield %[[R]] : f32
// TILE-LABEL:   tile.kernel @unguarded_chain0_attention
// TILE:           arith.divf
// TILE-NOT:       arith.select
// TILE:           tile.store
// TILE-LABEL:   tile.kernel @aten_guarded_chain0_attention(%q: memref<2x40x16xf32>, %kt: memref<2x16x50xf32>, %v: memref<2x50x8xf32>, %keep: memref<2x1x50xi1>, %o: memref<2x40x8xf32>)
// TILE:           %o_1 = tile.map
// TILE-NEXT:      ^bb0(%[[ACC:[0-9]+]]: f32, %[[SUM:[0-9]+]]: f32):
// TILE-NEXT:        %[[Q:[0-9]+]] = arith.divf %[[ACC]], %[[SUM]] : f32
// TILE-NEXT:        %[[ZERO:[0-9]+]] = arith.constant 0.000000e+00 : f32
// TILE-NEXT:        %[[EMPTY:[0-9]+]] = arith.cmpf oeq, %[[SUM]], %[[ZERO]] : f32
// TILE-NEXT:        %[[Z:[0-9]+]] = arith.constant 0.000000e+00 : f32
// TILE-NEXT:        arith.select %[[EMPTY]], %[[Z]], %[[Q]] : f32

// FAST-LABEL:   tile.kernel @guarded_chain0_attention
// FAST:           %[[INV:[a-z_0-9]+]] = tile.broadcast %inverse_sum
// FAST:           %o_1 = tile.map %{{.*}}, %[[INV]]
// FAST-NEXT:      ^bb0(%[[ACC:[0-9]+]]: f32, %[[ONE_OVER:[0-9]+]]: f32):
// FAST-NEXT:        %[[Q:[0-9]+]] = arith.mulf %[[ACC]], %[[ONE_OVER]] : f32
// FAST-NEXT:        %[[INF:[0-9]+]] = arith.constant 0x7f800000 : f32
// FAST-NEXT:        %[[EMPTY:[0-9]+]] = arith.cmpf ueq, %[[ONE_OVER]], %[[INF]] : f32
// FAST-NEXT:        %[[Z:[0-9]+]] = arith.constant 0.000000e+00 : f32
// FAST-NEXT:        arith.select %[[EMPTY]], %[[Z]], %[[Q]] : f32

func.func @guarded(%q: tensor<2x40x16xf32>, %kt: tensor<2x16x50xf32>, %v: tensor<2x50x8xf32>, %keep: tensor<2x1x50xi1>) -> tensor<2x40x8xf32> {
  %s = graph.matmul %q, %kt : (tensor<2x40x16xf32>, tensor<2x16x50xf32>) -> tensor<2x40x50xf32>
  %minus_infinity = graph.constant dense<0xFF800000> : tensor<f32>
  %masked = graph.where %keep, %s, %minus_infinity : (tensor<2x1x50xi1>, tensor<2x40x50xf32>, tensor<f32>) -> tensor<2x40x50xf32>
  %unguarded = graph.softmax %masked axis -1 : tensor<2x40x50xf32>
  %nan = graph.cmp ne, %unguarded, %unguarded : (tensor<2x40x50xf32>, tensor<2x40x50xf32>) -> tensor<2x40x50xi1>
  %zero = graph.constant dense<0.0> : tensor<f32>
  %p = graph.where %nan, %zero, %unguarded : (tensor<2x40x50xi1>, tensor<f32>, tensor<2x40x50xf32>) -> tensor<2x40x50xf32>
  %o = graph.matmul %p, %v : (tensor<2x40x50xf32>, tensor<2x50x8xf32>) -> tensor<2x40x8xf32>
  func.return %o : tensor<2x40x8xf32>
}

func.func @unguarded(%q: tensor<2x40x16xf32>, %kt: tensor<2x16x50xf32>, %v: tensor<2x50x8xf32>, %keep: tensor<2x1x50xi1>) -> tensor<2x40x8xf32> {
  %s = graph.matmul %q, %kt : (tensor<2x40x16xf32>, tensor<2x16x50xf32>) -> tensor<2x40x50xf32>
  %minus_infinity = graph.constant dense<0xFF800000> : tensor<f32>
  %masked = graph.where %keep, %s, %minus_infinity : (tensor<2x1x50xi1>, tensor<2x40x50xf32>, tensor<f32>) -> tensor<2x40x50xf32>
  %unguarded = graph.softmax %masked axis -1 : tensor<2x40x50xf32>
  %o = graph.matmul %unguarded, %v : (tensor<2x40x50xf32>, tensor<2x50x8xf32>) -> tensor<2x40x8xf32>
  func.return %o : tensor<2x40x8xf32>
}

func.func @aten_guarded(%q: tensor<2x40x16xf32>, %kt: tensor<2x16x50xf32>, %v: tensor<2x50x8xf32>, %keep: tensor<2x1x50xi1>) -> tensor<2x40x8xf32> {
  %s = graph.matmul %q, %kt : (tensor<2x40x16xf32>, tensor<2x16x50xf32>) -> tensor<2x40x50xf32>
  %minus_infinity = graph.constant dense<0xFF800000> : tensor<f32>
  %masked = graph.where %keep, %s, %minus_infinity : (tensor<2x1x50xi1>, tensor<2x40x50xf32>, tensor<f32>) -> tensor<2x40x50xf32>
  %unguarded = graph.softmax %masked axis -1 : tensor<2x40x50xf32>
  %is_masked = graph.cmp eq, %masked, %minus_infinity : (tensor<2x40x50xf32>, tensor<f32>) -> tensor<2x40x50xi1>
  %false = graph.constant dense<false> : tensor<i1>
  %true = graph.constant dense<true> : tensor<i1>
  %seen = graph.where %is_masked, %false, %true : (tensor<2x40x50xi1>, tensor<i1>, tensor<i1>) -> tensor<2x40x50xi1>
  %seen_flag = graph.cmp ne, %seen, %false : (tensor<2x40x50xi1>, tensor<i1>) -> tensor<2x40x50xi1>
  %seen_value = graph.cast %seen_flag : tensor<2x40x50xi1> to tensor<2x40x50xf32>
  %any_value = graph.reduce_max %seen_value axes [2] keepdims true : tensor<2x40x50xf32> to tensor<2x40x1xf32>
  %zero = graph.constant dense<0.0> : tensor<f32>
  %any = graph.cmp ne, %any_value, %zero : (tensor<2x40x1xf32>, tensor<f32>) -> tensor<2x40x1xi1>
  %fully_masked = graph.where %any, %false, %true : (tensor<2x40x1xi1>, tensor<i1>, tensor<i1>) -> tensor<2x40x1xi1>
  %p = graph.where %fully_masked, %zero, %unguarded : (tensor<2x40x1xi1>, tensor<f32>, tensor<2x40x50xf32>) -> tensor<2x40x50xf32>
  %o = graph.matmul %p, %v : (tensor<2x40x50xf32>, tensor<2x50x8xf32>) -> tensor<2x40x8xf32>
  func.return %o : tensor<2x40x8xf32>
}
