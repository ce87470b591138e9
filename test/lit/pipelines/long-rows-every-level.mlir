// A softmax over rows longer than a program holds in registers (100000 > 65536 elements), through
// the levels of both lowerings: the tile kernel loops over 16384-element chunks of each row
// (convert-graph-to-tile.mlir shows it), each thread carries its 16 lanes of the accumulator
// through the chunk loop as scalars and combines them across threads after it. (The CPU code is
// run against numpy in test/python/e2e/test_graph_reductions.py.)
//
// RUN: mlc-opt %s -p graph-decompose,graph-fuse,convert-graph-to-tile,convert-tile-to-loop | tee %t.loop.mlir \
// RUN:   | mlc-opt -p convert-loop-to-gpu,gpu-insert-barriers | filecheck %s --check-prefix=GPU
// RUN: filecheck %s --check-prefix=LOOP < %t.loop.mlir
// RUN: mlc-opt %s --pass-pipeline='builtin.module(mlc-lower-to-gpu)' -t ptx | filecheck %s --check-prefix=PTX

// LOOP:       loop.kernel @long_softmax_0_reduce_max_sub_exp_reduce_sum
// LOOP:         loop.parallel %program < 2 mapping block.x
// LOOP:           loop.parallel %thread < 1024 mapping thread.x
// LOOP:             %max_partials,{{( %max_partials_[0-9]+,)+}} %max_partials_15 = scf.for %chunk = %{{.*}} iter_args({{.*}}) -> ({{(f32, )+}}f32) {
// LOOP:               vector.load %x[%program, %{{.*}}] {alignment = 16 : i64} : memref<2x100000xf32>, vector<4xf32>
// LOOP:               arith.maximumf
// LOOP:               scf.yield
// LOOP-NEXT:        }
// LOOP-NOT:         scf.for
// LOOP:             arith.maximumf %max_partials
// LOOP:             loop.all_reduce %{{.*}} mask 1023 : f32
// LOOP:             scf.for %chunk_1 =
// LOOP:               math.exp
// LOOP:             loop.all_reduce %{{.*}} mask 1023 : f32
// LOOP:             scf.for %chunk_2 =
// LOOP:               vector.store %{{.*}}, %output0[%program, %{{.*}}] {alignment = 16 : i64}

// The loops are per-thread code; the exchange of partial results across warps comes after each.
// GPU:        mlc_gpu.func @long_softmax_0_reduce_max_sub_exp_reduce_sum({{.*}}) grid [2, 1, 1] block [1024, 1, 1]
// GPU:          scf.for %chunk =
// GPU-NOT:        mlc_gpu.barrier
// GPU:          mlc_gpu.shuffle xor
// GPU:          mlc_gpu.barrier
// GPU:          scf.for %chunk_1 =
// GPU:          scf.for %chunk_2 =

// PTX:        .visible .entry long_softmax_0_reduce_max_sub_exp_reduce_sum(
// PTX:        .maxntid 1024, 1, 1
// PTX:        ld.global.nc.v4.b32
// PTX:        shfl.sync.bfly
// PTX:        bar.sync
// PTX:        st.global.v4.b32
func.func @long_softmax(%x: tensor<2x100000xf32>) -> tensor<2x100000xf32> {
  %y = graph.softmax %x axis 1 : tensor<2x100000xf32>
  func.return %y : tensor<2x100000xf32>
}
