// Found by random programs (session 16): an elementwise op of a reshape to a rank-0 tensor made
// graph-simplify's ElementwiseAfterReshape read the last axis of a shape that has none (an
// internal compiler error, IndexError, in graph-simplify).
func.func @main(%x: tensor<1xf32>) -> tensor<f32> {
  %r = graph.reshape %x : tensor<1xf32> to tensor<f32>
  %n = graph.neg %r : tensor<f32>
  func.return %n : tensor<f32>
}
