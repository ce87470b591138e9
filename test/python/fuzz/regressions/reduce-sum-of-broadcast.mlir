// Found by random programs (issue 12): a reduction along the last axis of a tile broadcast along
// that axis counted each chunk's one scalar once instead of V times (convert-tile-to-loop), so
// the sum of x broadcast to 4 elements was x. Wrong on the CPU and the GPU.
func.func @main(%x: tensor<3x1xf32>, %y: tensor<1xf32>) -> (tensor<3xf32>, tensor<f32>) {
  %b = graph.broadcast %x : tensor<3x1xf32> to tensor<3x4xf32>
  %s = graph.reduce_sum %b axes [1] keepdims false : tensor<3x4xf32> to tensor<3xf32>
  %c = graph.broadcast %y : tensor<1xf32> to tensor<4xf32>
  %t = graph.reduce_sum %c axes [0] keepdims false : tensor<4xf32> to tensor<f32>
  func.return %s, %t : tensor<3xf32>, tensor<f32>
}
