// A comment saved as Latin-1, not UTF-8: café
func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = graph.relu %a : tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
