// Found by the per-pass equivalence programs after bf16 changed their draws (2026-11-25): a layer
// norm of a broadcast splat constant folds to a 1x2 splat constant used both inside and after the
// row reductions; convert-graph-to-tile took it for a tile to read after the reductions and crashed
// with a KeyError (group_kernel's map closure), where a splat constant is just a scalar in the map.
func.func @main(%x: tensor<1x2xf32>, %scale: tensor<1x2xf32>, %bias: tensor<1x2xf32>) -> (tensor<1x2xf32>) {
  %v0 = graph.constant dense<0.5> : tensor<f32>
  %v1 = graph.add %x, %v0 : (tensor<1x2xf32>, tensor<f32>) -> tensor<1x2xf32>
  %v2 = graph.broadcast %v0 : tensor<f32> to tensor<1x2xf32>
  %v3 = graph.layer_norm %v2, %scale, %bias axis 0 epsilon 1.000000e-05 : (tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>) -> tensor<1x2xf32>
  func.return %v3 : tensor<1x2xf32>
}
