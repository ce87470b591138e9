// GEMM chains in graph-fuse: attention (matmul, scale, mask, softmax, matmul) as one region,
// Chimera's choice in mlc.chain_plan, the fallback when the blocks do not fit, and the one kernel
// it becomes (convert-graph-to-tile) and its loops (convert-tile-to-loop).
// RUN: mlc-opt %s -p graph-decompose,graph-fuse | filecheck %s
// RUN: mlc-opt %s -p 'graph-decompose,graph-fuse{on-chip-bytes=4096}' | filecheck %s --check-prefix=FALLBACK
// RUN: mlc-opt %s -p 'graph-decompose,graph-fuse{compute-model=gpu}' | filecheck %s --check-prefix=GPUMODEL
// RUN: mlc-opt %s -p graph-decompose,graph-fuse,convert-graph-to-tile | filecheck %s --check-prefix=TILE
// RUN: mlc-opt %s -p graph-decompose,graph-fuse,convert-graph-to-tile,convert-tile-to-loop | filecheck %s --check-prefix=LOOP
// RUN: mlc-opt %s -p 'graph-decompose,graph-fuse{compute-model=gpu},convert-graph-to-tile,convert-tile-to-loop{tensor-cores=true}' | filecheck %s --check-prefix=TENSOR
// RUN: mlc-opt %s -p 'graph-decompose,graph-fuse{fast-math=true},convert-graph-to-tile' | filecheck %s --check-prefix=FAST

// CHECK-LABEL: func.func @attention
// CHECK-NEXT:    %[[C:[a-z0-9_]+]] = graph.constant dense<1.250000e-01>
// CHECK-NEXT:    %[[O:[a-z0-9_]+]] = graph.fusion chain "attention_chain0_attention" (%{{.*}} = %q : tensor<2x4x40x64xf16>, %{{.*}} = %kt : tensor<2x4x64x50xf16>, %{{.*}} = %[[C]] : tensor<f16>, %{{.*}} = %mask : tensor<40x50xf16>, %{{.*}} = %v : tensor<2x4x50x64xf16>) -> tensor<2x4x40x64xf16>
// CHECK-SAME:      attributes {mlc.chain = "attention", mlc.chain_plan = {order = "rows-outer", block_rows = 64 : i64, block_keys = 16 : i64, fused_bytes = {{[0-9]+}} : i64, separate_bytes = {{[0-9]+}} : i64, on_chip_bytes = {{[0-9]+}} : i64}} {
// CHECK-NEXT:      graph.matmul
// CHECK-NEXT:      graph.mul
// CHECK-NEXT:      graph.add
// CHECK-NEXT:      graph.cast
// CHECK-NEXT:      graph.reduce_max
// CHECK-NEXT:      graph.sub
// CHECK-NEXT:      graph.exp
// CHECK-NEXT:      graph.reduce_sum
// CHECK-NEXT:      graph.reciprocal
// CHECK-NEXT:      graph.mul
// CHECK-NEXT:      graph.cast
// CHECK-NEXT:      %[[R:[a-z0-9_]+]] = graph.matmul
// CHECK-NEXT:      graph.yield %[[R]] : tensor<2x4x40x64xf16>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[O]]

// The smallest blocks need more than 4096 bytes: three kernels, and the reason on the last matmul.
// FALLBACK-NOT:  graph.fusion chain
// FALLBACK:      graph.fusion matmul
// FALLBACK:      graph.fusion reduction
// FALLBACK:      graph.fusion matmul
// FALLBACK-NEXT:   graph.matmul %{{.*}}, %{{.*}} {mlc.chain_fallback = "the smallest blocks (16x16) need {{[0-9]+}} bytes on chip, more than 4096"}

// With the GPU's measured rates the chain runs on tensor cores (f16, D = 64): fused, with the
// tensor-core kernel's blocks (BM 64 here: 40 rows; BN 64).
// GPUMODEL:      graph.fusion chain "attention_chain0_attention"
// GPUMODEL-SAME:   mlc.chain_plan = {order = "rows-outer", block_rows = 64 : i64, block_keys = 64 : i64,
// GPUMODEL-NOT:  mlc.chain_fallback

// One kernel: a program per (batch x head, 64 query rows); the keys in blocks of 16, carrying the
// running max, the running sum and the accumulator; two products; the quotient stored once.
// TILE:         tile.kernel @attention_chain0_attention(%q: memref<8x40x64xf16>, %kt: memref<8x64x50xf16>, %v: memref<8x50x64xf16>, %mask: memref<1x40x50xf16>, %o: memref<8x40x64xf16>) grid [8, 1]
// TILE-SAME:      mlc.chain = "attention"
// TILE:           tile.load %q[{{.*}}] : memref<8x40x64xf16> -> !tile.tile<1x64x64xf16>
// TILE:           scf.for %n = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%max = %max0, %sum = %sum0, %acc = %acc0) -> (!tile.tile<1x64x1xf32>, !tile.tile<1x64x1xf32>, !tile.tile<1x64x64xf32>)
// TILE:             %s = tile.dot %{{.*}}, %kt_1, %zeros : !tile.tile<1x64x64xf16>, !tile.tile<1x64x16xf16> -> !tile.tile<1x64x16xf32>
// TILE:             %block_max = tile.reduce %t axis 2
// TILE:             %new_max, %safe_max, %alpha = tile.map %max, %block_max
// TILE:             math.exp
// TILE:             %block_sum = tile.reduce %p axis 2
// TILE:             %new_sum = tile.map %sum, %alpha, %block_sum
// TILE:             %scaled = tile.map %acc
// TILE:             %new_acc = tile.dot %p_narrow, %v_1, %scaled : !tile.tile<1x64x16xf16>, !tile.tile<1x16x64xf16>
// TILE-SAME:          -> !tile.tile<1x64x64xf32>
// TILE:             scf.yield %new_max, %new_sum, %new_acc
// TILE:           arith.divf
// TILE:           tile.store %o_1, %o[
// TILE-NOT:     tile.kernel
// TILE:         func.func @attention
// TILE-COUNT-1:   tile.launch
// TILE-NEXT:      func.return

