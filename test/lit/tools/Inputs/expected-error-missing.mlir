// The first chunk fails as expected; the second verifies, so its expected error is missing.
func.func @bad(%a: tensor<4xf32>, %b: tensor<3xf32>) {
  // expected-error @+1 {{does not broadcast}}
  %0 = graph.add %a, %b : (tensor<4xf32>, tensor<3xf32>) -> tensor<4xf32>
  func.return
}
// -----
func.func @good(%a: tensor<4xf32>) {
  // expected-error @+1 {{does not broadcast}}
  %0 = graph.add %a, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return
}
