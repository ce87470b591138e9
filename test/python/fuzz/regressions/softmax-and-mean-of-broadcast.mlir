// Found by random programs (issue 12): softmax of a tensor broadcast along its axis gave 1s
// instead of 0.25s, and a mean of a 1x1x1 tensor broadcast to 3x2x5x6 was off the same way (the
// reduction of a broadcast tile along its chunk; see reduce-sum-of-broadcast.mlir).
func.func @main(%x: tensor<3x1xf32>, %y: tensor<1x1x1xf32>) -> (tensor<3x4xf32>, tensor<3x2x1x1xf32>) {
  %b = graph.broadcast %x : tensor<3x1xf32> to tensor<3x4xf32>
  %s = graph.softmax %b axis 1 : tensor<3x4xf32>
  %c = graph.broadcast %y : tensor<1x1x1xf32> to tensor<3x2x5x6xf32>
  %m = graph.reduce_mean %c axes [2, 3] keepdims true : tensor<3x2x5x6xf32> to tensor<3x2x1x1xf32>
  func.return %s, %m : tensor<3x4xf32>, tensor<3x2x1x1xf32>
}