// Loops: a thread per query row, its rows of the running state in private buffers.
// LOOP:         loop.kernel @attention_chain0_attention
// LOOP:           loop.parallel %row < 64 mapping thread.x {
// LOOP:             %max = memref.alloca() : memref<1xf32, 5 : i64>
// LOOP:             %sum = memref.alloca() : memref<1xf32, 5 : i64>
// LOOP:             %acc = memref.alloca() : memref<64xf32, 5 : i64>
// LOOP:             scf.for %n =
// LOOP:               math.fma
// LOOP:               math.exp
// LOOP:               math.fma
// LOOP-NOT:     loop.kernel
// On tensor cores (chain_mma.py): 4 warps of 16 query rows; Q loaded once into registers; per key
// block S = Q Kt as mma.sync (Kt by ldmatrix.trans), the block max and sum across each quad
// (all_reduce over thread bits 0-1), P reused as the A operand of O += P V (V by ldmatrix.trans).
// TENSOR:        loop.kernel @attention_chain0_attention
// TENSOR-SAME:     mlc.mma = array<i64: 16, 8, 16>, mlc.warp_grid = array<i64: 4, 1>, mlc.pipeline_stages = 3 : i64
// TENSOR:          loop.parallel %thread < 128 mapping thread.x {
// TENSOR:            vector.load %q
// TENSOR:            scf.for %n =
// TENSOR-NOT:          vector.load %q
// TENSOR:              loop.ldmatrix x4 trans %kt[
// TENSOR:              loop.mma_sync m16n8k16
// TENSOR:              loop.all_reduce %{{.*}} mask 3
// TENSOR:              arith.maximumf
// TENSOR:              math.exp
// TENSOR:              loop.all_reduce %{{.*}} mask 3
// TENSOR:              arith.addf
// TENSOR:              arith.truncf %{{.*}} : f32 to f16
// TENSOR:              vector.broadcast %{{.*}} : f16 to vector<2xf16>
// TENSOR:              loop.ldmatrix x4 trans %v[
// TENSOR:              loop.mma_sync m16n8k16
// TENSOR:              scf.yield
// TENSOR:            arith.divf
// TENSOR:            vector.store %{{.*}}, %o[
// TENSOR-NOT:    loop.kernel

// Fast math (opt-in): the plan says so; the scores stay f32 (the f16 mask extended, no rounding to
// f16), the shift -max log2(e) is made once per row, each probability is one fma and one exp2,
// and the result is the accumulator times the sum's reciprocal.
// FAST:          tile.kernel @attention_chain0_attention
// FAST-SAME:       fast_math}
// FAST:            %t = tile.map %s, %side
// FAST-NOT:          arith.truncf
// FAST:              arith.extf %{{.*}} : f16 to f32
// FAST:              arith.mulf
// FAST-NOT:          arith.truncf
// FAST:              tile.yield
// FAST:            %new_max, %shift, %alpha = tile.map %max, %block_max
// FAST:              arith.negf
// FAST:              math.exp2
// FAST:            %p = tile.map %t
// FAST-NEXT:         ^{{.*}}(%[[T:.*]]: f32, %[[SHIFT:.*]]: f32):
// FAST-NEXT:           %[[L:.*]] = arith.constant 1.4426950
// FAST-NEXT:           %[[E:.*]] = math.fma %[[T]], %[[L]], %[[SHIFT]] : f32
// FAST-NEXT:           math.exp2 %[[E]] : f32
// FAST:            %inverse_sum = tile.map
// FAST:              arith.divf
// FAST:            tile.map %{{.*}}, %{{.*}} : !tile.tile<1x64x64xf32>, !tile.tile<1x64x64xf32> -> !tile.tile<1x64x64xf16>
// FAST-NOT:          arith.divf
// FAST:              arith.mulf
// FAST:              arith.truncf %{{.*}} : f32 to f16
// FAST:            tile.store
func.func @attention(%q: tensor<2x4x40x64xf16>, %kt: tensor<2x4x64x50xf16>, %v: tensor<2x4x50x64xf16>, %mask: tensor<40x50xf16>) -> tensor<2x4x40x64xf16> {
  %s = graph.matmul %q, %kt : (tensor<2x4x40x64xf16>, tensor<2x4x64x50xf16>) -> tensor<2x4x40x50xf16>
  %c = graph.constant dense<0.125> : tensor<f16>
  %scaled = graph.mul %s, %c : (tensor<2x4x40x50xf16>, tensor<f16>) -> tensor<2x4x40x50xf16>
  %masked = graph.add %scaled, %mask : (tensor<2x4x40x50xf16>, tensor<40x50xf16>) -> tensor<2x4x40x50xf16>
  %p = graph.softmax %masked axis -1 : tensor<2x4x40x50xf16>
  %o = graph.matmul %p, %v : (tensor<2x4x40x50xf16>, tensor<2x4x50x64xf16>) -> tensor<2x4x40x64xf16>
  func.return %o : tensor<2x4x40x64xf16>
}
