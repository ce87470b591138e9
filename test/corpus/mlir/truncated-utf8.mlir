func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = graph.relu %a : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
// ends in the middle of a character: â‚