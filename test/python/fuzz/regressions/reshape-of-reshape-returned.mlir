// Found by random programs (issue 15): a returned reshape of a reshape of an argument (what
// graph-decompose leaves of a one-element reduction that drops its axes) was taken for the view
// of a kernel's output, so no kernel copied it and the host function returned the argument's
// own buffer, of the wrong type (a verifier failure after convert-graph-to-tile).
func.func @main(%x: tensor<1x1xf32>) -> tensor<1xf32> {
  %r = graph.reduce_sum %x axes [0, 1] keepdims false : tensor<1x1xf32> to tensor<f32>
  %v = graph.reshape %r : tensor<f32> to tensor<1xf32>
  func.return %v : tensor<1xf32>
}
