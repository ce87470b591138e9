// Found by random programs (issue 12): reducing two non-adjacent axes emits one loop.all_reduce
// per axis, the second combining the first's result; loop-fission erased the first while the
// second still used it ("Attempting to delete SSA value that still has uses"). CPU only.
func.func @main(%x: tensor<3x2x2x2xf32>, %y: tensor<2x3x4x5xf32>) -> (tensor<1x2x1x2xf32>, tensor<2x4xf32>) {
  %s = graph.reduce_sum %x axes [0, 2] keepdims true : tensor<3x2x2x2xf32> to tensor<1x2x1x2xf32>
  %t = graph.reduce_max %y axes [1, 3] keepdims false : tensor<2x3x4x5xf32> to tensor<2x4xf32>
  func.return %s, %t : tensor<1x2x1x2xf32>, tensor<2x4xf32>
}
