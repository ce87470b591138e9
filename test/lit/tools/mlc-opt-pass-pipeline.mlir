// Running passes: MLIR's --pass-pipeline with builtin.module(...) and func.func(...) anchors and
// pass options, xDSL's -p spelling, both together (in that order), and an empty pipeline.
// (Anchors follow MLIR's nesting rules: mlc-opt-pipeline-anchors.mlir.)
//
// RUN: mlc-opt %s --pass-pipeline='builtin.module(func.func(cse),convert-graph-to-tile{num-warps=8 elements-per-program=64},cse)' | filecheck %s --check-prefix=MLIR
// RUN: mlc-opt %s -p 'convert-graph-to-tile{num-warps=2},cse' | filecheck %s --check-prefix=XDSL
// RUN: mlc-opt %s --pass-pipeline='builtin.module(convert-graph-to-tile)' -p 'convert-tile-to-loop' | filecheck %s --check-prefix=BOTH
// RUN: mlc-opt %s --pass-pipeline='builtin.module()' | filecheck %s --check-prefix=NONE

func.func @f(%a: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = graph.add %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %1 = graph.relu %0 : tensor<4x8xf32>
  func.return %1 : tensor<4x8xf32>
}

// The options reach the pass: the kernel runs with 8 warps; the host function launches it; no
// graph op is left anywhere.
// MLIR-NOT:    graph.
// MLIR:        tile.kernel @{{[a-z0-9_]+}}({{.*}}) grid [{{[0-9, ]+}}] num_warps 8 {
// MLIR-NOT:    graph.
// MLIR:          tile.map
// MLIR-NOT:    graph.
// MLIR:        func.func @f(%a: memref<4x8xf32>, %b: memref<8xf32>) -> memref<4x8xf32> {
// MLIR-NOT:    graph.
// MLIR:          tile.launch
// MLIR-NOT:    graph.

// XDSL-NOT:    graph.
// XDSL:        tile.kernel @{{[a-z0-9_]+}}({{.*}}) grid [{{[0-9, ]+}}] num_warps 2 {
// XDSL-NOT:    graph.
// XDSL:        func.func @f(%a: memref<4x8xf32>, %b: memref<8xf32>) -> memref<4x8xf32> {
// XDSL-NOT:    graph.

// --pass-pipeline runs first, then -p: the tile kernels have become loop kernels.
// BOTH-NOT:    tile.
// BOTH:        loop.kernel @{{[a-z0-9_]+}}(
// BOTH-NOT:    tile.
// BOTH:          loop.parallel
// BOTH-NOT:    tile.
// BOTH:        func.func @f(
// BOTH-NOT:    tile.
// BOTH:          loop.launch
// BOTH-NOT:    tile.

// An empty pipeline prints the input unchanged.
// NONE:        func.func @f(%a: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
// NONE-NEXT:     %0 = graph.add %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
// NONE-NEXT:     %1 = graph.relu %0 : tensor<4x8xf32>
// NONE-NEXT:     func.return %1 : tensor<4x8xf32>
